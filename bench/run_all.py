"""Run every benchmark in this folder (``bench/bench_*.py``), one after the other.

    make bench        # or: .venv/bin/python bench/run_all.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    failed = 0
    for script in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        failed |= subprocess.call([sys.executable, str(script)])
    return failed


if __name__ == "__main__":
    sys.exit(main())
