"""CRD schemas found and cached: which CustomResourceDefinition defines a ``group/version/Kind``.

Sources, first match wins for a given ``apiVersion/Kind``: files given with ``--crd``, then CRDs
downloaded into the user cache by ``schemas fetch``, then the KubeRay, KEDA and Kueue CRDs
bundled with dockyard-k8s. A bundled CRD is registered by its files alone: copy them verbatim
into ``validate/crds/<project>-<version>/`` with a ``PROVENANCE.json`` (see the KubeRay one),
and name the project in :data:`PROJECTS` for its label (``Kueue v0.19.2 CRD (bundled)``).
How a CRD's versions become strict JSON schemas is :mod:`.crd_convert`, used only when a
schema must be converted (a cold validator cache).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate import cache, crd_convert
from dockyard_k8s.validate.reader import manifest_files

if TYPE_CHECKING:
    from dockyard_k8s.validate.crd_convert import Version

CONVERTER = "crd-6"  # in every cache key: bump it when crd_convert.py's output changes
BUNDLED_DIR = os.path.join(os.path.dirname(__file__), "crds")


@dataclass(frozen=True, slots=True)
class CrdSchema:
    """One served version of one CRD (the registry keys it by ``group/version/Kind``)."""

    key: str  # of its converted schema and validator in the cache
    source: str  # one line: which file (and, for bundled or fetched ones, which release)


def _crd_files(path: str) -> list[str]:
    """A ``--crd`` file, or a directory's manifests as ``validate`` reads them: kubebuilder's
    ``config/crd`` (its kustomization.yaml lists files) and no dot-directory (a ``schemas fetch``
    staging folder)."""
    return manifest_files([path]) if os.path.isdir(path) else [path]


# Display names of the projects whose CRDs are bundled (validate/crds/<project>-<version>/) or
# fetched (<cache>/crds/<project>/ with a VERSION file): "KubeRay v1.7.0 CRD (bundled)".
PROJECTS = {
    "kuberay": "KubeRay",
    "keda": "KEDA",
    "kueue": "Kueue",
    "prometheus": "prometheus-operator",
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
        self._versions: dict[str, Version] = {}  # key -> the version as parsed, for schema()
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
        found = self._kinds[file] = {api_kind: CrdSchema(key, label) for api_kind, key in kinds.items()}
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
            versions = crd_convert.served_versions(data.decode("utf-8"), file)
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
            if version is None:  # forget the memo and read every file again
                self._memo, self._kinds = {}, {}
                self.table()
                version = self._versions.get(key)
            if version is None:
                raise RuntimeError(f"CRD schema {key} vanished from its source files")

            schema = self._built[key] = crd_convert.convert_version_schema(*version)
        return schema
