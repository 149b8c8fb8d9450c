"""Every example infra file x every launch mode, rendered as the golden files render them
(``tests/golden``, the isolation properties and any test that walks every case)::

    from support.examples import CASES, example_bundle, mode_sets
    bundle = example_bundle("eks_p5", mode_sets("eks_p5", "job"))
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from dockyard_k8s.config.layering import Layers
from support.paths import REPO

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle

# infra example -> the recipe it runs
EXAMPLES = {
    "grpo_swe": "grpo_swe",
    "grpo_swe_sglang": "grpo_swe",
    "grpo_swe_kueue": "grpo_swe",
    "eks_p5": "grpo_swe",
    "kind_single_gpu": "grpo_tiny",
    "k3s_single_gpu": "grpo_tiny",
    "kind_cpu": "grpo_tiny",
}
MODES = ("rayjob", "bringup", "attach", "job", "statefulset")
# What a mode needs beyond the example (the job shape is one node: one GPU pod).
MODE_SETS = {
    "attach": ["launch.attach.cluster=shared-ray"],
    "job": ["kuberay.trainer.replicas=1", "kuberay.inference.replicas=0"],
}
# The generic examples' head runs on CPU nodes with 8 CPUs / 64Gi; one p4de node cannot also hold
# that next to the 90-CPU trainer (check refuses it), so the job shape gets a head that fits.
JOB_SETS = {e: ["kuberay.head.nodeSelector=null", "kuberay.head.cpu=4", "kuberay.head.memory=32Gi"]
            for e in ("grpo_swe", "grpo_swe_sglang", "grpo_swe_kueue")}
CASES = [(e, m) for e in EXAMPLES for m in MODES]


def mode_sets(example: str, mode: str) -> list[str]:
    """The ``--set`` values that make ``example`` a ``mode`` run."""
    return [f"launch.mode={mode}", *MODE_SETS.get(mode, []), *(JOB_SETS.get(example, []) if mode == "job" else [])]


def example_bundle(example: str, sets: list[str]) -> Bundle:
    """The example's bundle, its paths relative to the repository as a user types them, no user defaults."""
    from dockyard_k8s.bundle import build_bundle

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return build_bundle(f"examples/{EXAMPLES[example]}.yaml", f"examples/{example}.infra.yaml",
                            Layers(sets=sets, env={"HOME": "/nonexistent"}))
    finally:
        os.chdir(cwd)
