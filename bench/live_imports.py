"""What `check`/`render` save by not importing the live stack: fresh-process import times.

Run: .venv/bin/python bench/live_imports.py   (medians of N fresh interpreters, same machine)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": "pass",
    "dockyard_k8s.cli (what check/render load)": "import dockyard_k8s.cli",
    "dockyard_k8s.cli + live.client (lightkube, httpx2)": "import dockyard_k8s.cli, dockyard_k8s.live.client",
    "+ lightkube.config + orchestrate (a live command)":
        "import dockyard_k8s.cli, dockyard_k8s.live.orchestrate, lightkube.config.kubeconfig",
}


def measure(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    for name, code in CASES.items():
        print(f"{measure(code, runs):7.1f} ms  {name}")


if __name__ == "__main__":
    main()
