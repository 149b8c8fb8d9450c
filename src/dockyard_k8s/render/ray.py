"""The GPU side: one RayCluster spec (head + ``trainer`` + ``inference`` worker groups),
wrapped in a RayJob (``launch.mode: rayjob``) or rendered bare (``bringup``).

Built in three steps, in this order:
1. a base spec from the structured sizing (``kuberay.head/trainer/inference``);
2. ``kuberay.spec`` deep-merged on top (see ``merge.py``), so anything KubeRay supports
   can be expressed;
3. runtime invariants forced onto every GPU pod, so no fragment can remove them: the
   image and pull secrets, ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``, ``DOCKYARD_SANDBOX_URLS``,
   each worker group's ``DOCKYARD_FLEET_ROLE`` and ``dockyard_fleet_<role>`` Ray
   resource, the run labels that ``status``/``logs``/``down`` select on, and Ray token
   authentication (``rayauth.py``) on every Ray container.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.kube import GPU
from dockyard_k8s.plain import clone
from dockyard_k8s.render import provenance, rayauth
from dockyard_k8s.render.merge import deep_merge
from dockyard_k8s.render.meta import (
    FLEET_LABEL,
    env_list,
    fleets_selector,
    labels,
    metadata,
    name_of,
    param_text,
    pdb,
    placement,
    pod_common,
    pod_labels,
    pull_secrets,
    quantity,
)
from dockyard_k8s.render.rayauth import force_auth_env
from dockyard_k8s.render.recipe import RECIPE_DIR, RECIPE_PATH
from dockyard_k8s.render.sandbox import container_security, sandbox_env
from dockyard_k8s.yamlfile import dump as dump_yaml

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec
    from dockyard_k8s.config.model import PodSizing

# KubeRay's conventional port names for the head container.
HEAD_PORTS = [
    {"containerPort": 6379, "name": "gcs-server", "protocol": "TCP"},
    {"containerPort": 8265, "name": "dashboard", "protocol": "TCP"},
    {"containerPort": 10001, "name": "client", "protocol": "TCP"},
]
# The name KubeRay gives the submitter container of a RayJob (K8sJobMode).
SUBMITTER_CONTAINER = "ray-job-submitter"


def fleet_resource(role: str) -> str:
    """The Ray custom resource a fleet's workers advertise: ``dockyard_fleet_<role>``."""
    return f"dockyard_fleet_{role}"


def _resources(sizing: PodSizing) -> dict[str, Any]:
    extended = {**({GPU: sizing["gpus"]} if sizing["gpus"] else {}), **sizing["extendedResources"]}
    requests = {"cpu": sizing["cpu"], "memory": sizing["memory"], **extended}
    limits = {"cpu": sizing["cpuLimit"] or sizing["cpu"], "memory": sizing["memoryLimit"] or sizing["memory"],
              **extended}  # extended resources cannot overcommit: requests == limits
    out = {"requests": {k: quantity(v) for k, v in requests.items()},
           "limits": {k: quantity(v) for k, v in limits.items()}}
    trace = provenance.active()
    at = trace.origin(sizing) if trace else None
    if at is not None:  # which sizing key each amount comes from
        amounts = {GPU: (*at, "gpus"), **{k: (*at, "extendedResources", k) for k in sizing["extendedResources"]}}
        provenance.note_fields(out["requests"], {"cpu": (*at, "cpu"), "memory": (*at, "memory"), **amounts})
        provenance.note_fields(out["limits"], {"cpu": (*at, "cpuLimit" if sizing["cpuLimit"] else "cpu"),
                                               "memory": (*at, "memoryLimit" if sizing["memoryLimit"] else "memory"),
                                               **amounts})
    return out


def _ray_params(params: Mapping[str, Any]) -> dict[str, str]:
    """rayStartParams values are strings for KubeRay."""
    return {k: param_text(v) for k, v in params.items()}


def gpu_container(infra: InfraSpec, sizing: PodSizing, name: str, *,
                  env_first: Sequence[dict[str, Any]] = (), mounts: Sequence[dict[str, Any]] = (),
                  volumes: Sequence[dict[str, Any]] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Ray container of a GPU pod and the pod's volumes: image, env, resources, the recipe
    mount, a memory-backed /dev/shm and the opt-in securityContext. Shared by the KubeRay
    groups and the operator-free shapes; ``env_first``/``mounts``/``volumes`` add their own."""
    container: dict[str, Any] = {
        "name": name,
        "image": infra["infra"]["image"],
        "imagePullPolicy": infra["infra"]["imagePullPolicy"],
    }
    container["env"] = [*env_first, *env_list({"DOCKYARD_RECIPE": RECIPE_PATH, **sizing["env"]})]
    container["resources"] = _resources(sizing)
    all_mounts = [{"name": "recipe", "mountPath": RECIPE_DIR, "readOnly": True}, *mounts]
    all_volumes = [{"name": "recipe", "configMap": {"name": name_of(infra, "recipe")}}, *volumes]
    if sizing["shmSize"] is not None:
        all_mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        all_volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": quantity(sizing["shmSize"])}})
    container["volumeMounts"] = all_mounts
    if infra["infra"]["security"]["enabled"]:
        container["securityContext"] = container_security(infra["infra"]["security"])
    return container, all_volumes


def _group_template(infra: InfraSpec, fleet: str, sizing: PodSizing, container_name: str) -> dict[str, Any]:
    container, volumes = gpu_container(infra, sizing, container_name)
    if fleet == "head":  # ports right after the image, where KubeRay's own examples put them
        container = {**{k: container[k] for k in ("name", "image", "imagePullPolicy")},
                     "ports": clone(HEAD_PORTS), **container}
    spec = {**pod_common(infra), **placement(sizing), "containers": [container], "volumes": volumes}
    return {"metadata": {"labels": pod_labels(infra, fleet)}, "spec": spec}


def _base_spec(infra: InfraSpec) -> dict[str, Any]:
    kr = infra["kuberay"]
    head = kr["head"]
    spec: dict[str, Any] = {
        "rayVersion": kr["rayVersion"],
        "headGroupSpec": {
            "rayStartParams": _ray_params({"dashboard-host": "0.0.0.0", **head["rayStartParams"]}),
            "template": _group_template(infra, "head", head, "ray-head"),
        },
        "workerGroupSpecs": [],
    }
    for role in GPU_FLEETS:
        sizing = kr[role]
        spec["workerGroupSpecs"].append({
            "groupName": role,
            "replicas": sizing["replicas"],
            "minReplicas": sizing["replicas"],
            "maxReplicas": sizing["replicas"],
            "rayStartParams": _ray_params(sizing["rayStartParams"]),
            "template": _group_template(infra, role, sizing, "ray-worker"),
        })
        provenance.note_fields(spec["workerGroupSpecs"][-1], {
            "replicas": ("kuberay", role, "replicas"), "minReplicas": ("kuberay", role, "replicas"),
            "maxReplicas": ("kuberay", role, "replicas"), "rayStartParams": ("kuberay", role, "rayStartParams")})
    provenance.note_fields(spec["headGroupSpec"], {"rayStartParams": ("kuberay", "head", "rayStartParams")})
    return spec


# --- invariants ------------------------------------------------------------------------


def set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Set env var ``name`` on a container, in place if present (so no fragment can change it)."""
    env = container.setdefault("env", [])
    for item in env:
        if item.get("name") == name:
            item.clear()
            item.update({"name": name, "value": value})
            return
    env.append({"name": name, "value": value})


def resources_param(existing: str | None, resource: str, amount: int) -> str:
    """The ``rayStartParams.resources`` string with ``resource`` set, keeping any others.

    KubeRay passes the value to ``ray start --resources=`` through a shell, and also parses it
    itself (``getResourcesMap`` in ray-operator/controllers/ray/common/pod.go: quotes trimmed, then
    JSON) to add GPU and accelerator parameters. Only compact JSON in single quotes, the form KubeRay
    writes back itself, works for both: the older documented ``"{\\"name\\": 1}"`` leaves escaped
    quotes its JSON parse refuses ("failed to add accelerator resources to rayStartParams").
    """
    current: Any = {}
    if existing:
        text = existing.strip().strip("'")
        if text.startswith('"') and text.endswith('"'):
            text = text[1:-1].replace('\\"', '"')
        with contextlib.suppress(ValueError):
            current = json.loads(text)
    if not isinstance(current, dict):
        current = {}
    current[resource] = amount
    return "'" + json.dumps(current, sort_keys=True, separators=(",", ":")) + "'"


def _apply_invariants(infra: InfraSpec, spec: dict[str, Any]) -> None:
    env = {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", **sandbox_env(infra)}
    groups = [("head", spec["headGroupSpec"])] + [(g.get("groupName", ""), g) for g in spec["workerGroupSpecs"]]
    for fleet, group in groups:
        template = group.setdefault("template", {})
        meta = template.setdefault("metadata", {})
        ours = pod_labels(infra, fleet) if fleet in ("head", *GPU_FLEETS) else {
            **labels(infra, "ray-worker"), FLEET_LABEL: fleet}
        meta["labels"] = dict(sorted({**meta.get("labels", {}), **ours}.items()))
        pod = template.setdefault("spec", {})
        containers = pod.setdefault("containers", [{}])
        containers[0]["image"] = infra["infra"]["image"]
        wanted = pull_secrets(infra).get("imagePullSecrets")
        if wanted:
            have = pod.get("imagePullSecrets", [])
            pod["imagePullSecrets"] = have + [s for s in wanted if s not in have]
        for container in containers:
            for k, v in env.items():
                set_env(container, k, v)
            if fleet in GPU_FLEETS:
                set_env(container, "DOCKYARD_FLEET_ROLE", fleet)
        force_auth_env(infra, containers[0])  # the Ray container (KubeRay's RayContainerIndex)
        if fleet in GPU_FLEETS:
            params = group.setdefault("rayStartParams", {})
            kuberay: Mapping[str, Any] = infra["kuberay"]
            amount = max(1, int(kuberay[fleet]["gpus"]))
            params["resources"] = resources_param(params.get("resources"), fleet_resource(fleet), amount)


def raycluster_spec(infra: InfraSpec) -> dict[str, Any]:
    """The full RayCluster spec: base sizing, then kuberay.spec merged, then invariants."""
    spec = deep_merge(_base_spec(infra), infra["kuberay"]["spec"])
    _apply_invariants(infra, spec)
    for group in spec["workerGroupSpecs"]:
        # As KubeRay writes the list back (Go's ScaleStrategy struct is never omitted): its
        # finalizer Update of a RayJob then changes nothing, and so takes no ownership of the
        # atomic list, which made every re-run a 409 (controllers/ray/rayjob_controller.go).
        group.setdefault("scaleStrategy", {})
    if rayauth.enabled(infra):  # secretName: KubeRay >= 1.6.0 (rayauth's docstring)
        spec["authOptions"] = {"mode": "token", "secretName": rayauth.secret_name(infra)}
    return spec


# --- objects -----------------------------------------------------------------------------


def entrypoint(infra: InfraSpec, job_args: list[str], *, recipe_path: str = RECIPE_PATH) -> str:
    """The job command: ``launch.entrypoint`` with {recipe} filled, then the overrides."""
    cmd = infra["launch"]["entrypoint"].replace("{recipe}", recipe_path)
    return f"{cmd} {shlex.join(job_args)}" if job_args else cmd


def _submitter_template(infra: InfraSpec) -> dict[str, Any]:
    sub = infra["launch"]["submitter"]
    # No command: KubeRay fills in `ray job submit ...` when the container has none.
    container = {
        "name": SUBMITTER_CONTAINER,
        "image": sub["image"],
        "imagePullPolicy": infra["infra"]["imagePullPolicy"],
        "resources": {"requests": {"cpu": quantity(sub["cpu"]), "memory": quantity(sub["memory"])},
                      "limits": {"cpu": quantity(sub["cpuLimit"]), "memory": quantity(sub["memoryLimit"])}},
    }
    force_auth_env(infra, container)  # `ray job submit` authenticates to the head with it
    return {
        "metadata": {"labels": pod_labels(infra, "submitter")},
        "spec": {"restartPolicy": "Never", **pod_common(infra), "containers": [container]},
    }


# RayJob spec fields copied from the launch key of the same name (for provenance).
_RAYJOB_FROM_LAUNCH = ("entrypoint", "submissionMode", "shutdownAfterJobFinishes", "ttlSecondsAfterFinished",
                       "activeDeadlineSeconds", "preRunningDeadlineSeconds", "backoffLimit", "suspend")


def rayjob(infra: InfraSpec, job_args: list[str]) -> dict[str, Any]:
    launch = infra["launch"]
    spec: dict[str, Any] = {
        "entrypoint": entrypoint(infra, job_args),
        "submissionMode": launch["submissionMode"],
        "shutdownAfterJobFinishes": launch["shutdownAfterJobFinishes"],
    }
    if launch["shutdownAfterJobFinishes"]:
        spec["ttlSecondsAfterFinished"] = launch["ttlSecondsAfterFinished"]
    for key in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        if launch[key] is not None:
            spec[key] = launch[key]
    spec["backoffLimit"] = launch["backoffLimit"]
    if launch["suspend"]:
        spec["suspend"] = True
    if launch["runtimeEnv"]:
        spec["runtimeEnvYAML"] = dump_yaml(launch["runtimeEnv"])
    if launch["deletionRules"]:
        spec["deletionStrategy"] = {"deletionRules": launch["deletionRules"]}
    if launch["submissionMode"] == "K8sJobMode":
        spec["submitterPodTemplate"] = _submitter_template(infra)
    spec["rayClusterSpec"] = raycluster_spec(infra)
    provenance.note_fields(spec, {key: ("launch", key) for key in _RAYJOB_FROM_LAUNCH})
    provenance.note_fields(spec, {"runtimeEnvYAML": ("launch", "runtimeEnv"),
                                  "deletionStrategy": ("launch", "deletionRules"),
                                  "submitterPodTemplate": ("launch", "submissionMode")})
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": metadata(infra, name_of(infra), "ray-job"), "spec": spec}


def raycluster(infra: InfraSpec) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": metadata(infra, name_of(infra), "ray-cluster"), "spec": raycluster_spec(infra)}


def gpu_pdb(infra: InfraSpec) -> dict[str, Any]:
    """PDB over the GPU gang of the run (head + workers) and nothing else: not the sandbox's
    pods (a pod covered by two PDBs cannot be evicted at all), the submitter or the pre-pull
    DaemonSet's pods."""
    return pdb(metadata(infra, name_of(infra, "gpu"), "ray-cluster"), infra["kuberay"]["pdb"]["maxUnavailable"],
               fleets_selector(infra, ["head", *GPU_FLEETS]))
