"""``plan --kueue`` results as text and JSON: Kueue's verdict per workload, in its words, the
quota it was judged against, then the node simulation of what Kueue admits."""

from __future__ import annotations

from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.plan import report
from dockyard_k8s.plan.kueue_assign import Verdict
from dockyard_k8s.plan.kueue_model import kueue_amount
from dockyard_k8s.plan.kueue_plan import KueuePlan

OK, FAIL, WARN = "✔", "✖", "!"
NOT_CHECKED = "not checked"

# state -> (mark, what it means for the user)
_STATES = {
    "admitted": (OK, "admitted: Kueue reserves its quota and resumes it"),
    "preempt": (WARN, "admitted after preemption"),
    "waiting": (FAIL, "waits in the queue"),
    "never": (FAIL, "can never be admitted as it is"),
    "misconfigured": (FAIL, "is not admitted: the queue is misconfigured"),
    "inactive": (FAIL, "is not admitted: the queue is stopped"),
}


def _flavors(flavors: dict[str, str]) -> str:
    by_flavor: dict[str, list[str]] = {}
    for res, flavor in flavors.items():
        by_flavor.setdefault(flavor, []).append(res)
    return "; ".join(f"{f} ({', '.join(rs)})" for f, rs in by_flavor.items()) or "-"


def _hint(v: Verdict) -> str | None:
    cq = v.cluster_queue
    if v.state == "never" and v.reason == "ExceedsMaxQuota":
        return (f"the run asks for more than ClusterQueue {cq} could ever have, borrowing from its cohort included: "
                "lower the request (replicas, gpus) or ask the admin for more nominal quota")
    if v.state == "never" and v.reason == "NoMatchingFlavor":
        return (f"no flavor of ClusterQueue {cq} can take these pods: the resources it covers, the flavors' node "
                "labels and taints, or topology support do not match")
    if v.state == "never":
        return ("no domain of the topology can hold the pod set, even on empty nodes: lower the replicas or relax "
                "the topology")
    if v.state == "waiting":
        return (f"Kueue admits it when admitted workloads of ClusterQueue {cq} (or of its cohort) finish and free "
                "the quota; `dockyard-k8s status` shows its place in the queue once submitted")
    if v.state == "preempt":
        names = ", ".join(f"{t.workload.namespace}/{t.workload.name} (priority {t.workload.priority}, "
                          f"{t.workload.cluster_queue}: {t.reason})" for t in v.targets)
        return f"Kueue evicts {names} first"
    return None


def _checks(v: Verdict, plan: KueuePlan) -> list[str]:
    out = []
    for name in v.admission_checks:
        controller = plan.snapshot.admission_checks.get(name, "")
        if controller == kueue.MULTIKUEUE_CONTROLLER:
            out.append(f"admission check {name} is MultiKueue: the Workload is dispatched to a worker cluster and "
                       "the pods run there (`dockyard-k8s status` names it; point logs at it with --context)")
        else:
            out.append(f"admission check {name} ({controller or 'unknown controller'}) must pass before the pods start")
    return out


def text(plan: KueuePlan, wide: bool = False) -> str:
    lines = [f"kueue: {plan.source}; usage: {plan.snapshot.usage_source}"]
    rows = [["WORKLOAD", "QUEUE", "POD SET", "PODS", "FLAVORS"]]
    for v in plan.verdicts:
        queue = f"{v.workload.queue} -> {v.cluster_queue or '?'}"
        for i, ps in enumerate(v.workload.pod_sets):
            result = next((r for r in v.pod_sets if r.name == ps.name), None)
            flavors = _flavors(result.flavors) if result else "-"
            if result and result.borrows and result.flavors:
                flavors += " borrowing"
            rows.append([v.workload.ref if i == 0 else "", queue if i == 0 else "", ps.name, str(ps.count), flavors])
    if len(rows) > 1:
        lines += report.table(rows)
    for v in plan.verdicts:
        mark, meaning = _STATES[v.state]
        lines.append(f"{mark} {v.workload.ref} {meaning} ({v.reason}): {v.message}")
        lines += [f"  {n}" for n in v.notes]
        hint = _hint(v)
        if hint:
            lines.append(f"  {hint}")
        if v.state in ("admitted", "preempt"):
            lines += [f"  {c}" for c in _checks(v, plan)]
        if v.workload.priority_source:
            lines.append(f"  priority {v.workload.priority} ({v.workload.priority_source})")
    if not plan.verdicts:
        lines.append("nothing of the run is queued (no kueue.x-k8s.io/queue-name label): Kueue does not gate it")
    if plan.quota:
        lines.append("quota (before the run; the run's share once admitted)")
        quota = [["CLUSTERQUEUE", "FLAVOR", "RESOURCE", "NOMINAL", "BORROWING", "LENDING", "USED", "FREE", "MAX",
                  "RUN"]]
        for row in plan.quota:
            q = lambda n, r=row.resource: "-" if n is None else kueue_amount(r, n)  # noqa: E731
            quota.append([row.cluster_queue, row.flavor, row.resource, q(row.nominal), q(row.borrowing_limit),
                          q(row.lending_limit), q(row.used), q(max(row.available, 0)), q(row.maximum),
                          q(row.run) if row.run else "-"])
        lines += report.table(quota)
    lines += [f"note: {n}" for n in plan.notes]
    lines.append("")
    if plan.nodes is None:
        lines.append(f"node fit: {NOT_CHECKED} (no node inventory: declare plan.nodePools, or pass --nodes FILE or "
                     "--live)")
    else:
        lines.append(report.text(plan.nodes, wide, with_verdict=False).rstrip("\n"))
    lines.append(verdict(plan))
    return "\n".join(lines) + "\n"


def verdict(plan: KueuePlan) -> str:
    """The combined verdict: Kueue's admission first, then whether the nodes hold what it admits."""
    waiting = [v for v in plan.verdicts if v.state not in ("admitted", "preempt")]
    if waiting:
        head = f"{FAIL} not admitted by Kueue now: " + "; ".join(f"{v.workload.ref} ({v.reason})" for v in waiting)
        if plan.nodes is not None and not plan.nodes.fits:
            head += (f"\n  and of what runs beside the queue, {plan.nodes.pending} of {plan.nodes.pods} pods stay "
                     "pending")
        return head
    if plan.nodes is None:
        return f"{OK} Kueue admits the run; node fit: {NOT_CHECKED}"
    nodes = report.verdict(plan.nodes).splitlines()
    if not plan.nodes.fits:
        what = "Kueue admits the run, but the nodes cannot hold it" if plan.verdicts else "does not fit"
        return "\n".join([f"{FAIL} {what}: {plan.nodes.pending} of {plan.nodes.pods} pods pending", *nodes[1:]])
    if plan.verdicts:
        return f"{OK} Kueue admits the run and every pod is placed ({plan.nodes.pods} pods)"
    return "\n".join(nodes)


def as_json(plan: KueuePlan) -> dict[str, Any]:
    """``plan -o json``: the node report's keys (null or empty when no inventory was given), then ``kueue``."""
    out = report.as_json(plan.nodes) if plan.nodes is not None else {
        "fits": None, "startable": None, "pods": None, "pending": None, "inventory": None, "groups": [], "nodes": [],
        "notes": []}
    out["exitCode"] = plan.exit_code
    out["kueue"] = {
        "source": plan.source,
        "usage": plan.snapshot.usage_source,
        "admitted": plan.admitted,
        "workloads": [{
            "workload": v.workload.ref, "localQueue": v.workload.queue, "clusterQueue": v.cluster_queue,
            "state": v.state, "reason": v.reason, "message": v.message, "priority": v.workload.priority,
            "podSets": [{"name": r.name, "count": r.count, "flavors": r.flavors, "borrowing": r.borrows,
                         "message": r.message} for r in v.pod_sets],
            "preempts": [f"{t.workload.namespace}/{t.workload.name}" for t in v.targets],
            "preemptions": [{"workload": f"{t.workload.namespace}/{t.workload.name}",
                             "clusterQueue": t.workload.cluster_queue, "reason": t.reason} for t in v.targets],
            "admissionChecks": v.admission_checks, "notes": v.notes,
        } for v in plan.verdicts],
        "quota": [{"clusterQueue": r.cluster_queue, "flavor": r.flavor, "resource": r.resource,
                   "nominal": kueue_amount(r.resource, r.nominal), "used": kueue_amount(r.resource, r.used),
                   "available": kueue_amount(r.resource, max(r.available, 0)),
                   "maximum": kueue_amount(r.resource, r.maximum), "run": kueue_amount(r.resource, r.run)}
                  for r in plan.quota],
        "notes": plan.notes,
    }
    return out
