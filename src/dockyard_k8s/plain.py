"""Helpers for plain data (dicts, lists, scalars): what every layer passes around."""

from __future__ import annotations

import re
from typing import Any

# A location inside plain data: mapping keys and list indexes (``("spec", "containers", 0)``).
Path = tuple[str | int, ...]


def format_path(path: Path) -> str:
    """``("kuberay", "trainer", "env", 0)`` -> ``kuberay.trainer.env[0]``; odd keys quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def clone(value: Any) -> Any:
    """A deep copy of plain data, without the cost of importing ``copy``."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value
