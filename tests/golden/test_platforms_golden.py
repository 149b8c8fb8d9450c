"""Golden renders of the platform examples: every platform example x every launch mode, plus
its NCCL test MPIJob, compared byte for byte with tests/golden/platforms/.

Regenerate after an intended change, then review the diff:

    DOCKYARD_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/golden/test_platforms_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.render.nccl import nccl_mpijob
from dockyard_k8s.render.serialize import dump_documents

REPO = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).parent / "platforms"
UPDATE = os.environ.get("DOCKYARD_UPDATE_GOLDEN") == "1"

# infra example -> the recipe it runs
EXAMPLES = {
    "eks_p5": "grpo_swe",
    "kind_single_gpu": "grpo_tiny",
    "k3s_single_gpu": "grpo_tiny",
    "kind_cpu": "grpo_tiny",
}
MODES = ("rayjob", "bringup", "attach", "job", "statefulset")
# What a mode needs beyond the example (the job shape is one node: one 8-GPU pod on p5).
MODE_SETS = {
    "attach": ["launch.attach.cluster=shared-ray"],
    "job": ["kuberay.trainer.replicas=1", "kuberay.inference.replicas=0"],
}
NCCL_SETS = {"eks_p5": [], "kind_single_gpu": ["ncclTest.image=registry.example.com/nccl-tests:2.16.9"]}


def _bundle(example: str, sets: list[str], tmp_path: Path):  # type: ignore[no-untyped-def]
    return build_bundle(str(REPO / "examples" / f"{EXAMPLES[example]}.yaml"),
                        str(REPO / "examples" / f"{example}.infra.yaml"),
                        sets=sets, env={"HOME": str(tmp_path)})


def _compare(name: str, text: str) -> None:
    path = EXPECTED / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}; run with DOCKYARD_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file (regenerate and review)"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_platform_example_renders_as_golden(example: str, mode: str, tmp_path: Path) -> None:
    bundle = _bundle(example, [f"launch.mode={mode}", *MODE_SETS.get(mode, [])], tmp_path)
    text = dump_documents(bundle.objects)
    assert str(REPO) not in text  # no machine paths leak into what is applied
    _compare(f"{example}.{mode}.yaml", text)


@pytest.mark.parametrize("example", sorted(NCCL_SETS))
def test_nccl_test_renders_as_golden(example: str, tmp_path: Path) -> None:
    bundle = _bundle(example, NCCL_SETS[example], tmp_path)
    _compare(f"{example}.nccl-test.yaml", dump_documents([nccl_mpijob(bundle.run.infra)]))


def test_render_is_deterministic(tmp_path: Path) -> None:
    first = dump_documents(_bundle("eks_p5", [], tmp_path).objects)
    assert dump_documents(_bundle("eks_p5", [], tmp_path).objects) == first


def test_no_stale_golden_files() -> None:
    expected = {f"{e}.{m}.yaml" for e in EXAMPLES for m in MODES} | {f"{e}.nccl-test.yaml" for e in NCCL_SETS}
    assert {p.name for p in EXPECTED.glob("*.yaml")} == expected
