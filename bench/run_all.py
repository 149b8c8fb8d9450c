"""Run every benchmark script in bench/ (bench_*.py), one after the other: `make bench`."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    status = 0
    for script in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        print(f"== {os.path.basename(script)}", flush=True)
        status |= subprocess.run([sys.executable, script], check=False).returncode
    sys.exit(status)
