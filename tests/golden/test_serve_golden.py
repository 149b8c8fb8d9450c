"""Golden files of the serve examples: each renders to tests/golden/expected/serve/<example>.yaml.

Regenerate after an intended change with `make golden`, then read the diff line by line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.serve_bundle import build_serve_bundle
from dockyard_k8s.yamlfile import dump_documents
from support.golden import compare
from support.paths import REPO

EXPECTED = Path(__file__).parent / "expected" / "serve"
EXAMPLES = sorted(p.name.removesuffix(".serve.yaml") for p in (REPO / "examples").glob("*.serve.yaml"))


def _render(example: str) -> str:
    cwd = os.getcwd()
    os.chdir(REPO)  # paths relative to the repository, as a user types them
    try:
        bundle = build_serve_bundle(f"examples/{example}.serve.yaml", Layers(env={"HOME": "/nonexistent"}))
    finally:
        os.chdir(cwd)
    assert not bundle.validation.missing  # every kind validated against a schema (KEDA CRD included)
    return dump_documents(bundle.objects)


@pytest.mark.parametrize("example", EXAMPLES)
def test_serve_example_renders_as_golden(example: str) -> None:
    text = _render(example)
    assert str(REPO) not in text
    compare(EXPECTED / f"{example}.yaml", text)


def test_every_serve_example_has_a_golden_file_and_none_is_stale() -> None:
    assert EXAMPLES == ["grpo_swe_checkpoint", "llama3_70b_eks_keda", "llama3_8b_kind"]
    assert sorted(p.name for p in EXPECTED.glob("*.yaml")) == [f"{e}.yaml" for e in EXAMPLES]
