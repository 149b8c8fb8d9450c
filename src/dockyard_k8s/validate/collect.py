"""Every schema violation of one object, with its JSON path: the slow, thorough pass.

The compiled validators stop at the first violation; this walker runs only on objects
that failed, over the same converted schema, and reports all of them in words a
Kubernetes user reads (``unknown field "foo"``, ``got 'x' (string), expected integer``).
It implements the draft-07 keywords the Kubernetes and CRD schemas use.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from dockyard_k8s.plain import show, show_typed, type_name
from dockyard_k8s.suggest import did_you_mean
from dockyard_k8s.validate.problem import JsonPath

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_MAX_SHOWN = 8  # enum values listed in a message


class Collector:
    """Walks one schema (with ``#/definitions/...`` refs) over one value."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self.defs: dict[str, Any] = schema.get("definitions") or {}

    def errors(self, value: Any, path: JsonPath = ()) -> list[tuple[JsonPath, str]]:
        """Every problem of ``value`` (at ``path``)."""
        return self._errors_of(self.root, value, path)

    def _resolve(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 64:
            schema = self.defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            seen += 1
        return schema

    def _walk(self, schema: Any, value: Any, path: JsonPath, out: list[tuple[JsonPath, str]]) -> None:
        schema = self._resolve(schema)
        if schema is True or schema is None:
            return
        if schema is False:
            out.append((path, "no value is allowed here"))
            return
        types = schema.get("type")
        if types is not None:
            names = types if isinstance(types, list) else [types]
            if not any(_TYPES[t](value) for t in names if t in _TYPES):
                wanted = " or ".join(t for t in names if t != "null") or "null"
                out.append((path, f"got {show_typed(value)}, expected {wanted}"))
                return
        if "enum" in schema and value not in schema["enum"]:
            allowed = [show(v) for v in schema["enum"] if v is not None]
            shown = ", ".join(allowed[:_MAX_SHOWN]) + (", ..." if len(allowed) > _MAX_SHOWN else "")
            out.append((path, f"got {show(value)}, expected one of: {shown}"))
        if "const" in schema and value != schema["const"]:
            out.append((path, f"got {show(value)}, expected {show(schema['const'])}"))
        if isinstance(value, dict):
            self._object(schema, value, path, out)
        elif isinstance(value, list):
            self._array(schema, value, path, out)
        elif isinstance(value, str):
            self._string(schema, value, path, out)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._number(schema, value, path, out)
        for sub in schema.get("allOf") or ():
            self._walk(sub, value, path, out)
        for word in ("anyOf", "oneOf"):
            if word in schema:
                self._alternatives(word, schema[word], value, path, out)
        if "not" in schema and not self._errors_of(schema["not"], value, path):
            out.append((path, "matches a form that is not allowed here"))

    def _errors_of(self, schema: Any, value: Any, path: JsonPath) -> list[tuple[JsonPath, str]]:
        found: list[tuple[JsonPath, str]] = []
        self._walk(schema, value, path, found)
        return found

    def _alternatives(self, word: str, options: list[Any], value: Any, path: JsonPath,
                      out: list[tuple[JsonPath, str]]) -> None:
        results = [self._errors_of(option, value, path) for option in options]
        passing = sum(1 for r in results if not r)
        if passing == 0:
            best = min(results, key=len)  # the closest form explains the mistake best
            out.extend(best if len(best) <= 3 else [(path, f"matches none of the {len(options)} allowed forms")])
        elif word == "oneOf" and passing > 1:
            out.append((path, f"matches {passing} of the allowed forms, expected exactly one"))

    def _object(self, schema: dict[str, Any], value: dict[str, Any], path: JsonPath,
                out: list[tuple[JsonPath, str]]) -> None:
        props = schema.get("properties") or {}
        patterns = schema.get("patternProperties") or {}
        extra = schema.get("additionalProperties", True)
        for name in schema.get("required") or ():
            if name not in value:
                out.append(((*path, name), "missing required field"))
        for key, item in value.items():
            if not isinstance(key, str):
                out.append(((*path, str(key)), f"key {show(key)} is a {type_name(key)}, expected a string"))
                continue
            matched = False
            if key in props:
                matched = True
                self._walk(props[key], item, (*path, key), out)
            for pattern, sub in patterns.items():
                if _regex(pattern).search(key):
                    matched = True
                    self._walk(sub, item, (*path, key), out)
            if not matched:
                if extra is False:
                    hint = did_you_mean(key, props, quote='"')
                    out.append(((*path, key), f'unknown field "{key}"{hint}'))
                elif isinstance(extra, dict):
                    self._walk(extra, item, (*path, key), out)
        n = len(value)
        if "minProperties" in schema and n < schema["minProperties"]:
            out.append((path, f"has {n} field(s), expected at least {schema['minProperties']}"))
        if "maxProperties" in schema and n > schema["maxProperties"]:
            out.append((path, f"has {n} field(s), expected at most {schema['maxProperties']}"))

    def _array(self, schema: dict[str, Any], value: list[Any], path: JsonPath,
               out: list[tuple[JsonPath, str]]) -> None:
        items = schema.get("items")
        if isinstance(items, dict | bool):
            for i, item in enumerate(value):
                self._walk(items, item, (*path, i), out)
        elif isinstance(items, list):
            for i, (sub, item) in enumerate(zip(items, value, strict=False)):
                self._walk(sub, item, (*path, i), out)
        n = len(value)
        if "minItems" in schema and n < schema["minItems"]:
            out.append((path, f"has {n} item(s), expected at least {schema['minItems']}"))
        if "maxItems" in schema and n > schema["maxItems"]:
            out.append((path, f"has {n} item(s), expected at most {schema['maxItems']}"))
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    out.append(((*path, i), f"duplicate item {show(item)}"))
                seen.append(item)

    def _string(self, schema: dict[str, Any], value: str, path: JsonPath, out: list[tuple[JsonPath, str]]) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append((path, f"got {show(value)} ({len(value)} characters), expected at least {schema['minLength']}"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append((path, f"got {show(value)} ({len(value)} characters), expected at most {schema['maxLength']}"))
        if "pattern" in schema and not _regex(schema["pattern"]).search(value):
            out.append((path, f"got {show(value)}, expected a value matching {schema['pattern']}"))

    def _number(self, schema: dict[str, Any], value: float, path: JsonPath, out: list[tuple[JsonPath, str]]) -> None:
        if "minimum" in schema and value < schema["minimum"]:
            out.append((path, f"got {show(value)}, expected a number >= {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            out.append((path, f"got {show(value)}, expected a number <= {schema['maximum']}"))
        low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(low, int | float) and not isinstance(low, bool) and value <= low:
            out.append((path, f"got {show(value)}, expected a number > {low}"))
        if isinstance(high, int | float) and not isinstance(high, bool) and value >= high:
            out.append((path, f"got {show(value)}, expected a number < {high}"))
        step = schema.get("multipleOf")
        if step and (value / step) % 1:
            out.append((path, f"got {show(value)}, expected a multiple of {step}"))


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error:  # an ECMA-only construct: never fail the object on our side
        return re.compile("")
