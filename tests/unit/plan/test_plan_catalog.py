"""The instance catalogue reproduces the allocatable Karpenter publishes for each type."""

from __future__ import annotations

import pytest

from dockyard_k8s.plan import catalog

MI, GI = 2**20, 2**30

# (cpu millicores, memory MiB, pods, nvidia.com/gpu, vpc.amazonaws.com/efa), copied from the "Resources" rows of
# aws/karpenter-provider-aws website/content/en/docs/reference/instance-types.md (AL2023, 20Gi root volume).
PUBLISHED = {
    "p4d.24xlarge": (95690, 1082712, 737, 8, 4),
    "p4de.24xlarge": (95690, 1082712, 737, 8, 4),
    "p5.48xlarge": (191450, 1938410, 100, 8, 32),
    "p5e.48xlarge": (191450, 1938410, 100, 8, 32),
    "g5.xlarge": (3920, 14162, 58, 1, 0),
    "g5.2xlarge": (7910, 29317, 58, 1, 0),
    "g5.4xlarge": (15890, 57691, 234, 1, 0),
    "g5.8xlarge": (31850, 118312, 234, 1, 1),
    "g5.12xlarge": (47810, 173400, 737, 4, 1),
    "g5.16xlarge": (63770, 239554, 234, 1, 1),
    "g5.24xlarge": (95690, 355262, 737, 4, 1),
    "g5.48xlarge": (191450, 723299, 345, 8, 1),
    "g6e.xlarge": (3920, 29317, 58, 1, 0),
    "g6e.2xlarge": (7910, 59627, 58, 1, 0),
    "g6e.4xlarge": (15890, 118312, 234, 1, 0),
    "g6e.8xlarge": (31850, 239554, 234, 1, 1),
    "g6e.12xlarge": (47810, 360157, 292, 4, 1),
    "g6e.16xlarge": (63770, 476504, 737, 1, 1),
    "g6e.24xlarge": (95690, 721682, 492, 4, 2),
    "g6e.48xlarge": (191450, 1449132, 492, 8, 4),
    # Published rows of instance types with the same capacity as these m6i sizes (g6.4xlarge, g5.8xlarge,
    # g6.16xlarge), without their GPUs.
    "m6i.4xlarge": (15890, 57691, 234, 0, 0),
    "m6i.8xlarge": (31850, 118312, 234, 0, 0),
    "m6i.16xlarge": (63770, 234021, 737, 0, 0),
}


@pytest.mark.parametrize("name", sorted(catalog.AWS))
def test_allocatable_matches_karpenter(name):
    a = catalog.eks_allocatable(catalog.AWS[name])
    cpu, mem, pods, gpus, efa = PUBLISHED[name]
    assert (a["cpu"], a["memory"] // MI, a["pods"], a.get(catalog.GPU, 0), a.get(catalog.EFA, 0)) == (
        cpu, mem, pods, gpus, efa)
    assert a["memory"] % MI == 0
    assert a["ephemeral-storage"] == 17 * GI


def test_the_catalogue_has_the_a100_h100_and_workstation_types():
    assert {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", catalog.WORKSTATION} <= set(
        catalog.names())
    assert any(n.startswith("g5.") for n in catalog.AWS) and any(n.startswith("g6e.") for n in catalog.AWS)


def test_root_volume_sets_ephemeral_storage():
    a = catalog.eks_allocatable(catalog.AWS["m6i.8xlarge"], 500 * GI)
    assert a["ephemeral-storage"] == 500 * GI - 50 * GI - GI


def test_describe_lines():
    assert catalog.describe("p5.48xlarge").startswith("p5.48xlarge             192 vCPU  2048 GiB  8x H100 80GB")
    assert catalog.describe(catalog.WORKSTATION) == (
        "workstation-a10-24gb   allocatable cpu 8, memory 32668Mi, ephemeral-storage 180Gi, pods 110, nvidia.com/gpu 1")
