"""Built-in Kubernetes schemas, read as data from the ``kubernetes-validate`` package.

kubernetes-validate ships strict JSON schemas per Kubernetes minor version
(``kubernetes-json-schema/v1.29.0-local-strict/``): every object with ``properties`` has
``additionalProperties: false`` and each schema ``$ref``s into one shared
``_definitions.json``. We never import the package (its import pulls in ``jsonschema``,
a large part of a ``check``): we locate its data with ``importlib.util.find_spec`` and build, per kind, one
self-contained schema holding only the definitions that kind reaches.

Conversion (``CONVERTER``) — each change bumps the version so caches are rebuilt:

* ``$ref: /api/_definitions.json#/$defs/X`` -> ``#/definitions/X`` (local, draft-07);
* IntOrString / Quantity ``oneOf`` -> one ``type`` list: faster, and the strict schemas'
  ``oneOf`` of two nullable types wrongly rejects an explicit ``null``;
* annotations (``description``, ``format``, ``x-kubernetes-*``) dropped: they do not
  validate and would only bloat the generated code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate import cache

CONVERTER = "builtin-3"
DEFAULT_KUBERNETES_VERSION = "1.29"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# Definitions replaced wholesale (see the module docstring).
_REPLACED = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": ["string", "integer", "null"]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": ["string", "number", "null"]},
}
# Keys that only annotate a schema.
_ANNOTATIONS = frozenset({"description", "format", "x-kubernetes-group-version-kind", "x-kubernetes-list-type",
                          "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-map-type",
                          "x-kubernetes-list-map-keys", "x-kubernetes-unions", "$schema", "$id", "default"})
_VERSION_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")


class SchemaSet:
    """The strict schemas of one Kubernetes minor version inside kubernetes-validate."""

    def __init__(self, directory: str, package_version: str, kubernetes_version: str) -> None:
        self.directory = directory
        self.package_version = package_version
        self.kubernetes_version = kubernetes_version  # "1.29"
        self._index: dict[str, str] | None = None

    @property
    def label(self) -> str:
        return f"Kubernetes {self.kubernetes_version} strict schemas (kubernetes-validate {self.package_version})"

    def index(self, root: str) -> dict[str, str]:
        """``apiVersion/Kind`` -> definition name, cached on disk (building it reads 1.8 MB of JSON)."""
        if self._index is None:
            path = os.path.join(cache.layout_dir(root), "builtin",
                                f"{self.package_version}-{os.path.basename(self.directory)}-{CONVERTER}.marshal")
            index = cache.read_marshal(path)
            if not isinstance(index, dict):
                index = {}
                for name, definition in self._definitions().items():
                    for gvk in definition.get("x-kubernetes-group-version-kind") or []:
                        api = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
                        # kubernetes-validate lists meta kinds (DeleteOptions, WatchEvent) under every
                        # group; keep the first definition so the index stays deterministic.
                        index.setdefault(f"{api}/{gvk['kind']}", name)
                cache.write_marshal(path, index)
            self._index = index
        return self._index

    def key(self, definition: str) -> str:
        """Cache key of one kind's converted schema: the package files never change within a version,
        so the key names them (readable, and no hashing on the start-up path)."""
        return f"k8s-{self.kubernetes_version}-kv{self.package_version}-{definition}-{CONVERTER}"

    def _definitions(self) -> dict[str, Any]:
        with open(os.path.join(self.directory, "_definitions.json"), encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)["$defs"]
        return data

    def build(self, definition: str) -> dict[str, Any]:
        """The self-contained, converted schema of one definition (a kind, or ObjectMeta)."""
        defs = self._definitions()
        used: set[str] = set()
        root = _convert(defs[definition], used)
        out: dict[str, Any] = {}
        todo = sorted(used)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            found: set[str] = set()
            out[name] = _REPLACED.get(name) or _convert(defs[name], found)
            todo.extend(sorted(found - out.keys()))
        root["definitions"] = dict(sorted(out.items()))
        return root


def _convert(node: Any, used: set[str]) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue
            if key == "$ref":
                name = value.rsplit("/", 1)[1]
                used.add(name)
                out[key] = f"#/definitions/{name}"
            elif key in ("properties", "patternProperties", "definitions", "$defs"):
                out[key] = {k: _convert(v, used) for k, v in value.items()}
            else:
                out[key] = _convert(value, used)
        return out
    if isinstance(node, list):
        return [_convert(item, used) for item in node]
    return node


def _package_dir() -> str | None:
    try:
        spec = importlib.util.find_spec("kubernetes_validate")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


def _package_version(package: str) -> str:
    try:
        with open(os.path.join(package, "version.py"), encoding="utf-8") as f:
            m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
    except OSError:
        m = None
    return m.group(1) if m else "unknown"


def parse_kubernetes_version(text: str) -> tuple[int, int]:
    """``"1.29"``, ``"v1.29.3"`` -> (1, 29); UsageError otherwise."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", text.strip())
    if not m:
        raise UsageError(f"--kubernetes-version {text!r}: expected MAJOR.MINOR such as 1.29")
    return int(m.group(1)), int(m.group(2))


def available_versions() -> list[str]:
    """Kubernetes minor versions kubernetes-validate ships strict schemas for, oldest first."""
    package = _package_dir()
    if package is None:
        return []
    entries = os.listdir(os.path.join(package, "kubernetes-json-schema"))
    found = sorted((int(m[1]), int(m[2])) for entry in entries if (m := _VERSION_DIR.match(entry)))
    return [f"{a}.{b}" for a, b in found]


def schema_set(kubernetes_version: str = DEFAULT_KUBERNETES_VERSION) -> SchemaSet | None:
    """The newest strict schema set not newer than ``kubernetes_version`` (None without the package).

    Raises:
        UsageError: a malformed version, or one older/newer than every shipped set.
    """
    wanted = parse_kubernetes_version(kubernetes_version)
    package = _package_dir()
    if package is None:
        return None
    versions = available_versions()
    usable = [v for v in versions if tuple(map(int, v.split("."))) <= wanted]
    if not usable or wanted > tuple(map(int, versions[-1].split("."))):
        raise UsageError(f"--kubernetes-version {kubernetes_version}: kubernetes-validate "
                         f"{_package_version(package)} has schemas for {versions[0]} to {versions[-1]}")
    chosen = usable[-1]
    directory = os.path.join(package, "kubernetes-json-schema", f"v{chosen}.0-local-strict")
    return SchemaSet(directory, _package_version(package), chosen)
