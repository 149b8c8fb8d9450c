"""Arguments every run-shaped command shares: RECIPE, --infra, --set, -n, overrides; the live
commands' cluster flags and the log flags."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from dockyard_k8s.bundle import Bundle, build_bundle
from dockyard_k8s.config.loader import Layers, Setting
from dockyard_k8s.errors import UsageError
from dockyard_k8s.names import is_dns1123_label
from dockyard_k8s.render.record import Invocation

RUN_ARGS_HELP = """\
configuration layers, last wins (helm style: maps merge, anything else replaces, null unsets):
  shipped defaults < the kubeconfig context's namespace (live commands)
  < ~/.config/dockyard-k8s/defaults.yaml ($DOCKYARD_K8S_DEFAULTS)
  < -f/--infra FILE... (default: RECIPE's sibling <name>.infra.yaml; later files win)
  < --set KEY=VALUE < --set-string KEY=VALUE < --set-file KEY=PATH < -n
recipe overrides after RECIPE, Hydra style (also passed to the job):
  key=value (change)  +key=value (add)  ++key=value (add or change)  ~key (delete)
"""


def add_layer_args(parser: argparse.ArgumentParser, *, example: str) -> None:
    """-f/--infra (repeatable), --set, --set-string, --set-file, -n: the infra layers."""
    parser.add_argument("-f", "--infra", metavar="FILE", action="append", default=[],
                        help="infra spec YAML (where to run it); repeatable, later files win")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override an infra key, e.g. --set {example} (repeatable; YAML-typed value, "
                             "null unsets)")
    parser.add_argument("--set-string", dest="set_strings", action="append", default=[], metavar="KEY=VALUE",
                        help="like --set, the value always a string (--set-string infra.labels.build=0755)")
    parser.add_argument("--set-file", dest="set_files", action="append", default=[], metavar="KEY=PATH",
                        help="an infra key set to a file's text (--set-file launch.entrypoint=cmd.txt)")
    parser.add_argument("-n", "--namespace", help=NAMESPACE_HELP)


NAMESPACE_HELP = "namespace (same as --set infra.namespace=NS)"  # -n: the last layer (load_bundle)
RUN_NAME_HELP = """\
RUN instead of RECIPE: the name of a run on the cluster (`dockyard-k8s runs` lists them), found by
  its label in -n NS (default: the context's namespace); no launch files needed
"""


def add_run_args(parser: argparse.ArgumentParser, *, recipe_required: bool = True, by_name: bool = False,
                 cluster: bool = False) -> None:
    """``-f/--infra`` is an infra file in every command (helm's -f). ``by_name``: the positional
    may name a run on the cluster (:func:`run_name_arg`); ``cluster``: a live command's, with the
    cluster flags (:func:`add_cluster_args`)."""
    parser.add_argument("recipe", metavar="RECIPE|RUN" if by_name else "RECIPE",
                        nargs=None if recipe_required else "?",
                        help="recipe YAML, or the name of a run on the cluster" if by_name else
                        "recipe YAML (what to train)")
    parser.add_argument("overrides", nargs="*", default=[], metavar="KEY=VALUE",  # default: not "required"
                        help="recipe overrides (Hydra style)")
    add_layer_args(parser, example="kuberay.trainer.replicas=4")
    if cluster:
        add_cluster_args(parser)


CLUSTER_HELP = """\
cluster access: the current kubeconfig context ($KUBECONFIG files merged as kubectl merges them,
  or ~/.kube/config, or in-cluster), or --context / --kubeconfig, as for kubectl. Namespace: -n,
  else the infra spec's infra.namespace, else the context's namespace, else default.
exit codes: 0 ok, 1 failure (failed job, API error, doctor check failed), 2 bad input, 130 interrupted
"""


def live_epilog(examples: str, *, by_name: bool = False) -> str:
    """A live run command's help epilog: the layers (``by_name``: and RUN), cluster access, ``examples``."""
    return RUN_ARGS_HELP + (RUN_NAME_HELP if by_name else "") + "\n" + CLUSTER_HELP + "\n" + examples


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)")
    parser.set_defaults(live=True)  # load_bundle: the context's namespace when none is given


def add_apply_args(parser: argparse.ArgumentParser, *, until: str, keeps: str) -> None:
    """``run``'s, ``cluster up``'s and ``serve up``'s: how to apply, and how long to follow (``until``
    what; what ``keeps`` going when following stops)."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--wait", dest="detach", action="store_false", default=False,
                      help=f"follow until {until} (default)")
    mode.add_argument("--detach", action="store_true", help="return after applying, printing how to follow")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help=f"stop following after SECONDS (exit 1; {keeps})")
    parser.add_argument("--fail-fast", action="store_true",
                        help="exit 1 at the first problem that cannot heal (bad image, missing secret, crash loop)")
    parser.add_argument("--dry-run", choices=("client", "server"),
                        help="client: list what would be applied (no cluster contact); server: dryRun=All")
    parser.add_argument("--force-conflicts", action="store_true",
                        help="take over fields another manager owns (server-side apply force)")


def add_log_args(parser: argparse.ArgumentParser) -> None:
    """``logs``' and ``serve logs``' flags, as kubectl logs has them."""
    parser.add_argument("--follow", action="store_true", help="stream new lines until the pods end")
    parser.add_argument("--tail", type=int, metavar="N", help="last N lines of each pod")
    parser.add_argument("--since", metavar="DURATION", help="only newer lines, e.g. 30s, 10m, 1h")
    parser.add_argument("--previous", action="store_true", help="the previous (crashed) container instance")


def load_bundle(args: argparse.Namespace, values: Sequence[Setting] = (), *, fit: bool = True) -> Bundle:
    """The run of RECIPE with every layer, built once; ``values`` are what the command itself
    forces (typed, on top of ``--set``), then ``-n``.

    Live commands (their parser has the cluster flags) use the kubeconfig context's namespace,
    as kubectl does, when neither ``-n`` nor a user layer (defaults file, infra file, ``--set``)
    names one: it is a layer below the user's, read with the target the client connects to
    (:func:`~dockyard_k8s.cli._live.cluster_target`). Offline commands never read the
    kubeconfig (``render`` output stays the same on every machine)."""
    typed = list(values)
    under: list[Setting] = []
    if args.namespace:
        typed.append(Setting(("infra", "namespace"), args.namespace, f"-n {args.namespace}"))
    elif getattr(args, "live", False):
        from dockyard_k8s.cli._live import cluster_target  # live commands only: offline ones never import live/

        namespace = cluster_target(args).namespace
        if namespace:
            origin = f"<the kubeconfig context's namespace {namespace}>"  # <...>: not the user's layer
            under.append(Setting(("infra", "namespace"), namespace, origin))
    return build_bundle(args.recipe, args.infra, layers_of(args, typed, under), fit=fit)


def layers_of(args: argparse.Namespace, values: Sequence[Setting] = (), under: Sequence[Setting] = ()) -> Layers:
    """The layers the command line gives (serve's commands have ``--set`` alone)."""
    return Layers(args.sets, getattr(args, "set_strings", ()), getattr(args, "set_files", ()),
                  getattr(args, "overrides", ()), os.environ, values, under)


def invocation_of(args: argparse.Namespace) -> Invocation:
    """The files and ``--set`` layers as given, for the launch record."""
    return Invocation(tuple(getattr(args, "infra", ())), (*args.sets, *getattr(args, "set_strings", ())),
                      tuple(getattr(args, "set_files", ())))


def run_name_arg(args: argparse.Namespace) -> str | None:
    """The run name when the positional names a run on the cluster rather than a recipe file
    (a file that exists, or a name ending in .yaml/.yml/.json or holding a '/', is a recipe).

    Raises:
        UsageError: neither a recipe nor a run name, or a run name with launch-file flags.
    """
    value = getattr(args, "recipe", None)
    if not value or os.path.isfile(value) or value.endswith((".yaml", ".yml", ".json")) or "/" in value:
        return None
    if not is_dns1123_label(value):  # a run name (launch.name, a DNS-1035 label) is one; a recipe is a file
        raise UsageError(f"{value!r} is neither a recipe file (no such file) nor a run name (lower-case letters, "
                         "digits and '-': `dockyard-k8s runs` lists the runs)")
    layers = [flag for flag, dest in (("--infra", "infra"), ("--set", "sets"), ("--set-string", "set_strings"),
                                      ("--set-file", "set_files"), ("KEY=VALUE overrides", "overrides"))
              if getattr(args, dest, None)]
    if layers:
        raise UsageError(f"{value} names a run on the cluster, which keeps what it was launched with: "
                         f"{', '.join(layers)} {'need' if len(layers) > 1 else 'needs'} a RECIPE file")
    return str(value)
