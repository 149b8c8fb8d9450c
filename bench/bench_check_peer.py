"""Warm `check` on the example beside the nrl-k8s peer's `check`, interleaved in one run.

Issue 23's guards: `dockyard-k8s check examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml`
at <= 150 ms median on this machine and <= 1/5 of the peer's `check` on a comparable config.

The peer (NVIDIA-NeMo/RL `infra/nrl_k8s`, /work/shared/notes/peers.md) is installed from its source
into a venv of its own, never into this repository:

    git -C <mirror of NVIDIA-NeMo/RL> archive HEAD infra/nrl_k8s | tar -x -C /tmp/nrl-peer
    git -C <mirror> show HEAD:examples/configs/grpo_math_1B.yaml > /tmp/nrl-peer/grpo_math_1B.yaml
    python3.11 -m venv /tmp/nrl-peer/venv && /tmp/nrl-peer/venv/bin/pip install /tmp/nrl-peer/infra/nrl_k8s

Its comparable config: a GRPO recipe (grpo_math_1B.yaml, one file: its standalone loader takes no
`defaults:` chain) with its shipped GPU infra file (a RayCluster of a head and 4 GPU workers, DRA
claims), printed as its one-page summary, as ours prints its own. Both run in fresh processes
with bytecode caching on and warm caches (one unmeasured run of each first); wall and CPU
(user + system of the child) medians, IQR.

Run: .venv/bin/python bench/bench_check_peer.py [--runs 31] [--peer /tmp/nrl-peer] [--before SRC]

``--before SRC`` adds our `check` from another checkout's ``src`` (``git archive COMMIT src | tar -x -C
/tmp/before``), run by this venv's Python with ``PYTHONPATH=SRC``: a change's cost, in the same run.
Without the peer's venv the peer's row is left out (and so is the ratio).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def quartiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"{q[0] * 1e3:.1f}-{q[2] * 1e3:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--peer", default="/tmp/nrl-peer", help="where the peer's source, recipe and venv are")
    parser.add_argument("--before", metavar="SRC", help="another checkout's src directory: its `check` too")
    args = parser.parse_args()
    peer = Path(args.peer)
    example = ["check", "examples/grpo_swe.yaml", "--infra", "examples/grpo_swe.infra.yaml"]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
    commands = {"dockyard-k8s check": ([str(REPO / ".venv" / "bin" / "dockyard-k8s"), *example], env)}
    if args.before:
        commands["dockyard-k8s check (--before)"] = ([str(REPO / ".venv" / "bin" / "python"), "-m", "dockyard_k8s",
                                                      *example], {**env, "PYTHONPATH": args.before})
    if (peer / "venv" / "bin" / "nrl-k8s").exists():
        commands["nrl-k8s check"] = (
            [str(peer / "venv" / "bin" / "nrl-k8s"), "check", str(peer / "grpo_math_1B.yaml"),
             "--infra", str(peer / "infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml")], env)
    else:
        print(f"(no peer at {peer}: its row is left out; the docstring says how to install it)")
    for cmd, cmd_env in commands.values():
        once(cmd, cmd_env)  # warm: validator cache, .pyc files, page cache
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    load = os.getloadavg()[0]
    for _ in range(args.runs):  # interleaved: machine noise hits both alike
        for name, (cmd, cmd_env) in commands.items():
            wall, cpu = once(cmd, cmd_env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"{args.runs} interleaved runs each, load average {load:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")
    print("| command | wall median | IQR | min | CPU median |")
    print("| --- | --- | --- | --- | --- |")
    for name in commands:
        w = walls[name]
        print(f"| `{name}` | {statistics.median(w) * 1e3:.1f} ms | {quartiles(w)} | {min(w) * 1e3:.1f} ms | "
              f"{statistics.median(cpus[name]) * 1e3:.1f} ms |")
    ours = statistics.median(walls["dockyard-k8s check"])
    ratio = (f"ours / peer (wall medians): {ours / statistics.median(walls['nrl-k8s check']):.3f} (guard <= 0.2); "
             if "nrl-k8s check" in walls else "")
    print(f"{ratio}ours {ours * 1e3:.1f} ms (guard <= 150 ms)")


if __name__ == "__main__":
    main()
