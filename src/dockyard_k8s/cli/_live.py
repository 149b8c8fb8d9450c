"""Helpers shared by the live commands: cluster flags, connecting, follow-up hints, Ray addresses.

Nothing heavy is imported at module level: the live package (lightkube, httpx2) is
imported inside the functions, so registering these commands costs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dockyard_k8s.errors import UsageError

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle
    from dockyard_k8s.live.client import KubeClient

CLUSTER_HELP = """\
cluster access: the current kubeconfig context ($KUBECONFIG or ~/.kube/config, or in-cluster),
  or --context / --kubeconfig, as for kubectl.
exit codes: 0 ok, 1 failure (failed job, API error, doctor check failed), 2 bad input, 130 interrupted
"""


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")


def say(line: str = "") -> None:
    print(line, flush=True)


def connect(args: argparse.Namespace) -> KubeClient:
    from dockyard_k8s.live import client as client_mod

    return client_mod.connect(context=getattr(args, "context", None), kubeconfig=getattr(args, "kubeconfig", None))


def command_text(args: argparse.Namespace, command: str, *extra: str) -> str:
    """The command line that targets the same run (for hints)."""
    parts = ["dockyard-k8s", *command.split()]
    if getattr(args, "recipe", None):
        parts.append(args.recipe)
    if getattr(args, "infra", None):
        parts += ["--infra", args.infra]
    for s in getattr(args, "sets", []) or []:
        parts += ["--set", s]
    if getattr(args, "namespace", None):
        parts += ["-n", args.namespace]
    if getattr(args, "context", None):
        parts += ["--context", args.context]
    if getattr(args, "kubeconfig", None):
        parts += ["--kubeconfig", args.kubeconfig]
    parts += list(getattr(args, "overrides", []) or [])
    parts += list(extra)
    return shlex.join(parts)


def follow_hints(args: argparse.Namespace, bundle: Bundle) -> list[str]:
    from dockyard_k8s.render.meta import RUN_LABEL

    infra = bundle.run.infra
    ns, run = infra["infra"]["namespace"], infra["launch"]["name"]
    return [
        f"  status:  {command_text(args, 'status')}",
        f"  logs:    {command_text(args, 'logs', '-f')}",
        f"  delete:  {command_text(args, 'down')}",
        f"  kubectl: kubectl -n {ns} get all,rayjobs,rayclusters -l {RUN_LABEL}={run}",
    ]


def run_of(bundle: Bundle) -> tuple[str, str]:
    """(namespace, run name)"""
    infra = bundle.run.infra
    return infra["infra"]["namespace"], infra["launch"]["name"]


def ray_cluster_name(client: KubeClient | None, bundle: Bundle) -> str:
    """The RayCluster a run's Ray jobs go to: attach.cluster, the bringup cluster, or the RayJob's."""
    from dockyard_k8s.errors import ClusterError
    from dockyard_k8s.live.kinds import RAYJOB

    infra = bundle.run.infra
    ns, run = run_of(bundle)
    mode = infra["launch"]["mode"]
    if mode == "attach":
        if infra["launch"]["attach"]["cluster"]:
            return str(infra["launch"]["attach"]["cluster"])
        raise UsageError("launch.attach names no cluster: pass --address or set launch.attach.cluster")
    if mode == "rayjob" and client is not None:
        job = client.get(RAYJOB, ns, run)
        name = ((job or {}).get("status") or {}).get("rayClusterName")
        if not name:
            raise ClusterError("the RayJob has no RayCluster (yet)", obj=f"RayJob {ns}/{run}",
                               hint="`dockyard-k8s status` shows where it is")
        return str(name)
    return run


@contextlib.contextmanager
def ray_address(args: argparse.Namespace, bundle: Bundle | None, client: KubeClient | None) -> Iterator[str]:
    """A Ray dashboard URL: --address, launch.attach.address, or a port-forward to the head Service."""
    from dockyard_k8s.live.portforward import port_forward

    if getattr(args, "address", None):
        yield args.address
        return
    if bundle is not None and bundle.run.infra["launch"]["mode"] == "attach" and \
            bundle.run.infra["launch"]["attach"]["address"]:
        yield str(bundle.run.infra["launch"]["attach"]["address"])
        return
    if getattr(args, "cluster", None):
        cluster = args.cluster
        ns = args.namespace or (client.default_namespace if client else "default")
    elif bundle is not None:
        cluster = ray_cluster_name(client, bundle)
        ns = run_of(bundle)[0]
    else:
        raise UsageError("say which Ray cluster: RECIPE, --cluster NAME or --address URL")
    with port_forward(ns, f"svc/{cluster}-head-svc", 8265, context=getattr(args, "context", None),
                      kubeconfig=getattr(args, "kubeconfig", None)) as url:
        print(f"port-forward: {url} -> {ns}/svc/{cluster}-head-svc:8265", file=sys.stderr, flush=True)
        yield url


def print_findings(findings: list[Any], indent: str = "  ") -> None:
    for f in findings:
        say(f"{indent}✖ {f.line()}")
        say(f"{indent}  hint: {f.hint}")
