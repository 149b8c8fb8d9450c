"""Large inputs on every core: ``dockyard-k8s validate`` on thousands of objects.

Reading YAML and running the rules is CPU work in one interpreter, so an input of
:data:`MIN_PARALLEL_BYTES` or more is cut at ``---`` lines into parts (:func:`plan_parts`)
that shrink (:func:`guided`), and forked workers take part numbers from one pipe until none is
left: a worker on a busier core takes fewer, and the small last parts let all finish together.
The workers are forked after the files are read, so they share the texts and the run's
:class:`.engine.Engine` (its schemas found once), copy-on-write. A worker sends back only what
is small: its problems, with their lines, and the facts of the cross-object rules
(:mod:`.cross`). The parent shifts document indexes and lines (a worker counts them from its
region's start), merges the facts and judges the Services once, so a Service and the
Deployment it selects may sit in different parts.

The result is :func:`.engine.validate_files`' (one process), problem for problem and in the
same order: tests hold the two to it. A worker that fails or dies is not trusted: the parent
does its parts itself. Workers fork only on Linux and when no other thread runs; elsewhere,
for small inputs and for ``--exit-on-error``, :func:`.engine.validate_files` runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import os
import pickle
import signal
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from dockyard_k8s.validate.cross import CrossObjects
from dockyard_k8s.validate.engine import (
    DEFAULT_OPTIONS,
    Engine,
    Result,
    ValidateOptions,
    cross_object_problems,
    identity,
    validate_files,
)
from dockyard_k8s.validate.locate import add_lines
from dockyard_k8s.validate.problem import Document, Problem, Report, count_objects, in_report_order
from dockyard_k8s.validate.reader import documents_of, manifest_files, read_text, region_documents_of
from dockyard_k8s.validate.split import read_whole
from dockyard_k8s.yamlfile import yaml_rs

# Below this much YAML (~1,200 typical objects) a second process costs more than it saves.
MIN_PARALLEL_BYTES = 1_000_000
MAX_WORKERS = 8

Span = tuple[str, int, int]  # (file, start, end): the documents of text[start:end]; (file, 0, -1): the whole file


@dataclass(frozen=True, slots=True)
class _Part:
    problems: list[Problem]  # YAML problems first, then the objects', in order
    objects: int
    skipped: int
    missing: list[str]
    sources: dict[str, str]
    cross: CrossObjects  # the part's facts for the cross-object rules, Services by identity
    counts: dict[str, int]  # documents in each file's region (read whole: not counted)
    lines: dict[str, int]  # newlines in each file's region: its lines are counted from its start


def default_workers() -> int:
    """The cores this process may use, at most :data:`MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def validate_paths(paths: Sequence[str], options: ValidateOptions = DEFAULT_OPTIONS, workers: int = 0) -> Result:
    """Validate every manifest under ``paths`` (files, directories, ``-``), on every core when large.

    Args:
        workers: processes to use (0: one per core, see :func:`default_workers`; 1: this
            process only). Small inputs always run in this process.

    Raises:
        UsageError: a missing path, an unreadable file, a bad option.
    """
    files = manifest_files(list(paths))
    texts = {file: read_text(file) for file in files}
    if sum(len(t) for t in texts.values()) < MIN_PARALLEL_BYTES:
        return validate_files(paths, options, texts)
    with _collector_paused():
        workers = workers or default_workers()
        if workers == 1 or options.exit_on_error or not _can_fork():
            return validate_files(paths, options, texts)
        return _validate_parts(texts, options, workers, len(files))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a large input is parsed and checked: its documents
    are millions of dicts, lists and strings with no reference cycles, which the collector
    would scan again and again as they accumulate (measured in bench/README.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate_parts(texts: dict[str, str], options: ValidateOptions, workers: int, files: int) -> Result:
    engine = Engine(options)
    yaml_rs()  # imported once here, not in every worker
    whole = {file for file, text in texts.items() if read_whole(text, file)}
    parts = plan_parts(texts, whole, guided(workers))
    results, cross = _renumber(_run_workers(parts, workers, texts, engine))
    problems = [p for r in results for p in r.problems]
    everything = in_report_order([*problems, *add_lines(cross_object_problems(cross), texts)])
    missing = sorted({m for r in results for m in r.missing})
    sources = dict(sorted({k: v for r in results for k, v in r.sources.items()}.items()))
    report = Report(everything, sum(r.objects for r in results), sum(r.skipped for r in results), missing, sources)
    return Result(everything, report, files)


def _can_fork() -> bool:
    """Linux (fork is its default way to start a process) and no other thread running (a
    library caller's: forking could copy a lock one of them holds)."""
    threading = sys.modules.get("threading")
    return sys.platform.startswith("linux") and (threading is None or threading.active_count() == 1)


def plan_parts(texts: dict[str, str], whole: set[str], shares: int | Sequence[float]) -> list[list[Span]]:
    """Cut the input into parts, keeping file order: ``shares`` equal ones, or one per share
    (fractions of the input, see :func:`guided`). A file is cut at the ``---`` line nearest to
    a part's end (one string search per cut: each worker splits its own regions); a file in
    ``whole`` is one unit."""
    fractions = [1 / shares] * shares if isinstance(shares, int) else list(shares)
    total = sum(len(t) for t in texts.values()) or 1
    ends = [round(upto * total) for upto in itertools.accumulate(fractions)]
    ends[-1] = total
    last = len(ends) - 1
    parts: list[list[Span]] = [[] for _ in ends]
    part, done = 0, 0
    for file, text in texts.items():
        start, size = 0, len(text)
        while True:
            room = ends[part] - done  # bytes the current part still takes
            end = size
            if file not in whole and part < last and size - start > room:
                target = start + room  # cut at the "---" line nearest to it, after start
                after, before = text.find("\n---", target), text.rfind("\n---", start, target)
                cuts = [c + 1 for c in (after, before) if c >= start]
                end = min(cuts, key=lambda c: abs(c - target)) if cuts else size
            parts[part].append((file, start, -1 if file in whole else end))
            done += end - start
            if part < last and (end < size or done >= ends[part]):
                part += 1  # full, or cut: a part holds one region of a file at most
                while part < last and done >= ends[part]:
                    part += 1  # parts a big unit already filled stay empty
            start = end
            if start >= size:
                break
    return [p for p in parts if p] or [[]]


def guided(workers: int, smallest: float = 1 / 48) -> list[float]:
    """Shares of the input for ``workers`` processes pulling parts from one queue: each part a
    fraction of what is left (``1 / (2 workers)``), down to ``smallest``, so the parts taken
    first are big (less overhead) and the last ones small (the processes finish together)."""
    shares: list[float] = []
    left = 1.0
    while left > 1e-9:
        share = min(left, max(left / (2 * workers), smallest / workers * 2))
        shares.append(share)
        left -= share
    return shares


def _run_workers(parts: list[list[Span]], workers: int, texts: dict[str, str], engine: Engine) -> list[_Part]:
    """Every part, by ``workers`` forked processes pulling part numbers from one pipe, in part order."""
    assert len(parts) <= 255, "part numbers are single bytes"
    queue, feed = os.pipe()
    os.write(feed, bytes(range(len(parts))))  # at most 255 bytes: within the pipe's buffer
    os.close(feed)  # no writer left: an empty queue reads as the end
    children: list[tuple[int, int]] = []
    done: dict[int, _Part] = {}
    try:
        for _ in range(min(workers, len(parts))):
            children.append(_fork(queue, parts, texts, engine))
        for _, fd in children:
            done.update(_collect(fd))
    finally:  # after an error or Ctrl-C here, stop the workers still running; leave no zombie
        os.close(queue)
        for pid, fd in children:
            _reap(pid, fd, stop=len(done) < len(parts))
    for i, spans in enumerate(parts):  # parts a failed worker had taken: done here
        if i not in done:
            done[i] = _run_part(spans, texts, engine)
    return [done[i] for i in range(len(parts))]


def _fork(queue: int, parts: list[list[Span]], texts: dict[str, str], engine: Engine) -> tuple[int, int]:
    """A worker taking parts from ``queue`` until it is empty; (pid, read end of the pipe its
    pickled results come through)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's code
        status = 0
        try:
            os.close(read)
            results: dict[int, _Part] = {}
            while taken := os.read(queue, 1):  # one-byte reads from a pipe never split between readers
                results[taken[0]] = _run_part(parts[taken[0]], texts, engine)
            with os.fdopen(write, "wb") as out:
                pickle.dump(results, out, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # the parent sees no result and does these parts itself
            status = 1
        finally:
            os._exit(status)  # a forked child never runs its parent's exit handlers
    os.close(write)
    return pid, read


def _collect(fd: int) -> dict[int, _Part]:
    """A worker's results from its pipe; nothing if it failed."""
    with os.fdopen(os.dup(fd), "rb") as f:
        data = f.read()
    try:
        results = pickle.loads(data) if data else None
    except Exception:
        return {}
    if not isinstance(results, dict) or not all(isinstance(r, _Part) for r in results.values()):
        return {}
    return results


def _reap(pid: int, fd: int, stop: bool) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        if stop:
            os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)


def _run_part(spans: Sequence[Span], texts: dict[str, str], engine: Engine) -> _Part:
    documents: list[Document] = []
    yaml_problems: list[Problem] = []
    chunked: dict[str, Sequence[tuple[str, int]] | None] = {}
    counts: dict[str, int] = {}
    lines: dict[str, int] = {}
    for file, start, end in spans:
        if end < 0:  # the whole file, its documents numbered as they are
            found, bad = documents_of(file, texts[file])
        else:  # a region: documents and lines numbered from its start here, shifted by the parent
            found, bad, pieces = region_documents_of(file, texts[file], start, end, line=1)
            chunked[file] = pieces
            counts[file] = len(pieces)
            lines[file] = texts[file].count("\n", start, end)
        documents += found
        yaml_problems += bad
    checked = engine.check(documents)
    checked.cross.relabel(lambda m: identity(checked.checked[m]))
    checked.cross.settle()  # the Services this part's own pods satisfy need not travel
    report = checked.report()
    problems = add_lines([*yaml_problems, *report.problems], texts, chunked=chunked)
    return _Part(problems, count_objects(documents, yaml_problems), report.skipped, report.missing, report.sources,
                 checked.cross, counts, lines)


def _renumber(results: list[_Part]) -> tuple[list[_Part], CrossObjects]:
    """Document indexes and lines of each part's regions, from their starts, shifted to count
    from the file's start; and all parts' cross-object facts in one index."""
    docs_before: Counter[str] = Counter()
    lines_before: Counter[str] = Counter()
    out = []
    cross = CrossObjects()
    for r in results:
        base = {file: docs_before[file] for file in r.counts}
        lines = {file: lines_before[file] for file in r.lines}
        docs_before.update(r.counts)
        lines_before.update(r.lines)
        if any(base.values()) or any(lines.values()):
            r = dataclasses.replace(r, problems=[
                dataclasses.replace(p, doc_index=p.doc_index + base.get(p.file, 0),
                                    line=p.line + (lines.get(p.file, 0) if p.line else 0)) for p in r.problems])
        cross.merge(r.cross, lambda who: base.get(who.file, 0))  # noqa: B023 (merge calls it here and now)
        out.append(r)
    return out, cross

