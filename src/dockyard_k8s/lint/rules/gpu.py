"""GPU training pitfalls from the source texts: /dev/shm, RuntimeClass, EFA/NCCL settings,
CPU pods on GPU nodes, inline shell scripts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from dockyard_k8s.config.platforms import INSTANCE_TYPE_LABEL as INSTANCE_TYPE
from dockyard_k8s.kube import format_quantity, parse_quantity
from dockyard_k8s.lint.model import EFA_RESOURCE, ERROR, INFO, WARNING, Context, Hit, Obj, Pod, Rule
from dockyard_k8s.lint.rules._util import cname, volumes
from dockyard_k8s.plain import dig
from dockyard_k8s.plan import catalog


def shm(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if not pod.gpus:
            continue
        memory_volumes = {str(v.get("name")): (i, v) for i, v in volumes(pod)
                          if isinstance(v.get("emptyDir"), dict) and v["emptyDir"].get("medium") == "Memory"}
        wanted = pod.gpus * c.config.shm_per_gpu
        if not any(isinstance(m, dict) and m.get("mountPath") == "/dev/shm" and str(m.get("name")) in memory_volumes
                   for _, k in pod.containers("containers") for m in k.get("volumeMounts") or []):
            yield Hit(pod.at("volumes"), f"pod uses {pod.gpus} GPU(s) without a memory-backed /dev/shm (the "
                                         "container default is 64Mi: NCCL and DataLoader workers fail with 'Bus "
                                         "error')", WARNING)
            continue
        for i, v in memory_volumes.values():
            size = parse_quantity(v["emptyDir"].get("sizeLimit"))
            if size is not None and size < wanted:
                per_gpu = format_quantity(c.config.shm_per_gpu, binary=True)
                yield Hit(pod.at("volumes", i, "emptyDir", "sizeLimit"),
                          f"/dev/shm sizeLimit {v['emptyDir'].get('sizeLimit')} is below "
                          f"{format_quantity(wanted, binary=True)} ({pod.gpus} GPU(s) x lint.shmPerGpu {per_gpu})",
                          WARNING)


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
    """name -> (index, value) of the literal env values (the last of a name wins, as in the container)."""
    return {str(e.get("name")): (i, str(e.get("value"))) for i, e in enumerate(k.get("env") or [])
            if isinstance(e, dict) and "value" in e}


def nccl_efa(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        efa = pod.requests.get(EFA_RESOURCE, Fraction(0))
        for path, k in pod.containers("containers"):
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


# --- CPU pods on GPU nodes -----------------------------------------------------------------------

Requirement = tuple[str, str, frozenset[str]]  # (label key, operator, values) of a node selector term


def _node_terms(spec: dict[str, Any]) -> list[list[Requirement]]:
    """The pod's required node placement as terms (ORed) of requirements (ANDed), its
    nodeSelector in every term; [[...]] when it has no node affinity."""
    selector = [(str(k), "In", frozenset({str(v)})) for k, v in (spec.get("nodeSelector") or {}).items()]
    terms = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return [selector]
    return [selector + [(str(e.get("key")), str(e.get("operator")), frozenset(str(v) for v in e.get("values") or ()))
                        for e in (t.get("matchExpressions") or []) if isinstance(e, dict)]
            for t in terms if isinstance(t, dict)]


def _selected(pods: list[Pod], key: str) -> set[str] | None:
    """The values of ``key`` every one of ``pods`` requires (nodeSelector or In), or None when
    one of them does not select it."""
    values: set[str] = set()
    for pod in pods:
        chosen = [vals for term in _node_terms(pod.spec) for k, op, vals in term if k == key and op == "In"]
        if not chosen:
            return None
        values.update(*chosen)
    return values


def _excludes_gpu_nodes(term: list[Requirement], gpu_pods: list[Pod], labels: dict[str, str]) -> bool:
    """Whether one term of a pod's placement rules GPU nodes out: a GPU label excluded, the GPU
    pods' instance types excluded, or a label the GPU pods select required with other values (a
    CPU instance type of the catalogue counts as such a choice)."""
    for key, op, values in term:
        if key in labels:
            gpu = labels[key]
            if op == "DoesNotExist" or (gpu != "*" and ((op == "NotIn" and gpu in values) or
                                                       (op == "In" and gpu not in values))):
                return True
        theirs = _selected(gpu_pods, key)
        if op == "NotIn" and theirs and theirs <= values:
            return True
        if op == "In" and theirs and not theirs & values:
            return True
        if op == "In" and theirs is None and key == INSTANCE_TYPE and all(
                v in catalog.AWS and not catalog.AWS[v].gpus for v in values):
            return True
    return False


def cpu_pod_on_gpu_nodes(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind == "DaemonSet":  # one pod on every node by design (agents, the pre-pull)
        return
    gpu_pods = [p for _, p in c.pods() if p.gpus]
    if not gpu_pods:
        return
    labels = dict(c.config.gpu_node_labels)
    # Not the GPU pods' tolerations: most tolerate nvidia.com/gpu whether the nodes are tainted or not.
    for pod in o.pods:
        if pod.gpus:
            continue
        if all(_excludes_gpu_nodes(term, gpu_pods, labels) for term in _node_terms(pod.spec)):
            continue
        types = sorted(_selected(gpu_pods, INSTANCE_TYPE) or ())
        marks = ", ".join(f"{k}={v}" if v != "*" else k for k, v in labels.items())
        yield Hit(pod.at("affinity"),
                  f"pod requests no GPU, and nothing keeps it off the GPU nodes ({marks}"
                  + (f", instance type {', '.join(types)}" if types else "")
                  + "): the scheduler may place it on one while CPU nodes are free, taking CPU and memory the "
                    "GPU pods need")


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
    Rule("cpu-pod-on-gpu-nodes", WARNING, "Pods that request no GPU should be kept off GPU nodes",
         "Managed node groups and Karpenter leave GPU nodes untainted, so the scheduler spreads CPU pods (a "
         "sandbox pool, the Ray head, a submitter) over them as over any node: they take CPU and memory a GPU pod "
         "needs, and a GPU pod sized for a whole node then stays Pending while CPU nodes sit idle. Checked when the "
         "input has GPU pods: a pod that requests none should, in every term of its required placement, exclude "
         "GPU nodes (a taint on the GPU nodes would keep it off too, but taints are not in the manifests, and GPU "
         "pods tolerate nvidia.com/gpu whether their nodes are tainted or not). Fix: a required node affinity "
         "nvidia.com/gpu.present NotIn [\"true\"] (the NVIDIA GPU operator's label), DoesNotExist on "
         "cloud.google.com/gke-accelerator or k8s.amazonaws.com/accelerator, node.kubernetes.io/instance-type "
         "NotIn the GPU types, or a nodeSelector for the CPU nodes; dockyard-k8s renders it on every CPU pod of a "
         "run (infra.cpuScheduling). DaemonSets are not checked.",
         ("NVIDIA GPU feature discovery: nvidia.com/gpu.present", "Kubernetes node affinity"), cpu_pod_on_gpu_nodes),
    Rule("inline-shell-script", INFO, "Long or complex shell scripts belong in a ConfigMap, not inline",
         "Shell inlined in a YAML command is hard to read, test and diff, and in plain or flow scalars YAML itself "
         "interprets ':', '{' and '#'. Scripts of five lines or more, or using two of '; then/do', ${...}, "
         "{ ...; } groups, &&/|| chains and for loops, are flagged. Fix: put the script in a ConfigMap mounted "
         "with defaultMode 0755 and run it by path.", ("EKS RL manifests: YAML/Bash Interaction Pitfalls",),
         inline_script),
)

