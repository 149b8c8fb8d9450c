"""``dockyard-k8s dev connect|stop|secrets``: a CPU dev pod in the run's namespace."""

from __future__ import annotations

import argparse
import getpass
import subprocess
from collections.abc import Mapping
from typing import Any

from dockyard_k8s.cli._live import connect, say
from dockyard_k8s.cli._runargs import CLUSTER_HELP, RUN_ARGS_HELP, add_run_args, load_bundle
from dockyard_k8s.errors import UsageError
from dockyard_k8s.live.dev import (
    decode_secret_data,
    describe_secret,
    dev_pod,
    dev_secret,
    parse_secret_args,
    secret_name,
    wait_pod_running,
)
from dockyard_k8s.live.kinds import KINDS, POD
from dockyard_k8s.live.portforward import kubectl_base

EXAMPLES = """\
examples:
  dockyard-k8s dev connect recipe.yaml            # create the dev pod if absent, open a shell
  dockyard-k8s dev secrets recipe.yaml HF_TOKEN WANDB_API_KEY   # asked for, not echoed
  dockyard-k8s dev secrets -n rl-research --from-file .env
  dockyard-k8s dev stop recipe.yaml
"""


def _common(p: argparse.ArgumentParser) -> None:
    add_run_args(p, recipe_required=False, cluster=True)
    p.add_argument("--name", default="dockyard-dev", help="dev pod name (default dockyard-dev)")


def register(sub: Any) -> None:
    p = sub.add_parser("dev",
                       description="A CPU-only pod in the run's namespace (image and pull secrets from the infra "
                                   "spec, or --image) for cloning, downloading models and debugging; its Secret is "
                                   "mounted as files and environment.",
                       epilog=CLUSTER_HELP + "\n" + EXAMPLES)
    ds = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    conn = ds.add_parser("connect", help="create the dev pod if absent and open a shell (kubectl exec -it)",
                         epilog=RUN_ARGS_HELP)
    _common(conn)
    conn.add_argument("--image", help="image (default: infra.image)")
    conn.add_argument("--cpu", default="2", help="cpu request = limit (default 2)")
    conn.add_argument("--memory", default="8Gi", help="memory request = limit (default 8Gi)")
    conn.add_argument("--pvc", help="PersistentVolumeClaim to mount at /workspace")
    conn.add_argument("--shell", default="", help="command to run instead of bash (or sh)")
    conn.add_argument("--timeout", type=float, default=600, help="seconds to wait for the pod (default 600)")
    conn.set_defaults(func=dev_connect)
    stop = ds.add_parser("stop", help="delete the dev pod (its Secret stays)")
    _common(stop)
    stop.set_defaults(func=dev_stop)
    sec = ds.add_parser("secrets", help="create/update the dev Secret; values are never printed",
                        description="KEY=VALUE sets a key; a bare KEY asks for the value without echo (keeps it out "
                                    "of shell history); --from-file reads a .env file or KEY=PATH. Existing keys are "
                                    "kept.")
    _common(sec)
    sec.add_argument("--from-file", action="append", default=[], metavar="FILE|KEY=PATH",
                     help="a .env file of KEY=VALUE lines, or KEY=PATH for a file's content (repeatable)")
    sec.set_defaults(func=dev_secrets)


def _namespace(args: argparse.Namespace, client: Any, bundle: Any) -> str:
    return bundle.run.namespace if bundle is not None else str(args.namespace or client.default_namespace)


def dev_connect(args: argparse.Namespace) -> int:
    bundle = load_bundle(args) if args.recipe else None
    with connect(args) as client:
        ns = _namespace(args, client, bundle)
        infra: Mapping[str, Any] = bundle.run.infra["infra"] if bundle else {}
        image = args.image or infra.get("image")
        if not image:
            raise UsageError("dev connect needs an image: RECIPE (infra.image) or --image")
        if client.get(POD, ns, args.name) is None:
            pod = dev_pod(ns, name=args.name, image=image, pull_secrets=infra.get("imagePullSecrets", []),
                          cpu=args.cpu, memory=args.memory, pvc=args.pvc,
                          image_pull_policy=infra.get("imagePullPolicy", "IfNotPresent"))
            client.apply(pod)
            say(f"created Pod {ns}/{args.name}")
        wait_pod_running(client, ns, args.name, timeout=args.timeout, say=say)
    shell = ["sh", "-c", args.shell or "command -v bash >/dev/null && exec bash -l || exec sh -l"]
    cmd = [*kubectl_base(args.context, args.kubeconfig), "exec", "-it", "-n", ns, args.name, "--", *shell]

    return subprocess.call(cmd)


def dev_stop(args: argparse.Namespace) -> int:
    bundle = load_bundle(args) if args.recipe else None
    with connect(args) as client:
        ns = _namespace(args, client, bundle)
        gone = client.delete(POD, ns, args.name)
    say(f"deleted Pod {ns}/{args.name}" if gone else f"no dev pod {ns}/{args.name} (nothing to stop)")
    return 0


def dev_secrets(args: argparse.Namespace) -> int:
    # The positional KEY=VALUE arguments arrive as recipe overrides: with no recipe, the
    # first one lands in `recipe`.
    pairs = list(args.overrides)
    bundle = None
    if args.recipe and (args.recipe.endswith((".yaml", ".yml"))):
        bundle = load_bundle(argparse.Namespace(**{**vars(args), "overrides": []}))
    elif args.recipe:
        pairs.insert(0, args.recipe)

    values = parse_secret_args(pairs, args.from_file, prompt=getpass.getpass)
    with connect(args) as client:
        ns = _namespace(args, client, bundle)
        name = secret_name(args.name)
        current = decode_secret_data(client.get(KINDS["Secret"], ns, name))
        merged = {**current, **values}
        client.apply(dev_secret(ns, args.name, merged), force=True)
    say(describe_secret(name, merged, values))
    return 0
