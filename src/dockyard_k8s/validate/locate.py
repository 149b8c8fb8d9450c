"""The line of a JSON path in a manifest file: where a problem is written.

Problems are found on parsed data and located afterwards, only for the documents that have
one: each is composed again, its node tree walked along the problems' paths only
(:func:`dockyard_k8s.yamlfile.marks_along`), or, with merge keys, read whole by
:func:`.goyaml.parse_slow`. A problem gets its key's line (an item's, in a list); a path that
is not in the file (a missing field) gets the line of its nearest enclosing value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from dockyard_k8s.validate.goyaml import parse_slow
from dockyard_k8s.validate.problem import JsonPath, Problem
from dockyard_k8s.validate.split import Chunk, split_documents
from dockyard_k8s.yamlfile import Mark, marks_along


def add_lines(problems: list[Problem], texts: dict[str, str], limit: int = 500,
              chunked: Mapping[str, Sequence[Chunk] | None] | None = None) -> list[Problem]:
    """Fill in ``line`` for problems of the first ``limit`` documents that have one to find.

    ``chunked`` holds files already split by :func:`.split.split_documents` (not split again).
    """
    wanted: dict[str, dict[int, list[JsonPath]]] = {}
    for p in problems:
        if not p.line and p.file in texts:
            docs = wanted.setdefault(p.file, {})
            if p.doc_index in docs or len(docs) < limit:
                docs.setdefault(p.doc_index, []).append(p.path)
    found: dict[str, dict[tuple[int, JsonPath], int]] = {
        file: locate(texts[file], file, docs, (chunked or {}).get(file)) for file, docs in wanted.items()}
    return [dataclasses.replace(p, line=found.get(p.file, {}).get((p.doc_index, p.path), 0)) if not p.line else p
            for p in problems]


def locate(text: str, file: str, wanted: dict[int, list[JsonPath]],
           chunks: Sequence[Chunk] | None = None) -> dict[tuple[int, JsonPath], int]:
    """Line numbers of JSON paths, per document index: ``{(doc, path): line}``; ``chunks``: the
    file's documents when already split."""
    text = text.removeprefix("\ufeff")
    if chunks is None:
        chunks = split_documents(text, file)
    found: dict[int, dict[JsonPath, Mark]] = {}
    if chunks is None:  # a file read whole
        found = {i: {**d.marks, **d.key_marks} for i, d in enumerate(parse_slow(text, file)[0])}
    else:
        for i, paths in wanted.items():
            if i < len(chunks):
                chunk, first = chunks[i]
                marks = marks_along(chunk, file, paths, first - 1)
                if marks is None:  # merge keys, a syntax error...: the whole document
                    docs = parse_slow(chunk, file, first - 1)[0]
                    marks = {**docs[0].marks, **docs[0].key_marks} if docs else None
                if marks is not None:
                    found[i] = marks
    return {(i, path): _line(found[i], path) for i, paths in wanted.items() if i in found for path in paths}


def _line(marks: dict[JsonPath, Mark], path: JsonPath) -> int:
    """The line of ``path``, else of its nearest enclosing value's."""
    for end in range(len(path), -1, -1):
        if path[:end] in marks:
            return marks[path[:end]].line
    return 0
