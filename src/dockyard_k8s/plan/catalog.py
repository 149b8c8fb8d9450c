"""Instance types a node pool can be made of: what one node offers pods (allocatable).

AWS entries hold the instance's *capacity* (vCPUs, memory in MiB as EC2 describes it,
GPUs, EFA interfaces, the VPC CNI's max pods) and derive allocatable with the overhead
Karpenter and the EKS AL2023 AMI reserve (:func:`eks_allocatable`). Source of every AWS
number: the Karpenter instance-type reference, generated from the EC2 API
(aws/karpenter-provider-aws, website/content/en/docs/reference/instance-types.md, AL2023,
default 20Gi root volume), whose "Resources" rows the tests reproduce exactly. Real nodes
can differ (custom AMIs, kubelet flags, prefix delegation): measure with ``kubectl get
nodes -o yaml`` and pass ``--nodes``, or declare your own type in ``plan.instanceTypes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
MI = 2**20
GI = 2**30


@dataclass(frozen=True, slots=True)
class Capacity:
    vcpu: int
    memory_mib: int  # as EC2 describes it (karpenter.k8s.aws/instance-memory)
    gpus: int
    efa: int
    max_pods: int  # VPC CNI limit (ENIs x (IPs per ENI - 1) + 2), as Karpenter computes it
    gpu_name: str


# name -> capacity. Source: Karpenter instance-type reference (see module docstring).
AWS: dict[str, Capacity] = {
    "p4d.24xlarge": Capacity(96, 1179648, 8, 4, 737, "A100 40GB"),  # 8x A100 40 GB, 4 EFA
    "p4de.24xlarge": Capacity(96, 1179648, 8, 4, 737, "A100 80GB"),  # 8x A100 80 GB, 4 EFA
    "p5.48xlarge": Capacity(192, 2097152, 8, 32, 100, "H100 80GB"),  # 8x H100, 32 EFA
    "p5e.48xlarge": Capacity(192, 2097152, 8, 32, 100, "H200 141GB"),  # 8x H200, 32 EFA
    "g5.xlarge": Capacity(4, 16384, 1, 0, 58, "A10G 24GB"),
    "g5.2xlarge": Capacity(8, 32768, 1, 0, 58, "A10G 24GB"),
    "g5.4xlarge": Capacity(16, 65536, 1, 0, 234, "A10G 24GB"),
    "g5.8xlarge": Capacity(32, 131072, 1, 1, 234, "A10G 24GB"),
    "g5.12xlarge": Capacity(48, 196608, 4, 1, 737, "A10G 24GB"),
    "g5.16xlarge": Capacity(64, 262144, 1, 1, 234, "A10G 24GB"),
    "g5.24xlarge": Capacity(96, 393216, 4, 1, 737, "A10G 24GB"),
    "g5.48xlarge": Capacity(192, 786432, 8, 1, 345, "A10G 24GB"),
    "g6e.xlarge": Capacity(4, 32768, 1, 0, 58, "L40S 48GB"),
    "g6e.2xlarge": Capacity(8, 65536, 1, 0, 58, "L40S 48GB"),
    "g6e.4xlarge": Capacity(16, 131072, 1, 0, 234, "L40S 48GB"),
    "g6e.8xlarge": Capacity(32, 262144, 1, 1, 234, "L40S 48GB"),
    "g6e.12xlarge": Capacity(48, 393216, 4, 1, 292, "L40S 48GB"),
    "g6e.16xlarge": Capacity(64, 524288, 1, 1, 737, "L40S 48GB"),
    "g6e.24xlarge": Capacity(96, 786432, 4, 2, 492, "L40S 48GB"),
    "g6e.48xlarge": Capacity(192, 1572864, 8, 4, 492, "L40S 48GB"),
    # CPU pools for the Ray head and the sandbox executors. Source: EC2 specs and the EKS AMI's
    # eni-max-pods.txt (awslabs/amazon-eks-ami); allocatable by the same formula.
    "m6i.4xlarge": Capacity(16, 65536, 0, 0, 234, ""),
    "m6i.8xlarge": Capacity(32, 131072, 0, 0, 234, ""),
    "m6i.16xlarge": Capacity(64, 262144, 0, 0, 737, ""),
}

# Types that are not EC2 instances: allocatable given directly.
# The single-GPU box of the single-node profile (shared/spec 001: "one A10 (24 GB) or larger GPU
# and 32 GB system RAM", k3s or kind). Assumed: 8 cores, a 200Gi disk, k3s defaults (no
# kube-reserved; eviction at memory.available<100Mi and nodefs.available<10%), kubelet's
# default 110 max pods.
WORKSTATION = "workstation-a10-24gb"
EXPLICIT: dict[str, dict[str, str | int]] = {
    WORKSTATION: {"cpu": "8", "memory": f"{32 * 1024 - 100}Mi", "ephemeral-storage": "180Gi", "pods": 110, GPU: 1},
}


def _cpu_reserved_milli(vcpu: int) -> int:
    """kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two,
    0.25% of the rest (EKS AMI and Karpenter)."""
    tiers = [(1, Fraction(60)), (1, Fraction(10)), (2, Fraction(5)), (max(vcpu - 4, 0), Fraction(5, 2))]
    left, total = vcpu, Fraction(0)
    for count, per_core in tiers:
        used = min(left, count)
        total += used * per_core
        left -= used
    return math.ceil(total)


def eks_allocatable(cap: Capacity, root_volume: int = 20 * GI) -> dict[str, int]:
    """Allocatable of an EKS node: capacity minus VM overhead (7.5% of memory), kube-reserved
    (CPU tiers; 11Mi per pod + 255Mi memory; 1Gi disk) and hard eviction thresholds
    (100Mi memory, 10% of the root volume). Units: cpu in millicores, bytes, counts."""
    overhead_mib = -(-cap.memory_mib * 75 // 1000)
    memory_mib = cap.memory_mib - overhead_mib - (11 * cap.max_pods + 255) - 100
    out = {
        "cpu": cap.vcpu * 1000 - _cpu_reserved_milli(cap.vcpu),
        "memory": memory_mib * MI,
        "ephemeral-storage": root_volume - root_volume // 10 - GI,
        "pods": cap.max_pods,
    }
    if cap.gpus:
        out[GPU] = cap.gpus
    if cap.efa:
        out[EFA] = cap.efa
    return out


def names() -> list[str]:
    return [*AWS, *EXPLICIT]


def describe(name: str) -> str:
    """One line for ``plan --list-instance-types``."""
    if name in AWS:
        c = AWS[name]
        gpu = f"{c.gpus}x {c.gpu_name}" if c.gpus else "no GPU"
        a = eks_allocatable(c)
        return (f"{name:<22} {c.vcpu:>4} vCPU {c.memory_mib // 1024:>5} GiB  {gpu:<16} EFA {c.efa:<3} "
                f"allocatable cpu {a['cpu']}m, memory {a['memory'] // MI}Mi, pods {a['pods']}")
    e = EXPLICIT[name]
    return f"{name:<22} allocatable " + ", ".join(f"{k} {v}" for k, v in e.items())
