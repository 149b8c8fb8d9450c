"""Where a run's Ray dashboard is, and a Ray Jobs client on it.

The target is, first match wins: an explicit address (``--address``), the attach-mode
``launch.attach.address``, a RayCluster named by ``--cluster``, or the run's own cluster
(``launch.attach.cluster``, the bringup cluster, or the RayJob's ``status.rayClusterName``),
reached through ``kubectl port-forward`` to ``<cluster>-head-svc:8265``.

``job``, ``cluster dashboard`` and attach-mode ``run`` all go through :func:`ray_jobs` /
:func:`dashboard_url`, so anything a Ray Jobs request needs (an address, credentials) has
one home here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.live.kinds import KINDS, RAYJOB
from dockyard_k8s.plain import Record

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle
    from dockyard_k8s.live.client import KubeClient
    from dockyard_k8s.live.rayjobs import RayJobsClient

DASHBOARD_PORT = 8265


class RayTarget(Record):
    """What the user named on the command line (all optional)."""

    __slots__ = ("address", "cluster", "namespace", "context", "kubeconfig")

    def __init__(self, address: str | None = None, cluster: str | None = None, namespace: str | None = None,
                 context: str | None = None, kubeconfig: str | None = None) -> None:
        self.address = address  # a dashboard URL: no port-forward
        self.cluster = cluster  # a RayCluster by name
        self.namespace = namespace  # the namespace of ``cluster`` (default: the context's)
        self.context = context  # kubeconfig context and file, for kubectl port-forward
        self.kubeconfig = kubeconfig


def ray_cluster_of(main: dict[str, Any] | None, attach: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(RayCluster, dashboard address) a run's Ray jobs go to, from its main object as the cluster
    has it: the RayJob's ``status.rayClusterName``, the bringup RayCluster, or what attach mode names."""
    if main is not None and main.get("kind") == "RayJob":
        return (main.get("status") or {}).get("rayClusterName"), None
    if main is not None and main.get("kind") == "RayCluster":
        return str(main["metadata"]["name"]), None
    return attach.get("cluster"), attach.get("address")


def ray_cluster_name(client: KubeClient | None, bundle: Bundle) -> str:
    """The RayCluster a run's Ray jobs go to: attach.cluster, the bringup cluster, or the RayJob's."""
    launch = bundle.run.infra["launch"]
    ns, run = bundle.run.namespace, bundle.run.name
    if launch["mode"] == "attach":
        cluster, _ = ray_cluster_of(None, launch["attach"])
        if cluster:
            return str(cluster)
        raise UsageError("launch.attach names no cluster: pass --address or set launch.attach.cluster")
    if launch["mode"] == "rayjob" and client is not None:
        cluster, _ = ray_cluster_of(client.get(RAYJOB, ns, run) or {"kind": "RayJob"}, {})
        if not cluster:
            raise ClusterError("the RayJob has no RayCluster (yet)", obj=f"RayJob {ns}/{run}",
                               hint="`dockyard-k8s status` shows where it is")
        return str(cluster)
    return run


@contextlib.contextmanager
def dashboard_url(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
                  on_forward: Callable[[str], None] | None = None) -> Iterator[str]:
    """A Ray dashboard URL for ``target``; a port-forward, when needed, lives as long as the block.
    ``on_forward`` hears about the tunnel (the CLI prints it to stderr)."""
    from dockyard_k8s.live.portforward import port_forward

    if target.address:
        yield target.address
        return
    launch = bundle.run.infra["launch"] if bundle is not None else None
    if launch is not None and launch["mode"] == "attach" and launch["attach"]["address"]:
        yield str(launch["attach"]["address"])
        return
    if target.cluster:
        cluster = target.cluster
        ns = target.namespace or (client.default_namespace if client else "default")
    elif bundle is not None:
        cluster = ray_cluster_name(client, bundle)
        ns = bundle.run.namespace
    else:
        raise UsageError("say which Ray cluster: RECIPE, --cluster NAME or --address URL")
    service = f"svc/{cluster}-head-svc"
    if client is not None and client.get(KINDS["Service"], ns, f"{cluster}-head-svc") is None:
        # asked first through the launcher's client: an unreachable API server or a wrong name is
        # said plainly, not through kubectl's retries and memcache.go lines
        raise ClusterError(f"no Service {cluster}-head-svc in namespace {ns}: no RayCluster {cluster} there, or "
                           "KubeRay has not made its head Service yet", obj=f"RayCluster {ns}/{cluster}",
                           hint=f"`dockyard-k8s cluster list -n {ns}` lists the RayClusters")
    with port_forward(ns, service, DASHBOARD_PORT, context=target.context, kubeconfig=target.kubeconfig,
                      checked=client is not None) as url:
        if on_forward:
            on_forward(f"port-forward: {url} -> {ns}/{service}:{DASHBOARD_PORT}")
        yield url


@contextlib.contextmanager
def ray_jobs(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
             on_forward: Callable[[str], None] | None = None) -> Iterator[RayJobsClient]:
    """A Ray Jobs REST client on the target's dashboard, closed (and its tunnel ended) after the block.
    It carries the Ray token (``live/rayauth.py``); ``on_forward`` also hears a head that asks for none."""
    from dockyard_k8s.live.rayauth import check_head, dashboard_token
    from dockyard_k8s.live.rayjobs import RayJobsClient

    token = dashboard_token(target, bundle, client)
    with dashboard_url(target, bundle, client, on_forward=on_forward) as url:
        ray = RayJobsClient(url, token=token)
        try:
            check_head(ray, token, note=on_forward)
            yield ray
        finally:
            ray.close()
