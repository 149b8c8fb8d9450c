"""Kueue objects read from the cluster: what ``plan --live`` (and ``doctor``) judge a run against.

One LIST per kind (cluster-scoped queues, flavors, topologies, priority classes, admission
checks; Workloads of every namespace for the current usage and preemption candidates; the run's
LocalQueues), turned into plain objects for ``plan.kueue_model.snapshot_from_objects``.
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS

# Cluster-scoped Kueue kinds a snapshot needs, then the namespaced ones.
CLUSTER_KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "Topology", "WorkloadPriorityClass", "AdmissionCheck")


def kueue_installed(client: KubeClient) -> bool:
    """Whether the API server serves Kueue's ClusterQueue (its CRDs are installed)."""
    crd = KINDS["CustomResourceDefinition"]
    return client.get(crd, None, "clusterqueues.kueue.x-k8s.io") is not None


def kueue_objects(client: KubeClient, namespaces: list[str]) -> list[dict[str, Any]]:
    """Every Kueue object a plan of a run in ``namespaces`` reads, plus PriorityClasses and the
    namespaces themselves (a ClusterQueue selects namespaces by their labels)."""
    out: list[dict[str, Any]] = []
    for name in CLUSTER_KINDS:
        out += client.list(KINDS[name], None, missing_ok=True)[0]
    out += client.list(KINDS["Workload"], None, missing_ok=True)[0]
    for ns in namespaces:
        out += client.list(KINDS["LocalQueue"], ns, missing_ok=True)[0]
        namespace = client.get(KINDS["Namespace"], None, ns)
        if namespace is not None:
            out.append({"apiVersion": "v1", "kind": "Namespace", **namespace})
    out += client.list(KINDS["PriorityClass"], None, missing_ok=True)[0]
    return out
