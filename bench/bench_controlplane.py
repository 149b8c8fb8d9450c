"""How long the test control plane takes to build (cache hit), start and be ready, and to stop.

Each round, in fresh processes as a user types them:

* ``scripts/controlplane.sh build``: the binaries of the pinned build key (a cache hit once the
  machine has built them; the cold build's times are in the key's ``build.json``);
* ``scripts/controlplane.sh up --name NAME``: etcd, the API server, controller-manager, scheduler,
  kwok, the Ray head stand-in, KubeRay and Kueue, until nodes are Ready (the script's own figure,
  ``startup_s``, is printed beside the wall time);
* readiness, what the e2e session checks before its first test (tests/e2e/readiness.py, run by the `cluster` fixture):
  a 1-GPU pod Running, a 99-GPU pod Unschedulable, a tiny RayJob Complete through the real operator,
  each timed from the end of ``up``;
* ``scripts/controlplane.sh down --name NAME``.

Run: .venv/bin/python bench/bench_controlplane.py [--rounds 2] [--name bench-cp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "e2e" / "controlplane"))

import controlplane as cp  # noqa: E402

SCRIPT = str(REPO / "scripts" / "controlplane.sh")
NS = "e2e-0"


def timed(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([SCRIPT, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def kubectl(state: dict[str, Any], *args: str, stdin: str | None = None) -> str:
    return subprocess.run([str(Path(state["bin"]) / "kubectl"), "--kubeconfig", state["kubeconfig"], *args],
                          input=stdin, text=True, capture_output=True, check=True).stdout


def get(state: dict[str, Any], *args: str) -> dict[str, Any]:
    return dict(json.loads(kubectl(state, "get", *args, "-o", "json")))


def until(check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for readiness")
        time.sleep(0.1)


def readiness(state: dict[str, Any]) -> dict[str, float]:
    """Seconds from now until each readiness check of the e2e session holds."""
    def pod(name: str, gpus: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "tiny", "namespace": NS},
           "spec": {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                    "rayClusterSpec": {"rayVersion": "2.52.1", "headGroupSpec": {"rayStartParams": {}, "template": {
                        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.1",
                                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}}
    start = time.perf_counter()
    items = [pod("canary-1gpu", 1), pod("canary-99gpu", 99), job]
    kubectl(state, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out: dict[str, float] = {}

    def running() -> bool:
        return get(state, "-n", NS, "pod", "canary-1gpu").get("status", {}).get("phase") == "Running"

    def unschedulable() -> bool:
        conditions = get(state, "-n", NS, "pod", "canary-99gpu").get("status", {}).get("conditions", [])
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)

    def complete() -> bool:
        status = get(state, "-n", NS, "rayjob", "tiny").get("status") or {}
        return (status.get("jobDeploymentStatus"), status.get("jobStatus")) == ("Complete", "SUCCEEDED")

    for name, check in (("1-GPU pod Running", running), ("99-GPU pod Unschedulable", unschedulable),
                        ("tiny RayJob Complete", complete)):
        until(check)
        out[name] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--name", default="bench-cp", help="the stack's name (it must not be up already)")
    args = parser.parse_args()
    stack = cp.Stack(args.name)
    if stack.state_file.exists():
        sys.exit(f"stack {args.name} is up: pick another --name, or take it down first")
    build_json = json.loads((cp.bin_dir() / "build.json").read_text()) if (cp.bin_dir() / "build.json").exists() \
        else {}
    print(f"cold build of this key (build.json): {build_json.get('times', 'not built yet')}")
    rows: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        load = os.getloadavg()[0]
        rows.setdefault("build (cache hit)", []).append(timed("build"))
        rows.setdefault("up (wall)", []).append(timed("up", "--name", args.name))
        state = stack.state()
        rows.setdefault("up (startup_s, the script's own)", []).append(float(state["startup_s"]))
        try:
            for name, seconds in readiness(state).items():
                rows.setdefault(f"after up: {name}", []).append(seconds)
        finally:
            rows.setdefault("down", []).append(timed("down", "--name", args.name))
        rows.setdefault("load average (1 min) at the round's start", []).append(load)
    print(f"| step | median of {args.rounds} | each |")
    print("| --- | --- | --- |")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.1f} | {', '.join(f'{v:.1f}' for v in values)} |")


if __name__ == "__main__":
    main()
