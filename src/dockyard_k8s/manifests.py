"""Kubernetes objects for lint and plan: from manifest files, or a run's rendered objects.

Files are read by the validator's reader (like kubectl: YAML 1.1 scalars, ``kind: List``
expanded, directories recursive, ``-`` is standard input). Each object remembers where it came
from, so a finding can name its file and line; lines are looked up afterwards, only for the
paths that need one, every path of a file in one pass (:func:`line_numbers`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.output import object_file_name
from dockyard_k8s.plain import Path, format_path
from dockyard_k8s.validate.locate import locate
from dockyard_k8s.validate.reader import read_manifests
from dockyard_k8s.yamlfile import dump as dump_yaml
from dockyard_k8s.yamlfile import load_all


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from: a file and the index of its YAML document, or the
    rendered objects (file = the name ``render --output-dir`` gives it)."""

    file: str
    document: int
    rendered: bool = False


@dataclass(slots=True, eq=False)  # shared by the objects of a file: compared and hashed as itself
class _Text:
    """A file's text (a rendered object's made on first use) and its documents as the reader split them."""

    name: str
    text: str | Callable[[], str]
    chunks: Any = None  # None: the locator splits the text itself

    @property
    def value(self) -> str:
        if not isinstance(self.text, str):
            self.text = self.text()
        return self.text


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object and where it is written."""

    data: dict[str, Any]
    source: Source
    inside: Path  # where the object is in its document: () or ("items", i) in a List
    text: _Text

    def line(self, path: Path) -> int:
        """The line of ``path`` (its nearest written parent's for a missing field); 0 if unknown."""
        return line_numbers([(self, path)])[0]


def line_numbers(wanted: Sequence[tuple[Manifest, Path]]) -> list[int]:
    """The line of each (object, JSON path), 0 where unknown: one locator pass per file."""
    per_text: dict[int, tuple[_Text, dict[int, list[Path]]]] = {}
    for m, path in wanted:
        _, docs = per_text.setdefault(id(m.text), (m.text, {}))
        docs.setdefault(m.source.document, []).append((*m.inside, *path))
    found = {key: locate(text.value, text.name, docs, text.chunks) for key, (text, docs) in per_text.items()}
    return [found[id(m.text)].get((m.source.document, (*m.inside, *path)), 0) for m, path in wanted]


def read_objects(paths: Sequence[str]) -> list[Manifest]:
    """Every Kubernetes object in the given files and directories, in order.

    Raises:
        ConfigError: a file is not YAML, has duplicate keys, or a document is not an object.
        UsageError: a path does not exist.
    """
    found = read_manifests(list(paths))
    problems = [ConfigProblem(p.file, p.line, 1 if p.line else 0, format_path(p.path), p.message)
                for p in found.problems]
    texts = {file: _Text(file, text, found.chunks.get(file)) for file, text in found.texts.items()}
    objects: list[Manifest] = []
    for doc in found.documents:
        if not isinstance(doc.obj, dict) or "kind" not in doc.obj:
            problems.append(ConfigProblem(doc.file, doc.line, 1, "",
                                          f"document {doc.doc_index} is not a Kubernetes object (no kind)"))
            continue
        objects.append(Manifest(doc.obj, Source(doc.file, doc.doc_index), doc.path, texts[doc.file]))
    if problems:
        raise ConfigError(problems)
    return objects


def objects_from_bundle(objects: list[dict[str, Any]], *, prefix: str = "") -> list[Manifest]:
    """The rendered objects of a run (or an endpoint); each one's file is the name ``render
    --output-dir DIR`` gives it (after ``prefix``, the directory), and lines refer to that file."""
    out = []
    for i, obj in enumerate(objects):
        name = prefix + object_file_name(i, obj, "yaml")
        out.append(Manifest(obj, Source(name, 0, rendered=True), (), _Text(name, partial(dump_yaml, obj))))
    return out


def looks_like_manifests(path: str) -> bool:
    """Whether ``path`` holds Kubernetes objects rather than a recipe: a directory, ``-``,
    or a file whose first document has both apiVersion and kind."""
    if path == "-" or os.path.isdir(path):
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as f:  # not UTF-8: the reader says where
            text = f.read(65536)
    except OSError:
        return False
    documents = load_all(text, path).documents
    data = documents[0].data if documents else None
    return isinstance(data, dict) and "apiVersion" in data and "kind" in data
