"""A model endpoint on the cluster: the launch sequence of ``live/launch.py``, for ``serve`` (``__all__``).

Everything is found by ``dockyard-k8s/endpoint=<name>``; the Deployment is the object waited
on (Ready once its rollout is complete, ``progress.deployment_phase``). The PriorityClass is
cluster-scoped and may be shared by other endpoints: ``down`` leaves it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live import orchestrate, references, teardown
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS, POD, kind_of
from dockyard_k8s.live.logs import select_pods
from dockyard_k8s.live.orchestrate import Outcome
from dockyard_k8s.live.progress import RunView
from dockyard_k8s.live.rayhead import read_token
from dockyard_k8s.render.meta import ENDPOINT_LABEL

if TYPE_CHECKING:
    from dockyard_k8s.config.serve import ServeConfig
    from dockyard_k8s.serve_bundle import ServeBundle

__all__ = ["Outcome", "ServeStatus", "UpOptions", "down", "log_pods", "status", "up", "wait"]

Say = Callable[[str], None]
MAIN_KIND = "Deployment"
SERVE_CREATES = {"PriorityClass": "serve.priorityClass.create: true",
                 "PersistentVolumeClaim": "serve.cache.create: true"}
SHARED_KINDS = frozenset({"PriorityClass"})  # cluster-scoped, shared by endpoints: never deleted by down


@dataclasses.dataclass(frozen=True)
class UpOptions:
    """How ``serve up`` applies and follows (its flags)."""

    dry_run: Literal["", "server"] = ""  # server: dryRun=All, nothing persisted
    force_conflicts: bool = False  # take over fields another field manager owns
    detach: bool = False  # return after applying
    timeout: float | None = None  # stop following after this many seconds
    fail_fast: bool = False  # stop at the first problem that cannot heal


def selector(bundle: ServeBundle) -> str:
    return f"{ENDPOINT_LABEL}={bundle.config.name}"


def _watched(bundle: ServeBundle) -> list[dict[str, Any]]:
    """The objects the follower counts pods from: with KEDA the Deployment has no replicas
    (the HPA owns them), so it is counted at the ScaledObject's minimum."""
    auto = bundle.config.serve["autoscaling"]
    if not auto["enabled"]:
        return bundle.objects
    return [{**o, "spec": {**o["spec"], "replicas": auto["minReplicas"]}} if o.get("kind") == MAIN_KIND else o
            for o in bundle.objects]


def up(client: KubeClient, bundle: ServeBundle, options: UpOptions = UpOptions(), *, say: Say = print) -> Outcome:
    """Apply the endpoint's objects in order, then (unless detached) follow it until Ready.

    Outcome reasons besides :func:`wait`'s: ``dry-run`` (server dry run), ``detached``.
    """
    cfg = bundle.config
    require_served(client, bundle)
    for unread in references.require(client, bundle.objects, what=f"endpoint {cfg.name}", creates=SERVE_CREATES,
                                     check="dockyard-k8s serve check"):
        say(unread)
    applied = orchestrate.apply_objects(client, bundle.objects, dry_run=options.dry_run == "server",
                                        force=options.force_conflicts, say=say)
    say(f"endpoint {cfg.name} in {cfg.namespace}: {orchestrate.tally(applied)}")
    if options.dry_run == "server":
        return Outcome(True, "dry-run", "server dry run: nothing was persisted")
    if options.detach:
        return Outcome(True, "detached", "applied; not following")
    return wait(client, bundle, options, say=say)


# Kinds from an operator the cluster may lack: apiVersion prefix -> (the operator, what to do without it).
OPERATOR_KINDS = {
    "keda.sh/": ("KEDA", "install KEDA (its CRDs and operator), or set serve.autoscaling.enabled: false"),
    "monitoring.coreos.com/": ("prometheus-operator", "install prometheus-operator (kube-prometheus-stack), or set "
                                                      "serve.metrics.scrape: annotations for a Prometheus that "
                                                      "discovers pods by annotation"),
}


def require_served(client: KubeClient, bundle: ServeBundle) -> None:
    """Before anything is applied: every operator kind of the bundle is served, so an endpoint
    is never left half-applied because, say, KEDA is not installed. One LIST per such kind.

    Raises:
        ClusterError: a kind is not served (the CRD is not installed).
    """
    for obj in bundle.objects:
        for prefix, (operator, instead) in OPERATOR_KINDS.items():
            if not str(obj.get("apiVersion", "")).startswith(prefix):
                continue
            kind = kind_of(obj)
            if not client.list(kind, bundle.config.namespace, missing_ok=True)[1]:  # "" when not served
                raise ClusterError(f"the cluster does not serve {kind.api_version} {kind.kind}: {operator} is not "
                                   "installed; nothing was applied", obj=f"{kind.kind} {bundle.config.namespace}/"
                                   f"{obj['metadata']['name']}", status=404, hint=instead)


def wait(client: KubeClient, bundle: ServeBundle, options: UpOptions = UpOptions(), *, say: Say = print) -> Outcome:
    """Follow the endpoint with watches until its Deployment's rollout is complete (ready),
    stuck past its progress deadline (failed), ``--timeout`` or, with ``fail_fast``, the first
    problem that cannot heal. Every pod problem is said as it happens, with a hint."""
    cfg = bundle.config
    outcome = orchestrate.follow(client, cfg.namespace, cfg.name, _watched(bundle), say=say, timeout=options.timeout,
                                 fail_fast=options.fail_fast, selector=selector(bundle), main_kind=MAIN_KIND)
    if outcome.reason == "timeout":
        return dataclasses.replace(outcome, message=f"stopped following after {int(options.timeout or 0)}s; the "
                                   "endpoint keeps starting")
    auto = cfg.serve["autoscaling"]
    if outcome.ok and auto["enabled"]:  # the rollout of the replicas there are: KEDA's HPA owns how many
        deployment = client.get(KINDS[MAIN_KIND], cfg.namespace, cfg.name) or {}
        ready = int((deployment.get("status") or {}).get("readyReplicas") or 0)
        if ready < auto["minReplicas"]:
            return dataclasses.replace(outcome, message=f"{outcome.message}; {ready} of the autoscaler's minimum "
                                       f"{auto['minReplicas']} replicas ready: KEDA's HPA raises the count (`serve "
                                       "status` shows it; no ScaledObject status there: is the KEDA operator running?)")
    return outcome


@dataclasses.dataclass(frozen=True, slots=True)
class ServeStatus:
    """The endpoint right now."""

    view: RunView  # Deployment, pods, Warning events (findings)
    claims: list[dict[str, Any]]  # the cache claim (and per-replica claims) with their phase
    scalers: list[dict[str, Any]]  # the KEDA ScaledObject, when there is one
    service: dict[str, Any] | None

    @property
    def found(self) -> bool:
        return bool(self.view.of_kind(MAIN_KIND) or self.view.pods or self.claims or self.service)


def status(client: KubeClient, bundle: ServeBundle) -> ServeStatus:
    """One LIST per kind (Deployment, pods, claims, Services, ScaledObjects) plus one of Warning
    events, whatever the pod count."""
    cfg = bundle.config
    sel = selector(bundle)
    view = orchestrate.snapshot(client, cfg.namespace, cfg.name, _watched(bundle), selector=sel, main_kind=MAIN_KIND)
    claims, _ = client.list(KINDS["PersistentVolumeClaim"], cfg.namespace, label_selector=sel, missing_ok=True)
    view.sync("PersistentVolumeClaim", claims)  # a Bound claim's provisioning events are history
    services, _ = client.list(KINDS["Service"], cfg.namespace, label_selector=sel, missing_ok=True)
    scaled = next((o for o in bundle.objects if o["kind"] == "ScaledObject"), None)
    scalers = client.list(kind_of(scaled), cfg.namespace, label_selector=sel, missing_ok=True)[0] if scaled else []
    return ServeStatus(view, claims, scalers, services[0] if services else None)


def down(client: KubeClient, bundle: ServeBundle, *, delete_cache: bool = False, dry_run: bool = False,
         timeout: float = teardown.PODS_TIMEOUT, say: Say = print) -> list[str]:
    """Delete everything labelled with the endpoint, the ScaledObject and Deployment first and
    the NetworkPolicies once its pods are gone (``timeout`` seconds at most); the cache claim
    only with ``delete_cache``; never the PriorityClass. Returns what was deleted (empty: nothing left)."""
    cfg = bundle.config
    objects = [o for o in bundle.objects if o["kind"] not in SHARED_KINDS]
    deleted = teardown.down(client, cfg.namespace, cfg.name, objects, keep_volumes=not delete_cache,
                            dry_run=dry_run, say=say, selector=selector(bundle), volumes_flag="--delete-cache",
                            pods_timeout=timeout)
    for obj in bundle.objects:
        if obj["kind"] in SHARED_KINDS:
            say(f"kept {obj['kind']} {obj['metadata']['name']} (cluster-scoped, other endpoints may use it; "
                f"`kubectl delete priorityclass {obj['metadata']['name']}` removes it)")
    return deleted


def log_pods(client: KubeClient, bundle: ServeBundle, *, pod: str | None = None) -> list[dict[str, Any]]:
    """The endpoint's server pods (or ``pod``): one LIST."""
    pods, _ = client.list(POD, bundle.config.namespace, label_selector=selector(bundle))
    return select_pods(pods, fleet="serve", pod=pod)


def api_key(client: KubeClient, cfg: ServeConfig) -> str | None:
    """The endpoint's API key (``serve.apiKeySecret``) from its Secret, or None when it has none.

    Raises:
        ClusterError: the Secret or its key is missing.
    """
    keys = cfg.serve["apiKeySecret"]
    if not keys["name"]:
        return None
    hint = (f"create it: kubectl -n {cfg.namespace} create secret generic {keys['name']} "
            f"--from-literal={keys['key']}=\"$(openssl rand -hex 32)\""
            + (f" --from-literal={keys['adminKey']}=\"$(openssl rand -hex 32)\"" if cfg.serve["backend"] == "sglang"
               else ""))
    return read_token(client, cfg.namespace, str(keys["name"]), str(keys["key"]), what="the endpoint's API key",
                      hint=hint)
