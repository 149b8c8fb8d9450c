"""Server-side apply and field ownership for the fake API server (structured-merge-diff rules).

* **apply** (``application/apply-patch+yaml``): the applied configuration is checked against
  the schema (undeclared fields, duplicate or missing map-list keys fail the whole request,
  whatever ``fieldValidation`` says), merged into the live object by the schema's list types
  (map lists by key, sets by value, atomic lists replaced), and becomes the manager's field
  set; fields the manager applied before and no longer applies are removed unless another
  manager owns them. A field another manager owns with a different value is a conflict
  (409) unless ``force``; forcing takes it over.
* **update** (create, PUT, merge/strategic/JSON patch, ``/status``, ``/scale``): the writer
  becomes the owner of every field whose value it changed; others lose those fields.

Field sets use the FieldsV1 path encoding, so ``metadata.managedFields`` reads like a real
server's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from fake_schema import (
    ANY,
    FieldPath,
    Node,
    SchemaError,
    item_key,
    key_elem,
    path_text,
    value_elem,
    walk,
)

Manager = tuple[str, str, str]  # (name, "Apply" | "Update", subresource)
Managers = dict[Manager, set[FieldPath]]
_MISSING = object()


class ConflictError(Exception):
    def __init__(self, conflicts: dict[Manager, list[FieldPath]], api_version: str) -> None:
        self.conflicts = conflicts
        total = sum(len(v) for v in conflicts.values())
        parts = []
        self.causes = []
        for (name, _, _), paths in conflicts.items():
            head = f'conflict{"s" if len(paths) > 1 else ""} with "{name}"'
            if len(paths) == 1:
                parts.append(f"{head} using {api_version}: {path_text(paths[0])}")
            else:
                parts.append(f"{head} using {api_version}:" + "".join(f"\n- {path_text(p)}" for p in paths))
            self.causes += [{"reason": "FieldManagerConflict", "message": f'conflict with "{name}" using '
                                                                          f"{api_version}", "field": path_text(p)}
                            for p in paths]
        super().__init__(f"Apply failed with {total} conflict{'s' if total > 1 else ''}: " + "\n".join(parts))


def leaves(obj: dict[str, Any], root: Node, *, status: bool = True, strict: bool = False) -> dict[FieldPath, Any]:
    """Owned paths of ``obj`` -> value (None for map-list items: only their existence is owned)."""
    out: dict[FieldPath, Any] = {}
    try:
        for path, value, leaf in walk(obj, root, status=status):
            if path:
                out[path] = value if leaf else None
    except SchemaError:
        if strict:
            raise
        return leaves_lenient(obj, status=status)
    return out


def leaves_lenient(obj: dict[str, Any], *, status: bool = True) -> dict[FieldPath, Any]:
    """Leaves of an object stored by a test helper that may not fit the schema."""
    return leaves(obj, ANY, status=status, strict=True) if obj else {}


def _owned_by_others(path: FieldPath, me: Manager, managers: Managers) -> bool:
    n = len(path)
    return any(m != me and any(p[:n] == path for p in paths) for m, paths in managers.items())


def _child(container: Any, elem: str) -> tuple[Any, Any]:
    """(parent container, accessor) for one path element, or (None, None)."""
    kind, _, rest = elem.partition(":")
    if kind == "f" and isinstance(container, dict):
        return container, rest
    if kind == "k" and isinstance(container, list):
        key = json.loads(rest)
        for i, item in enumerate(container):
            if isinstance(item, dict) and item_key(item, tuple(key)) == key:
                return container, i
    if kind == "v" and isinstance(container, list):
        value = json.loads(rest)
        if value in container:
            return container, container.index(value)
    return None, None


def remove_path(obj: dict[str, Any], path: FieldPath) -> None:
    chain: list[tuple[Any, Any]] = []
    cur: Any = obj
    for elem in path:
        parent, acc = _child(cur, elem)
        if parent is None:
            return
        if isinstance(parent, dict) and acc not in parent:
            return
        chain.append((parent, acc))
        cur = parent[acc]
    parent, acc = chain[-1]
    del parent[acc]
    for parent, acc in reversed(chain[:-1]):  # prune maps left empty
        child = parent[acc]
        if isinstance(child, dict) and not child:
            del parent[acc]
        else:
            break


def merge(live: Any, applied: Any, node: Node) -> Any:
    """``applied`` merged into ``live`` by the schema (the apply merge)."""
    if isinstance(applied, dict) and isinstance(live, dict):
        out = dict(live)
        for k, v in applied.items():
            out[k] = merge(live[k], v, node.field(k) or ANY) if k in live else copy.deepcopy(v)
        return out
    if isinstance(applied, list) and isinstance(live, list) and node.is_list:
        ltype, keys = node.list_type()
        if ltype == "map":
            by_key = {key_elem(k): i for i, item in enumerate(live) if (k := item_key(item, keys)) is not None}
            out_list = list(live)
            for item in applied:
                k = item_key(item, keys)
                elem = key_elem(k) if k is not None else None
                if elem in by_key:
                    out_list[by_key[elem]] = merge(live[by_key[elem]], item, node.items())
                else:
                    out_list.append(copy.deepcopy(item))
            return out_list
        if ltype == "set":
            return list(live) + [copy.deepcopy(v) for v in applied if v not in live]
    return copy.deepcopy(applied)


def apply(live: dict[str, Any] | None, applied: dict[str, Any], me: Manager, root: Node, managers: Managers, *,
          force: bool, api_version: str, status: bool) -> tuple[dict[str, Any], Managers]:
    """The object after ``me`` applies ``applied``, and the new field ownership.

    Raises:
        SchemaError: the applied configuration does not fit the schema.
        ConflictError: another manager owns a field with another value (and not ``force``).
    """
    new = leaves(applied, root, status=status, strict=True)
    managers = {m: set(p) for m, p in managers.items()}
    if live is None:
        result = copy.deepcopy(applied)
        managers[me] = set(new)
        return result, managers
    current = leaves(live, root, status=status)
    conflicts: dict[Manager, list[FieldPath]] = {}
    for path, value in new.items():
        if path not in current or current[path] == value or (value is None and current[path] is None):
            continue
        for m, paths in managers.items():
            if m != me and path in paths:
                conflicts.setdefault(m, []).append(path)
    if conflicts and not force:
        raise ConflictError(conflicts, api_version)
    result = copy.deepcopy(live)
    for path in sorted(managers.get(me, set()) - set(new), key=len, reverse=True):
        if not _owned_by_others(path, me, managers):
            remove_path(result, path)
    result = merge(result, applied, root)
    for m, paths in conflicts.items():
        managers[m] -= set(paths)
    managers[me] = set(new)
    return result, {m: p for m, p in managers.items() if p}


def update(old: dict[str, Any] | None, new: dict[str, Any], me: Manager, root: Node, managers: Managers, *,
           status: bool) -> Managers:
    """Ownership after a non-apply write by ``me``: it owns what it changed."""
    before = leaves(old, root, status=status) if old else {}
    after = leaves(new, root, status=status)
    changed = {p for p, v in after.items() if before.get(p, _MISSING) != v}
    removed = set(before) - set(after)
    out: Managers = {}
    for m, paths in managers.items():
        keep = {p for p in paths if p not in changed and not any(p[:len(r)] == r for r in removed)}
        if keep:
            out[m] = keep
    if changed:
        out[me] = out.get(me, set()) | changed
    return out


# --- patches of the Update kind ----------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (``application/merge-patch+json``)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any, node: Node) -> Any:
    """Strategic merge patch (built-in kinds): maps merge, lists with a merge key merge by it,
    ``null`` deletes; other lists are replaced. ``$patch`` directives are not supported."""
    if isinstance(patch, dict) and (node.is_object or node.is_any):
        out = dict(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge_patch(out.get(k), v, node.field(k) or ANY)
        return out
    if isinstance(patch, list) and isinstance(target, list) and node.is_list:
        ltype, keys = node.list_type()
        if ltype == "map":
            merged = list(target)
            for item in patch:
                k = item_key(item, keys)
                idx = next((i for i, t in enumerate(merged) if k is not None and item_key(t, keys) == k), None)
                if idx is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[idx] = strategic_merge_patch(merged[idx], item, node.items())
            return merged
        if ltype == "set":
            return list(target) + [v for v in patch if v not in target]
    return copy.deepcopy(patch)


def json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 JSON patch (``application/json-patch+json``): add, replace, remove, test."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in str(op.get("path", "")).split("/")[1:]]
        parent: Any = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1] if parts else ""
        kind = op.get("op")
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise ValueError(f"test failed at {op.get('path')}")
        elif kind == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                idx = len(parent) if last == "-" else int(last)
                if kind == "add":
                    parent.insert(idx, op.get("value"))
                else:
                    parent[idx] = op.get("value")
            else:
                parent[last] = op.get("value")
        else:
            raise ValueError(f"unsupported JSON patch op {kind!r}")
    return doc


PATCHERS: dict[str, Callable[..., Any]] = {
    "application/merge-patch+json": lambda target, patch, node: merge_patch(target, patch),
    "application/strategic-merge-patch+json": strategic_merge_patch,
    "application/json-patch+json": lambda target, patch, node: json_patch(target, patch),
}


def managed_fields(managers: Managers, api_version: str, times: dict[Manager, str]) -> list[dict[str, Any]]:
    from fake_schema import fields_v1

    out = []
    for m in sorted(managers, key=lambda m: (times.get(m, ""), m)):
        name, operation, sub = m
        entry: dict[str, Any] = {"manager": name, "operation": operation, "apiVersion": api_version,
                                 "time": times.get(m, "2026-01-01T00:00:00Z"), "fieldsType": "FieldsV1",
                                 "fieldsV1": fields_v1(managers[m])}
        if sub:
            entry["subresource"] = sub
        out.append(entry)
    return out


__all__ = ["PATCHERS", "ConflictError", "Manager", "Managers", "apply", "leaves", "managed_fields", "merge",
           "merge_patch", "remove_path", "update", "value_elem"]
