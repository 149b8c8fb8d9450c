"""scripts/validate-manifests.sh covers every launch mode of every example (so every platform),
the NCCL test, the model endpoints and the hand-written manifests."""

from __future__ import annotations

import os
import subprocess

import pytest

from support.paths import REPO

MODES = ("rayjob", "bringup", "attach", "job", "statefulset")


@pytest.mark.slow
def test_the_script_renders_and_validates_everything(tmp_path):
    env = {**os.environ, "VALIDATOR": "builtin", "DOCKYARD": str(REPO / ".venv" / "bin" / "dockyard-k8s")}
    result = subprocess.run(["bash", str(REPO / "scripts" / "validate-manifests.sh")], env=env, cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    rendered = next(line for line in result.stdout.splitlines() if line.startswith("rendered ")).split()
    for infra in sorted((REPO / "examples").glob("*.infra.yaml")):
        base = infra.name.removesuffix(".infra.yaml")
        for mode in MODES:
            assert f"{base}-{mode}.yaml" in rendered, (base, mode)
    assert {"eks_p5-nccl-test.yaml", "kind_single_gpu-nccl-test.yaml"} <= set(rendered)
    for spec in (REPO / "examples").glob("*.serve.yaml"):
        assert spec.name in rendered
    handwritten = next(line for line in result.stdout.splitlines() if line.startswith("hand-written: "))
    assert "infra/examples/sandbox-pool.yaml" in handwritten.split()
    assert " 0 invalid" in result.stdout
