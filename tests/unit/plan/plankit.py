"""Builders for plan tests: nodes as `kubectl get nodes -o yaml` gives them, and workloads.

(A plain module, not conftest.py: tests import these builders by name.)
"""

from __future__ import annotations

from typing import Any


def node(name: str, cpu: str = "8", memory: str = "32Gi", gpus: int = 0, pods: int = 110,
         labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         unschedulable: bool = False) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": alloc, "capacity": alloc}}


def container(cpu: str = "1", memory: str = "1Gi", gpus: int = 0, name: str = "c") -> dict[str, Any]:
    limits: dict[str, Any] = {"memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"name": name, "image": "x:1", "resources": {"requests": {"cpu": cpu, "memory": memory},
                                                        "limits": limits}}


def deployment(name: str, replicas: int, ns: str = "team", **pod: Any) -> dict[str, Any]:
    c = pod.pop("container", None) or container()
    labels = pod.pop("labels", {"app": name})
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [c], **pod}}}}


def rayjob(name: str = "run", ns: str = "team", trainer: int = 2, inference: int = 1, gpus: int = 8,
           tolerate: bool = True, submitter: bool = True) -> dict[str, Any]:
    gpu_pool = {"pool": "gpu"}
    tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}] if tolerate else []

    def tpl(c: dict[str, Any], role: str, **extra: Any) -> dict[str, Any]:
        return {"metadata": {"labels": {"role": role}}, "spec": {"containers": [c], **extra}}

    spec: dict[str, Any] = {"rayClusterSpec": {
        "headGroupSpec": {"template": tpl(container("4", "16Gi"), "head", nodeSelector={"pool": "cpu"})},
        "workerGroupSpecs": [
            {"groupName": "trainer", "replicas": trainer,
             "template": tpl(container("60", "400Gi", gpus), "trainer", tolerations=tol, nodeSelector=gpu_pool)},
            {"groupName": "inference", "replicas": inference,
             "template": tpl(container("60", "400Gi", gpus), "inference", tolerations=tol, nodeSelector=gpu_pool)},
        ]}}
    if submitter:
        spec["submitterPodTemplate"] = tpl(container("500m", "200Mi"), "submitter", nodeSelector={"pool": "cpu"})
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": ns}, "spec": spec}


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def gpu_nodes(n: int, gpus: int = 8, taint: bool = True) -> list[dict[str, Any]]:
    return [node(f"gpu-{i}", "96", "1000Gi", gpus, labels={"pool": "gpu"}, taints=[GPU_TAINT] if taint else None)
            for i in range(n)]


def cpu_nodes(n: int) -> list[dict[str, Any]]:
    return [node(f"cpu-{i}", "32", "128Gi", labels={"pool": "cpu"}) for i in range(n)]
