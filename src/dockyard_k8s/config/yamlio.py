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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import yaml

from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import Path, format_path


class Mark(NamedTuple):
    file: str
    line: int  # 1-based
    col: int  # 1-based


class Doc(NamedTuple):
    """A parsed document: plain data plus where each value came from."""

    data: Any
    marks: dict[Path, Mark]
    key_marks: dict[Path, Mark]


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
     "is an octal number in YAML 1.1 but decimal in YAML 1.2; write 0o{rest} or quote it"),
    (re.compile(r"^[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$"),
     "is a base-60 number in YAML 1.1 but a string in YAML 1.2; quote it"),
    (re.compile(r"^[-+]?(0b[01_]+|[0-9][0-9_]*_[0-9_]*)$"),
     "is a number in YAML 1.1 but a string in YAML 1.2; quote it"),
)

_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN = "tag:dockyard-k8s,untagged"  # what the composer gives every scalar without an explicit tag
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


class _ComposeLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Composes nodes only; our own walk types the scalars (1.2 core)."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}
    DEFAULT_SCALAR_TAG = _PLAIN


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
        if op == ":-" and not value:
            return default
        if op == "-" and value is None:
            return default
        if value is None:
            missing.append(name)
            return m.group(0)
        return value

    return _VAR.sub(sub, text), missing


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

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.marks[path] = self.mark(node)
        if id(node) in self._active:
            self.problem(node, path, "recursive alias (an anchor that contains itself)")
            return None
        if node.tag not in _KNOWN_TAGS and node.tag != _PLAIN:
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
            value, missing = interpolate(value, self.env)
            for name in missing:
                self.problem(node, path, f"environment variable {name} is not set "
                                         f"(got ${{{name}}}, expected it set, or write ${{{name}:-default}})")
        if node.tag == _PLAIN:
            if node.style:  # quoted or block scalar: always a string ("" or None is plain)
                return value
            for pattern, why in _AMBIGUOUS:
                if pattern.match(value):
                    rest = value.lstrip("+-")[1:]
                    self.problem(node, path, f"unquoted {value!r} {why.format(rest=rest)}")
                    return value
            return _resolve_plain(value)[1]
        if node.tag == _STR_TAG:
            return value
        kind, typed = _resolve_plain(value)
        wanted = node.tag.rsplit(":", 1)[-1]
        if kind != wanted and not (wanted == "float" and kind == "int"):
            self.problem(node, path, f"got {value!r}, expected a value of tag !!{wanted}")
            return value
        return float(typed) if wanted == "float" else typed

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
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
            if not key_node.style and key_node.tag == _PLAIN and _AMBIGUOUS[0][0].match(key):
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
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                self.problem(src, path, "'<<' merge needs a mapping or a list of mappings")
                continue
            merged = self.mapping(src, path)
            for k, v in merged.items():
                out.setdefault(k, v)


def _compose(text: str, file: str, env: Mapping[str, str] | None) -> tuple[Any, _Walker]:
    walker = _Walker(file, env)
    try:
        nodes = list(yaml.compose_all(text, Loader=_ComposeLoader))
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
    data, walker = _compose(text, file, env)
    return Doc({} if data is None else data, walker.marks, walker.key_marks), walker.problems


def parse_value(text: str, origin: str) -> tuple[Any, list[ConfigProblem]]:
    """Type a command-line value (``--set a.b=VALUE``) with the same YAML 1.2 rules.

    An empty value is the empty string, as with Helm's ``--set a=``.
    """
    if not text.strip():
        return "", []
    data, walker = _compose(text, origin, None)
    return data, walker.problems
