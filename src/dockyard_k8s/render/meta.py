"""Names and labels shared by every renderer (the contract later commands rely on), and the
small objects several renderers build alike (Service, PodDisruptionBudget, PriorityClass).
Every object carries the ``app.kubernetes.io/*`` recommended labels plus
``dockyard-k8s/run=<run>``, the label ``status``, ``logs`` and ``down`` select on.
Pod templates also carry ``dockyard-k8s/fleet=<head|trainer|inference|sandbox|submitter>``.
A model endpoint (``serve``) carries ``dockyard-k8s/endpoint=<name>`` instead of the run
label, so no run's ``down`` or NetworkPolicy ever selects it; its pods are fleet ``serve``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from dockyard_k8s.plain import clone
from dockyard_k8s.render import provenance

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

RUN_LABEL = "dockyard-k8s/run"
ENDPOINT_LABEL = "dockyard-k8s/endpoint"  # serve: what `serve status` / `serve down` select on
FLEET_LABEL = "dockyard-k8s/fleet"
# On a pod template or its object: its pods run untrusted code (lint treats them as the sandbox's).
UNTRUSTED_ANNOTATION = "dockyard-k8s/untrusted"
MANAGED_BY = "dockyard-k8s"

# fleet -> the app.kubernetes.io/component of its pods
FLEETS = {
    "head": "ray-head",
    "trainer": "ray-worker",
    "inference": "ray-worker",
    "submitter": "ray-job-submitter",
    "sandbox": "sandbox",
    "prepull": "image-prepull",
    "nccl-launcher": "nccl-test",
    "nccl-worker": "nccl-test",
    "serve": "model-server",
}


def run_name(infra: InfraSpec) -> str:
    return str(infra["launch"]["name"])


def name_of(infra: InfraSpec, suffix: str = "") -> str:
    """``<run>`` or ``<run>-<suffix>``: every object name derives from the run name."""
    return f"{run_name(infra)}-{suffix}" if suffix else run_name(infra)


def _owner(infra: InfraSpec, endpoint: str | None) -> tuple[str, str]:
    """(label, value) naming what an object belongs to: the run, or a model endpoint."""
    return (ENDPOINT_LABEL, endpoint) if endpoint else (RUN_LABEL, run_name(infra))


def labels(infra: InfraSpec, component: str, *, endpoint: str | None = None) -> dict[str, str]:
    """Labels of an object of the run, or of ``endpoint`` (user labels first, ours win), sorted by key."""
    key, owner = _owner(infra, endpoint)
    out = {
        **infra["infra"]["labels"],
        "app.kubernetes.io/name": "dockyard-k8s",
        "app.kubernetes.io/instance": owner,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        key: owner,
    }
    out = dict(sorted(out.items()))
    if provenance.active():
        user = infra["infra"]["labels"]
        provenance.note_fields(out, {k: ("infra", "labels", k) for k in user if out.get(k) == user[k]})
    return out


def pod_labels(infra: InfraSpec, fleet: str, *, endpoint: str | None = None) -> dict[str, str]:
    return dict(sorted({**labels(infra, FLEETS[fleet], endpoint=endpoint), FLEET_LABEL: fleet}.items()))


def selector(infra: InfraSpec, fleet: str, *, endpoint: str | None = None) -> dict[str, str]:
    """The stable subset of pod labels used in selectors (selectors are immutable)."""
    key, owner = _owner(infra, endpoint)
    return {FLEET_LABEL: fleet, key: owner}


def fleets_selector(infra: InfraSpec, fleets: Iterable[str]) -> dict[str, Any]:
    """Label selector of the run's pods of ``fleets`` (PDBs, anti-affinity, spreading, policies)."""
    return {"matchLabels": {RUN_LABEL: run_name(infra)},
            "matchExpressions": [{"key": FLEET_LABEL, "operator": "In", "values": list(fleets)}]}


def metadata(infra: InfraSpec, name: str, component: str, *, namespaced: bool = True,
             endpoint: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = infra["infra"]["namespace"]
    meta["labels"] = labels(infra, component, endpoint=endpoint)
    name_key = ("serve", "name") if endpoint else ("launch", "name")
    return provenance.note_fields(meta, {"name": name_key, "namespace": ("infra", "namespace")})


def http_service(meta: dict[str, Any], pods: dict[str, str], port: int | None) -> dict[str, Any]:
    """A ClusterIP Service of the pods ``pods`` selects, on their container port named ``http``."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"type": "ClusterIP", "selector": pods,
                     "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}]}}


def pdb(meta: dict[str, Any], max_unavailable: Any, pods: dict[str, Any]) -> dict[str, Any]:
    """A PodDisruptionBudget over the pods the label selector ``pods`` selects."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
            "spec": {"maxUnavailable": max_unavailable, "selector": pods}}


def priority_class(meta: dict[str, Any], section: Mapping[str, Any], description: str) -> dict[str, Any]:
    """A PriorityClass of a ``priorityClass`` section (value, preemptionPolicy); never the cluster's default."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta,
            "value": section["value"], "globalDefault": False, "preemptionPolicy": section["preemptionPolicy"],
            "description": description}


def quantity(value: Any) -> str:
    """Quantities are rendered as strings so output does not depend on YAML typing."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def param_text(value: Any) -> str:
    """A value as an env var or a Ray start parameter takes it: a string, booleans lower-case."""
    return ("true" if value else "false") if isinstance(value, bool) else quantity(value)


def env_list(env: dict[str, Any]) -> list[dict[str, str]]:
    """``{NAME: value}`` -> Kubernetes EnvVar list."""
    return [{"name": k, "value": param_text(v)} for k, v in env.items()]


def secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    """An EnvVar from key ``key`` of Secret ``secret``."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def pull_secrets(infra: InfraSpec) -> dict[str, Any]:
    """The pod spec field of ``infra.imagePullSecrets``, when it names any."""
    names = infra["infra"]["imagePullSecrets"]
    return {"imagePullSecrets": [{"name": n} for n in names]} if names else {}


def placement(section: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec fields of a section's ``nodeSelector`` and ``tolerations`` (those set)."""
    return {key: clone(section[key]) for key in ("nodeSelector", "tolerations") if section[key]}


def pod_common(infra: InfraSpec) -> dict[str, Any]:
    """Pod spec fields every managed pod shares (priority class, pull secrets)."""
    name = infra["infra"]["priorityClassName"]
    return {**({"priorityClassName": name} if name else {}), **pull_secrets(infra)}
