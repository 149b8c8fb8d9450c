"""Kueue: the queue labels and topology requests on the run's workloads, and the team's queue
objects for an admin (``infra.kueue``; docs/kueue.md).

:func:`apply_kueue` runs after the platform pass, over the rendered objects:

* ``kueue.x-k8s.io/queue-name`` (and ``priority-class``) on the workload Kueue admits as one
  unit: the RayJob (rayjob), the RayCluster (bringup), the Job (job), each StatefulSet
  (statefulset: one Workload per fleet); the sandbox Deployment only with ``infra.kueue.sandbox``.
  Nothing sets ``spec.suspend``: Kueue's webhook does, and its controller owns it from then on (a
  ``suspend: true`` in what ``run`` applies would undo Kueue's resume on every re-apply);
* ``kueue.x-k8s.io/podset-{required,preferred}-topology`` on the pod templates of the pod sets
  the topology asks for, and ``podset-group-name`` on trainer and inference with ``together``.

:func:`queue_objects` renders, with ``infra.kueue.queueObjects.render``, what an admin applies
once for the team (render-only, first, without the run label so ``down`` never deletes them):
ResourceFlavors (the head's first, with no GPU quota, so GPU pod sets pass it by), a Topology
when a topology mode is set, the WorkloadPriorityClass with ``priorityValue``, MultiKueue's
MultiKueueClusters, MultiKueueConfig and AdmissionCheck with ``multiKueue.clusters``, a
ClusterQueue sized from the run's pod sets (with that check) and the LocalQueue.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dockyard_k8s import kueue
from dockyard_k8s.config.platforms import INSTANCE_TYPE_LABEL
from dockyard_k8s.kube import GPU_RESOURCES, as_mapping, pod_requests
from dockyard_k8s.plain import Path, dig
from dockyard_k8s.plan.units import format_amount, to_units
from dockyard_k8s.render import provenance
from dockyard_k8s.render.meta import FLEET_LABEL, MANAGED_BY

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

GROUP_NAME = "gpu"  # podset-group-name of trainer + inference (Kueue: any non-numeric string)
HOSTNAME = "kubernetes.io/hostname"
# EC2 instance topology labels on EKS nodes, from the farthest network layer to the host.
EKS_TOPOLOGY_LEVELS = ("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
                       "topology.k8s.aws/network-node-layer-3", HOSTNAME)
# launch.mode -> the kind that is queued as one Workload
QUEUED_KIND = {"rayjob": "RayJob", "bringup": "RayCluster", "job": "Job", "statefulset": "StatefulSet"}


def queued_objects(infra: InfraSpec, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rendered objects that carry the queue label, of a queued run (every caller checks ``queueName``)."""
    kind = QUEUED_KIND.get(infra["launch"]["mode"])
    out = [o for o in objects if o.get("kind") == kind]
    if infra["infra"]["kueue"]["sandbox"]:
        out += [o for o in objects if o.get("kind") == "Deployment"
                and dig(o, "metadata", "labels", "app.kubernetes.io/component") == "sandbox"]
    return out


def _fleet_of(ps: kueue.PodSet) -> str:
    labels = as_mapping(ps.metadata.get("labels"))
    return str(labels.get(FLEET_LABEL) or ("submitter" if ps.name == kueue.SUBMITTER_POD_SET else ps.name))


def topology_of(infra: InfraSpec, fleet: str) -> tuple[str, str] | None:
    """(mode, level) the run asks for the pod set of ``fleet``, or None."""
    k = infra["infra"]["kueue"]
    fleets: Mapping[str, Any] = k["fleets"]
    own = fleets.get(fleet)
    chosen: Any = own if own is not None else (k["topology"] if fleet in ("trainer", "inference") else None)
    if not chosen or chosen["mode"] == "none" or not chosen["level"]:
        return None
    return str(chosen["mode"]), str(chosen["level"])


def apply_kueue(infra: InfraSpec, objects: list[dict[str, Any]]) -> None:
    """Queue labels on the queued workloads and topology annotations on their pod sets, in place."""
    k = infra["infra"]["kueue"]
    fleets: Mapping[str, Any] = k["fleets"]
    for obj in queued_objects(infra, objects):
        meta = obj["metadata"]
        extra = {kueue.QUEUE_LABEL: k["queueName"]}
        if k["priorityClass"]:
            extra[kueue.PRIORITY_LABEL] = k["priorityClass"]
        meta["labels"] = dict(sorted({**meta.get("labels", {}), **extra}.items()))
        provenance.note_fields(meta["labels"], {kueue.QUEUE_LABEL: ("infra", "kueue", "queueName"),
                                                kueue.PRIORITY_LABEL: ("infra", "kueue", "priorityClass")})
        if obj.get("kind") == "Deployment":
            continue
        for ps in kueue.pod_sets(obj):
            if not ps.path:
                continue  # KubeRay's default submitter: no template to annotate
            # the one pod of the job shape holds every fleet: the GPU request decides
            fleet = "trainer" if obj.get("kind") == "Job" else _fleet_of(ps)
            wanted = topology_of(infra, fleet)
            if not wanted:
                continue
            annotations = {kueue.MODE_ANNOTATION[wanted[0]]: wanted[1]}
            if k["topology"]["together"] and fleet in ("trainer", "inference") \
                    and obj.get("kind") in ("RayJob", "RayCluster"):
                annotations[kueue.POD_SET_GROUP] = GROUP_NAME
            meta = ps.metadata  # the template's own (every rendered pod template has labels)
            meta["annotations"] = dict(sorted({**meta.get("annotations", {}), **annotations}.items()))
            # the infra key of the request: the fleet's own fleets.<fleet>, else the shared one
            key: Path = (("infra", "kueue", "fleets", fleet) if fleets.get(fleet) is not None
                         else ("infra", "kueue", "topology"))
            provenance.note_fields(meta["annotations"], {
                **{a: key for a in kueue.MODE_ANNOTATION.values()},
                kueue.POD_SET_GROUP: ("infra", "kueue", "topology", "together")})


# --- the team's queue objects (render-only) ---------------------------------------------------


def common_labels(selectors: list[dict[str, Any]]) -> dict[str, str]:
    """Labels every selector in ``selectors`` asks for with the same value (``{}`` for none)."""
    if not selectors:
        return {}
    first = {str(a): str(b) for a, b in selectors[0].items()}
    return {key: value for key, value in first.items() if all(str(s.get(key)) == value for s in selectors[1:])}


def _meta(infra: InfraSpec, name: str, namespaced: bool = False) -> dict[str, Any]:
    """Team objects outlive a run: no dockyard-k8s/run label, so `down` never selects them."""
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = infra["infra"]["namespace"]
    meta["labels"] = {"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/name": "dockyard-k8s"}
    return meta


def queue_objects(infra: InfraSpec, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """LocalQueue, example ClusterQueue, ResourceFlavors (and a Topology) sized from the run."""
    k = infra["infra"]["kueue"]
    qo = k["queueObjects"]
    queued = queued_objects(infra, objects)
    if not (qo["render"] and queued):
        return []
    # Pod sets, per flavor: GPU pod sets on the GPU flavor, the others (head, submitter, sandbox) on the CPU one.
    usage: dict[str, dict[str, Fraction]] = {"cpu": {}, "gpu": {}}
    selectors: dict[str, list[dict[str, Any]]] = {"cpu": [], "gpu": []}
    topology: dict[str, list[str]] = {"cpu": [], "gpu": []}
    for obj in queued:
        workloads = kueue.workload_count(obj)
        for ps in kueue.pod_sets(obj):
            requests = pod_requests(ps.spec)
            side = "gpu" if any(requests.get(r) for r in GPU_RESOURCES) else "cpu"
            for resource, amount in requests.items():
                usage[side][resource] = usage[side].get(resource, Fraction(0)) + amount * ps.count * workloads
            selectors[side].append(as_mapping(ps.spec.get("nodeSelector")))
            wanted = kueue.topology_request(ps.metadata)
            if wanted and wanted[1] not in topology[side]:
                topology[side].append(wanted[1])
    sides = [s for s in ("cpu", "gpu") if usage[s]]
    covered = sorted({r for s in sides for r in usage[s]}, key=lambda r: ({"cpu": 0, "memory": 1}.get(r, 2), r))
    names = {"cpu": qo["cpuFlavor"], "gpu": qo["gpuFlavor"] or common_labels(selectors["gpu"]).get(INSTANCE_TYPE_LABEL)
             or "gpu"}
    levels = [lv for s in sides for lv in topology[s]]
    out: list[dict[str, Any]] = []
    for side in sides:
        spec: dict[str, Any] = {}
        labels = common_labels(selectors[side])
        if labels:
            spec["nodeLabels"] = dict(sorted(labels.items()))
        if topology[side]:
            spec["topologyName"] = qo["topologyName"]
        out.append({"apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor",
                    "metadata": _meta(infra, names[side]), "spec": spec})
    if levels:
        out.append({"apiVersion": kueue.API_VERSION, "kind": "Topology", "metadata": _meta(infra, qo["topologyName"]),
                    "spec": {"levels": [{"nodeLabel": lv} for lv in _levels(levels)]}})
    runs = qo["runs"]
    flavors = [{"name": names[side], "resources": [
        {"name": r, "nominalQuota": format_amount(r, to_units(r, usage[side].get(r, Fraction(0)) * runs))}
        for r in covered]}
        for side in sides]
    queue = str(k["queueName"])
    cq_name = qo["clusterQueue"] or queue
    cq_spec: dict[str, Any] = {}
    if qo["multiKueue"]["clusters"]:
        cq_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": qo["multiKueue"]["admissionCheck"]}]}
    if qo["cohort"]:
        cq_spec["cohortName"] = qo["cohort"]
    cq_spec["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": infra["infra"]["namespace"]}}
    cq_spec["preemption"] = {"withinClusterQueue": "LowerPriority",
                             "reclaimWithinCohort": "Any" if qo["cohort"] else "Never"}
    cq_spec["resourceGroups"] = [{"coveredResources": covered, "flavors": flavors}]
    queues = [{"apiVersion": kueue.API_VERSION, "kind": "ClusterQueue", "metadata": _meta(infra, cq_name),
               "spec": cq_spec},
              {"apiVersion": kueue.API_VERSION, "kind": "LocalQueue",
               "metadata": _meta(infra, queue, namespaced=True), "spec": {"clusterQueue": cq_name}}]
    for obj in [*out, *queues]:  # an admin's objects: any problem in them is the queueObjects settings'
        provenance.note_fields(obj, {"spec": ("infra", "kueue", "queueObjects")})
    return [*out, *_admin_objects(infra), *queues]  # _admin_objects name their own keys


def _admin_objects(infra: InfraSpec) -> list[dict[str, Any]]:
    """The WorkloadPriorityClass (``priorityValue``) and MultiKueue's objects (``multiKueue.clusters``):
    a MultiKueueCluster per worker, reading its kubeconfig from a Secret the admin creates in Kueue's
    namespace (credentials are never rendered), their MultiKueueConfig and the AdmissionCheck that
    names it (apis/kueue/v1beta2/multikueue_types.go, admissioncheck_types.go)."""
    k = infra["infra"]["kueue"]
    qo = k["queueObjects"]
    out: list[dict[str, Any]] = []
    if qo["priorityValue"] is not None and k["priorityClass"]:
        wpc = {"apiVersion": kueue.API_VERSION, "kind": "WorkloadPriorityClass",
               "metadata": _meta(infra, k["priorityClass"]), "value": qo["priorityValue"]}
        provenance.note_fields(wpc, {"value": ("infra", "kueue", "queueObjects", "priorityValue")})
        out.append(wpc)
    mk = qo["multiKueue"]
    if not mk["clusters"]:
        return out
    for i, cluster in enumerate(mk["clusters"]):
        secret = cluster["kubeConfigSecret"] or f"{cluster['name']}-kubeconfig"
        obj = {"apiVersion": kueue.API_VERSION, "kind": "MultiKueueCluster", "metadata": _meta(infra, cluster["name"]),
               "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}}
        provenance.note_fields(obj, {"spec": ("infra", "kueue", "queueObjects", "multiKueue", "clusters", i)})
        out.append(obj)
    name = mk["admissionCheck"]
    config = {"apiVersion": kueue.API_VERSION, "kind": "MultiKueueConfig", "metadata": _meta(infra, name),
              "spec": {"clusters": [c["name"] for c in mk["clusters"]]}}
    check = {"apiVersion": kueue.API_VERSION, "kind": "AdmissionCheck", "metadata": _meta(infra, name),
             "spec": {"controllerName": kueue.MULTIKUEUE_CONTROLLER,
                      "parameters": {"apiGroup": kueue.GROUP, "kind": "MultiKueueConfig", "name": name}}}
    for obj in (config, check):
        provenance.note_fields(obj, {"spec": ("infra", "kueue", "queueObjects", "multiKueue")})
    return [*out, config, check]


def _levels(wanted: list[str]) -> list[str]:
    """Topology levels, farthest first, ending with the host (EC2's three network layers for EKS labels)."""
    if all(lv in EKS_TOPOLOGY_LEVELS for lv in wanted):
        return list(EKS_TOPOLOGY_LEVELS)
    return [*dict.fromkeys(lv for lv in wanted if lv != HOSTNAME), HOSTNAME]


def kueue_summary(infra: InfraSpec, objects: list[dict[str, Any]]) -> str | None:
    """One line for `check`: what is queued where, or why nothing is; None when Kueue is not used."""
    k = infra["infra"]["kueue"]
    if not k["queueName"]:
        return None
    queued = queued_objects(infra, objects)
    if not queued:
        return f"LocalQueue {k['queueName']}: nothing queued (launch.mode {infra['launch']['mode']}: the job runs " \
               "on an existing cluster)"
    kinds = sorted({str(o["kind"]) for o in queued})
    parts = [f"LocalQueue {k['queueName']}: {', '.join(kinds)} queued"]
    if sum(1 for o in queued if o["kind"] == "StatefulSet") > 1:
        parts[0] += " (each StatefulSet its own Workload: one can run while another waits)"
    if k["priorityClass"]:
        parts.append(f"priority {k['priorityClass']}")
    asked = {f: t for f in ("head", "trainer", "inference", "submitter") if (t := topology_of(infra, f))}
    if asked:
        parts.append("topology " + ", ".join(f"{f} {m} {lv}" for f, (m, lv) in asked.items()))
    if k["topology"]["together"]:
        together = infra["launch"]["mode"] in ("rayjob", "bringup")
        parts.append("trainer + inference in one domain" if together else
                     "together ignored (trainer and inference are separate Workloads)")
    if not k["sandbox"] and infra["sandbox"]["enabled"]:
        parts.append("sandbox beside the queue")
    return "; ".join(parts)
