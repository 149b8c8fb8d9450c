"""Kueue's admission of one workload: queue lookup, flavor assignment per pod set, preemption.

Follows Kueue v0.19.2's scheduler (``pkg/scheduler/flavorassigner/flavorassigner.go``,
``pkg/scheduler/scheduler.go``, ``pkg/controller/core/workload_controller.go``); no code was
copied. For each pod set (or podset group), in order, and each resource group it needs: the
ClusterQueue's flavors are tried in their order; a flavor must match the pods' node selector
and affinity and tolerate its taints (and support the topology request), then for each covered
resource ``previous pod sets + this one`` is compared with what the queue can use:

* more than it could ever have (``potential_available``): ``insufficient quota for ... > maximum
  capacity`` — the flavor can never hold it (``ExceedsMaxQuota`` if no flavor can);
* more than is unused now (``available``): ``insufficient unused quota for ..., N more needed``
  — then, if the request is within the queue's nominal quota, or a subtree of the cohort holds
  it (reclaim in the hierarchy), or ``borrowWithinCohort`` allows preempting while borrowing,
  preemption is simulated (``kueue_preempt``); without targets the workload waits
  (``WaitingForQuota``), and else the flavor does not fit now;
* else it fits, with a borrowing level (0 within the nominal quota, else the height of the
  lowest cohort whose subtree holds it: lower is preferred).

Kueue's flavor fungibility decides when to stop (default: stop at a flavor that fits, even by
borrowing; try the next one instead of preempting). Messages are Kueue's own. When a flavor
needs preemption, the targets are those of the whole assignment (``Preemptor.GetTargets``).
Fair sharing and admission fair sharing are not simulated.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.kube import as_mapping, selector_matches
from dockyard_k8s.plan.inventory import Node, pod_units
from dockyard_k8s.plan.kueue_model import (
    FR,
    Admitted,
    ClusterQueue,
    Flavor,
    Snapshot,
    add_usage,
    available,
    kueue_amount,
    potential_available,
)
from dockyard_k8s.plan.kueue_preempt import (
    Preemptor,
    Target,
    borrow_within_cohort,
    lowest_fitting_subtree,
    preemption_targets,
    simulate,
)
from dockyard_k8s.plan.predicates import Requirements, node_affinity_ok, untolerated_taint

# QuotaReserved reasons (apis/kueue/v1beta2/workload_types.go), most severe last.
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
_SEVERITY = {"": 0, "TopologyPlacementFailed": 1, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4}

# preemption modes of a flavor, worst first (flavorassigner's preemptionMode)
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)


@dataclass
class PodSetRequest:
    """One pod set of a queued workload, as Kueue sizes it."""

    name: str
    count: int
    total: dict[str, int]  # requests of all its pods (cpu in millicores)
    spec: dict[str, Any]  # the pod template's spec (selector, affinity, tolerations)
    topology: tuple[str, str] | None  # (required|preferred, level)
    group: str | None  # kueue.x-k8s.io/podset-group-name
    slice_level: str | None = None  # podset-slice-required-topology (with podset-slice-size)
    unconstrained: bool | None = None  # podset-unconstrained-topology, when given

    @property
    def explicit_tas(self) -> bool:
        """IsExplicitlyRequestingTAS: a level, unconstrained (even false) or slices asked for."""
        return self.topology is not None or self.unconstrained is not None or self.slice_level is not None

    def has_level(self, levels: list[str]) -> bool:
        """TASFlavorSnapshot.HasLevel: the request's level (required or preferred; the highest for slices
        alone; the lowest for unconstrained: true; none else) and its slices' level (the lowest by
        default) are levels of the flavor's Topology."""
        if not levels:
            return False
        main = (self.topology[1] if self.topology else levels[0] if self.slice_level
                else levels[-1] if self.unconstrained else None)
        return main in levels and (self.slice_level or levels[-1]) in levels


@dataclass
class WorkloadRequest:
    """A workload Kueue would create for one queued object (a Deployment: one per pod)."""

    ref: str  # "RayJob ns/name"
    kind: str
    namespace: str
    name: str
    queue: str
    priority: int
    priority_source: str
    pod_sets: list[PodSetRequest]
    object_index: int  # the queued object, in the objects given
    queued_at: str = ""  # the queued object's creationTimestamp; "": created now (a rendered run)


@dataclass
class PodSetResult:
    name: str
    count: int
    flavors: dict[str, str]  # resource -> flavor
    mode: int  # FIT, PREEMPT, RECLAIM, NO_CANDIDATES or NO_FIT
    borrows: bool
    message: str  # Kueue's reasons for this pod set ("" when it fits)
    reason: str  # the most severe QuotaReserved reason of its flavors ("" when it fits)


@dataclass
class Verdict:
    """What Kueue would do with a workload now."""

    workload: WorkloadRequest
    cluster_queue: str | None
    state: str  # admitted | preempt | waiting | never | misconfigured | inactive
    reason: str  # Kueue's condition reason
    message: str  # Kueue's condition message
    pod_sets: list[PodSetResult] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)  # workloads it would preempt
    admission_checks: list[str] = field(default_factory=list)  # names of the queue's checks
    notes: list[str] = field(default_factory=list)
    usage: dict[FR, int] = field(default_factory=dict)  # what it reserves, (flavor, resource) -> amount, once admitted

    @property
    def admitted(self) -> bool:
        return self.state == "admitted"

    @property
    def borrowing(self) -> bool:
        return any(ps.borrows for ps in self.pod_sets)


# --- the workloads of a run ----------------------------------------------------------------------


def _priority(snap: Snapshot, obj: dict[str, Any], sets: list[kueue.PodSet]) -> tuple[int, str, list[str]]:
    wpc = kueue.priority_class(obj)
    if wpc:
        if wpc in snap.workload_priorities:
            return snap.workload_priorities[wpc], f"WorkloadPriorityClass {wpc}", []
        return 0, f"WorkloadPriorityClass {wpc}", [
            f"WorkloadPriorityClass {wpc} is not among the Kueue objects: priority 0 assumed (Kueue does not create "
            "the Workload while it is missing)"]
    for ps in sets:
        name = ps.spec.get("priorityClassName")
        if isinstance(name, str) and name:
            if name in snap.pod_priorities:
                return snap.pod_priorities[name], f"PriorityClass {name}", []
            return 0, f"PriorityClass {name}", [f"PriorityClass {name} of the pods is not among the objects read: "
                                                "priority 0 assumed"]
    return snap.default_priority, "the default priority", []


def _slices_and_unconstrained(metadata: dict[str, Any]) -> tuple[str | None, bool | None]:
    """The slice level (podset-slice-required-topology, taken only with podset-slice-size) and the
    podset-unconstrained-topology boolean of a pod template (jobframework's PodSetTopologyRequest)."""
    annotations = as_mapping(metadata.get("annotations"))
    level = annotations.get(kueue.SLICE_REQUIRED_TOPOLOGY)
    value = str(annotations.get(kueue.UNCONSTRAINED_TOPOLOGY, "")).lower()
    unconstrained = True if value in ("1", "t", "true") else False if value in ("0", "f", "false") else None
    return (str(level) if level is not None and kueue.SLICE_SIZE in annotations else None), unconstrained


def workload_requests(snap: Snapshot, objects: list[dict[str, Any]]) -> tuple[list[WorkloadRequest], list[str]]:
    """The workloads Kueue would create for the queued objects among ``objects``, in apply order."""
    out: list[WorkloadRequest] = []
    notes: list[str] = []
    for i, obj in enumerate(objects):
        queue = kueue.queue_name(obj)
        if not queue or obj.get("kind") not in kueue.INTEGRATED_KINDS:
            continue
        meta = as_mapping(obj.get("metadata"))
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name", ""))
        sets = kueue.pod_sets(obj)
        priority, source, said = _priority(snap, obj, sets)
        notes += [n for n in said if n not in notes]
        pod_sets = []
        for ps in sets:
            per_pod = pod_units(ps.spec)
            group = as_mapping(ps.metadata.get("annotations")).get(kueue.POD_SET_GROUP)
            pod_sets.append(PodSetRequest(ps.name, ps.count, {k: v * ps.count for k, v in per_pod.items()}, ps.spec,
                                          kueue.topology_request(ps.metadata), str(group) if group else None,
                                          *_slices_and_unconstrained(ps.metadata)))
        ref = f"{obj.get('kind')} {ns}/{name}"
        for n in range(kueue.workload_count(obj)):
            who = f"{ref} pod {n + 1}" if obj.get("kind") == "Deployment" else ref
            out.append(WorkloadRequest(who, str(obj.get("kind")), ns, name, queue, priority, source, pod_sets, i,
                                       str(meta.get("creationTimestamp") or "")))
    return out, notes


# --- queue lookup --------------------------------------------------------------------------------


def _queue(snap: Snapshot, wl: WorkloadRequest) -> Verdict | ClusterQueue:
    """The workload's ClusterQueue, or Kueue's reason not to consider it at all (missing or stopped queues...)."""
    lq = snap.local_queues.get((wl.namespace, wl.queue))
    if lq is None:
        return Verdict(wl, None, "misconfigured", MISCONFIGURED, f"LocalQueue {wl.queue} doesn't exist")
    spec = as_mapping(lq.get("spec"))
    cq_name = str(spec.get("clusterQueue", ""))
    if (spec.get("stopPolicy") or "None") != "None":
        return Verdict(wl, cq_name, "inactive", SUSPENDED, f"LocalQueue {wl.queue} is inactive")
    cq = snap.queues.get(cq_name)
    if cq is None:
        return Verdict(wl, cq_name, "misconfigured", MISCONFIGURED, f"ClusterQueue {cq_name} doesn't exist")
    why = inactive_reason(snap, cq)
    if why:
        return Verdict(wl, cq_name, "inactive", SUSPENDED, f"ClusterQueue {cq_name} is inactive", notes=[why])
    labels = snap.namespaces.get(wl.namespace) or {"kubernetes.io/metadata.name": wl.namespace}
    if cq.namespace_selector is None or not selector_matches(cq.namespace_selector, labels):
        note = ("the ClusterQueue has no namespaceSelector, which admits no namespace (set {} for all, or match "
                f"kubernetes.io/metadata.name: {wl.namespace})") if cq.namespace_selector is None else (
            f"namespace {wl.namespace} (labels {dict(sorted(labels.items()))}) is not selected")
        return Verdict(wl, cq_name, "misconfigured", MISCONFIGURED,
                       "workload namespace doesn't match ClusterQueue selector", notes=[note])
    return cq


def inactive_reason(snap: Snapshot, cq: ClusterQueue) -> str:
    """Why Kueue holds a ClusterQueue inactive, "" when it is active (its Active condition's reasons)."""
    if cq.stop_policy != "None":
        return f"stopPolicy is {cq.stop_policy} (Stopped)"
    missing = [f for _, flavors in cq.groups for f in flavors if f not in snap.flavors]
    if missing:
        return f"ResourceFlavor {', '.join(sorted(set(missing)))} not found (FlavorNotFound)"
    checks = [c for c in cq.admission_checks if c not in snap.admission_checks]
    if checks:
        return f"AdmissionCheck {', '.join(checks)} not found (AdmissionCheckNotFound)"
    topologies = [f.topology for _, flavors in cq.groups for name in flavors
                  if (f := snap.flavors[name]).topology and f.topology not in snap.topologies]
    if topologies:
        return f"Topology {', '.join(sorted({str(t) for t in topologies}))} not found (TopologyNotFound)"
    return ""


# --- one flavor ----------------------------------------------------------------------------------


def _flavor_mismatch(snap: Snapshot, cq: ClusterQueue, flavor: Flavor, covered: list[str],
                     pod_sets: list[PodSetRequest]) -> str | None:
    """checkFlavorForPodSets: TAS support, taints, node selector and affinity on the flavor's labels."""
    tas_only = all(snap.flavors[f].topology for _, fl in cq.groups for f in fl if f in snap.flavors)
    for ps in pod_sets:
        # checkPodSetAndFlavorMatchForTAS: only an implied request (none given, a TAS-only queue) matches any
        # flavor; an explicit one is checked against the flavor's Topology even in a TAS-only queue.
        if ps.explicit_tas:
            if not flavor.topology:
                if any(r in covered for r in ps.total):
                    return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
            elif not ps.has_level(snap.topologies.get(flavor.topology, [])):
                return f'Flavor "{flavor.name}" does not contain the requested level'
        elif flavor.topology and not tas_only:
            return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
        tolerations = [*(t for t in ps.spec.get("tolerations") or [] if isinstance(t, dict)), *flavor.tolerations]
        if (taint := untolerated_taint(flavor.node_taints, tolerations)) is not None:
            key = f"{taint.get('key')}={taint['value']}" if taint.get("value") else taint.get("key")
            return f"untolerated taint {key}:{taint.get('effect')} in flavor {flavor.name}"
        keys = set(flavor.node_labels)
        selector = {str(k): str(v) for k, v in as_mapping(ps.spec.get("nodeSelector")).items() if k in keys}
        node_aff = as_mapping(as_mapping(as_mapping(ps.spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"))
        terms = [{"matchExpressions": [e for e in as_mapping(term).get("matchExpressions") or []
                                       if as_mapping(e).get("key") in keys]}
                 for term in node_aff.get("nodeSelectorTerms") or []]
        if not all(t["matchExpressions"] for t in terms):  # a term with no relevant key matches any flavor
            terms = []
        req = Requirements("", {}, {}, node_selector=selector, affinity_terms=terms or None)
        if not node_affinity_ok(req, Node(flavor.name, "", dict(flavor.node_labels), [], False, {})):
            return f"flavor {flavor.name} doesn't match node affinity"
    return None


def _fits_quota(snap: Snapshot, cq: ClusterQueue, fr: FR, assumed: int, request: int, who: Preemptor
                ) -> tuple[int, int, str, str]:
    """fitsResourceQuota: (mode, borrowing level, message, no-fit reason). Preemption is simulated only
    when the request is within the queue's nominal quota, or a subtree of the cohort holds it (reclaim in
    the hierarchy), or ``borrowWithinCohort`` lets the queue preempt while borrowing."""
    flavor, res = fr
    value = assumed + request
    cap = potential_available(cq.node, fr)
    if value > cap:
        return NO_FIT, 0, (f"insufficient quota for {res} in flavor {flavor}, previously considered podsets "
                           f"requests ({kueue_amount(res, assumed)}) + current podset request "
                           f"({kueue_amount(res, request)}) > maximum capacity ({kueue_amount(res, cap)})"), \
            EXCEEDS_MAX_QUOTA
    borrow, may_reclaim = lowest_fitting_subtree(cq.node, fr, value)
    free = max(0, available(cq.node, fr))
    if value <= free:
        return FIT, borrow, "", ""
    message = f"insufficient unused quota for {res} in flavor {flavor}, {kueue_amount(res, value - free)} more needed"
    quota = cq.node.quotas.get(fr)
    if (quota.nominal if quota else 0) >= value or may_reclaim or borrow_within_cohort(cq)[0]:
        found, borrow = simulate(snap, cq, who, fr, value)
        if not found:
            return NO_CANDIDATES, borrow, message, WAITING_FOR_QUOTA
        return (PREEMPT if any(t.workload.cluster_queue == cq.name for t in found) else RECLAIM), borrow, message, ""
    return NO_FIT, borrow, message, WAITING_FOR_QUOTA


def _preferred(a: tuple[int, int], b: tuple[int, int], fungibility: dict[str, Any]) -> bool:
    """isPreferred: is (mode, borrow) ``a`` better than ``b``?"""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if fungibility.get("preference") == "PreemptionOverBorrowing":
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]


def _try_next(mode: tuple[int, int], fungibility: dict[str, Any]) -> bool:
    if mode[0] in (NO_FIT, NO_CANDIDATES):
        return True
    if mode[0] in (PREEMPT, RECLAIM) and (fungibility.get("whenCanPreempt") or "TryNextFlavor") == "TryNextFlavor":
        return True
    return bool(mode[1] and (fungibility.get("whenCanBorrow") or "MayStopSearch") == "TryNextFlavor")


@dataclass
class _Found:
    flavors: dict[str, tuple[str, int, int]]  # resource -> (flavor, mode, borrowing level)
    mode: tuple[int, int]
    reasons: list[str]
    no_fit: str  # most severe reason among the no-fit flavors


def _find_flavor(snap: Snapshot, cq: ClusterQueue, group: tuple[list[str], list[str]], requests: dict[str, int],
                 pod_sets: list[PodSetRequest], assumed: dict[FR, int], who: Preemptor) -> _Found:
    """findFlavorForPodSets for one resource group."""
    covered, flavors = group
    wanted = {r: v for r, v in requests.items() if r in covered}
    best: dict[str, tuple[str, int, int]] | None = None
    best_mode: tuple[int, int] = (NO_FIT, 1 << 30)
    reasons: list[str] = []
    reasons_per_flavor: list[str] = []
    for name in flavors:
        flavor = snap.flavors[name]
        mismatch = _flavor_mismatch(snap, cq, flavor, covered, pod_sets)
        if mismatch:
            reasons.append(mismatch)
            reasons_per_flavor.append(NO_MATCHING_FLAVOR)
            continue
        chosen: dict[str, tuple[str, int, int]] = {}
        mode: tuple[int, int] = (FIT, 0)
        flavor_reason = ""
        for res in sorted(wanted):
            fr = (name, res)
            m, borrow, message, no_fit = _fits_quota(snap, cq, fr, assumed.get(fr, 0), wanted[res], who)
            if message:
                reasons.append(message)
                if _SEVERITY.get(no_fit, 0) > _SEVERITY.get(flavor_reason, 0):
                    flavor_reason = no_fit
            if _preferred(mode, (m, borrow), cq.fungibility):
                mode = (m, borrow)
            if mode[0] != NO_FIT:  # Kueue still checks (and explains) the flavor's other resources
                chosen[res] = (name, m, borrow)
        if mode[0] == NO_FIT or mode[0] == NO_CANDIDATES:
            reasons_per_flavor.append(flavor_reason or WAITING_FOR_QUOTA)
        if not _try_next(mode, cq.fungibility):
            best, best_mode = chosen, mode
            break
        if _preferred(mode, best_mode, cq.fungibility):
            best, best_mode = chosen, mode
    # resolveNoFitReason: the least severe blocker among a group's alternative flavors
    no_fit = min(reasons_per_flavor, key=lambda r: _SEVERITY.get(r, 0)) if reasons_per_flavor else NO_MATCHING_FLAVOR
    return _Found(best or {}, best_mode, [] if best_mode[0] == FIT else reasons, no_fit)


# --- the workload --------------------------------------------------------------------------------


def _requests(ps: PodSetRequest, covers_pods: bool) -> dict[str, int]:
    """A pod set's requests as the queue counts them (``pods`` too when a resource group covers it)."""
    return {**ps.total, "pods": ps.count} if covers_pods else ps.total


def assign(snap: Snapshot, wl: WorkloadRequest) -> Verdict:
    """What Kueue does with ``wl`` on ``snap`` now (``snap`` is not changed)."""
    cq = _queue(snap, wl)
    if isinstance(cq, Verdict):
        return cq
    covers_pods = cq.group_of("pods") is not None
    groups: dict[str, list[PodSetRequest]] = {}
    for i, ps in enumerate(wl.pod_sets):
        groups.setdefault(ps.group or f"#{i}", []).append(ps)
    assumed: dict[FR, int] = {}
    contested: set[FR] = set()  # (flavor, resource) pairs assigned by preemption
    results: list[PodSetResult] = []
    for members in groups.values():
        requests: Counter[str] = Counter()
        for ps in members:
            requests.update(_requests(ps, covers_pods))
        chosen: dict[str, tuple[str, int, int]] = {}
        reasons: list[str] = []
        severity, failed = "", False
        for res in sorted(requests):
            group = cq.group_of(res)
            if group is None:
                if requests[res] == 0:
                    continue
                reasons, severity, failed = [f"resource {res} unavailable in ClusterQueue"], NO_MATCHING_FLAVOR, True
                break
            if res in chosen:
                continue
            found = _find_flavor(snap, cq, group, requests, members, assumed, Preemptor(wl.priority, wl.queued_at))
            reasons += found.reasons
            if not found.flavors:
                severity, failed = found.no_fit, True
                break
            chosen.update(found.flavors)
            if found.mode[0] == NO_CANDIDATES:
                severity = found.no_fit
        for ps in members:
            mine = {r: chosen[r] for r in _requests(ps, covers_pods) if r in chosen}
            mode = min((m for _, m, _ in mine.values()), default=FIT) if not failed else NO_FIT
            message = ", ".join(sorted(reasons)) if (failed or mode != FIT) else ""
            results.append(PodSetResult(ps.name, ps.count, {r: f for r, (f, _, _) in mine.items()}, mode,
                                        any(b > 0 for _, _, b in mine.values()), message,
                                        (severity or WAITING_FOR_QUOTA) if message else ""))
            for res, value in _requests(ps, covers_pods).items():
                if res in chosen:
                    fr = (chosen[res][0], res)
                    assumed[fr] = assumed.get(fr, 0) + value
                    if chosen[res][1] != FIT:
                        contested.add(fr)
        if failed:
            break
    return _verdict(snap, wl, cq, results, contested, assumed)


def _verdict(snap: Snapshot, wl: WorkloadRequest, cq: ClusterQueue, results: list[PodSetResult], contested: set[FR],
             usage: dict[FR, int]) -> Verdict:
    """The workload's condition. When a flavor needs preemption, the targets come from the whole
    assignment (Preemptor.GetTargets: every (flavor, resource) needing it, all of the workload's usage);
    without any, the workload waits."""
    message = "; ".join(f"couldn't assign flavors to pod set {r.name}: {r.message}" for r in results if r.message)
    checks = list(cq.admission_checks)
    worst = min((r.mode for r in results), default=NO_FIT)
    if len(results) < len(wl.pod_sets) or worst == NO_FIT:
        reason = max((r.reason for r in results if r.mode == NO_FIT), key=lambda x: _SEVERITY.get(x, 0),
                     default=NO_MATCHING_FLAVOR)
        state = "never" if reason in (EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR) else "waiting"
        return Verdict(wl, cq.name, state, reason, message, results, admission_checks=checks)
    if worst != FIT:
        targets = preemption_targets(snap, cq, Preemptor(wl.priority, wl.queued_at), contested, usage)
        if not targets:
            return Verdict(wl, cq.name, "waiting", WAITING_FOR_QUOTA, message, results, admission_checks=checks)
        return Verdict(wl, cq.name, "preempt", WAITING_FOR_QUOTA,
                       f"{message}. Pending the preemption of {len(targets)} workload(s)", results, targets, checks)
    return Verdict(wl, cq.name, "admitted", "QuotaReserved", f"Quota reserved in ClusterQueue {cq.name}", results,
                   admission_checks=checks, usage=usage)


def admit(snap: Snapshot, verdict: Verdict) -> None:
    """Charge an admitted workload's usage to its ClusterQueue (the next workload sees it)."""
    if not verdict.admitted or verdict.cluster_queue is None:
        return
    cq = snap.queues[verdict.cluster_queue]
    for fr, value in verdict.usage.items():
        add_usage(cq.node, fr, value)
    cq.workloads.append(Admitted(verdict.workload.ref, verdict.workload.namespace, cq.name, verdict.workload.priority,
                                 dict(verdict.usage)))
