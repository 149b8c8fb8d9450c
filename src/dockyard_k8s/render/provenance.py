"""Provenance: which infra key produced a field of a rendered object.

A problem found in a rendered object (a KubeRay rule, the strict schema, a semantic rule)
is the user's when an infra value caused it, and is then reported at the key they wrote
(``RunConfig.locate``: file:line:col and layer). The renderers record where values come
from while they build; nothing is recorded unless a trace is active, so a normal render
pays nothing. ``bundle.build_bundle`` renders a second time under :func:`tracing` only
when the first render has problems to explain (renderers are deterministic).

What is recorded, and by whom:

* every mapping and list of the infra spec, by the trace itself: a renderer that places
  one (``pod["tolerations"] = sizing["tolerations"]``) or clones one (``plain.clone``)
  carries its infra path along;
* ``render/merge.py`` notes each key a ``kuberay.spec`` fragment adds or replaces, and each
  list item it appends, so a fragment's field is blamed on the fragment's own line;
* renderers note the scalar fields they copy from infra keys (:func:`note_fields`), e.g. the
  RayJob's ``spec.suspend`` from ``launch.suspend``.

A lookup takes the longest recorded prefix of a rendered path and appends the rest, so
``spec.template.spec.tolerations[0].key`` finds ``kuberay.trainer.tolerations[0].key``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dockyard_k8s import plain
from dockyard_k8s.plain import Path


def _children(value: Any) -> Iterable[tuple[Any, Any]]:
    """(key or index, item) of a mapping or a list; nothing of a scalar."""
    return value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()


class Trace:
    """Notes taken while rendering: containers and fields -> the infra path they came from."""

    def __init__(self) -> None:
        self._keep: list[Any] = []  # the noted containers, alive so their ids stay theirs
        self.nodes: dict[int, Path] = {}  # id(container) -> infra path of the whole container
        self.fields: dict[int, dict[Any, Path]] = {}  # id(container) -> {key or index: infra path}

    def node(self, container: Any, path: Path) -> None:
        self._keep.append(container)
        self.nodes[id(container)] = path

    def field(self, container: Any, key: Any, path: Path) -> None:
        self._keep.append(container)
        self.fields.setdefault(id(container), {})[key] = path

    def register(self, data: Any, path: Path = ()) -> None:
        """Note every container of ``data`` (the loaded infra spec) at its own path."""
        if isinstance(data, dict | list):
            self.node(data, path)
        for k, v in _children(data):
            self.register(v, (*path, k))

    def clone(self, value: Any) -> Any:
        """``plain.clone`` while tracing: the copy carries the original's notes."""
        if isinstance(value, dict):
            out: Any = {k: self.clone(v) for k, v in value.items()}
        elif isinstance(value, list):
            out = [self.clone(v) for v in value]
        else:
            return value
        self.copy(value, out)
        return out

    def copy(self, src: Any, dst: Any) -> None:
        if id(src) in self.nodes:
            self.node(dst, self.nodes[id(src)])
        if id(src) in self.fields:
            self._keep.append(dst)
            self.fields.setdefault(id(dst), {}).update(self.fields[id(src)])

    def origin(self, container: Any) -> Path | None:
        return self.nodes.get(id(container))

    def paths(self, obj: Any) -> Provenance:
        """Every noted place of a rendered object, by its JSON path."""
        found: dict[Path, Path] = {}

        def walk(node: Any, at: Path) -> None:
            if id(node) in self.nodes:
                found[at] = self.nodes[id(node)]
            for key, origin in self.fields.get(id(node), {}).items():
                found[(*at, key)] = origin
            for k, v in _children(node):
                walk(v, (*at, k))

        walk(obj, ())
        return Provenance(found)


@dataclass(frozen=True, slots=True)
class Provenance:
    """The noted places of one rendered object: JSON path -> infra path."""

    found: dict[Path, Path]

    def infra_key(self, json_path: Path) -> Path | None:
        """The infra key that produced ``json_path`` (the longest noted prefix, plus the rest
        of the path), or None when no infra value is behind it (the renderer's own field)."""
        for end in range(len(json_path), -1, -1):
            origin = self.found.get(json_path[:end])
            if origin is not None:
                return (*origin, *json_path[end:])
        return None


_trace: Trace | None = None


def active() -> Trace | None:
    """The trace being recorded, or None (the normal, fast case)."""
    return _trace


def note_fields(container: dict[str, Any], origins: dict[str, Path]) -> dict[str, Any]:
    """Record ``container[key]`` -> infra path for each of ``origins`` present (no-op unless tracing);
    returns ``container``."""
    if _trace is not None:
        for key, path in origins.items():
            if key in container:
                _trace.field(container, key, path)
    return container


@contextmanager
def tracing(infra: Any) -> Iterator[Trace]:
    """Record provenance of everything rendered inside the block, for the spec ``infra``."""
    global _trace
    trace = Trace()
    trace.register(infra)
    previous: Callable[[Any], Any] | None = plain.set_clone_hook(trace.clone)
    _trace = trace
    try:
        yield trace
    finally:
        _trace = None
        plain.set_clone_hook(previous)
