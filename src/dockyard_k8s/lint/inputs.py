"""What lint and plan read: the rendered bundle of a run, or manifest files.

Manifest files are read like kubectl does (YAML 1.1 scalars, ``---`` separated
documents, ``kind: List`` expanded), keeping each document's node tree so a finding's
JSON path can be turned into a line number. Directories are read recursively
(``*.yaml``, ``*.yml``, ``*.json``, sorted); ``-`` is standard input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import yaml

from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.lint.model import Obj, Path, Source

_Loader = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
EXTENSIONS = (".yaml", ".yml", ".json")


def line_of(node: yaml.Node | None, path: Path) -> int:
    """1-based line of the deepest node along ``path`` (0 without a node tree)."""
    if node is None:
        return 0
    best = node
    for part in path:
        nxt = None
        if isinstance(part, int) and isinstance(best, yaml.SequenceNode) and 0 <= part < len(best.value):
            nxt = best.value[part]
        elif isinstance(part, str) and isinstance(best, yaml.MappingNode):
            for k, v in best.value:
                if isinstance(k, yaml.ScalarNode) and k.value == part:
                    nxt = v
                    break
        if nxt is None:
            break
        best = nxt
    return best.start_mark.line + 1


class Located(Obj):
    """An object with a way to find the line of a JSON path in its source text."""

    def __init__(self, data: dict[str, Any], source: Source, node: Callable[[], yaml.Node | None]) -> None:
        super().__init__(data, source)
        self._node_factory = node
        self._node: yaml.Node | None = None
        self._built = False

    def line(self, path: Path) -> int:
        if not self._built:
            self._node, self._built = self._node_factory(), True
        return line_of(self._node, path)


def _files(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs.sort()
                out += [os.path.join(root, n) for n in sorted(names) if n.endswith(EXTENSIONS)
                        and n != "kustomization.yaml"]
        else:
            out.append(p)
    return out


def _documents(text: str, file: str) -> list[tuple[Any, yaml.Node | None]]:
    loader = _Loader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            docs.append((loader.construct_document(node), node))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        what = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        raise ConfigError([ConfigProblem(file, line, col, "", f"invalid YAML: {what}")]) from e
    except yaml.YAMLError as e:
        raise ConfigError([ConfigProblem(file, 0, 0, "", f"invalid YAML: {e}")]) from e
    finally:
        loader.dispose()
    return docs


def read_manifests(paths: Sequence[str], stdin: Any = None) -> list[Located]:
    """Every Kubernetes object in the given files and directories, in order.

    Raises:
        ConfigError: a file cannot be read or is not YAML, or a document is not an object.
    """
    objects: list[Located] = []
    problems: list[ConfigProblem] = []
    for file in _files(paths):
        try:
            if file == "-":
                text = (stdin or sys.stdin).read()
            else:
                with open(file, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            problems.append(ConfigProblem(file, 0, 0, "", f"cannot read file: {getattr(e, 'strerror', None) or e}"))
            continue
        for index, (data, node) in enumerate(_documents(text, file)):
            if data is None:
                continue
            if not isinstance(data, dict) or "kind" not in data:
                problems.append(ConfigProblem(file, node.start_mark.line + 1 if node else 0, 1, "",
                                              f"document {index} is not a Kubernetes object (no kind)"))
                continue
            if str(data.get("kind", "")).endswith("List") and isinstance(data.get("items"), list):
                items = data.get("items") or []
                for j, item in enumerate(items):
                    if isinstance(item, dict):
                        objects.append(Located(item, Source(file, index), partial(_item_node, node, j)))
                continue
            objects.append(Located(data, Source(file, index), partial(_same, node)))
    if problems:
        raise ConfigError(problems)
    return objects


def _same(node: yaml.Node | None) -> yaml.Node | None:
    return node


def _item_node(node: yaml.Node | None, index: int) -> yaml.Node | None:
    for k, v in node.value if isinstance(node, yaml.MappingNode) else []:
        if isinstance(k, yaml.ScalarNode) and k.value == "items" and isinstance(v, yaml.SequenceNode):
            return v.value[index] if index < len(v.value) else None
    return None


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


def objects_from_bundle(objects: list[dict[str, Any]]) -> list[Located]:
    """The rendered objects of a run; each one's file is the name ``render -o DIR`` gives it,
    and line numbers refer to that file."""
    from dockyard_k8s.render.serialize import dump_yaml

    def node(obj: dict[str, Any]) -> yaml.Node | None:
        return yaml.compose(dump_yaml(obj), Loader=_Loader)

    out = []
    for i, obj in enumerate(objects):
        name = f"{i:02d}-{str(obj.get('kind', '')).lower()}-{(obj.get('metadata') or {}).get('name', '')}.yaml"
        out.append(Located(obj, Source(name, 0, rendered=True), partial(node, obj)))
    return out
