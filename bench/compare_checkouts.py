"""The guards of issue 12, side by side against other checkouts of dockyard-k8s (not in
``make bench``: it needs those checkouts).

``check`` on the bundled example and ``validate`` on N generated objects in one file
(``bench_validate.generate``), each command run in this checkout and in each other one with
its own venv (``OTHER/.venv``), interleaved so the load of other processes on the machine hits
both alike, with one shared warm validator cache per checkout. Reports per command and
checkout the median wall time with its interquartile range, the minimum, and the median CPU
time (user + system, workers included).

Usage: python bench/compare_checkouts.py OTHER_CHECKOUT... [-n 10000] [--runs 15] [--same-venv]
       (e.g. a clone of main at an older commit: git clone . /tmp/old && git -C /tmp/old checkout X
        && python3 -m venv /tmp/old/.venv && /tmp/old/.venv/bin/pip install -e /tmp/old)
       --same-venv runs every checkout with this interpreter and PYTHONPATH=CHECKOUT/src
       (``python -m dockyard_k8s``): no venv per checkout, for ones with the same dependencies
       (a worktree: git worktree add --detach /tmp/old X).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = ["examples/grpo_swe.yaml", "--infra", "examples/grpo_swe.infra.yaml"]


def _commands(tree: str, manifests: str, same_venv: bool = False) -> dict[str, list[str]]:
    exe = [sys.executable, "-m", "dockyard_k8s"] if same_venv else [os.path.join(tree, ".venv", "bin", "dockyard-k8s")]
    return {"check": [*exe, "check", *EXAMPLE],
            "validate": [*exe, "validate", manifests],
            "validate --workers 1": [*exe, "validate", "--workers", "1", manifests]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("others", nargs="+", metavar="other", help="another checkout with its own .venv")
    parser.add_argument("-n", type=int, default=10_000, help="objects in the validate input")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--same-venv", action="store_true", help="this interpreter, PYTHONPATH=CHECKOUT/src")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "src"))
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_validate import generate

    from dockyard_k8s.render.serialize import dump_documents

    trees = {"this checkout": ROOT}
    trees.update({os.path.basename(os.path.abspath(other)): os.path.abspath(other) for other in args.others})
    with tempfile.TemporaryDirectory() as tmp:
        manifests = os.path.join(tmp, "mixed.yaml")
        with open(manifests, "w") as f:
            f.write(dump_documents(generate(args.n)))
        envs = {}
        for name, tree in trees.items():
            env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, f"cache-{len(envs)}"))
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
            if args.same_venv:
                env["PYTHONPATH"] = os.path.join(tree, "src")
            envs[name] = env
            for cmd in _commands(tree, manifests, args.same_venv).values():  # fill the caches
                subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
        wall: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for what in ("check", "validate", "validate --workers 1"):
                for name, tree in trees.items():
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    t = time.perf_counter()
                    subprocess.run(_commands(tree, manifests, args.same_venv)[what], cwd=tree, env=envs[name],
                                   capture_output=True, check=False)
                    wall.setdefault((what, name), []).append(time.perf_counter() - t)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu.setdefault((what, name), []).append(after.ru_utime + after.ru_stime - before.ru_utime
                                                            - before.ru_stime)
    print(f"{'command':22} {'checkout':16} {'wall median':>11} {'IQR':>17} {'min':>9} {'CPU median':>10}")
    for (what, name), times in wall.items():
        median = statistics.median(times)
        q = statistics.quantiles(times, n=4)
        rate = f"  {args.n / median:,.0f} objects/s" if what != "check" else ""
        print(f"{what:22} {name:16} {median * 1e3:8.1f} ms {q[0] * 1e3:7.1f}-{q[2] * 1e3:7.1f} ms "
              f"{min(times) * 1e3:6.1f} ms {statistics.median(cpu[(what, name)]) * 1e3:7.1f} ms{rate}")


if __name__ == "__main__":
    main()
