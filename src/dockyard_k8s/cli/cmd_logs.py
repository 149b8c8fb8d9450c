"""``dockyard-k8s logs``: logs of a fleet or a pod, several pods merged with ``fleet/pod`` prefixes."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._live import connect, log_window, print_logs
from dockyard_k8s.cli._runargs import add_log_args, add_run_args, live_epilog, load_bundle, run_name_arg
from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.live import runs
from dockyard_k8s.live.kueue import list_workloads, multikueue_lines, queued, workload_of, workload_state
from dockyard_k8s.live.progress import main_object

EXAMPLES = """\
examples:
  dockyard-k8s logs recipe.yaml                      # the RayJob submitter (the job's output), else the head
  dockyard-k8s logs recipe.yaml --fleet trainer --follow --tail 100
  dockyard-k8s logs recipe.yaml --pod grpo-swe-abcde-head-x7k2p --previous
  dockyard-k8s logs grpo-swe -n rl-research --fleet sandbox     # by run name
"""


def register(sub: Any) -> None:
    p = sub.add_parser("logs",
                       description="Print the logs of every pod of a fleet (or one pod), prefixed fleet/pod when "
                                   "there are several. Without --fleet/--pod: the RayJob submitter if there is one "
                                   "(it holds the job's output after the cluster is gone), else the head.",
                       epilog=live_epilog(EXAMPLES, by_name=True))
    add_run_args(p, by_name=True, cluster=True)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--fleet", choices=("head", "trainer", "inference", "sandbox", "submitter"))
    which.add_argument("--pod", metavar="NAME", help="one pod of the run")
    p.add_argument("-c", "--container", help="container (default: the pod's default or first container)")
    p.add_argument("-l", "--selector", default="", metavar="SELECTOR",
                   help="only the run's pods with these labels too (kubectl syntax), e.g. -l app=x")
    add_log_args(p)


def run(args: argparse.Namespace) -> int:
    if not args.recipe:
        raise UsageError("logs needs RECIPE or RUN (`dockyard-k8s runs` lists the runs)")
    since = log_window(args)
    name = run_name_arg(args)
    bundle = None if name else load_bundle(args)
    with connect(args) as client:
        if name:
            ns = args.namespace or client.default_namespace
            ref = runs.find_run(client, ns, name)
            if not ref.found:
                raise runs.no_run(client, ref)
        else:
            assert bundle is not None
            ns, run_name = bundle.run.namespace, bundle.run.name
            ref = runs.RunRef(ns, run_name, bundle.objects, None)
        try:
            chosen = runs.log_pods(client, ref, fleet=args.fleet, pod=args.pod, selector=args.selector)
        except ClusterError as e:
            raise _why_no_pods(client, ref.objects, ns, e) from None
        print_logs(args, client, ns, chosen, since)
    return 0


def _why_no_pods(client: Any, objects: list[dict[str, Any]], ns: str, error: ClusterError) -> ClusterError:
    """No pod to read: when the run is queued, Kueue's Workload says why (not admitted yet, or
    dispatched by MultiKueue to a worker cluster, where the pods are)."""
    main = main_object(objects)
    if main is None or not queued(objects):
        return error
    workload = workload_of(list_workloads(client, ns), main)
    if workload is None:
        return error
    state = workload_state(workload)
    lines = [state.summary(), *(line.strip() for line in multikueue_lines(state.worker_cluster))] \
        if state.worker_cluster else [state.summary()]
    return ClusterError(str(error), obj=error.obj, status=error.status, hint="\n      ".join(lines))
