"""Splitting a YAML stream into its documents, and a large file into regions, at ``---`` lines.

The fast reader parses the documents of a file together but must know where each starts (its
index and first line) and which are blank; the workers of a large input each take a region
of a file cut at a ``---`` line. A file with directives, ``...`` document ends or content on
a ``---`` line (a document-level scalar) is not split: it is read whole (:func:`read_whole`).
A document is ``(text, first line)``, the line 1-based in its file or region.
"""

from __future__ import annotations

import re

Chunk = tuple[str, int]  # (a document's text, its first line)

# Only blank lines and comments (with match(): from the start, up to endpos when given).
_BLANK = re.compile(r"(?:[ \t]*(?:#[^\n]*)?(?:\n|\Z))*\Z")


def _markers(text: str, start: int, stop: int) -> list[int]:
    """Where the lines starting with ``---`` begin in ``text[start:stop]``."""
    markers = [start] if text.startswith("---", start, stop) else []
    at = text.find("\n---", start, stop)
    while at >= 0:
        markers.append(at + 1)
        at = text.find("\n---", at + 4, stop)
    return markers


def _split(text: str, start: int, stop: int, line: int) -> list[Chunk] | None:
    """:func:`split_documents` of ``text[start:stop]`` (whose first line is ``line``), without copying it.
    Plain string searches, not ``^``-anchored multi-line regexes: those test every position of the text."""
    out: list[Chunk] = []
    for at in _markers(text, start, stop):
        end = text.find("\n", at, stop)
        rest = text[at + 3:end if end >= 0 else stop].lstrip(" \t\r")
        if rest and rest[0] != "#":
            return None  # content after the marker
        piece = text[start:at]
        if not _BLANK.match(piece):
            out.append((piece, line))
        line += piece.count("\n") + 1
        start = end + 1 if end >= 0 else stop
    piece = text[start:stop]
    if not _BLANK.match(piece):
        out.append((piece, line))
    return out


def _directive_or_end(text: str) -> bool:
    """A ``%`` directive or a ``...`` document end at a line start. (Searching for the rare
    character first: ``"\\n%" in text`` stops at every newline.)"""
    return (text.startswith(("%", "..."))
            or ("%" in text and "\n%" in text) or ("..." in text and "\n..." in text))


_CONTENT_AFTER_MARKER = re.compile(r"\n---[ \t\r]*[^ \t\r#\n]")


def json_like(text: str, file: str) -> bool:
    """A JSON file, or a YAML file written as one flow collection: read whole."""
    return file.endswith(".json") or text.lstrip()[:1] in ("{", "[")


def read_whole(text: str, file: str) -> bool:
    """Whether the file is read whole (:func:`split_documents` gives None), found without
    splitting it: JSON, directives, ``...`` lines, content on a ``---`` line."""
    text = text.removeprefix("\ufeff")
    return json_like(text, file) or _directive_or_end(text) or any(  # content on the first marker line, or another
        _CONTENT_AFTER_MARKER.search(part) for part in ("\n" + text[:80], text))


def region_documents(text: str, start: int, end: int, line: int = 0) -> list[Chunk]:
    """The documents of ``text[start:end]`` as :func:`split_documents` gives them (first lines
    counted from the start of the file, or from ``line`` for the region's first line), for a
    file that is not :func:`read_whole` and a region that starts at a ``---`` line (or the
    file's start) and ends at one (or the file's end)."""
    if start == 0 and text.startswith("\ufeff"):
        start = 1
    chunks = _split(text, start, end, line or 1 + text.count("\n", 0, start))
    assert chunks is not None, "read_whole() said the file splits"
    return chunks


def split_documents(text: str, file: str) -> list[Chunk] | None:
    """The documents of a file, split at ``---`` lines: (text, first line) each, blank ones dropped.
    None when the file is read whole: JSON, directives (``%``), explicit document ends (``...``) or
    content on a ``---`` line (a document-level flow or block scalar)."""
    text = text.removeprefix("\ufeff")
    return None if json_like(text, file) or _directive_or_end(text) else _split(text, 0, len(text), 1)
