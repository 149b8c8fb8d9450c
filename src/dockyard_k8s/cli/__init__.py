"""The command line: parse, call the library, print, return an exit code.

Each command lives in ``cmd_<name>.py`` with ``register(subparsers)`` adding its
parser and ``run(args)`` its handler (a command with actions sets each action's ``func``); its
one-line summary is in ``COMMANDS`` here.
What several commands share:

    _runargs.py   RECIPE [-f FILE] [--set K=V] [-n NS]: the run-shaped arguments -> a Bundle
    _targets.py   lint's and plan's inputs: a run, manifest files, or serve specs
    _live.py      cluster flags, connecting, follow-up hints
    _output.py    tables, check marks, the output flags (one meaning everywhere), rendered objects out

Only the invoked command's module is imported: a live command's module imports the cluster
client (``live/``: lightkube, httpx2) at its top, and the offline commands never load it (a
test holds them to it).

Exit codes: 0 ok, 1 failure (invalid objects, lint errors, failed job, API error),
2 bad input or usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from dockyard_k8s import __version__
from dockyard_k8s.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, DockyardError
from dockyard_k8s.suggest import did_you_mean

# name -> one-line summary, in `--help` order. Each lives in cli/cmd_<name>.py; only the
# invoked command's module is imported (the live ones import the cluster client).
COMMANDS = {
    # offline: nothing leaves this machine
    "check": "validate a recipe + infra spec and summarise the run (offline)",
    "render": "print the run's Kubernetes objects in apply order (offline)",
    "validate": "validate Kubernetes manifests offline, strictly (any manifests)",
    "lint": "policy lint + Pod Security Standards levels (offline)",
    "plan": "will every pod schedule? simulate the scheduler on a node inventory",
    "schema": "print the JSON Schema of the infra spec",
    "schemas": "fetch CRD schemas into the cache; list the schemas validation uses",
    "nccl-test": "render (or run) an NCCL all-reduce test on the run's GPU nodes",
    "serve": "a model endpoint, vLLM or SGLang: check/render offline, up/status/logs/test/down live",
    # live: talk to the cluster of the current kubeconfig context
    "doctor": "preflight: can this run work on the current context?",
    "run": "apply the run and follow it until the job ends",
    "runs": "every run of the namespace (or -A): mode, state, GPUs, age, queue",
    "status": "the run on one screen: job status, pods per fleet, problems",
    "logs": "logs of a fleet or a pod of the run (merged, prefixed)",
    "down": "delete every object of the run (idempotent)",
    "cluster": "bringup mode: a long-lived RayCluster + sandbox (up/down/list/dashboard)",
    "job": "Ray jobs on a running cluster (submit/list/logs/stop)",
    "dev": "a CPU dev pod for setup work (connect/stop/secrets)",
    # the shell
    "completion": "print a bash, zsh or fish completion script",
}

DESCRIPTION = """\
dockyard-k8s turns an RL recipe (what to train) and an infra spec (where to run it)
into a KubeRay GPU run with a hardened sandbox pool, validated before it touches a cluster.
"""

EPILOG = """\
examples:
  dockyard-k8s check examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s render examples/grpo_swe.yaml --output-dir build/run --set kuberay.trainer.replicas=4 optimizer.lr=3e-6
  dockyard-k8s lint examples/grpo_swe.yaml && dockyard-k8s plan examples/grpo_swe.yaml
  dockyard-k8s doctor examples/grpo_swe.yaml && dockyard-k8s run examples/grpo_swe.yaml
  dockyard-k8s status examples/grpo_swe.yaml; dockyard-k8s logs examples/grpo_swe.yaml --fleet trainer --follow
  dockyard-k8s serve check examples/llama3_8b_kind.serve.yaml; dockyard-k8s serve render SPEC --output-dir build/llm

exit codes: 0 ok, 1 failure (invalid objects, lint errors, failed job), 2 bad input, 130 interrupted
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


class _Parser(argparse.ArgumentParser):
    """argparse with our formatter (every subparser is a _Parser too) and a "did you mean" for a
    mistyped action or flag (exit 2, as argparse)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(formatter_class=_Formatter, **kwargs)

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
            message = f"{message}{did_you_mean(m.group(1), choices)}"
        elif message.startswith("unrecognized arguments: "):
            flags = [o for a in self._actions for o in a.option_strings]
            hints = [did_you_mean(w.split("=")[0], flags) for w in message.split(": ", 1)[1].split()
                     if w.startswith("--")]
            message += "".join(h for h in hints if h)
        elif message.endswith("required: RECIPE|RUN"):  # status, logs, down...: which runs there are
            message += " (`dockyard-k8s runs` lists the runs of the namespace, `runs -A` of every namespace)"
        super().error(message)


class _Subparsers:
    """``add_subparsers()`` whose ``add_parser`` fills in the one-line summary from COMMANDS and
    the command module's ``run`` as the handler."""

    def __init__(self, sub: Any, module: Any) -> None:
        self._sub, self._module = sub, module

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._sub.add_parser(name, help=COMMANDS[name], **kwargs)
        if hasattr(self._module, "run"):  # a command with actions sets each action's handler
            parser.set_defaults(func=self._module.run)
        return parser


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, that command alone (what running it needs: the top-level
    ``--help`` is built without ``only``, with every command listed but only its summary)."""
    parser = _Parser(prog="dockyard-k8s", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"dockyard-k8s {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is None or name == only:
            module = importlib.import_module(f"dockyard_k8s.cli.cmd_{name.replace('-', '_')}")
            module.register(_Subparsers(sub, module))
    return parser


def _command_parser(parser: argparse.ArgumentParser, args_in: Sequence[str]) -> argparse.ArgumentParser:
    """The (sub)parser of the command and action on the command line: the flags a mistyped
    flag is compared with."""
    current = parser
    for word in args_in:
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            if word.startswith("-"):
                continue
            break
        current = sub.choices[word]
    return current


# The cluster flags kubectl also takes before its command (`kubectl --context prod get pods`).
_CLUSTER_FLAGS = ("--context", "--kubeconfig", "-n", "--namespace")


def _cluster_flags_after_command(args_in: list[str]) -> list[str]:
    """``--context X status RUN`` as ``status RUN --context X``: the leading cluster flags go after
    the command's words (before a ``--``), where the command's parser takes them; a command
    without them (``check``) then says they are unrecognized."""
    moved, i = [], 0
    while i < len(args_in) and args_in[i].split("=", 1)[0] in _CLUSTER_FLAGS:
        step = 1 if "=" in args_in[i] else 2
        moved += args_in[i:i + step]
        i += step
    if not moved:
        return args_in
    rest = args_in[i:]
    cut = rest.index("--") if "--" in rest else len(rest)
    return [*rest[:cut], *moved, *rest[cut:]]


def main(argv: Sequence[str] | None = None) -> int:
    args_in = _cluster_flags_after_command(sys.argv[1:] if argv is None else list(argv))
    if args_in and not args_in[0].startswith("-") and args_in[0] not in COMMANDS:
        # a mistyped command: say so without importing every command module
        print(f"usage: dockyard-k8s COMMAND ...\ndockyard-k8s: error: unknown command '{args_in[0]}'"
              f"{did_you_mean(args_in[0], list(COMMANDS))} (dockyard-k8s --help lists the commands)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    command: list[str] = []
    if args_in[:2] == ["job", "submit"] and "--" in args_in:  # `ray job submit`'s form: the command after --
        cut = args_in.index("--")
        args_in, command = args_in[:cut], args_in[cut + 1:]
    parser = build_parser(args_in[0] if args_in and args_in[0] in COMMANDS else None)
    args, extra = parser.parse_known_args(args_in)
    if command:
        if args.entrypoint:
            _command_parser(parser, args_in).error("give the command once: --entrypoint or after --, not both")
        args.entrypoint = shlex.join(command)
    if extra:  # recipe overrides may come after options: argparse leaves them here
        bad = [e for e in extra if e.startswith("-") or not hasattr(args, "overrides")]
        if bad:
            _command_parser(parser, args_in).error(f"unrecognized arguments: {' '.join(bad)}")
        args.overrides = [*args.overrides, *extra]
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, so that a reader gone away (`| head`) is handled below
        return code
    except DockyardError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `dockyard-k8s render | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run() -> NoReturn:
    """The ``dockyard-k8s`` program: :func:`main` on ``sys.argv``, then exit with its code."""
    code = main()
    # What is alive now goes with the process: the collector need not trace all of it one last
    # time while the interpreter shuts down (most of a short command's exit; bench/README.md).
    gc.freeze()
    sys.exit(code)


__all__ = ["EXIT_BAD_INPUT", "build_parser", "main", "run"]
