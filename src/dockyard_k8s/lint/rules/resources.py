"""Requests, limits, extended resources (GPUs, EFA) and namespace governance."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.kube import GPU_RESOURCES, as_mapping, is_extended_resource, parse_quantity
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname

GPU_TAINT_KEY = "nvidia.com/gpu"


def _resources(k: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = as_mapping(k.get("resources"))
    return as_mapping(res.get("requests")), as_mapping(res.get("limits"))


def container_resources(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers("initContainers", "containers"):  # ephemeral containers have no resources
            req, lim = _resources(k)
            missing = [f"{r} request" for r in ("cpu", "memory") if r not in req and r not in lim]
            if "memory" not in lim:
                missing.append("memory limit")
            if missing:
                yield Hit((*path, "resources"), f"container {cname(k)!r} has no {', '.join(missing)}")


def ephemeral_storage(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if not pod.untrusted:
            continue
        for path, k in pod.containers("containers"):
            req, lim = _resources(k)
            missing = [w for w, d in (("request", req), ("limit", lim)) if "ephemeral-storage" not in d]
            if missing:
                yield Hit((*path, "resources"), f"container {cname(k)!r} writes untrusted checkouts to disk without "
                                                f"an ephemeral-storage {' or '.join(missing)}")


def extended_resources(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            req, lim = _resources(k)
            for name in sorted(set(req) | set(lim)):
                if not is_extended_resource(str(name)):
                    continue
                at = (*path, "resources")
                for where, values in (("requests", req), ("limits", lim)):
                    if name in values:
                        q = parse_quantity(values[name])
                        if q is not None and q.denominator != 1:
                            yield Hit((*at, where, name), f"container {cname(k)!r}: {name} {values[name]} is not a "
                                                          "whole number (extended resources cannot be split)")
                if name in req and name not in lim:
                    yield Hit((*at, "limits"), f"container {cname(k)!r}: {name} is requested without a limit "
                                               "(the API server rejects it; set limits only, or both equal)")
                elif name in req and parse_quantity(req[name]) != parse_quantity(lim[name]):
                    yield Hit((*at, "requests", name), f"container {cname(k)!r}: {name} request {req[name]} differs "
                                                       f"from its limit {lim[name]} (they must be equal)")


def _tolerates_gpu_taint(tolerations: Any) -> bool:
    for t in tolerations if isinstance(tolerations, list) else []:
        if not isinstance(t, dict):
            continue
        if t.get("operator") == "Exists" and not t.get("key"):
            return True
        if t.get("key") == GPU_TAINT_KEY and t.get("effect") in (None, "", "NoSchedule"):
            return True
    return False


def gpu_toleration(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.gpus and not _tolerates_gpu_taint(pod.spec.get("tolerations")):
            yield Hit(pod.at("tolerations"), f"pod requests {pod.gpus} GPU(s) but does not tolerate the "
                                             f"{GPU_TAINT_KEY}:NoSchedule taint GPU node pools usually carry")


def namespace_quota(o: Obj, c: Context) -> Iterator[Hit]:
    gpu_pods = [p for p in o.pods if p.gpus]
    if not gpu_pods:
        return
    first = next((w for w, p in c.pods() if p.gpus and w.namespace == o.namespace), o)
    if first is not o:
        return  # reported once per namespace, on its first GPU workload
    quotas = [q for q in c.of_kind("ResourceQuota") if q.namespace == o.namespace]
    gpu_keys = {f"requests.{r}" for r in GPU_RESOURCES}
    if not any(gpu_keys & set((q.get("spec", "hard") or {}).keys()) for q in quotas):
        ns = o.namespace or "the current namespace"
        yield Hit(gpu_pods[0].spec_path, f"no ResourceQuota limits requests.nvidia.com/gpu in {ns} "
                                         "(set infra.resourceQuota)")
    if not any(lr.namespace == o.namespace for lr in c.of_kind("LimitRange")):
        yield Hit(gpu_pods[0].spec_path, f"no LimitRange gives default requests and limits in "
                                         f"{o.namespace or 'the current namespace'} (set infra.limitRange)")


RULES = (
    Rule("container-resources", WARNING, "Containers should request cpu and memory and limit memory",
         "The scheduler places pods by their requests: a container without them is packed onto nodes that cannot "
         "run it and is the first evicted under pressure; without a memory limit one leaking process can take the "
         "node's memory from the GPU pods. A cpu limit is not required (it throttles). Fix: resources.requests "
         "cpu and memory, resources.limits memory.",
         ("kube-linter unset-cpu-requirements/unset-memory-requirements",
          "Polaris cpuRequestsMissing/memoryLimitsMissing", "kube-score container-resources", "Checkov"),
         container_resources),
    Rule("ephemeral-storage", WARNING, "Pools that write to disk should request and limit ephemeral-storage",
         "Repository checkouts and test artefacts fill the node's disk; without an ephemeral-storage request the "
         "scheduler does not account for them and the kubelet evicts pods under disk pressure, and without a limit "
         "one task can fill the node. Fix: sandbox.resources.ephemeralStorage (and ephemeralStorageLimit).",
         ("kube-score container-ephemeral-storage-request-and-limit", "Polaris"), ephemeral_storage),
    Rule("extended-resources", ERROR, "GPU and other extended resources must be whole and requests == limits",
         "Extended resources (nvidia.com/gpu, vpc.amazonaws.com/efa...) cannot be overcommitted or split: a request "
         "needs an equal limit and a whole number, or the API server rejects the pod (KubeRay then retries "
         "forever). Fix: set limits (requests default to them) to a whole number.",
         ("Kubernetes docs: Schedule GPUs", "dockyard-k8s"), extended_resources),
    Rule("gpu-toleration", INFO, "GPU pods should tolerate the GPU node taint",
         "GPU node pools are commonly tainted nvidia.com/gpu:NoSchedule so that CPU pods stay off them; a GPU pod "
         "without the toleration then stays Pending ('untolerated taint'). Fix: tolerate nvidia.com/gpu "
         "(the fleets' default tolerations do); ignore this rule if your GPU nodes are not tainted.",
         ("dockyard-k8s",), gpu_toleration),
    Rule("namespace-quota", INFO, "Namespaces running GPU pods should carry a GPU ResourceQuota and a LimitRange",
         "A ResourceQuota on requests.nvidia.com/gpu caps what one team or run can take from a shared cluster; a "
         "LimitRange gives containers without requests sane defaults. Fix: infra.resourceQuota.hard "
         "(e.g. requests.nvidia.com/gpu: 16) and infra.limitRange, applied by a cluster admin.",
         ("dockyard-k8s", "Kubernetes docs: Resource Quotas"), namespace_quota),
)
