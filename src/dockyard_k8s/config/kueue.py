"""``infra.kueue`` rules that need several keys (docs/kueue.md), exit 2 at the key.

* :func:`kueue_config_problems` — settings that cannot work together: a topology without its
  level, a podset group Kueue refuses, ``launch.suspend`` fighting Kueue's resume, Kueue keys
  set while the run is not queued (they would do nothing), admin objects asked for without
  ``queueObjects.render`` or that Kueue would refuse (a priority value without a class name,
  worker clusters named twice or more than 20). An attach run with a queue name
  queues nothing (its job goes to an existing cluster): ``check`` says so, it is no error, so a
  team defaults file may name the queue.

Kueue's webhook rules proper are ``validate/kueue.py`` (they judge the rendered objects, and any
manifest); ``bundle.py`` reports them at the infra key the renderers' provenance names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.overrides import lookup
from dockyard_k8s.plain import Path
from dockyard_k8s.render.kueue import common_labels, topology_of

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

_FLEETS_WITH_POD_SET = {  # launch.mode -> the fleets that are their own pod set
    "rayjob": ("head", "trainer", "inference", "submitter"),
    "bringup": ("head", "trainer", "inference"),
    "job": ("trainer",),  # one pod: head and every fleet (its topology is the trainer's)
    "statefulset": ("trainer", "inference"),
    "attach": (),
}


NOT_QUEUED = "has no effect: the run is not queued (set infra.kueue.queueName to the LocalQueue of the namespace)"
MAX_WORKER_CLUSTERS = 20  # MultiKueueConfig spec.clusters maxItems (Kueue v0.19.2 CRD)


def _topology_problems(section: Any, at: Path) -> list[tuple[Path, str]]:
    if section and section["mode"] != "none" and not section["level"]:
        return [((*at, "level"), f"is required with mode {section['mode']} (got nothing, expected the node label of a "
                                 "level of the ResourceFlavor's Topology, e.g. topology.k8s.aws/network-node-layer-2 "
                                 "or kubernetes.io/hostname)")]
    return []


def kueue_config_problems(infra: InfraSpec) -> list[tuple[Path, str]]:
    """Every ``infra.kueue`` combination that cannot work, as (key path, message)."""
    k, launch = infra["infra"]["kueue"], infra["launch"]
    out: list[tuple[Path, str]] = []
    base: Path = ("infra", "kueue")
    if not k["queueName"]:
        unused = [("priorityClass",), ("sandbox",), ("queueObjects", "render"), ("topology", "together"),
                  ("queueObjects", "multiKueue", "clusters")]
        out += [((*base, *path), NOT_QUEUED) for path in unused if lookup(k, path)[1]]
        if k["queueObjects"]["priorityValue"] is not None:
            out.append(((*base, "queueObjects", "priorityValue"), NOT_QUEUED))
        if k["topology"]["mode"] != "none" or any(k["fleets"].values()):
            key = "topology" if k["topology"]["mode"] != "none" else "fleets"
            out.append(((*base, key), "has no effect: topology requests are read by Kueue, and the run is not queued "
                                      "(set infra.kueue.queueName)"))
        return out
    mode = launch["mode"]
    if k["sandbox"] and not infra["sandbox"]["enabled"]:
        out.append(((*base, "sandbox"), "queues the sandbox pool, but sandbox.enabled is false"))
    if launch["suspend"] and mode in ("rayjob", "job"):
        out.append((("launch", "suspend"), "must be false when the run is queued (infra.kueue.queueName): Kueue "
                                           "creates the job suspended and resumes it once admitted; a suspend: true "
                                           "in what `run` applies would suspend it again on every re-apply"))
    out += _topology_problems(k["topology"], (*base, "topology"))
    has_pod_set = _FLEETS_WITH_POD_SET[mode]
    fleets: Mapping[str, Any] = k["fleets"]
    for fleet, section in fleets.items():
        out += _topology_problems(section, (*base, "fleets", fleet))
        if section is not None and fleet not in has_pod_set:
            why = {"submitter": "only a K8sJobMode RayJob has a submitter pod set",
                   "head": "the head is its own pod set only in a RayJob or RayCluster"}.get(fleet, "no pods")
            out.append(((*base, "fleets", fleet), f"launch.mode {mode} has no {fleet} pod set ({why})"))
        if fleet == "submitter" and section is not None and mode == "rayjob" \
                and launch["submissionMode"] != "K8sJobMode":
            out.append(((*base, "fleets", fleet), f"submissionMode {launch['submissionMode']} has no submitter pod set "
                                                  "(only K8sJobMode runs the submitter as its own pod)"))
    if k["topology"]["together"]:
        out += _together_problems(infra)
    out += _admin_object_problems(k)
    if k["queueObjects"]["render"] and mode in ("rayjob", "bringup", "statefulset"):
        kuberay: Mapping[str, Any] = infra["kuberay"]
        gpu = [role for role in ("trainer", "inference") if kuberay[role]["gpus"] > 0]
        selectors = [kuberay[role]["nodeSelector"] for role in gpu]
        if not common_labels(selectors) and any(topology_of(infra, role) for role in gpu):
            out.append(((*base, "queueObjects", "render"),
                        "the GPU ResourceFlavor gets a topologyName, and Kueue needs nodeLabels on it (at least one "
                        "nodeLabel is required when topology is set): give trainer and inference a common "
                        "nodeSelector (e.g. node.kubernetes.io/instance-type)"))
    return out


def _admin_object_problems(k: Any) -> list[tuple[Path, str]]:
    """The WorkloadPriorityClass and MultiKueue objects ``queueObjects`` renders for the admin."""
    qo = k["queueObjects"]
    at: Path = ("infra", "kueue", "queueObjects")
    clusters = qo["multiKueue"]["clusters"]
    out: list[tuple[Path, str]] = []
    if not qo["render"]:
        why = "has no effect without infra.kueue.queueObjects.render (an admin's object, rendered with the queue's)"
        if qo["priorityValue"] is not None:
            out.append(((*at, "priorityValue"), why))
        if clusters:
            out.append(((*at, "multiKueue", "clusters"), why))
        return out
    if qo["priorityValue"] is not None and not k["priorityClass"]:
        out.append(((*at, "priorityValue"), "names no WorkloadPriorityClass: set infra.kueue.priorityClass (the "
                                            "class's name, which the run's kueue.x-k8s.io/priority-class label names)"))
    seen: set[str] = set()
    for i, cluster in enumerate(clusters):
        if cluster["name"] in seen:
            out.append(((*at, "multiKueue", "clusters", i, "name"),
                        f"Duplicate value: {cluster['name']!r} (MultiKueueConfig spec.clusters must be unique)"))
        seen.add(cluster["name"])
    if len(clusters) > MAX_WORKER_CLUSTERS:
        out.append(((*at, "multiKueue", "clusters"), f"Too many: {len(clusters)}: must have at most "
                                                     f"{MAX_WORKER_CLUSTERS} items (MultiKueueConfig spec.clusters)"))
    return out


def _together_problems(infra: InfraSpec) -> list[tuple[Path, str]]:
    """Kueue's podset-group rules (jobframework.ValidatePodSetGroupingTopology), before rendering."""
    kr, mode = infra["kuberay"], infra["launch"]["mode"]
    at: Path = ("infra", "kueue", "topology", "together")
    if mode not in ("rayjob", "bringup"):
        return []  # not pod sets of one Workload: nothing to group (check's summary says so)
    counts = {role: kr[role]["replicas"] for role in ("trainer", "inference")}
    if min(counts.values()) < 1:
        return [(at, "needs both trainer and inference pods (kueue: can only define groups of exactly 2 pod sets)")]
    wanted = {role: topology_of(infra, role) for role in counts}
    if None in wanted.values():
        return [(at, "needs a topology request on both trainer and inference (infra.kueue.topology.mode and level); "
                     "set together: false to place them without one")]
    if wanted["trainer"] != wanted["inference"]:
        shown = {role: " ".join(w) for role, w in wanted.items() if w}
        return [(at, "kueue: must specify 'kueue.x-k8s.io/podset-required-topology' or "
                     "'kueue.x-k8s.io/podset-preferred-topology' topology consistent with the other pod set in the "
                     f"group (got trainer: {shown['trainer']}, inference: {shown['inference']})")]
    if counts["trainer"] != 1 and counts["inference"] != 1:
        return [(at, "kueue: can only define groups where at least one pod set has only 1 replica, got: "
                     f"{counts['trainer']} replica(s) and {counts['inference']} replica(s) in the group (trainer, "
                     "inference); without together each pod set is placed in a domain of its own")]
    return []
