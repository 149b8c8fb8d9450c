"""Platform profiles: the defaults each kind of cluster needs, as data.

A profile is one more configuration layer, between the shipped defaults and the user
defaults file (``config/loader.py``)::

    shipped < platform profile (+ instance-type preset) < user defaults < infra file < --set

so every value below is a default the user can override. The profile is chosen from
``infra.platform`` (and ``infra.instanceType`` on EKS) of the merged layers.

Sources, cited on each entry:
  [EKS]   ../shared/spec/003_0b4f1c3ab5ac95ea.txt  "Kubernetes Manifests" (RL training on EKS)
  [LOCAL] ../shared/spec/001_de1da0c08b1d9fc6.txt  "04 — Kubernetes cluster" (single node, one GPU)
  [NCCL]  aws-samples/sample-rlinf-on-eks infrastructure/manifests/nccl-tests-mpijob.yaml, the
          manifest [EKS] names as its NCCL test ("NCCL test manifest")

This module is plain data plus small pure helpers: the loader, the renderers and the
docs read it; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.layering import merge
from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.kube import parse_quantity, split_image
from dockyard_k8s.plain import clone

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

PLATFORMS = ("generic", "eks", "kind", "k3s")


@dataclass(frozen=True, slots=True)
class InstancePreset:
    """Sizing of one GPU pod that takes a whole node of this instance type."""

    gpus: int
    efa: int  # vpc.amazonaws.com/efa devices
    cpu: str
    memory: str
    cpu_limit: str | None
    memory_limit: str | None


# instance type -> per-pod sizing preset. One GPU pod per node, so the pod takes the node.
EKS_PRESETS: dict[str, InstancePreset] = {
    # [EKS] "Resource Sizing Guide" row p4de.24xlarge (8 / 4 / 90 / 1000Gi); the limits are the
    # single-node Job's and StatefulSet's (cpu 96, memory 1100Gi), which are sized for this type.
    "p4de.24xlarge": InstancePreset(8, 4, "90", "1000Gi", "96", "1100Gi"),
    # [EKS] "Resource Sizing Guide" row p5.48xlarge (8 / 32 / 180 / 1800Gi); the text gives no limits.
    "p5.48xlarge": InstancePreset(8, 32, "180", "1800Gi", None, None),
    # [NCCL] lists p5en.48xlarge with 8 GPUs and 16 EFA devices; CPU/memory requests follow the p5
    # row (same 192 vCPU / 2 TiB host shape).
    "p5en.48xlarge": InstancePreset(8, 16, "180", "1800Gi", None, None),
}

# Labels GPU nodes carry whatever the cloud (infra.cpuScheduling.gpuNodeLabels; "*": any value): the
# NVIDIA GPU operator's feature discovery sets nvidia.com/gpu.present=true (NVIDIA/k8s-device-plugin,
# gpu-feature-discovery), GKE's GPU node pools cloud.google.com/gke-accelerator=<gpu>; the eks profile
# adds its own.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_NODE_LABELS = {GPU_PRESENT_LABEL: "true", "cloud.google.com/gke-accelerator": "*"}
# The label GPU node groups are given for the cluster autoscaler on AWS (its GPULabel, cloudprovider/aws).
EKS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
KNOWN_GPU_NODE_LABELS = {**GPU_NODE_LABELS, EKS_ACCELERATOR_LABEL: "*"}  # what lint recognises anywhere

EFA_RESOURCE = "vpc.amazonaws.com/efa"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# [EKS] the layer-2 network node label the StatefulSet spreads over.
EKS_TOPOLOGY_KEY = "topology.k8s.aws/network-node-layer-2"

# [EKS] env of the single-node Job and the StatefulSet, minus the experiment-specific ones
# (MLFLOW_TRACKING_URI, NUM_GPUS, NUM_NODES, CONFIG_NAME, VENV_NAME, MODEL_PATH, EXPERIMENT_NAME).
EKS_GPU_ENV: dict[str, str] = {
    "NVIDIA_DRIVER_CAPABILITIES": "all",
    "NCCL_DEBUG": "WARN",
    "FI_PROVIDER": "efa",  # [EKS] libfabric over EFA
    "FI_EFA_USE_DEVICE_RDMA": "1",  # [EKS] GPUDirect RDMA (p4d/p5 families)
    "FI_EFA_FORK_SAFE": "1",  # [EKS] fork safety for DataLoader workers
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "TOKENIZERS_PARALLELISM": "true",
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",  # [EKS] "reduces CUDA memory fragmentation"
}

# [EKS] "/dev/shm Sizing": "At least 64Gi for multi-GPU training".
EKS_MIN_SHM = "64Gi"

# [NCCL] the pinned public nccl-tests image with EFA, aws-ofi-nccl and OpenMPI.
EKS_NCCL_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"


def _eks() -> dict[str, Any]:
    fleet = {
        "env": dict(EKS_GPU_ENV),
        "shmSize": EKS_MIN_SHM,  # [EKS] memory-backed /dev/shm, >= 64Gi for multi-GPU
    }
    return {
        "infra": {
            # [EKS] "Do NOT set imagePullPolicy: Always" / "Tag images with specific versions".
            "imagePullPolicy": "IfNotPresent",
            "imagePull": {
                "requirePinned": True,
                "coldPullSeconds": 600,  # [EKS] "Add 10 minutes to activeDeadlineSeconds"
            },
            "gpuScheduling": {
                "onePodPerNode": True,  # [EKS] podAntiAffinity on kubernetes.io/hostname
                "topologySpreadConstraints": [{  # [EKS] StatefulSet topologySpreadConstraints
                    "maxSkew": 1,
                    "topologyKey": EKS_TOPOLOGY_KEY,
                    "whenUnsatisfiable": "ScheduleAnyway",
                }],
            },
            # Managed node groups and Karpenter taint no GPU node by default: CPU pods would land on them.
            # The GPU fleets' instance type is excluded whatever the labels (render/platform.py).
            "cpuScheduling": {"gpuNodeLabels": {EKS_ACCELERATOR_LABEL: "*"}},
            # [EKS] the layer-2 network node the StatefulSet prefers: with Kueue, `infra.kueue.topology.mode:
            # preferred` (or required) turns it into one placement of the whole pod set (docs/kueue.md).
            "kueue": {"topology": {"level": EKS_TOPOLOGY_KEY}},
            # [EKS] every manifest mounts the FSx claim `fsx-claim` at /fsx (shared, RWX).
            "storage": {"enabled": True, "create": False, "claimName": "fsx-claim", "mountPath": "/fsx",
                        "accessMode": "ReadWriteMany"},
        },
        "kuberay": {role: clone(fleet) for role in GPU_FLEETS},
        "ncclTest": {
            "image": EKS_NCCL_IMAGE,  # [NCCL]
            "mpirunPath": "/opt/amazon/openmpi/bin/mpirun",  # [NCCL]
            "env": {  # [NCCL] launcher env: the image's library paths
                "LD_LIBRARY_PATH": "/opt/amazon/openmpi/lib:/opt/nccl/build/lib:/opt/amazon/efa/lib:"
                                   "/opt/amazon/ofi-nccl/lib:/opt/amazon/ofi-nccl/lib64:"
                                   "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:/opt/gdrcopy/lib:"
                                   "/usr/local/cuda/extras/CUPTI/lib64:/usr/local/lib",
                "NCCL_BUFFSIZE": "8388608",  # [NCCL]
                "NCCL_P2P_NET_CHUNKSIZE": "524288",  # [NCCL]
            },
            # [NCCL] MPI over TCP only, so MPI does not compete with NCCL for the EFA devices.
            "mpirunArgs": ["--mca", "pml", "^ucx", "--mca", "btl", "tcp,self",
                           "--mca", "btl_tcp_if_exclude", "lo,docker0,veth_def_agent", "--mca", "mtl", "^ofi"],
            "extendedResources": {"hugepages-2Mi": "5120Mi"},  # [NCCL] libfabric uses huge pages
        },
    }


def _single_node(storage_class: str) -> dict[str, Any]:
    # [LOCAL] "Resource sizing (single-GPU baseline)": one A10 (24 GB) or larger, 32 GB system RAM;
    # the GPU pod gets cpu 4 / memory 16Gi request / 32Gi limit there. The control plane takes
    # ~2-3 GB, so the GPU pod here is capped at 24Gi to leave room for the head and the sandbox.
    gpu_pod = {"gpus": 1, "cpu": "4", "memory": "16Gi", "memoryLimit": "24Gi", "shmSize": "4Gi"}
    return {
        "infra": {
            # [LOCAL] "Pods that consume nvidia.com/gpu must set runtimeClassName: nvidia".
            "runtimeClassName": "nvidia",
            # [LOCAL] "llama-hf-cache — 100Gi, mounted at /root/.cache/huggingface"; local-path, "must be RWO".
            "storage": {"enabled": True, "create": True, "claimName": "dockyard-model-cache",
                        "storageClassName": storage_class, "accessMode": "ReadWriteOnce", "size": "100Gi",
                        "mountPath": "/root/.cache/huggingface"},
            "priorityClass": {"value": 1000000},  # [LOCAL] gpu-inference (value 1000000)
            # [LOCAL] one node: the GPU node is where the sandbox and the head run too.
            "cpuScheduling": {"avoidGpuNodes": False},
        },
        "kuberay": {
            "head": {"cpu": "1", "memory": "3Gi", "shmSize": "1Gi"},
            "trainer": {"replicas": 1, **gpu_pod},
            # One GPU: one GPU pod. The inference fleet is off by default (colocated recipes);
            # set kuberay.inference.replicas on a host with a second GPU.
            "inference": {"replicas": 0, **gpu_pod},
        },
        "sandbox": {
            "replicas": 1,
            "resources": {"cpu": "500m", "memory": "1Gi", "ephemeralStorage": "5Gi"},
        },
        "ncclTest": {"maxBytes": "256M"},  # two 256M buffers fit any single GPU
        "serve": {
            # [LOCAL] the vLLM pod's 100Gi HF cache on local-path (RWO: one node, which is all there is).
            "cache": {"storageClass": storage_class},
            # [LOCAL] gpu-inference (value 1000000) is created with the endpoint (the chart did it there);
            # on a laptop cluster the user is its admin.
            "priorityClass": {"create": True},
        },
    }


# platform -> profile layer (a partial infra spec)
PROFILES: dict[str, Any] = {
    "generic": {},  # no assumptions: the shipped defaults only
    "eks": _eks(),  # [EKS]
    # [LOCAL] k3s ships the `local-path` StorageClass.
    "k3s": _single_node("local-path"),
    # kind's default StorageClass is named `standard`; it is the same rancher.io/local-path provisioner.
    "kind": _single_node("standard"),
}


def preset_layer(instance_type: str, mode: Any = None) -> dict[str, Any]:
    """The GPU-fleet sizing an instance-type preset contributes (one GPU pod per node).

    ``launch.mode: job`` is one pod on one node: the node's budget goes to that pod once, on
    the trainer; the head and the inference fleet share the pod and add nothing (the inference
    fleet is off, as on a one-GPU box: generation colocated with training; give each fleet its
    share of the GPUs to run both)."""
    p = EKS_PRESETS[instance_type]
    fleet: dict[str, Any] = {
        "gpus": p.gpus,
        "cpu": p.cpu,
        "memory": p.memory,
        "extendedResources": {EFA_RESOURCE: p.efa},
        "nodeSelector": {INSTANCE_TYPE_LABEL: instance_type},
    }
    if p.cpu_limit:
        fleet["cpuLimit"] = p.cpu_limit
    if p.memory_limit:
        fleet["memoryLimit"] = p.memory_limit
    kuberay: dict[str, Any] = {role: clone(fleet) for role in GPU_FLEETS}
    if mode == "job":
        share = {"cpu": "0", "memory": "0", "extendedResources": {}}
        kuberay["head"] = {**share}
        kuberay["inference"] = {**clone(share), "replicas": 0, "nodeSelector": dict(fleet["nodeSelector"])}
    return {
        "kuberay": kuberay,
        "ncclTest": {"extendedResources": {EFA_RESOURCE: p.efa}},
    }


def profile_layer(platform: Any, instance_type: Any, mode: Any = None) -> dict[str, Any]:
    """The profile layer for the merged ``infra.platform`` / ``infra.instanceType`` (and
    ``launch.mode``: the job shape sizes one pod from one node, see :func:`preset_layer`).

    Unknown values give an empty layer: the schema check reports them.
    """
    layer = clone(PROFILES.get(platform, {})) if isinstance(platform, str) else {}
    if platform == "eks" and isinstance(instance_type, str) and instance_type in EKS_PRESETS:
        layer = merge(layer, preset_layer(instance_type, mode))
    return layer


# --- images --------------------------------------------------------------------------------


def image_pin_problem(image: str) -> str:
    """"" when ``image`` is pinned (a digest, or a tag other than ``latest``); else why not."""
    _, tag, digest = split_image(image)
    if digest or tag not in (None, "latest"):
        return ""
    if tag is None:
        return f"got {image!r} (no tag: Kubernetes pulls :latest), expected a pinned tag or @sha256: digest"
    return f"got {image!r}, expected a pinned tag or @sha256: digest (:latest changes under a running job)"


# --- cross-field rules (called by the loader once the layers are merged) --------------------

# A StatefulSet's pods carry controller-revision-hash=<name>-<10-char hash>, a label value
# (<= 63 characters), so the StatefulSet name must stay within 52.
MAX_STATEFULSET_NAME = 52
MAX_JOB_NAME = 63  # the Job's pods carry job-name=<name>, a label value


def unpinned_images(infra: InfraSpec) -> list[tuple[tuple[str, ...], str]]:
    """(key, why) of each image without a pinned tag or digest: each once, at the key the user wrote it.
    A problem with infra.imagePull.requirePinned (:func:`platform_problems`), else a note (config/rules.py)."""
    main = infra["infra"]["image"]
    out: list[tuple[tuple[str, ...], Any]] = [(("infra", "image"), main)]
    if infra["sandbox"]["enabled"] and infra["sandbox"]["image"] != main:
        out.append((("sandbox", "image"), infra["sandbox"]["image"]))
    launch = infra["launch"]
    if launch["mode"] == "rayjob" and launch["submitter"]["image"] != main:
        out.append((("launch", "submitter", "image"), launch["submitter"]["image"]))
    if infra["ncclTest"]["image"]:
        out.append((("ncclTest", "image"), infra["ncclTest"]["image"]))
    return [(path, why) for path, image in out if image and (why := image_pin_problem(str(image)))]


def platform_problems(infra: InfraSpec) -> list[tuple[tuple[str, ...], str]]:
    """Rules of the platform profiles and of the operator-free shapes, as (key path, message)."""
    section, launch, kr = infra["infra"], infra["launch"], infra["kuberay"]
    platform, mode, name = section["platform"], launch["mode"], str(launch["name"])
    out: list[tuple[tuple[str, ...], str]] = []
    if section["instanceType"] and platform != "eks":
        out.append((("infra", "instanceType"), f"sizing presets are EKS instance types (got platform "
                                               f"{platform!r}); set infra.platform: eks or remove instanceType"))
    gpu_fleets = [r for r in GPU_FLEETS if kr[r]["replicas"] > 0 and kr[r]["gpus"] > 0]
    if platform == "eks":
        floor = parse_quantity(EKS_MIN_SHM) or 0
        for role in gpu_fleets:
            shm = kr[role]["shmSize"]
            size = parse_quantity(shm) if shm is not None else 0
            if kr[role]["gpus"] > 1 and (size is None or size < floor):
                out.append((("kuberay", role, "shmSize"),
                            f"got {shm!r}, expected at least {EKS_MIN_SHM}: multi-GPU pods on eks need a large "
                            "memory-backed /dev/shm (NCCL and DataLoader workers fail with 'Bus error')"))
    if section["imagePull"]["requirePinned"]:
        out += [(path, why + " (infra.imagePull.requirePinned)") for path, why in unpinned_images(infra)]
    storage = section["storage"]
    if storage["enabled"] and not storage["create"] and not storage["claimName"]:
        out.append((("infra", "storage", "claimName"), "is required when storage.create is false (got nothing, "
                                                       "expected the name of an existing PersistentVolumeClaim)"))
    gpu_pods = sum(kr[r]["replicas"] for r in gpu_fleets)
    pods = {"attach": 0, "job": min(gpu_pods, 1)}.get(mode, gpu_pods)  # in the launch shape: job's is one pod
    if storage["enabled"] and storage["create"] and pods > 1:
        if storage["accessMode"] == "ReadWriteOncePod":
            out.append((("infra", "storage", "accessMode"), f"ReadWriteOncePod allows one pod, but {pods} GPU pods "
                                                            "mount the claim"))
        elif storage["accessMode"] == "ReadWriteOnce" and section["gpuScheduling"]["onePodPerNode"]:
            out.append((("infra", "storage", "accessMode"),
                        f"ReadWriteOnce attaches to one node, but onePodPerNode spreads {pods} GPU pods over "
                        f"{pods} nodes; use ReadWriteMany storage (EFS, FSx, NFS) for a multi-node run"))
    if section["networkPolicy"]["defaultDeny"] and infra["sandbox"]["enabled"] \
            and not infra["sandbox"]["networkPolicy"]["enabled"]:
        out.append((("infra", "networkPolicy", "defaultDeny"), "default-deny would cut the sandbox pool off: it "
                                                               "needs sandbox.networkPolicy.enabled: true"))
    if mode == "job" and len(name) > MAX_JOB_NAME:  # the one-node rules are in config/rules.py
        out.append((("launch", "name"), f"{name!r} has {len(name)} characters; a Job name is at most "
                                        f"{MAX_JOB_NAME} (its pods carry it as a label)"))
    if mode == "statefulset":
        if kr["trainer"]["replicas"] < 1:
            out.append((("kuberay", "trainer", "replicas"), "got 0: statefulset mode runs the Ray head on trainer "
                                                            "pod 0, expected at least 1"))
        longest = f"{name}-inference" if kr["inference"]["replicas"] > 0 else f"{name}-trainer"
        if len(longest) > MAX_STATEFULSET_NAME:
            fits = MAX_STATEFULSET_NAME - len(longest) + len(name)
            out.append((("launch", "name"), f"StatefulSet name {longest!r} has {len(longest)} characters, at most "
                                            f"{MAX_STATEFULSET_NAME} fit (controller-revision-hash label); "
                                            f"shorten launch.name to {fits}"))
    return out
