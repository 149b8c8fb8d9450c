"""The line of a JSON path in a manifest file: where a problem is written.

Problems are found on parsed data and located afterwards, only for the documents that have
one: each is read again by :func:`.goyaml.parse_slow`, whose documents know where every value
and key is (:meth:`dockyard_k8s.yamlfile.Document.line`). A path that is not in the file (a
missing field) gets the line of its nearest enclosing value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dockyard_k8s.validate.goyaml import parse_slow
from dockyard_k8s.validate.problem import JsonPath, Problem
from dockyard_k8s.validate.split import Chunk, split_documents
from dockyard_k8s.yamlfile import Document


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
    return [p.replace(line=found.get(p.file, {}).get((p.doc_index, p.path), 0)) if not p.line else p
            for p in problems]


def locate(text: str, file: str, wanted: dict[int, list[JsonPath]],
           chunks: Sequence[Chunk] | None = None) -> dict[tuple[int, JsonPath], int]:
    """Line numbers of JSON paths, per document index: ``{(doc, path): line}``; ``chunks``: the
    file's documents when already split."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if chunks is None:
        chunks = split_documents(text, file)
    read: dict[int, Document] = {}
    if chunks is None:  # a file read whole
        read = dict(enumerate(parse_slow(text, file)[0]))
    else:
        for i in wanted:
            if i < len(chunks):
                chunk, first = chunks[i]
                docs = parse_slow(chunk, file, first - 1)[0]
                if docs:
                    read[i] = docs[0]
    return {(i, path): read[i].line(path) for i, paths in wanted.items() if i in read for path in paths}
