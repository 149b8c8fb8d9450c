"""Small helpers the rule families share."""

from __future__ import annotations

from typing import Any

from dockyard_k8s.lint.model import Pod
from dockyard_k8s.lint.pss import ctx


def cname(container: dict[str, Any]) -> str:
    return str(container.get("name", "?"))


def effective(pod: Pod, container: dict[str, Any], field: str) -> Any:
    """A securityContext field as the container gets it: its own value, else the pod's."""
    own = ctx(container).get(field)
    return own if own is not None else ctx(pod.spec).get(field)


def volumes(pod: Pod) -> list[tuple[int, dict[str, Any]]]:
    items = pod.spec.get("volumes")
    return [(i, v) for i, v in enumerate(items if isinstance(items, list) else []) if isinstance(v, dict)]
