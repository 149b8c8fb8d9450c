"""Builders of Kueue objects and queued jobs for the quota tests (plain dicts, as kubectl prints them)."""

from __future__ import annotations

from typing import Any

API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"


def flavor(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
           topology: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cq(name: str, flavors: dict[str, dict[str, Any]], *, cohort: str | None = None,
       covered: list[str] | None = None, selector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """flavors: {flavor: {resource: nominal | (nominal, borrowingLimit, lendingLimit)}} in order."""
    covered = covered or sorted({r for quotas in flavors.values() for r in quotas})
    groups = []
    for fname, quotas in flavors.items():
        resources = []
        for res in covered:
            q = quotas.get(res, 0)
            nominal, borrow, lend = q if isinstance(q, tuple) else (q, None, None)
            entry: dict[str, Any] = {"name": res, "nominalQuota": nominal}
            if borrow is not None:
                entry["borrowingLimit"] = borrow
            if lend is not None:
                entry["lendingLimit"] = lend
            resources.append(entry)
        groups.append({"name": fname, "resources": resources})
    body: dict[str, Any] = {"namespaceSelector": {} if selector is None else selector,
                            "resourceGroups": [{"coveredResources": covered, "flavors": groups}], **spec}
    if cohort:
        body["cohortName"] = cohort
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def lq(name: str, cluster_queue: str, namespace: str = "team") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue}}


def admitted(name: str, cluster_queue: str, usage: dict[str, tuple[str, Any]], priority: int = 0,
             namespace: str = "other", created: str = "2025-01-01T00:00:00Z") -> dict[str, Any]:
    """A Workload holding quota: usage {resource: (flavor, amount)}."""
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
            "spec": {"priority": priority, "queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                       "admission": {"clusterQueue": cluster_queue, "podSetAssignments": [{
                           "name": "main", "count": 1, "flavors": {r: f for r, (f, _) in usage.items()},
                           "resourceUsage": {r: str(a) for r, (_, a) in usage.items()}}]}}}


def container(cpu: str, memory: str, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, **({GPU: str(gpus)} if gpus else {}), **extra}
    return {"name": "c", "image": "x:1", "resources": {"requests": dict(res), "limits": dict(res)}}


def rayjob(*, queue: str = "q", trainer: int = 2, inference: int = 1, gpus: int = 8, name: str = "run",
           namespace: str = "team", head_selector: dict[str, str] | None = None,
           gpu_selector: dict[str, str] | None = None, annotations: dict[str, dict[str, str]] | None = None,
           labels: dict[str, str] | None = None, priority_class: str | None = None, **extra: Any) -> dict[str, Any]:
    annotations = annotations or {}

    def template(group: str, c: dict[str, Any], selector: dict[str, str] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [c]}
        if selector:
            spec["nodeSelector"] = selector
        if priority_class:
            spec["priorityClassName"] = priority_class
        if group != "head" and gpus:
            spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
        meta: dict[str, Any] = {"labels": {"dockyard-k8s/fleet": group}}
        if group in annotations:
            meta["annotations"] = annotations[group]
        return {"metadata": meta, "spec": spec}

    workers = [{"groupName": g, "replicas": n, "rayStartParams": {},
                "template": template(g, container("32", "256Gi", gpus, **extra), gpu_selector)}
               for g, n in (("trainer", trainer), ("inference", inference))]
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": queue, **(labels or {})}},
            "spec": {"entrypoint": "x", "shutdownAfterJobFinishes": True, "submissionMode": "K8sJobMode",
                     "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": template(
                         "head", container("8", "32Gi"), head_selector)}, "workerGroupSpecs": workers},
                     "submitterPodTemplate": template("submitter", container("500m", "200Mi"), None)}}


def standard(**cq_spec: Any) -> list[dict[str, Any]]:
    """A cpu flavor first (no GPUs), then h100; LocalQueue q in namespace team -> ClusterQueue team-a."""
    return [flavor("cpu"), flavor("h100", {"node.kubernetes.io/instance-type": "p5.48xlarge"}),
            cq("team-a", {"cpu": {"cpu": 64, "memory": "512Gi", GPU: 0},
                          "h100": {"cpu": 600, "memory": "4Ti", GPU: cq_spec.pop("gpus", 24)}}, **cq_spec),
            lq("q", "team-a")]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]
