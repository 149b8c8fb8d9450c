"""Reading manifests the way kubectl does: files, directories, stdin -> documents.

Two parsers give the same data:

* **yaml-rs** (Rust, several times PyYAML's C loader, duplicate keys are errors) reads the
  documents of a file together, unless the pre-scan (:func:`.goyaml.may_differ`) finds a plain
  scalar or key whose meaning differs between YAML 1.2 (what yaml-rs implements) and kubectl's
  go-yaml v2 (``yes``, ``on:``, ``0755``, ``80:``, tags, merge keys...);
* **the go-yaml reader** (:func:`.goyaml.parse_slow`: PyYAML's composer with go-yaml's
  scalars) reads those documents, those yaml-rs rejects (it says where: line, column), files
  that are not split (:func:`.split.read_whole`), and everything when yaml-rs is absent.

Each document becomes a :class:`.problem.Document`; a ``kind: List`` is expanded into its
items. Problems reading a file (syntax, duplicate keys) are :class:`.problem.Problem` s with
rule ``yaml``. :mod:`.split` cuts files into documents, :mod:`.locate` finds problems' lines.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.kube import as_mapping
from dockyard_k8s.validate.goyaml import may_differ, parse_slow
from dockyard_k8s.validate.problem import Document, Problem
from dockyard_k8s.validate.split import Chunk, json_like, region_documents, split_documents
from dockyard_k8s.yamlfile import YamlError, json_key, yaml_rs
from dockyard_k8s.yamlfile import read_text as read_file_text

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

Parsed = tuple[Any, int, int]  # (data, document index, first line)


@dataclass(frozen=True, slots=True)
class Manifests:
    documents: list[Document]
    problems: list[Problem]
    files: int
    texts: dict[str, str]  # file -> text, to locate problems afterwards
    chunks: dict[str, list[Chunk] | None]  # file -> its documents as split (None: read whole)


def read_manifests(paths: list[str], texts: dict[str, str] | None = None) -> Manifests:
    """Every document of every file under ``paths``, in order; ``texts`` holds files already
    read (stdin can be read only once).

    Raises:
        UsageError: a missing path or unreadable file (exit 2).
    """
    documents: list[Document] = []
    problems: list[Problem] = []
    read: dict[str, str] = {}
    chunked: dict[str, list[Chunk] | None] = {}
    files = manifest_files(paths)
    for file in files:
        text = (texts or {}).get(file)
        if text is None:
            text = read_text(file)
        read[file] = text
        parsed, bad, chunked[file] = _parse_file(text, file)
        found, bad = _documents(file, parsed, bad)
        documents += found
        problems += bad
    return Manifests(documents, problems, len(files), read, chunked)


def manifest_files(paths: list[str]) -> list[str]:
    """Expand directories (recursively, sorted, ``.yaml/.yml/.json``, not kustomization files);
    ``-`` is stdin.

    Raises:
        UsageError: a path that does not exist.
    """
    out: list[str] = []
    for path in paths:
        if path == "-":
            out.append(path)
        elif os.path.isdir(path):
            for base, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                # kustomization.yaml lists files, it is not an object to apply (render -o DIR writes one)
                out += [os.path.join(base, f) for f in sorted(files)
                        if f.endswith(MANIFEST_SUFFIXES) and f not in KUSTOMIZATION_FILES]
        elif os.path.exists(path):
            out.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    return out


def read_text(file: str) -> str:
    """A manifest file's text (``-``: stdin).

    Raises:
        UsageError: unreadable, or not UTF-8.
    """
    if file == "-":
        return sys.stdin.read()
    try:
        return read_file_text(file)
    except OSError as e:
        raise UsageError(f"{file}: cannot read ({e.strerror})") from e
    except YamlError as e:
        raise UsageError(f"{file}:{e.problem.mark.line}:{e.problem.mark.col}: {e.problem.message}") from None


def documents_of(file: str, text: str) -> tuple[list[Document], list[Problem]]:
    """Objects of one file's text (``kind: List`` expanded), and its YAML problems."""
    return _documents(file, *parse_text(text, file))


def region_documents_of(file: str, text: str, start: int, end: int,
                        line: int = 0) -> tuple[list[Document], list[Problem], list[Chunk]]:
    """The objects of ``text[start:end]``, a region of a file that is not read whole, cut at
    ``---`` lines (see :func:`.split.region_documents`), numbered from 0; its YAML problems; and
    its documents, for locating problems. Lines count from the file's start, or from ``line``
    for the region's first line (a worker's lines then shift like its document indexes)."""
    chunks = region_documents(text, start, end, line)
    return (*_documents(file, *_parse_chunks(chunks, file, yaml_rs())), chunks)


def parse_text(text: str, file: str) -> tuple[list[Parsed], list[Problem]]:
    """Documents of one file: (data, doc index, first line), plus YAML problems."""
    parsed, problems, _ = _parse_file(text, file)
    return parsed, problems


def _parse_file(text: str, file: str) -> tuple[list[Parsed], list[Problem], list[Chunk] | None]:
    """:func:`parse_text`, and the file's documents as split (None: read whole)."""
    text = text.removeprefix("\ufeff")
    chunks = split_documents(text, file)
    fast = yaml_rs()
    if fast is not None and chunks is not None:
        return (*_parse_chunks(chunks, file, fast), chunks)
    if fast is not None and json_like(text, file):
        try:
            return [(fast.loads(text, parse_datetime=False), 0, 1)], [], None
        except Exception:  # a syntax error or duplicate key: the go-yaml reader says where
            pass
    docs, problems = parse_slow(text, file)  # the whole file at once
    return [(d.data, i, d.marks[()].line) for i, d in enumerate(docs)], problems, chunks


_SLOW = object()  # a document yaml-rs could not read


def _parse_chunks(chunks: list[Chunk], file: str, fast: Any) -> tuple[list[Parsed], list[Problem]]:
    """The documents of a split file: yaml-rs on all of them at once, the go-yaml reader for
    those the pre-scan flags and for those yaml-rs rejects (to say where)."""
    indices = list(range(len(chunks)))
    out: list[Parsed] = []
    slow: list[int] = list(indices) if fast is None else []
    if fast is not None and indices:
        joined = _joined(chunks, indices)
        quick = indices
        if may_differ(joined):  # rare: find the documents concerned
            slow = [i for i in indices if may_differ(chunks[i][0])]
            flagged = set(slow)
            quick = [i for i in indices if i not in flagged]
            joined = _joined(chunks, quick)
        values: Any = []
        if quick:
            try:
                values = fast.loads(joined, parse_datetime=False)
                values = values if len(quick) > 1 else [values]
                if not isinstance(values, list) or len(values) != len(quick):
                    values = None
            except Exception:  # a syntax error or duplicate key somewhere: find which document
                values = None
            if values is None:
                values = []
                for i in quick:
                    try:
                        values.append(fast.loads(chunks[i][0], parse_datetime=False))
                    except Exception:
                        values.append(_SLOW)
        for value, i in zip(values, quick, strict=True):
            if value is _SLOW:
                slow.append(i)
            else:
                out.append((_string_keys(value), i, chunks[i][1]))
    problems: list[Problem] = []
    for i in sorted(slow):
        chunk, line = chunks[i]
        docs, found = parse_slow(chunk, file, line - 1)
        problems += [dataclasses.replace(p, doc_index=i) for p in found]
        if docs:
            out.append((docs[0].data, i, line))
    if slow:
        out.sort(key=lambda d: d[1])
    return out, problems


def _joined(chunks: Sequence[Chunk], indices: list[int]) -> str:
    return "---\n" + "---\n".join(chunks[i][0] if chunks[i][0].endswith("\n") else chunks[i][0] + "\n"
                                   for i in indices)


def _string_keys(data: Any) -> Any:
    """go-yaml makes a numeric key a string (``80: x`` -> ``"80"``); yaml-rs gives an int. The
    pre-scan sends documents with such keys to the go-yaml reader; ConfigMap/Secret data, where
    they are most plausible, are converted here as well, should one get past it."""
    if isinstance(data, dict) and data.get("kind") in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData", "stringData"):
            values = data.get(field)
            if isinstance(values, dict) and not all(isinstance(k, str) for k in values):
                data[field] = {json_key(k): v for k, v in values.items()}
    return data


def _documents(file: str, parsed: list[Parsed], problems: list[Problem]) -> tuple[list[Document], list[Problem]]:
    named = {i: d for d, i, _ in parsed if isinstance(d, dict)}
    for n, p in enumerate(problems):  # name the object a YAML problem belongs to, when it parsed
        data = named.get(p.doc_index)
        if data is not None and not p.kind:
            meta = as_mapping(data.get("metadata"))
            problems[n] = dataclasses.replace(p, kind=str(data.get("kind") or ""), name=str(meta.get("name") or ""),
                                              namespace=str(meta.get("namespace") or ""))
    out: list[Document] = []
    for data, index, line in parsed:
        if data is None:
            continue
        if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list) \
                and str(data.get("apiVersion", "v1")) == "v1":
            out += [Document(file, index, ("items", i), item, line) for i, item in enumerate(data["items"])]
        else:
            out.append(Document(file, index, (), data, line))
    return out, problems
