"""``dockyard-k8s status``: the run on one screen (one LIST per kind, never one request per pod)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from dockyard_k8s.cli._live import command_text, connect, say, say_phases, say_pods
from dockyard_k8s.cli._output import add_output_arg
from dockyard_k8s.cli._runargs import add_run_args, live_epilog, load_bundle, run_name_arg
from dockyard_k8s.errors import EXIT_FAILURE
from dockyard_k8s.live import runs
from dockyard_k8s.live.kinds import KINDS
from dockyard_k8s.live.kueue import workload_state
from dockyard_k8s.live.orchestrate import status_doc
from dockyard_k8s.live.record import read_record, self_deleted
from dockyard_k8s.output import document_text
from dockyard_k8s.render.record import record_name

EXAMPLES = """\
examples:
  dockyard-k8s status examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s status recipe.yaml -o json | jq .fleets
  dockyard-k8s status grpo-swe -n rl-research           # by run name: no launch files needed
"""


def register(sub: Any) -> None:
    p = sub.add_parser("status",
                       description="RayJob jobStatus/jobDeploymentStatus/reason/message, RayCluster conditions, "
                                   "the Kueue Workload of a queued run (queued with its position, admitted with "
                                   "flavors, evicted and why, MultiKueue's worker cluster), desired/scheduled/ready "
                                   "pods per fleet, and the warnings that explain anything not ready. Exit 1 when "
                                   "nothing of the run exists.",
                       epilog=live_epilog(EXAMPLES, by_name=True))
    add_run_args(p, by_name=True, cluster=True)
    add_output_arg(p, ("text", "json", "yaml"))


def run(args: argparse.Namespace) -> int:
    name = run_name_arg(args)
    bundle = None if name else load_bundle(args)
    with connect(args) as client:
        if name:
            ns, run_name = args.namespace or client.default_namespace, name
            ref = runs.find_run(client, ns, run_name)
        else:
            assert bundle is not None
            ns, run_name = bundle.run.namespace, bundle.run.name
            record = read_record(client.get(KINDS["ConfigMap"], ns, record_name(run_name)))
            ref = runs.RunRef(ns, run_name, bundle.objects, record)
        view, record = runs.status(client, ref), ref.record
        near = runs.near_run(client, ns, run_name) if name and not ref.found else ""
    found = any(view.objects.values()) or record is not None
    ended = self_deleted(record, view.of_kind("RayJob"))  # gone: its DeleteSelf rules say how it ended
    for note in view.notes:
        print(note, file=sys.stderr)
    if args.output in ("json", "yaml"):
        doc = {**status_doc(view, ns), "launch": record.launch if record else None,
               "endedBy": ended.as_dict() if ended else None}
        print(document_text(doc, args.output), end="")
        return 0 if found else EXIT_FAILURE
    if not found:
        say(f"nothing of run {run_name} in namespace {ns} (label dockyard-k8s/run={run_name}){near}")
        say(f"  start it: {command_text(args, 'run')}" if not name else
            "  `dockyard-k8s runs -A` lists the runs of every namespace")
        return EXIT_FAILURE
    say(f"run {run_name} in {ns}" + (f" (context {client.context})" if client.context else ""))
    if record is not None:
        say(launched_with(record, ns, run_name))
    if ended is not None and record is not None:  # instead of the RayJob's own line: exit 0, as for one still there
        say(f"RayJob {ended.name}: {ended.state}; {ended.summary}; launched {record.created or 'at a time unknown'}")
    print_view(view)
    return 0


def launched_with(record: Any, ns: str, run: str) -> str:
    """How the run was launched, as a command line (values of credentials were redacted)."""
    launch = record.launch
    parts = [str(launch.get("recipeFile") or "?")]
    for flag, key in (("-f", "infraFiles"), ("--set", "sets"), ("--set-file", "setFiles")):
        for s in launch.get(key) or []:
            parts += [flag, str(s)]
    parts += [str(o) for o in launch.get("overrides") or [] if not str(o).startswith("++env.code.sandbox_urls")]
    layers = " < ".join(str(s) for s in launch.get("sources") or [])
    return (f"launched with dockyard-k8s {launch.get('launcherVersion', '?')} ({launch.get('mode', '?')} mode, "
            f"{record.created or 'time unknown'}): {shlex.join(parts)}\n"
            + (f"  infra layers: {layers}\n" if layers else "")
            + f"  resolved infra + recipe: kubectl -n {ns} get configmap {run}-launch -o yaml")


def print_view(view: Any) -> None:
    say_phases(view, ("RayJob", "MPIJob", "Job", "RayCluster", "StatefulSet"))
    workload = view.workload()
    if workload is not None:  # queued with Kueue: its Workload says why it waits, or where it runs
        for line in workload_state(workload).lines(view.queue_position, view.queue_counts):
            say(line)
    say_pods(view)
