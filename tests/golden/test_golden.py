"""Golden files: every example infra spec x every launch mode (plus the NCCL test MPIJob of
the platform examples), rendered and compared byte for byte with tests/golden/expected/.

Regenerate after an intended change, then read the diff line by line:

    make golden        # = DOCKYARD_UPDATE_GOLDEN=1 pytest tests/golden
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dockyard_k8s.render.nccl import nccl_mpijob
from dockyard_k8s.yamlfile import dump_documents
from support.examples import CASES, EXAMPLES, example_bundle, mode_sets
from support.golden import compare
from support.paths import REPO

EXPECTED = Path(__file__).parent / "expected"

NCCL_SETS = {"eks_p5": [], "kind_single_gpu": ["ncclTest.image=registry.example.com/nccl-tests:2.16.9"]}


def _compare(name: str, text: str) -> None:
    compare(EXPECTED / name, text)


@pytest.mark.parametrize(("example", "mode"), CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_example_renders_as_golden(example: str, mode: str) -> None:
    text = dump_documents(example_bundle(example, mode_sets(example, mode)).objects)
    assert str(REPO) not in text  # no machine paths leak into what is applied
    _compare(f"{example}.{mode}.yaml", text)


@pytest.mark.parametrize("example", sorted(NCCL_SETS))
def test_nccl_test_renders_as_golden(example: str) -> None:
    infra = example_bundle(example, NCCL_SETS[example]).run.infra
    _compare(f"{example}.nccl-test.yaml", dump_documents([nccl_mpijob(infra)]))


def test_every_example_is_covered_and_no_golden_file_is_stale() -> None:
    assert sorted(p.name.removesuffix(".infra.yaml") for p in (REPO / "examples").glob("*.infra.yaml")) == \
        sorted(EXAMPLES)
    expected = {f"{e}.{m}.yaml" for e, m in CASES} | {f"{e}.nccl-test.yaml" for e in NCCL_SETS}
    assert {p.name for p in EXPECTED.glob("*.yaml")} == expected


def test_rendering_is_deterministic_across_processes() -> None:
    cmd = [sys.executable, "-m", "dockyard_k8s", "render", "examples/grpo_swe.yaml", "--infra",
           "examples/eks_p5.infra.yaml"]
    env = {**os.environ, "PYTHONHASHSEED": "random", "HOME": "/nonexistent"}
    outs = {subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(outs) == 1
