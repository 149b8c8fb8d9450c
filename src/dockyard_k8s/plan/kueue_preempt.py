"""Kueue's classical preemption: which admitted workloads an incoming one evicts, and why.

Read from Kueue v0.19.2, ``pkg/scheduler/preemption`` (``preemption.go`` classicalPreemptions,
fillBackWorkloads, workloadFits; ``preemption_oracle.go``; ``classical/hierarchical_preemption.go``
and ``candidate_generator.go``; ``common/ordering.go`` and ``preemption_policy.go``); no code was
copied. Fair sharing is off (Kueue's default), so this is the whole algorithm:

1. **candidates**: the lower-priority workloads of the queue itself (``withinClusterQueue``), and,
   with ``reclaimWithinCohort``, those of other queues of the cohort tree that use more than their
   nominal quota in a contested (flavor, resource). Walking from the queue to the root, a queue
   whose request fits within a subtree's quota has a *hierarchical advantage* over what others use
   of that subtree (reclaimed whatever the priority policy says of borrowing); the others are
   *priority* candidates, which may be taken while the preemptor borrows only when
   ``borrowWithinCohort`` allows it (below its ``maxPriorityThreshold``);
2. **order** (:func:`ordered`): evicted first, other queues' before the queue's own, lowest
   priority, most recently admitted, then by UID; hierarchical candidates, then priority ones,
   then the queue's own;
3. **removal**: candidates are removed in that order (skipping those whose queue no longer borrows)
   until the incoming workload fits — first allowing it to borrow after admission or not, as
   Kueue chooses; a candidate reclaimed *without* borrowing only counts if the preemptor does not
   borrow once admitted;
4. **fill back**: in reverse order, every target the workload still fits without is given back,
   so the set is minimal.

Topology-aware placement is not part of the fit here (``kueue_plan`` places admitted pod sets).
"""

from __future__ import annotations

from dataclasses import dataclass

from dockyard_k8s.kube import as_mapping
from dockyard_k8s.plan.kueue_model import (
    FR,
    Admitted,
    ClusterQueue,
    QuotaNode,
    Snapshot,
    add_usage,
    available,
    borrowing_with,
    remove_usage,
    within_nominal,
)

# The Preempted condition's reasons (apis/kueue/v1beta2/workload_types.go).
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# classical.preemptionVariant: how a candidate may be preempted
WITHIN_CQ, HIERARCHICAL_RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
_REASON = {WITHIN_CQ: IN_CLUSTER_QUEUE, HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
           RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION, RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING}


@dataclass(frozen=True, slots=True)
class Target:
    """A workload Kueue evicts for the incoming one, with the Preempted condition's reason."""

    workload: Admitted
    reason: str


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The incoming workload, as the preemption policies compare it with a candidate."""

    priority: int
    queued_at: str = ""  # its queue-order time (RFC 3339, sorts as text); "": created now, the newest


@dataclass(frozen=True, slots=True)
class _Candidate:
    workload: Admitted
    variant: int
    lca: QuotaNode | None  # another queue's candidate: the subtree it was found under


# --- the quota tree, as the preemption code reads it ---------------------------------------------------


def _height(node: QuotaNode) -> int:
    """getNodeHeight: the distance from a cohort to its farthest leaf."""
    height = min(len(node.children), 1)
    for child in node.children:
        if not child.cq:
            height = max(height, _height(child) + 1)
    return height


def lowest_fitting_subtree(node: QuotaNode, fr: FR, value: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits: (how far up the quota for ``value`` more comes from: 0 within
    the queue's nominal quota, else the height of the lowest cohort whose subtree holds it; whether that
    subtree is smaller than the whole tree, i.e. the queue may reclaim within the hierarchy)."""
    if node.parent is None or not borrowing_with(node, fr, value):
        return 0, node.parent is not None
    remaining = value - node.local_available(fr)
    for cohort in node.parents():
        if not borrowing_with(cohort, fr, remaining):
            return _height(cohort), cohort.parent is not None
        remaining -= cohort.local_available(fr)
    return _height(node.root()), False


def _fits_in_quota(node: QuotaNode, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    """QuantitiesFitInQuota: whether ``requests`` fit the node's own quota, and what is left for its parent."""
    fits = all(not borrowing_with(node, fr, v) for fr, v in requests.items())
    return fits, {fr: max(0, v - node.local_available(fr)) for fr, v in requests.items()}


def charge(snap: Snapshot, w: Admitted, sign: int) -> None:
    """Give (``sign`` 1) or take back (-1) an admitted workload's usage to its queue and cohorts."""
    node = snap.queues[w.cluster_queue].node
    for fr, value in w.usage.items():
        (add_usage if sign > 0 else remove_usage)(node, fr, value)


# --- candidates -----------------------------------------------------------------------------------


def _satisfies(policy: str, who: Preemptor, candidate: Admitted) -> bool:
    """SatisfiesPreemptionPolicy: LowerOrNewerEqualPriority also takes an equal-priority candidate queued
    after the incoming workload (its queue-order time: GetQueueOrderTimestamp). A workload created now is
    the newest; a candidate without a time is taken as the oldest (Kueue's zero time)."""
    if policy == "LowerOrNewerEqualPriority" and who.priority == candidate.priority:
        return bool(who.queued_at and candidate.queued_at) and who.queued_at < candidate.queued_at
    if policy in ("LowerPriority", "LowerOrNewerEqualPriority"):
        return who.priority > candidate.priority
    return policy == "Any"


def borrow_within_cohort(cq: ClusterQueue) -> tuple[bool, int | None]:
    """(borrowWithinCohort allows preempting while borrowing, i.e. canPreemptWhileBorrowing with fair sharing
    off; its maxPriorityThreshold)."""
    bwc = as_mapping(cq.preemption.get("borrowWithinCohort"))
    threshold = bwc.get("maxPriorityThreshold")
    return (bwc.get("policy") or "Never") != "Never", threshold if isinstance(threshold, int) else None


def _variant(cq: ClusterQueue, who: Preemptor, w: Admitted, frs: set[FR], advantage: bool) -> int | None:
    """classifyPreemptionVariant; None: it cannot be preempted."""
    if not any(fr in frs for fr in w.usage):
        return None
    own = w.cluster_queue == cq.name
    policy = cq.preemption.get("withinClusterQueue" if own else "reclaimWithinCohort") or "Never"
    if not _satisfies(str(policy), who, w):
        return None
    if own:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL_RECLAIM
    allowed, threshold = borrow_within_cohort(cq)
    if not allowed or w.priority >= who.priority or (threshold is not None and w.priority > threshold):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _from_queue(queue: ClusterQueue, cq: ClusterQueue, who: Preemptor, frs: set[FR], advantage: bool,
                lca: QuotaNode | None) -> list[_Candidate]:
    found = [(w, _variant(cq, who, w, frs, advantage)) for w in queue.workloads]
    return [_Candidate(w, v, lca) for w, v in found if v is not None]


def _collect(snap: Snapshot, cq: ClusterQueue, who: Preemptor, frs: set[FR], node: QuotaNode, lca: QuotaNode,
             skip: QuotaNode | None, advantage: bool, into: list[_Candidate]) -> None:
    """collectCandidatesInSubtree: the workloads of queues under ``node`` past their nominal quota, through
    cohorts past theirs, leaving out ``skip`` (the subtree already visited)."""
    for child in node.children:
        if not child.cq and child is not skip and not within_nominal(child, frs):
            _collect(snap, cq, who, frs, child, lca, skip, advantage, into)
    for child in node.children:
        if child.cq and child is not cq.node and not within_nominal(child, frs):
            into += _from_queue(snap.queues[child.name], cq, who, frs, advantage, lca)


def _candidates(snap: Snapshot, cq: ClusterQueue, who: Preemptor, frs: set[FR], usage: dict[FR, int]
                ) -> tuple[list[_Candidate], list[_Candidate], list[_Candidate]]:
    """(the queue's own, hierarchical, priority) candidates."""
    within = (cq.preemption.get("withinClusterQueue") or "Never") != "Never"
    own = _from_queue(cq, cq, who, frs, False, None) if within else []
    hierarchical: list[_Candidate] = []
    by_priority: list[_Candidate] = []
    if cq.node.parent is None or (cq.preemption.get("reclaimWithinCohort") or "Never") == "Never":
        return own, hierarchical, by_priority
    advantage, remaining = _fits_in_quota(cq.node, usage)
    previous = None
    for subtree in cq.node.parents():
        _collect(snap, cq, who, frs, subtree, subtree, previous, advantage,
                 hierarchical if advantage else by_priority)
        fits, remaining = _fits_in_quota(subtree, remaining)
        advantage = advantage or fits  # every workload using this subtree's quota is farther from it
        previous = subtree
    return own, hierarchical, by_priority


def ordered(workloads: list[Admitted], cluster_queue: str) -> list[Admitted]:
    """CandidatesOrdering: evicted first, other queues' before ``cluster_queue``'s, lowest priority,
    most recently admitted (a workload without a QuotaReserved time counts as admitted now), by UID."""
    out = sorted(workloads, key=lambda w: w.uid)
    out.sort(key=lambda w: (not w.reserved_at, w.reserved_at), reverse=True)
    out.sort(key=lambda w: (not w.evicted, w.cluster_queue == cluster_queue, w.priority))
    return out


def _ordered(candidates: list[_Candidate], cluster_queue: str) -> list[_Candidate]:
    by_id = {id(c.workload): c for c in candidates}
    return [by_id[id(w)] for w in ordered([c.workload for c in candidates], cluster_queue)]


# --- the targets ------------------------------------------------------------------------------------


def _valid(snap: Snapshot, cq: ClusterQueue, c: _Candidate, borrowing: bool, frs: set[FR]) -> bool:
    """candidateIsValid: another queue's candidate only while its queue (and the cohorts up to where it was
    found) still use more than their quota; one reclaimed without borrowing only when no borrowing is allowed."""
    if c.workload.cluster_queue == cq.name:
        return True
    if borrowing and c.variant == RECLAIM_WITHOUT_BORROWING:
        return False
    node = snap.queues[c.workload.cluster_queue].node
    if within_nominal(node, frs):
        return False
    for cohort in node.parents():
        if cohort is c.lca:
            break
        if within_nominal(cohort, frs):
            return False
    return True


def _fits(cq: ClusterQueue, usage: dict[FR, int], borrowing: bool) -> bool:
    """workloadFits: every request within what the queue can use now, and within its nominal quota
    unless borrowing is allowed."""
    return all((borrowing or not borrowing_with(cq.node, fr, value)) and value <= max(0, available(cq.node, fr))
               for fr, value in usage.items())


def _fill_back(snap: Snapshot, cq: ClusterQueue, usage: dict[FR, int], borrowing: bool,
               taken: list[_Candidate]) -> list[_Candidate]:
    """fillBackWorkloads: in reverse order, give back every target the workload fits without (the
    last one taken is needed: the workload did not fit before it)."""
    for i in range(len(taken) - 2, -1, -1):
        charge(snap, taken[i].workload, 1)
        if _fits(cq, usage, borrowing):
            taken[i] = taken[-1]  # Kueue's O(1) removal, which reorders the targets
            taken.pop()
        else:
            charge(snap, taken[i].workload, -1)
    return taken


def preemption_targets(snap: Snapshot, cq: ClusterQueue, who: Preemptor, frs: set[FR], usage: dict[FR, int]
                       ) -> list[Target]:
    """classicalPreemptions: the minimal set of workloads to evict so that the workload ``who``
    using ``usage`` fits ``cq``, where ``frs`` are the (flavor, resource) pairs that need preemption;
    [] when there is none. ``snap`` is left as it was."""
    own, hierarchical, by_priority = _candidates(snap, cq, who, frs, usage)
    forbidden = not borrow_within_cohort(cq)[0]
    under_nominal = all(cq.node.usage.get(fr, 0) < (q.nominal if (q := cq.node.quotas.get(fr)) else 0) for fr in frs)
    if not (hierarchical or by_priority) or (forbidden and not under_nominal):
        attempts: tuple[bool, ...] = (True,)
    elif forbidden and not hierarchical:
        attempts = (False, True)
    else:
        attempts = (True, False)
    lists = [_ordered(group, cq.name) for group in (hierarchical, by_priority, own)]
    queue = [c for group in lists for c in group if c.workload.evicted]
    queue += [c for group in lists for c in group if not c.workload.evicted]
    for borrowing in attempts:
        taken: list[_Candidate] = []
        for c in queue:
            if not _valid(snap, cq, c, borrowing, frs):
                continue
            charge(snap, c.workload, -1)
            taken.append(c)
            if _fits(cq, usage, borrowing):
                taken = _fill_back(snap, cq, usage, borrowing, taken)
                for t in taken:
                    charge(snap, t.workload, 1)
                return [Target(t.workload, _REASON[t.variant]) for t in taken]
        for t in taken:
            charge(snap, t.workload, 1)
    return []


def simulate(snap: Snapshot, cq: ClusterQueue, who: Preemptor, fr: FR, value: int) -> tuple[list[Target], int]:
    """The preemption oracle for one (flavor, resource) of the flavor assigner: the targets that would make
    room for ``value`` of ``fr``, and how far up the quota comes from once they are gone."""
    found = preemption_targets(snap, cq, who, {fr}, {fr: value})
    for t in found:
        charge(snap, t.workload, -1)
    borrow = lowest_fitting_subtree(cq.node, fr, value)[0]
    for t in found:
        charge(snap, t.workload, 1)
    return found, borrow
