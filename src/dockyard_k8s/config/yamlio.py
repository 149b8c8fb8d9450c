"""Strict YAML reading with locations: text -> (data, marks), every problem collected.

What this adds over ``yaml.safe_load``:

* **YAML 1.2 core scalars.** PyYAML resolves YAML 1.1: ``no``/``on``/``yes`` become
  booleans, ``0755`` an octal int, ``1:30`` the integer 90, ``2024-01-01`` a date.
  We resolve the 1.2 core schema instead and report every plain scalar whose meaning
  differs between 1.1 and 1.2 as an error, so nothing silently changes meaning
  whichever parser a downstream consumer uses (kubectl and most trainers use 1.1).
* **Duplicate keys** are errors (PyYAML keeps the last one silently).
* **``${VAR}`` / ``${VAR:-default}`` / ``${VAR-default}``** are substituted from the
  given environment in scalar values (``$${`` escapes). A plain scalar is re-typed
  after substitution, so ``replicas: ${N}`` gives an int. Unset without default is
  an error at the scalar's location.
* **Locations.** ``marks[path]`` is where the value at ``path`` was written;
  ``key_marks[path]`` where its key was. Paths are tuples of str keys / int indexes.

Importing PyYAML is a large part of ``check``'s start-up (bench/README.md), so it is imported
only when needed: files in the plain block style configs are written in (mappings, sequences, flow
lists, names and numbers, nothing a YAML 1.1 reader types differently) are read by a small
subset parser (:class:`_Subset`) that gives the same data and marks, and declines anything
else, including every input with a problem, which PyYAML then reads and reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import Path, Record, format_path
from dockyard_k8s.pyyaml import PLAIN_TAG, compose_loader

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

    import yaml


class Mark(Record):
    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int, col: int) -> None:
        self.file = file
        self.line = line  # 1-based
        self.col = col  # 1-based


class Doc(Record):
    """A parsed document: plain data plus where each value came from."""

    __slots__ = ("data", "marks", "key_marks")

    def __init__(self, data: Any, marks: dict[Path, Mark], key_marks: dict[Path, Mark]) -> None:
        self.data = data
        self.marks = marks
        self.key_marks = key_marks


# --- YAML 1.2 core schema resolution -------------------------------------------------

_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")
_BOOL = re.compile(r"^(true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(~|null|Null|NULL|)$")

# Plain scalars that YAML 1.1 (PyYAML, go-yaml v2, kubectl) reads differently from 1.2.
_AMBIGUOUS = (
    # PyYAML's 1.1 boolean words (it does not take y/n, and neither do we: `n: 4` is common).
    (re.compile(r"^(yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$"),
     "is a boolean in YAML 1.1 (PyYAML, kubectl) but a string in YAML 1.2; write true/false, or quote it"),
    (re.compile(r"^[-+]?0[0-7_]+$"),
     "is an octal number in YAML 1.1 but decimal in YAML 1.2; write 0o{rest} for the octal number, "
     "or quote it ('{value}') when a string is meant"),
    (re.compile(r"^[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$"),
     "is a base-60 number in YAML 1.1 but a string in YAML 1.2; quote it"),
    (re.compile(r"^[-+]?(0b[01_]+|[0-9][0-9_]*_[0-9_]*)$"),
     "is a number in YAML 1.1 but a string in YAML 1.2; quote it"),
)

_STR_TAG = "tag:yaml.org,2002:str"
_KNOWN_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq",
}


def _resolve_plain(value: str) -> tuple[str, Any]:
    """Type of an untagged plain scalar under the YAML 1.2 core schema."""
    if _NULL.match(value):
        return "null", None
    if _BOOL.match(value):
        return "bool", value.lower() == "true"
    if _INT.match(value):
        if value.startswith("0o"):
            return "int", int(value[2:], 8)
        if value.startswith("0x"):
            return "int", int(value[2:], 16)
        return "int", int(value)
    if _FLOAT.match(value):
        low = value.lower()
        if low.endswith("inf"):
            return "float", float("-inf") if low.startswith("-") else float("inf")
        if low.endswith("nan"):
            return "float", float("nan")
        return "float", float(value)
    return "str", value


def _untagged(value: str, plain: bool) -> tuple[Any, str | None]:
    """An untagged scalar's value (a quoted one is a string), or why YAML 1.1 reads it differently."""
    if not plain:
        return value, None
    for pattern, why in _AMBIGUOUS:
        if pattern.match(value):
            rest = value.lstrip("+-")[1:]
            return value, f"unquoted {value!r} {why.format(rest=rest, value=value)}"
    return _resolve_plain(value)[1], None


# --- environment interpolation --------------------------------------------------------

_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")


def interpolate(text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """Substitute ``${VAR}`` forms in ``text``. Returns (new text, names of unset variables)."""
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$${":
            return "${"
        name, op, default = m.group(1), m.group(2), m.group(3)
        value = env.get(name)
        if (op == ":-" and not value) or (op == "-" and value is None):
            return default.replace("$${", "${")  # $${ is a literal ${ in a default as anywhere
        if value is None:
            missing.append(name)
            return m.group(0)
        return value

    return _VAR.sub(sub, text), list(dict.fromkeys(missing))


def malformed_variable(text: str) -> str | None:
    """The first ``${`` that starts no valid reference (``${TAG`` unterminated, ``${1X}``, a
    nested ``${A:-${B}}``, which would leave ``${B}`` unsubstituted), or None."""
    for m in _VAR.finditer(text):
        if m.group(3) is not None and re.search(r"(?<!\$)\$\{", m.group(3)):
            return text[m.start():text.find("}", m.end()) + 1 or len(text)]
    rest = _VAR.sub("", text)
    at = rest.find("${")
    if at < 0:
        return None
    end = rest.find("}", at)
    return rest[at:end + 1] if end >= 0 else rest[at:at + 40]


# --- the walk ------------------------------------------------------------------------


class _Walker:
    def __init__(self, file: str, env: Mapping[str, str] | None) -> None:
        self.file = file
        self.env = env
        self.marks: dict[Path, Mark] = {}
        self.key_marks: dict[Path, Mark] = {}
        self.problems: list[ConfigProblem] = []
        self._active: set[int] = set()

    def mark(self, node: yaml.Node) -> Mark:
        return Mark(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, node: yaml.Node, path: Path, message: str) -> None:
        m = self.mark(node)
        self.problems.append(ConfigProblem(self.file, m.line, m.col, format_path(path), message))

    # The walk runs only once _compose has imported PyYAML: these imports find it loaded.

    def build(self, node: yaml.Node, path: Path) -> Any:
        import yaml

        self.marks[path] = self.mark(node)
        if id(node) in self._active:
            self.problem(node, path, "recursive alias (an anchor that contains itself)")
            return None
        if node.tag not in _KNOWN_TAGS and node.tag != PLAIN_TAG:
            self.problem(node, path, f"unsupported tag {node.tag!r} (plain YAML only)")
            return None
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            return self.mapping(node, path)
        finally:
            self._active.discard(id(node))

    def scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        value: str = node.value
        if self.env is not None and "$" in value:
            bad = malformed_variable(value)
            if bad is not None:
                what = ("a variable reference inside a default (not supported: set the default itself)"
                        if "${" in bad[2:] else "an unterminated or malformed variable reference")
                self.problem(node, path, f"got {bad!r}: {what} "
                                         "(expected ${NAME}, ${NAME:-default} or ${NAME-default}; $${ is a literal ${)")
            value, missing = interpolate(value, self.env)
            for name in missing:
                self.problem(node, path, f"environment variable {name} is not set "
                                         f"(got ${{{name}}}, expected it set, or write ${{{name}:-default}})")
            if bad is not None or missing:
                return value  # one problem per reference: the value itself is unknown, check nothing else
        if node.tag == PLAIN_TAG:
            # quoted or block scalar: always a string (style "" or None is plain)
            typed, why = _untagged(value, not node.style)
            if why:
                self.problem(node, path, why)
            return typed
        if node.tag == _STR_TAG:
            return value
        kind, typed = _resolve_plain(value)
        wanted = node.tag.rsplit(":", 1)[-1]
        if kind != wanted and not (wanted == "float" and kind == "int"):
            self.problem(node, path, f"got {value!r}, expected a value of tag !!{wanted}")
            return value
        return float(typed) if wanted == "float" else typed

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        import yaml

        out: dict[str, Any] = {}
        seen: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, path, "mapping keys must be plain scalars")
                continue
            key = key_node.value
            if key == "<<" and not key_node.style:
                self._merge_key(value_node, path, out)
                continue
            if not key_node.style and key_node.tag == PLAIN_TAG and _AMBIGUOUS[0][0].match(key):
                self.problem(key_node, (*path, key), f"unquoted key {key!r} is a boolean in YAML 1.1 "
                                                     "(PyYAML, kubectl) but a string in YAML 1.2; quote it")
            if key in seen:
                first = seen[key].start_mark.line + 1
                self.problem(key_node, (*path, key), f"duplicate key {key!r} (first defined on line {first})")
                continue
            seen[key] = key_node
            self.key_marks[(*path, key)] = self.mark(key_node)
            out[key] = self.build(value_node, (*path, key))
        return out

    def _merge_key(self, value_node: yaml.Node, path: Path, out: dict[str, Any]) -> None:
        import yaml

        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                self.problem(src, path, "'<<' merge needs a mapping or a list of mappings")
                continue
            merged = self.mapping(src, path)
            for k, v in merged.items():
                out.setdefault(k, v)


def _compose(text: str, file: str, env: Mapping[str, str] | None) -> tuple[Any, _Walker]:
    import yaml

    walker = _Walker(file, env)
    try:
        nodes = list(yaml.compose_all(text, Loader=compose_loader()))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        what = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        walker.problems.append(ConfigProblem(file, line, col, "", f"invalid YAML: {what}"))
        return None, walker
    except yaml.YAMLError as e:  # reader errors (bad encoding, control characters)
        walker.problems.append(ConfigProblem(file, 0, 0, "", f"invalid YAML: {e}"))
        return None, walker
    if len(nodes) > 1:
        walker.problem(nodes[1], (), "expected a single YAML document, found several ('---')")
    return (walker.build(nodes[0], ()) if nodes else None), walker


def parse_yaml(text: str, file: str, env: Mapping[str, str] | None = None) -> tuple[Doc, list[ConfigProblem]]:
    """Parse one YAML document strictly. ``env`` enables ``${VAR}`` interpolation.

    Returns the document (``data`` is ``{}`` for an empty file) and every problem found;
    the data is only trustworthy when the problem list is empty.
    """
    doc = _Subset(file, env).document(text)
    if doc is not None:
        return doc, []
    data, walker = _compose(text, file, env)
    return Doc({} if data is None else data, walker.marks, walker.key_marks), walker.problems


def parse_value(text: str, origin: str) -> tuple[Any, list[ConfigProblem]]:
    """Type a command-line value (``--set a.b=VALUE``) with the same YAML 1.2 rules.

    An empty value is the empty string, as with Helm's ``--set a=``.
    """
    if not text.strip():
        return "", []
    if "\n" not in text:
        try:
            return _Subset(origin, None).inline(text.lstrip(" "), 0, 0, ()), []
        except _Decline:
            pass
    data, walker = _compose(text, origin, None)
    return data, walker.problems


# --- the subset parser ---------------------------------------------------------------


class _Decline(Exception):
    """The text is outside the subset: PyYAML reads it."""


# A plain key followed by ':' and a space or the end of the line.
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_./-]*):(?: +|$)")
# What PyYAML's reader rejects, plus tabs, CRs and other line breaks the subset leaves to it.
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
_BOOL_WORDS = frozenset(w for word in ("yes", "no", "on", "off") for w in (word, word.title(), word.upper()))


def _printable(text: str) -> bool:
    if _CONTROL.search(text):
        return False
    if text.isascii():
        return True
    for c in set(text):
        o = ord(c)
        if o > 0x7E and not ((0xA0 <= o <= 0xD7FF and o not in (0x2028, 0x2029))
                             or (0xE000 <= o <= 0xFFFD and o != 0xFEFF) or o >= 0x10000):
            return False
    return True


class _Subset:
    """A parser for the block YAML configs are written in, giving the data and marks
    :class:`_Walker` gives for them. It raises :class:`_Decline` on anything else: tags,
    anchors, aliases, merge keys, block scalars, multi-line or escaped scalars, nested flow
    collections, empty values, several documents, and every input where the walker would
    report a problem (duplicate keys, YAML 1.1 scalars, unset variables). Differential
    tests (tests/unit/config/test_yamlio_subset.py) hold it to the walker's results."""

    def __init__(self, file: str, env: Mapping[str, str] | None) -> None:
        self.file = file
        self.env = env
        self.marks: dict[Path, Mark] = {}
        self.key_marks: dict[Path, Mark] = {}
        self.lines: list[tuple[int, int, str]] = []  # (line index, indent, content) of content lines
        self.i = 0

    def document(self, text: str) -> Doc | None:
        if not _printable(text):
            return None
        for n, line in enumerate(text.split("\n")):
            content = line.lstrip(" ")
            if not content or content[0] == "#":
                continue
            if line.startswith(("---", "...", "%")):  # document markers, directives
                return None
            self.lines.append((n, len(line) - len(content), content))
        if not self.lines:
            return None
        try:
            data = self.node(())
            if self.i < len(self.lines):
                return None
        except _Decline:
            return None
        return Doc(data, self.marks, self.key_marks)

    def node(self, path: Path) -> Any:
        """The block mapping or sequence starting on the current line."""
        content = self.lines[self.i][2]
        if content.startswith("- "):
            return self.sequence(path)
        if _KEY.match(content):
            return self.mapping(path)
        raise _Decline

    def mapping(self, path: Path) -> dict[str, Any]:
        n, indent, _ = self.lines[self.i]
        self.marks[path] = Mark(self.file, n + 1, indent + 1)
        out: dict[str, Any] = {}
        while self.i < len(self.lines):
            n, ind, content = self.lines[self.i]
            if ind < indent:
                break
            m = _KEY.match(content)
            if ind > indent or not m:
                raise _Decline
            key = m.group(1)
            if key in out or key in _BOOL_WORDS:
                raise _Decline
            at = (*path, key)
            self.key_marks[at] = Mark(self.file, n + 1, ind + 1)
            rest = content[m.end():]
            self.i += 1
            if rest and rest[0] != "#":
                out[key] = self.inline(rest, n, ind + m.end(), at)
                self.no_continuation(ind)
                continue
            if self.i < len(self.lines):  # a nested block (a sequence may sit at the key's indent)
                _, ind2, content2 = self.lines[self.i]
                if ind2 > ind or (ind2 == ind and content2.startswith("- ")):
                    out[key] = self.node(at)
                    continue
            raise _Decline  # an empty value
        return out

    def sequence(self, path: Path) -> list[Any]:
        n, indent, _ = self.lines[self.i]
        self.marks[path] = Mark(self.file, n + 1, indent + 1)
        out: list[Any] = []
        while self.i < len(self.lines):
            n, ind, content = self.lines[self.i]
            if ind < indent or (ind == indent and not content.startswith("- ")):
                break  # (a key after a sequence at its parent key's indent)
            if ind > indent:
                raise _Decline
            rest = content[2:].lstrip(" ")
            col = ind + len(content) - len(rest)
            at = (*path, len(out))
            if not rest or rest[0] == "#" or rest.startswith("- ") or rest == "-":
                raise _Decline
            if _KEY.match(rest):  # a mapping that starts on the item's line
                self.lines[self.i] = (n, col, rest)
                out.append(self.mapping(at))
            else:
                self.i += 1
                out.append(self.inline(rest, n, col, at))
                self.no_continuation(ind)
        return out

    def no_continuation(self, indent: int) -> None:
        """A deeper line after an inline value continues it (or is an error): declined."""
        if self.i < len(self.lines) and self.lines[self.i][1] > indent:
            raise _Decline

    def inline(self, text: str, n: int, col: int, path: Path) -> Any:
        """The value written on one line from ``col`` on (``text``), then an optional comment."""
        first = text[0]
        if first in "[{":
            value, end = self.flow(text, n, col, path)
        else:
            value, end = self.scalar(text, 0, n, col, path, "")
        tail = text[end:]
        if tail.strip(" ") and not (tail[0] == " " and tail.lstrip(" ")[0] == "#"):
            raise _Decline
        return value

    def flow(self, text: str, n: int, col: int, path: Path) -> tuple[Any, int]:
        """A one-line flow sequence or mapping of scalars; returns it and the end offset."""
        self.marks[path] = Mark(self.file, n + 1, col + 1)
        close = "]" if text[0] == "[" else "}"
        items: list[Any] = []
        pairs: dict[str, Any] = {}
        pos = _skip(text, 1)
        if text[pos:pos + 1] == close:
            return ({} if close == "}" else []), pos + 1
        while True:
            if close == "]":
                value, pos = self.scalar(text, pos, n, col, (*path, len(items)), ",[]{}")
                items.append(value)
            else:
                m = _KEY.match(text, pos)
                if not m or not m.group(0).endswith(" "):
                    raise _Decline
                key = m.group(1)
                if key in pairs or key in _BOOL_WORDS:
                    raise _Decline
                self.key_marks[(*path, key)] = Mark(self.file, n + 1, col + pos + 1)
                pairs[key], pos = self.scalar(text, m.end(), n, col, (*path, key), ",[]{}")
            pos = _skip(text, pos)
            sep = text[pos:pos + 1]
            if sep == close:
                return (pairs if close == "}" else items), pos + 1
            if sep != ",":
                raise _Decline
            pos = _skip(text, pos + 1)
            if text[pos:pos + 1] == close:  # a trailing comma
                raise _Decline

    def scalar(self, text: str, pos: int, n: int, col: int, path: Path, stops: str) -> tuple[Any, int]:
        """The scalar at ``text[pos:]`` (plain, stopping at one of ``stops`` in flow context,
        or simply quoted); returns its value and the offset after it."""
        if pos >= len(text):
            raise _Decline
        first = text[pos]
        if first in "\"'":
            end = text.find(first, pos + 1)
            if end < 0:  # multi-line
                raise _Decline
            value = text[pos + 1:end]
            if ("\\" in value if first == '"' else text[end + 1:end + 2] == "'"):  # escapes
                raise _Decline
            end += 1
            plain = False
        else:
            if first in "[]{},#&*!|>%@`?:" or (first == "-" and text[pos + 1:pos + 2] in ("", " ")):
                raise _Decline
            end = pos
            while end < len(text) and text[end] not in stops and text[end:end + 2] != " #":
                end += 1
            if end < len(text) and text[end] in "[{#":
                raise _Decline
            value = text[pos:end].rstrip(" ")
            if not value or ": " in value or value.endswith(":"):
                raise _Decline
            plain = True
        self.marks[path] = Mark(self.file, n + 1, col + pos + 1)
        if self.env is not None and "$" in value:
            if malformed_variable(value) is not None:
                raise _Decline
            value, missing = interpolate(value, self.env)
            if missing:
                raise _Decline
        typed, why = _untagged(value, plain)
        if why:
            raise _Decline
        return typed, end


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] == " ":
        pos += 1
    return pos
