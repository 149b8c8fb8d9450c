"""What the Ray autoscaler owns in a live RayCluster, kept when the launcher applies again.

KubeRay's CRD declares no list type for ``spec.workerGroupSpecs``, so server-side apply
treats the list as one atomic field: when the autoscaler writes one group's ``replicas`` (or
``scaleStrategy.workersToDelete``), it becomes the owner of every group. A re-apply of the
rendered replicas would then conflict (409) or, forced, undo the scaling. With
``enableInTreeAutoscaling`` the launcher applies the live replicas and scale strategy of each
group instead (kept within the new min/max), so an unchanged spec applies cleanly and a
changed one, forced, keeps the scaling.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from dockyard_k8s.errors import ClusterError

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


def explain_conflict(error: ClusterError, obj: dict[str, Any]) -> ClusterError:
    """A 409 on a RayCluster's worker groups, said as what it is (who wrote the list last)."""
    if error.status != 409 or obj.get("kind") != "RayCluster" or ".spec.workerGroupSpecs" not in str(error):
        return error
    found = _MANAGER.search(str(error))
    who = f'"{found.group(1)}"' if found else "another field manager"
    keeps = " (the replicas the autoscaler set are kept)" if autoscaled(obj) else ""
    hint = (f"spec.workerGroupSpecs is one atomic list in KubeRay's RayCluster CRD, last written by {who} "
            f"(the Ray autoscaler, kubectl edit): whoever writes one group owns them all; "
            f"re-run with --force-conflicts to apply your change{keeps}")
    return ClusterError(str(error), obj=error.obj, status=error.status, hint=hint)
