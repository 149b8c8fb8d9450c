"""GPU training pitfalls from the source texts: /dev/shm, RuntimeClass, EFA/NCCL settings,
inline shell scripts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from dockyard_k8s.kube import parse_quantity
from dockyard_k8s.lint.model import EFA_RESOURCE, ERROR, INFO, WARNING, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname, volumes


def _gib(q: Fraction) -> str:
    value = q / 2**30
    return f"{value}Gi" if value.denominator == 1 else f"{float(value):.2f}Gi"


def shm(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if not pod.gpus:
            continue
        memory_volumes = {str(v.get("name")): (i, v) for i, v in volumes(pod)
                          if isinstance(v.get("emptyDir"), dict) and v["emptyDir"].get("medium") == "Memory"}
        wanted = pod.gpus * c.config.shm_per_gpu
        mounted = False
        for path, k in pod.containers():
            if path[-2] != "containers":
                continue
            for m in k.get("volumeMounts") or []:
                if isinstance(m, dict) and m.get("mountPath") == "/dev/shm" and str(m.get("name")) in memory_volumes:
                    mounted = True
        if not mounted:
            yield Hit(pod.at("volumes"), f"pod uses {pod.gpus} GPU(s) without a memory-backed /dev/shm (the "
                                         "container default is 64Mi: NCCL and DataLoader workers fail with 'Bus "
                                         "error')", WARNING)
            continue
        for i, v in memory_volumes.values():
            size = parse_quantity(v["emptyDir"].get("sizeLimit"))
            if size is not None and size < wanted:
                yield Hit(pod.at("volumes", i, "emptyDir", "sizeLimit"),
                          f"/dev/shm sizeLimit {v['emptyDir'].get('sizeLimit')} is below {_gib(wanted)} "
                          f"({pod.gpus} GPU(s) x lint.shmPerGpu {_gib(c.config.shm_per_gpu)})", WARNING)


def runtime_class(o: Obj, c: Context) -> Iterator[Hit]:
    wanted = c.config.gpu_runtime_class
    if not wanted:
        return
    for pod in o.pods:
        if pod.gpus and pod.spec.get("runtimeClassName") != wanted:
            have = pod.spec.get("runtimeClassName")
            state = f"sets runtimeClassName {have!r}" if have else "has no runtimeClassName"
            yield Hit(pod.at("runtimeClassName"), f"GPU pod {state}; this cluster needs {wanted!r} "
                                                  "(lint.gpuRuntimeClass) or the container sees no GPU")


_EFA_ENV = ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "FI_EFA_ENABLE_SHM_TRANSFER")


def _env(k: dict[str, Any]) -> dict[str, tuple[int, str]]:
    out = {}
    for i, e in enumerate(k.get("env") or []):
        if isinstance(e, dict) and "value" in e:
            out[str(e.get("name"))] = (i, str(e.get("value")))
    return out


def nccl_efa(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        efa = pod.requests.get(EFA_RESOURCE, Fraction(0))
        for path, k in pod.containers():
            if path[-2] != "containers":
                continue
            env = _env(k)
            provider = env.get("FI_PROVIDER")
            efa_vars = [n for n in _EFA_ENV if n in env and (n != "FI_PROVIDER" or env[n][1] == "efa")]
            if efa_vars and not efa:
                i = env[efa_vars[0]][0]
                yield Hit((*path, "env", i), f"container {cname(k)!r} configures libfabric for EFA "
                                             f"({', '.join(efa_vars)}) but the pod requests no {EFA_RESOURCE}: there "
                                             "is no EFA device, so NCCL fails or falls back to TCP sockets", ERROR)
            if efa and provider and provider[1] != "efa":
                yield Hit((*path, "env", provider[0]), f"container {cname(k)!r} requests {efa} EFA device(s) but "
                                                       f"sets FI_PROVIDER={provider[1]}: NCCL will not use them",
                          ERROR)
            if efa and env.get("NCCL_NET") and env["NCCL_NET"][1].lower() == "socket":
                yield Hit((*path, "env", env["NCCL_NET"][0]), f"container {cname(k)!r} requests EFA but forces "
                                                              "NCCL_NET=Socket", ERROR)
        if efa and not pod.gpus:
            yield Hit(pod.spec_path, f"pod requests {efa} EFA device(s) but no GPU: EFA is only useful to NCCL "
                                     "traffic between GPUs", WARNING)


# Constructs the EKS text warns about when shell is written inline in YAML.
_CONSTRUCTS = (
    (re.compile(r";\s*(then|do)\b"), "'; then' / '; do'"),
    (re.compile(r"\$\{"), "${...}"),
    (re.compile(r"(^|\s)\{\s"), "{ ...; } groups"),
    (re.compile(r"&&|\|\|"), "&& / || chains"),
    (re.compile(r"\bfor\s+\w+\s+in\b"), "for loops"),
)
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env")


def inline_script(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            argv = [*(k.get("command") or []), *(k.get("args") or [])]
            if not argv or not all(isinstance(a, str) for a in argv):
                continue
            if argv[0] not in _SHELLS or "-c" not in argv[1:]:
                continue
            at = argv.index("-c")
            if at + 1 >= len(argv):
                continue
            script = argv[at + 1]
            lines = [line for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]
            found = [label for pattern, label in _CONSTRUCTS if pattern.search(script)]
            if len(lines) >= 5 or len(found) >= 2:
                field = "command" if at + 1 < len(k.get("command") or []) else "args"
                index = at + 1 if field == "command" else at + 1 - len(k.get("command") or [])
                yield Hit((*path, field, index),
                          f"container {cname(k)!r} runs a {len(lines)}-line inline shell script"
                          + (f" using {', '.join(found)}" if found else "")
                          + ": move it to a ConfigMap-mounted script")


RULES = (
    Rule("gpu-shm", WARNING, "GPU pods need a memory-backed /dev/shm of a useful size",
         "Containers get a 64Mi /dev/shm by default; PyTorch DataLoader workers and NCCL's shared-memory transport "
         "need gigabytes and fail with 'Bus error' or 'Insufficient shared memory'. Fix: an emptyDir with medium: "
         "Memory mounted at /dev/shm, sizeLimit at least GPUs x lint.shmPerGpu (8Gi per GPU, 64Gi for 8 GPUs, by "
         "default); the fleets' shmSize does this.", ("EKS RL manifests: /dev/shm Sizing",), shm),
    Rule("gpu-runtime-class", ERROR, "GPU pods must set the RuntimeClass the cluster needs",
         "On clusters whose default container runtime is plain runc (kind, k3s without the NVIDIA runtime as "
         "default), a GPU pod without runtimeClassName: nvidia starts but sees no GPU ('no CUDA-capable device "
         "is detected'). Only checked when lint.gpuRuntimeClass names the class. Fix: set runtimeClassName "
         "(kuberay.spec, or a mutating policy as in the single-node profile).",
         ("single-node GPU profile: RuntimeClass",), runtime_class),
    Rule("nccl-efa", ERROR, "NCCL/EFA settings must match the resources requested",
         "libfabric settings for EFA (FI_PROVIDER=efa, FI_EFA_*) do nothing without vpc.amazonaws.com/efa devices "
         "in the pod, and a pod that requests EFA but points libfabric or NCCL elsewhere leaves them idle: either "
         "way NCCL runs over TCP at a fraction of the bandwidth, or fails. Fix: request vpc.amazonaws.com/efa "
         "(p4d/p4de: 4, p5/p5e: 32) in kuberay.<fleet>.extendedResources together with the EFA environment.",
         ("EKS RL manifests: EFA/NCCL env vars",), nccl_efa),
    Rule("inline-shell-script", INFO, "Long or complex shell scripts belong in a ConfigMap, not inline",
         "Shell inlined in a YAML command is hard to read, test and diff, and in plain or flow scalars YAML itself "
         "interprets ':', '{' and '#'. Scripts of five lines or more, or using two of '; then/do', ${...}, "
         "{ ...; } groups, &&/|| chains and for loops, are flagged. Fix: put the script in a ConfigMap mounted "
         "with defaultMode 0755 and run it by path.", ("EKS RL manifests: YAML/Bash Interaction Pitfalls",),
         inline_script),
)

