"""Read Kubernetes manifests the way kubectl does, fast: files, directories, stdin.

``kubectl`` reads YAML through go-yaml v2 (YAML 1.1-ish: ``yes``/``on``/``y`` are booleans,
``0755`` is octal, timestamps stay strings) and rejects duplicate keys. We reproduce that
exactly with two parsers:

* **fast path** — ``yaml-rs`` (Rust, ~5x PyYAML's C loader, duplicate keys are errors)
  for every document with no plain scalar whose meaning differs between YAML 1.2 (what
  yaml-rs implements) and go-yaml v2. A regular-expression pre-scan finds candidates
  (``yes``, ``on``, ``0755``, ``1_000``, non-string keys, tags, merge keys...); it may
  over-match, never under-match, so a candidate only costs the slow path.
* **slow path** — PyYAML's C composer plus our own go-yaml v2 scalar resolution: used for
  candidate documents, when yaml-rs is not installed, and to locate errors (line/column).

Each document becomes a :class:`Document`; a ``kind: List`` is expanded into its items.
Problems reading a file (syntax, duplicate keys) are :class:`Problem` s with rule ``yaml``.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, overload

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate.problem import RULE_YAML, Document, JsonPath, Problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class Manifests(NamedTuple):
    documents: list[Document]
    problems: list[Problem]
    files: int
    texts: dict[str, str]  # file -> text, to locate problems afterwards


# --- go-yaml v2 plain scalars ----------------------------------------------------------

_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_INF = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
        "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf}


def resolve_go_yaml(text: str) -> Any:
    """What go-yaml v2 (kubectl) makes of an untagged plain scalar, as JSON-able data."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    first = text[0]
    if not (first.isdigit() or first in "+-."):
        return text
    if text in _INF:
        return _INF[text]
    if text in (".nan", ".NaN", ".NAN"):
        return math.nan
    plain = text.replace("_", "")
    if _GO_INT.match(plain):  # strconv.ParseInt(plain, 0, 64): 0x, 0o, 0b and leading-0 octal
        sign = -1 if plain[0] == "-" else 1
        digits = plain.lstrip("+-")
        low = digits.lower()
        if low.startswith(("0x", "0o", "0b")):
            return sign * int(digits[2:], {"x": 16, "o": 8, "b": 2}[low[1]])
        if len(digits) > 1 and digits[0] == "0":
            return sign * int(digits, 8)
        return sign * int(digits)
    if _GO_FLOAT.match(plain):
        value = float(plain)
        return int(value) if value.is_integer() and "." not in plain and "e" not in plain.lower() else value
    return text


# --- slow path: PyYAML composer + go-yaml resolution, with locations ------------------

_STR = "tag:yaml.org,2002:str"
_PLAIN = "tag:dockyard-k8s,untagged"


_LOADER: list[type] = []  # the class, made once (locating 500 documents made it 500 times)


def _compose_loader() -> type:
    if _LOADER:
        return _LOADER[0]
    import yaml

    base = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader

    class Loader(base):  # type: ignore[misc,valid-type]
        yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 - PyYAML's class attribute
        DEFAULT_SCALAR_TAG = _PLAIN

    _LOADER.append(Loader)
    return Loader


class _Builder:
    """Node tree -> data with go-yaml v2 semantics, duplicate keys and line marks."""

    def __init__(self, offset: int = 0) -> None:
        self.errors: list[tuple[JsonPath, int, str]] = []  # (path, line, message)
        self.lines: dict[JsonPath, int] = {}
        self.offset = offset  # lines before the parsed text in its file

    def build(self, node: Any, path: JsonPath) -> Any:
        import yaml

        self.lines.setdefault(path, node.start_mark.line + 1 + self.offset)  # an entry already has its key line
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _PLAIN and not node.style:
                return resolve_go_yaml(node.value)
            if node.tag in (_STR, _PLAIN):
                return node.value
            if node.tag == "tag:yaml.org,2002:binary":
                return node.value.replace("\n", "").replace(" ", "")
            kind = node.tag.rsplit(":", 1)[-1]
            value = resolve_go_yaml(node.value)
            if kind in ("int", "float", "bool", "null"):
                return value
            self.errors.append((path, node.start_mark.line + 1 + self.offset, f"unsupported tag {node.tag}"))
            return node.value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        out: dict[str, Any] = {}
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<" and not key_node.style:
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for src in sources:
                    merged = self.build(src, path)
                    if isinstance(merged, dict):
                        for k, v in merged.items():
                            out.setdefault(k, v)
                continue
            key = self.build(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key_node, yaml.ScalarNode):
                self.errors.append((path, key_node.start_mark.line + 1 + self.offset, "mapping keys must be scalars"))
                continue
            name = _json_key(key)
            line = key_node.start_mark.line + 1 + self.offset
            if name in first:
                self.errors.append(((*path, name), line,
                                    f"duplicate key {name!r} (first defined on line {first[name]})"))
                continue
            first[name] = line
            self.lines[(*path, name)] = line
            out[name] = self.build(value_node, (*path, name))
        return out


def _json_key(key: Any) -> str:
    """sigs.k8s.io/yaml turns non-string keys into their JSON text (``true``, ``1``)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def parse_slow(text: str, file: str, offset: int = 0) -> tuple[list[tuple[Any, int, dict[JsonPath, int]]],
                                                                list[Problem]]:
    """Every document of ``text``: (data, first line, line of each path), and YAML problems.

    ``offset`` is the number of lines before ``text`` in its file (for one document of many).
    """
    import yaml

    docs: list[tuple[Any, int, dict[JsonPath, int]]] = []
    problems: list[Problem] = []
    loader = _compose_loader()(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if isinstance(node, yaml.ScalarNode) and node.value == "" and node.tag == _PLAIN and not node.style:
                continue  # an empty document ("---" twice): the fast splitter skips it too
            builder = _Builder(offset)
            data = builder.build(node, ())
            for path, line, message in builder.errors:
                problems.append(Problem(file, index, "", "", path, message, rule=RULE_YAML, line=line))
            docs.append((data, node.start_mark.line + 1 + offset, builder.lines))
            index += 1
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        col = f", column {mark.column + 1}" if mark else ""
        problems.append(Problem(file, index, "", "", (), f"invalid YAML: {what}{col}", rule=RULE_YAML,
                                line=mark.line + 1 + offset if mark else 0))
    except yaml.YAMLError as e:
        problems.append(Problem(file, index, "", "", (), f"invalid YAML: {e}", rule=RULE_YAML))
    finally:
        loader.dispose()
    return docs, problems


# --- fast path -------------------------------------------------------------------------

# Only blank lines and comments (with match(): from the start, up to endpos when given).
_BLANK = re.compile(r"(?:[ \t]*(?:#[^\n]*)?(?:\n|\Z))*\Z")
# Plain scalars whose go-yaml v2 meaning may differ from YAML 1.2: 1.1 booleans and
# leading-zero / underscore / binary / octal numbers, as a value (": x"), a block sequence
# item ("- x") or a flow item ("[x", ", x"); numeric keys (go-yaml makes them strings, yaml-rs
# ints); merge keys and tags. Each pattern starts with a literal so the scan runs at memchr
# speed (one alternation of everything took 2.9 s on 8 MB; these take ~0.1 s together).
_WORD = r"(?:[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)"
_NUMBER = r"[-+]?0[0-9_]|[-+]?[0-9]+_|[-+]?0[bBoO]"
_WORD_KEY = r"(?:true|True|TRUE|false|False|FALSE|null|Null|NULL|~|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
# Every colon, in one pass (a literal first character: the scan runs at memchr speed), for
# a value (": yes", ": 0755"); a key go-yaml v2 reads as a boolean (`on:` is the key "true"),
# found by looking back, ~2x faster than matching every line; a `key :` (rare: the slow path
# reads it); and a colon after a digit, which may end a key go-yaml reads as a number (`010:` is
# the key "8"), checked by hand (group "digit").
_COLON = re.compile(
    r":(?: (?:" + _WORD + r"[ \t]*(?:$|[#,\]}])|" + _NUMBER + ")"
    r"|(?<=[\s{,][yYnN]:)|(?<=[\s{,](?:yes|Yes|YES|off|Off|OFF):)|(?<=[\s{,](?:no|No|NO|on|On|ON):)"
    # keys YAML 1.2 (yaml-rs) reads as booleans or null, which kubectl makes strings ("true", "null")
    r"|(?<=[\s{,\[](?:true|True|TRUE|null|Null|NULL):)|(?<=[\s{,\[](?:false|False|FALSE):)|(?<=[\s{,\[]~:)"
    r"|(?<=[\s{,\[]\.(?:inf|Inf|INF|nan|NaN|NAN):)|(?<=[\s{,\[][-+]\.(?:inf|Inf|INF):)"
    r"|(?<=[ \t]:)"
    r"|(?P<digit>(?<=[0-9_.]:)(?=[ \t\r\n,}\]]|$)))", re.M)
_CANDIDATES = (
    re.compile(r"- (?:" + _WORD + r"[ \t]*(?:$|[#,\]}])|" + _NUMBER + ")", re.M),
    re.compile(r"\[[ \t]*(?:" + _WORD + r"[ \t]*[,\]:]|" + _NUMBER + ")"),
    re.compile(r",[ \t]*(?:" + _WORD + r"[ \t]*[,\]}:]|" + _NUMBER + ")"),
    re.compile(r"\{[ \t]*(?:" + _WORD + r"[ \t]*[,}:]|" + _NUMBER + ")"),
    # a document that is one plain scalar (documents are joined with "---\n")
    re.compile(r"---\n(?:" + _WORD + r"[ \t]*(?:$|#)|" + _NUMBER + ")", re.M),
    re.compile(r"<<[ \t]*:"),
    # a hexadecimal key (yaml-rs reads `0x1F:` as the key 31; kubectl as "31")
    re.compile(r"0[xX][0-9a-fA-F_]*:(?=[ \t\r\n]|$)", re.M),
)
# A key token (after a space, "{", "[" or ",") that YAML 1.2 or go-yaml may read as a number:
# kubectl makes it a string ("80", "8" for 010), yaml-rs an int or float.
_KEY_NUMBER_START = re.compile(r"[-+]?\.?[0-9]")


def _colon_candidate(text: str, start: int, end: int) -> bool:
    for m in _COLON.finditer(text, start, end):
        if m.group("digit") is None:
            return True
        at = m.start()  # a colon after a digit: is the key before it a go-yaml number?
        begin = max(text.rfind(c, start, at) for c in " \t\n{[,") + 1
        if _KEY_NUMBER_START.match(text, max(begin, start), at):
            return True
    return False


def _has_tag(text: str, start: int, end: int) -> bool:
    """A ``!tag`` (``!`` after whitespace or a flow/block indicator); ``!`` inside words is fine."""
    at = text.find("!", start, end)
    while at != -1:
        if at == start or text[at - 1] in " \t\n[{,:-":
            return True
        at = text.find("!", at + 1, end)
    return False


def _is_candidate(text: str) -> bool:
    """Whether ``text`` (one or more documents, joined by ``---`` lines) may hold a scalar
    go-yaml reads differently. It may over-match (a slower read), never under-match."""
    text = "---\n" + text
    return _scan(text, 0, len(text))


def _scan(text: str, start: int, end: int) -> bool:
    """:func:`_is_candidate`'s test of ``text[start:end]``, whose lines all start after a newline.

    A large region is first searched with :data:`_RE2_SOURCE` (one linear-time pass instead of
    seven backtracking ones: ~18 ms instead of ~190 ms per 8 MB); only when it finds something
    do the exact patterns run, so the verdict is theirs either way."""
    size = end - start
    wide = re2_filter() if size >= _RE2_MIN and (_RE2 or size >= _RE2_IMPORT) else None
    if wide is not None:
        raw = _bytes_of(text)
        if (wide.search(text[start:end]) if raw is None else wide.search(raw, start, end)) is None:
            return _has_tag(text, start, end)
    return _exact_scan(text, start, end)


def _exact_scan(text: str, start: int, end: int) -> bool:
    return (_colon_candidate(text, start, end) or any(p.search(text, start, end) for p in _CANDIDATES)
            or _has_tag(text, start, end))


# _COLON and _CANDIDATES as one pattern for RE2 (no look-around: the character before a key
# is matched instead; a region's start counts as a line start). It matches wherever they do
# (a fuzz test holds it to that) and a little more (a token starting with a digit before any
# colon followed by a space, for instance), which only means the exact patterns run.
_SPACE = r"\t-\r\x1c-\x1f \x85\p{Z}"  # what Python's \s matches in a str
_RE2_SOURCE = "(?m)" + "|".join([
    r":(?: (?:" + _WORD + r"[ \t]*(?:$|[#,\]}])|" + _NUMBER + "))",
    r"(?:^|[" + _SPACE + r"{,])" + _WORD + ":",
    r"[ \t]:",
    r"(?:^|[ \t\n{\[,])[-+]?\.?[0-9][^ \t\n{\[,]*:(?:[ \t\r\n,}\]]|$)",
    r"(?:^|[" + _SPACE + r"{,\[])" + _WORD_KEY + ":",
    *(p.pattern for p in _CANDIDATES[:-1]),
    r"0[xX][0-9a-fA-F_]*:(?:[ \t\r\n]|$)",  # the last candidate, without its look-ahead
])
_RE2_MIN = 4_096  # RE2 once loaded: worth it from a few documents on
_RE2_IMPORT = 500_000  # importing it (~11 ms) pays off from ~0.5 MB (validate_paths preloads it for workers)
_RE2: list[Any] = []
_RE2_WHOLE: list[Any] = []  # read_whole's three searches as one RE2 pattern


def re2_filter() -> Any:
    """The compiled :data:`_RE2_SOURCE`, or None without the ``google-re2`` package."""
    if not _RE2:
        try:
            import re2  # type: ignore[import-not-found,unused-ignore]

            quiet = re2.Options()
            quiet.log_errors = False  # a pattern it cannot take raises; nothing on stderr
            _RE2.append(re2.compile(_RE2_SOURCE, quiet))
            # (a leading "\n", not "(?:^|\n)": RE2 then skips to each newline, 4x faster)
            _RE2_WHOLE.append(re2.compile(r"\n(?:%|\.\.\.|---[ \t\r]*[^ \t\r#\n])", quiet))
        except Exception:  # not installed (no wheel for this platform), or a build without \p{Z}
            _RE2.append(None)
    return _RE2[0]


def _string_keys(data: Any) -> Any:
    """go-yaml makes a numeric key a string (``80: x`` -> ``"80"``); yaml-rs gives an int. The
    pre-scan sends documents with such keys to the go-yaml reader; ConfigMap/Secret data, where
    they are most plausible, are converted here as well, should one get past it."""
    if isinstance(data, dict) and data.get("kind") in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData", "stringData"):
            values = data.get(field)
            if isinstance(values, dict) and not all(isinstance(k, str) for k in values):
                data[field] = {_json_key(k): v for k, v in values.items()}
    return data


def _yaml_rs() -> Any:
    if os.environ.get("DOCKYARD_K8S_YAML") == "pyyaml":  # force the slow path (tests, debugging)
        return None
    try:
        import yaml_rs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return yaml_rs


def _chunks(text: str) -> list[tuple[str, int]] | None:
    """Split a YAML stream at ``---`` lines: (document text, first line), blank chunks dropped.

    None when the file needs the whole-file slow path: directives (``%``), explicit document
    ends (``...``) or content on a ``---`` line (a document-level flow or block scalar).
    Plain string searches, not ``^``-anchored multi-line regexes: those test every position
    of the text and cost ~0.1 s per 8 MB each.
    """
    if _directive_or_end(text):
        return None
    return _split(text, 0, len(text), 1)


def _markers(text: str, start: int, stop: int) -> list[int]:
    """Where the lines starting with ``---`` begin in ``text[start:stop]``."""
    markers = [start] if text.startswith("---", start, stop) else []
    at = text.find("\n---", start, stop)
    while at >= 0:
        markers.append(at + 1)
        at = text.find("\n---", at + 4, stop)
    return markers


def _split(text: str, start: int, stop: int, line: int) -> list[tuple[str, int]] | None:
    """:func:`_chunks` of ``text[start:stop]`` (whose first line is ``line``), without copying it."""
    out: list[tuple[str, int]] = []
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
    character first: ``"\\n%" in text`` stops at every newline, 8 ms per 8 MB.)"""
    return (text.startswith(("%", "..."))
            or ("%" in text and "\n%" in text) or ("..." in text and "\n..." in text))


_CONTENT_AFTER_MARKER = re.compile(r"\n---[ \t\r]*[^ \t\r#\n]")


def _json_like(text: str, file: str) -> bool:
    """A JSON file, or a YAML file written as one flow collection: read whole."""
    return file.endswith(".json") or text.lstrip()[:1] in ("{", "[")


def read_whole(text: str, file: str) -> bool:
    """Whether the file is read whole (:func:`split_documents` gives None), found without
    splitting it: JSON, directives, ``...`` lines, content on a ``---`` line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if _json_like(text, file):
        return True
    if len(text) >= _RE2_MIN and _RE2 and _RE2[0] is not None:  # RE2 loaded: one pass, not three
        whole, raw = _RE2_WHOLE[0], _bytes_of(text)
        return whole.search("\n" + text[:80]) is not None or whole.search(text if raw is None else raw) is not None
    return (_directive_or_end(text) or _CONTENT_AFTER_MARKER.search("\n" + text[:80]) is not None
            or _CONTENT_AFTER_MARKER.search(text) is not None)


def region_documents(text: str, start: int, end: int, line: int = 0) -> list[tuple[str, int]]:
    """The documents of ``text[start:end]`` as :func:`split_documents` gives them (first lines
    counted from the start of the file, or from ``line`` for the region's first line), for a
    file that is not :func:`read_whole` and a region that starts at a ``---`` line (or the
    file's start) and ends at one (or the file's end)."""
    if start == 0 and text.startswith("\ufeff"):
        start = 1
    chunks = _split(text, start, end, line or 1 + text.count("\n", 0, start))
    assert chunks is not None, "read_whole() said the file splits"
    return chunks


def split_documents(text: str, file: str) -> list[tuple[str, int]] | None:
    """The documents of a file as :func:`parse_text` splits them (see :func:`_chunks`), or
    None when the file is read whole (JSON, directives, document-level scalars)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return None if _json_like(text, file) else _chunks(text)


def parse_text(text: str, file: str) -> tuple[list[tuple[Any, int, int]], list[Problem]]:
    """Documents of one file: (data, doc index, first line), plus YAML problems."""
    if text.startswith("\ufeff"):
        text = text[1:]
    fast = _yaml_rs()
    if fast is None:
        return _slow(text, file)
    if _json_like(text, file):
        try:
            return [(fast.loads(text, parse_datetime=False), 0, 1)], []
        except Exception:
            return _slow(text, file)
    chunks = _chunks(text)
    if chunks is None:
        return _slow(text, file)
    return _parse_chunks(chunks, file, fast)


def _joined(chunks: list[tuple[str, int]], indices: list[int]) -> str:
    return "---\n" + "---\n".join(chunks[i][0] if chunks[i][0].endswith("\n") else chunks[i][0] + "\n"
                                   for i in indices)


def _parse_chunks(chunks: list[tuple[str, int]], file: str,
                  fast: Any) -> tuple[list[tuple[Any, int, int]], list[Problem]]:
    """The documents of a split file: yaml-rs on all of them at once, the slow path for
    candidates (see :data:`_CANDIDATES`) and for documents yaml-rs rejects (to say where)."""
    indices = list(range(len(chunks)))
    out: list[tuple[Any, int, int]] = []
    slow: list[int] = list(indices) if fast is None else []
    if fast is not None and indices:
        joined = _joined(chunks, indices)
        quick = indices
        if _is_candidate(joined):  # rare: find the documents concerned
            quick = [i for i in indices if not _is_candidate(chunks[i][0])]
            slow = [i for i in indices if i not in set(quick)]
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
        problems += [p._replace(doc_index=i) for p in found]
        if docs:
            out.append((docs[0][0], i, line))
    if slow:
        out.sort(key=lambda d: d[1])
    return out, problems


_SLOW = object()  # a document yaml-rs could not read


def _slow(text: str, file: str) -> tuple[list[tuple[Any, int, int]], list[Problem]]:
    docs, problems = parse_slow(text, file)
    return [(data, i, line) for i, (data, line, _) in enumerate(docs)], problems


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_./]*").fullmatch


def _text_line(lines: list[str], path: JsonPath) -> int | None:
    """The 0-based line where ``path`` is written in a block-style document, read off its text
    (no parse: locating 500 problems with PyYAML cost ~0.3 s), or None when not sure: flow
    style, quoted or unusual keys, tabs, a path that is not there. The caller then composes."""
    n = len(lines)
    lo = 0
    while lo < n and (not lines[lo].strip() or lines[lo].lstrip().startswith("#")):
        lo += 1
    if lo == n:
        return None
    col = len(lines[lo]) - len(lines[lo].lstrip(" "))
    at, seq = lo, lines[lo][col:].startswith("- ") or lines[lo][col:] == "-"
    first = col  # where the first entry of the current node starts on line `lo` (after "- ")
    for comp in path:
        if isinstance(comp, str):
            if seq or not _PLAIN_KEY(comp):
                return None
            found = None
            for j in range(lo, n):
                line = lines[j]
                indent = len(line) - len(line.lstrip(" "))
                body = line[first:] if j == lo else line[indent:]
                if j > lo:
                    if not body or body.startswith("#") or indent > col:
                        continue
                    if indent < col:
                        break
                    if body.startswith("-"):
                        continue  # an indentless sequence of the previous key
                if body.startswith(comp) and body[len(comp):len(comp) + 2] in (": ", ":"):
                    found = j
                    break
            if found is None:
                return None
            rest = lines[found][(first if found == lo else col) + len(comp) + 1:].strip()
            at = found
            if rest and not rest.startswith("#"):  # a value on the key's line: a leaf
                lo, col, seq = found, -1, False  # nothing can be looked up inside it
                continue
            k = found + 1
            while k < n and (not lines[k].strip() or lines[k].lstrip().startswith("#")):
                k += 1
            if k == n:
                lo, col = found, -1
                continue
            indent = len(lines[k]) - len(lines[k].lstrip(" "))
            seq = lines[k][indent:].startswith("- ") or lines[k][indent:] == "-"
            if indent < col or (indent == col and not seq):
                lo, col = found, -1  # an empty value
                continue
            lo, col, first = k, indent, indent
        else:
            if not seq or col < 0:
                return None
            count, found = -1, None
            for j in range(lo, n):
                line = lines[j]
                indent = len(line) - len(line.lstrip(" "))
                body = line[indent:]
                if not body or body.startswith("#") or indent > col:
                    continue
                if indent < col or not (body.startswith("- ") or body == "-"):
                    break
                count += 1
                if count == comp:
                    found = j
                    break
            if found is None:
                return None
            item = lines[found][col + 1:]
            inner = len(item) - len(item.lstrip(" "))
            if item.strip() and not item.strip().startswith("#"):
                at, lo, col, first = found, found, col + 1 + inner, col + 1 + inner
                seq = item.lstrip(" ").startswith("- ")
                if seq or not _PLAIN_KEY(item.strip().split(":", 1)[0]) or ":" not in item:
                    # a scalar item, a nested sequence on the dash line, or a flow item
                    lo, col, seq = found, -1, False
                continue
            return None  # "-" alone: the item starts on a later line (rare)
    if any(c in lines[at] for c in "&*!"):
        return None  # anchors, aliases, tags: ask PyYAML
    return at


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


_FLOW_OR_QUOTE = re.compile(r"[\[\]{}\"']")


def _path_lines(text: str, offset: int, paths: list[JsonPath]) -> dict[JsonPath, int] | None:
    """Lines of ``paths`` (and of their ancestors) in a one-document ``text``, as the full
    :class:`_Builder` gives them, composing the document but walking only along ``paths``
    (locating 500 problems built 500 whole documents). None when the document has merge
    keys or does not compose: the caller uses the full builder."""
    import yaml

    prefixes = {p[:k] for p in paths for k in range(len(p) + 1)}
    loader = _compose_loader()(text)
    try:
        node = loader.get_node() if loader.check_node() else None
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    if node is None:
        return None
    lines: dict[JsonPath, int] = {}
    keys = _Builder(offset)
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
                child = (*path, _json_key(keys.build(key_node, path)))
                if child in prefixes and child not in lines:
                    lines[child] = key_node.start_mark.line + 1 + offset
                    todo.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                if (*path, i) in prefixes:
                    todo.append((item, (*path, i)))
    return lines


def locate(text: str, file: str, wanted: dict[int, list[JsonPath]],
           chunks: Sequence[tuple[str, int]] | None = None) -> dict[tuple[int, JsonPath], int]:
    """Line numbers of JSON paths, per document index: ``{(doc, path): line}``.

    Re-parses only the documents asked for (with the slow, locating parser); a path that is
    not in the file (a missing field) gets the line of its nearest enclosing value.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    per_doc: dict[int, tuple[dict[JsonPath, int], int]] = {}
    if chunks is None:
        chunks = split_documents(text, file)
    if chunks is None:
        docs, _ = parse_slow(text, file)
        per_doc = {i: (lines, 0) for i, (_, _, lines) in enumerate(docs)}
    else:
        for i, paths in wanted.items():
            if i < len(chunks):
                split = chunks[i][0].split("\n")
                quick = [_text_line(split, path) for path in paths] if _block_style(chunks[i][0]) else [None]
                if None not in quick:  # every path read off the text: no parse needed
                    per_doc[i] = ({path: line + chunks[i][1] for path, line in zip(paths, quick, strict=True)
                                   if line is not None}, 0)
                    continue
                found = _path_lines(chunks[i][0], chunks[i][1] - 1, paths)
                if found is None:  # merge keys, a syntax error...: the full builder
                    docs, _ = parse_slow(chunks[i][0], file, chunks[i][1] - 1)
                    found = docs[0][2] if docs else None
                if found is not None:
                    per_doc[i] = (found, 0)
    out: dict[tuple[int, JsonPath], int] = {}
    for i, paths in wanted.items():
        if i not in per_doc:
            continue
        lines, offset = per_doc[i]
        for path in paths:
            for end in range(len(path), -1, -1):
                if path[:end] in lines:
                    out[(i, path)] = lines[path[:end]] + offset
                    break
    return out


# --- files, directories, stdin ---------------------------------------------------------


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


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
        with open(file, "rb") as f:
            if os.fstat(f.fileno()).st_size < _MAP_FROM:
                return _decoded(file, f.read())
            import mmap

            try:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # a file system that cannot map it, or it shrank to nothing
                return _decoded(file, f.read())
            try:
                text = _decoded(file, mapped)  # decoded from the page cache: no copy of the bytes first
            except BaseException:
                mapped.close()
                raise
            if text.isascii() and len(_MAPPED) < 64:  # its bytes are its characters: RE2 searches them
                _MAPPED[id(text)] = (text, mapped)
            else:
                mapped.close()
            return text
    except OSError as e:
        raise UsageError(f"{file}: cannot read ({e.strerror})") from e


_MAP_FROM = 1_000_000  # a file this large is mapped, not read (~10 ms less per 8 MB)
# ASCII texts read from mapped files, with their mappings, by id(text): the pre-scan's RE2
# searches search the mapping (no UTF-8 copy of the text, or of each region, to make first).
# (As with any mapped file, one truncated by another process while a run still searches it
# ends the run with SIGBUS; the text itself was copied when read.)
_MAPPED: dict[int, tuple[str, Any]] = {}


def _bytes_of(text: str) -> Any:
    """The mapped file ``text`` was decoded from, when it is ASCII (offsets are the same), or None."""
    found = _MAPPED.get(id(text))
    return found[1] if found is not None and found[0] is text else None


def release_mapped() -> None:
    """Close the mappings :func:`read_text` kept (a long-running caller, between runs)."""
    for _, mapped in _MAPPED.values():
        mapped.close()
    _MAPPED.clear()


def _decoded(file: str, raw: Any) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{file}: not UTF-8 text ({e.reason} at byte {e.start})") from e


def documents_of(file: str, text: str) -> tuple[list[Document], list[Problem]]:
    """Objects of one file's text (``kind: List`` expanded), and its YAML problems."""
    return _documents(file, *parse_text(text, file))


def chunk_documents_of(file: str, chunks: list[tuple[str, int]]) -> tuple[list[Document], list[Problem]]:
    """:func:`documents_of` for documents already split (:func:`region_documents`), numbered
    from 0 in ``chunks``."""
    return _documents(file, *_parse_chunks(chunks, file, _yaml_rs()))


def _documents(file: str, parsed: list[tuple[Any, int, int]],
               problems: list[Problem]) -> tuple[list[Document], list[Problem]]:
    named = {i: d for d, i, _ in parsed if isinstance(d, dict)}
    for n, p in enumerate(problems):  # name the object a YAML problem belongs to, when it parsed
        data = named.get(p.doc_index)
        if data is not None and not p.kind:
            raw = data.get("metadata")
            meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
            problems[n] = p._replace(kind=str(data.get("kind") or ""), name=str(meta.get("name") or ""),
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


class Pieces(Sequence[tuple[str, int]]):
    """The documents of a region of a file, like :func:`split_documents`'s list but made on
    demand from their offsets: (text, first line) of document ``i``."""

    def __init__(self, text: str, bounds: list[tuple[int, int, int]]) -> None:
        self.text = text
        self.bounds = bounds  # (start, end, first line) of each document

    def __len__(self) -> int:
        return len(self.bounds)

    @overload
    def __getitem__(self, i: int) -> tuple[str, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[str, int] | list[tuple[str, int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        start, end, line = self.bounds[i]
        return self.text[start:end], line


def region_documents_of(file: str, text: str, start: int, end: int,
                        line: int = 0) -> tuple[list[Document], list[Problem], Pieces | list[tuple[str, int]]]:
    """The objects of ``text[start:end]``, a region of a file that is not :func:`read_whole`
    (see :func:`region_documents`), numbered from 0; its YAML problems; and its documents, for
    locating problems. Lines count from the file's start, or from ``line`` for the region's
    first line (a worker's lines then shift like its document indexes: counting the lines before
    each region of a large file cost its workers 74 ms of CPU per 8 MB).

    The fast way, for a plain stream (bare ``---`` lines, no blank document, nothing the
    pre-scan flags): yaml-rs reads the region in place, no document copied into its own
    string. Anything else takes the general way, document by document.
    """
    fast = _yaml_rs()
    if start == 0 and text.startswith("\ufeff"):
        start = 1
    bounds = _plain_stream(text, start, end, line) if fast is not None else None
    if bounds is not None and not _candidate_in(text, start, end):
        try:
            values = fast.loads(text[start:end], parse_datetime=False)
        except Exception:  # a syntax error or duplicate key: the general way says where
            values = None
        if values is not None and len(bounds) > 1:
            values = values if isinstance(values, list) and len(values) == len(bounds) else None
        elif values is not None:
            values = [values]
        if values is not None and None not in values:
            parsed = [(_string_keys(v), i, bounds[i][2]) for i, v in enumerate(values)]
            documents, problems = _documents(file, parsed, [])
            return documents, problems, Pieces(text, bounds)
    chunks = region_documents(text, start, end, line)
    return (*chunk_documents_of(file, chunks), chunks)


def _plain_stream(text: str, start: int, end: int, line: int = 0) -> list[tuple[int, int, int]] | None:
    """(start, end, first line) of each document of the region when it is a plain stream:
    every ``---`` line bare, no blank document; else None. ``line``: as for :func:`region_documents`."""
    bounds: list[tuple[int, int, int]] = []
    line = line or 1 + text.count("\n", 0, start)
    piece = start
    for at in _markers(text, start, end):
        if not text.startswith("---\n", at, end):
            return None  # a comment or spaces on the marker line, or a last bare `---`
        if at > piece:
            bounds.append((piece, at, line))
        line += text.count("\n", piece, at) + 1
        piece = at + 4
    if piece < end:
        bounds.append((piece, end, line))
    for first, stop, _ in bounds:
        if text[first] in " \t\r\n#" and _BLANK.match(text, first, stop):
            return None  # a blank document: yaml-rs and the splitter would count it differently
    return bounds or None


def _candidate_in(text: str, start: int, end: int) -> bool:
    """:func:`_is_candidate` on ``text[start:end]`` without copying it (its first line, which has
    no line start before it in the region, is checked on its own)."""
    first = text.find("\n", start, end)
    return _is_candidate(text[start:first + 1 if first >= 0 else end]) or _scan(text, start, end)


def read_manifests(paths: list[str], texts: dict[str, str] | None = None) -> Manifests:
    """Every document of every file under ``paths``, in order; ``texts`` holds files already
    read (stdin can be read only once).

    Raises:
        UsageError: a missing path or unreadable file (exit 2).
    """
    documents: list[Document] = []
    problems: list[Problem] = []
    read: dict[str, str] = {}
    files = manifest_files(paths)
    for file in files:
        text = (texts or {}).get(file)
        if text is None:
            text = read_text(file)
        read[file] = text
        found, bad = documents_of(file, text)
        documents += found
        problems += bad
    return Manifests(documents, problems, len(files), read)


def add_lines(problems: list[Problem], texts: dict[str, str], limit: int = 500,
              chunked: Mapping[str, Sequence[tuple[str, int]] | None] | None = None) -> list[Problem]:
    """Fill in ``line`` for problems of the first ``limit`` documents that have one to find.

    ``chunked`` holds files already split by :func:`split_documents` (not split again).
    """
    wanted: dict[str, dict[int, list[JsonPath]]] = {}
    for p in problems:
        if not p.line and p.file in texts:
            docs = wanted.setdefault(p.file, {})
            if p.doc_index in docs or len(docs) < limit:
                docs.setdefault(p.doc_index, []).append(p.path)
    found: dict[str, dict[tuple[int, JsonPath], int]] = {
        file: locate(texts[file], file, docs, (chunked or {}).get(file)) for file, docs in wanted.items()}
    return [p._replace(line=found.get(p.file, {}).get((p.doc_index, p.path), 0)) if not p.line else p
            for p in problems]
