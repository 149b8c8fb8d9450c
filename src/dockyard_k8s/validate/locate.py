"""The line of a JSON path in a manifest file: where a problem is written.

Problems are found on parsed data and located afterwards, only for the documents that have
one. Block-style documents (indentation, plain keys, ``- `` items: what renderers and most
people write) are read off their text, no parse; anything else, or a path the text walk is
not sure of (flow style, quoted keys, tabs, anchors, a path that is not there), is composed by
PyYAML along the wanted paths only, or built in full with go-yaml semantics
(:func:`.goyaml.parse_slow`). A path that is not in the file (a missing field) gets the line
of its nearest enclosing value. A test holds the text walk to PyYAML's answer on every path
of the golden files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from dockyard_k8s.plain import Record
from dockyard_k8s.pyyaml import compose_loader
from dockyard_k8s.validate.goyaml import json_key, parse_slow, scalar_value
from dockyard_k8s.validate.problem import JsonPath, Problem
from dockyard_k8s.validate.split import Chunk, split_documents

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_./]*").fullmatch
_FLOW_OR_QUOTE = re.compile(r"[\[\]{}\"']")


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
    per_doc: dict[int, dict[JsonPath, int]] = {}
    if chunks is None:  # a file read whole
        docs, _ = parse_slow(text, file)
        per_doc = {i: lines for i, (_, _, lines) in enumerate(docs)}
    else:
        for i, paths in wanted.items():
            if i < len(chunks):
                found = _document_lines(*chunks[i], file, paths)
                if found is not None:
                    per_doc[i] = found
    out: dict[tuple[int, JsonPath], int] = {}
    for i, paths in wanted.items():
        lines = per_doc.get(i)
        if lines is None:
            continue
        for path in paths:
            for end in range(len(path), -1, -1):
                if path[:end] in lines:
                    out[(i, path)] = lines[path[:end]]
                    break
    return out


def _document_lines(text: str, first: int, file: str, paths: list[JsonPath]) -> dict[JsonPath, int] | None:
    """Lines of ``paths`` (some of them, or their ancestors') in one document whose first line is ``first``."""
    if _block_style(text):
        split = text.split("\n")
        quick = [_text_line(split, path) for path in paths]
        if None not in quick:  # every path read off the text: no parse needed
            return {path: line + first for path, line in zip(paths, quick, strict=True) if line is not None}
    found = _path_lines(text, first - 1, paths)
    if found is None:  # merge keys, a syntax error...: the full builder
        docs, _ = parse_slow(text, file, first - 1)
        found = docs[0][2] if docs else None
    return found


# --- reading lines off block-style text -----------------------------------------------


class _At(Record):
    """Where the text walk is: the current node starts on line ``lo``; its entries are at
    column ``col`` (-1: a scalar or an empty value, nothing inside), the first one at column
    ``first`` of line ``lo`` (after ``- ``); ``seq``: it is a block sequence. ``line`` is the
    line of the path walked so far."""

    __slots__ = ("lo", "col", "first", "seq", "line")

    def __init__(self, lo: int, col: int, first: int, seq: bool, line: int) -> None:
        self.lo = lo
        self.col = col
        self.first = first
        self.seq = seq
        self.line = line


def _text_line(lines: list[str], path: JsonPath) -> int | None:
    """The 0-based line where ``path`` is written in a block-style document, read off its text,
    or None when not sure: flow style, quoted or unusual keys, tabs, a path that is not there.
    The caller then composes."""
    lo = _content(lines, 0)
    if lo == len(lines):
        return None
    col = _indent(lines[lo])
    at: _At | None = _At(lo, col, col, _is_item(lines[lo][col:]), lo)
    for comp in path:
        if at is None:
            return None
        at = _into_key(lines, at, comp) if isinstance(comp, str) else _into_item(lines, at, comp)
    if at is None or any(c in lines[at.line] for c in "&*!"):
        return None  # anchors, aliases, tags: ask PyYAML
    return at.line


def _into_key(lines: list[str], at: _At, key: str) -> _At | None:
    """The walk after the entry ``key`` of the mapping at ``at``."""
    if at.seq or not _PLAIN_KEY(key):
        return None
    found = _find_key(lines, at, key)
    if found is None:
        return None
    rest = lines[found][(at.first if found == at.lo else at.col) + len(key) + 1:].strip()
    if rest and not rest.startswith("#"):  # a value on the key's line: a leaf
        return _At(found, -1, at.first, False, found)
    k = _content(lines, found + 1)
    if k == len(lines):
        return _At(found, -1, at.first, at.seq, found)
    indent = _indent(lines[k])
    seq = _is_item(lines[k][indent:])
    if indent < at.col or (indent == at.col and not seq):  # an empty value
        return _At(found, -1, at.first, seq, found)
    return _At(k, indent, indent, seq, found)


def _find_key(lines: list[str], at: _At, key: str) -> int | None:
    """The line of ``key:`` among the entries of the mapping at ``at``."""
    for j in range(at.lo, len(lines)):
        line = lines[j]
        indent = _indent(line)
        body = line[at.first:] if j == at.lo else line[indent:]
        if j > at.lo:
            if not body or body.startswith("#") or indent > at.col:
                continue
            if indent < at.col:
                break
            if body.startswith("-"):
                continue  # an indentless sequence of the previous key
        if body.startswith(key) and body[len(key):len(key) + 2] in (": ", ":"):
            return j
    return None


def _into_item(lines: list[str], at: _At, index: int) -> _At | None:
    """The walk after item ``index`` of the sequence at ``at``."""
    if not at.seq or at.col < 0:
        return None
    found = _find_item(lines, at, index)
    if found is None:
        return None
    item = lines[found][at.col + 1:]
    content = item.strip()
    if not content or content.startswith("#"):
        return None  # "-" alone: the item starts on a later line (rare)
    col = at.col + 1 + _indent(item)
    if item.lstrip(" ").startswith("- ") or ":" not in item or not _PLAIN_KEY(content.split(":", 1)[0]):
        return _At(found, -1, col, False, found)  # a scalar item, a nested sequence on the dash line, a flow item
    return _At(found, col, col, False, found)


def _find_item(lines: list[str], at: _At, index: int) -> int | None:
    """The line of the ``index``-th ``- `` of the sequence at ``at``."""
    count = -1
    for j in range(at.lo, len(lines)):
        line = lines[j]
        indent = _indent(line)
        body = line[indent:]
        if not body or body.startswith("#") or indent > at.col:
            continue
        if indent < at.col or not _is_item(body):
            break
        count += 1
        if count == index:
            return j
    return None


def _content(lines: list[str], k: int) -> int:
    """The first line from ``k`` on that is neither blank nor a comment (``len(lines)``: none)."""
    while k < len(lines) and (not lines[k].strip() or lines[k].lstrip().startswith("#")):
        k += 1
    return k


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_item(body: str) -> bool:
    return body.startswith("- ") or body == "-"


def _block_style(text: str) -> bool:
    """No tabs, and no flow collection or quoted scalar spanning lines: :func:`_text_line` can
    trust indentation. Only the lines holding a bracket or quote are looked at."""
    if "\t" in text:
        return False
    checked = -1
    for m in _FLOW_OR_QUOTE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start == checked:
            continue
        checked = start
        end = text.find("\n", m.end())
        line = text[start:end if end >= 0 else len(text)]
        if line.count("[") != line.count("]") or line.count("{") != line.count("}") \
                or line.count('"') % 2 or line.count("'") % 2:
            return False
    return True


# --- composing along the wanted paths -------------------------------------------------


def _path_lines(text: str, offset: int, paths: list[JsonPath]) -> dict[JsonPath, int] | None:
    """Lines of ``paths`` (and of their ancestors) in a one-document ``text``, as the full
    builder of :func:`.goyaml.parse_slow` gives them, composing the document but walking only
    along ``paths``. None when the document has merge keys or does not compose: the caller
    uses the full builder."""
    import yaml

    prefixes = {p[:k] for p in paths for k in range(len(p) + 1)}
    loader = compose_loader()(text)
    try:
        node = loader.get_node() if loader.check_node() else None
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    if node is None:
        return None
    lines: dict[JsonPath, int] = {}
    todo: list[tuple[Any, JsonPath]] = [(node, ())]
    while todo:
        node, path = todo.pop()
        lines.setdefault(path, node.start_mark.line + 1 + offset)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                if key_node.value == "<<" and not key_node.style:
                    return None
                child = (*path, json_key(scalar_value(key_node)[0]))
                if child in prefixes and child not in lines:
                    lines[child] = key_node.start_mark.line + 1 + offset
                    todo.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                if (*path, i) in prefixes:
                    todo.append((item, (*path, i)))
    return lines
