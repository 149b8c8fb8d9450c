"""Deep merge of a free-form Kubernetes fragment over a rendered object.

Mappings merge key by key. Lists of mappings that all carry a merge key are merged
item by item, the way ``kubectl`` strategic merge treats the same fields: worker groups
by ``groupName``, containers/env/volumes/ports by ``name``, volume mounts by
``mountPath``; items the fragment adds are appended. Every other list is replaced.
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.plain import clone
from dockyard_k8s.render import provenance

# Merge keys tried in order; the first that every item of both lists carries is used.
MERGE_KEYS = ("groupName", "name", "mountPath")


def _merge_key(base: list[Any], over: list[Any]) -> str | None:
    items = base + over
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    return next((key for key in MERGE_KEYS if all(key in i for i in items)), None)


def deep_merge(base: Any, over: Any) -> Any:
    """A new value: ``over`` merged onto ``base`` (neither is modified).

    While provenance is traced, every key ``over`` adds or replaces, and every list item it
    appends, is noted with ``over``'s infra path (a fragment's field is the fragment's)."""
    trace = provenance.active()
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = deep_merge(base[k], v) if k in base else clone(v)
        if trace is not None:
            _note_merge(trace, base, over, out, [(k, k, k in base and _merges(base[k], v)) for k in over])
        return out
    if isinstance(base, list) and isinstance(over, list) and (key := _merge_key(base, over)):
        out_list = list(base)
        index = {item[key]: i for i, item in enumerate(base)}
        placed = []
        for j, item in enumerate(over):
            if item[key] in index:
                out_list[index[item[key]]] = deep_merge(base[index[item[key]]], item)
                placed.append((index[item[key]], j, True))
            else:
                placed.append((len(out_list), j, False))
                out_list.append(clone(item))
        if trace is not None:
            _note_merge(trace, base, over, out_list, placed)
        return out_list
    return clone(over)


def _merges(base: Any, over: Any) -> bool:
    """True when deep_merge merges ``over`` into ``base`` rather than replacing it."""
    if isinstance(base, dict) and isinstance(over, dict):
        return True
    return isinstance(base, list) and isinstance(over, list) and _merge_key(base, over) is not None


def _note_merge(trace: provenance.Trace, base: Any, over: Any, out: Any,
                placed: list[tuple[Any, Any, bool]]) -> None:
    """``out`` keeps ``base``'s notes; what ``over`` replaced or added is ``over``'s (a merged
    item keeps its own notes, taken inside it)."""
    trace.copy(base, out)
    origin = trace.origin(over)
    if origin is None:
        return
    for at, source, merged in placed:
        if not merged:
            trace.field(out, at, (*origin, source))
