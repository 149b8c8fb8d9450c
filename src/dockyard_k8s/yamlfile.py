"""YAML in and out: the one module that reads and writes it (a test holds every other module to it).

Reading (:func:`load_all`) composes PyYAML's node tree (the C composer of libyaml, the pure
Python one where libyaml is missing) with no scalar typed, then builds plain data with a
:class:`Schema` that says what a scalar means, recording the :class:`Mark` (file, line,
column) of every value and key. Two schemas are in use:

* :data:`KUBECTL`: go-yaml v2's scalars (YAML 1.1-ish: ``yes``/``on``/``y`` are booleans,
  ``0755`` is octal, timestamps stay strings) and sigs.k8s.io/yaml's keys (every key a string):
  manifests (``validate``) and kubeconfig files, read as kubectl reads them;
* YAML 1.2 core with the launcher's own checks, for its config files (``config/yamlio.py``).

Problems do not raise: duplicate keys (both lines named; ``last_key_wins`` keeps the last
instead, as client-go does for a kubeconfig), unsupported tags, recursive aliases, several
documents where one is expected (``single``) and syntax errors come back with their marks.
yaml-rs (:func:`yaml_rs`), when installed, is the fast reader ``validate`` puts in front of
:data:`KUBECTL` for the documents where the two agree (``validate/reader.py``).

Writing (:func:`dump`, :func:`dump_documents`) is PyYAML's block style with the key order kept
(the order the renderers build: apiVersion, kind, metadata, spec..., never sorted), multi-line
strings as block literals (scripts stay readable), every string a YAML 1.1 reader would re-type
quoted (``'no'``, ``'0755'``: kubectl reads back exactly what was rendered), and never an anchor
or alias (a value shared by two places, one selector dict used by two policies, is written out in
full each time: readers of a manifest, and tools that do not resolve aliases, see each object
whole): the same objects give the same bytes, the bytes the golden files hold.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from dockyard_k8s.plain import Path

try:
    from yaml import CSafeDumper as _SafeDumper
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # PyYAML built without libyaml: the same results, slower
    from yaml import SafeDumper as _SafeDumper  # type: ignore[assignment]
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

UNTAGGED = "tag:dockyard-k8s,untagged"  # the tag the composer gives a scalar written without one
STR = "tag:yaml.org,2002:str"
NO_PROBLEM: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Mark:
    """A place in a file; ``line`` and ``col`` are 1-based, 0 when unknown (the whole file)."""

    file: str
    line: int = 0
    col: int = 0


@dataclass(frozen=True, slots=True)
class Schema:
    """What scalars mean. Each function is given a scalar as written: its text, its explicit tag
    (None: untagged) and whether it is plain (not quoted, not a block scalar); ``value`` types it
    and says what is wrong with it; ``key`` gives the mapping key it stands for, and what is wrong
    with it. ``tags``: the tags a mapping or sequence may have (None: any)."""

    value: Callable[[str, str | None, bool], tuple[Any, tuple[str, ...]]]
    key: Callable[[str, str | None, bool], tuple[str, tuple[str, ...]]]
    tags: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong at ``mark``: ``path`` is the value's place in document ``doc`` (0-based,
    empty documents not counted)."""

    mark: Mark
    path: Path
    message: str
    doc: int = 0


@dataclass(frozen=True, slots=True)
class Document:
    """One document's data, where each value starts (``marks``) and where each mapping key is
    (``key_marks``, for the paths of mapping entries)."""

    data: Any
    marks: dict[Path, Mark] = field(default_factory=dict)
    key_marks: dict[Path, Mark] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Loaded:
    """What :func:`load_all` read: the documents, the problems in them, and the syntax error
    that stopped the reading (None: the whole text was read)."""

    documents: list[Document]
    problems: list[Problem]
    error: Problem | None = None


class YamlError(ValueError):
    """:func:`load_data`'s text does not hold one clean document."""

    def __init__(self, problem: Problem) -> None:
        at = f"line {problem.mark.line}, column {problem.mark.col}: " if problem.mark.line else ""
        super().__init__(at + problem.message)
        self.problem = problem


class _Composer(_SafeLoader):  # type: ignore[misc,valid-type]
    """Composes nodes with every untagged scalar tagged :data:`UNTAGGED`: the schema types it."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 - PyYAML's class attribute
    DEFAULT_SCALAR_TAG = UNTAGGED  # type: ignore[misc]


def read_text(file: str) -> str:
    """A file's text, which must be UTF-8 (as kubectl and YAML 1.2 want).

    Raises:
        OSError: it cannot be read.
        YamlError: it is not UTF-8, at the line and column of the first bad byte.
    """
    with open(file, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise YamlError(Problem(Mark(file, line, col), (), f"not UTF-8 text ({e.reason} at byte {e.start}: "
                                                          f"0x{raw[e.start]:02x}); save it as UTF-8")) from None


def load_all(text: str, file: str = "<string>", schema: Schema | None = None, *, single: bool = False,
             last_key_wins: bool = False, offset: int = 0) -> Loaded:
    """Every document of ``text`` (``schema``: :data:`KUBECTL` unless given), with marks.

    ``single``: one document is expected (a second is a problem; an empty one is kept, its
    data None); else empty documents (``---`` twice) are skipped, as kubectl skips them.
    ``offset``: lines before ``text`` in ``file`` (one document cut from a stream).
    """
    walker = _Walker(file, schema or KUBECTL, last_key_wins, offset)
    documents: list[Document] = []
    error: Problem | None = None
    loader = _Composer(text)
    try:
        while loader.check_node():
            node: Any = loader.get_node()
            if single and documents:
                walker.problem(node, (), "expected a single YAML document, found several ('---')")
                break
            if not single and isinstance(node, yaml.ScalarNode) and _written(node) == ("", None, True):
                continue  # an empty document
            walker.doc = len(documents)
            walker.marks, walker.key_marks = {}, {}
            documents.append(Document(walker.build(node, ()), walker.marks, walker.key_marks))
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        what = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        if m and _char_at(text, m.line, m.column) == "\t":
            what += " (a tab: YAML indents with spaces only)"
        error = Problem(Mark(file, m.line + 1 + offset, m.column + 1) if m else Mark(file), (), what, len(documents))
    except yaml.YAMLError as e:  # the reader's: bad encoding, control characters
        error = Problem(Mark(file), (), str(e), len(documents))
    except RecursionError:  # libyaml nests 1,000 levels deep, the walk fewer
        error = Problem(Mark(file), (), "collections nested too deeply (hundreds of levels)", len(documents))
    finally:
        loader.dispose()
    return Loaded(documents, walker.problems, error)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    return lines[line][column:column + 1] if line < len(lines) else ""


def load_data(text: str, file: str = "<string>") -> Any:
    """The data of ``text``, one document read as kubectl reads it (None when empty; a repeated
    key keeps its last value).

    Raises:
        YamlError: a syntax error, several documents, an unsupported tag...
    """
    loaded = load_all(text, file, single=True, last_key_wins=True)
    if loaded.problems or loaded.error:
        raise YamlError((loaded.problems or [loaded.error])[0])  # type: ignore[list-item]
    return loaded.documents[0].data if loaded.documents else None


def marks_along(text: str, file: str, paths: list[Path], offset: int = 0) -> dict[Path, Mark] | None:
    """Where ``paths`` and their ancestors are in the one document of ``text`` (a mapping entry's
    key, an item's or the root's value), keys read as :data:`KUBECTL` reads them: the node tree
    is composed but only walked along ``paths`` (locating a few problems of a large document).
    None when the text does not compose or a merge key is on the way: :func:`load_all` then."""
    wanted = {p[:k] for p in paths for k in range(len(p) + 1)}
    loader = _Composer(text)
    try:
        root = loader.get_node() if loader.check_node() else None
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    if root is None:
        return None
    walker = _Walker(file, KUBECTL, False, offset)
    out: dict[Path, Mark] = {}
    todo: list[tuple[Any, Path]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        if path not in out:
            out[path] = walker.mark(node)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                if _is_merge(key_node):
                    return None
                child = (*path, _go_key(*_written(key_node))[0])
                if child in wanted and child not in out:
                    out[child] = walker.mark(key_node)
                    todo.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            todo += [(item, (*path, i)) for i, item in enumerate(node.value) if (*path, i) in wanted]
    return out


def _written(node: yaml.ScalarNode) -> tuple[str, str | None, bool]:
    """A scalar as a :class:`Schema`'s functions are given it: text, explicit tag, plain or not."""
    return node.value, None if node.tag == UNTAGGED else node.tag, not node.style


def _is_merge(key: yaml.ScalarNode) -> bool:
    return key.value == "<<" and key.tag == UNTAGGED and not key.style


class _Walker:
    """Node tree -> data and marks, one document after the other."""

    def __init__(self, file: str, schema: Schema, last_key_wins: bool, offset: int) -> None:
        self.file = file
        self.schema = schema
        self.last_key_wins = last_key_wins
        self.offset = offset
        self.doc = 0
        self.marks: dict[Path, Mark] = {}
        self.key_marks: dict[Path, Mark] = {}
        self.problems: list[Problem] = []
        self._active: set[int] = set()  # the collections being built (an alias to one recurses)

    def mark(self, node: yaml.Node) -> Mark:
        return Mark(self.file, node.start_mark.line + 1 + self.offset, node.start_mark.column + 1)

    def problem(self, node: yaml.Node, path: Path, message: str) -> None:
        self.problems.append(Problem(self.mark(node), path, message, self.doc))

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.marks[path] = self.mark(node)
        if isinstance(node, yaml.ScalarNode):
            value, why = self.schema.value(*_written(node))
            for message in why:
                self.problem(node, path, message)
            return value
        if id(node) in self._active:
            self.problem(node, path, "recursive alias (an anchor that contains itself)")
            return None
        if self.schema.tags is not None and node.tag not in self.schema.tags:
            self.problem(node, path, f"unsupported tag {node.tag!r} (plain YAML only)")
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            return self.mapping(node, path)
        finally:
            self._active.discard(id(node))

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        first: dict[str, int] = {}  # key -> its line
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, path, "mapping keys must be scalars (a string, a number)")
                continue
            if _is_merge(key_node):
                self.merge(value_node, path, out)
                continue
            key, why = self.schema.key(*_written(key_node))
            at = (*path, key)
            mark = self.mark(key_node)
            self.problems += [Problem(mark, at, message, self.doc) for message in why]
            if key in first and not self.last_key_wins:
                self.problems.append(Problem(mark, at, f"duplicate key {key!r} (first defined on line "
                                                       f"{first[key]})", self.doc))
                continue
            first[key] = mark.line
            self.key_marks[at] = mark
            out[key] = self.build(value_node, at)
        return out

    def merge(self, value_node: yaml.Node, path: Path, out: dict[str, Any]) -> None:
        """A ``<<`` merge key: the entries of the mapping(s) it names that ``out`` lacks."""
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                self.problem(src, path, "'<<' merge needs a mapping or a list of mappings")
            elif id(src) in self._active:
                self.problem(src, path, "recursive alias (an anchor that contains itself)")
            else:
                self._active.add(id(src))
                try:
                    for k, v in self.mapping(src, path).items():
                        out.setdefault(k, v)
                finally:
                    self._active.discard(id(src))


# --- kubectl's scalars: go-yaml v2, keys as sigs.k8s.io/yaml makes them ----------------------

_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_INF_NAN = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
            "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
            ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}


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
    if text in _INF_NAN:
        return _INF_NAN[text]
    plain = text.replace("_", "")
    if _GO_INT.match(plain):  # strconv.ParseInt(plain, 0, 64): 0x, 0o, 0b and leading-0 octal
        digits = plain.lstrip("+-")
        if digits[:1] == "0" and digits[1:2].isdigit():  # 0755: Python's int(x, 0) refuses a leading 0
            return (-1 if plain[0] == "-" else 1) * int(digits, 8)
        return int(plain, 0)
    if _GO_FLOAT.match(plain):
        value = float(plain)
        return int(value) if value.is_integer() and "." not in plain and "e" not in plain.lower() else value
    return text


def json_key(key: Any) -> str:
    """sigs.k8s.io/yaml turns non-string keys into their JSON text (``true``, ``1``)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _go_value(text: str, tag: str | None, plain: bool) -> tuple[Any, tuple[str, ...]]:
    if tag is None:
        return (resolve_go_yaml(text) if plain else text), NO_PROBLEM
    if tag == STR:
        return text, NO_PROBLEM
    if tag == "tag:yaml.org,2002:binary":
        return text.replace("\n", "").replace(" ", ""), NO_PROBLEM
    if tag.rsplit(":", 1)[-1] in ("int", "float", "bool", "null"):
        return resolve_go_yaml(text), NO_PROBLEM
    return text, (f"unsupported tag {tag}",)


def _go_key(text: str, tag: str | None, plain: bool) -> tuple[str, tuple[str, ...]]:
    value, why = _go_value(text, tag, plain)
    return json_key(value), why


KUBECTL = Schema(_go_value, _go_key)


def yaml_rs() -> Any:
    """The yaml-rs module (a YAML 1.2 reader in Rust, several times the C composer's speed), or
    None: not installed, or ``DOCKYARD_K8S_YAML=pyyaml`` (tests, debugging)."""
    if os.environ.get("DOCKYARD_K8S_YAML") == "pyyaml":
        return None
    try:
        import yaml_rs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return yaml_rs


# --- writing --------------------------------------------------------------------------------


class _Dumper(_SafeDumper):  # type: ignore[misc,valid-type]
    def ignore_aliases(self, data: Any) -> bool:
        return True  # no anchors/aliases: a shared value is written in full each time


def _represent_str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    # PyYAML quotes the strings YAML 1.1 types; go-yaml v2 (kubectl) also types y/n, 1e3, 0o17...:
    # quoted the same way (PyYAML's own choice for them, so its output is otherwise unchanged).
    style = "|" if "\n" in value else "'" if resolve_go_yaml(value) is not value else None
    return dumper.represent_scalar(STR, value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump(data: Any) -> str:
    """One YAML document, block style, keys in their order. Every string a YAML 1.1 reader or
    kubectl would type is quoted (``'no'``, ``'0755'``, ``'y'``), so both read back what was written."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=4096)  # type: ignore[no-any-return]


def dump_documents(objects: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, ``---`` before each document (kubectl-friendly)."""
    return "".join("---\n" + dump(o) for o in objects)
