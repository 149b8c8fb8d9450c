"""``dockyard-k8s plan``: simulate the scheduler for every pod of the run, before applying."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._flags import add_legacy_format_arg, add_output_arg
from dockyard_k8s.cli._targets import TARGET_HELP, add_target_args, load_targets
from dockyard_k8s.errors import MALFORMED_DATA, UsageError

EXAMPLES = """\
examples:
  dockyard-k8s plan examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml     # plan.nodePools
  kubectl get nodes -o yaml > nodes.yaml; kubectl get pods -A -o yaml > pods.yaml
  dockyard-k8s plan recipe.yaml --nodes nodes.yaml --nodes pods.yaml
  dockyard-k8s plan recipe.yaml --live --context prod      # the cluster's nodes and running pods, now
  dockyard-k8s plan recipe.yaml --set kuberay.trainer.replicas=4 -o json
  kubectl get clusterqueues,cohorts,resourceflavors,topologies,workloadpriorityclasses -o yaml > kueue.yaml
  kubectl get localqueues,workloads -A -o yaml > queues.yaml
  dockyard-k8s plan recipe.yaml --kueue kueue.yaml --kueue queues.yaml   # Kueue admission, then the nodes
  dockyard-k8s plan --list-instance-types

exit codes: 0 every pod fits (and Kueue admits the run), 1 some pod stays pending or Kueue does not
admit the run now, 2 bad input
"""


def register(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("plan",
                       description="Place every pod the run would create (Ray head, worker groups, submitter, "
                                   "sandbox replicas) on a node inventory with the default scheduler's filters "
                                   "and the namespace quota, and say per group what is placed, where, and why "
                                   "the rest would stay Pending.",
                       epilog=TARGET_HELP + "\n" + EXAMPLES, formatter_class=formatter)
    add_target_args(p)
    p.add_argument("--nodes", action="append", default=[], metavar="FILE",
                   help="`kubectl get nodes -o yaml` output (repeatable; pods and ResourceQuotas too)")
    p.add_argument("--live", action="store_true",
                   help="inventory from the cluster of the current context: nodes, running pods, quotas "
                        "(with --context/--kubeconfig)")
    p.add_argument("--context", help="kubeconfig context for --live (default: the current context)")
    p.add_argument("--kubeconfig", help="kubeconfig file for --live (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--kueue", action="append", default=[], metavar="FILE",
                   help="Kueue objects (ClusterQueue, Cohort, ResourceFlavor, LocalQueue, Topology, "
                        "WorkloadPriorityClass, AdmissionCheck; Workloads or ClusterQueue status as the current "
                        "usage): simulate Kueue's admission of a queued run first (repeatable; --live reads them)")
    p.add_argument("--gang", action="store_true",
                   help="all-or-nothing GPU gangs (as Volcano/YuniKorn/Kueue): a gang that does not fully fit "
                        "binds no pod")
    add_output_arg(p, ("text", "json"), help_extra=" of the report")
    add_legacy_format_arg(p, ("text", "json"))
    p.add_argument("--wide", action="store_true", help="list node names instead of pools")
    p.add_argument("--list-instance-types", action="store_true", help="print the built-in instance catalogue")
    p.set_defaults(func=run)


def _malformed(paths: list[str], error: Exception) -> Exception:
    """The planner met a malformed manifest: say where, as `validate` does (or re-raise a bug)."""
    from dockyard_k8s.validate.engine import ValidateOptions, validate_files

    problems = [p for p in validate_files(paths, ValidateOptions(ignore_missing_schemas=True)).problems
                if p.rule in ("yaml", "object", "schema")]
    if not problems:
        return error
    shown = "\n".join(f"  {p}" for p in problems[:10])
    more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
    return UsageError(f"plan: cannot plan malformed manifests (`dockyard-k8s validate {' '.join(paths)}` "
                      f"lists every problem):\n{shown}{more}")


def _node_locator(nodes: list[Any]) -> Any:
    """A problem of a node file's object at its file:line (plan.inventory.from_objects' ``locate``)."""
    from dockyard_k8s.errors import ConfigProblem
    from dockyard_k8s.kube import object_ref
    from dockyard_k8s.plain import format_path

    by_id = {id(m.data): m for m in nodes}

    def locate(obj: dict[str, Any], path: tuple[Any, ...], message: str) -> ConfigProblem:
        m = by_id[id(obj)]
        line = m.line(path)
        where = f"{object_ref(obj)}: {format_path(path)}"
        return ConfigProblem(m.source.file, line, 1 if line else 0, "", f"{where}: {message}")

    return locate


def run(args: argparse.Namespace) -> int:
    from dockyard_k8s.plan import catalog

    if args.list_instance_types:
        for name in catalog.names():
            print(catalog.describe(name))
        return 0
    from dockyard_k8s.plan import from_objects, from_pools, plan
    from dockyard_k8s.plan import report as out
    from dockyard_k8s.plan.kueue_plan import queued_jobs, team_objects

    targets = load_targets(args)
    objects = [o.data for o in targets.objects]
    if args.live and args.nodes:
        raise UsageError("--live and --nodes both give the node inventory: choose one")
    kueue_input = _kueue_files(args.kueue) if args.kueue else None
    if args.live:
        from dockyard_k8s.cli._live import connect
        from dockyard_k8s.live.doctor import cluster_inventory_objects

        with connect(args) as client:
            namespaces = sorted({str((o.get("metadata") or {}).get("namespace") or client.default_namespace)
                                 for o in objects})
            inventory = from_objects(cluster_inventory_objects(client, namespaces),
                                     source=f"live cluster {client.context}".rstrip(), live=True)
            if kueue_input is None and queued_jobs(objects):
                kueue_input = _live_kueue(client, namespaces)
    elif args.nodes:
        from dockyard_k8s.manifests import read_objects

        nodes = read_objects(args.nodes)
        try:
            inventory = from_objects([o.data for o in nodes], source=", ".join(args.nodes),
                                     locate=_node_locator(nodes))
        except MALFORMED_DATA as e:
            raise _malformed(args.nodes, e) from e
    elif targets.sections["plan"].get("nodePools"):
        inventory = from_pools(targets.sections["plan"])
    else:
        raise UsageError("no node inventory: declare plan.nodePools in the infra spec, or pass --nodes FILE "
                         "(kubectl get nodes -o yaml)")
    team = team_objects(objects)
    if kueue_input is None and team and queued_jobs(objects):
        kueue_input = (team, "the rendered queue objects (infra.kueue.queueObjects)")
    if kueue_input is not None:
        return _plan_with_kueue(args, targets, [o for o in objects if o not in team], inventory, *kueue_input)
    try:
        result = plan(objects, inventory, atomic_gangs=args.gang)
    except MALFORMED_DATA as e:
        if targets.rendered:  # rendered objects were validated: this is a bug, not bad input
            raise
        raise _malformed([args.recipe, *args.overrides], e) from e
    waiting = queued_jobs(objects)
    if waiting:
        result.notes.append(f"{waiting[0]} is queued with Kueue: pass --kueue FILE (or --live) to simulate its "
                            "admission against the ClusterQueue's quota before the scheduler")
    if args.output == "json":
        from dockyard_k8s.render.serialize import dump_json

        print(dump_json(out.as_json(result)), end="")
    else:
        print(out.text(result, args.wide), end="")
    return result.exit_code


def _kueue_files(files: list[str]) -> tuple[list[dict[str, Any]], str]:
    from dockyard_k8s.manifests import read_objects

    return [o.data for o in read_objects(files)], ", ".join(files)


def _live_kueue(client: Any, namespaces: list[str]) -> tuple[list[dict[str, Any]], str] | None:
    from dockyard_k8s.live.kueue import kueue_installed, kueue_objects

    if not kueue_installed(client):
        raise UsageError("the run is queued with Kueue (kueue.x-k8s.io/queue-name) but the cluster serves no "
                         "ClusterQueue: Kueue is not installed, and without its webhook the job would run unqueued; "
                         "install Kueue or remove infra.kueue.queueName")
    return kueue_objects(client, namespaces), f"live cluster {client.context}".rstrip()


def _plan_with_kueue(args: argparse.Namespace, targets: Any, objects: list[dict[str, Any]], inventory: Any,
                     kueue_objects: list[dict[str, Any]], source: str) -> int:
    from dockyard_k8s.plan import kueue_report
    from dockyard_k8s.plan.kueue_plan import plan_with_kueue, run_snapshot

    try:
        snap = run_snapshot(objects, kueue_objects, source)
        result = plan_with_kueue(objects, inventory, snap, atomic_gangs=args.gang, source=source)
    except MALFORMED_DATA as e:
        if targets.rendered and not args.kueue:
            raise
        raise _malformed(list(args.kueue) or [args.recipe], e) from e
    if args.output == "json":
        from dockyard_k8s.render.serialize import dump_json

        print(dump_json(kueue_report.as_json(result)), end="")
    else:
        print(kueue_report.text(result, args.wide), end="")
    return result.exit_code
