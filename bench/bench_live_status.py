"""`status` on a big namespace of the real API server, side by side with the kubectl calls that show the same.

On the test control plane (e2e/controlplane/, a stack of its own, ``--name``, started with
bench/audit-policy.yaml): the example run started for real (`run --detach`: KubeRay makes its
RayCluster and pods, kwok runs them), then N more pods of the run's sandbox fleet, created through
the API and bound to fake kwok nodes of their own (kwok makes them Running), and M Warning events
on them (the events API). Then, interleaved, K times each, fresh processes as a user types them:

* ``dockyard-k8s status RUN -n NS -o json`` (by name: it reads the launch record) and
  ``dockyard-k8s status RECIPE ... -o json`` (it loads and renders the run first);
* ``kubectl get rayjobs,rayclusters,deployments,pods -l dockyard-k8s/run=RUN -o json`` and
  ``kubectl get events --field-selector type=Warning -o json`` (the stack's kubectl).

Requests are counted from the API server's audit log, per client (user agent). Goal (issue 21 §6):
`status` <= 0.5 x kubectl's wall at 10,000 pods. First, once: `status RUN`'s pod counts per fleet
must be kubectl's (``--chunk-size=500``), and the pod LISTs it made are counted.

Run: .venv/bin/python bench/bench_live_status.py [--name bench] [--pods 10000] [--events 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from typing import Any

from livestack import LAUNCHER, RUN, Live, example_args, requests_by

BENCH_NODES = 10


def bench_nodes(live: Live, pods: int) -> list[str]:
    """Fake nodes for the filler pods (tainted: the scheduler puts nothing else there)."""
    names = [f"bench-{i}" for i in range(BENCH_NODES)]
    capacity = {"cpu": "1000", "memory": "4000Gi", "pods": str(pods // BENCH_NODES + 100)}
    live.apply(*({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": n, "annotations": {"kwok.x-k8s.io/node": "fake"},
                               "labels": {"type": "kwok", "kubernetes.io/hostname": n}},
                  "spec": {"taints": [{"key": "bench", "value": "filler", "effect": "NoSchedule"}]},
                  "status": {"allocatable": capacity, "capacity": capacity}} for n in names))
    return names


def populate(live: Live, ns: str, pods: int, events: int) -> None:
    live.prepare_namespace(ns)
    have = live.kubectl("get", "rayjob", RUN, "-n", ns, "--ignore-not-found", "-o", "name").strip()
    if not have:
        subprocess.run([LAUNCHER, "run", *example_args(ns, "--detach")], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "KUBECONFIG": live.kubeconfig})
    nodes = bench_nodes(live, pods)
    existing = int(live.kubectl("get", "pods", "-n", ns, "-l", "bench=filler", "-o", "name").count("\n"))
    labels = {"dockyard-k8s/run": RUN, "dockyard-k8s/fleet": "sandbox", "bench": "filler"}
    start = time.perf_counter()
    live.create_many(f"/api/v1/namespaces/{ns}/pods", (
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"{RUN}-filler-{i:05d}", "namespace": ns, "labels": labels},
         "spec": {"nodeName": nodes[i % len(nodes)], "tolerations": [{"key": "bench", "operator": "Exists"}],
                  "containers": [{"name": "executor", "image": "ghcr.io/example/sandbox:1"}]}}
        for i in range(existing, pods)))
    print(f"  {pods - existing} pods created in {time.perf_counter() - start:.0f} s", flush=True)
    have_events = int(live.kubectl("get", "events", "-n", ns, "--field-selector", "reason=BenchUnhealthy",
                                   "-o", "name").count("\n"))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    start = time.perf_counter()
    live.create_many(f"/api/v1/namespaces/{ns}/events", (
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"bench-{i:06d}", "namespace": ns},
         "involvedObject": {"kind": "Pod", "name": f"{RUN}-filler-{i % max(pods, 1):05d}", "namespace": ns},
         "reason": "BenchUnhealthy", "message": "Readiness probe failed: connection refused", "type": "Warning",
         "count": 1, "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "kubelet"}}
        for i in range(have_events, events)))
    print(f"  {events - have_events} events created in {time.perf_counter() - start:.0f} s", flush=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # kwok runs the filler pods: the namespace as a cluster holds it
        out = live.kubectl("get", "pods", "-n", ns, "-l", "bench=filler", "--field-selector=status.phase=Running",
                           "-o", "name")
        if out.count("\n") >= pods:
            break
        time.sleep(5)


def timed(live: Live, cmd: list[str]) -> tuple[float, list[dict[str, Any]]]:
    offset = live.audit_offset()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "KUBECONFIG": live.kubeconfig})
    seconds = time.perf_counter() - start
    time.sleep(0.5)  # the audit log's last lines
    return seconds, live.audit_since(offset)


def fleet_counts(pods: list[dict[str, Any]]) -> dict[str, int]:
    """Pods per fleet, those being deleted left out (as `status` counts them)."""
    out: dict[str, int] = {}
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            fleet = pod["metadata"].get("labels", {}).get("dockyard-k8s/fleet", "-")
            out[fleet] = out.get(fleet, 0) + 1
    return out


def same_counts(live: Live, ns: str) -> None:
    """`status RUN`'s fleet table against kubectl's chunked list of the run's pods (``--chunk-size=500``),
    and the chunks `status` asked for (audit log): every chunk read, the counts the same. Exits when not."""
    offset = live.audit_offset()
    out = subprocess.run([LAUNCHER, "status", RUN, "-n", ns, "-o", "json"], check=True, capture_output=True,
                         text=True, env={**os.environ, "KUBECONFIG": live.kubeconfig}).stdout
    time.sleep(0.5)  # the audit log's last lines
    pod_lists = [e for e in live.audit_since(offset) if e.get("userAgent", "").startswith("python-httpx")
                 and e.get("stage") == "ResponseComplete" and e.get("verb") == "list"
                 and e.get("objectRef", {}).get("resource") == "pods"]
    ours = {f["fleet"]: f["pods"] for f in json.loads(out)["fleets"] if f["pods"]}
    theirs = fleet_counts(json.loads(live.kubectl("get", "pods", "-n", ns, "-l", f"dockyard-k8s/run={RUN}",
                                                  "--chunk-size=500", "-o", "json"))["items"])
    print(f"status counts {sum(ours.values())} pods {ours} in {len(pod_lists)} pod LIST request(s); kubectl "
          f"--chunk-size=500 counts {sum(theirs.values())} {theirs}", flush=True)
    if ours != theirs:
        raise SystemExit("status and kubectl disagree on the run's pods")


def measure(live: Live, ns: str, runs: int) -> dict[str, Any]:
    by_name = [LAUNCHER, "status", RUN, "-n", ns, "-o", "json"]
    by_recipe = [LAUNCHER, "status", *example_args(ns, "-o", "json")]
    gets = [[live.kubectl_bin, "--kubeconfig", live.kubeconfig, "get", "rayjobs,rayclusters,deployments,pods", "-n",
             ns, "-l", f"dockyard-k8s/run={RUN}", "-o", "json"],
            [live.kubectl_bin, "--kubeconfig", live.kubeconfig, "get", "events", "-n", ns, "--field-selector",
             "type=Warning", "-o", "json"]]
    walls: dict[str, list[float]] = {"status RUN": [], "status RECIPE": [], "kubectl get x2": []}
    requests: dict[str, int] = {}
    for _ in range(runs):  # interleaved: machine noise hits all three
        for name, cmd in (("status RUN", by_name), ("status RECIPE", by_recipe)):
            seconds, events = timed(live, cmd)
            walls[name].append(seconds)
            requests[name] = requests_by(events, "python-httpx")
        pair = [timed(live, g) for g in gets]
        walls["kubectl get x2"].append(sum(p[0] for p in pair))
        requests["kubectl get x2"] = sum(requests_by(p[1], "kubectl") for p in pair)
    return {"walls": walls, "requests": requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="bench", help="the stack's name (started here if it is not up)")
    parser.add_argument("--namespace", default="rl-research")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    live = Live(args.name)
    print(f"populating {args.namespace}: the example run, {args.pods} pods, {args.events} events", flush=True)
    populate(live, args.namespace, args.pods, args.events)
    same_counts(live, args.namespace)
    load = os.getloadavg()[0]
    m = measure(live, args.namespace, args.runs)
    walls, requests = m["walls"], m["requests"]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, medians of {args.runs}, load average {load:.2f} "
          f"at the start, {os.getloadavg()[0]:.2f} at the end")
    print("| command | wall median | min | max | requests (audit log) |")
    print("| --- | --- | --- | --- | --- |")
    for name, values in walls.items():
        print(f"| `{name}` | {statistics.median(values):.2f} s | {min(values):.2f} s | {max(values):.2f} s | "
              f"{requests[name]} |")
    theirs = statistics.median(walls["kubectl get x2"])
    for name in ("status RUN", "status RECIPE"):
        print(f"{name} / kubectl: {statistics.median(walls[name]) / theirs:.2f} (goal <= 0.5)")


if __name__ == "__main__":
    main()
