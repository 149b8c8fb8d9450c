"""``dockyard-k8s plan``: simulate the scheduler for every pod of the run, before applying."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._output import add_output_arg
from dockyard_k8s.cli._targets import TARGET_HELP, add_target_args, load_targets
from dockyard_k8s.output import dump_json
from dockyard_k8s.plan import catalog, kueue_report, report, sources
from dockyard_k8s.plan.inventory import Inventory
from dockyard_k8s.plan.kueue_plan import KueuePlan
from dockyard_k8s.plan.schedule import PlanResult
from dockyard_k8s.plan.sources import KueueInput, Sources

EXAMPLES = """\
examples:
  dockyard-k8s plan examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml     # plan.nodePools
  kubectl get nodes -o yaml > nodes.yaml; kubectl get pods -A -o yaml > pods.yaml
  dockyard-k8s plan examples/grpo_swe.yaml --nodes nodes.yaml --nodes pods.yaml
  dockyard-k8s plan examples/grpo_swe.yaml --live --context prod   # the cluster's nodes and running pods, now
  dockyard-k8s plan examples/grpo_swe.yaml --set kuberay.trainer.replicas=1 -o json
  kubectl get clusterqueues,cohorts,resourceflavors,topologies,workloadpriorityclasses -o yaml > kueue.yaml
  kubectl get localqueues,workloads -A -o yaml > queues.yaml
  dockyard-k8s plan examples/grpo_swe.yaml --kueue kueue.yaml --kueue queues.yaml   # Kueue admission, then nodes
  dockyard-k8s plan --list-instance-types

exit codes: 0 every pod fits (and Kueue admits the run), 1 some pod stays pending or Kueue does not
admit the run now, 2 bad input. --kueue without a node inventory gives Kueue's verdict alone
(node fit: not checked).
"""


def register(sub: Any) -> None:
    p = sub.add_parser("plan",
                       description="Place every pod the run would create (Ray head, worker groups, submitter, "
                                   "sandbox replicas) on a node inventory with the default scheduler's filters "
                                   "and the namespace quota, and say per group what is placed, where, and why "
                                   "the rest would stay Pending.",
                       epilog=TARGET_HELP + "\n" + EXAMPLES)
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
    p.add_argument("--wide", action="store_true", help="list node names instead of pools")
    p.add_argument("--list-instance-types", action="store_true", help="print the built-in instance catalogue")


def run(args: argparse.Namespace) -> int:
    if args.list_instance_types:
        for name in catalog.names():
            print(catalog.describe(name))
        return 0

    targets = load_targets(args)
    objects = [o.data for o in targets.objects]
    chosen = sources.choose_sources(targets.sections["plan"], live=args.live, node_files=args.nodes,
                                    kueue_files=args.kueue)
    inventory: Inventory | None  # None: --kueue alone, Kueue's admission without the node fit
    if chosen.inventory == sources.LIVE:
        inventory, kueue = _fetch_live(args, objects, chosen)
    else:
        inventory, kueue = sources.offline_inventory(chosen, targets.sections["plan"]), chosen.kueue
    kueue = sources.kueue_input(objects, kueue)
    result = sources.plan_run(objects, inventory, kueue, atomic_gangs=args.gang, kueue_files=args.kueue,
                              manifest_files=None if targets.rendered else [args.recipe, *args.overrides])
    print(_report(result, args.output, args.wide), end="")
    return result.exit_code


def _report(result: PlanResult | KueuePlan, output: str, wide: bool) -> str:
    if output != "json":
        return kueue_report.text(result, wide) if isinstance(result, KueuePlan) else report.text(result, wide)

    return dump_json(kueue_report.as_json(result) if isinstance(result, KueuePlan) else report.as_json(result))


def _fetch_live(args: argparse.Namespace, objects: list[dict[str, Any]], chosen: Sources
                ) -> tuple[Inventory, KueueInput | None]:
    """The live cluster's nodes, running pods and quotas (and its Kueue objects for a queued run)."""
    # plan is offline but for --live: the cluster client is imported here alone (test_offline_imports)
    from dockyard_k8s.cli._live import connect
    from dockyard_k8s.live.doctor import cluster_inventory_objects
    from dockyard_k8s.live.kueue import kueue_installed, kueue_objects

    with connect(args) as client:
        namespaces = sources.run_namespaces(objects, client.default_namespace)
        where = sources.live_source(client.context)
        inventory = sources.live_inventory(cluster_inventory_objects(client, objects, namespaces), where)
        if not sources.wants_live_kueue(objects, chosen):
            return inventory, chosen.kueue
        listed = kueue_objects(client, namespaces) if kueue_installed(client) else None
        return inventory, sources.live_kueue(listed, where)
