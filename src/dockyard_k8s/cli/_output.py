"""Small printing helpers: aligned tables, check marks, object names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

OK = "✔"
FAIL = "✖"
WARN = "!"


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str] | None = None, indent: str = "") -> str:
    """Left-aligned columns separated by two spaces (kubectl get style)."""
    body = [[str(c) for c in r] for r in rows]
    if headers:
        body.insert(0, [h.upper() for h in headers])
    if not body:
        return ""
    widths = [max(len(r[i]) for r in body if i < len(r)) for i in range(max(len(r) for r in body))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in body]
    return "\n".join(indent + line for line in lines)


def object_ref(obj: dict[str, Any]) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns}/{meta.get('name')}" if ns else f"{obj.get('kind')} {meta.get('name')}"
