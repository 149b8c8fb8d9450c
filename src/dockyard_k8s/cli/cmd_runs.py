"""``dockyard-k8s runs``: every run of the namespace (or all), as ``kubectl get`` lists objects."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from dockyard_k8s.cli._live import connect, say
from dockyard_k8s.cli._output import add_output_arg, table
from dockyard_k8s.cli._runargs import CLUSTER_HELP, add_cluster_args
from dockyard_k8s.live.runs import age, list_runs
from dockyard_k8s.output import document_text

EXAMPLES = """\
examples:
  dockyard-k8s runs                       # the context's namespace
  dockyard-k8s runs -n rl-research -l team=rl
  dockyard-k8s runs -A -o json | jq '.[] | select(.state == "failed") | .name'
  dockyard-k8s runs -n rl-research -l team=rl -o name | xargs -n1 dockyard-k8s down -n rl-research
then, by name: dockyard-k8s status RUN | logs RUN | down RUN | job logs RUN
"""


def register(sub: Any) -> None:
    p = sub.add_parser("runs",
                       description="Every run of the namespace: its launch mode, state, GPUs requested, age, and its "
                                   "Kueue Workload's state when Kueue queues it. Runs launched by `run`/`cluster up` "
                                   "and runs applied with `render | kubectl apply` alike (found by their labels); "
                                   "one LIST per kind, whatever the number of pods.",
                       epilog=CLUSTER_HELP + "\n" + EXAMPLES)
    p.add_argument("-n", "--namespace", help="namespace (default: the context's)")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    p.add_argument("-l", "--selector", default="", metavar="SELECTOR",
                   help="only runs whose objects carry these labels (kubectl syntax: team=rl,tier!=dev)")
    add_output_arg(p, ("text", "wide", "name", "json", "yaml"),
                   help_extra="; wide adds each run's one-line summary, name prints one run per line for xargs")
    add_cluster_args(p)


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        ns = None if args.all_namespaces else (args.namespace or client.default_namespace)
        rows = list_runs(client, ns, selector=args.selector)
    now = dt.datetime.now(dt.UTC)
    if args.output in ("json", "yaml"):
        print(document_text([r.as_dict(now) for r in rows], args.output), end="")
        return 0
    if args.output == "name":  # kubectl's -o name: nothing but the names (a script's input)
        for r in rows:
            print(r.name)
        return 0
    if not rows:
        say(f"no runs in {'any namespace' if ns is None else f'namespace {ns}'}")
        return 0
    queued = any(r.queue for r in rows)
    headers = [*(["namespace"] if ns is None else []), "name", "mode", "state", "gpus", "age",
               *(["queue"] if queued else []), *(["summary"] if args.output == "wide" else [])]
    body = [[*([r.namespace] if ns is None else []), r.name, r.mode, r.state, "-" if r.gpus is None else r.gpus,
             age(r.created, now), *([r.queue or "-"] if queued else []),
             *([r.summary or "-"] if args.output == "wide" else [])] for r in rows]
    say(table(body, headers))
    return 0
