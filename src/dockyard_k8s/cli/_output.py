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


def check_output_paths(args: Any) -> None:
    """``--output-file`` / ``--output-dir`` that cannot be used are bad input (exit 2), said before
    any work is done."""
    import os

    from dockyard_k8s.errors import UsageError

    file, directory = getattr(args, "output_file", None), getattr(args, "output_dir", None)
    if file:
        if os.path.isdir(file):
            raise UsageError(f"--output-file {file}: is a directory (--output-dir {file} writes one file per object)")
        parent = os.path.dirname(file) or "."
        if not os.path.isdir(parent):
            raise UsageError(f"--output-file {file}: the directory {parent} does not exist")
    if directory and os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"--output-dir {directory}: exists and is not a directory (--output-file {directory} "
                         "writes every object into one file)")


def write_file(path: str, text: str, flag: str = "--output-file") -> None:
    """Write ``text`` to ``path`` whole; a path that cannot be written is bad input (exit 2)."""
    import os

    from dockyard_k8s.errors import UsageError

    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory (expected a file name)")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write it: {e.strerror or e}") from e
