"""Helpers for plain data (dicts, lists, scalars): what every layer passes around."""

from __future__ import annotations

from typing import Any


def clone(value: Any) -> Any:
    """A deep copy of plain data, without the cost of importing ``copy``."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value
