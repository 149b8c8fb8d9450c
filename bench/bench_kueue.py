"""Benchmark of Kueue admission in `dockyard-k8s plan --kueue` (target: under 100 ms).

Workload: 100 ClusterQueues in 10 cohorts (10 queues each, two flavors: a CPU one listed first,
and h100), 1,000 admitted Workloads spread over the queues as the current usage, and one run of
3 pod sets (head, trainer x2, inference) queued in the first ClusterQueue, whose cohort has
quota left only by borrowing, so the whole tree is consulted.

Measured, interleaved in the same run so the shared machine's noise hits every variant:

* ``snapshot``  — Kueue objects (plain dicts, as `manifests.read_objects` reads them) to the quota tree;
* ``assign``    — the flavor assignment of the run on that snapshot (what admission costs);
* ``plan``      — snapshot + assignment + the node simulation of what is admitted (200 nodes);
* ``naive``     — the same assignment where every quota query recomputes the cohort's usage from
  all 1,000 Workloads (the straightforward way, no quota tree kept up to date);
* ``read``      — reading the same objects from a YAML file as ``--kueue FILE`` does (for scale:
  what the command pays before any Kueue arithmetic).

    .venv/bin/python bench/bench_kueue.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from dockyard_k8s.plan import from_pools
from dockyard_k8s.plan import kueue_assign as ka
from dockyard_k8s.plan import kueue_model as km
from dockyard_k8s.plan.kueue_plan import plan_with_kueue

API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
P5 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}


def kueue_objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "cpu"}, "spec": {}},
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "h100"}, "spec": {"nodeLabels": P5}}]
    for c in range(10):
        for q in range(10):
            name = f"cq-{c}-{q}"
            out.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "cohortName": f"cohort-{c}", "namespaceSelector": {},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": [
                    {"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": 64},
                                                  {"name": "memory", "nominalQuota": "512Gi"},
                                                  {"name": GPU, "nominalQuota": 0}]},
                    {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": 400},
                                                   {"name": "memory", "nominalQuota": "4Ti"},
                                                   {"name": GPU, "nominalQuota": 16, "borrowingLimit": 16}]}]}]}})
    out.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "team"},
                "spec": {"clusterQueue": "cq-0-0"}})
    for i in range(1000):
        c, q = i % 10, (i // 10) % 10
        gpus = 1 if (c, q) != (0, 0) else 0  # the run's own queue is empty: 16 GPUs, the run borrows 8
        created = f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        out.append({"apiVersion": API, "kind": "Workload", "metadata": {
            "name": f"wl-{i}", "namespace": f"ns-{c}", "creationTimestamp": created},
            "spec": {"priority": i % 7, "queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}], "admission": {
                "clusterQueue": f"cq-{c}-{q}", "podSetAssignments": [{
                    "name": "main", "count": 1, "flavors": {GPU: "h100", "cpu": "h100", "memory": "h100"},
                    "resourceUsage": {GPU: str(gpus), "cpu": "16", "memory": "128Gi"}}]}}})
    return out


def run_objects() -> list[dict[str, Any]]:
    def template(cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
        res = {"cpu": cpu, "memory": memory, **({GPU: str(gpus)} if gpus else {})}
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": res,
                                                                                        "limits": res}}]}
        if gpus:
            spec["nodeSelector"] = P5
            spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
        return {"metadata": {}, "spec": spec}

    return [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {
        "name": "run", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"headGroupSpec": {"template": template("8", "32Gi")}, "workerGroupSpecs": [
            {"groupName": "trainer", "replicas": 2, "template": template("32", "256Gi", 8)},
            {"groupName": "inference", "replicas": 1, "template": template("32", "256Gi", 8)}]}}]


class _Naive:
    """The straightforward quota: usage of a ClusterQueue and of its cohort summed from the
    Workloads on every query (no tree, no incremental usage)."""

    def __init__(self, snap: km.Snapshot, workloads: list[dict[str, Any]]) -> None:
        self.snap, self.workloads = snap, workloads

    def usage(self, cq_name: str, fr: km.FR) -> int:
        return sum(km.workload_usage(w).get(fr, 0) for w in self.workloads
                   if ((w.get("status") or {}).get("admission") or {}).get("clusterQueue") == cq_name)

    def available(self, node: km.QuotaNode, fr: km.FR) -> int:
        members = [cq for cq in self.snap.queues.values() if cq.node.parent is node.parent]
        nominal = sum(cq.node.quotas[fr].nominal for cq in members if fr in cq.node.quotas)
        used = sum(self.usage(cq.name, fr) for cq in members)
        own = node.quotas[fr] if fr in node.quotas else km.ResourceQuota(0)
        mine = self.usage(node.name, fr)
        room = nominal - used
        if own.borrowing is not None:
            room = min(room, own.nominal + own.borrowing - mine)
        return room


def _time(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    objects, run = kueue_objects(), run_objects()
    inventory_pools = {"nodePools": [
        {"name": "gpu", "instanceType": "p5.48xlarge", "count": 100, "labels": P5,
         "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
        {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 100}]}
    times: dict[str, list[float]] = {"snapshot": [], "assign": [], "plan": [], "naive": [], "read": []}
    import os
    import tempfile

    from dockyard_k8s.manifests import read_objects
    from dockyard_k8s.yamlfile import dump_documents

    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "kueue.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(dump_documents(objects))
    verdict = ""
    for _ in range(args.repeat):
        times["snapshot"].append(_time(lambda: km.snapshot_from_objects(objects)))
        snap = km.snapshot_from_objects(objects)
        (wl,), _ = ka.workload_requests(snap, run)

        def assign(snap: km.Snapshot = snap, wl: ka.WorkloadRequest = wl) -> None:
            nonlocal verdict
            v = ka.assign(snap, wl)
            verdict = f"{v.state} ({v.reason}), borrowing: {v.borrowing}"

        times["assign"].append(_time(assign))
        times["plan"].append(_time(lambda: plan_with_kueue(run, from_pools(inventory_pools),
                                                           km.snapshot_from_objects(objects))))
        naive = _Naive(snap, [o for o in objects if o["kind"] == "Workload"])
        real = ka.available
        ka.available = naive.available  # type: ignore[assignment]
        try:
            times["naive"].append(_time(lambda snap=snap, wl=wl: ka.assign(snap, wl)))
        finally:
            ka.available = real
        times["read"].append(_time(lambda: read_objects([path])))
    print(f"100 ClusterQueues in 10 cohorts, 1,000 admitted Workloads, a 3-pod-set run: {verdict}")
    for name, values in times.items():
        print(f"  {name:9s} median {statistics.median(values):8.2f} ms   min {min(values):8.2f} ms   "
              f"(n={len(values)})")


if __name__ == "__main__":
    main()
