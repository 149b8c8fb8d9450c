"""Cold start of `dockyard-k8s check` on the bundled example, validation included.

Runs each command N times, interleaved so machine noise hits all alike, in fresh processes
with bytecode caching on (as an installed package has it) and a warm validator cache:

* ``python -c pass``                     the interpreter alone
* ``dockyard-k8s check`` (validated)     what users run
* in-process split: importing + running the validation of the 6 rendered objects, vs
  ``kubernetes_validate.validate`` (the alternative) on the same 5 built-in objects.

Usage: python bench/bench_check_startup.py [--runs 31]
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

VALIDATE_ONLY = """
import time, sys
from dockyard_k8s.bundle import build_bundle
import dockyard_k8s.bundle as b
objects = b.render_run(b.load_run(*sys.argv[1:3]))
t = time.perf_counter()
from dockyard_k8s.validate.engine import validate_report
r = validate_report(objects, ignore_missing_schemas=True)
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
    if not o["apiVersion"].startswith("ray.io"):
        kubernetes_validate.validate(o, "1.29", strict=True)
print((time.perf_counter() - t) * 1e3)
"""


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
    env["XDG_CACHE_HOME"] = cache
    return env


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1e3


def _inner(code: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", code, EXAMPLE[0], EXAMPLE[2]], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=31)
    args = parser.parse_args()
    exe = os.path.join(os.path.dirname(sys.executable), "dockyard-k8s")
    with tempfile.TemporaryDirectory() as cache:
        env = _env(cache)
        t = _wall([exe, "check", *EXAMPLE], env)  # fills the validator cache (first run ever)
        print(f"first run, empty cache (compiles validators): {t:.0f} ms")
        _wall([exe, "check", *EXAMPLE], env)
        series: dict[str, list[float]] = {"python -c pass": [], "dockyard-k8s check (validated)": [],
                                          "  of which validation (import + 6 objects)": [],
                                          "  kubernetes_validate, 5 built-in objects": []}
        for _ in range(args.runs):
            series["python -c pass"].append(_wall([sys.executable, "-c", "pass"], env))
            series["dockyard-k8s check (validated)"].append(_wall([exe, "check", *EXAMPLE], env))
            series["  of which validation (import + 6 objects)"].append(_inner(VALIDATE_ONLY, env))
        for _ in range(max(3, args.runs // 5)):
            series["  kubernetes_validate, 5 built-in objects"].append(_inner(KUBERNETES_VALIDATE, env))
    print(f"{'command':45} {'median ms':>10} {'min ms':>8}  (runs)")
    for name, values in series.items():
        print(f"{name:45} {statistics.median(values):10.1f} {min(values):8.1f}  ({len(values)})")


if __name__ == "__main__":
    main()
