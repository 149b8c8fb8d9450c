"""Golden files: every example infra spec x every launch mode, rendered byte for byte.

Regenerate after an intended change, then read the diff line by line:

    make golden        # = DOCKYARD_UPDATE_GOLDEN=1 pytest tests/golden
"""

from __future__ import annotations

import glob
import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.render.serialize import dump_documents

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECIPE = os.path.join("examples", "grpo_swe.yaml")
# The core examples; platform examples have their own golden test.
INFRAS = ["examples/grpo_swe.infra.yaml", "examples/grpo_swe_sglang.infra.yaml"]
MODES = {
    "rayjob": [],
    "bringup": ["launch.mode=bringup"],
    "attach": ["launch.mode=attach", "launch.attach.cluster=shared-gpu"],
}
UPDATE = bool(os.environ.get("DOCKYARD_UPDATE_GOLDEN"))


def _render(infra: str, sets: list[str]) -> str:
    # Relative paths from the repo root, like a user would type: file names end up in nothing
    # rendered, but keep it honest.
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        bundle = build_bundle(RECIPE, infra, sets=sets, env={"HOME": "/nonexistent"})
    finally:
        os.chdir(cwd)
    return dump_documents(bundle.objects)


CASES = [(infra, mode) for infra in INFRAS for mode in MODES]


@pytest.mark.parametrize(("infra", "mode"), CASES, ids=[f"{os.path.basename(i)}-{m}" for i, m in CASES])
def test_golden(infra, mode):
    name = os.path.basename(infra).removesuffix(".infra.yaml")
    expected_file = os.path.join(HERE, "core", f"{name}.{mode}.yaml")
    got = _render(infra, MODES[mode])
    if UPDATE:
        os.makedirs(os.path.dirname(expected_file), exist_ok=True)
        with open(expected_file, "w", encoding="utf-8") as f:
            f.write(got)
    assert os.path.exists(expected_file), f"missing golden file; run `make golden` to create {expected_file}"
    with open(expected_file, encoding="utf-8") as f:
        assert got == f.read(), f"{expected_file} differs; if intended, `make golden` and review the diff"


def test_no_stale_golden_files():
    expected = {f"{os.path.basename(i).removesuffix('.infra.yaml')}.{m}.yaml" for i, m in CASES}
    present = {os.path.basename(p) for p in glob.glob(os.path.join(HERE, "core", "*.yaml"))}
    assert present == expected


def test_every_core_example_is_covered():
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "grpo_swe*.infra.yaml")))
    assert [os.path.relpath(e, ROOT) for e in examples] == sorted(INFRAS)


def test_rendering_is_deterministic_across_processes():
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "dockyard_k8s", "render", RECIPE, "--infra", INFRAS[0]]
    env = {**os.environ, "PYTHONHASHSEED": "random", "HOME": "/nonexistent"}
    outs = {subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(outs) == 1
