"""Generate ``infra_types.py``: the infra schema as TypedDicts, so mypy checks ``infra["..."]``.

The schema (``infra_schema.INFRA``) stays the one source of the docs, the JSON Schema, the
shipped defaults and the types. After a schema change::

    .venv/bin/python -m dockyard_k8s.config.typegen > src/dockyard_k8s/config/infra_types.py

(``tests/unit/config/test_typed_model.py`` fails while the file is stale). The types describe
a *loaded* spec: every default filled in, so every key is present (``total=True``).

Mapping of schema to Python types:

    string / integer / boolean / number    str / int / bool / float
    enum                                    Literal[...]
    quantity (``QUANTITY`` pattern)         Quantity (str | int | float)
    "null" in type                          ... | None
    object with properties                  a TypedDict named after its path
    object with additionalProperties        dict[str, <value type>]
    any other object                        dict[str, Any]
    array                                   list[<item type>]
    object with x-shorthand (or a string)   the object: loading expands the string

A class is named after its path (``kuberay.trainer`` -> ``KuberayTrainer``, list items add
``Item``, map values ``Value``); a section with the same fields and types as an earlier one
is an alias of it (``KuberayInference = KuberayTrainer``).
"""

from __future__ import annotations

import json

from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.schema import QUANTITY, Schema

HEADER = '''\
"""The loaded infra spec as TypedDicts: generated from ``infra_schema.INFRA``; do not edit.

Regenerate with ``.venv/bin/python -m dockyard_k8s.config.typegen > src/dockyard_k8s/config/infra_types.py``
(see ``config/typegen.py`` for how schema types map to these).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Quantity = str | int | float  # a Kubernetes quantity as written: "16Gi", 4, 0.5
'''

_SCALARS = {"string": "str", "integer": "int", "boolean": "bool", "number": "float", "null": "None",
            "object": "dict[str, Any]", "array": "list[Any]"}


def _cap(part: str) -> str:
    return part[:1].upper() + part[1:]


class _Gen:
    def __init__(self) -> None:
        self.classes: list[tuple[str, list[tuple[str, str]]]] = []  # (name, fields), definition order
        self.aliases: list[tuple[str, str]] = []  # (alias, class), after the class
        self.by_body: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}

    def typed_dict(self, schema: Schema, name: str, parent: str) -> str:
        fields = [(key, self.type_of(sub, name + _cap(key), name)) for key, sub in schema["properties"].items()]
        body = (parent, tuple(fields))  # siblings only: trainer and inference, not any two look-alikes
        if body in self.by_body:
            self.aliases.append((name, self.by_body[body]))
            return name
        self.by_body[body] = name
        self.classes.append((name, fields))
        return name

    def type_of(self, schema: Schema, name: str, parent: str) -> str:
        raw = schema.get("type")
        names = [raw] if isinstance(raw, str) else list(raw or [])
        nullable = "null" in names
        names = [n for n in names if n != "null" and not (n == "string" and "x-shorthand" in schema)]  # expanded
        if schema.get("pattern") == QUANTITY:
            parts = ["Quantity"]
        elif "enum" in schema:
            parts = ["Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"]
        else:
            parts = [self._one(schema, n, name, parent) for n in names] or ["Any"]
        if nullable:
            parts.append("None")
        return " | ".join(dict.fromkeys(parts))

    def _one(self, schema: Schema, type_name: str, name: str, parent: str) -> str:
        if type_name == "object":
            if "properties" in schema:
                return self.typed_dict(schema, name, parent)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return f"dict[str, {self.type_of(extra, name + 'Value', parent)}]"
            return "dict[str, Any]"
        if type_name == "array":
            items = schema.get("items")
            return f"list[{self.type_of(items, name + 'Item', parent)}]" if isinstance(items, dict) else "list[Any]"
        return _SCALARS[type_name]


def generate(schema: Schema, root: str = "InfraSpec") -> str:
    """The text of ``infra_types.py`` for ``schema``."""
    gen = _Gen()
    fields = [(key, gen.type_of(sub, _cap(key), root)) for key, sub in schema["properties"].items()]
    gen.classes.append((root, fields))
    aliases: dict[str, list[str]] = {}
    for alias, target in gen.aliases:
        aliases.setdefault(target, []).append(alias)
    # Post-order: every class after the classes its fields name, the root last.
    out = [HEADER]
    for name, fields in gen.classes:
        lines = [f"\n\nclass {name}(TypedDict):"]
        lines += [f"    {key}: {typ}" for key, typ in fields]
        out.append("\n".join(lines) + "\n")
        if name in aliases:
            out.append("\n\n" + "".join(f"{alias} = {name}\n" for alias in aliases[name]))
    return "".join(out)


def main() -> None:
    print(generate(INFRA), end="")


if __name__ == "__main__":
    main()
