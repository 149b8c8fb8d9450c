"""`status` on a big namespace, side by side with the kubectl calls that show the same.

The fake API server (tests/flows/fakekube.py) is served on 127.0.0.1 holding the example
run, N pods of it and M Warning events; then, interleaved, K times each:

* ``dockyard-k8s status RECIPE -o json`` (a fresh process, as a user runs it: it loads and
  renders the run first) and ``dockyard-k8s status RUN -o json`` (by name: no rendering);
* ``kubectl get rayjobs,rayclusters,deployments,pods -l dockyard-k8s/run=... -o json`` and
  ``kubectl get events --field-selector type=Warning -o json`` (two fresh processes: what a
  user types to see the same).

Both read through the same loopback server, so its cost is in both columns. Requests are
counted at the server for each side: the launcher's must not depend on the pod count except
through LIST chunks of 500 (kubectl's --chunk-size), never one per pod.

Run: .venv/bin/python bench/bench_live_status.py [--pods 10000] [--events 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "flows"))

from fake_http import serve, write_kubeconfig  # noqa: E402
from fakekube import FakeKube  # noqa: E402

NS, RUN = "rl-research", "grpo-swe"
ARGS = [str(REPO / "examples" / "grpo_swe.yaml"), "--infra", str(REPO / "examples" / "grpo_swe.infra.yaml")]


def kubectl() -> str:
    found = shutil.which("kubectl.1.33") or shutil.which("kubectl")
    if not found:
        sys.exit("kubectl is not on PATH")
    beside = Path(os.path.realpath(found)).parent / "kubectl.1.33"
    return str(beside) if beside.exists() else found


def populate(fake: FakeKube, kubeconfig: str, pods: int, events: int) -> None:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    subprocess.run([str(REPO / ".venv" / "bin" / "dockyard-k8s"), "run", *ARGS, "--detach"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    labels = {"dockyard-k8s/run": RUN, "dockyard-k8s/fleet": "sandbox"}
    fake.load({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{RUN}-sandbox-{i:05d}", "namespace": NS, "labels": dict(labels)},
               "spec": {"nodeName": f"node-{i % 100}", "containers": [{"name": "executor", "image": "img"}]},
               "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                             {"type": "Ready", "status": "True"}],
                          "containerStatuses": [{"name": "executor", "ready": True, "restartCount": 0,
                                                 "state": {"running": {}}}]}} for i in range(pods))
    fake.load({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": f"ev-{i:06d}", "namespace": NS},
               "involvedObject": {"kind": "Pod", "name": f"{RUN}-sandbox-{i % max(pods, 1):05d}", "namespace": NS},
               "reason": "Unhealthy", "message": "Readiness probe failed: connection refused", "type": "Warning",
               "count": 1, "lastTimestamp": "2026-01-01T00:00:00Z"} for i in range(events))


def timed(cmd: list[str], env: dict[str, str], fake: FakeKube) -> tuple[float, int]:
    before = len(fake.requests)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, len(fake.requests) - before


def measure(pods: int, events: int, runs: int) -> dict[str, float]:
    fake = FakeKube(namespaces=("default", NS))
    with serve(fake) as url, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(write_kubeconfig(Path(tmp) / "kubeconfig", url, namespace=NS))
        env = {**os.environ, "KUBECONFIG": kubeconfig}
        populate(fake, kubeconfig, pods, events)
        launcher = [str(REPO / ".venv" / "bin" / "dockyard-k8s"), "status", *ARGS, "-o", "json"]
        by_name = [str(REPO / ".venv" / "bin" / "dockyard-k8s"), "status", RUN, "-n", NS, "-o", "json"]
        kc = kubectl()
        gets = [[kc, "--kubeconfig", kubeconfig, "get", "rayjobs,rayclusters,deployments,pods", "-n", NS, "-l",
                 f"dockyard-k8s/run={RUN}", "-o", "json"],
                [kc, "--kubeconfig", kubeconfig, "get", "events", "-n", NS, "--field-selector", "type=Warning",
                 "-o", "json"]]
        ours, named, theirs, our_requests, their_requests, named_requests = [], [], [], 0, 0, 0
        for _ in range(runs):  # interleaved: machine noise hits all three
            seconds, our_requests = timed(launcher, env, fake)
            ours.append(seconds)
            seconds, named_requests = timed(by_name, env, fake)
            named.append(seconds)
            pair = [timed(g, env, fake) for g in gets]
            theirs.append(sum(p[0] for p in pair))
            their_requests = sum(p[1] for p in pair)
    fake.shutdown()
    return {"launcher_s": statistics.median(ours), "named_s": statistics.median(named),
            "kubectl_s": statistics.median(theirs), "launcher_requests": our_requests,
            "named_requests": named_requests, "kubectl_requests": their_requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| pods | events | status RECIPE | status RUN | kubectl get x2 | requests: status RECIPE / RUN / kubectl |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pods, events in ((100, 500), (args.pods, args.events)):
        m = measure(pods, events, args.runs)
        print(f"| {pods:,} | {events:,} | {m['launcher_s']:.2f} s | {m['named_s']:.2f} s | {m['kubectl_s']:.2f} s | "
              f"{m['launcher_requests']} / {m['named_requests']} / {m['kubectl_requests']} |", flush=True)


if __name__ == "__main__":
    main()
