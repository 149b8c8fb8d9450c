"""``dockyard-k8s status``: the run on one screen (one LIST per kind, never one request per pod)."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._live import CLUSTER_HELP, add_cluster_args, command_text, connect, print_findings, run_of, say
from dockyard_k8s.cli._output import table
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, load_bundle
from dockyard_k8s.errors import EXIT_FAILURE

EXAMPLES = """\
examples:
  dockyard-k8s status examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s status recipe.yaml -o json | jq .fleets
"""


def register(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("status",
                       description="RayJob jobStatus/jobDeploymentStatus/reason/message, RayCluster conditions, "
                                   "desired/scheduled/ready pods per fleet, and the warnings that explain anything "
                                   "not ready. Exit 1 when nothing of the run exists.",
                       epilog=RUN_ARGS_HELP + "\n" + CLUSTER_HELP + "\n" + EXAMPLES, formatter_class=formatter)
    add_run_args(p)
    add_cluster_args(p)
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dockyard_k8s.live.launch import status
    from dockyard_k8s.live.orchestrate import status_doc
    from dockyard_k8s.live.progress import phase_of
    from dockyard_k8s.render.serialize import dump_json

    bundle = load_bundle(args)
    ns, run_name = run_of(bundle)
    with connect(args) as client:
        view = status(client, bundle)
    found = any(view.objects.get(k) for k in view.objects)
    if args.output == "json":
        print(dump_json(status_doc(view, ns)), end="")
        return 0 if found else EXIT_FAILURE
    if not found:
        say(f"nothing of run {run_name} in namespace {ns} (label dockyard-k8s/run={run_name})")
        say(f"  start it: {command_text(args, 'run')}")
        return EXIT_FAILURE
    say(f"run {run_name} in {ns}" + (f" (context {client.context})" if client.context else ""))
    for kind in ("RayJob", "MPIJob", "Job", "RayCluster", "StatefulSet"):
        for obj in view.of_kind(kind):
            phase = phase_of(obj, view.pods)
            say(f"{kind} {obj['metadata']['name']}: {phase.summary}")
            for line in phase.details:
                say(f"  {line}")
    rows = [[r.fleet, r.desired, r.pods, r.scheduled, r.ready, r.done, r.failed] for r in view.fleets()]
    if rows:
        say("")
        say(table(rows, ["fleet", "desired", "pods", "scheduled", "ready", "completed", "failed"]))
    findings = view.findings()
    if findings:
        say("\nproblems")
        print_findings(findings)
    return 0
