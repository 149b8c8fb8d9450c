"""Deterministic text forms of rendered objects: the same objects give the same bytes.

Key order is the order the renderers build (apiVersion, kind, metadata, spec...), never
sorted alphabetically; multi-line strings are block literals so scripts stay readable.
PyYAML's dumper quotes every string a YAML 1.1 reader would re-type (``'no'``,
``'0755'``), so kubectl reads back exactly what we rendered.
"""

from __future__ import annotations

from typing import Any

import yaml

_Base = yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper


class _Dumper(_Base):  # type: ignore[misc,valid-type]
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    """One YAML document."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=4096)


def dump_documents(objects: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, ``---`` before each document (kubectl-friendly)."""
    return "".join("---\n" + dump_yaml(o) for o in objects)


def dump_json(data: Any) -> str:
    import json  # not on the start-up path of check/render's default YAML output

    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``v1 List`` wrapping the objects: what ``kubectl apply -f`` takes as one JSON file."""
    return {"apiVersion": "v1", "kind": "List", "items": objects}


def object_file_name(index: int, obj: dict[str, Any], ext: str) -> str:
    """``NN-kind-name.ext``: the file ``render -o DIR`` writes an object to (lint points there)."""
    return f"{index:02d}-{str(obj.get('kind', '')).lower()}-{(obj.get('metadata') or {}).get('name', '')}.{ext}"
