"""The offline commands (`check`, `render`, `validate`, `lint`, `plan`, `serve check`) never import the cluster
client stack (``dockyard_k8s.live``, lightkube, httpx), Ray, shtab or a JSON Schema compiler: those
stay behind the live commands, `completion` and a validator-cache miss."""

from __future__ import annotations

import subprocess
import sys

from support.paths import EXAMPLES

HEAVY = ("lightkube", "httpx", "httpx2", "anyio", "ray", "shtab", "fastjsonschema", "jsonschema", "kubernetes")

PROBE = """
import sys
from dockyard_k8s.cli import main
recipe, infra, serve, out = sys.argv[1:5]
run = [recipe, "--infra", infra]
for argv in (["check", *run], ["render", *run, "--output-dir", out], ["validate", out], ["lint", *run],
             ["plan", *run], ["serve", "check", serve]):
    code = main(argv)
    assert code == 0, (argv, code)

def heavy():
    return ",".join(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r} or m.startswith("dockyard_k8s.live")))

print("OFFLINE=" + heavy())
import dockyard_k8s.live.client  # the probe sees the stack once something imports it
print("LIVE=" + heavy())
"""


def test_offline_commands_import_no_heavy_package_nor_live(tmp_path) -> None:
    argv = [sys.executable, "-c", PROBE.format(heavy=HEAVY), str(EXAMPLES / "grpo_swe.yaml"),
            str(EXAMPLES / "grpo_swe.infra.yaml"), str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")]
    # the first run fills the validator cache (a miss compiles with fastjsonschema); the second is probed
    subprocess.run([*argv, str(tmp_path / "warm")], capture_output=True, text=True, timeout=300)
    proc = subprocess.run([*argv, str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = dict(line.split("=", 1) for line in proc.stdout.splitlines() if line.startswith(("OFFLINE=", "LIVE=")))
    assert found["OFFLINE"] == ""
    assert {m.split(".")[0] for m in found["LIVE"].split(",")} & {"lightkube", "httpx", "httpx2"}
