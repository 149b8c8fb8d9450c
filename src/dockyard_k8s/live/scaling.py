"""What the Ray autoscaler owns in a live RayCluster, kept when the launcher applies again.

KubeRay's CRD declares no list type for ``spec.workerGroupSpecs``, so server-side apply
treats the list as one atomic field: when the autoscaler writes one group's ``replicas`` (or
``scaleStrategy.workersToDelete``), it becomes the owner of every group. A re-apply of the
rendered replicas would then conflict (409) or, forced, undo the scaling. With
``enableInTreeAutoscaling`` the launcher applies the live replicas and scale strategy of each
group instead (kept within the new min/max), so an unchanged spec applies cleanly and a
changed one, forced, keeps the scaling.

The list has other writers too, whatever the autoscaler does: KubeRay's full Update of a RayJob
(adding its finalizer) writes it back from Go structs, and Kueue, admitting a RayJob or
RayCluster, writes its labels and annotations (``kueue.x-k8s.io/podset``, ``.../workload``) and a
flavor's node selector into each group's pod template. When every rendered group is in the live
one unchanged (their additions aside), the launcher applies the live list: an unchanged spec is
then no conflict, and what they added stays.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.client import FIELD_MANAGER
from dockyard_k8s.plain import dig

_MANAGER = re.compile(r'conflict with "([^"]+)"')


def autoscaled(obj: dict[str, Any]) -> bool:
    """A RayCluster whose worker groups the Ray autoscaler scales."""
    return obj.get("kind") == "RayCluster" and (obj.get("spec") or {}).get("enableInTreeAutoscaling") is True


def keep_autoscaled(obj: dict[str, Any], live: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, int]]:
    """(``obj`` with the live replicas and scale strategy of each autoscaled worker group,
    {group: replicas kept}); ``obj`` itself when it is no autoscaled RayCluster or not live."""
    if not autoscaled(obj) or not live:
        return obj, {}
    current = {g.get("groupName"): g for g in (live.get("spec") or {}).get("workerGroupSpecs") or []}
    out = copy.deepcopy(obj)
    kept: dict[str, int] = {}
    for group in out["spec"].get("workerGroupSpecs") or []:
        now = current.get(group.get("groupName"))
        if now is None or "replicas" not in now:
            continue
        low, high = group.get("minReplicas", 0), group.get("maxReplicas", now["replicas"])
        replicas = max(low, min(high, now["replicas"]))
        if replicas != group.get("replicas"):
            kept[group["groupName"]] = replicas
        group["replicas"] = replicas
        if "scaleStrategy" in now:
            group["scaleStrategy"] = now["scaleStrategy"]
    return out, kept


# Where the worker group list is: a RayCluster's, a RayJob's cluster spec's.
_GROUPS_AT = {"RayCluster": ("spec", "workerGroupSpecs"), "RayJob": ("spec", "rayClusterSpec", "workerGroupSpecs")}


def _groups(obj: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The worker groups of a RayCluster, or of a RayJob's cluster spec (None: neither)."""
    path = _GROUPS_AT.get(dig(obj, "kind"))
    groups = dig(obj, *path) if path else None
    return groups if isinstance(groups, list) else None


def contained(ours: Any, theirs: Any) -> bool:
    """Every value of ``ours`` is in ``theirs`` as it is: mappings may hold more keys, lists are
    the same length, item by item."""
    if isinstance(ours, dict):
        return isinstance(theirs, dict) and all(k in theirs and contained(v, theirs[k]) for k, v in ours.items())
    if isinstance(ours, list):
        return isinstance(theirs, list) and len(ours) == len(theirs) and all(
            contained(a, b) for a, b in zip(ours, theirs, strict=True))
    return bool(ours == theirs)


def groups_owner(live: dict[str, Any]) -> list[str]:
    """The field managers owning the live worker group list (managedFields)."""
    path = [f"f:{key}" for key in _GROUPS_AT[str(live.get("kind"))]]
    return [str(entry.get("manager")) for entry in dig(live, "metadata", "managedFields") or []
            if dig(entry, "fieldsV1", *path) is not None]


def keep_added(obj: dict[str, Any], live: dict[str, Any] | None) -> dict[str, Any]:
    """``obj`` with the live worker groups when another field manager wrote them last and each
    rendered group is in its live one as it is (KubeRay's and Kueue's additions aside: the
    module's docstring); else ``obj`` itself (ours to write: what the render dropped goes)."""
    ours, theirs = _groups(obj), _groups(live)
    if not ours or live is None or theirs is None or ours == theirs or not contained(ours, theirs):
        return obj
    if FIELD_MANAGER in groups_owner(live):
        return obj
    out = copy.deepcopy(obj)
    spec = out["spec"]["rayClusterSpec"] if out["kind"] == "RayJob" else out["spec"]
    spec["workerGroupSpecs"] = copy.deepcopy(theirs)
    return out


def explain_conflict(error: ClusterError, obj: dict[str, Any]) -> ClusterError:
    """A 409 on a RayCluster's (or RayJob's) worker groups, said as what it is (who wrote the
    list last)."""
    if error.status != 409 or obj.get("kind") not in ("RayCluster", "RayJob") or \
            "workerGroupSpecs" not in str(error):
        return error
    found = _MANAGER.search(str(error))
    who = f'"{found.group(1)}"' if found else "another field manager"
    keeps = " (the replicas the autoscaler set are kept)" if autoscaled(obj) else ""
    if obj.get("kind") == "RayJob":
        hint = (f"spec.rayClusterSpec.workerGroupSpecs is one atomic list in KubeRay's RayJob CRD, last written "
                f"by {who} (KubeRay, Kueue admitting the job, kubectl edit): whoever writes one group owns them "
                "all; KubeRay does not apply a changed spec to a started job: --replace starts it again with "
                "your change (--force-conflicts only writes it)")
        return ClusterError(str(error), obj=error.obj, status=error.status, hint=hint)
    hint = (f"spec.workerGroupSpecs is one atomic list in KubeRay's RayCluster CRD, last written by {who} "
            f"(the Ray autoscaler, Kueue, kubectl edit): whoever writes one group owns them all; "
            f"re-run with --force-conflicts to apply your change{keeps}")
    return ClusterError(str(error), obj=error.obj, status=error.status, hint=hint)
