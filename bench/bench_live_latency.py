"""From a problem written to the API server to `run` printing its line: how long?

The fake API server (tests/flows/fakekube.py, the KubeRay simulation) is served on
127.0.0.1; `dockyard-k8s run` follows the example run in a fresh process, its stdout read
line by line here. Then, one at a time, each waiting for the previous line:

* a FailedScheduling Warning event on a pod of the run;
* a pod's container waiting in ErrImagePull;
* a pod's container OOMKilled (its last state);
* the RayJob's attempt failing while retries are left (Retrying).

Latency = the time the launcher's line arrived here minus the time the write started
(so the fake's own work for the write counts too). Target: median under 1 s.

Run: .venv/bin/python bench/bench_live_latency.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "flows"))

from fake_http import serve, write_kubeconfig  # noqa: E402
from fakekube import FakeKube  # noqa: E402
from kuberay_sim import KubeRay  # noqa: E402

NS, RUN = "rl-research", "grpo-swe"
ARGS = [str(REPO / "examples" / "grpo_swe.yaml"), "--infra", str(REPO / "examples" / "grpo_swe.infra.yaml")]


class Follower:
    """`run` in a subprocess; every stdout line with the monotonic time it arrived."""

    def __init__(self, env: dict[str, str], *extra: str) -> None:
        self.proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "dockyard-k8s"), "run", *ARGS, *extra],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))

    def wait_for(self, text: str, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while True:
            at, line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if text in line:
                return at

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def pod_of(fake: FakeKube, cluster: str, group: str) -> dict:
    return next(p for p in fake.all("v1", "Pod") if p["metadata"]["labels"].get("ray.io/cluster") == cluster
                and p["metadata"]["labels"].get("ray.io/group") == group)


def one_round(env: dict[str, str], fake: FakeKube, sim: KubeRay) -> dict[str, float]:
    """Latency of each problem in one followed run."""
    follower = Follower(env, "--set", "launch.backoffLimit=3")
    out: dict[str, float] = {}
    try:
        follower.wait_for("sandbox:")  # following: every first list is in
        cluster = sim.cluster_of(NS, RUN)

        def measure(name: str, write: Callable[[], None], expect: str) -> None:
            start = time.monotonic()  # before the write: the server's own work counts too
            write()
            out[name] = follower.wait_for(expect) - start

        trainer = pod_of(fake, cluster, "trainer")
        measure("FailedScheduling", lambda: fake.add_event(NS, trainer, "FailedScheduling",
                                                            "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
                "FailedScheduling")
        inference = pod_of(fake, cluster, "inference")

        def image() -> None:
            inference["status"] = {"phase": "Pending", "containerStatuses": [{"name": "ray-worker", "state": {
                "waiting": {"reason": "ErrImagePull", "message": "manifest unknown"}}}]}
            fake.put(inference, manager="kubelet")

        measure("ErrImagePull", image, "ErrImagePull")
        sim.run_pods(NS, cluster)
        follower.wait_for("jobStatus RUNNING")
        head = pod_of(fake, cluster, "headgroup")

        def oom() -> None:
            head["status"]["containerStatuses"] = [{"name": "ray-head", "ready": True, "restartCount": 1,
                                                    "state": {"running": {}},
                                                    "lastState": {"terminated": {"reason": "OOMKilled",
                                                                                 "exitCode": 137}}}]
            fake.put(head, manager="kubelet")

        measure("OOMKilled", oom, "OOMKilled")
        measure("Retrying", lambda: sim.finish(NS, RUN, "FAILED", "boom"), "retrying: attempt 2")
    finally:
        follower.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        fake = FakeKube(namespaces=("default", NS))
        sim = fake.extend(KubeRay())
        assert isinstance(sim, KubeRay)
        with serve(fake) as url, tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "KUBECONFIG": str(write_kubeconfig(Path(tmp) / "kubeconfig", url, namespace=NS)),
                   "PYTHONUNBUFFERED": "1"}
            for name, seconds in one_round(env, fake, sim).items():
                results.setdefault(name, []).append(seconds)
        fake.shutdown()
    everything = [s for values in results.values() for s in values]
    print("| problem | median | max | samples |")
    print("| --- | --- | --- | --- |")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values) * 1000:.0f} ms | {max(values) * 1000:.0f} ms | {len(values)} |")
    print(f"| all | {statistics.median(everything) * 1000:.0f} ms | {max(everything) * 1000:.0f} ms | "
          f"{len(everything)} |")


if __name__ == "__main__":
    main()
