"""`check`/`render` never import the cluster client stack (start-up stays fast)."""

from __future__ import annotations

import subprocess
import sys

from support.paths import EXAMPLES

PROBE = """
import sys
from dockyard_k8s.cli import main
code = main([{command!r}, {recipe!r}, "--infra", {infra!r}])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("lightkube", "httpx", "httpx2", "ray", "anyio")
               or m.startswith("dockyard_k8s.live"))
print("HEAVY=" + ",".join(heavy))
sys.exit(code)
"""


def _heavy_modules(command: str) -> list[str]:
    code = PROBE.format(command=command, recipe=str(EXAMPLES / "grpo_swe.yaml"),
                        infra=str(EXAMPLES / "grpo_swe.infra.yaml"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("HEAVY="))
    return [m for m in line[len("HEAVY="):].split(",") if m]


def test_check_and_render_do_not_import_the_client_stack() -> None:
    assert _heavy_modules("check") == []
    assert _heavy_modules("render") == []


def test_the_probe_can_see_a_client_import() -> None:
    """The probe is not vacuous: a live command's module pulls the stack in."""
    proc = subprocess.run([sys.executable, "-c", "import sys, dockyard_k8s.live.client; "
                                                 "print('lightkube' in sys.modules or 'httpx2' in sys.modules)"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True"
