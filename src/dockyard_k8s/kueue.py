"""Kueue's names and its view of a job, as plain data (Kueue v0.19.2, ``kueue.x-k8s.io/v1beta2``).

What the renderer writes, the offline rules check, ``plan`` simulates and the live commands read
all come from here, so the label and annotation names and the pod sets exist once:

* the labels and annotations a job carries (``kueue.x-k8s.io/queue-name`` ...);
* :func:`pod_sets` — the pod sets Kueue builds for a job, with their counts, in its order
  (``pkg/controller/jobs/{rayjob,raycluster,job}``: ``head``, one per worker group, then
  ``submitter`` in K8sJobMode; a Job's ``main``).

Read from kubernetes-sigs/kueue at tag v0.19.2; no code was copied. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from dockyard_k8s.kube import as_int, as_mapping
from dockyard_k8s.plain import Path, dig

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"  # the storage version of v0.19 (v1beta1 still served); served since v0.15

# --- on the job (pkg/controller/constants, apis/kueue/v1beta2/topology_types.go) ---------------
QUEUE_LABEL = f"{GROUP}/queue-name"  # metadata.labels: the LocalQueue
PRIORITY_LABEL = f"{GROUP}/priority-class"  # metadata.labels: a WorkloadPriorityClass
ELASTIC_JOB_ANNOTATION = f"{GROUP}/elastic-job"  # "true": workload slicing (in-tree autoscaling allowed)
# --- on a pod template: topology-aware scheduling (TAS) ------------------------------------------
REQUIRED_TOPOLOGY = f"{GROUP}/podset-required-topology"
PREFERRED_TOPOLOGY = f"{GROUP}/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = f"{GROUP}/podset-unconstrained-topology"
SLICE_REQUIRED_TOPOLOGY = f"{GROUP}/podset-slice-required-topology"
SLICE_SIZE = f"{GROUP}/podset-slice-size"
POD_SET_GROUP = f"{GROUP}/podset-group-name"
TOPOLOGY_ANNOTATIONS = (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY)
# topology mode of the infra spec -> the annotation it renders
MODE_ANNOTATION = {"required": REQUIRED_TOPOLOGY, "preferred": PREFERRED_TOPOLOGY}

# The controller name of MultiKueue's AdmissionCheck (apis/kueue/v1beta2/multikueue_types.go).
MULTIKUEUE_CONTROLLER = f"{GROUP}/multikueue"
# jobframework.MaxPodSets: the Workload CRD's podSets maxItems (8 up to v0.17, 10 in v0.18, 18 in v0.19).
MAX_POD_SETS = 18
HEAD_POD_SET = "head"  # reserved: no worker group may be called this
SUBMITTER_POD_SET = "submitter"
DEFAULT_POD_SET = "main"  # a Job's (and a pod group's) single pod set

# KubeRay's default submitter container, as Kueue accounts for it when the RayJob has no
# submitterPodTemplate (and in SidecarMode, on the head).
SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
# The Ray autoscaler sidecar KubeRay injects into the head with enableInTreeAutoscaling.
AUTOSCALER_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}

# The team's queue objects `render` may add for an admin (infra.kueue.queueObjects): render-only,
# never applied by `run`; plan reads them as the queue when nothing else is given.
TEAM_KINDS = ("ResourceFlavor", "Topology", "WorkloadPriorityClass", "MultiKueueCluster", "MultiKueueConfig",
              "AdmissionCheck", "ClusterQueue", "LocalQueue")

# The kinds Kueue integrates that a run renders (Kueue's default integrations include them all;
# StatefulSet and Deployment need its pod integration enabled too).
INTEGRATED_KINDS = ("RayJob", "RayCluster", "Job", "StatefulSet", "Deployment")


def queue_name(obj: dict[str, Any]) -> str:
    """The LocalQueue a job names, "" when it is not queued."""
    value = dig(obj, "metadata", "labels", QUEUE_LABEL)
    return value if isinstance(value, str) else ""


def priority_class(obj: dict[str, Any]) -> str:
    """The WorkloadPriorityClass a job names, "" when it names none."""
    value = dig(obj, "metadata", "labels", PRIORITY_LABEL)
    return value if isinstance(value, str) else ""


def judged(obj: dict[str, Any]) -> bool:
    """True when Kueue's webhooks judge ``obj``: it carries the queue-name label (of any value),
    or it is one of Kueue's own objects."""
    labels = as_mapping(as_mapping(obj.get("metadata")).get("labels"))
    return QUEUE_LABEL in labels or str(obj.get("apiVersion", "")).partition("/")[0] == GROUP


@dataclass(frozen=True, slots=True)
class PodSet:
    """One pod set of a Kueue Workload: ``count`` pods of ``spec``.

    ``path`` is the JSON path of the pod template inside the job (() for a default submitter,
    which has no template in the job); ``metadata`` its metadata (annotations
    carry the topology request).
    """

    name: str
    count: int
    path: Path
    metadata: dict[str, Any] = field(repr=False)
    spec: dict[str, Any] = field(repr=False)


def _template(node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    t = as_mapping(node)
    return as_mapping(t.get("metadata")), as_mapping(t.get("spec"))


def _with_container(spec: dict[str, Any], name: str, resources: dict[str, Any]) -> dict[str, Any]:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    return {**spec, "containers": [*containers, {"name": name, "resources": resources}]}


def _cluster_pod_sets(spec: dict[str, Any], at: Path) -> list[PodSet]:
    head_meta, head_spec = _template(as_mapping(spec.get("headGroupSpec")).get("template"))
    if spec.get("enableInTreeAutoscaling") is True:
        options = as_mapping(spec.get("autoscalerOptions"))
        own = options.get("resources")
        head_spec = _with_container(head_spec, "autoscaler", own if isinstance(own, dict) else AUTOSCALER_RESOURCES)
    out = [PodSet(HEAD_POD_SET, 1, (*at, "headGroupSpec", "template"), head_meta, head_spec)]
    groups = spec.get("workerGroupSpecs")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        group = as_mapping(group)
        meta, pod = _template(group.get("template"))
        count = as_int(group.get("replicas"), 1) * max(as_int(group.get("numOfHosts"), 1), 1)
        out.append(PodSet(str(group.get("groupName", "")).lower(), count, (*at, "workerGroupSpecs", i, "template"),
                          meta, pod))
    return out


def pod_sets(obj: dict[str, Any]) -> list[PodSet]:
    """The pod sets Kueue builds for ``obj``, in its order; [] for kinds it does not queue as one
    Workload (a Deployment's pods are one Workload each: see :func:`workload_count`)."""
    kind, spec = obj.get("kind"), as_mapping(obj.get("spec"))
    if kind == "RayCluster":
        return _cluster_pod_sets(spec, ("spec",))
    if kind == "RayJob":
        cluster = as_mapping(spec.get("rayClusterSpec"))
        out = _cluster_pod_sets(cluster, ("spec", "rayClusterSpec"))
        mode = spec.get("submissionMode") or "K8sJobMode"
        if mode == "K8sJobMode":
            if isinstance(spec.get("submitterPodTemplate"), dict):
                meta, pod = _template(spec["submitterPodTemplate"])
                out.append(PodSet(SUBMITTER_POD_SET, 1, ("spec", "submitterPodTemplate"), meta, pod))
            else:
                pod = {"restartPolicy": "Never",
                       "containers": [{"name": "ray-job-submitter", "resources": SUBMITTER_RESOURCES}]}
                out.append(PodSet(SUBMITTER_POD_SET, 1, (), {}, pod))
        elif mode == "SidecarMode" and out:
            head = out[0]
            out[0] = replace(head, spec=_with_container(head.spec, "ray-job-submitter", SUBMITTER_RESOURCES))
        return out
    if kind == "Job":
        meta, pod = _template(spec.get("template"))
        parallelism = as_int(spec.get("parallelism"), 1)
        count = min(parallelism, as_int(spec.get("completions"), parallelism))
        return [PodSet(DEFAULT_POD_SET, count, ("spec", "template"), meta, pod)]
    if kind == "StatefulSet":  # one pod group: every replica in one Workload
        meta, pod = _template(spec.get("template"))
        return [PodSet(DEFAULT_POD_SET, as_int(spec.get("replicas"), 1), ("spec", "template"), meta, pod)]
    if kind == "Deployment":  # each pod is a Workload of one pod set of 1
        meta, pod = _template(spec.get("template"))
        return [PodSet(DEFAULT_POD_SET, 1, ("spec", "template"), meta, pod)]
    return []


def workload_count(obj: dict[str, Any]) -> int:
    """How many Workloads Kueue creates for ``obj`` (a Deployment: one per replica)."""
    if obj.get("kind") == "Deployment":
        return as_int(as_mapping(obj.get("spec")).get("replicas"), 1)
    return 1 if pod_sets(obj) else 0


def topology_request(metadata: dict[str, Any]) -> tuple[str, str] | None:
    """``("required"|"preferred", level)`` from a pod template's annotations, else None."""
    annotations = as_mapping(metadata.get("annotations"))
    for mode, key in MODE_ANNOTATION.items():
        value = annotations.get(key)
        if isinstance(value, str):
            return mode, value
    return None


def owned_by(workload: dict[str, Any], obj: dict[str, Any]) -> bool:
    """Whether a Workload belongs to ``obj`` (its ownerReference, by uid when both have one)."""
    wmeta, ometa = as_mapping(workload.get("metadata")), as_mapping(obj.get("metadata"))
    if (wmeta.get("namespace") or "default") != (ometa.get("namespace") or "default"):
        return False
    for ref in wmeta.get("ownerReferences") or []:
        ref = as_mapping(ref)
        if ref.get("kind") == obj.get("kind") and ref.get("name") == ometa.get("name"):
            return not (ref.get("uid") and ometa.get("uid")) or ref.get("uid") == ometa.get("uid")
    return False
