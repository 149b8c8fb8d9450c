"""CRD schemas: CustomResourceDefinition YAML -> strict JSON schemas, found and cached.

Conversion follows kubeconform's ``openapi2jsonschema.py``, made stricter where the API
server is (``CONVERTER`` is part of every cache key):

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
* large sub-schemas that repeat (the pod template appears 3 times in a RayJob) are
  hoisted into ``definitions`` and ``$ref``'d, so their validator is generated once.

Sources, first match wins for a given ``apiVersion/Kind``: files given with ``--crd``,
then CRDs downloaded into the user cache by ``schemas fetch``, then the KubeRay, KEDA and Kueue
CRDs bundled with dockyard-k8s. A bundled CRD is registered by its files alone: copy them
verbatim into ``validate/crds/<project>-<version>/`` with a ``PROVENANCE.json`` (see the
KubeRay one), and name the project in :data:`PROJECTS` for its label
(``Kueue v0.19.2 CRD (bundled)``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate import cache

CONVERTER = "crd-3"
BUNDLED_DIR = os.path.join(os.path.dirname(__file__), "crds")
_HOIST_MIN = 2000  # characters of canonical JSON: smaller repeats are cheaper inline
_DROP = frozenset({"description", "format", "default", "example", "x-kubernetes-validations",
                   "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
                   "x-kubernetes-embedded-resource", "nullable", "externalDocs", "title", "$schema", "id"})


class CrdSchema(NamedTuple):
    """One served version of one CRD: ``api_kind`` is ``group/version/Kind``."""

    api_kind: str
    key: str
    source: str  # one line: which file (and, for bundled or fetched ones, which release)


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


def _hoist(root: dict[str, Any]) -> dict[str, Any]:
    """Replace large repeated sub-schemas by ``$ref``s to one shared definition."""
    import json

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


def _load_crd_documents(text: str, origin: str) -> list[dict[str, Any]]:
    import yaml

    loader = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    try:
        docs = list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as e:
        raise UsageError(f"--crd {origin}: not valid YAML: {str(e).splitlines()[0]}") from e
    out: list[dict[str, Any]] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            docs.extend(doc.get("items") or [])
        elif isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            out.append(doc)
    return out


def crd_schemas_of(text: str, origin: str) -> dict[str, dict[str, Any]]:
    """Every served version of every CRD in a YAML/JSON text: ``group/version/Kind`` -> schema."""
    out: dict[str, dict[str, Any]] = {}
    for crd in _load_crd_documents(text, origin):
        spec = crd.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        if not group or not kind:
            raise UsageError(f"--crd {origin}: CustomResourceDefinition without spec.group / spec.names.kind")
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema"))
            if version.get("served", True) and isinstance(schema, dict):
                out[f"{group}/{version['name']}/{kind}"] = convert_version_schema(schema, group, version["name"], kind)
    return out


def _crd_files(path: str) -> list[str]:
    if os.path.isdir(path):
        found = []
        for base, dirs, files in os.walk(path):
            dirs.sort()
            found += [os.path.join(base, f) for f in sorted(files) if f.endswith((".yaml", ".yml", ".json"))]
        return found
    return [path]


# Display names of the projects whose CRDs are bundled (validate/crds/<project>-<version>/) or
# fetched (<cache>/crds/<project>/ with a VERSION file): "KubeRay v1.7.0 CRD (bundled)".
PROJECTS = {
    "kuberay": "KubeRay",
    "keda": "KEDA",
    "kueue": "Kueue",
}


def _release_of(path: str, bundled: bool = False) -> str:
    """``KubeRay v1.7.0`` for a file in a ``kuberay-v1.7.0`` folder (``KEDA v2.20.2``, ``Kueue
    v0.19.2``...); ``<project> <version>`` for another bundled one; "" otherwise."""
    parent = os.path.basename(os.path.dirname(path))
    project, _, version = parent.partition("-")
    if version and (project in PROJECTS or bundled):
        return f"{PROJECTS.get(project, project)} {version}"
    marker = os.path.join(os.path.dirname(path), "VERSION")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            return f.read().strip()
    return ""


def fetched_dir(root: str) -> str:
    return os.path.join(root, "crds")


class CrdRegistry:
    """Finds CRD schemas by ``group/version/Kind`` across the three sources, with an on-disk memo.

    The memo maps each CRD file (by path, size and mtime) to its content hash and the kinds it
    defines, so a run whose CRDs have not changed reads no CRD YAML at all.
    """

    def __init__(self, root: str, explicit: Iterable[str] = (), *, use_fetched: bool = True,
                 use_bundled: bool = True) -> None:
        self.root = root
        self.sources: list[tuple[str, str]] = []  # (file, origin label)
        for item in explicit:
            if not os.path.exists(item):
                raise UsageError(f"--crd {item}: no such file or directory")
            files = _crd_files(item)
            if not files:
                raise UsageError(f"--crd {item}: no .yaml/.yml/.json file in the directory")
            self.sources += [(f, "--crd") for f in files]
        if use_fetched and os.path.isdir(fetched_dir(root)):
            self.sources += [(f, "fetched") for f in _crd_files(fetched_dir(root))]
        if use_bundled and os.path.isdir(BUNDLED_DIR):
            self.sources += [(f, "bundled") for f in _crd_files(BUNDLED_DIR) if not f.endswith(".json")]
        self._memo_path = os.path.join(cache.layout_dir(root), "crd-files.marshal")
        self._memo: dict[str, Any] | None = None
        self._table: dict[str, CrdSchema] | None = None
        self._built: dict[str, dict[str, Any]] = {}

    def _entries(self, file: str, origin: str) -> dict[str, str]:
        if self._memo is None:
            memo = cache.read_marshal(self._memo_path)
            self._memo = memo if isinstance(memo, dict) else {}
        st = os.stat(file)
        path = os.path.abspath(file)
        stamp = [st.st_size, st.st_mtime_ns]
        entry = self._memo.get(path)
        if entry and entry.get("stamp") == stamp and entry.get("converter") == CONVERTER:
            return dict(entry["kinds"])
        with open(file, "rb") as f:
            data = f.read()
        content = cache.digest(data)
        if entry and entry.get("sha") == content and entry.get("converter") == CONVERTER:
            kinds = dict(entry["kinds"])
        else:
            schemas = crd_schemas_of(data.decode("utf-8"), file)
            if not schemas and origin == "--crd":
                raise UsageError(f"--crd {file}: no CustomResourceDefinition in the file")
            kinds = {}
            for api_kind, schema in schemas.items():
                key = cache.digest("crd", CONVERTER, content, api_kind)
                kinds[api_kind] = key
                self._built[key] = schema
                cache.write_json(os.path.join(cache.layout_dir(self.root), "schemas", f"{key}.json"), schema)
        self._memo[path] = {"stamp": stamp, "sha": content, "converter": CONVERTER, "kinds": kinds}
        cache.write_marshal(self._memo_path, self._memo)
        return kinds

    def table(self) -> dict[str, CrdSchema]:
        """``group/version/Kind`` -> CrdSchema, first source wins."""
        if self._table is None:
            table: dict[str, CrdSchema] = {}
            for file, origin in self.sources:
                release = _release_of(file, origin == "bundled")
                label = f"{release} CRD ({origin})" if release else f"CRD {file} ({origin})"
                for api_kind, key in self._entries(file, origin).items():
                    table.setdefault(api_kind, CrdSchema(api_kind, key, label))
            self._table = table
        return self._table

    def reload(self) -> None:
        """Forget what this registry knows of its CRD files (the on-disk memo included): the next
        :meth:`table` reads and converts every file again."""
        self._memo = {}
        self._table = None

    def schema(self, key: str) -> dict[str, Any]:
        """The converted schema of a key :meth:`table` gave, for a validator cache that does not
        have it: converted in this run, or the CRD files are converted again (the cache lost it).

        Raises:
            RuntimeError: no CRD file defines it any more.
        """
        schema = self._built.get(key)
        if schema is None:
            self.reload()
            self.table()
            schema = self._built.get(key)
        if schema is None:
            raise RuntimeError(f"CRD schema {key} vanished from its source files")
        return schema
