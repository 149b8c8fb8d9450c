"""Validate files on every core: ``dockyard-k8s validate`` on large inputs.

Reading YAML and running the per-object rules are pure CPU work in one interpreter, so a
large input (10,000 objects) is cut at ``---`` lines into parts that shrink (:func:`guided`).
The parent forks the workers after reading the files (they share the texts and the imported
modules, copy-on-write); every process, the parent included, takes part numbers from one pipe
until none is left, so a process on a busier core takes fewer parts and the small last parts
let all finish together. A worker returns only what is small: its problems, with their lines
already found, and its index of the facts the cross-object rules need
(:class:`.semantic.CrossObjects`). The parent merges the indexes and runs the cross-object
rules, so a Service and the Deployment it selects may sit in different parts.

The result is the same as one process's, problem for problem and in the same order (a test
checks it). A worker that fails or dies is not trusted: the parent does its parts itself.
Forking is used only where it is the platform's default (Linux) and no other thread runs;
elsewhere, and for inputs under :data:`MIN_PARALLEL_BYTES`, one process does everything.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from dockyard_k8s.validate.compiled import import_jsonschema_rs
from dockyard_k8s.validate.engine import PART_SCHEMAS, cross_object_problems, problem_order, validate_documents
from dockyard_k8s.validate.problem import Document, Problem, Report
from dockyard_k8s.validate.reader import (
    add_lines,
    documents_of,
    manifest_files,
    re2_filter,
    read_manifests,
    read_text,
    read_whole,
    region_documents_of,
    release_mapped,
)
from dockyard_k8s.validate.semantic import CrossObjects

# Below this much YAML (~1,200 typical objects) a second process costs more than it saves.
MIN_PARALLEL_BYTES = 1_000_000
MAX_WORKERS = 8
# Parsed documents of finished parts, never freed: freeing 10,000 objects' trees costs ~60 ms
# of CPU, and the workers end with os._exit (the CLI parent too, see cli.main).
_KEEP: list[Any] = []

Chunks = Sequence[tuple[str, int]]
Span = tuple[str, int, int]  # (file, start, end): the documents of text[start:end]; (file, 0, -1): the whole file


class Result(NamedTuple):
    """What one validation run found: every problem (lines filled in, in report order), the
    run's report (its ``problems`` are the same list) and the number of files read."""

    problems: list[Problem]
    report: Report
    files: int


class _Part(NamedTuple):
    problems: list[Problem]  # YAML problems first, then the objects', in order
    objects: int
    skipped: int
    missing: list[str]
    sources: dict[str, str]
    cross: CrossObjects  # the part's facts for the cross-object rules
    counts: dict[str, int]  # documents in each file's region (read whole: not counted)
    lines: dict[str, int]  # newlines in each file's region: its lines are counted from its start


def default_workers() -> int:
    """The cores this process may use, at most :data:`MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def validate_paths(paths: list[str], *, workers: int = 0, keep_parsed: bool = False, **options: Any) -> Result:
    """Validate every manifest under ``paths`` (files, directories, ``-``).

    Args:
        workers: processes to use (0: one per core, see :func:`default_workers`; 1: this
            process only). Small inputs always run in this process.
        keep_parsed: keep the texts read, their file mappings and the parsed documents of a
            multi-process run alive in this process instead of freeing them (~40 ms per 8 MB),
            for a caller about to exit without tearing the interpreter down (the CLI). The
            workers always do.
        options: as for :func:`.engine.validate_documents`.

    Raises:
        UsageError: a missing path, an unreadable file, a bad option.
    """
    files = manifest_files(paths)
    texts = {file: read_text(file) for file in files}
    if keep_parsed:  # about to exit: unmapping and freeing 8 MB of text costs ~10 ms
        _KEEP.append(texts)
    try:
        return _validate(paths, files, texts, workers, keep_parsed, options)
    finally:
        if not keep_parsed:
            release_mapped()


def _validate(paths: list[str], files: list[str], texts: dict[str, str], workers: int, keep_parsed: bool,
              options: dict[str, Any]) -> Result:
    if options.get("exit_on_error"):
        return _serial(paths, files, texts, options)
    workers = workers or default_workers()
    if (sum(len(t) for t in texts.values()) < MIN_PARALLEL_BYTES or not sys.platform.startswith("linux")
            or _threaded()):
        workers = 1
    if workers == 1:
        whole = {file for file, text in texts.items() if read_whole(text, file)}
        results = [_run_part(spans, texts, options) for spans in _plan(texts, whole, 1)]
    else:
        options = {**options, "large": True}
        PART_SCHEMAS.clear()  # CRD files may have changed since an earlier run in this process
        _preload()
        whole = {file for file, text in texts.items() if read_whole(text, file)}
        parts = _plan(texts, whole, guided(workers))
        results = _run_shared(parts, workers, texts, options, keep_parsed)
    results, cross = _renumber(results)
    across = cross_object_problems(cross)
    problems = [p for r in results for p in r.problems]
    yaml_problems = [p for p in problems if p.rule == "yaml"]
    object_problems = [p for p in problems if p.rule != "yaml"]
    object_problems += add_lines(across, texts)
    object_problems.sort(key=problem_order)
    missing = sorted({m for r in results for m in r.missing})
    sources = dict(sorted({k: v for r in results for k, v in r.sources.items()}.items()))
    everything = [*yaml_problems, *object_problems]
    report = Report(everything, sum(r.objects for r in results), sum(r.skipped for r in results), missing, sources)
    return Result(everything, report, len(files))


def _preload() -> None:
    """Import the parsers every worker needs before forking: once (~60 ms, jsonschema-rs pulls
    in the email package) instead of in each process at the same time, slowing each other."""
    with contextlib.suppress(ImportError):
        import yaml_rs  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    import_jsonschema_rs()
    re2_filter()  # and compile the pre-scan's RE2 pattern


def _threaded() -> bool:
    """Other threads running (a library caller's): forking could copy a lock they hold."""
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def _serial(paths: list[str], files: list[str], texts: dict[str, str], options: dict[str, Any]) -> Result:
    """One process, the cross-object rules inside :func:`.engine.validate_documents`: what
    ``--exit-on-error`` needs (it stops at the first object with a problem)."""
    manifests = read_manifests(paths, texts)
    documents = manifests.documents
    if options.get("exit_on_error") and manifests.problems:
        documents = []
    report = validate_documents(documents, **options)
    problems = [*manifests.problems, *report.problems]
    if options.get("exit_on_error") and problems:
        first = problems[0]
        problems = [p for p in problems if (p.file, p.doc_index) == (first.file, first.doc_index)]
    problems = add_lines(problems, manifests.texts)
    return Result(problems, report._replace(problems=problems), len(files))


def _plan(texts: dict[str, str], whole: set[str], shares: int | Sequence[float]) -> list[list[Span]]:
    """Cut the input into parts, keeping file order: ``shares`` equal ones, or one per share
    (fractions of the input, see :func:`guided`). A file is cut at the ``---`` line nearest to
    a part's end (one string search per cut, not a split of the file: each worker splits its
    own regions); a file in ``whole`` is one unit."""
    fractions = [1 / shares] * shares if isinstance(shares, int) else list(shares)
    total = sum(len(t) for t in texts.values()) or 1
    ends, acc = [], 0.0
    for share in fractions:
        acc += share
        ends.append(round(acc * total))
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


def _run_shared(parts: list[list[Span]], workers: int, texts: dict[str, str], options: dict[str, Any],
                keep_parsed: bool) -> list[_Part]:
    """Every part, by ``workers`` processes pulling part numbers from one pipe (a process on a
    busier core simply takes fewer), in part order."""
    queue, feed = os.pipe()
    os.write(feed, bytes(range(len(parts))))  # at most 255 bytes: within the pipe's buffer
    os.close(feed)  # no writer left: an empty queue reads as the end
    children = [_fork(_take, queue, parts, texts, options, _KEEP, _pickled) for _ in range(workers - 1)]
    done: dict[int, _Part] = {}
    try:
        done.update(_take(queue, parts, texts, options, _KEEP if keep_parsed else None))
        for _, fd in children:
            done.update(_collect(fd) or {})
    finally:  # after an error or Ctrl-C here, stop the workers still running; leave no zombie
        os.close(queue)
        for pid, fd in children:
            _reap(pid, fd, stop=len(done) < len(parts))
    for i, spans in enumerate(parts):  # parts a failed worker had taken: done here
        if i not in done:
            done[i] = _run_part(spans, texts, options)
    return [done[i] for i in range(len(parts))]


def _take(queue: int, parts: list[list[Span]], texts: dict[str, str], options: dict[str, Any],
          keep: list[Any] | None, finish: Callable[[_Part], Any] = lambda part: part) -> dict[int, Any]:
    """Run parts until the queue is empty (one-byte reads from a pipe never split between
    readers); ``finish`` turns each result into what is returned as soon as its part is done."""
    out: dict[int, Any] = {}
    while True:
        taken = os.read(queue, 1)
        if not taken:
            return out
        out[taken[0]] = finish(_run_part(parts[taken[0]], texts, options, keep))


def _pickled(part: _Part) -> bytes:
    """A worker pickles each result when its part is done: once the queue is empty, only a
    write is left before the parent has everything."""
    return pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)


def _run_part(spans: Sequence[Span], texts: dict[str, str], options: dict[str, Any],
              keep: list[Any] | None = None) -> _Part:
    documents: list[Document] = []
    yaml_problems: list[Problem] = []
    chunked: dict[str, Chunks | None] = {}
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
    cross = CrossObjects()
    report = validate_documents(documents, cross=cross, **options)
    cross.settle()  # the Services this part's own pods satisfy need not travel
    problems = add_lines([*yaml_problems, *report.problems], texts, chunked=chunked)
    if keep is not None:
        keep.append(documents)
    return _Part(problems, report.objects, report.skipped, report.missing, report.sources, cross, counts, lines)


def _renumber(results: list[_Part]) -> tuple[list[_Part], CrossObjects]:
    """Document indexes and lines of each part's regions, from their starts, shifted to count
    from the file's start; and all parts' cross-object facts in one index."""
    seen: dict[str, int] = {}
    seen_lines: dict[str, int] = {}
    out = []
    cross = CrossObjects()
    for r in results:
        base = {file: seen.get(file, 0) for file in r.counts}
        for file, n in r.counts.items():
            seen[file] = base[file] + n
        lines = {file: seen_lines.get(file, 0) for file in r.lines}
        for file, n in r.lines.items():
            seen_lines[file] = lines[file] + n
        if any(base.values()) or any(lines.values()):
            r = r._replace(problems=[_shift(p, base, lines) for p in r.problems])
            cross.merge(r.cross, functools.partial(_base_of, base))
        else:
            cross.merge(r.cross)
        out.append(r)
    return out, cross


def _base_of(base: dict[str, int], who: Problem) -> int:
    return base.get(who.file, 0)


def _shift(p: Problem, base: dict[str, int], lines: dict[str, int]) -> Problem:
    docs, down = base.get(p.file, 0), lines.get(p.file, 0) if p.line else 0
    return p._replace(doc_index=p.doc_index + docs, line=p.line + down) if docs or down else p


def _fork(work: Any, *args: Any) -> tuple[int, int]:
    """Run ``work(*args)`` in a forked child; (pid, read end of the pipe with its pickled result)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's code
        status = 0
        try:
            os.close(read)
            data = pickle.dumps(work(*args), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(data)
        except BaseException:  # the parent sees no result and does this part itself
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def _collect(fd: int) -> dict[int, _Part] | None:
    """A worker's results from its pipe, or None if it failed."""
    with os.fdopen(os.dup(fd), "rb") as f:
        data = f.read()
    try:
        pickled = pickle.loads(data) if data else None
        if not isinstance(pickled, dict):
            return None
        result = {i: pickle.loads(blob) for i, blob in pickled.items()}
    except Exception:
        return None
    return result if all(isinstance(r, _Part) for r in result.values()) else None


def _reap(pid: int, fd: int, stop: bool) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        if stop:
            os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
