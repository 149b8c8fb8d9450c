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

CRD files are read as kubectl reads manifests (:mod:`.reader`: go-yaml's scalars, duplicate
keys refused). Sources, first match wins for a given ``apiVersion/Kind``: files given with
``--crd``, then CRDs downloaded into the user cache by ``schemas fetch``, then the KubeRay, KEDA
and Kueue CRDs bundled with dockyard-k8s. A bundled CRD is registered by its files alone: copy them
verbatim into ``validate/crds/<project>-<version>/`` with a ``PROVENANCE.json`` (see the
KubeRay one), and name the project in :data:`PROJECTS` for its label
(``Kueue v0.19.2 CRD (bundled)``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from dockyard_k8s.errors import UsageError
from dockyard_k8s.plain import Record
from dockyard_k8s.validate import cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

    _Version = tuple[dict[str, Any], str, str, str]  # openAPIV3Schema, group, version, kind: convert_version_schema's

CONVERTER = "crd-4"
BUNDLED_DIR = os.path.join(os.path.dirname(__file__), "crds")
_HOIST_MIN = 2000  # characters of canonical JSON: smaller repeats are cheaper inline
_DROP = frozenset({"description", "format", "default", "example", "x-kubernetes-validations",
                   "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
                   "x-kubernetes-embedded-resource", "nullable", "externalDocs", "title", "$schema", "id"})


class CrdSchema(Record):
    """One served version of one CRD: ``api_kind`` is ``group/version/Kind``."""

    __slots__ = ("api_kind", "key", "source")

    def __init__(self, api_kind: str, key: str, source: str) -> None:
        self.api_kind = api_kind
        self.key = key
        self.source = source  # one line: which file (and, for bundled or fetched ones, which release)


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
    """The CustomResourceDefinitions of a file, read as kubectl reads it (:mod:`.reader`)."""
    from dockyard_k8s.validate.reader import documents_of

    docs, problems = documents_of(origin, text)
    if problems:
        first = problems[0]
        raise UsageError(f"--crd {origin}{f':{first.line}' if first.line else ''}: {first.message}")
    return [d.obj for d in docs if isinstance(d.obj, dict) and d.obj.get("kind") == "CustomResourceDefinition"]


def crd_schemas_of(text: str, origin: str) -> dict[str, dict[str, Any]]:
    """Every served version of every CRD in a YAML/JSON text: ``group/version/Kind`` -> schema."""
    return {api_kind: convert_version_schema(*version) for api_kind, version in _served_versions(text, origin).items()}


def _served_versions(text: str, origin: str) -> dict[str, _Version]:
    """Every served version of every CRD in a text, not yet converted: ``group/version/Kind`` ->
    the arguments of :func:`convert_version_schema`."""
    out: dict[str, _Version] = {}
    for crd in _load_crd_documents(text, origin):
        spec = crd.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        if not group or not kind:
            raise UsageError(f"--crd {origin}: CustomResourceDefinition without spec.group / spec.names.kind")
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema"))
            if version.get("served", True) and isinstance(schema, dict):
                out[f"{group}/{version['name']}/{kind}"] = (schema, group, version["name"], kind)
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
    defines, so a run whose CRDs have not changed reads no CRD YAML at all. A lookup reads the
    fetched and bundled files in order only until one defines the kind (``--crd`` files are all
    read: a bad one is an error even when unused), and a schema is converted only when its
    validator is not in the cache: a first run that checks a RayJob never parses Kueue's CRDs.
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
        self._kinds: dict[str, dict[str, CrdSchema]] = {}  # file -> what it defines, once per process
        self._versions: dict[str, _Version] = {}  # key -> the version as parsed, for schema()
        self._built: dict[str, dict[str, Any]] = {}  # key -> converted schema

    def _entries(self, file: str, origin: str) -> dict[str, CrdSchema]:
        """The kinds ``file`` defines (from the memo, or read now), each with its key and label."""
        found = self._kinds.get(file)
        if found is not None:
            return found
        if self._memo is None:
            memo = cache.read_marshal(self._memo_path)
            self._memo = memo if isinstance(memo, dict) else {}
        st = os.stat(file)
        path = os.path.abspath(file)
        stamp = [st.st_size, st.st_mtime_ns]
        entry = self._memo.get(path)
        if entry and entry.get("stamp") == stamp and entry.get("converter") == CONVERTER:
            kinds = dict(entry["kinds"])
        else:
            kinds = self._read(file, origin, path, stamp, entry)
        release = _release_of(file, origin == "bundled")
        label = f"{release} CRD ({origin})" if release else f"CRD {file} ({origin})"
        found = self._kinds[file] = {api_kind: CrdSchema(api_kind, key, label) for api_kind, key in kinds.items()}
        return found

    def _read(self, file: str, origin: str, path: str, stamp: list[int], entry: Any) -> dict[str, str]:
        """Read a CRD file the memo does not know as it is now, and remember what it defines."""
        assert self._memo is not None
        with open(file, "rb") as f:
            data = f.read()
        content = cache.digest(data)
        if entry and entry.get("sha") == content and entry.get("converter") == CONVERTER:
            kinds = dict(entry["kinds"])  # touched, not changed
        else:
            versions = _served_versions(data.decode("utf-8"), file)
            if not versions and origin == "--crd":
                raise UsageError(f"--crd {file}: no CustomResourceDefinition in the file")
            kinds = {}
            for api_kind, version in versions.items():
                key = kinds[api_kind] = cache.digest("crd", CONVERTER, content, api_kind)
                self._versions[key] = version
        self._memo[path] = {"stamp": stamp, "sha": content, "converter": CONVERTER, "kinds": kinds}
        cache.write_marshal(self._memo_path, self._memo)
        return kinds

    def find(self, api_kind: str) -> CrdSchema | None:
        """The schema of ``group/version/Kind``: the first source that defines it wins."""
        found = None
        for file, origin in self.sources:
            if found is not None and origin != "--crd":
                break  # every --crd file is read (a bad one is an error), the others only until found
            here = self._entries(file, origin).get(api_kind)
            found = found or here
        return found

    def table(self) -> dict[str, CrdSchema]:
        """``group/version/Kind`` -> CrdSchema of every source (first source wins); reads them all."""
        table: dict[str, CrdSchema] = {}
        for file, origin in self.sources:
            for api_kind, found in self._entries(file, origin).items():
                table.setdefault(api_kind, found)
        return table

    def reload(self) -> None:
        """Forget what this registry knows of its CRD files (the on-disk memo included): the next
        lookup reads them again."""
        self._memo = {}
        self._kinds = {}

    def schema(self, key: str) -> dict[str, Any]:
        """The converted schema of a key :meth:`find` gave, for a validator cache that does not
        have it: converted now from the file as read in this run, or after reading the CRD files
        again (the memo knew them).

        Raises:
            RuntimeError: no CRD file defines it any more.
        """
        schema = self._built.get(key)
        if schema is None:
            version = self._versions.get(key)
            if version is None:
                self.reload()
                self.table()
                version = self._versions.get(key)
            if version is None:
                raise RuntimeError(f"CRD schema {key} vanished from its source files")
            schema = self._built[key] = convert_version_schema(*version)
        return schema
