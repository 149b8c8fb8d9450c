"""``dockyard-k8s cluster up|down|list|dashboard``: bringup mode's long-lived RayCluster + sandbox."""

from __future__ import annotations

import argparse
import sys
import threading
import webbrowser
from typing import Any

from dockyard_k8s.cli import cmd_down, cmd_run
from dockyard_k8s.cli._live import connect, ray_target, say, warn
from dockyard_k8s.cli._output import add_output_arg, table
from dockyard_k8s.cli._runargs import CLUSTER_HELP, RUN_ARGS_HELP, add_cluster_args, add_run_args, load_bundle
from dockyard_k8s.cli.cmd_down import add_down_args
from dockyard_k8s.cli.cmd_run import add_follow_args
from dockyard_k8s.config.loader import Setting
from dockyard_k8s.live.launch import list_clusters
from dockyard_k8s.live.progress import raycluster_phase
from dockyard_k8s.live.rayhead import ray_jobs, token_source
from dockyard_k8s.output import document_text
from dockyard_k8s.render.meta import RUN_LABEL

EXAMPLES = """\
examples:
  dockyard-k8s cluster up recipe.yaml --infra infra.yaml      # RayCluster + sandbox, wait until ready
  dockyard-k8s cluster dashboard recipe.yaml                  # port-forward 8265, print the URL
  dockyard-k8s cluster list -n rl-research
  dockyard-k8s cluster down recipe.yaml
"""


def register(sub: Any) -> None:
    p = sub.add_parser("cluster",
                       description="Manage the long-lived RayCluster of bringup mode (launch.mode is forced to "
                                   "bringup), then send jobs to it with `dockyard-k8s job submit`.",
                       epilog=CLUSTER_HELP + "\n" + EXAMPLES)
    cs = p.add_subparsers(title="actions", metavar="ACTION", required=True)

    up = cs.add_parser("up", help="apply the RayCluster + sandbox and wait until the cluster is ready",
                       epilog=RUN_ARGS_HELP)
    add_run_args(up, cluster=True)
    add_follow_args(up)
    up.add_argument("--replace", action="store_true", help="delete the cluster first, then apply")
    up.set_defaults(func=cluster_up)

    down = cs.add_parser("down", help="delete the cluster and everything else of the run", epilog=RUN_ARGS_HELP)
    add_run_args(down, by_name=True, cluster=True)
    add_down_args(down)
    down.set_defaults(func=cluster_down)

    ls = cs.add_parser("list", help="RayClusters made by dockyard-k8s")
    ls.add_argument("-n", "--namespace", help="namespace (default: the context's)")
    ls.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    ls.add_argument("-l", "--selector", default="", metavar="SELECTOR", help="label selector (kubectl syntax)")
    add_output_arg(ls, ("text", "json", "yaml"))
    add_cluster_args(ls)
    ls.set_defaults(func=cluster_list)

    dash = cs.add_parser("dashboard", help="port-forward the head's dashboard (8265) and print the URL",
                         description="Runs `kubectl port-forward` to <cluster>-head-svc:8265 until Ctrl-C.",
                         epilog=RUN_ARGS_HELP)
    add_run_args(dash, recipe_required=False, cluster=True)
    dash.add_argument("--cluster", metavar="NAME", help="a RayCluster by name, instead of RECIPE")
    dash.add_argument("--open", action="store_true", help="also open the URL in a browser")
    dash.set_defaults(func=cluster_dashboard)


def _bringup(args: argparse.Namespace) -> list[Setting]:
    """``cluster`` commands act on the bringup shape; hints to follow it say so too."""
    args.implied_sets = ["launch.mode=bringup"]
    return [Setting(("launch", "mode"), "bringup", "cluster up/down (launch.mode: bringup)")]


def cluster_up(args: argparse.Namespace) -> int:
    return cmd_run.run(args, _bringup(args))


def cluster_down(args: argparse.Namespace) -> int:
    return cmd_down.run(args, _bringup(args))


def cluster_list(args: argparse.Namespace) -> int:
    with connect(args) as client:
        ns = None if args.all_namespaces else (args.namespace or client.default_namespace)
        items = list_clusters(client, ns, selector=args.selector)
    if args.output in ("json", "yaml"):
        print(document_text({"apiVersion": "v1", "kind": "List", "items": items}, args.output), end="")
        return 0
    if not items:
        say(f"no RayCluster made by dockyard-k8s in {ns or 'any namespace'}")
        return 0
    rows, why = [], []
    for rc in items:
        meta, st = rc.get("metadata") or {}, rc.get("status") or {}
        state = cluster_state(rc)
        if state not in ("ready", "suspended", "-"):
            why.append(f"  {meta.get('namespace')}/{meta.get('name')}: {raycluster_phase(rc, []).summary}")
        rows.append([meta.get("namespace"), meta.get("name"), (meta.get("labels") or {}).get(RUN_LABEL, "-"),
                     state, f"{st.get('readyWorkerReplicas', 0)}/{st.get('desiredWorkerReplicas', 0)}",
                     st.get("desiredGPU", "-")])
    say(table(rows, ["namespace", "name", "run", "state", "workers", "gpus"]))
    for line in why:
        say(line)
    return 0


def cluster_state(rc: dict[str, Any]) -> str:
    """The STATE column: ready only when it is ready now (live/progress ``raycluster_phase``: the
    head pod Ready, the workers up). KubeRay's ``status.state: ready`` is set once and never
    cleared, so it stays while the head pod is not Ready (restarting, failing its probe)."""
    if not rc.get("status"):
        return "-"
    phase = raycluster_phase(rc, [])
    return phase.state if phase.state in ("ready", "suspended") else "not ready"


def cluster_dashboard(args: argparse.Namespace) -> int:
    bundle = load_bundle(args) if args.recipe else None
    target = ray_target(args)
    with connect(args) as client, ray_jobs(target, bundle, client, on_forward=warn) as ray:
        url = ray.address
        source = token_source(target, bundle, client)
        if source is not None and ray.auth_mode() == "token":
            ray.list()  # the token is accepted (a 403 here says it is not)
            say(f"Ray token auth: the dashboard asks for the token once; {source.how_to_read()}")
        say(f"Ray dashboard: {url}   (Ctrl-C to close the port-forward)")
        if args.open:
            webbrowser.open(url)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:  # closing the dashboard is the normal way out: exit 0
            print("closed", file=sys.stderr)
    return 0
