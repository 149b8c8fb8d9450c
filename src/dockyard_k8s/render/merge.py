"""Deep merge of a free-form Kubernetes fragment over a rendered object.

Mappings merge key by key. Lists of mappings that all carry a merge key are merged
item by item, the way ``kubectl`` strategic merge treats the same fields: worker groups
by ``groupName``, containers/env/volumes/ports by ``name``, volume mounts by
``mountPath``; items the fragment adds are appended. Every other list is replaced.
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.plain import clone

# Merge keys tried in order; the first that every item of both lists carries is used.
MERGE_KEYS = ("groupName", "name", "mountPath")


def _merge_key(base: list[Any], over: list[Any]) -> str | None:
    items = base + over
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in MERGE_KEYS:
        if all(key in i for i in items):
            return key
    return None


def deep_merge(base: Any, over: Any) -> Any:
    """A new value: ``over`` merged onto ``base`` (neither is modified)."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = deep_merge(base[k], v) if k in base else clone(v)
        return out
    if isinstance(base, list) and isinstance(over, list) and (key := _merge_key(base, over)):
        out_list = list(base)
        index = {item[key]: i for i, item in enumerate(base)}
        for item in over:
            if item[key] in index:
                out_list[index[item[key]]] = deep_merge(base[index[item[key]]], item)
            else:
                out_list.append(clone(item))
        return out_list
    return clone(over)
