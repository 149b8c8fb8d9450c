"""Fields the run renders that the cluster's CRDs may not have: which release added them, and
which rendered fields an installed CRD lacks. Pure.

A server-side apply of a custom resource with a field its installed CRD does not declare
fails as a whole (HTTP 500, ``failed to create typed patch object (...): .spec.X: field not
declared in schema``), whatever ``fieldValidation`` says; create/update would drop the field
with only a ``Warning`` header. Either way the answer is the same: name the field and the
release that has it, before anything is applied (``run``'s server dry run) or in ``doctor``.
"""

from __future__ import annotations

import re
from typing import Any

from dockyard_k8s.plain import dig

KUBERAY_KINDS = frozenset({"RayJob", "RayCluster", "RayService"})
# (kind, field path) -> (first KubeRay release whose CRD has it, the infra key that renders it).
# Read in ray-project/kuberay's ray-operator/config/crd/bases/ at every v1.x tag; a RayJob's
# rayClusterSpec has the RayCluster's spec fields.
KUBERAY_FIELDS_SINCE: dict[tuple[str, str], tuple[str, str]] = {
    ("RayJob", "spec.activeDeadlineSeconds"): ("1.1.0", "launch.activeDeadlineSeconds"),
    ("RayJob", "spec.backoffLimit"): ("1.2.0", "launch.backoffLimit"),
    ("RayJob", "spec.submitterConfig"): ("1.2.0", "launch.submitter"),
    ("RayJob", "spec.managedBy"): ("1.3.0", "kuberay.spec"),
    ("RayJob", "spec.deletionStrategy"): ("1.5.0", "launch.deletionRules"),
    ("RayJob", "spec.preRunningDeadlineSeconds"): ("1.6.0", "launch.preRunningDeadlineSeconds"),
    ("RayCluster", "spec.suspend"): ("1.1.0", "kuberay.spec"),
    ("RayCluster", "spec.workerGroupSpecs.numOfHosts"): ("1.1.0", "kuberay.spec"),
    ("RayCluster", "spec.managedBy"): ("1.3.0", "kuberay.spec"),
    ("RayCluster", "spec.gcsFaultToleranceOptions"): ("1.3.0", "kuberay.spec"),
    ("RayCluster", "spec.workerGroupSpecs.suspend"): ("1.3.0", "kuberay.spec"),
    # v1.5.1 added authOptions with `mode` only; `secretName` (which the run renders) came in v1.6.0
    ("RayCluster", "spec.authOptions"): ("1.5.1", "kuberay.auth (mode: disabled turns Ray authentication off)"),
    ("RayCluster", "spec.authOptions.secretName"): ("1.6.0",
                                                    "kuberay.auth (mode: disabled turns Ray authentication off)"),
}
_UNDECLARED = re.compile(r"(\.[^\s:]+): field not declared in schema")
_INDEX = re.compile(r"\[[^\]]*\]")


def _plain(path: str) -> str:
    """``.spec.workerGroupSpecs[0].suspend`` / ``[groupName="a"]`` -> ``spec.workerGroupSpecs.suspend``."""
    return _INDEX.sub("", path).strip(".")


def _in_cluster(kind: str, path: str) -> tuple[str, str]:
    """(kind, plain path) of a field as the table has it: a RayJob's cluster fields are the RayCluster's."""
    plain = _plain(path)
    if kind == "RayJob" and plain.startswith("spec.rayClusterSpec."):
        return "RayCluster", "spec." + plain.removeprefix("spec.rayClusterSpec.")
    return kind, plain


def since(kind: str, path: str) -> tuple[str, str] | None:
    """(release, infra key) of a field the table knows, for a RayJob's cluster fields too."""
    return KUBERAY_FIELDS_SINCE.get((kind, _plain(path))) or KUBERAY_FIELDS_SINCE.get(_in_cluster(kind, path))


def undeclared_in_message(message: str) -> list[str]:
    """Field paths a ``field not declared in schema`` error names (dotted, no list indexes)."""
    return sorted({_plain(m) for m in _UNDECLARED.findall(message)})


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _newer_inside(kind: str, path: str, release: str) -> list[tuple[str, str]]:
    """(sub-field, release) of the table's fields under ``path`` that came after ``release``:
    an object the CRD lacks whole may need a newer operator for what the run renders inside it."""
    kind, plain = _in_cluster(kind, path)
    return sorted(((f.removeprefix(plain + "."), r) for (k, f), (r, _) in KUBERAY_FIELDS_SINCE.items()
                   if k == kind and f.startswith(plain + ".") and _release(r) > _release(release)),
                  key=lambda fr: _release(fr[1]))


def explain(kind: str, fields: list[str]) -> tuple[str, str]:
    """(message, hint) for fields the installed CRD of ``kind`` lacks."""
    parts, keys, releases = [], [], []
    for field in fields:
        known = since(kind, field)
        if known:
            later = _newer_inside(kind, field, known[0])
            also = "".join(f"; its {sub} v{r}" for sub, r in later)
            parts.append(f"{field} (KubeRay v{known[0]} added it{also})")
            releases += [known[0], *(r for _, r in later)]
            keys.append(known[1])
        else:
            parts.append(field)
    message = f"the cluster's {kind} CRD has no field {', '.join(parts)}: the operator installed is older than " \
              "the fields the run renders"
    newest = max(releases, key=_release, default="")
    upgrade = f"upgrade the operator and its CRDs to KubeRay >= v{newest}" if newest else \
        "upgrade the operator's CRDs to the release the run was written for"
    unset = f", or unset {', '.join(sorted(set(keys)))}" if keys else ""
    return message, f"{upgrade}{unset} (`dockyard-k8s doctor` compares the installed CRDs with the run)"


def _declares(node: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The schema of ``key`` under an object schema node; None when undeclared."""
    props = node.get("properties") or {}
    if key in props:
        return dict(props[key])
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    if extra is True or node.get("x-kubernetes-preserve-unknown-fields"):
        return {"x-kubernetes-preserve-unknown-fields": True}
    if node.get("x-kubernetes-embedded-resource") and key in ("apiVersion", "kind", "metadata"):
        return {"x-kubernetes-preserve-unknown-fields": True}
    return None


def undeclared_fields(obj: dict[str, Any], crd: dict[str, Any]) -> list[str]:
    """Dotted paths of ``obj``'s fields the served version of ``crd`` does not declare
    (the root metadata is ObjectMeta, not the CRD's to check)."""
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    schema = next((dict(dig(v, "schema", "openAPIV3Schema") or {}) for v in dig(crd, "spec", "versions") or []
                   if v.get("name") == version), None)
    if schema is None:
        return []
    out: list[str] = []

    def walk(value: Any, node: dict[str, Any], path: str) -> None:
        if node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node:
            return
        if isinstance(value, dict):
            for key, sub in value.items():
                here = f"{path}.{key}" if path else key
                if not path and key in ("apiVersion", "kind", "metadata"):
                    continue
                child = _declares(node, key)
                if child is None:
                    out.append(here)
                else:
                    walk(sub, child, here)
        elif isinstance(value, list):
            for item in value:
                walk(item, dict(node.get("items") or {"x-kubernetes-preserve-unknown-fields": True}), path)

    walk({k: v for k, v in obj.items() if k != "status"}, schema, "")
    return sorted(set(out))
