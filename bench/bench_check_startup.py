"""`dockyard-k8s check` on the bundled example, and what each of its fast paths buys.

Runs each variant N times, interleaved so machine noise hits all alike, in fresh processes
with bytecode caching on (as an installed package has it) and a warm validator cache, and
reports the median wall time and CPU time (user + system) of each:

* ``python -c pass``                      the interpreter alone
* ``dockyard-k8s check``                  what users run
* the same with one fast path switched off:
  - the collector frozen at exit (``cli.run``): the interpreter traces every object at shutdown
* in-process: importing + running the validation of the rendered objects, vs
  ``kubernetes_validate.validate`` (the alternative) on the same built-in objects.

A fast path stays while switching it off costs >= 15% of ``check`` (STYLE.md).

Usage: python bench/bench_check_startup.py [--runs 31]
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

# check with one fast path off, patched in before the command runs
CHECK = """
import sys
{patch}
from dockyard_k8s.cli import run
sys.argv = ["dockyard-k8s", "check", *sys.argv[1:]]
run()
"""
PATCHES = {
    "dockyard-k8s check": "",
    "  without the freeze at exit": "import gc\ngc.freeze = lambda: None",
}

VALIDATE_ONLY = """
import time, sys
import dockyard_k8s.bundle as b
objects = b.render_run(b.load_run(*sys.argv[1:3]))
t = time.perf_counter()
from dockyard_k8s.validate.engine import ValidateOptions, validate_report
r = validate_report(objects, ValidateOptions(ignore_missing_schemas=True))
assert not r.problems, r.problems
print((time.perf_counter() - t) * 1e3)
"""

KUBERNETES_VALIDATE = """
import time, sys
import dockyard_k8s.bundle as b
objects = b.render_run(b.load_run(*sys.argv[1:3]))
t = time.perf_counter()
import kubernetes_validate
for o in objects:
    if o["apiVersion"].split("/")[0] not in ("ray.io", "kueue.x-k8s.io", "keda.sh"):  # CRDs: it has none
        kubernetes_validate.validate(o, "1.29", strict=True)
print((time.perf_counter() - t) * 1e3)
"""


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
    env["XDG_CACHE_HOME"] = cache
    return env


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - t) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3


def _inner(code: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", code, EXAMPLE[0], EXAMPLE[2]], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=31)
    args = parser.parse_args()
    variants = {"python -c pass": [sys.executable, "-c", "pass"]}
    variants.update({name: [sys.executable, "-c", CHECK.format(patch=patch), *EXAMPLE]
                     for name, patch in PATCHES.items()})
    with tempfile.TemporaryDirectory() as cache:
        env = _env(cache)
        wall, _ = _run(variants["dockyard-k8s check"], env)  # fills the validator cache (first run ever)
        print(f"first run, empty cache (compiles validators): {wall:.0f} ms")
        for cmd in variants.values():
            _run(cmd, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        inner: dict[str, list[float]] = {"validation (import + rendered objects)": [],
                                         "kubernetes_validate, the built-in objects": []}
        for _ in range(args.runs):
            for name, cmd in variants.items():
                times[name].append(_run(cmd, env))
            inner["validation (import + rendered objects)"].append(_inner(VALIDATE_ONLY, env))
        for _ in range(max(3, args.runs // 5)):
            inner["kubernetes_validate, the built-in objects"].append(_inner(KUBERNETES_VALIDATE, env))
    base = statistics.median(w for w, _ in times["dockyard-k8s check"])
    print(f"{'command':34} {'wall median':>11} {'IQR':>15} {'CPU median':>10}  (runs)")
    for name, values in times.items():
        walls = [w for w, _ in values]
        q = statistics.quantiles(walls, n=4)
        change = f" {statistics.median(walls) / base * 100 - 100:+5.1f}%" if name.startswith("  ") else ""
        print(f"{name:34} {statistics.median(walls):8.1f} ms {q[0]:6.1f}-{q[2]:6.1f} ms "
              f"{statistics.median(c for _, c in values):7.1f} ms  ({len(values)}){change}")
    for name, ms in inner.items():
        print(f"in-process: {name:40} median {statistics.median(ms):.1f} ms (min {min(ms):.1f})")


if __name__ == "__main__":
    main()
