"""The guards of issue 12, side by side against other checkouts of dockyard-k8s (not in
``make bench``: it needs those checkouts).

Each command runs in this checkout and in each other one with its own venv (``OTHER/.venv``),
interleaved (who goes first rotates) so the load of other processes on the machine hits all
alike, with one warm validator cache per checkout. Reports per command and checkout the median
wall time with its interquartile range, the minimum, the median CPU time (user + system,
workers included) and the median CPU time's ratio to the first checkout's. With
``--instructions``, each command also runs once per checkout under valgrind's cachegrind (no
cache simulation) for the instructions it executes (workers included): the same number on a
loaded machine as on an idle one, where times are not (``--runs 0`` for the counts alone).

Commands (``--commands``, default ``check,validate,validate-1``):

* ``check``: ``check`` on the bundled example; ``check-cold``: the same with an empty
  validator cache each time (converting and compiling what it needs);
* ``render``: ``render`` of the example to stdout;
* ``serve-check``: ``serve check`` on the kind model endpoint (only in checkouts that have it);
* ``validate`` / ``validate-1``: ``validate`` on N generated objects in one file
  (``bench_validate.generate``), with a worker per core / ``--workers 1``.

Usage: python bench/compare_checkouts.py OTHER_CHECKOUT... [-n 10000] [--runs 15] [--commands check,render]
       [--same-venv]
       (e.g. a clone of main at an older commit: git clone . /tmp/old && git -C /tmp/old checkout X
        && python3 -m venv /tmp/old/.venv && /tmp/old/.venv/bin/pip install -e /tmp/old)
       --same-venv runs every checkout with this interpreter and PYTHONPATH=CHECKOUT/src
       (``python -m dockyard_k8s``): no venv per checkout, for ones with the same dependencies
       (a worktree: git worktree add --detach /tmp/old X).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = ["examples/grpo_swe.yaml", "--infra", "examples/grpo_swe.infra.yaml"]
SERVE = "examples/llama3_8b_kind.serve.yaml"
COMMANDS = ("check", "check-cold", "render", "serve-check", "validate", "validate-1")


def _command(tree: str, what: str, manifests: str, same_venv: bool) -> list[str] | None:
    exe = [sys.executable, "-m", "dockyard_k8s"] if same_venv else [os.path.join(tree, ".venv", "bin", "dockyard-k8s")]
    if what in ("check", "check-cold"):
        return [*exe, "check", *EXAMPLE]
    if what == "render":
        return [*exe, "render", *EXAMPLE]
    if what == "serve-check":
        return [*exe, "serve", "check", SERVE] if os.path.exists(os.path.join(tree, SERVE)) else None
    if what == "validate":
        return [*exe, "validate", manifests]
    return [*exe, "validate", "--workers", "1", manifests]


def _run(cmd: list[str], tree: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _instructions(cmd: list[str], tree: str, env: dict[str, str]) -> int:
    """Instructions one run executes, its forked workers' included (valgrind follows a fork)."""
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *cmd], cwd=tree, env=env, capture_output=True, text=True, check=False)
    counts = re.findall(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if not counts:
        raise SystemExit(f"valgrind gave no count for {' '.join(cmd)}: {proc.stderr[-400:]}")
    return sum(int(c.replace(",", "")) for c in counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("others", nargs="+", metavar="other", help="another checkout with its own .venv")
    parser.add_argument("-n", type=int, default=10_000, help="objects in the validate input")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--commands", default="check,validate,validate-1",
                        help=f"comma-separated, of: {', '.join(COMMANDS)}")
    parser.add_argument("--same-venv", action="store_true", help="this interpreter, PYTHONPATH=CHECKOUT/src")
    parser.add_argument("--instructions", action="store_true", help="also count instructions (needs valgrind)")
    args = parser.parse_args()
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = sorted(set(commands) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown command(s) {', '.join(unknown)}; expected some of {', '.join(COMMANDS)}")
    trees = {"this checkout": ROOT}
    trees.update({os.path.basename(os.path.abspath(other)): os.path.abspath(other) for other in args.others})
    with tempfile.TemporaryDirectory() as tmp:
        manifests = os.path.join(tmp, "mixed.yaml")
        if any(c.startswith("validate") for c in commands):
            sys.path.insert(0, os.path.join(ROOT, "src"))
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            from bench_validate import generate

            from dockyard_k8s.yamlfile import dump_documents

            with open(manifests, "w") as f:
                f.write(dump_documents(generate(args.n)))
        envs: dict[str, dict[str, str]] = {}
        for name, tree in trees.items():
            env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, f"cache-{len(envs)}"))
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has .pyc files
            if args.same_venv:
                env["PYTHONPATH"] = os.path.join(tree, "src")
            envs[name] = env
            for what in commands:  # fill the caches (and write the .pyc files)
                cmd = _command(tree, what, manifests, args.same_venv)
                if cmd is not None:
                    _run(cmd, tree, env)
        cold = os.path.join(tmp, "cold")
        wall: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        order = list(trees.items())
        for i in range(args.runs):
            for what in commands:
                for name, tree in order[i % len(order):] + order[:i % len(order)]:  # rotate who goes first
                    cmd = _command(tree, what, manifests, args.same_venv)
                    if cmd is None:
                        continue
                    w, c = _run(cmd, tree, _env(what, envs[name], cold))
                    wall.setdefault((what, name), []).append(w)
                    cpu.setdefault((what, name), []).append(c)
        counted = {(what, name): _instructions(cmd, tree, _env(what, envs[name], cold))
                   for what in commands for name, tree in trees.items() if args.instructions
                   for cmd in [_command(tree, what, manifests, args.same_venv)] if cmd is not None}
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[1]:.2f} (5 min)")
    print(f"{'command':12} {'checkout':16} {'wall median':>11} {'IQR':>17} {'min':>9} {'CPU median':>10} "
          f"{'CPU vs 1st':>10}")
    first: dict[str, float] = {}
    for (what, name), times in wall.items():
        median = statistics.median(times)
        q = statistics.quantiles(times, n=4)
        cpu_median = statistics.median(cpu[(what, name)])
        ratio = f"{cpu_median / first[what] * 100 - 100:+9.1f}%" if what in first else f"{'':10}"
        first.setdefault(what, cpu_median)
        rate = f"  {args.n / median:,.0f} objects/s" if what.startswith("validate") else ""
        print(f"{what:12} {name:16} {median * 1e3:8.1f} ms {q[0] * 1e3:7.1f}-{q[2] * 1e3:7.1f} ms "
              f"{min(times) * 1e3:6.1f} ms {cpu_median * 1e3:7.1f} ms {ratio}{rate}")
    first_count: dict[str, int] = {}
    for (what, name), count in counted.items():
        ratio = f"{count / first_count[what] * 100 - 100:+.1f}%" if what in first_count else ""
        first_count.setdefault(what, count)
        print(f"{what:12} {name:16} {count / 1e6:9.1f} M instructions {ratio}")


def _env(what: str, env: dict[str, str], cold: str) -> dict[str, str]:
    """``check-cold`` starts each run with an empty validator cache."""
    if what != "check-cold":
        return env
    shutil.rmtree(cold, ignore_errors=True)
    return dict(env, XDG_CACHE_HOME=cold)


if __name__ == "__main__":
    main()
