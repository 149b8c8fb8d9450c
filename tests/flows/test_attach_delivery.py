"""attach mode delivers the recipe and DOCKYARD_SANDBOX_URLS to a cluster that is not ours
(the Ray job's runtime_env), checked against a real local Ray head (slow: starts Ray)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from support.paths import EXAMPLES

pytestmark = pytest.mark.slow

SHOW = ("import os, sys; print('RECIPE-FILE', open(sys.argv[1]).read().replace(chr(10), ' | ')); "
        "print('URLS', os.environ['DOCKYARD_SANDBOX_URLS']); print('PATH-ENV', os.environ['DOCKYARD_RECIPE'])")


def test_the_attached_jobs_process_sees_the_recipe_and_the_sandbox_url(cli: Any, ray_head: str) -> None:
    entrypoint = f'{sys.executable} -c "{SHOW}" {{recipe}}'
    args = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml"),
            "--set", "launch.mode=attach", "--set", f"launch.attach.address={ray_head}",
            "--set", "kuberay.auth.mode=disabled",  # the head runs without token auth (issue 22 item 20)
            "--set-string", f"launch.entrypoint={entrypoint}", "optimizer.lr=3e-6"]
    run = cli("run", *args)
    assert run.code == 0, run.out + run.err
    out = run.out
    assert "SUCCEEDED" in out
    recipe_line = next(line for line in out.splitlines() if line.startswith("RECIPE-FILE"))
    assert "name: grpo-swe-qwen3-32b" in recipe_line and "lr: 3.0e-06" in recipe_line  # resolved + overridden
    assert "sandbox_urls: null" in recipe_line
    assert "URLS http://grpo-swe-sandbox.rl-research.svc.cluster.local:9090" in out
    assert "PATH-ENV /tmp/dockyard-k8s/grpo-swe/recipe.yaml" in out
