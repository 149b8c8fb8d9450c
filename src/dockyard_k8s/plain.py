"""Helpers for plain data (dicts, lists, scalars): what every layer passes around."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A location inside plain data: mapping keys and list indexes (``("spec", "containers", 0)``).
Path = tuple[str | int, ...]


def format_path(path: Path) -> str:
    """``("kuberay", "trainer", "env", 0)`` -> ``kuberay.trainer.env[0]``; odd keys quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isascii() and part and all(c.isalnum() or c in "_-" for c in part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def dig(data: Any, *path: str | int) -> Any:
    """The value at ``path`` in plain data; None where a part is missing or ``data`` has another shape."""
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and -len(data) <= part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


# The JSON type names of the types plain data holds, as messages show them.
_TYPE_NAMES = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
               dict: "object"}


def type_name(value: Any) -> str:
    """JSON type name of a value (``null``, ``boolean``, ``integer``...)."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


_clone_hook: Callable[[Any], Any] | None = None  # render/provenance.py's traced copy, while it records


def clone(value: Any) -> Any:
    """A deep copy of plain data, without the cost of importing ``copy``."""
    if _clone_hook is not None:
        return _clone_hook(value)
    return _clone(value)


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def set_clone_hook(hook: Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    """Let ``clone`` call ``hook`` instead (provenance tracing); returns the previous hook."""
    global _clone_hook
    previous, _clone_hook = _clone_hook, hook
    return previous


def show(value: Any) -> str:
    """A value as every message shows it (``got 'lots'``): a string quoted as Python's repr
    does, cut at 60 characters; ``true``/``false``/``null``; a number as written; ``a mapping``,
    ``a list``."""
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def show_typed(value: Any) -> str:
    """:func:`show` with the type of a scalar, for a type mismatch: ``'two' (string)``, ``5 (integer)``."""
    if value is None or isinstance(value, dict | list):
        return show(value)
    return f"{show(value)} ({type_name(value)})"

