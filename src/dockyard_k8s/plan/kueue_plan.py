"""Kueue admission first, then the scheduler simulation of what Kueue lets run.

:func:`plan_with_kueue` takes the run's objects, a node inventory and a Kueue snapshot:

1. every queued object becomes the Workload(s) Kueue would create (``kueue_assign``), admitted
   in apply order against the quota, each seeing what the previous ones took;
2. a pod set with a topology request is placed on the inventory the way Kueue's TAS sizes
   domains (every pod of the pod set in one domain of the required level; anywhere in the
   flavor's nodes when preferred), so an admission Kueue cannot place is not reported as one;
3. the admitted workloads go on to the node simulation (``schedule.plan``) with what admission
   adds to their pod templates (the flavors' node labels as nodeSelector, their tolerations);
   workloads Kueue keeps suspended create no pods and are left out of it.

So the report can say: admitted and placed; admitted but the nodes cannot hold it; waiting
for quota (or preemption); never admissible, and why — in Kueue's words. Without a node
inventory only step 1 is done (quota does not depend on nodes): the node fit, and the
placement of topology requests, are said not to be checked.
"""

from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass, field
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.kube import as_mapping
from dockyard_k8s.plain import clone
from dockyard_k8s.plan.inventory import Inventory, Node
from dockyard_k8s.plan.kueue_assign import NO_FIT, Verdict, admit, assign, workload_requests
from dockyard_k8s.plan.kueue_model import (
    FR,
    ClusterQueue,
    ResourceQuota,
    Snapshot,
    available,
    potential_available,
    snapshot_from_objects,
)
from dockyard_k8s.plan.predicates import Requirements, static_reason
from dockyard_k8s.plan.schedule import PlanResult, plan

TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"


def queued_jobs(objects: list[dict[str, Any]]) -> list[str]:
    """``Kind name`` of every object of the run queued with Kueue (it carries a queue name)."""
    return [f"{o.get('kind')} {(o.get('metadata') or {}).get('name')}" for o in objects
            if o.get("kind") in kueue.INTEGRATED_KINDS and kueue.queue_name(o)]


def team_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The team's queue objects among the rendered ones (``infra.kueue.queueObjects.render``)."""
    return [o for o in objects if o.get("kind") in kueue.TEAM_KINDS and o.get("apiVersion", "").startswith("kueue.")]


def run_snapshot(objects: list[dict[str, Any]], kueue_objects: list[dict[str, Any]], source: str) -> Snapshot:
    """The Kueue snapshot the run is planned against: ``kueue_objects`` (files or the cluster's)
    without the run's own Workloads (already submitted: not someone else's usage), plus the run's
    PriorityClasses."""
    jobs = [o for o in objects if o.get("kind") in kueue.INTEGRATED_KINDS]
    kept = [o for o in kueue_objects if o.get("kind") != "Workload" or not any(kueue.owned_by(o, j) for j in jobs)]
    return snapshot_from_objects([*kept, *(o for o in objects if o.get("kind") == "PriorityClass")], source)


@dataclass
class QuotaRow:
    """One (flavor, resource) of a ClusterQueue the run asks for, before the run is admitted."""

    cluster_queue: str
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    used: int
    available: int  # unused now, cohort included (borrowing limits hold)
    maximum: int  # everything it could have if nothing else ran
    run: int = 0  # what the run's admitted pod sets take


@dataclass
class KueuePlan:
    verdicts: list[Verdict]
    nodes: PlanResult | None  # the node simulation of what Kueue admits (and of what it does not queue);
    # None: no node inventory, not checked
    snapshot: Snapshot
    source: str
    notes: list[str] = field(default_factory=list)
    quota: list[QuotaRow] = field(default_factory=list)

    @property
    def admitted(self) -> bool:
        return all(v.state in ("admitted", "preempt") for v in self.verdicts)

    @property
    def exit_code(self) -> int:
        return 0 if self.admitted and (self.nodes is None or self.nodes.fits) else 1


# --- topology-aware placement ---------------------------------------------------------------------


def _capacity(node: Node, per_pod: dict[str, int], empty: bool) -> int:
    """How many more pods of ``per_pod`` fit on ``node`` (on the empty node with ``empty``)."""
    used = {} if empty else {**node.requested, "pods": node.requested.get("pods", 0) + len(node.pods)}
    return min(max(0, node.allocatable.get(resource, 0) - used.get(resource, 0)) // amount
               for resource, amount in {**per_pod, "pods": 1}.items() if amount > 0)


def topology_failure(snap: Snapshot, verdict: Verdict, inventory: Inventory) -> tuple[str, str, bool] | None:
    """The first pod set Kueue's TAS cannot place: (pod set, Kueue's message, never even on empty nodes)."""
    for ps, result in zip(verdict.workload.pod_sets, verdict.pod_sets, strict=False):
        if ps.topology is None or not result.flavors:
            continue
        flavor = snap.flavors[next(iter(result.flavors.values()))]
        levels = snap.topologies.get(flavor.topology or "", [])
        mode, level = ps.topology
        spec = _admitted_spec(ps.spec, [flavor])
        req = Requirements.from_pod(spec, {}, verdict.workload.namespace, {})
        nodes = [n for n in inventory.nodes if all(n.labels.get(k) == v for k, v in flavor.node_labels.items())
                 and all(lv in n.labels for lv in levels) and static_reason(req, n) is None]
        per_pod = {k: -(-v // ps.count) for k, v in ps.total.items()} if ps.count else {}

        def best(empty: bool, nodes: list[Node] = nodes, level: str = level, mode: str = mode,
                 per_pod: dict[str, int] = per_pod) -> int:
            if mode == "preferred":
                return sum(_capacity(n, per_pod, empty) for n in nodes)
            domains: dict[str, int] = {}
            for n in nodes:
                domains[n.labels[level]] = domains.get(n.labels[level], 0) + _capacity(n, per_pod, empty)
            return max(domains.values(), default=0)

        now = best(False)
        if now >= ps.count:
            continue
        name = flavor.topology
        message = (f'topology "{name}" allows to fit only {now} out of {ps.count} pod(s)' if now else
                   f'topology "{name}" doesn\'t allow to fit any of {ps.count} pod(s)')
        if not nodes:
            message += f" (no node of flavor {flavor.name} carries every level of the topology: {', '.join(levels)})"
        return ps.name, message, best(True) < ps.count
    return None


# --- what admission does to the pods ----------------------------------------------------------------


def _admitted_spec(spec: dict[str, Any], flavors: list[Any]) -> dict[str, Any]:
    """The pod spec once admitted: the flavors' node labels join the nodeSelector, their tolerations
    the pod's (Kueue's podset.Merge)."""
    out = dict(spec)
    selector = dict(as_mapping(spec.get("nodeSelector")))
    tolerations = list(spec.get("tolerations") or [])
    for flavor in flavors:
        selector.update(flavor.node_labels)
        tolerations += [t for t in flavor.tolerations if t not in tolerations]
    if selector:
        out["nodeSelector"] = selector
    if tolerations:
        out["tolerations"] = tolerations
    return out


def _admitted_object(obj: dict[str, Any], verdict: Verdict, snap: Snapshot) -> dict[str, Any]:
    out = clone(obj)
    for ps, result in zip(kueue.pod_sets(out), verdict.pod_sets, strict=False):
        if not ps.path:
            continue
        node: Any = functools.reduce(operator.getitem, ps.path, out)
        flavors = [snap.flavors[f] for f in dict.fromkeys(result.flavors.values())]
        node["spec"] = _admitted_spec(as_mapping(node.get("spec")), flavors)
    return out


def plan_with_kueue(objects: list[dict[str, Any]], inventory: Inventory | None, snap: Snapshot, *,
                    atomic_gangs: bool = False, source: str = "") -> KueuePlan:
    """Kueue admission of the run's queued objects, then the node simulation of what runs (none
    without an ``inventory``)."""
    requests, notes = workload_requests(snap, objects)
    verdicts: list[Verdict] = []
    rows: dict[tuple[str, FR], QuotaRow] = {}
    for wl in requests:
        verdict = assign(snap, wl)  # snap unchanged until admit: the quota rows are as before the workload
        if (cq := snap.queues.get(verdict.cluster_queue or "")) is not None:
            _quota_rows(cq, wl.pod_sets, rows)
        if verdict.state in ("admitted", "preempt"):
            _place_topology(snap, verdict, inventory, notes)
        admit(snap, verdict)
        verdicts.append(verdict)
        if verdict.admitted:
            for fr, value in verdict.usage.items():
                if (row := rows.get((str(verdict.cluster_queue), fr))) is not None:
                    row.run += value
    placed: list[dict[str, Any]] = []
    for i, obj in enumerate(objects):
        mine = [v for v in verdicts if v.workload.object_index == i]
        if not mine:
            placed.append(obj)  # not queued: created as it is
            continue
        running = [v for v in mine if v.state in ("admitted", "preempt")]
        if not running:
            continue  # suspended: no pods
        admitted = _admitted_object(obj, running[0], snap)
        if obj.get("kind") == "Deployment":
            admitted["spec"]["replicas"] = len(running)
        placed.append(admitted)
    sets = [v for v in verdicts if v.workload.kind == "StatefulSet"]
    if len({v.state in ("admitted", "preempt") for v in sets}) > 1:
        notes.append("the StatefulSets are separate Workloads and Kueue admits them one by one: "
                     + ", ".join(f"{v.workload.name} {v.state}" for v in sets)
                     + "; the Ray head (trainer pod 0) waits for the missing pods until its bootstrap timeout")
    if any(v.state == "preempt" for v in verdicts) and inventory is not None:
        notes.append("the workloads Kueue would preempt still hold their nodes in this simulation")
    nodes = None if inventory is None else plan(placed, inventory, atomic_gangs=atomic_gangs)
    return KueuePlan(verdicts, nodes, snap, source, notes, list(rows.values()))


def _place_topology(snap: Snapshot, verdict: Verdict, inventory: Inventory | None, notes: list[str]) -> None:
    """Kueue's TAS placement of an admitted workload's topology requests: one it cannot place makes the
    workload wait (or never be admitted); without an inventory, a note that it was not checked."""
    if inventory is None:
        unplaced = [ps.name for ps in verdict.workload.pod_sets if ps.topology is not None]
        if unplaced:
            notes.append(f"topology placement not checked (no node inventory): {verdict.workload.ref} pod set "
                         f"{', '.join(unplaced)}; Kueue admits it only where its topology request can be placed")
        return
    failure = topology_failure(snap, verdict, inventory)
    if failure is None:
        return
    name, message, never = failure
    for result in verdict.pod_sets:
        if result.name == name:
            result.mode, result.message, result.reason = NO_FIT, message, TOPOLOGY_PLACEMENT_FAILED
    verdict.state = "never" if never else "waiting"
    verdict.reason = TOPOLOGY_PLACEMENT_FAILED if never else "WaitingForQuota"
    verdict.message = f"couldn't assign flavors to pod set {name}: {message}"


def _quota_rows(cq: ClusterQueue, pod_sets: list[Any], rows: dict[tuple[str, FR], QuotaRow]) -> None:
    """The queue's quota for every resource the pod sets request, as it stands before the run."""
    wanted = {r for ps in pod_sets for r in ps.total} | ({"pods"} if cq.group_of("pods") else set())
    for covered, flavors in cq.groups:
        for flavor, res in itertools.product(flavors, covered):
            fr = (flavor, res)
            if res not in wanted or (cq.name, fr) in rows:
                continue
            quota = cq.node.quotas.get(fr) or ResourceQuota(0)
            rows[(cq.name, fr)] = QuotaRow(cq.name, flavor, res, quota.nominal, quota.borrowing, quota.lending,
                                           cq.node.usage.get(fr, 0), available(cq.node, fr),
                                           potential_available(cq.node, fr))
