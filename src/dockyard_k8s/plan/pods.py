"""The pods a run would create, grouped the way the report shows them.

One :class:`Group` per pod template: a Deployment's replicas, a RayJob's head, each worker
group (replicas x numOfHosts) and the submitter, a Job's parallelism. GPU groups of one
RayCluster form a gang: the run can start only when all of them (and the head) are placed.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dockyard_k8s.kube import GPU_RESOURCES, as_mapping, container_requests, parse_quantity, pod_templates
from dockyard_k8s.plan.inventory import pod_units
from dockyard_k8s.plan.predicates import Requirements
from dockyard_k8s.plan.units import to_units

GANG_KINDS = ("RayJob", "RayCluster", "MPIJob")


@dataclass(frozen=True, slots=True)
class Group:
    name: str  # "RayJob rl/grpo-swe trainer"
    object: str  # "RayJob rl/grpo-swe"
    kind: str
    template: str  # group name inside the object ("" for single-template kinds)
    namespace: str
    replicas: int
    spec: dict[str, Any]
    req: Requirements
    gpus: int
    gang: str | None  # the object ref when the group is part of a RayCluster gang


def _limits(spec: dict[str, Any]) -> dict[str, Fraction]:
    """Effective pod limits (quota's limits.*): like requests, without request defaulting."""
    total: dict[str, Fraction] = {}
    for field, combine in (("containers", operator.add), ("initContainers", max)):
        for c in spec.get(field) or []:
            for k, v in as_mapping(as_mapping((c or {}).get("resources")).get("limits")).items():
                if (q := parse_quantity(v)) is not None:
                    total[str(k)] = combine(total.get(str(k), Fraction(0)), q)
    return total


def quota_usage(spec: dict[str, Any]) -> dict[str, int]:
    """What one pod charges against a ResourceQuota (resource names as quotas spell them)."""
    usage = {"pods": 1, "count/pods": 1}
    for k, v in pod_units(spec).items():
        usage[f"requests.{k}"] = v
        if k in ("cpu", "memory", "ephemeral-storage"):
            usage[k] = v
    for k, q in _limits(spec).items():
        usage[f"limits.{k}"] = to_units(k, q)
    return usage


def missing_for_quota(spec: dict[str, Any], tracked: set[str]) -> dict[str, list[str]]:
    """Quota-tracked compute resources some container does not specify: {resource: [containers]}."""
    out: dict[str, list[str]] = {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(c, dict):
            continue
        requests = container_requests(c)
        limits = as_mapping(as_mapping(c.get("resources")).get("limits"))
        for r in ("cpu", "memory"):
            if ({r, f"requests.{r}"} & tracked) and r not in requests:
                out.setdefault(f"requests.{r}", []).append(str(c.get("name")))
            if f"limits.{r}" in tracked and r not in limits:
                out.setdefault(f"limits.{r}", []).append(str(c.get("name")))
    return out


def apply_limit_ranges(spec: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod spec after the LimitRanger admission plugin fills container defaults."""
    items = [i for lr in limit_ranges for i in ((lr.get("spec") or {}).get("limits") or [])
             if isinstance(i, dict) and i.get("type", "Container") == "Container"]
    if not items:
        return spec
    out = dict(spec)
    for field in ("initContainers", "containers"):
        new = []
        for c in spec.get(field) or []:
            c = dict(c or {})
            res = dict(c.get("resources") or {})
            limits, requests = dict(res.get("limits") or {}), dict(res.get("requests") or {})
            for item in items:
                for k, v in (item.get("default") or {}).items():
                    limits.setdefault(k, v)
                for k, v in (item.get("defaultRequest") or item.get("default") or {}).items():
                    if k not in requests and k not in (res.get("limits") or {}):
                        requests.setdefault(k, v)
            c["resources"] = {**res, "limits": limits, "requests": requests}
            new.append(c)
        if field in spec:
            out[field] = new
    return out


def _ref(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    return f"{obj.get('kind')} {ns}/{meta.get('name')}", ns


def scaled_replicas(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """(namespace, kind, name) -> the most replicas a KEDA ScaledObject may scale it to."""
    out: dict[tuple[str, str, str], int] = {}
    for obj in objects:
        if obj.get("kind") != "ScaledObject":
            continue
        spec = as_mapping(obj.get("spec"))
        target, top = spec.get("scaleTargetRef"), spec.get("maxReplicaCount", 100)  # KEDA's default maximum
        if isinstance(top, int) and isinstance(target, dict) and target.get("name"):
            out[(_ref(obj)[1], str(target.get("kind") or "Deployment"), str(target["name"]))] = top
    return out


def groups_of(objects: list[dict[str, Any]]) -> list[Group]:
    """The pod groups of ``objects`` in the order pods are created: apply order, then the
    order of templates inside an object (head, workers, submitter). A workload a KEDA
    ScaledObject scales is planned at the ScaledObject's maximum: will it fit scaled out?"""
    limit_ranges = [o for o in objects if o.get("kind") == "LimitRange"]
    scaled = scaled_replicas(objects)
    out = []
    for obj in objects:
        ref, ns = _ref(obj)
        kind = str(obj.get("kind"))
        for t in pod_templates(obj):
            if t.replicas is None:
                continue  # DaemonSet: one per node, not planned
            replicas = scaled.get((ns, kind, str((obj.get("metadata") or {}).get("name"))), t.replicas)
            spec = apply_limit_ranges(t.spec, [lr for lr in limit_ranges if _ref(lr)[1] == ns])
            labels = {str(k): str(v) for k, v in (t.metadata.get("labels") or {}).items()}
            units = pod_units(spec)
            gpus = sum(units.get(r, 0) for r in GPU_RESOURCES)
            gang = ref if kind in GANG_KINDS and t.group != "submitter" else None
            name = f"{ref} {t.group}" if t.group else ref
            out.append(Group(name, ref, kind, t.group, ns, replicas, spec,
                             Requirements.from_pod(spec, labels, ns, units), gpus, gang))
    return out
