"""``dockyard-k8s down``: delete everything labelled with the run (idempotent)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from dockyard_k8s.bundle import Bundle
from dockyard_k8s.cli._live import connect, say
from dockyard_k8s.cli._runargs import add_run_args, live_epilog, load_bundle, run_name_arg
from dockyard_k8s.config.loader import Setting
from dockyard_k8s.live import runs
from dockyard_k8s.live.launch import down
from dockyard_k8s.live.teardown import wait_gone

EXAMPLES = """\
examples:
  dockyard-k8s down examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s down recipe.yaml --dry-run     # what would be deleted (server dry run)
  dockyard-k8s down grpo-swe -n rl-research   # by run name: no launch files needed
  dockyard-k8s down recipe.yaml --wait        # until every object and pod of the run is gone
"""


def register(sub: Any) -> None:
    p = sub.add_parser("down",
                       description="Find every object labelled dockyard-k8s/run=<run> (one LIST per kind) and delete "
                                   "it, workloads first and the NetworkPolicies once the run's pods are gone (so no "
                                   "pod runs its grace period without them); owned objects (a RayJob's cluster, "
                                   "pods) go with their owner. ResourceQuota/LimitRange and PersistentVolumeClaims "
                                   "are kept unless asked. A second run finds nothing and says so.",
                       epilog=live_epilog(EXAMPLES, by_name=True))
    add_run_args(p, by_name=True, cluster=True)
    add_down_args(p)


def add_down_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--include-governance", action="store_true", help="also delete the run's ResourceQuota/LimitRange")
    p.add_argument("--delete-volumes", action="store_true", help="also delete the run's PersistentVolumeClaims")
    p.add_argument("--dry-run", action="store_true", help="server dry run: report, delete nothing")
    p.add_argument("--wait", action="store_true",
                   help="return only when everything of the run is gone (finalizers released, pods collected)")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                   help="wait at most SECONDS for the run's pods to be gone before deleting its NetworkPolicies "
                        "and token Secret (then they are kept), and with --wait for everything (default 600; exit 1)")


def run(args: argparse.Namespace, values: Sequence[Setting] = ()) -> int:
    """``down``, and ``cluster down`` with its ``values`` (the bringup shape)."""
    name = run_name_arg(args)
    return execute_by_name(args, name) if name else execute(args, load_bundle(args, values))


def execute_by_name(args: argparse.Namespace, name: str) -> int:
    """``down RUN``: every kind the run applied (its launch record says which), by its label."""
    with connect(args) as client:
        ns = args.namespace or client.default_namespace
        ref = runs.find_run(client, ns, name)
        deleted = runs.down(client, ref, include_governance=args.include_governance,
                            keep_volumes=not args.delete_volumes, dry_run=args.dry_run, timeout=args.timeout, say=say)
        if args.wait and not args.dry_run:
            wait_gone(client, ns, name, [*ref.objects, *(ref.record.objects if ref.record else [])],
                      include_governance=args.include_governance, keep_volumes=not args.delete_volumes,
                      timeout=args.timeout, say=say)
        near = "" if deleted else runs.near_run(client, ns, name)  # a typo deletes nothing: say what is there
    return _said(args, deleted, name, ns, near)


def _said(args: argparse.Namespace, deleted: list[str], run_name: str, ns: str, near: str = "") -> int:
    if not deleted:
        say(f"nothing left of run {run_name} in {ns}{near}")
    elif args.wait and not args.dry_run:
        say(f"everything of run {run_name} is gone from {ns}")
    elif any(d.startswith(("NetworkPolicy ", "Secret ")) for d in deleted):  # deleted once the pods were gone
        follows = _made_by_kuberay(deleted)
        say(f"deleted {len(deleted)} object(s) of run {run_name}, its pods are gone"
            + (f"; {follows} by garbage collection: `--wait` waits for it" if follows else ""))
    else:
        follows = _made_by_kuberay(deleted) or "what the operators made from them"
        say(f"deleted {len(deleted)} object(s) of run {run_name}; {follows} and the pods still terminating go by "
            "garbage collection: `--wait` waits for them")
    return 0


def _made_by_kuberay(deleted: list[str]) -> str:
    """What KubeRay made from the deleted objects, which its owner references take away after them."""
    if any(d.startswith("RayJob ") for d in deleted):
        return "the RayCluster KubeRay made for the RayJob follows"
    if any(d.startswith("RayCluster ") for d in deleted):
        return "the Services KubeRay made for the RayCluster follow"
    return ""


def execute(args: argparse.Namespace, bundle: Bundle) -> int:
    """Delete the run of ``bundle``; shared by `down` and `cluster down`."""
    ns, run_name = bundle.run.namespace, bundle.run.name
    with connect(args) as client:
        deleted = down(client, bundle, include_governance=args.include_governance,
                       keep_volumes=not args.delete_volumes, dry_run=args.dry_run,
                       wait=args.timeout if args.wait else None, timeout=args.timeout, say=say)
    return _said(args, deleted, run_name, ns)
