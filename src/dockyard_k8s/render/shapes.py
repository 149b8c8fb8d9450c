"""Launch shapes without the KubeRay operator: ``launch.mode: job | statefulset``.

``job``          one batch Job (completions 1, restartPolicy Never): a single node runs a
                 local Ray head, every fleet's GPUs, and the entrypoint. The pod's resources
                 are the sum of the head and of every fleet's pods, so the same run fits
                 one node the way it fit the RayCluster.
``statefulset``  multi-node Ray: a headless Service (6379, 8265, 10001), then one
                 StatefulSet per GPU fleet (``podManagementPolicy: Parallel``, one pod per
                 node on eks). ``<run>-trainer-0`` runs the head, waits for every node with a
                 timeout and runs the entrypoint; every other pod joins it.

Both start Ray through ``scripts/ray-bootstrap.sh``, mounted from a ConfigMap (no inline
bash in YAML); the head address is built from the Downward API namespace. The core's
invariants hold here too: each fleet's ``dockyard_fleet_<role>`` Ray resource and
``DOCKYARD_FLEET_ROLE``, ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``, ``DOCKYARD_SANDBOX_URLS``, the
image and pull secrets, the run and fleet labels, Ray token authentication. Pod template fragments of ``kuberay.spec``
(by ``groupName``; the head's too for ``job``) are merged into the matching pods.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.config.overrides import lookup
from dockyard_k8s.kube import GPU, add_quantities, parse_quantity
from dockyard_k8s.plain import Path, clone
from dockyard_k8s.render import provenance
from dockyard_k8s.render.merge import deep_merge
from dockyard_k8s.render.meta import (
    RUN_LABEL,
    metadata,
    name_of,
    param_text,
    placement,
    pod_common,
    pod_labels,
    selector,
)
from dockyard_k8s.render.platform import padded_deadline
from dockyard_k8s.render.ray import HEAD_PORTS, entrypoint, fleet_resource, gpu_container, set_env
from dockyard_k8s.render.rayauth import force_auth_env
from dockyard_k8s.render.sandbox import sandbox_env

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec, KuberayHead
    from dockyard_k8s.config.model import Group, PodSizing

SCRIPT_NAME = "ray-bootstrap.sh"
SCRIPT_DIR = "/opt/dockyard"
SCRIPT_PATH = f"{SCRIPT_DIR}/{SCRIPT_NAME}"
STATE_DIR = "/var/run/dockyard"
# [EKS] StatefulSet terminationGracePeriodSeconds: time for Ray and the job to stop cleanly.
TERMINATION_GRACE_SECONDS = 120
# [EKS] liveness probe timing: initialDelaySeconds 120 "gives Ray time to start", every 60 s, 5 failures.
LIVENESS = {"initialDelaySeconds": 120, "periodSeconds": 60, "timeoutSeconds": 60, "failureThreshold": 5}


def bootstrap_script() -> str:
    """The bootstrap script shipped as package data (render/scripts/ray-bootstrap.sh), read
    beside this module: importlib.resources imports tempfile, shutil... on every check of a
    job/statefulset run (their cost: bench/README.md), and the package is always installed as files."""
    with open(os.path.join(os.path.dirname(__file__), "scripts", SCRIPT_NAME), encoding="utf-8") as f:
        return f.read()


def headless_service_name(infra: InfraSpec) -> str:
    return name_of(infra, "ray")


def head_pod_name(infra: InfraSpec) -> str:
    return f"{name_of(infra, 'trainer')}-0"


# --- pods -----------------------------------------------------------------------------------


def _combined_sizing(infra: InfraSpec) -> tuple[KuberayHead, dict[str, int]]:
    """The job pod: the head plus every fleet's pods on one node; and the fleet tags it carries."""
    kr = infra["kuberay"]
    pods = [(kr["head"], 1)] + [(kr[r], kr[r]["replicas"]) for r in GPU_FLEETS if kr[r]["replicas"] > 0]
    tags = {fleet_resource(r): max(1, kr[r]["replicas"] * kr[r]["gpus"])
            for r in GPU_FLEETS if kr[r]["replicas"] > 0}

    def total(key: Literal["cpu", "memory"], limit: Literal["cpuLimit", "memoryLimit"] | None = None) -> str:
        return add_quantities([(s[limit] if limit and s[limit] else s[key]) for s, n in pods for _ in range(n)])

    extended: dict[str, Any] = {}
    for s, n in pods:
        for k, v in s["extendedResources"].items():
            extended[k] = add_quantities([extended.get(k, 0), *[v] * n])
    has_limit = any(s["cpuLimit"] for s, _ in pods), any(s["memoryLimit"] for s, _ in pods)
    shm = [s["shmSize"] for s, _ in pods if s["shmSize"] is not None]
    sizing: KuberayHead = {
        "gpus": sum(s["gpus"] * n for s, n in pods),
        "cpu": total("cpu"),
        "memory": total("memory"),
        "cpuLimit": total("cpu", "cpuLimit") if has_limit[0] else None,
        "memoryLimit": total("memory", "memoryLimit") if has_limit[1] else None,
        "extendedResources": extended,
        "shmSize": max(shm, key=lambda q: parse_quantity(q) or Fraction(0)) if shm else None,
        # one value a key: check refuses two (config/rules.py, _job_problems)
        "nodeSelector": {k: v for s, _ in pods for k, v in s["nodeSelector"].items()},
        "tolerations": [],
        "env": {k: v for s, _ in pods for k, v in s["env"].items()},
        "rayStartParams": {k: v for s, _ in pods for k, v in s["rayStartParams"].items()},
    }
    for s, _ in pods:
        sizing["tolerations"] += [t for t in s["tolerations"] if t not in sizing["tolerations"]]
    return sizing, tags


def _note_job_sizing(infra: InfraSpec, pod: dict[str, Any]) -> None:
    """Provenance of the job pod's summed resources and merged node selector: each amount is
    blamed on the group that asks the most of it, each label on the group that set it."""
    kr = infra["kuberay"]
    groups: list[Group] = ["head", *[r for r in GPU_FLEETS if kr[r]["replicas"] > 0]]
    resources = pod["containers"][0]["resources"]

    def key_of(g: Group, name: str, part: str) -> Path:
        s = kr[g]
        if name == GPU:
            return ("kuberay", g, "gpus")
        if name in ("cpu", "memory"):
            limit = s["cpuLimit"] if name == "cpu" else s["memoryLimit"]
            return ("kuberay", g, f"{name}Limit" if part == "limits" and limit else name)
        return ("kuberay", g, "extendedResources", name)

    def amount(g: Group, name: str, part: str) -> Fraction:
        found, value = lookup(kr[g], key_of(g, name, part)[2:])
        return (parse_quantity(value) or Fraction(0)) if found else Fraction(0)

    for part in ("requests", "limits"):
        for name in resources.get(part) or {}:
            top = max(groups, key=lambda g: amount(g, name, part))
            provenance.note_fields(resources[part], {name: key_of(top, name, part)})
    for key in pod.get("nodeSelector") or {}:
        owner = next((g for g in ("trainer", "inference", "head") if key in kr[g]["nodeSelector"]), None)
        if owner is not None:
            provenance.note_fields(pod["nodeSelector"], {key: ("kuberay", owner, "nodeSelector", key)})


def _fragment(infra: InfraSpec, group: str, container: str) -> dict[str, Any]:
    """The pod template fragment of ``kuberay.spec`` for a group, containers renamed to ours."""
    spec = infra["kuberay"]["spec"]
    if group == "head":
        template = (spec.get("headGroupSpec") or {}).get("template") or {}
        theirs = "ray-head"
    else:
        template = next((g.get("template") for g in spec.get("workerGroupSpecs") or []
                         if g.get("groupName") == group), None) or {}
        theirs = "ray-worker"
    template = clone(template)
    for c in (template.get("spec") or {}).get("containers") or []:
        if c.get("name") == theirs:
            c["name"] = container
    return template


def _pod_template(infra: InfraSpec, *, fleet: str, sizing: PodSizing, tags: dict[str, int],
                  bootstrap: dict[str, str], role_env: str | None, groups: list[str], job: bool) -> dict[str, Any]:
    container_name = "ray-head" if job else "ray-worker"
    downward = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    base, volumes = gpu_container(
        infra, sizing, container_name, env_first=downward,
        mounts=[{"name": "bootstrap", "mountPath": SCRIPT_DIR, "readOnly": True},
                {"name": "dockyard-state", "mountPath": STATE_DIR}],
        volumes=[{"name": "bootstrap", "configMap": {"name": name_of(infra, "bootstrap"), "defaultMode": 0o755}},
                 {"name": "dockyard-state", "emptyDir": {}}])
    # Same key order as before the builder was shared, so rendered files stay byte-identical.
    container: dict[str, Any] = {k: base[k] for k in ("name", "image", "imagePullPolicy")}
    container.update({"command": ["/bin/bash", SCRIPT_PATH], "ports": clone(HEAD_PORTS), "env": base["env"],
                      "resources": base["resources"],
                      "livenessProbe": {"exec": {"command": ["/bin/bash", SCRIPT_PATH, "probe"]}, **LIVENESS},
                      "volumeMounts": base["volumeMounts"]})
    if "securityContext" in base:
        container["securityContext"] = base["securityContext"]
    pod: dict[str, Any] = {**({"restartPolicy": "Never"} if job else {}), **pod_common(infra),
                           "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS, **placement(sizing),
                           "containers": [container], "volumes": volumes}
    template: dict[str, Any] = {"metadata": {"labels": pod_labels(infra, fleet)}, "spec": pod}
    for group in groups:
        template = deep_merge(template, _fragment(infra, group, container_name))

    # Invariants, after the fragments so none can remove them.
    template["metadata"]["labels"] = dict(sorted({**template["metadata"].get("labels", {}),
                                                  **pod_labels(infra, fleet)}.items()))
    pod = template["spec"]
    if job:
        pod["restartPolicy"] = "Never"
    main = next(c for c in pod["containers"] if c.get("name") == container_name)
    main["image"] = infra["infra"]["image"]
    main["command"] = ["/bin/bash", SCRIPT_PATH]
    invariants = {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", **bootstrap,
                  "DOCKYARD_RAY_RESOURCES": json.dumps(tags, sort_keys=True), **sandbox_env(infra)}
    if role_env:
        invariants["DOCKYARD_FLEET_ROLE"] = role_env
    for k, v in invariants.items():
        set_env(main, k, v)
    force_auth_env(infra, main)
    return template


def _bootstrap_env(infra: InfraSpec, *, nodes: int, head_pod: str, after: str,
                   params: dict[str, Any], job_args: list[str]) -> dict[str, str]:
    b = infra["launch"]["bootstrap"]
    return {
        "DOCKYARD_HEAD_POD": head_pod,
        "DOCKYARD_HEAD_SERVICE": headless_service_name(infra) if head_pod else "",
        "DOCKYARD_CLUSTER_DOMAIN": infra["infra"]["clusterDomain"],
        "DOCKYARD_NUM_NODES": str(nodes),
        "DOCKYARD_TIMEOUT_SECONDS": str(padded_deadline(infra, b["timeoutSeconds"])),
        "DOCKYARD_POLL_SECONDS": str(b["pollSeconds"]),
        # rayStartParams as --key=value words (resources is passed on its own)
        "DOCKYARD_RAY_START_ARGS": " ".join(f"--{k}={param_text(v)}" for k, v in params.items() if k != "resources"),
        "DOCKYARD_ENTRYPOINT": entrypoint(infra, job_args),
        "DOCKYARD_AFTER_FINISH": after,
        "DOCKYARD_STATE_DIR": STATE_DIR,
    }


# --- objects ----------------------------------------------------------------------------------


def bootstrap_configmap(infra: InfraSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(infra, name_of(infra, "bootstrap"), "ray-bootstrap"),
        "data": {SCRIPT_NAME: bootstrap_script()},
    }


def job_objects(infra: InfraSpec, job_args: list[str]) -> list[dict[str, Any]]:
    """``launch.mode: job``: the bootstrap ConfigMap and one single-node batch Job."""
    launch = infra["launch"]
    sizing, tags = _combined_sizing(infra)
    env = _bootstrap_env(infra, nodes=1, head_pod="", after="exit", params=sizing["rayStartParams"],
                         job_args=job_args)
    template = _pod_template(infra, fleet="head", sizing=sizing, tags=tags, bootstrap=env, role_env=None,
                             groups=["head", *GPU_FLEETS], job=True)
    if provenance.active():
        _note_job_sizing(infra, template["spec"])
    spec: dict[str, Any] = {"completions": 1, "parallelism": 1, "backoffLimit": launch["backoffLimit"]}
    if launch["activeDeadlineSeconds"] is not None:
        spec["activeDeadlineSeconds"] = padded_deadline(infra, launch["activeDeadlineSeconds"])
    if launch["shutdownAfterJobFinishes"]:
        spec["ttlSecondsAfterFinished"] = launch["ttlSecondsAfterFinished"]
    if launch["suspend"]:
        spec["suspend"] = True
    spec["template"] = template
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(infra, name_of(infra), "ray-job"),
           "spec": spec}
    return [bootstrap_configmap(infra), job]


def headless_service(infra: InfraSpec) -> dict[str, Any]:
    """DNS for the StatefulSet pods; records exist before readiness so workers find the head."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(infra, headless_service_name(infra), "ray-cluster"),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {RUN_LABEL: infra["launch"]["name"], "app.kubernetes.io/component": "ray-worker"},
            "ports": [{"name": p["name"], "port": p["containerPort"], "targetPort": p["containerPort"],
                       "protocol": "TCP"} for p in HEAD_PORTS],
        },
    }


def statefulset_objects(infra: InfraSpec, job_args: list[str]) -> list[dict[str, Any]]:
    """``launch.mode: statefulset``: ConfigMap, headless Service, then one StatefulSet per fleet."""
    kr = infra["kuberay"]
    fleets = [r for r in GPU_FLEETS if kr[r]["replicas"] > 0]
    nodes = sum(kr[r]["replicas"] for r in fleets)
    out = [bootstrap_configmap(infra), headless_service(infra)]
    for role in fleets:
        sizing = kr[role]
        tags = {fleet_resource(role): max(1, int(sizing["gpus"]))}
        env = _bootstrap_env(infra, nodes=nodes, head_pod=head_pod_name(infra), after="hold",
                             params=sizing["rayStartParams"], job_args=job_args)
        template = _pod_template(infra, fleet=role, sizing=sizing, tags=tags, bootstrap=env, role_env=role,
                                 groups=[role], job=False)
        out.append({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": metadata(infra, name_of(infra, role), "ray-cluster"),
            "spec": {
                "serviceName": headless_service_name(infra),
                "replicas": sizing["replicas"],
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": selector(infra, role)},
                "template": template,
            },
        })
    return out
