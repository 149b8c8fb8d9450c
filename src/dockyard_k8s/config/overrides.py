"""Command-line overrides: ``--set key.path=value`` (infra, like Helm) and Hydra-style
``key=value`` / ``+key=value`` / ``++key=value`` / ``~key`` after the recipe.

``--set`` keys are dotted paths; ``[N]`` indexes a list; ``\\.`` is a literal dot inside a key
(``--set 'kuberay.trainer.nodeSelector.node\\.kubernetes\\.io/instance-type=p5.48xlarge'``).
Recipe overrides follow Hydra's override grammar, since the job's Hydra reads them too: a list
item is ``stages.0``, ``=`` and ``,`` only quoted or escaped in a value. Values are typed with the
same YAML 1.2 rules as files (``4`` is an int, ``null`` is null, ``[a, b]`` a list, ``'4'`` a string).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.config.yamlio import Path, format_path, parse_value
from dockyard_k8s.suggest import closest

_KEY_PART = re.compile(r"((?:[^.\[\]\\]|\\.)+)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class Override:
    """One recipe override. ``op`` is ``=`` (change an existing key), ``+`` (add a new
    key), ``++`` (add or change) or ``~`` (delete)."""

    op: str
    path: Path
    value: Any
    text: str


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


def parse_set(text: str, *, typed: bool = True) -> tuple[Path | None, Any, str]:
    """Parse one ``--set KEY=VALUE`` (the value typed as YAML) or, not ``typed``, one
    ``--set-string KEY=VALUE`` or ``--set-file KEY=PATH`` (the value stays a string).
    Returns (path, value, error or "")."""
    key, sep, raw = text.partition("=")
    path = parse_key(key)
    if not sep or path is None:
        return None, None, f"got {text!r}, expected KEY=VALUE with KEY a dotted path like a.b.c"
    if not typed:
        return path, raw, ""
    value, problems = parse_value(raw, "--set")
    if problems:
        hint = "; --set-string keeps a value a string" if "quote it" in problems[0].message else ""
        return None, None, f"value of {key}: {problems[0].message}{hint}"
    return path, value, ""


# Hydra's override grammar (hydra/grammar/OverrideLexer.g4, OverrideParser.g4 of hydra-core): a
# key is a DOT_PATH of KEY_SPECIAL or INT_UNSIGNED parts (a list item is ``a.0``, never ``a[0]``);
# ``group/option`` and ``group@package`` keys choose config-group options.
_HYDRA_PART = r"(?:[A-Za-z_$][A-Za-z0-9_$-]*|0|[1-9](?:_?[0-9])*)"
_HYDRA_KEY = re.compile(rf"{_HYDRA_PART}(?:\.{_HYDRA_PART})*")
_HYDRA_GROUP = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:/[A-Za-z_][A-Za-z0-9_-]*)*(?:@[A-Za-z0-9_.$-]*)?")
# Hydra's ESC: what a backslash makes literal in a value (then the value is a string).
_HYDRA_ESCAPES = re.compile(r"\\([\\()\[\]{}:=, \t])")


def parse_override(text: str) -> tuple[Override | None, str]:
    """Parse one Hydra-style recipe override. Returns (override, error or "").

    ``~KEY`` and ``~KEY=VALUE`` delete, ``KEY=VALUE`` changes, ``+KEY=VALUE`` adds, ``++KEY=VALUE``
    adds or changes. A ``group/option`` or ``group@package`` key comes back as one part (the loader
    refuses group choices, which need the recipe's defaults list)."""
    if text.startswith("+++"):
        return None, (f"got {text!r}: at most two '+' (Hydra: +KEY=VALUE adds a key, ++KEY=VALUE adds or "
                      "changes it)")
    op = "~" if text.startswith("~") else "++" if text.startswith("++") else "+" if text.startswith("+") else "="
    key, sep, raw = text[len(op) if op != "=" else 0:].partition("=")
    if op != "~" and not sep:
        return None, f"got {text!r}, expected KEY=VALUE with KEY a dotted path like a.b.c"
    path, error = _hydra_key(key)
    if error:
        return None, error
    if not sep:
        return Override(op, path, None, text), ""
    error = _hydra_value_problem(raw)
    if error:
        return None, f"value of {key}: {error}"
    if _HYDRA_ESCAPES.search(raw):  # Hydra reads an escaped primitive as a string
        return Override(op, path, _HYDRA_ESCAPES.sub(r"\1", raw), text), ""
    value, problems = parse_value(raw, "override")
    if problems:
        return None, f"value of {key}: {problems[0].message}"
    return Override(op, path, value, text), ""


def _hydra_key(key: str) -> tuple[Path, str]:
    if _HYDRA_KEY.fullmatch(key):
        return tuple(key.split(".")), ""
    if ("/" in key or "@" in key) and _HYDRA_GROUP.fullmatch(key):
        return (key,), ""
    if re.search(r"\[\d+\]", key):
        fixed = re.sub(r"\[(\d+)\]", r".\1", key)
        return (), f"got {key!r}: in Hydra's override grammar a list item is {fixed.split('.')[0]}.N: write {fixed}"
    return (), (f"got {key!r}: not a key of Hydra's override grammar (dotted names of letters, digits, '_', '-' "
                "and '$', like trainer.lr or stages.0.steps)")


def _hydra_value_problem(raw: str) -> str:
    """What Hydra's grammar refuses in an unquoted value: ``=`` anywhere, a ``,`` outside brackets
    (a sweep, which only --multirun runs)."""
    quote, depth, i = "", 0, 0
    while i < len(raw):
        c = raw[i]
        if quote:
            quote = "" if c == quote else quote
        elif c == "\\":
            i += 1  # an escaped character
        elif c in "'\"":
            quote = c
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        elif c == "=":
            return (f"got {raw!r}: Hydra's override grammar allows no '=' in a value: quote it "
                    f"('{raw}') or escape it (\\=)")
        elif c == "," and depth == 0:
            return (f"got {raw!r}: a sweep (Hydra runs value1,value2 only with --multirun); one run takes one "
                    f"value: quote it for a string ('{raw}') or write a list ([{raw}])")
        i += 1
    return ""


# --- applying --------------------------------------------------------------------------


def _item(node: Any, part: str | int) -> str | int:
    """``part`` as an index of ``node``: a list item is ``[0]`` (--set) or ``.0`` (Hydra)."""
    return int(part) if isinstance(node, list) and isinstance(part, str) and part.isdigit() else part


def lookup(data: Any, path: Path) -> tuple[bool, Any]:
    """(True, the value at ``path``) or (False, None) when there is none."""
    for part in path:
        part = _item(data, part)
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False, None
        elif not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def key_paths(data: Any, at: Path = ()) -> list[Path]:
    """The path of every mapping key in ``data`` (written at ``at``), nested ones too."""
    out: list[Path] = []
    if isinstance(data, dict):
        for k, v in data.items():
            out += [(*at, k), *key_paths(v, (*at, k))]
    return out


def set_path(data: dict[str, Any], path: Path, value: Any) -> str:
    """Set ``path`` in ``data``, creating mappings on the way. Returns an error or ""."""
    node: Any = data
    for i, part in enumerate(path[:-1]):
        nxt, part = path[i + 1], _item(node, part)
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
    last = _item(node, path[-1])
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
    corrected = _correct(data, path)
    same_leaf = [format_path(p) for p in key_paths(data) if p[-1] == path[-1]]
    found = list(dict.fromkeys([format_path(corrected), *same_leaf] if corrected else same_leaf))
    return f"; did you mean {' or '.join(found[:3])}?" if found else ""


def _correct(data: Any, path: Path) -> Path | None:
    """``path`` with every part that is not a key replaced by the closest key at its level,
    or None when some part has no close key (or nothing needed correcting)."""
    out: list[str | int] = []
    node, changed = data, False
    for part in path:
        near: str | int | None = _item(node, part)
        if isinstance(node, dict) and near not in node:
            near, changed = closest(str(part), [k for k in node if isinstance(k, str)]), True
        found, node = lookup(node, (near,)) if near is not None else (False, None)
        if not found or near is None:
            return None
        out.append(near)
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
        current = parent[_item(parent, ov.path[-1])]
        if "=" in ov.text and current != ov.value:  # hydra: ~key=value deletes only that value
            return (f"the value of {key} is {_hydra_value(current)}, not {_hydra_value(ov.value)} (Hydra deletes a "
                    "key given with a value only when it has that value)")
        del parent[_item(parent, ov.path[-1])]
        return ""
    return set_path(recipe, ov.path, ov.value)


def job_arg(ov: Override) -> str:
    """The argument the job receives for an override, so that the job's Hydra, applying it to
    the mounted recipe, gets what Hydra would have composed from the recipe.

    The mounted recipe has every change applied, so re-applying must be a no-op: ``key=v`` and
    ``+key=v`` become ``++key=v``. A deletion is passed as written and left to the job: the
    mounted recipe keeps the key (Hydra fails deleting a key that is not there).
    """
    if ov.op == "~":
        return ov.text
    return f"++{'.'.join(str(p) for p in ov.path)}={_hydra_value(ov.value)}"


def _hydra_value(value: Any) -> str:
    if isinstance(value, float):  # inf, nan as Hydra reads them (JSON has no such numbers)
        return repr(value)
    if isinstance(value, str):
        if re.fullmatch(r"[\w./:@%+-]+", value) and isinstance(parse_value(value, "")[0], str):
            return value  # bare: read back as this string, not as another type
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"  # Hydra quoted string
    return json.dumps(value, separators=(",", ":"))
