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

The reading itself (PyYAML's composer, marks, duplicate keys, tags, merge keys, several
documents, syntax errors) is :func:`dockyard_k8s.yamlfile.load_all`'s; this module gives it the
schema: what a scalar means, and the problems above.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import Path, format_path
from dockyard_k8s.yamlfile import NO_PROBLEM, STR, Document, Mark, Schema, load_all

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

_KNOWN_TAGS = frozenset({
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq",
})


def _resolve_plain(value: str) -> tuple[str, Any]:
    """Type of an untagged plain scalar under the YAML 1.2 core schema."""
    if _NULL.match(value):
        return "null", None
    if _BOOL.match(value):
        return "bool", value.lower() == "true"
    if _INT.match(value):  # 0o17 and 0x1F as Python writes them; 017 is decimal (int(_, 0) refuses it)
        return "int", int(value, 0) if value.startswith(("0o", "0x")) else int(value)
    if _FLOAT.match(value):  # .inf, -.Inf, .NaN: Python's float() takes them without the dot
        return "float", float(value.lower().replace(".inf", "inf").replace(".nan", "nan"))
    return "str", value


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


# --- reading ----------------------------------------------------------------------------


def _value(env: Mapping[str, str] | None, value: str, tag: str | None, plain: bool) -> tuple[Any, tuple[str, ...]]:
    """A scalar under the YAML 1.2 core schema, ``${VAR}`` substituted when ``env`` is given."""
    if tag is not None and tag not in _KNOWN_TAGS:
        return None, (f"unsupported tag {tag!r} (plain YAML only)",)
    if env is not None and "$" in value:
        bad = malformed_variable(value)
        why: list[str] = []
        if bad is not None:
            what = ("a variable reference inside a default (not supported: set the default itself)"
                    if "${" in bad[2:] else "an unterminated or malformed variable reference")
            why.append(f"got {bad!r}: {what} (expected ${{NAME}}, ${{NAME:-default}} or ${{NAME-default}}; "
                       "$${ is a literal ${)")
        value, missing = interpolate(value, env)
        why += [f"environment variable {name} is not set (got ${{{name}}}, expected it set, or write "
                f"${{{name}:-default}})" for name in missing]
        if why:
            return value, tuple(why)  # one problem per reference: the value itself is unknown, check nothing else
    if tag == STR or (tag is None and not plain):  # a quoted or block scalar is a string
        return value, NO_PROBLEM
    if tag is None:  # plain: refused where YAML 1.1 reads it differently
        for pattern, reading in _AMBIGUOUS:
            if pattern.match(value):
                return value, (f"unquoted {value!r} {reading.format(rest=value.lstrip('+-')[1:], value=value)}",)
        return _resolve_plain(value)[1], NO_PROBLEM
    kind, typed = _resolve_plain(value)
    wanted = tag.rsplit(":", 1)[-1]
    if kind != wanted and not (wanted == "float" and kind == "int"):
        return value, (f"got {value!r}, expected a value of tag !!{wanted}",)
    return (float(typed) if wanted == "float" else typed), NO_PROBLEM


def _key(text: str, tag: str | None, plain: bool) -> tuple[str, tuple[str, ...]]:
    if plain and tag is None and _AMBIGUOUS[0][0].match(text):
        return text, (f"unquoted key {text!r} is a boolean in YAML 1.1 (PyYAML, kubectl) but a string in "
                      "YAML 1.2; quote it",)
    return text, NO_PROBLEM


_PLAIN_SCHEMA = Schema(partial(_value, None), _key, _KNOWN_TAGS)


def _read(text: str, file: str, env: Mapping[str, str] | None) -> tuple[Document, list[ConfigProblem]]:
    schema = _PLAIN_SCHEMA if env is None else Schema(partial(_value, env), _key, _KNOWN_TAGS)
    loaded = load_all(text, file, schema, single=True)
    problems = [ConfigProblem(file, p.mark.line, p.mark.col, format_path(p.path), p.message) for p in loaded.problems]
    if loaded.error is not None:
        m = loaded.error.mark
        return Document(None), [ConfigProblem(file, m.line, m.col, "", f"invalid YAML: {loaded.error.message}")]
    return (loaded.documents[0] if loaded.documents else Document(None)), problems


def parse_yaml(text: str, file: str, env: Mapping[str, str] | None = None) -> tuple[Document, list[ConfigProblem]]:
    """Parse one YAML document strictly. ``env`` enables ``${VAR}`` interpolation.

    Returns the document (``data`` is ``{}`` for an empty file) and every problem found;
    the data is only trustworthy when the problem list is empty.
    """
    doc, problems = _read(text, file, env)
    return (Document({}, doc.marks, doc.key_marks) if doc.data is None else doc), problems


def parse_value(text: str, origin: str) -> tuple[Any, list[ConfigProblem]]:
    """Type a command-line value (``--set a.b=VALUE``) with the same YAML 1.2 rules.

    An empty value is the empty string, as with Helm's ``--set a=``.
    """
    if not text.strip():
        return "", []
    doc, problems = _read(text, origin, None)
    return doc.data, problems


__all__ = ["Document", "Mark", "Path", "format_path", "interpolate", "malformed_variable", "parse_value", "parse_yaml"]
