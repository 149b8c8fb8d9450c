"""``plan``'s Kueue preemption against the real Kueue v0.19.2 manager (issue 22 items 11, 12).

Two cases of Kueue's own TestPreemption, played on the control plane with batch Jobs (their pods
stay Pending on a node selector no node has, so the Workloads keep their quota): the admitted
Workloads are created first; ``plan``'s engine reads the cluster as ``plan --live`` does
(``live.kueue.kueue_objects``) and names what the incoming Job would preempt; then the incoming Job
is created and the Workloads the real Kueue preempts (their Preempted condition and reason) must
be exactly those.

Kueue's queue objects are cluster-scoped: each test names them after its namespace and deletes
them at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from dockyard_k8s.live.client import connect
from dockyard_k8s.live.kueue import kueue_objects
from dockyard_k8s.plan.kueue_assign import assign, workload_requests
from dockyard_k8s.plan.kueue_model import snapshot_from_objects

pytestmark = pytest.mark.e2e

API = "kueue.x-k8s.io/v1beta2"
PRIORITIES = {"low": -1, "mid": 0, "high": 1}


def job(ns: str, name: str, queue: str, cpu: str, priority: str) -> dict[str, Any]:
    """A one-pod Job queued in LocalQueue ``queue`` whose pod never schedules (it holds its quota)."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {
                "kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": f"{ns}-{priority}"}},
            "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {"e2e.dockyard-k8s.dev/nowhere": "true"},
                "containers": [{"name": "c", "image": "busybox:1", "resources": {"requests": {"cpu": cpu}}}]}}}}


def cluster_queue(ns: str, name: str, cpu: int, preemption: dict[str, Any], cohort: str | None = None,
                  borrowing: int | None = None) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    spec: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                            "preemption": preemption,
                            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                {"name": ns, "resources": [quota]}]}]}
    if cohort:
        spec["cohortName"] = f"{ns}-{cohort}"
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": f"{ns}-{name}"}, "spec": spec}


def cohort(ns: str, name: str, parent: str | None = None, cpu: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = f"{ns}-{parent}"
    if cpu is not None:
        spec["resourceGroups"] = [{"coveredResources": ["cpu"], "flavors": [
            {"name": ns, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]
    return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": f"{ns}-{name}"}, "spec": spec}


def local_queue(ns: str, name: str, cluster_queue: str | None = None, **spec: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterQueue": f"{ns}-{cluster_queue or name}", **spec}}


@pytest.fixture
def queues(cluster: Any, ns: str) -> Iterator[Any]:
    """``queues(*objects)``: the namespace's ResourceFlavor and WorkloadPriorityClasses (low -1, mid 0,
    high 1) with ``objects``; everything cluster-scoped is deleted at the end."""
    if not cluster.ours:
        pytest.skip("creates cluster-scoped Kueue objects on the control plane")
    made: list[str] = [f"resourceflavor/{ns}", *(f"workloadpriorityclass/{ns}-{p}" for p in PRIORITIES)]

    def make(*objects: dict[str, Any]) -> None:
        cluster.apply({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": ns}},
                      *({"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": f"{ns}-{p}"},
                         "value": v} for p, v in PRIORITIES.items()), *objects)
        made.extend(f"{o['kind'].lower()}/{o['metadata']['name']}" for o in objects
                    if o["kind"] in ("ClusterQueue", "Cohort"))

    yield make
    cluster.kubectl("delete", "-n", ns, "--wait=false", "--ignore-not-found", "jobs", "--all")
    cluster.kubectl("delete", "--wait=false", "--ignore-not-found", *made)


def workloads_by_job(cluster: Any, ns: str) -> dict[str, dict[str, Any]]:
    out = {}
    for wl in cluster.get("-n", ns, "workloads")["items"]:
        owner = next((o["name"] for o in wl["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), None)
        if owner:
            out[owner] = wl
    return out


def condition(wl: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in wl.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def admit_all(cluster: Any, ns: str, jobs: list[dict[str, Any]]) -> None:
    """Create ``jobs`` one by one, each admitted by Kueue before the next (their QuotaReserved order)."""
    for j in jobs:
        cluster.apply(j)
        name = j["metadata"]["name"]
        cluster.wait(f"{name} admitted", lambda n=name: condition(workloads_by_job(cluster, ns).get(n, {}),
                                                                 "QuotaReserved").get("status") == "True")


def our_targets(cluster: Any, ns: str, incoming: dict[str, Any], active: str = "") -> tuple[str, set[tuple[str, str]]]:
    """What plan's engine says of ``incoming`` on the cluster as it is now, LocalQueue ``active`` made
    active: (state, {(job, reason)})."""
    with connect(kubeconfig=cluster.kubeconfig) as client:
        objects = kueue_objects(client, [ns])
    for o in objects:
        if o.get("kind") == "LocalQueue" and o["metadata"]["name"] == active:
            o["spec"]["stopPolicy"] = "None"
    snap = snapshot_from_objects(objects, "live cluster")
    (wl,), _ = workload_requests(snap, [incoming])
    verdict = assign(snap, wl)
    owners = {w["metadata"]["name"]: o["name"] for w in objects if w.get("kind") == "Workload"
              for o in w["metadata"].get("ownerReferences", []) if o["kind"] == "Job"}
    return verdict.state, {(owners[t.workload.name], t.reason) for t in verdict.targets}


def kueue_targets(cluster: Any, ns: str, name: str, start: Callable[[], None]) -> set[tuple[str, str]]:
    """``start()`` (create Job ``name``, or let it be admitted); once Kueue admits it, the Jobs whose
    Workloads it preempted, with the reason."""
    start()
    cluster.wait(f"{name} admitted after preemption", lambda: condition(
        workloads_by_job(cluster, ns).get(name, {}), "QuotaReserved").get("status") == "True")
    return {(job_name, condition(wl, "Preempted")["reason"]) for job_name, wl in workloads_by_job(cluster, ns).items()
            if condition(wl, "Preempted").get("status") == "True"}


def same_as_kueue(cluster: Any, ns: str, admitted: list[dict[str, Any]], incoming: dict[str, Any],
                  expected: set[tuple[str, str]]) -> None:
    """``admitted`` in order, then what plan's engine says ``incoming`` preempts (``expected``, from Kueue's
    test case) is what the real Kueue preempts."""
    admit_all(cluster, ns, admitted)
    state, ours = our_targets(cluster, ns, incoming)
    assert (state, ours) == ("preempt", expected)
    assert kueue_targets(cluster, ns, incoming["metadata"]["name"], lambda: cluster.apply(incoming)) == ours


def test_minimal_set_excludes_low_priority(cluster: Any, ns: str, queues: Any) -> None:
    """TestPreemption "minimal set excludes low priority": of low (1 cpu), mid (2) and high (3) filling
    the queue's 6 cpu, a high-priority request of 2 preempts mid alone: low, taken first as the lowest
    priority, is given back (fillBackWorkloads)."""
    queues(cluster_queue(ns, "standalone", 6, {"withinClusterQueue": "LowerPriority"}), local_queue(ns, "standalone"))
    same_as_kueue(cluster, ns, [job(ns, "low", "standalone", "1", "low"), job(ns, "mid", "standalone", "2", "mid"),
                                job(ns, "high", "standalone", "3", "high")],
                  job(ns, "in", "standalone", "2", "high"), {("mid", "InClusterQueue")})


def test_reclaim_quota_from_borrower(cluster: Any, ns: str, queues: Any) -> None:
    """TestPreemption "reclaim quota from borrower": c2 borrows 3 of c1's 6 cpu; a request of 3 in c1
    (within its nominal quota) reclaims c2-mid, the lower-priority borrower, not c1's own c1-low."""
    queues(cluster_queue(ns, "c1", 6, {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"},
                         "cohort", 6),
           cluster_queue(ns, "c2", 6, {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"}, "cohort", 6),
           local_queue(ns, "c1"), local_queue(ns, "c2"))
    same_as_kueue(cluster, ns, [job(ns, "c1-low", "c1", "3", "low"), job(ns, "c2-mid", "c2", "3", "mid"),
                                job(ns, "c2-high", "c2", "6", "high")],
                  job(ns, "in", "c1", "3", "high"), {("c2-mid", "InCohortReclamation")})


def test_borrow_within_cohort_preempts_a_lower_priority_borrower(cluster: Any, ns: str, queues: Any) -> None:
    """TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload from another
    ClusterQueue while borrowing": 10 cpu in a_standard (nominal 1) must borrow; borrowWithinCohort
    (below priority 0) lets it take a_best_effort_low, which borrows too."""
    bwc = {"policy": "LowerPriority", "maxPriorityThreshold": 0}
    spec = {"withinClusterQueue": "Never", "reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": bwc}
    queues(cluster_queue(ns, "a-standard", 1, spec, "shared", 12),
           cluster_queue(ns, "a-best-effort", 1, spec, "shared", 12),
           cluster_queue(ns, "b-best-effort", 0, spec, "shared", 13),
           cluster_queue(ns, "shared", 10, {}, "shared"),
           *(local_queue(ns, q) for q in ("a-standard", "a-best-effort", "b-best-effort")))
    same_as_kueue(cluster, ns, [job(ns, "a-best-effort-low", "a-best-effort", "10", "low"),
                                job(ns, "b-best-effort-low", "b-best-effort", "1", "low")],
                  job(ns, "in", "a-standard", "10", "mid"), {("a-best-effort-low", "InCohortReclaimWhileBorrowing")})


def test_preempt_with_hierarchical_advantage(cluster: Any, ns: str, queues: Any) -> None:
    """TestHierarchicalPreemptions "preempt with hierarchical advantage": q (no quota) is in cohort c (2
    cpu), under root r; q_borrowing, directly under r, uses c's 2 cpu. A request of 2 in q fits c's quota:
    q reclaims it whatever the priorities (both 0)."""
    any_ = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    queues(cohort(ns, "r"), cohort(ns, "c", "r", 2), cluster_queue(ns, "q", 0, any_, "c"),
           cluster_queue(ns, "q-borrowing", 0, any_, "r"), local_queue(ns, "q"), local_queue(ns, "q-borrowing"))
    same_as_kueue(cluster, ns, [job(ns, "admitted2", "q-borrowing", "2", "mid")], job(ns, "in", "q", "2", "mid"),
                  {("admitted2", "InCohortReclamation")})


def test_an_equal_priority_workload_queued_after_it_is_preempted(cluster: Any, ns: str, queues: Any) -> None:
    """TestPreemption "preempt newer workloads with the same priority" (withinClusterQueue
    LowerOrNewerEqualPriority): ``in`` is created first, in a held LocalQueue; ``later``, of the same
    priority and created after it, is admitted through another LocalQueue of the ClusterQueue. Once
    the first LocalQueue is active, ``in`` (its creationTimestamp read from the cluster) preempts
    ``later``."""
    queues(cluster_queue(ns, "starve", 2, {"withinClusterQueue": "LowerOrNewerEqualPriority"}),
           local_queue(ns, "held", "starve", stopPolicy="Hold"), local_queue(ns, "open", "starve"))
    cluster.apply(job(ns, "in", "held", "2", "mid"))
    first = cluster.wait("in's Workload", lambda: workloads_by_job(cluster, ns).get("in"))
    second = datetime.strptime(first["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC)
    cluster.wait("a later second (timestamps have seconds)", lambda: datetime.now(UTC).replace(
        microsecond=0) > second)
    admit_all(cluster, ns, [job(ns, "later", "open", "2", "mid")])
    incoming = cluster.get("-n", ns, "job", "in")
    state, ours = our_targets(cluster, ns, incoming, active="held")
    assert (state, ours) == ("preempt", {("later", "InClusterQueue")})
    assert kueue_targets(cluster, ns, "in", lambda: cluster.apply(local_queue(ns, "held", "starve"))) == ours
