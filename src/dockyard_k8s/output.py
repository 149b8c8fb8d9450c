"""Rendered objects written to files, as ``render``, ``check``, ``lint`` and their ``serve`` twins write them.

    dump_json       indented JSON, non-ASCII kept (every command's -o json)
    document_text   a document as -o json or -o yaml prints it
    write_file      one whole text file; a path that cannot be written is bad input (exit 2)
    objects_text    every object as one YAML stream, or a v1 List (JSON)
    write_objects   a directory: one file per object (``NN-kind-name.yaml``) + kustomization.yaml
    write_document  the ``check --output-file`` document: YAML, or JSON for a ``.json`` name

The only I/O outside ``live/``: local files the user named, nothing else.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.yamlfile import dump as dump_yaml
from dockyard_k8s.yamlfile import dump_documents


def dump_json(data: Any) -> str:
    """Indented JSON, non-ASCII kept."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def document_text(doc: Any, fmt: str) -> str:
    """``doc`` as ``-o json`` (indented JSON) or ``-o yaml`` (one YAML document) prints it."""
    return dump_json(doc) if fmt == "json" else "---\n" + dump_yaml(doc)


def object_file_name(index: int, obj: dict[str, Any], ext: str) -> str:
    """``NN-kind-name.ext``: the file ``render -o DIR`` writes an object to (lint points there)."""
    return f"{index:02d}-{str(obj.get('kind', '')).lower()}-{(obj.get('metadata') or {}).get('name', '')}.{ext}"


# Files write_objects writes into a directory (and replaces on the next render).
_OWNED = re.compile(r"^\d{2}-[a-z0-9.-]+\.(yaml|json)$")


def write_file(path: str, text: str, flag: str = "--output-file") -> None:
    """Write ``text`` to ``path`` whole; a path that cannot be written is bad input (exit 2)."""
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory (expected a file name)")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write it: {e.strerror or e}") from e


def objects_text(objects: list[dict[str, Any]], fmt: str) -> str:
    """``fmt`` json: a v1 List; else a YAML stream, one document per object."""
    if fmt == "json":
        return dump_json({"apiVersion": "v1", "kind": "List", "items": objects})
    return dump_documents(objects)


def kustomization(files: list[str]) -> dict[str, Any]:
    # sortOptions fifo (kustomize >= 5.0, kubectl >= 1.27) keeps our apply order instead of
    # kustomize's legacy kind ordering.
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "sortOptions": {"order": "fifo"}, "resources": files}


def write_objects(objects: list[dict[str, Any]], directory: str, fmt: str, *, header: str = "") -> list[str]:
    """One file per object (``NN-kind-name.yaml``, files of an earlier render replaced) plus a
    kustomization.yaml listing them in apply order (``header``, YAML comments, first); returns
    the file names."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--output-dir {directory}: cannot create the directory: {e.strerror or e}") from e
    for stale in os.listdir(directory):
        if _OWNED.match(stale):
            os.remove(os.path.join(directory, stale))
    files = []
    for i, obj in enumerate(objects):
        name = object_file_name(i, obj, fmt)
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(dump_json(obj) if fmt == "json" else dump_yaml(obj))
        files.append(name)
    with open(os.path.join(directory, "kustomization.yaml"), "w", encoding="utf-8") as f:
        f.write(header + dump_yaml(kustomization(files)))
    return files


def document_path(path: str) -> None:
    """A ``check --output-file`` name must say its format."""
    if not path.endswith((".yaml", ".yml", ".json")):
        raise UsageError(f"--output-file {path}: expected a file name ending in .yaml or .json")


def write_document(path: str, doc: dict[str, Any]) -> None:
    """``doc`` (the resolved config and the objects) to ``path``: JSON for ``.json``, else YAML."""
    write_file(path, dump_json(doc) if path.endswith(".json") else dump_yaml(doc))
