"""From a problem at the real API server to `run` printing its line: how long?

On the test control plane (e2e/controlplane/, a stack of its own, ``--name``, started with
bench/audit-policy.yaml), `dockyard-k8s run` follows the example run (``launch.backoffLimit=1``) in
a fresh process, its stdout read line by line here. In each round:

* **FailedScheduling**: once the Ray job runs, the sandbox Deployment's template selects a node
  label no node has: the real scheduler writes FailedScheduling for the new pod of the rollout;
* **Retrying**: the Ray head stand-in fails attempt 1's Ray job; the real KubeRay operator sees
  it, writes the RayJob's status Retrying and starts attempt 2 on a new cluster;
* **OOMKilled**: attempt 2's head pod gets kwok's failure annotation; kwok's kubelet writes the
  container's OOMKilled last state.

Latency = the line's arrival here minus the moment the API server received the write (the
``RequestReceived`` stage of its audit event; the audit policy logs these writes with their
bodies), so the time KubeRay takes to poll the Ray job is not counted; the write's own processing,
the watch delivery and the launcher's own work are. Goal (issue 21 §6): median under 1 s.

Run: .venv/bin/python bench/bench_live_latency.py [--name bench] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import statistics
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from livestack import LAUNCHER, RUN, Live, example_args

NS = "e2e-1"  # the namespace whose writes bench/audit-policy.yaml logs with their bodies


class Follower:
    """`run` in a subprocess; every stdout line with the wall-clock time it arrived."""

    def __init__(self, live: Live, *args: str) -> None:
        env = {**os.environ, "KUBECONFIG": live.kubeconfig, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([LAUNCHER, "run", *args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.time(), line.rstrip("\n")))

    def wait_for(self, text: str, timeout: float = 120) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                at, line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"no line with {text!r} within {timeout:.0f} s; lines:\n" +
                                 "\n".join(self.seen[-30:])) from None
            self.seen.append(line)
            if text in line:
                return at, line

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def stamp(event: dict[str, Any]) -> float:
    text = event["stageTimestamp"].replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).timestamp()


def first_write(live: Live, offset: int, match: Callable[[dict[str, Any]], bool], timeout: float = 10) -> float:
    """When the API server received the first audited write from ``offset`` that ``match`` picks
    (its RequestReceived stage: the write's own processing counts in the latency)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = live.audit_since(offset)
        for e in events:
            if e["stage"] == "ResponseComplete" and e.get("requestObject") is not None and match(e):
                received = [r for r in events if r["auditID"] == e["auditID"] and r["stage"] == "RequestReceived"]
                return stamp(received[0] if received else e)
        time.sleep(0.2)
    raise SystemExit("the write is not in the audit log")


def pod_of(live: Live, group: str, cluster: str | None = None) -> dict[str, Any]:
    pods = json.loads(live.kubectl("get", "pods", "-n", NS, "-l", f"ray.io/group={group}", "-o", "json"))["items"]
    pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and cluster in (None, p["metadata"]["labels"].get("ray.io/cluster"))]
    if not pods:
        raise LookupError(group)
    return dict(pods[0])


def script(live: Live, *attempts: dict[str, Any]) -> None:
    body = json.dumps({"match": RUN, "namespace": NS, "attempts": list(attempts)}).encode()
    req = urllib.request.Request(f"{live.rayhead}/script", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5):
        pass


def one_round(live: Live) -> dict[str, float]:
    script(live, {"steps": [["RUNNING", 10], ["FAILED", 0, "OOM in the trainer"]]}, {"steps": [["RUNNING", 600]]})
    offset = live.audit_offset()
    follower = Follower(live, *example_args(NS, "--set", "launch.backoffLimit=1", "--timeout", "300"))
    out: dict[str, float] = {}
    try:
        follower.wait_for("jobStatus RUNNING")
        # A real scheduling failure: the sandbox's next rollout selects a node no one has, and the
        # real scheduler writes FailedScheduling for its new pod (an event on a scheduled, Ready pod
        # is history: `run` rightly ignores one written by hand there).
        scheduling = live.audit_offset()
        live.kubectl("patch", "deployment", f"{RUN}-sandbox", "-n", NS, "--type=merge", "-p",
                     json.dumps({"spec": {"template": {"spec": {"nodeSelector": {"bench/none": "x"}}}}}))
        at, _ = follower.wait_for("FailedScheduling")
        out["FailedScheduling (the scheduler's event)"] = at - first_write(
            live, scheduling, lambda e: e["objectRef"]["resource"] == "events"
            and e["requestObject"].get("reason") == "FailedScheduling")

        at, _ = follower.wait_for("retrying: attempt 2")
        out["Retrying (KubeRay's status write)"] = at - first_write(
            live, offset, lambda e: e["objectRef"]["resource"] == "rayjobs"
            and (e["requestObject"].get("status") or {}).get("jobDeploymentStatus") == "Retrying")

        first_cluster = json.loads(live.kubectl("get", "rayjob", RUN, "-n", NS, "-o", "json"))["status"].get(
            "rayClusterName")
        deadline = time.monotonic() + 120
        while True:  # attempt 2's head Running
            try:
                head = pod_of(live, "headgroup", first_cluster)
                if head["status"].get("phase") == "Running":
                    break
            except LookupError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("attempt 2's head did not run")
            time.sleep(0.3)
        offset = live.audit_offset()
        live.kubectl("annotate", "pod", "-n", NS, head["metadata"]["name"], "e2e.dockyard-k8s.dev/fail=OOMKilled")
        at, _ = follower.wait_for("OOMKilled")
        out["OOMKilled (kwok's status write)"] = at - first_write(
            live, offset, lambda e: e["objectRef"]["resource"] == "pods" and "OOMKilled" in json.dumps(
                e["requestObject"]))
    finally:
        follower.stop()
        subprocess.run([LAUNCHER, "down", RUN, "-n", NS], env={**os.environ, "KUBECONFIG": live.kubeconfig},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="bench", help="the stack's name (started here if it is not up)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    live = Live(args.name)
    live.prepare_namespace(NS)
    load = os.getloadavg()[0]
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, seconds in one_round(live).items():
            results.setdefault(name, []).append(seconds)
        time.sleep(5)  # the run's pods go (kwok's 1 s grace) before the next round
    everything = [s for values in results.values() for s in values]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds, load average {load:.2f} "
          f"at the start, {os.getloadavg()[0]:.2f} at the end")
    print("| problem (T0) | median | max | samples |")
    print("| --- | --- | --- | --- |")
    for name, values in [*results.items(), ("all", everything)]:
        print(f"| {name} | {statistics.median(values) * 1000:.0f} ms | {max(values) * 1000:.0f} ms | "
              f"{len(values)} |")


if __name__ == "__main__":
    main()
