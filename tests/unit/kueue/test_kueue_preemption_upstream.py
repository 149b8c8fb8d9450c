"""Every case of Kueue v0.19.2's TestPreemption and TestHierarchicalPreemptions, as data, through
:func:`preemption_targets` (what Kueue's tests call: ``Preemptor.GetTargets`` with a given flavor
assignment), with Kueue's expected targets and Preempted reasons.

``kueue_preemption_cases.json`` holds the cases: the ClusterQueues and Cohorts (``"default"``: Kueue's
``defaultClusterQueues``), the admitted Workloads (usage, priority, QuotaReserved and creation times,
evicted or not), the incoming workload (priority, creation time, its usage per (flavor, resource),
and which of those its assignment marks Preempt) and the workloads Kueue preempts. Cases with the
whole admission (flavor assignment first) are in test_kueue_preemption.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kueuekit import API

from dockyard_k8s.plan.kueue_model import snapshot_from_objects
from dockyard_k8s.plan.kueue_preempt import Preemptor, preemption_targets

DATA = json.loads((Path(__file__).parent / "kueue_preemption_cases.json").read_text())


def queue_object(q: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in q.items() if k not in ("kind", "name")}
    if q["kind"] == "ClusterQueue":
        spec["namespaceSelector"] = {}
    return {"apiVersion": API, "kind": q["kind"], "metadata": {"name": q["name"]}, "spec": spec}


def workload_object(w: dict[str, Any]) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": w["reserved"]}]
    if w.get("evicted"):
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    meta = {"name": w["name"], "namespace": "default", "uid": f"uid-{w['name']}"}
    if "created" in w:
        meta["creationTimestamp"] = w["created"]
    return {"apiVersion": API, "kind": "Workload", "metadata": meta, "spec": {"priority": w["priority"]},
            "status": {"conditions": conditions, "admission": {"clusterQueue": w["clusterQueue"], "podSetAssignments": [
                {"name": "main", "flavors": {r: f for r, (f, _) in w["usage"].items()},
                 "resourceUsage": {r: q for r, (_, q) in w["usage"].items()}}]}}}


@pytest.mark.parametrize("case", DATA["cases"], ids=[f"{c['test']}: {c['name']}" for c in DATA["cases"]])
def test_kueue_preempts_these_workloads(case: dict[str, Any]) -> None:
    queues = DATA["defaultClusterQueues"] if case["queues"] == "default" else case["queues"]
    flavors = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": n}, "spec": {}}
               for n in ("default", "alpha", "beta")]
    snap = snapshot_from_objects([*flavors, *map(queue_object, queues), *map(workload_object, case["admitted"])])
    incoming = case["incoming"]
    usage = {(f, r): v for f, r, v, _ in incoming["usage"]}
    needs_preemption = {(f, r) for f, r, _, preempt in incoming["usage"] if preempt}
    who = Preemptor(incoming["priority"], incoming.get("created", ""))
    before = usages(snap)
    found = preemption_targets(snap, snap.queues[case["clusterQueue"]], who, needs_preemption, usage)
    assert sorted([t.workload.name, t.reason] for t in found) == case["preempted"]
    assert usages(snap) == before  # the simulation gives back what it took


def usages(snap: Any) -> dict[str, dict[Any, int]]:
    nodes = [*(q.node for q in snap.queues.values()), *snap.cohorts.values()]
    return {n.name: {fr: v for fr, v in n.usage.items() if v} for n in nodes}
