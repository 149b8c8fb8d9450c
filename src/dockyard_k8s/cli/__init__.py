"""The command line: parse, call the library, print, return an exit code.

Each command lives in ``cmd_<name>.py`` with ``register(subparsers)`` adding its parser
(with ``func`` set to its handler). Command modules import only what parsing needs at
the top; heavy libraries (cluster clients, Ray) are imported inside the handlers that
use them, so ``check`` and ``render`` start fast.

Exit codes: 0 ok, 1 failure (invalid objects, lint errors, failed job, API error),
2 bad input or usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dockyard_k8s import __version__
from dockyard_k8s.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, DockyardError

# Order = order in `--help`. One per line: each area adds its own.
COMMANDS = (
    # offline: nothing leaves this machine
    "check",
    "render",
    "validate",
    "lint",
    "plan",
    "schema",
    "schemas",
    "nccl-test",
    # live: talk to the cluster of the current kubeconfig context
    "doctor",
    "run",
    "status",
    "logs",
    "down",
    "cluster",
    "job",
    "dev",
)

DESCRIPTION = """\
dockyard-k8s turns an RL recipe (what to train) and an infra spec (where to run it)
into a KubeRay GPU run with a hardened sandbox pool, validated before it touches a cluster.
"""

EPILOG = """\
examples:
  dockyard-k8s check examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s render examples/grpo_swe.yaml -o build/run --set kuberay.trainer.replicas=4 optimizer.lr=3e-6
  dockyard-k8s lint examples/grpo_swe.yaml && dockyard-k8s plan examples/grpo_swe.yaml --nodes nodes.yaml
  dockyard-k8s doctor examples/grpo_swe.yaml && dockyard-k8s run examples/grpo_swe.yaml
  dockyard-k8s status examples/grpo_swe.yaml; dockyard-k8s logs examples/grpo_swe.yaml --fleet trainer -f

exit codes: 0 ok, 1 failure (invalid objects, lint errors, failed job), 2 bad input, 130 interrupted
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dockyard-k8s", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"dockyard-k8s {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"dockyard_k8s.cli.cmd_{name.replace('-', '_')}").register(sub, _Formatter)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # recipe overrides may come after options: argparse leaves them here
        bad = [e for e in extra if e.startswith("-") or not hasattr(args, "overrides")]
        if bad:
            parser.error(f"unrecognized arguments: {' '.join(bad)}")
        args.overrides = [*args.overrides, *extra]
    try:
        return int(args.func(args) or 0)
    except DockyardError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `dockyard-k8s render | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]
