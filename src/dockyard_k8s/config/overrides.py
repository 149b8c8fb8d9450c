"""Command-line overrides: ``--set key.path=value`` (infra, like Helm) and Hydra-style
``key=value`` / ``+key=value`` / ``++key=value`` / ``~key`` after the recipe.

Keys are dotted paths; ``[N]`` indexes a list; ``\\.`` is a literal dot inside a key
(``--set 'kuberay.trainer.nodeSelector.node\\.kubernetes\\.io/instance-type=p5.48xlarge'``).
Values are typed with the same YAML 1.2 rules as files (``4`` is an int, ``null`` is
null, ``[a, b]`` a list, ``'4'`` a string).
"""

from __future__ import annotations

import re

from dockyard_k8s.config.yamlio import Path, format_path, parse_value
from dockyard_k8s.plain import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

_KEY_PART = re.compile(r"((?:[^.\[\]\\]|\\.)+)|\[(\d+)\]")


class Override(Record):
    """One recipe override. ``op`` is ``=`` (change an existing key), ``+`` (add a new
    key), ``++`` (add or change) or ``~`` (delete)."""

    __slots__ = ("op", "path", "value", "text")

    def __init__(self, op: str, path: Path, value: Any, text: str) -> None:
        self.op = op
        self.path = path
        self.value = value
        self.text = text


def parse_key(text: str) -> Path | None:
    """``a.b[0].c\\.d`` -> ``("a", "b", 0, "c.d")``; None if malformed."""
    parts: list[str | int] = []
    pos = 0
    while pos < len(text):
        if parts and text[pos] == ".":
            pos += 1
        m = _KEY_PART.match(text, pos)
        if not m:
            return None
        parts.append(int(m.group(2)) if m.group(2) is not None else m.group(1).replace("\\.", "."))
        pos = m.end()
    return tuple(parts) if parts else None


def _split(text: str, origin: str) -> tuple[Path | None, Any, str]:
    """Split ``key=value``; returns (path, typed value, error message or "")."""
    key, sep, raw = text.partition("=")
    path = parse_key(key)
    if not sep or path is None:
        return None, None, f"got {text!r}, expected KEY=VALUE with KEY a dotted path like a.b.c"
    value, problems = parse_value(raw, origin)
    if problems:
        quoted = origin == "--set" and "quote it" in problems[0].message
        hint = "; --set-string keeps a value a string" if quoted else ""
        return None, None, f"value of {key}: {problems[0].message}{hint}"
    return path, value, ""


def parse_set(text: str) -> tuple[Path | None, Any, str]:
    """Parse one ``--set`` argument. Returns (path, value, error or "")."""
    return _split(text, "--set")


def parse_set_string(text: str) -> tuple[Path | None, Any, str]:
    """Parse one ``--set-string KEY=VALUE`` (or ``--set-file KEY=PATH``): the value stays a string."""
    key, sep, raw = text.partition("=")
    path = parse_key(key)
    if not sep or path is None:
        return None, None, f"got {text!r}, expected KEY=VALUE with KEY a dotted path like a.b.c"
    return path, raw, ""


def parse_override(text: str) -> tuple[Override | None, str]:
    """Parse one Hydra-style recipe override. Returns (override, error or "")."""
    if text.startswith("~"):
        key = text[1:].partition("=")[0]
        path = parse_key(key)
        if path is None:
            return None, f"got {text!r}, expected ~KEY with KEY a dotted path"
        return Override("~", path, None, text), ""
    op = "++" if text.startswith("++") else "+" if text.startswith("+") else "="
    path, value, error = _split(text[len(op) if op != "=" else 0:], "override")
    if error:
        return None, error
    assert path is not None
    return Override(op, path, value, text), ""


# --- applying --------------------------------------------------------------------------


def lookup(data: Any, path: Path) -> tuple[bool, Any]:
    """(True, the value at ``path``) or (False, None) when there is none."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False, None
        elif not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def set_path(data: dict[str, Any], path: Path, value: Any) -> str:
    """Set ``path`` in ``data``, creating mappings on the way. Returns an error or ""."""
    node: Any = data
    for i, part in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return f"{format_path(path[: i + 1])} is not an existing list item"
            node = node[part]
            continue
        if not isinstance(node, dict):
            return f"{format_path(path[:i])} is not a mapping"
        if not isinstance(node.get(part), (dict, list)):
            node[part] = [] if isinstance(nxt, int) else {}
        node = node[part]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last > len(node):
            return f"{format_path(path)} is not an existing list item"
        if last == len(node):
            node.append(value)
        else:
            node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        return f"{format_path(path[:-1])} is not a mapping"
    return ""


def _suggest(data: Any, path: Path) -> str:
    """Existing keys the user probably meant: each missing part of ``path`` replaced by the
    closest key at its level (``trainer.lrr`` -> ``trainer.lr``, ``optimzer.lr`` -> ``optimizer.lr``),
    then keys elsewhere with the same last part (``lr`` -> ``optimizer.lr``)."""
    import difflib

    found: list[str] = []
    corrected = _correct(data, path, difflib)
    if corrected is not None:
        found.append(format_path(corrected))
    leaf = path[-1]

    def walk(node: Any, here: Path) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == leaf:
                    found.append(format_path((*here, k)))
                walk(v, (*here, k))

    walk(data, ())
    found = list(dict.fromkeys(found))
    return f"; did you mean {' or '.join(found[:3])}?" if found else ""


def _correct(data: Any, path: Path, difflib: Any) -> Path | None:
    """``path`` with every part that is not a key replaced by the closest key at its level,
    or None when some part has no close key (or nothing needed correcting)."""
    out: list[str | int] = []
    node = data
    changed = False
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
            node = node[part]
            out.append(part)
            continue
        if not isinstance(node, dict):
            return None
        if part not in node:
            keys = [k for k in node if isinstance(k, str)]
            close = difflib.get_close_matches(part, keys, n=1, cutoff=0.6)
            if not close:
                return None
            part, changed = close[0], True
        out.append(part)
        node = node[part]
    return tuple(out) if changed else None


def apply_override(recipe: dict[str, Any], ov: Override) -> str:
    """Apply one override in place with Hydra's rules. Returns an error or ""."""
    exists, _ = lookup(recipe, ov.path)
    key = format_path(ov.path)
    if ov.op == "=" and not exists:
        return (f"no key {key} in the recipe{_suggest(recipe, ov.path)} "
                f"(use +{key}=... to add it, ++{key}=... to add or change)")
    if ov.op == "+" and exists:
        return f"{key} already exists in the recipe (use {key}=... or ++{key}=... to change it)"
    if ov.op == "~":
        if not exists:
            return f"no key {key} in the recipe to delete{_suggest(recipe, ov.path)}"
        _, parent = lookup(recipe, ov.path[:-1])
        del parent[ov.path[-1]]
        return ""
    return set_path(recipe, ov.path, ov.value)


def job_arg(ov: Override) -> str | None:
    """The argument the job receives for an applied override, in idempotent form.

    The mounted recipe already has every override applied, so re-applying must be a
    no-op: ``key=v`` and ``+key=v`` become ``++key=v``; a deletion is already done and
    is not passed again (Hydra would fail deleting a missing key).
    """
    if ov.op == "~":
        return None
    return f"++{format_path(ov.path)}={_hydra_value(ov.value)}"


def _hydra_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if re.fullmatch(r"[\w./:@%+-]+", value) and not _looks_typed(value):
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"  # Hydra quoted string
    import json

    return json.dumps(value, separators=(",", ":"))


def _looks_typed(value: str) -> bool:
    """True when a bare string would be read back as another type."""
    parsed, _ = parse_value(value, "")
    return not isinstance(parsed, str)
