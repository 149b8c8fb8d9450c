"""A small, strict JSON-Schema subset: build schemas as data, check data, fill defaults.

The infra spec is described once, as a JSON Schema (``infra_schema.py``). The same
dict is printed by ``dockyard-k8s schema`` for editors, checked here with messages
written for people (``got 'abc' (string), expected an integer >= 0``), and supplies
the shipped defaults (every ``default`` keyword). No pydantic: ``check`` must start
in well under 150 ms and a model library alone costs most of that.

Supported keywords: type (one or a list, ``"null"`` for nullable), properties,
additionalProperties (bool or schema), propertyNames (with ``x-format``), required, enum,
minimum, maximum, pattern, items, default, description, and the extensions ``x-format``
naming a check in ``FORMATS``, ``x-moved`` (on an object: old key -> where it went, so an
unknown key an earlier release had says where to write it) and ``x-shorthand`` (on an object
that also accepts a string: the key that string stands for, ``model: org/name`` =
``model: {id: org/name}``; the layers expand it before merging, see :func:`shorthands`).
Integers are int32 unless they say otherwise, as the API server stores most of them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from typing import Any

from dockyard_k8s import names
from dockyard_k8s.kube import quantity_fix
from dockyard_k8s.plain import Path, clone, show, show_typed, type_name
from dockyard_k8s.suggest import did_you_mean

Schema = dict[str, "Any"]
NO_DEFAULT = object()  # what defaults_of gives for a key without a default

# Kubernetes quantity grammar (apimachinery resource.Quantity).
QUANTITY = (r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
            r"(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
# The name grammars as JSON-Schema patterns (apimachinery's text, see dockyard_k8s.names).
DNS1123_LABEL = f"^{names.DNS1123_LABEL_FMT}$"
DNS1035_LABEL = f"^{names.DNS1035_LABEL_FMT}$"
DNS1123_SUBDOMAIN = f"^{names.DNS1123_SUBDOMAIN_FMT}$"
# A model hub repository id: ``name`` or ``org/name`` (Hugging Face's repo id characters).
HUB_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"
# all_reduce_perf's -b/-e sizes: a count of bytes with an optional K, M or G.
NCCL_SIZE = r"^[0-9]+[KMG]?$"
# What the API server stores integers of most fields as (replicas, ports, seconds...).
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        return False
    return True


# x-format name -> (check, what is expected)
FORMATS: dict[str, tuple[Callable[[str], bool], str]] = {
    "cidr": (_is_cidr, "a CIDR block like 10.0.0.0/8 (host bits zero)"),
    "dns-subdomain": (names.is_dns1123_subdomain, "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                                                  "at most 253 characters)"),
    "label-key": (names.is_qualified_name, "a label key: [prefix/]name, the name at most 63 letters, digits, '-', "
                                           "'_' or '.' between letters or digits, the prefix a DNS subdomain"),
    "label-value": (names.is_label_value, "a label value: at most 63 letters, digits, '-', '_' or '.', starting and "
                                          "ending with a letter or digit (or empty)"),
    "env-name": (names.is_env_var_name, "an environment variable name: letters, digits, '_', '-' or '.', not "
                                        "starting with a digit"),
    "resource-name": (names.is_qualified_name, "a resource name like vpc.amazonaws.com/efa ([prefix/]name)"),
    "absolute-path": (lambda v: v.startswith("/") and ":" not in v, "an absolute path like /data (no ':')"),
    "http-url": (lambda v: bool(re.fullmatch(r"https?://[^\s/:]+(:[0-9]{1,5})?(/\S*)?", v)),
                 "an http(s) URL like http://ray-head.team.svc:8265"),
}


# --- constructors (keep infra_schema.py readable) ----------------------------------


def _typed(type_: str, description: str, default: Any, nullable: bool, **extra: Any) -> Schema:
    s: Schema = {"type": [type_, "null"] if nullable else type_, "description": description}
    if default is not NO_DEFAULT:
        s["default"] = default
    s.update({k: v for k, v in extra.items() if v is not None})
    return s


def string(description: str, default: Any = NO_DEFAULT, *, enum: list[str] | None = None,
           pattern: str | None = None, nullable: bool = False, fmt: str | None = None) -> Schema:
    return _typed("string", description, default, nullable, enum=enum, pattern=pattern, **{"x-format": fmt})


def integer(description: str, default: Any = NO_DEFAULT, *, minimum: int | None = None,
            maximum: int | None = INT32_MAX, nullable: bool = False) -> Schema:
    """An integer; at most what the API server stores it as (int32 unless ``maximum`` says)."""
    return _typed("integer", description, default, nullable, minimum=minimum, maximum=maximum)


def number(description: str, default: Any = NO_DEFAULT, *, minimum: float | None = None,
           maximum: float | None = None, nullable: bool = False) -> Schema:
    return _typed("number", description, default, nullable, minimum=minimum, maximum=maximum)


def boolean(description: str, default: bool) -> Schema:
    return _typed("boolean", description, default, False)


def quantity(description: str, default: Any = NO_DEFAULT, *, nullable: bool = False) -> Schema:
    """A Kubernetes quantity: ``4``, ``500m``, ``2Gi``."""
    s = _typed("string", description, default, nullable, pattern=QUANTITY)
    s["type"] = ["string", "number", "null"] if nullable else ["string", "number"]
    return s


def string_map(description: str, *, values: Schema | None = None, keys: str | None = None) -> Schema:
    """A free mapping; ``keys`` names the x-format every key must have (``label-key``...)."""
    s: Schema = {"type": "object", "description": description, "default": {},
                 "additionalProperties": values or {"type": ["string", "number"]}}
    if keys:
        s["propertyNames"] = {"type": "string", "x-format": keys}
    return s


def array(description: str, items: Schema, default: Any = NO_DEFAULT, *, nullable: bool = False) -> Schema:
    s: Schema = {"type": ["array", "null"] if nullable else "array", "description": description, "items": items}
    if default is not NO_DEFAULT:
        s["default"] = default
    return s


def free_object(description: str) -> Schema:
    """Any mapping (``{}`` by default); checked later against the Kubernetes/KubeRay schemas once rendered."""
    return _typed("object", description, {}, False)


def obj(description: str, properties: dict[str, Schema], *, required: tuple[str, ...] = (),
        nullable: bool = False, default: Any = NO_DEFAULT) -> Schema:
    s: Schema = {"type": ["object", "null"] if nullable else "object", "description": description,
                 "properties": properties, "additionalProperties": False}
    if required:
        s["required"] = list(required)
    if default is not NO_DEFAULT:
        s["default"] = default
    return s


# Pod tolerations, in both specs; GPU pods tolerate the NVIDIA device plugin's taint by default.
TOLERATIONS = array("Pod tolerations (Kubernetes Toleration objects).", {"type": "object"}, [])
GPU_TOLERATIONS = {**TOLERATIONS, "default": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


# --- checking ------------------------------------------------------------------------

_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "object": "a mapping", "array": "a list", "null": "null"}


# A scalar YAML typed for the user where a string was meant (rayVersion: 2.50, tag: 2024, gpu: true).
_QUOTE_IT = {"number": "; quote it: unquoted, YAML reads a number (2.50 is 2.5)",
             "integer": "; quote it: unquoted, YAML reads a number",
             "boolean": "; quote it: unquoted, YAML reads true and false as booleans"}


def subschemas(schema: Schema, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Schema]]:
    """``schema`` and every schema of its properties, nested ones too (not array items nor map
    values), each with its path, parents first."""
    yield path, schema
    for key, sub in schema.get("properties", {}).items():
        yield from subschemas(sub, (*path, key))


def shorthands(schema: Schema) -> list[tuple[Path, str]]:
    """(path, key) of every object of ``schema`` that a string may stand for (``x-shorthand``)."""
    return [(path, sub["x-shorthand"]) for path, sub in subschemas(schema) if "x-shorthand" in sub]


def check(schema: Schema, value: Any) -> list[tuple[Path, str]]:
    """Every problem of ``value`` against ``schema``, as (path, message) pairs."""
    problems: list[tuple[Path, str]] = []
    _check(schema, value, (), problems)
    return [(p, _elsewhere(schema, p, m)) for p, m in problems]


def _elsewhere(schema: Schema, path: Path, message: str) -> str:
    """An unknown key that is a key somewhere else in ``schema`` (``launch.namespace``, a
    top-level ``image``) says where, instead of guessing a sibling of a similar spelling."""
    key = path[-1] if path else None
    if not message.startswith(f"unknown key '{key}' ("):
        return message
    homes = [".".join((*at, str(key))) for at, sub in subschemas(schema) if key in sub.get("properties", {})]
    if not homes:
        return message
    return f"{message.split('; did you mean')[0]}; '{key}' belongs at {' or '.join(homes[:3])}"


def _check(schema: Schema, value: Any, path: Path, out: list[tuple[Path, str]]) -> None:
    types = schema.get("type")
    allowed = [types] if isinstance(types, str) else types
    got = type_name(value)
    if allowed is not None and got not in allowed and not (got == "integer" and "number" in allowed):
        names = allowed if isinstance(types, str) else [t for t in allowed if t != "null"]
        expected = " or ".join(_pattern_hint(schema["pattern"]) if n == "string" and "pattern" in schema
                               else _ARTICLE[n] for n in names)
        quote = _QUOTE_IT.get(got, "") if names == ["string"] and "pattern" not in schema else ""
        out.append((path, f"got {show_typed(value)}, expected {expected}{quote}"))
        return
    if value is None:
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append((path, f"got {show_typed(value)}, expected one of: {', '.join(map(str, schema['enum']))}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append((path, f"got {value}, expected a number >= {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            why = {INT32_MAX: " (the API server stores it as a 32-bit integer)",
                   INT64_MAX: " (the API server stores it as a 64-bit integer)"}.get(schema["maximum"], "")
            out.append((path, f"got {value}, expected a number <= {schema['maximum']}{why}"))
    scalar = isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if "pattern" in schema and scalar and not re.match(schema["pattern"], str(value)):
        fix = quantity_fix(str(value)) if schema["pattern"] == QUANTITY else ""
        out.append((path, f"got {show_typed(value)}, expected {_pattern_hint(schema['pattern'])}{fix}"))
    if "x-format" in schema and isinstance(value, str):
        ok, expected = FORMATS[schema["x-format"]]
        if not ok(value):
            out.append((path, f"got {show_typed(value)}, expected {expected}"))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(schema["items"], item, (*path, i), out)
    if isinstance(value, dict):
        _check_object(schema, value, path, out)


def _check_object(schema: Schema, value: dict[str, Any], path: Path, out: list[tuple[Path, str]]) -> None:
    props: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    if isinstance(names, dict) and "x-format" in names:
        ok, expected = FORMATS[names["x-format"]]
        for key in value:
            if not ok(str(key)):
                out.append(((*path, key), f"got key {show(str(key))}, expected {expected}"))
    for key in schema.get("required", []):
        if value.get(key) is None:
            out.append(((*path, key), f"is required (got nothing, expected {props[key].get('description', '')})"))
    for key, item in value.items():
        if key in props:
            _check(props[key], item, (*path, key), out)
        elif extra is False:
            moved = schema.get("x-moved", {}).get(key)  # a key an earlier release had here
            out.append(((*path, key), f"unknown key '{key}': it moved to {moved}" if moved is not None else
                        f"unknown key '{key}' (expected one of: {', '.join(props)}){did_you_mean(key, list(props))}"))
        elif isinstance(extra, dict):
            _check(extra, item, (*path, key), out)


_PATTERN_HINTS = {
    QUANTITY: "a Kubernetes quantity like 4, 500m or 16Gi",
    DNS1123_LABEL: "a DNS-1123 label (lowercase letters, digits and '-', at most 63)",
    DNS1035_LABEL: "a DNS-1035 label (lowercase letters, digits and '-', starting with a letter)",
    NCCL_SIZE: "a size in bytes like 8, 128M or 1G",
    DNS1123_SUBDOMAIN: "a DNS-1123 name (lowercase letters, digits, '-' and '.')",
    HUB_ID: "a model hub id like meta-llama/Meta-Llama-3-8B-Instruct (a directory goes in serve.model.path)",
}


def _pattern_hint(pattern: str) -> str:
    return _PATTERN_HINTS.get(pattern, f"a string matching {pattern}")


# --- defaults --------------------------------------------------------------------------


def defaults_of(schema: Schema) -> Any:
    """The value made of every default in ``schema`` (nested objects included).

    An object without a ``default`` of its own gets one built from its properties'
    defaults, so ``defaults_of(INFRA)`` is the complete shipped-defaults layer.
    """
    if "default" in schema:
        return clone(schema["default"])
    if "properties" in schema:
        return {key: d for key, sub in schema["properties"].items() if (d := defaults_of(sub)) is not NO_DEFAULT}
    return NO_DEFAULT


def fill_defaults(schema: Schema, value: Any) -> None:
    """Fill, in place, the defaults of objects the shipped defaults could not reach: a
    nullable section given as a mapping (``resourceQuota: {}`` gets ``hard: {}``) and
    objects inside lists. Call it only on data that passed :func:`check`."""
    if isinstance(value, dict) and "properties" in schema:
        for key, sub in schema["properties"].items():
            if key not in value and (d := defaults_of(sub)) is not NO_DEFAULT:
                value[key] = d
            if key in value:
                fill_defaults(sub, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            fill_defaults(schema["items"], item)
