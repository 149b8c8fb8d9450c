"""Deterministic text forms of rendered objects: the same objects give the same bytes.

YAML is written by :func:`dockyard_k8s.yamlfile.dump` (``dump_yaml`` here, the name the
renderers use). Key order is the order the renderers build (apiVersion, kind, metadata, spec...), never
sorted alphabetically; multi-line strings are block literals so scripts stay readable.
PyYAML's dumper quotes every string a YAML 1.1 reader would re-type (``'no'``,
``'0755'``), so kubectl reads back exactly what we rendered. A value the renderers share
between two places (one selector dict used by two policies) is written out in full each
time, never as a YAML anchor and alias (``&id001`` / ``*id001``): readers of a manifest,
and tools that do not resolve aliases, see each object whole.
"""

from __future__ import annotations

import json
from typing import Any

from dockyard_k8s.yamlfile import dump as dump_yaml


def dump_documents(objects: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, ``---`` before each document (kubectl-friendly)."""
    return "".join("---\n" + dump_yaml(o) for o in objects)


def dump_json(data: Any) -> str:
    """Indented JSON, non-ASCII kept."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``v1 List`` wrapping the objects: what ``kubectl apply -f`` takes as one JSON file."""
    return {"apiVersion": "v1", "kind": "List", "items": objects}


def object_file_name(index: int, obj: dict[str, Any], ext: str) -> str:
    """``NN-kind-name.ext``: the file ``render -o DIR`` writes an object to (lint points there)."""
    return f"{index:02d}-{str(obj.get('kind', '')).lower()}-{(obj.get('metadata') or {}).get('name', '')}.{ext}"
