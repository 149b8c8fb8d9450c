"""Which REST collection serves each kind: a small table, no discovery round-trip.

Kinds the launcher renders or reads are listed; any other kind (a future renderer's)
falls back to the Kubernetes plural convention, so new object families plug in
without touching this table (add an entry only for irregular plurals).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Kind:
    api_version: str  # "v1", "apps/v1", "ray.io/v1"
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def resource(self) -> str:
        """``plural.group`` as RBAC and CRD names spell it (``rayjobs.ray.io``, ``pods``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_TABLE = [
    Kind("v1", "Pod", "pods"),
    Kind("v1", "Event", "events"),
    Kind("v1", "ConfigMap", "configmaps"),
    Kind("v1", "Secret", "secrets"),
    Kind("v1", "Service", "services"),
    Kind("v1", "ServiceAccount", "serviceaccounts"),
    Kind("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    Kind("v1", "ResourceQuota", "resourcequotas"),
    Kind("v1", "LimitRange", "limitranges"),
    Kind("v1", "Namespace", "namespaces", namespaced=False),
    Kind("v1", "Node", "nodes", namespaced=False),
    Kind("v1", "PersistentVolume", "persistentvolumes", namespaced=False),
    Kind("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False),
    Kind("apps/v1", "Deployment", "deployments"),
    Kind("apps/v1", "StatefulSet", "statefulsets"),
    Kind("apps/v1", "DaemonSet", "daemonsets"),
    Kind("apps/v1", "ReplicaSet", "replicasets"),
    Kind("batch/v1", "Job", "jobs"),
    Kind("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
    Kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    Kind("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False),
    Kind("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", namespaced=False),
    Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False),
    Kind("authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False),
    Kind("ray.io/v1", "RayJob", "rayjobs"),
    Kind("ray.io/v1", "RayCluster", "rayclusters"),
    Kind("ray.io/v1", "RayService", "rayservices"),
    Kind("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),
    # Kueue v0.19 (docs/kueue.md): what `run`/`status` read, and the team objects `render` can produce.
    Kind("kueue.x-k8s.io/v1beta2", "Workload", "workloads"),
    Kind("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues"),
    Kind("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "Cohort", "cohorts", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "resourceflavors", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "Topology", "topologies", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "admissionchecks", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "MultiKueueConfig", "multikueueconfigs", namespaced=False),
    Kind("kueue.x-k8s.io/v1beta2", "MultiKueueCluster", "multikueueclusters", namespaced=False),
]
# kind name -> Kind. Kind names are unique among what the launcher touches.
KINDS: dict[str, Kind] = {k.kind: k for k in _TABLE}

POD = KINDS["Pod"]
EVENT = KINDS["Event"]
RAYJOB = KINDS["RayJob"]
RAYCLUSTER = KINDS["RayCluster"]


def _plural(kind: str) -> str:
    low = kind.lower()
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def kind_for(api_version: str, kind: str) -> Kind:
    """The Kind of ``apiVersion``/``kind``; unknown kinds get the conventional plural."""
    known = KINDS.get(kind)
    if known and known.api_version == api_version:
        return known
    cluster_scoped = known is not None and not known.namespaced
    return Kind(api_version, kind, known.plural if known else _plural(kind), not cluster_scoped)


def kind_of(obj: dict[str, Any]) -> Kind:
    return kind_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))

