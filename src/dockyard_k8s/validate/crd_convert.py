"""CRD YAML -> strict JSON schemas: how a CustomResourceDefinition's versions are converted.

Conversion follows kubeconform's ``openapi2jsonschema.py``, made stricter where the API
server is (``crd.CONVERTER`` is part of every cache key: bump it when the output changes):

* ``additionalProperties: false`` on every object schema with ``properties`` — **including
  the root**, so a typo at ``spec`` level is caught — unless it declares
  ``x-kubernetes-preserve-unknown-fields: true`` or its own ``additionalProperties``;
* int-or-string (``x-kubernetes-int-or-string: true``, which controller-gen writes as
  ``anyOf: [{type: integer}, {type: string}]``) -> ``type: [integer, string]``: same
  meaning, and many times faster compiled (161 such nodes in the RayJob CRD);
* ``nullable: true`` -> ``null`` added to ``type``;
* the root gets ``apiVersion``/``kind`` pinned to the CRD's group/version/kind, and
  ``metadata`` is checked separately against the built-in ObjectMeta schema;
* ``x-kubernetes-validations`` (CEL), ``format`` and ``default`` are dropped: CEL needs
  a CEL engine, and formats are annotations in JSON Schema;
* a ``pattern`` is Go regexp syntax: a flag group past the start (``^(?i)[a-z]...`` in
  Kueue's AdmissionCheck) becomes Python's scoped ``(?i:...)``; one Python cannot compile
  even then is dropped (the API server still checks it);
* large sub-schemas that repeat (the pod template appears 3 times in a RayJob) are
  hoisted into ``definitions`` and ``$ref``'d, so their validator is generated once.

CRD files are read as kubectl reads manifests (:mod:`.reader`: go-yaml's scalars, duplicate
keys refused). Only a validator cache that lacks a schema needs this module (:mod:`.crd`
imports it then): a warm ``check`` does not load it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate import cache
from dockyard_k8s.validate.reader import documents_of

Version = tuple[dict[str, Any], str, str, str]  # openAPIV3Schema, group, version, kind: convert_version_schema's

_HOIST_MIN = 200  # characters of canonical JSON: smaller repeats stay inline (bench/README.md, "hoisting")
_DROP = frozenset({"description", "format", "default", "example", "x-kubernetes-validations",
                   "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
                   "x-kubernetes-embedded-resource", "nullable", "externalDocs", "title", "$schema", "id"})


def convert_version_schema(schema: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    """A CRD version's ``openAPIV3Schema`` -> a strict, self-contained JSON schema."""
    root = _convert(schema, True)
    props = root.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "enum": [f"{group}/{version}"]}
    props["kind"] = {"type": "string", "enum": [kind]}
    props["metadata"] = {"type": "object"}  # checked against ObjectMeta by the engine
    root["type"] = "object"
    root.setdefault("additionalProperties", False)
    return _hoist(root)


def _convert(node: Any, root: bool = False) -> Any:
    if isinstance(node, list):
        return [_convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    for key, value in node.items():
        if key in _DROP or (int_or_string and key in ("anyOf", "oneOf", "type")):
            continue
        if key == "properties":
            out[key] = {name: _convert(sub) for name, sub in value.items()}
        elif key == "pattern" and isinstance(value, str):
            pattern = python_pattern(value)
            try:
                re.compile(pattern)
            except re.error:
                continue
            out[key] = pattern
        else:
            out[key] = _convert(value)
    if int_or_string:
        out["type"] = ["integer", "string"]
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if node.get("x-kubernetes-embedded-resource") is True and "properties" in out:
        for name in ("apiVersion", "kind"):
            out["properties"].setdefault(name, {"type": "string"})
        out["properties"].setdefault("metadata", {"type": "object"})
    if "properties" in out and not preserve and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


_FLAG_GROUP = re.compile(r"\(\?([ims]+)\)")


def python_pattern(go: str) -> str:
    """A Go regexp as Python reads it: Go applies a flag group ``(?i)`` from where it stands to the end
    of the enclosing group, Python takes one only at the start; a top-level one past the start becomes
    the scoped ``(?i:rest)``. Anything else is returned as it is."""
    i, depth, in_class = 0, 0, False
    while i < len(go):
        c = go[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            negated = go[i + 1:i + 2] == "^"
            i += 1 + negated + (go[i + 1 + negated:i + 2 + negated] == "]")  # a ] first in a class is a literal
            continue
        elif c == "(":
            flags = _FLAG_GROUP.match(go, i)
            if flags and depth == 0 and i > 0:
                return f"{go[:i]}(?{flags.group(1)}:{python_pattern(go[flags.end():])})"
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return go


def _hoist(root: dict[str, Any]) -> dict[str, Any]:
    """Replace large repeated sub-schemas by ``$ref``s to one shared definition."""
    counts: dict[str, int] = {}
    canon: dict[int, str] = {}

    def text(node: Any) -> str:
        if isinstance(node, dict):
            s = "{" + ",".join(json.dumps(k) + ":" + text(v) for k, v in sorted(node.items())) + "}"
            canon[id(node)] = s
            if len(s) >= _HOIST_MIN:
                counts[s] = counts.get(s, 0) + 1
            return s
        if isinstance(node, list):
            return "[" + ",".join(text(v) for v in node) + "]"
        return json.dumps(node)

    text(root)
    repeated = {s for s, n in counts.items() if n > 1}
    if not repeated:
        return root
    names: dict[str, str] = {}
    definitions: dict[str, Any] = {}

    def replace(node: Any, top: bool) -> Any:
        if isinstance(node, dict):
            s = canon.get(id(node))
            if not top and s in repeated:
                name = names.get(s)
                if name is None:
                    name = names[s] = f"s{cache.digest(s)[:12]}"
                    definitions[name] = replace(node, True)
                return {"$ref": f"#/definitions/{name}"}
            return {k: (replace(v, False) if k != "properties" else
                        {p: replace(sv, False) for p, sv in v.items()}) for k, v in node.items()}
        if isinstance(node, list):
            return [replace(v, False) for v in node]
        return node

    out = replace(root, True)
    out["definitions"] = dict(sorted(definitions.items()))
    return dict(out)


def crd_schemas_of(text: str, origin: str) -> dict[str, dict[str, Any]]:
    """Every served version of every CRD in a YAML/JSON text: ``group/version/Kind`` -> schema."""
    return {api_kind: convert_version_schema(*version) for api_kind, version in served_versions(text, origin).items()}


def served_versions(text: str, origin: str) -> dict[str, Version]:
    """Every served version of every CRD in a text (read as kubectl reads it: :mod:`.reader`), not
    yet converted: ``group/version/Kind`` -> the arguments of :func:`convert_version_schema`."""
    docs, problems = documents_of(origin, text)
    if problems:
        raise UsageError(f"--crd {origin}{f':{problems[0].line}' if problems[0].line else ''}: {problems[0].message}")
    out: dict[str, Version] = {}
    for crd in (d.obj for d in docs if isinstance(d.obj, dict) and d.obj.get("kind") == "CustomResourceDefinition"):
        spec = crd.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        if not group or not kind:
            raise UsageError(f"--crd {origin}: CustomResourceDefinition without spec.group / spec.names.kind")
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema"))
            if version.get("served", True) and isinstance(schema, dict):
                out[f"{group}/{version['name']}/{kind}"] = (schema, group, version["name"], kind)
    return out
