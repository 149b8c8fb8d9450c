"""What lint and plan read: the rendered bundle of a run, or manifest files.

Manifest files are read by the validator's reader (``validate/reader.py``: like kubectl,
YAML 1.1 scalars, ``kind: List`` expanded, directories recursive, ``-`` is standard input);
a finding's JSON path is turned into a line number only when it is printed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import yaml

from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.lint.model import Obj, Path, Source
from dockyard_k8s.plain import format_path

_Loader = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader


class Located(Obj):
    """An object with a way to find the line of a JSON path in its source text."""

    def __init__(self, data: dict[str, Any], source: Source, line: Callable[[Path], int]) -> None:
        super().__init__(data, source)
        self._line = line

    def line(self, path: Path) -> int:
        return self._line(path)


def read_manifests(paths: Sequence[str]) -> list[Located]:
    """Every Kubernetes object in the given files and directories, in order, read by the
    validator's reader (kubectl's YAML reading, ``kind: List`` expanded, ``-`` is stdin);
    line numbers are looked up only for the findings that need them.

    Raises:
        ConfigError: a file is not YAML, has duplicate keys, or a document is not an object.
        UsageError: a path does not exist.
    """
    from dockyard_k8s.validate.reader import read_manifests as read

    found = read(list(paths))
    problems = [ConfigProblem(p.file, p.line, 1 if p.line else 0, format_path(p.path), p.message)
                for p in found.problems]
    objects: list[Located] = []
    for doc in found.documents:
        if not isinstance(doc.obj, dict) or "kind" not in doc.obj:
            problems.append(ConfigProblem(doc.file, doc.line, 1, "",
                                          f"document {doc.doc_index} is not a Kubernetes object (no kind)"))
            continue

        objects.append(Located(doc.obj, Source(doc.file, doc.doc_index),
                               partial(_line, found.texts[doc.file], doc.file, doc.doc_index, doc.path)))
    if problems:
        raise ConfigError(problems)
    return objects


def _line(text: str, file: str, index: int, inside: Path, path: Path) -> int:
    """Line of ``path`` in document ``index`` of ``text`` (its nearest existing parent's line
    for a missing field); 0 if unknown."""
    from dockyard_k8s.validate.locate import locate

    where = (*inside, *path)
    return locate(text, file, {index: [where]}).get((index, where), 0)


def looks_like_manifests(path: str) -> bool:
    """Whether ``path`` holds Kubernetes objects rather than a recipe: a directory, ``-``,
    or a file whose first document has both apiVersion and kind."""
    if path == "-" or os.path.isdir(path):
        return True
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(65536)
        loader = _Loader(text)
        try:
            first = loader.get_node() if loader.check_node() else None
            data = loader.construct_document(first) if first is not None else None
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "apiVersion" in data and "kind" in data


def objects_from_bundle(objects: list[dict[str, Any]], *, prefix: str = "") -> list[Located]:
    """The rendered objects of a run (or an endpoint); each one's file is the name ``render -o
    DIR`` gives it (after ``prefix``, the directory), and line numbers refer to that file."""
    from dockyard_k8s.render.serialize import dump_yaml, object_file_name

    def line(obj: dict[str, Any], name: str, path: Path) -> int:
        return _line(dump_yaml(obj), name, 0, (), path)

    out = []
    for i, obj in enumerate(objects):
        name = prefix + object_file_name(i, obj, "yaml")
        out.append(Located(obj, Source(name, 0, rendered=True), partial(line, obj, name)))
    return out
