"""Schemas for the fake API server: what a field is, as the real server's typed views see it.

Two sources, one :class:`Node` interface:

* built-in kinds: the Kubernetes 1.31 OpenAPI definitions shipped (as JSON Schema) by the
  ``kubernetes-validate`` package, which keep ``x-kubernetes-list-type`` /
  ``x-kubernetes-list-map-keys`` and the strategic-merge ``x-kubernetes-patch-*`` markers;
* custom resources: the CRD's ``openAPIV3Schema`` (structural schema), with the root
  ``metadata`` read as ObjectMeta, as the API server does.

What the fake derives from them, following structured-merge-diff (the library behind
server-side apply) and the CRD pruning rules:

* list semantics: ``x-kubernetes-list-type`` first; for built-ins without it, a
  ``patch-strategy: merge`` list with a ``patch-merge-key`` is a map keyed by it, a merge
  list of scalars a set; everything else is atomic (CRD lists without a type too);
* unknown fields: a property not declared where the schema has ``properties`` and neither
  ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields``;
* field sets (the content of ``managedFields``): leaf fields, set members, map-list items.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Iterator
from typing import Any

BUILTIN_SCHEMA_VERSION = "v1.31.0-local-strict"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Key fields the API server defaults before merging (a port's protocol).
KEY_DEFAULTS = {"protocol": "TCP"}
# metadata fields a client never owns (structured-merge-diff resets them).
SERVER_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                         "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                         "generateName"})

PathElem = str  # "f:spec", 'k:{"name":"main"}', 'v:"x"' (the FieldsV1 encoding)
FieldPath = tuple[PathElem, ...]


@functools.cache
def _builtin_defs() -> dict[str, Any]:
    spec = importlib.util.find_spec("kubernetes_validate")
    assert spec and spec.origin, "kubernetes-validate is a dependency"
    path = os.path.join(os.path.dirname(spec.origin), "kubernetes-json-schema", BUILTIN_SCHEMA_VERSION,
                        "_definitions.json")
    with open(path, encoding="utf-8") as f:
        return dict(json.load(f)["$defs"])


@functools.cache
def _gvk_index() -> dict[tuple[str, str], str]:
    """(apiVersion, kind) -> definition name."""
    out: dict[tuple[str, str], str] = {}
    for name, d in _builtin_defs().items():
        for gvk in d.get("x-kubernetes-group-version-kind") or []:
            group, version = gvk.get("group", ""), gvk.get("version", "")
            out[(f"{group}/{version}" if group else version, gvk.get("kind", ""))] = name
    return out


class Node:
    """One schema node. ``None`` raw means "anything" (preserved unknown fields)."""

    __slots__ = ("builtin", "raw")

    def __init__(self, raw: dict[str, Any] | None, builtin: bool) -> None:
        self.builtin = builtin
        self.raw = self._deref(raw) if raw is not None else None

    @staticmethod
    def _deref(raw: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in raw:
            raw = _builtin_defs()[raw["$ref"].rsplit("/", 1)[-1]]
        if "oneOf" in raw and "properties" not in raw:  # IntOrString, Quantity: scalars
            return {"type": "string"}
        return raw

    @property
    def is_any(self) -> bool:
        return self.raw is None

    def _types(self) -> set[str]:
        t = (self.raw or {}).get("type")
        return set(t) if isinstance(t, list) else ({t} if t else set())

    @property
    def is_object(self) -> bool:
        raw = self.raw or {}
        return "object" in self._types() or "properties" in raw or "additionalProperties" in raw

    @property
    def is_list(self) -> bool:
        return "array" in self._types() or "items" in (self.raw or {})

    @property
    def preserves_unknown(self) -> bool:
        """Anything goes below: preserved unknown fields (CRDs), or a free-form built-in
        object (RawExtension, FieldsV1). A CRD ``type: object`` without properties keeps nothing."""
        raw = self.raw
        if raw is None or raw.get("x-kubernetes-preserve-unknown-fields") is True:
            return True
        return self.builtin and self.is_object and "properties" not in raw and \
            raw.get("additionalProperties") in (None, True)

    def field(self, name: str) -> Node | None:
        """The node of property ``name``; None when the schema does not declare it."""
        raw = self.raw
        if raw is None:
            return ANY
        props = raw.get("properties") or {}
        if name in props:
            sub = props[name]
            if name == "metadata" and not self.builtin and "properties" not in sub and raw.get("_root"):
                return Node(_builtin_defs()[OBJECT_META], True)
            return Node(sub, self.builtin)
        extra = raw.get("additionalProperties")
        if isinstance(extra, dict):
            return Node(extra, self.builtin)
        if extra is True or self.preserves_unknown:
            return ANY
        if raw.get("x-kubernetes-embedded-resource") and name in ("apiVersion", "kind", "metadata"):
            return ANY if name != "metadata" else Node(_builtin_defs()[OBJECT_META], True)
        return None

    def items(self) -> Node:
        raw = self.raw
        if raw is None or "items" not in raw:
            return ANY
        return Node(raw["items"], self.builtin)

    def list_type(self) -> tuple[str, tuple[str, ...]]:
        """("atomic" | "set" | "map", map keys)."""
        raw = self.raw or {}
        declared = raw.get("x-kubernetes-list-type")
        if declared == "map":
            return "map", tuple(raw.get("x-kubernetes-list-map-keys") or ())
        if declared in ("set", "atomic"):
            return str(declared), ()
        if self.builtin and "merge" in str(raw.get("x-kubernetes-patch-strategy", "")):
            key = raw.get("x-kubernetes-patch-merge-key")
            return ("map", (str(key),)) if key else ("set", ())
        return "atomic", ()


ANY = Node(None, False)


def builtin_root(api_version: str, kind: str) -> Node | None:
    name = _gvk_index().get((api_version, kind))
    return Node(_builtin_defs()[name], True) if name else None


def crd_root(schema: dict[str, Any]) -> Node:
    return Node({**schema, "_root": True}, False)


# --- paths and keys --------------------------------------------------------------------------

def item_key(item: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The key fields of a map-list item (defaulted as the server defaults them); None if one is missing."""
    if not isinstance(item, dict):
        return None
    out = {}
    for k in keys:
        if k in item:
            out[k] = item[k]
        elif k in KEY_DEFAULTS:
            out[k] = KEY_DEFAULTS[k]
        else:
            return None
    return out


def key_elem(key: dict[str, Any]) -> PathElem:
    return "k:" + json.dumps(key, sort_keys=True, separators=(",", ":"))


def value_elem(value: Any) -> PathElem:
    return "v:" + json.dumps(value, sort_keys=True, separators=(",", ":"))


def key_text(key: dict[str, Any]) -> str:
    """``[name="main"]`` / ``[containerPort=80,protocol="TCP"]`` as structured-merge-diff prints it."""
    return "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(key.items())) + "]"


def path_text(path: FieldPath) -> str:
    """A FieldPath as structured-merge-diff prints it: ``.spec.containers[name="main"].image``."""
    out = ""
    for elem in path:
        kind, _, rest = elem.partition(":")
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            out += key_text(json.loads(rest))
        elif kind == "v":
            out += f"[={rest}]"
        else:
            out += f"[{rest}]"
    return out


class SchemaError(Exception):
    """The object does not fit the schema (unknown field, duplicate or missing list key)."""

    def __init__(self, path: FieldPath, message: str) -> None:
        super().__init__(f"{path_text(path)}: {message}" if path else message)
        self.path = path


def _is_server_meta(path: FieldPath) -> bool:
    return len(path) == 2 and path[0] == "f:metadata" and path[1][2:] in SERVER_META


def walk(obj: dict[str, Any], root: Node, *, status: bool = True) -> Iterator[tuple[FieldPath, Any, bool]]:
    """(path, value, is_leaf) for every field, set member and map-list item of ``obj``, as the
    server's typed view sees it; undeclared fields and bad list keys raise SchemaError (all
    of them, after the walk). ``apiVersion``/``kind`` and server-owned metadata are not
    fields anyone owns."""
    errors: list[SchemaError] = []
    yield from _walk(obj, root, (), status, errors)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SchemaError((), "errors:\n" + "\n".join(f"  {e}" for e in errors))


def _walk(value: Any, node: Node, path: FieldPath, status: bool,
          errors: list[SchemaError]) -> Iterator[tuple[FieldPath, Any, bool]]:
    if isinstance(value, dict) and (node.is_object or node.is_any) and value:
        for k, v in value.items():
            sub = node.field(k)
            here = (*path, f"f:{k}")
            if sub is None:
                errors.append(SchemaError(here, "field not declared in schema"))
                continue
            if (not path and k in ("apiVersion", "kind")) or (not path and k == "status" and not status) or \
                    _is_server_meta(here):
                continue
            yield from _walk(v, sub, here, status, errors)
        return
    if isinstance(value, list) and node.is_list and value:
        ltype, keys = node.list_type()
        if ltype == "atomic" or node.is_any:
            yield path, value, True
            for i, item in enumerate(value):  # still checked for undeclared fields
                for _ in _walk(item, node.items(), (*path, f"i:{i}"), status, errors):
                    pass
            return
        seen: set[PathElem] = set()
        for i, item in enumerate(value):
            if ltype == "set":
                elem = value_elem(item)
                if elem in seen:
                    errors.append(SchemaError(path, f"duplicate entries for key {elem[2:]}"))
                    continue
                seen.add(elem)
                yield (*path, elem), item, True
                continue
            key = item_key(item, keys)
            if key is None:
                missing = next(k for k in keys if not isinstance(item, dict) or k not in item)
                errors.append(SchemaError(path, f"element {i}: associative list with keys has an element that "
                                                f'omits key field "{missing}"'))
                continue
            elem = key_elem(key)
            if elem in seen:
                errors.append(SchemaError(path, f"duplicate entries for key {key_text(key)}"))
                continue
            seen.add(elem)
            yield (*path, elem), item, False
            yield from _walk(item, node.items(), (*path, elem), status, errors)
        return
    yield path, value, True


def field_set(obj: dict[str, Any], root: Node, *, status: bool = True) -> dict[FieldPath, Any]:
    """path -> value of every owned path of ``obj`` (see :func:`walk`)."""
    return {p: v for p, v, _ in walk(obj, root, status=status) if p}


def prune(obj: Any, node: Node, path: tuple[str, ...] = ()) -> tuple[Any, list[str]]:
    """(``obj`` without undeclared fields, their dotted paths) — what create/update store."""
    dropped: list[str] = []
    if isinstance(obj, dict) and (node.is_object or node.is_any):
        out = {}
        for k, v in obj.items():
            sub = node.field(k)
            where = ".".join((*path, k))
            if sub is None:
                dropped.append(where)
                continue
            out[k], more = prune(v, sub, (*path, k))
            dropped += more
        return out, dropped
    if isinstance(obj, list) and node.is_list:
        out_list = []
        for i, item in enumerate(obj):
            pruned, more = prune(item, node.items(), (*path[:-1], f"{path[-1] if path else ''}[{i}]"))
            out_list.append(pruned)
            dropped += more
        return out_list, dropped
    return obj, dropped


def fields_v1(paths: set[FieldPath]) -> dict[str, Any]:
    """The FieldsV1 JSON of a field set (``managedFields[].fieldsV1``)."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for i, elem in enumerate(path):
            node = node.setdefault(elem, {})
            if elem.startswith("k:") and i == len(path) - 1:
                node.setdefault(".", {})
    return tree


def paths_of_fields_v1(tree: dict[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    out: set[FieldPath] = set()
    for elem, sub in tree.items():
        if elem == ".":
            out.add(prefix)
            continue
        here = (*prefix, elem)
        if not sub:
            out.add(here)
        else:
            out |= paths_of_fields_v1(sub, here)
    return out
