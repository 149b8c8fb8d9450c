"""Cost of the platform profile layer on `check` (start-up included), in the same run:

    generic   examples/grpo_swe.infra.yaml       (no profile: the layers are stacked once)
    eks       examples/eks_p5.infra.yaml         (profile + preset: stacked twice, platform pass)
    kind-job  examples/k3s_single_gpu.infra.yaml (profile, Job shape, default-deny, PriorityClass)

Each variant runs `dockyard-k8s check` as a fresh process N times (median wall time), and
in-process `build_bundle` M times (median), so the layer's own cost is visible apart from
interpreter start-up. Usage: .venv/bin/python bench/bench_platforms.py [N] [M]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dockyard_k8s.config.layering import Layers

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {
    "generic": ("grpo_swe.yaml", "grpo_swe.infra.yaml"),
    "eks": ("grpo_swe.yaml", "eks_p5.infra.yaml"),
    "kind-job": ("grpo_tiny.yaml", "k3s_single_gpu.infra.yaml"),
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    exe = str(Path(sys.executable).parent / "dockyard-k8s")
    env = {**os.environ, "HOME": "/nonexistent"}
    sys.path.insert(0, str(REPO / "src"))
    from dockyard_k8s.bundle import build_bundle

    head = f"check, fresh process (median of {n})"
    print(f"{'variant':10} {head:40} in-process build_bundle (median of {m})")
    for name, (recipe, infra) in VARIANTS.items():
        args = [exe, "check", str(REPO / "examples" / recipe), "--infra", str(REPO / "examples" / infra)]
        walls = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(args, env=env, stdout=subprocess.DEVNULL, check=True)
            walls.append(time.perf_counter() - t)
        inproc = []
        for _ in range(m):
            t = time.perf_counter()
            build_bundle(str(REPO / "examples" / recipe), str(REPO / "examples" / infra),
                         Layers(env={"HOME": "/nonexistent"}))
            inproc.append(time.perf_counter() - t)
        print(f"{name:10} {statistics.median(walls) * 1000:8.1f} ms{'':30} {statistics.median(inproc) * 1000:8.2f} ms")


if __name__ == "__main__":
    main()
