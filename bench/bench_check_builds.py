"""`dockyard-k8s check` of the example on this tree against another checkout, side by side.

Both run as ``python -m dockyard_k8s check`` in fresh processes with bytecode caching on and
a warm validator cache of their own, interleaved (A, B, A, B...) so the machine's noise hits
both alike (who goes first alternates). Also times, in-process, what this tree's ``check`` adds for the sandbox's
reachability (``cli/_network.py``: the summary lines and the ``sandbox-isolation`` analysis).

Usage: python bench/bench_check_builds.py --other /path/to/other/checkout [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = ["examples/grpo_swe.yaml", "--infra", "examples/grpo_swe.infra.yaml"]

REACHABILITY = """
import time
from dockyard_k8s.bundle import build_bundle
b = build_bundle("examples/grpo_swe.yaml", "examples/grpo_swe.infra.yaml", env={"HOME": "/nonexistent"})
t = time.perf_counter()
from dockyard_k8s.cli._network import isolation_findings, ray_ports_line, sandbox_rows
for _ in range(20):
    sandbox_rows(b.run.infra), ray_ports_line(b.run.infra), isolation_findings(b.objects)
print((time.perf_counter() - t) * 1e3 / 20)
"""


def _env(src: str, cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
    env["PYTHONPATH"] = src
    env["XDG_CACHE_HOME"] = cache
    env["HOME"] = cache
    return env


def _wall(cwd: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dockyard_k8s", "check", *EXAMPLE], cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", required=True, help="another checkout (its src/ is imported)")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    trees = {"this tree": ROOT, "other": os.path.abspath(args.other)}
    with tempfile.TemporaryDirectory() as tmp:
        envs = {name: _env(os.path.join(root, "src"), os.path.join(tmp, name.replace(" ", "-")))
                for name, root in trees.items()}
        for name, root in trees.items():  # first runs compile validators and write .pyc files
            _wall(root, envs[name])
            _wall(root, envs[name])
        series: dict[str, list[float]] = {name: [] for name in trees}
        for i in range(args.runs):
            order = list(trees.items())
            for name, root in order if i % 2 else reversed(order):  # alternate who goes first
                series[name].append(_wall(root, envs[name]))
        inner = subprocess.run([sys.executable, "-c", REACHABILITY], cwd=ROOT, env=envs["this tree"],
                               capture_output=True, text=True, check=True)
    print(f"{'check of the example':30} {'median ms':>10} {'min ms':>8}  (runs)")
    for name, values in series.items():
        print(f"{name:30} {statistics.median(values):10.1f} {min(values):8.1f}  ({len(values)})")
    print(f"reachability lines + sandbox-isolation, in-process: {float(inner.stdout.split()[-1]):.2f} ms")


if __name__ == "__main__":
    main()
