"""Platform objects and the platform pass over every GPU pod of the run.

Objects (each opt-in, see ``infra.*`` in the infra spec and docs/platforms.md; the
default-deny NetworkPolicies live with every other policy in ``network.py``):

    PriorityClass          infra.priorityClass.create: for the GPU gang (cluster-scoped)
    PersistentVolumeClaim  infra.storage.create: the model cache / shared storage claim
    DaemonSet              infra.imagePull.prePull: pulls infra.image on the GPU nodes

The platform pass (:func:`apply_platform`) runs last, over the pod templates of every
rendered object, whatever the launch shape (RayJob, RayCluster, Job, StatefulSet), so a
platform rule holds for all of them. It only *adds*: a field ``kuberay.spec`` already set
is left alone, except where noted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s import kube
from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.config.platforms import INSTANCE_TYPE_LABEL
from dockyard_k8s.kube import GPU
from dockyard_k8s.plain import clone
from dockyard_k8s.render import meta
from dockyard_k8s.render.meta import (
    FLEET_LABEL,
    fleets_selector,
    metadata,
    name_of,
    pod_labels,
    pull_secrets,
    run_name,
    selector,
)

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec
    from dockyard_k8s.config.model import Group

GANG_FLEETS: tuple[Group, ...] = ("head", *GPU_FLEETS)  # the pods one training run lives or dies with
STORAGE_VOLUME = "dockyard-storage"
# Marks data that outlives a run (the model cache claim) for people and tools; `down` keeps every
# PersistentVolumeClaim by its kind unless --delete-volumes (live/orchestrate.KEEP_BY_DEFAULT).
KEEP_ANNOTATION = "dockyard-k8s/keep-on-down"


# --- names -----------------------------------------------------------------------------------


def created_priority_class(infra: InfraSpec) -> str | None:
    pc = infra["infra"]["priorityClass"]
    return str(pc["name"] or f"{infra['infra']['namespace']}-{run_name(infra)}-gpu") if pc["create"] else None


def storage_claim_name(infra: InfraSpec) -> str:
    return str(infra["infra"]["storage"]["claimName"] or name_of(infra, "cache"))


def padded_deadline(infra: InfraSpec, seconds: int | None) -> int | None:
    """A deadline plus the cold-pull allowance (``infra.imagePull.coldPullSeconds``)."""
    return None if seconds is None else seconds + infra["infra"]["imagePull"]["coldPullSeconds"]


# --- objects ---------------------------------------------------------------------------------


def priority_class(infra: InfraSpec) -> dict[str, Any] | None:
    name = created_priority_class(infra)
    if name is None:
        return None
    return meta.priority_class(metadata(infra, name, "governance", namespaced=False), infra["infra"]["priorityClass"],
                               f"GPU pods of dockyard-k8s run {run_name(infra)}: not evicted for best-effort pods.")


def storage_claim(infra: InfraSpec) -> dict[str, Any] | None:
    st = infra["infra"]["storage"]
    if not (st["enabled"] and st["create"]):
        return None
    meta = metadata(infra, storage_claim_name(infra), "storage")
    # A model cache outlives a run: `down` keeps it (and the next run reuses it).
    meta["annotations"] = {KEEP_ANNOTATION: "true"}
    spec: dict[str, Any] = {"accessModes": [st["accessMode"]],
                            "resources": {"requests": {"storage": str(st["size"])}}}
    if st["storageClassName"]:
        spec["storageClassName"] = st["storageClassName"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def _gpu_node_affinity(infra: InfraSpec) -> dict[str, Any] | None:
    """Nodes of any GPU fleet: one nodeSelectorTerm per distinct nodeSelector (terms are ORed)."""
    terms: list[dict[str, Any]] = []
    for role in GPU_FLEETS:
        sel = infra["kuberay"][role]["nodeSelector"]
        if infra["kuberay"][role]["gpus"] <= 0:
            continue
        if not sel:
            return None  # a fleet may land anywhere: pre-pull everywhere the DaemonSet can go
        term = {"matchExpressions": [{"key": k, "operator": "In", "values": [str(v)]} for k, v in sel.items()]}
        if term not in terms:
            terms.append(term)
    if not terms:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def prepull_daemonset(infra: InfraSpec) -> dict[str, Any] | None:
    """Pulls infra.image on the GPU nodes ahead of the run, so a start does not wait 5-10 min.

    The image runs once as an init container (``/bin/sh -c true``); a pause container then
    keeps the pod (and so the image, against image GC) on the node. It requests almost nothing.
    """
    ip = infra["infra"]["imagePull"]
    if not ip["prePull"]:
        return None
    tiny = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}
    hardened = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    every = [t for role in GPU_FLEETS for t in infra["kuberay"][role]["tolerations"]]
    tolerations = [clone(t) for i, t in enumerate(every) if t not in every[:i]]
    pod: dict[str, Any] = {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}
    # The run's class (or the one it creates): on a full GPU node the pre-pull pod competes as the run would.
    name = infra["infra"]["priorityClassName"] or created_priority_class(infra)
    if name:
        pod["priorityClassName"] = name
    pod.update(pull_secrets(infra))
    affinity = _gpu_node_affinity(infra)
    if affinity:
        pod["affinity"] = affinity
    if tolerations:
        pod["tolerations"] = tolerations
    pod["initContainers"] = [{"name": "pull", "image": infra["infra"]["image"],
                              "imagePullPolicy": infra["infra"]["imagePullPolicy"],
                              "command": ["/bin/sh", "-c", "true"], "resources": clone(tiny),
                              "securityContext": clone(hardened)}]
    pod["containers"] = [{"name": "pause", "image": ip["pauseImage"], "imagePullPolicy": "IfNotPresent",
                          "resources": clone(tiny), "securityContext": clone(hardened)}]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(infra, name_of(infra, "prepull"), "image-prepull"),
        "spec": {
            "selector": {"matchLabels": selector(infra, "prepull")},
            "template": {"metadata": {"labels": pod_labels(infra, "prepull")}, "spec": pod},
        },
    }


# --- the pass over pod templates ---------------------------------------------------------------


def requests_gpu(pod: dict[str, Any]) -> bool:
    return any(((c.get("resources") or {}).get(part) or {}).get(GPU) not in (None, 0, "0")
               for c in pod.get("containers") or [] for part in ("limits", "requests"))


def add_gpu_scheduling(infra: InfraSpec, pod: dict[str, Any], select: dict[str, Any]) -> None:
    """One GPU pod per node and the topology spread, unless the pod already sets its own."""
    sched = infra["infra"]["gpuScheduling"]
    if sched["onePodPerNode"] and "podAntiAffinity" not in (pod.get("affinity") or {}):
        pod.setdefault("affinity", {})["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": clone(select), "topologyKey": "kubernetes.io/hostname"}]}
    if sched["topologySpreadConstraints"] and not pod.get("topologySpreadConstraints"):
        pod["topologySpreadConstraints"] = [
            {**c, "labelSelector": c.get("labelSelector") or clone(select)}
            for c in sched["topologySpreadConstraints"]]


def add_runtime_class(infra: InfraSpec, pod: dict[str, Any]) -> None:
    """runtimeClassName on a pod that requests GPUs (kind/k3s: without it the GPU is invisible)."""
    rc = infra["infra"]["runtimeClassName"]
    if rc and requests_gpu(pod) and not pod.get("runtimeClassName"):
        pod["runtimeClassName"] = rc


def add_storage(infra: InfraSpec, pod: dict[str, Any]) -> None:
    st = infra["infra"]["storage"]
    if not st["enabled"] or any(v.get("name") == STORAGE_VOLUME for v in pod.get("volumes") or []):
        return
    pod.setdefault("volumes", []).append(
        {"name": STORAGE_VOLUME, "persistentVolumeClaim": {"claimName": storage_claim_name(infra)}})
    containers = pod.get("containers") or []
    if containers:  # the main container; sidecars a fragment adds do not need it
        containers[0].setdefault("volumeMounts", []).append({"name": STORAGE_VOLUME, "mountPath": st["mountPath"]})


def add_service_account(infra: InfraSpec, pod: dict[str, Any], fleet: str) -> None:
    """``kuberay.serviceAccountName`` / ``automountServiceAccountToken`` (default: no API token, but
    the head's when the in-tree autoscaler, which talks to the API server, runs beside Ray)."""
    kr = infra["kuberay"]
    mount = kr["automountServiceAccountToken"]
    if mount is None:
        mount = fleet == "head" and (kr["spec"] or {}).get("enableInTreeAutoscaling") is True
    pod.setdefault("automountServiceAccountToken", mount)
    if kr["serviceAccountName"]:
        pod.setdefault("serviceAccountName", kr["serviceAccountName"])


def gpu_instance_types(infra: InfraSpec) -> list[str]:
    """The instance types the GPU fleets select (``infra.instanceType`` on eks): GPU nodes for sure."""
    kr = infra["kuberay"]
    types = {str(kr[role]["nodeSelector"][INSTANCE_TYPE_LABEL]) for role in GPU_FLEETS
             if kr[role]["gpus"] > 0 and INSTANCE_TYPE_LABEL in kr[role]["nodeSelector"]}
    if infra["infra"]["instanceType"]:
        types.add(str(infra["infra"]["instanceType"]))
    return sorted(types)


def off_gpu_nodes(infra: InfraSpec) -> list[dict[str, Any]]:
    """The node selector requirements that keep a pod off GPU nodes (``infra.cpuScheduling``):
    none of ``gpuNodeLabels``, no instance type a GPU fleet selects; [] when turned off."""
    cs = infra["infra"]["cpuScheduling"]
    if not cs["avoidGpuNodes"]:
        return []
    out: list[dict[str, Any]] = [{"key": key, "operator": "DoesNotExist"} if value == "*" else
                                 {"key": key, "operator": "NotIn", "values": [str(value)]}
                                 for key, value in cs["gpuNodeLabels"].items()]
    types = gpu_instance_types(infra)
    if types:
        out.append({"key": INSTANCE_TYPE_LABEL, "operator": "NotIn", "values": types})
    return out


def cpu_placement_line(infra: InfraSpec) -> str:
    """What ``check`` says of where the pods that request no GPU go."""
    requirements = off_gpu_nodes(infra)
    if not requirements:
        return "CPU pods may land on GPU nodes (infra.cpuScheduling.avoidGpuNodes: false)"
    parts = [f"{r['key']}" if r["operator"] == "DoesNotExist" else f"{r['key']}={','.join(r['values'])}"
             for r in requirements if r["key"] != INSTANCE_TYPE_LABEL]
    types = [", ".join(r["values"]) for r in requirements if r["key"] == INSTANCE_TYPE_LABEL]
    return ("CPU pods (no GPU requested) kept off GPU nodes: none of " + ", ".join(parts)
            + (f"; not {types[0]}" if types else "") + " (infra.cpuScheduling)")


def keep_off_gpu_nodes(pod: dict[str, Any], requirements: list[dict[str, Any]]) -> None:
    """``requirements`` in the pod's required node affinity: its own terms (ORed) each get them."""
    if not requirements:
        return
    node_affinity = pod.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({})
    for term in terms:
        own = term.setdefault("matchExpressions", [])
        own += [clone(r) for r in requirements if r not in own]


def apply_platform(infra: InfraSpec, objects: list[dict[str, Any]]) -> None:
    """The platform pass, in place, over the GPU gang's pod templates (see the module doc).

    * ``runtimeClassName`` on every pod that requests ``nvidia.com/gpu``;
    * the created PriorityClass on the gang, where the pod has no class of its own
      (``infra.priorityClassName`` counts as none: the created class is more specific);
    * the storage claim mounted into the gang's main containers;
    * anti-affinity and topology spread on the GPU worker pods;
    * the service account and its token (none by default) on the gang and the submitter;
    * ``activeDeadlineSeconds`` of a RayJob padded for a cold image pull;
    * every pod that requests no GPU (the sandbox, a head without GPUs, the submitter) kept off
      the GPU nodes (``infra.cpuScheduling``; not the pre-pull DaemonSet, which is for them).
    """
    created = created_priority_class(infra)
    off_gpu = off_gpu_nodes(infra)
    for obj in objects:
        if obj.get("kind") == "RayJob" and obj["spec"].get("activeDeadlineSeconds") is not None:
            obj["spec"]["activeDeadlineSeconds"] = padded_deadline(infra, obj["spec"]["activeDeadlineSeconds"])
        for template in kube.pod_templates(obj):  # the object's own dicts: edits go into the object
            fleet = (template.metadata.get("labels") or {}).get(FLEET_LABEL)
            pod = template.spec
            if fleet is not None and fleet != "prepull" and not requests_gpu(pod):
                keep_off_gpu_nodes(pod, off_gpu)
            if fleet == "submitter":
                add_service_account(infra, pod, fleet)
            if fleet not in GANG_FLEETS:
                continue
            add_service_account(infra, pod, fleet)
            add_runtime_class(infra, pod)
            if created and pod.get("priorityClassName") in (None, infra["infra"]["priorityClassName"]):
                pod["priorityClassName"] = created
            add_storage(infra, pod)
            if fleet in GPU_FLEETS and requests_gpu(pod):
                add_gpu_scheduling(infra, pod, fleets_selector(infra, GPU_FLEETS))
