"""Benchmark of `dockyard-k8s plan`: 10,000 pods on 2,000 nodes (target < 1 s).

Workload: 1,000 tainted p5.48xlarge GPU nodes and 1,000 m6i.16xlarge CPU nodes (catalogue
allocatable); one RayJob (head, 799 x 8-GPU trainers, 200 x 8-GPU inference workers, no
submitter) and a 9,000-replica sandbox Deployment with required hostname spread rules off
(its spread is ScheduleAnyway, as in the example). "pending" variant: 2,000 more sandbox
replicas than the CPU pool can hold (8-core executors: 7 per node), so the FitError path runs too.

The alternative measured in the same run is the straightforward simulator: for every pod,
run every filter on every node (no per-template static cache, no monotone cursor). It is
O(pods x nodes), so it runs on a 500-pod slice and its per-pod cost is reported.

    .venv/bin/python bench/bench_plan.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from typing import Any

from dockyard_k8s.plan import from_pools, plan
from dockyard_k8s.plan.pods import groups_of
from dockyard_k8s.plan.predicates import Spread, fit_error, ports_free, resource_reasons, static_reason
from dockyard_k8s.plan.schedule import _State

POOLS = {"nodePools": [
    {"name": "gpu", "instanceType": "p5.48xlarge", "count": 1000, "labels": {"node-role": "gpu"},
     "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 1000, "labels": {"node-role": "cpu"},
     "rootVolume": "1000Gi"},
]}
TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _container(cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
    limits: dict[str, Any] = {"memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"name": "c", "image": "x:1", "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}}


def workload(sandbox: int, sandbox_cpu: str = "2") -> list[dict[str, Any]]:
    def tpl(c: dict[str, Any], role: str, gpu: bool) -> dict[str, Any]:
        return {"metadata": {"labels": {"role": role}},
                "spec": {"containers": [c], "nodeSelector": {"node-role": "gpu" if gpu else "cpu"},
                         **({"tolerations": TOL} if gpu else {})}}

    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "big", "namespace": "rl"},
              "spec": {"rayClusterSpec": {
                  "headGroupSpec": {"template": tpl(_container("8", "64Gi"), "head", False)},
                  "workerGroupSpecs": [
                      {"groupName": "trainer", "replicas": 799,
                       "template": tpl(_container("180", "1700Gi", 8), "trainer", True)},
                      {"groupName": "inference", "replicas": 200,
                       "template": tpl(_container("180", "1700Gi", 8), "inference", True)}]}}}
    sandbox_obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sandbox", "namespace": "rl"},
                   "spec": {"replicas": sandbox, "selector": {"matchLabels": {"app": "sb"}},
                            "template": {"metadata": {"labels": {"app": "sb"}},
                                         "spec": {"nodeSelector": {"node-role": "cpu"},
                                                  "topologySpreadConstraints": [{
                                                      "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                      "whenUnsatisfiable": "ScheduleAnyway",
                                                      "labelSelector": {"matchLabels": {"app": "sb"}}}],
                                                  "containers": [_container(sandbox_cpu, "4Gi")]}}}}
    return [sandbox_obj, rayjob]


def naive(objects: list[dict[str, Any]], limit: int) -> tuple[float, int]:
    """Every filter on every node for each of the first ``limit`` pods."""
    inventory = from_pools(POOLS)
    groups = groups_of(objects)
    state = _State(inventory, groups)
    nodes = inventory.nodes
    done = 0
    start = time.perf_counter()
    for g in groups:
        spread = Spread(g.req, nodes) if g.req.spread else None
        for _ in range(g.replicas):
            if done >= limit:
                return time.perf_counter() - start, done
            done += 1
            counts: Counter[str] = Counter()
            chosen = None
            for n in nodes:
                why = static_reason(g.req, n)
                reasons = [why] if why else ([] if ports_free(g.req, n) else ["ports"]) or resource_reasons(g.req, n)
                if not reasons and spread is not None and (s := spread.reason(n)):
                    reasons = [s]
                if not reasons and chosen is None:
                    chosen = n
                counts.update(reasons)
            if chosen is not None:
                state.place(chosen, g.req)
            else:
                fit_error(counts, len(nodes))
    return time.perf_counter() - start, done


def timed(objects: list[dict[str, Any]]) -> tuple[float, Any]:
    inventory = from_pools(POOLS)
    start = time.perf_counter()
    result = plan(objects, inventory)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"plan benchmark: 2,000 nodes, {args.repeat} runs each (median)")
    for label, cpu in (("all fit", "2"), ("8-core sandbox: 7 per CPU node", "8")):
        objects = workload(9000, cpu)
        times, result = [], None
        for _ in range(args.repeat):
            t, result = timed(objects)
            times.append(t)
        assert result is not None
        print(f"  dockyard-k8s plan, {result.pods:,} pods ({label}): {statistics.median(times) * 1000:.0f} ms "
              f"(placed {result.pods - result.pending:,}, pending {result.pending:,})")
    t, n = naive(workload(9000), 500)
    print(f"  naive full scan (every filter x every node per pod): {t * 1000:.0f} ms for {n} pods = "
          f"{t / n * 1000:.2f} ms/pod -> ~{t / n * 10000:.0f} s for 10,000 pods")


if __name__ == "__main__":
    main()
