"""Kueue's classical preemption in ``plan --kueue`` (plan/kueue_preempt.py), on Kueue's own test cases.

The cases of ``pkg/scheduler/preemption/preemption_test.go`` (TestPreemption),
``preemption_hierarchical_test.go`` (TestHierarchicalPreemptions) and TestCandidatesOrdering at
Kueue v0.19.2, with Kueue's expected outcome: which workloads are preempted, and why. Kueue's tests
hand GetTargets a flavor assignment; here the incoming workload goes through the whole admission
(flavor assignment, the preemption oracle, then the targets), so each case also checks that the
flavor assigner asks for preemption where Kueue's does. The ClusterQueues are Kueue's
``defaultClusterQueues`` reduced to the resources the case requests (cpu).
"""

from __future__ import annotations

from typing import Any

import pytest
from kueuekit import API, admitted, cq, flavor, lq

from dockyard_k8s.plan.kueue_assign import assign, workload_requests
from dockyard_k8s.plan.kueue_model import snapshot_from_objects
from dockyard_k8s.plan.kueue_preempt import ordered

LOWER = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}


def incoming(cpu: str, priority: int) -> list[dict[str, Any]]:
    """A one-pod Job asking for ``cpu`` in LocalQueue q, with a WorkloadPriorityClass of ``priority``."""
    name = f"priority{priority}".replace("-", "minus")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "in", "namespace": "team",
        "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": name}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}}}
    return [job, {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": priority}]


def verdict_of(objects: list[dict[str, Any]], cpu: str, priority: int, created: str | None = None):
    job, wpc = incoming(cpu, priority)
    if created:
        job["metadata"]["creationTimestamp"] = created
    snap = snapshot_from_objects([flavor("default"), *objects, wpc])
    (wl,), _ = workload_requests(snap, [job])
    return assign(snap, wl)


def used(name: str, queue: str, cpu: str, priority: int = 0, **extra: Any) -> dict[str, Any]:
    return admitted(name, queue, {"cpu": ("default", cpu)}, priority=priority, **extra)


def reserved(wl: dict[str, Any], at: str) -> dict[str, Any]:
    wl["status"]["conditions"] = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}]
    return wl


def created(wl: dict[str, Any], at: str) -> dict[str, Any]:
    wl["metadata"]["creationTimestamp"] = at
    return wl


def targets(v) -> list[tuple[str, str]]:
    return [(t.workload.name, t.reason) for t in v.targets]


def cohort_c1_c2() -> list[dict[str, Any]]:
    """c1 and c2 of Kueue's defaultClusterQueues: cpu 6 each, borrowingLimit 6, in cohort "cohort"."""
    return [cq("c1", {"default": {"cpu": (6, 6, None)}}, cohort="cohort", preemption=LOWER),
            cq("c2", {"default": {"cpu": (6, 6, None)}}, cohort="cohort",
               preemption={"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"})]


def test_minimal_set_excludes_low_priority():
    """TestPreemption "minimal set excludes low priority": low is taken first (lowest priority), then mid
    frees enough; fillBackWorkloads gives low back, as the incoming workload fits without evicting it."""
    objects = [cq("standalone", {"default": {"cpu": 6}}, preemption={"withinClusterQueue": "LowerPriority"}),
               lq("q", "standalone"), used("low", "standalone", "1", -1), used("mid", "standalone", "2"),
               used("high", "standalone", "3", 1)]
    v = verdict_of(objects, "2", 1)
    assert v.state == "preempt"
    assert targets(v) == [("mid", "InClusterQueue")]
    assert v.message.endswith(". Pending the preemption of 1 workload(s)")


def test_reclaim_quota_from_borrower():
    """TestPreemption "reclaim quota from borrower": c1 would stay within its nominal quota, c2 borrows:
    c2-mid (lower priority than the incoming workload) is reclaimed, c1's own lower-priority c1-low is not
    needed, c2-high is not lower."""
    objects = [*cohort_c1_c2(), lq("q", "c1"), used("c1-low", "c1", "3", -1), used("c2-mid", "c2", "3"),
               used("c2-high", "c2", "6", 1)]
    v = verdict_of(objects, "3", 1)
    assert v.state == "preempt"
    assert targets(v) == [("c2-mid", "InCohortReclamation")]


def test_not_enough_workloads_borrowing():
    """TestPreemption "not enough workloads borrowing": c1 (4 of 6 used) would borrow after admitting 4 more;
    reclaiming is allowed only when the preemptor is not borrowing after admission (no borrowWithinCohort),
    and once one of c2's workloads is gone c2 no longer borrows. Kueue preempts nothing: the run waits."""
    objects = [*cohort_c1_c2(), lq("q", "c1"), used("c1-high", "c1", "4", 1), used("c2-low-1", "c2", "4", -1),
               used("c2-low-2", "c2", "4", -1)]
    v = verdict_of(objects, "4", 1)
    assert (v.state, v.reason) == ("waiting", "WaitingForQuota")
    assert v.targets == []
    assert v.message == "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor " \
                        "default, 4 more needed"


def hierarchy(q_preemption: dict[str, Any]) -> list[dict[str, Any]]:
    """Cohort r; under it cohort c (2 cpu) and q_borrowing (0); under c, q (0)."""
    any_ = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    return [{"apiVersion": API, "kind": "Cohort", "metadata": {"name": "r"}, "spec": {}},
            {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parentName": "r",
             "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                 {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
            cq("q", {"default": {"cpu": 0}}, cohort="c", preemption=q_preemption),
            cq("q_borrowing", {"default": {"cpu": 0}}, cohort="r", preemption=any_), lq("q", "q")]


def test_preempt_with_hierarchical_advantage():
    """TestHierarchicalPreemptions "preempt with hierarchical advantage": the request is past q's nominal
    quota (0) but fits cohort c's, which q_borrowing uses from outside c: Kueue may reclaim in the hierarchy
    (FindHeightOfLowestSubtreeThatFits), whatever the priorities."""
    objects = [*hierarchy({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}),
               used("admitted2", "q_borrowing", "2")]
    v = verdict_of(objects, "2", 0)
    assert v.state == "preempt"
    assert targets(v) == [("admitted2", "InCohortReclamation")]


def test_forced_to_preempt_priority_candidate():
    """TestHierarchicalPreemptions "forced to preempt priority candidate": q borrows after admission and
    only borrowWithinCohort (below maxPriorityThreshold 0) lets it preempt q_same_cohort's workload;
    q_nominal, within its nominal quota, is left alone."""
    bwc = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
           "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0}}
    objects = [*hierarchy(bwc)[:3], cq("q_nominal", {"default": {"cpu": 2}}, cohort="r", preemption=LOWER),
               cq("q_same_cohort", {"default": {"cpu": 0}}, cohort="c", preemption=LOWER), lq("q", "q"),
               used("admitted_nominal", "q_nominal", "2", -10), used("admitted_same_cohort", "q_same_cohort", "2", -1)]
    v = verdict_of(objects, "2", 0)
    assert v.state == "preempt"
    assert targets(v) == [("admitted_same_cohort", "InCohortReclaimWhileBorrowing")]


@pytest.mark.parametrize(("borrow_within_cohort", "state", "preempted"), [
    (None, "waiting", []),
    ({"policy": "LowerPriority"}, "preempt", [("c2-big", "InCohortReclaimWhileBorrowing")]),
])
def test_preemption_is_tried_past_the_nominal_quota_only_when_borrowing_within_cohort_allows_it(
        borrow_within_cohort, state, preempted):
    """flavorassigner.go fitsResourceQuota: past its nominal quota (8 > 6), in a flat cohort (no subtree to
    reclaim), a ClusterQueue preempts only with borrowWithinCohort; else the flavor does not fit now and the
    workload waits, although c2 borrows with a lower priority."""
    preemption: dict[str, Any] = {"reclaimWithinCohort": "LowerPriority"}
    if borrow_within_cohort:
        preemption["borrowWithinCohort"] = borrow_within_cohort
    objects = [cq("c1", {"default": {"cpu": 6}}, cohort="cohort", preemption=preemption),
               cq("c2", {"default": {"cpu": 6}}, cohort="cohort"), lq("q", "c1"), used("c2-big", "c2", "12", -1)]
    v = verdict_of(objects, "8", 1)
    assert (v.state, targets(v)) == (state, preempted)


def prevent_starvation(*workloads: dict[str, Any]) -> list[dict[str, Any]]:
    """Kueue's "preventStarvation" ClusterQueue: cpu 6, withinClusterQueue LowerOrNewerEqualPriority."""
    return [cq("preventStarvation", {"default": {"cpu": 6}},
               preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}), lq("q", "preventStarvation"),
            *workloads]


def test_preempt_newer_workloads_with_the_same_priority():
    """TestPreemption "preempt newer workloads with the same priority": the incoming workload (priority 1)
    was created 15 s before wl2 and wl3 (priority 1, wl1 has 2): LowerOrNewerEqualPriority lets it take
    an equal-priority workload queued after it, the most recently admitted one (wl2)."""
    at = "2025-01-01T12:00:00Z"
    objects = prevent_starvation(
        reserved(used("wl1", "preventStarvation", "2", 2), at),
        created(reserved(used("wl2", "preventStarvation", "2", 1), "2025-01-01T12:00:01Z"), at),
        created(reserved(used("wl3", "preventStarvation", "2", 1), at), at))
    v = verdict_of(objects, "2", 1, created="2025-01-01T11:59:45Z")
    assert v.state == "preempt"
    assert targets(v) == [("wl2", "InClusterQueue")]


def test_a_workload_created_now_is_the_newest_and_preempts_no_equal_priority():
    """The same queue for a run not yet submitted (no creationTimestamp: created now): nothing is newer."""
    at = "2025-01-01T12:00:00Z"
    objects = prevent_starvation(*(created(reserved(used(n, "preventStarvation", "2", 1), at), at)
                                   for n in ("wl1", "wl2", "wl3")))
    v = verdict_of(objects, "2", 1)
    assert (v.state, v.targets) == ("waiting", [])


# --- TestCandidatesOrdering ---------------------------------------------------------------------------


def candidates(*workloads: dict[str, Any]):
    snap = snapshot_from_objects([flavor("default"), cq("preemptor", {"default": {"cpu": 6}}),
                                  cq("other", {"default": {"cpu": 6}}), *workloads])
    return [w for queue in snap.queues.values() for w in queue.workloads]


def test_candidates_ordering_evicted_first():
    other = used("other", "preemptor", "1", 10)
    evicted = used("evicted", "preemptor", "1", 20)
    evicted["status"]["conditions"].append({"type": "Evicted", "status": "True"})
    assert [w.name for w in ordered(candidates(other, evicted), "preemptor")] == ["evicted", "other"]


def test_candidates_ordering_workload_from_different_cq_first():
    both = candidates(used("preemptorCq", "preemptor", "1", 10), used("other", "other", "1", 10))
    assert [w.name for w in ordered(both, "preemptor")] == ["other", "preemptorCq"]


def test_candidates_ordering_old_workloads_last():
    """Equal priority: the most recently admitted (QuotaReserved) first."""
    three = candidates(reserved(used("older", "preemptor", "1"), "2025-01-01T00:00:59Z"),
                       reserved(used("younger", "preemptor", "1"), "2025-01-01T00:01:01Z"),
                       reserved(used("current", "preemptor", "1"), "2025-01-01T00:01:00Z"))
    assert [w.name for w in ordered(three, "preemptor")] == ["younger", "current", "older"]


def test_candidates_ordering_lowest_priority_first():
    """"workloads sorted by priority"."""
    two = candidates(used("high", "preemptor", "1", 10), used("low", "preemptor", "1", -10))
    assert [w.name for w in ordered(two, "preemptor")] == ["low", "high"]
