"""``dockyard-k8s nccl-test``: the NCCL fabric test of a run's GPU nodes (an MPIJob), and
the summary of its output (bus bandwidth per message size)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dockyard_k8s.cli._output import add_output_arg, table
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_layer_args, load_bundle
from dockyard_k8s.errors import EXIT_FAILURE, ConfigError, UsageError
from dockyard_k8s.output import document_text, write_file
from dockyard_k8s.render import nccl

EXAMPLES = """\
examples:
  dockyard-k8s nccl-test examples/grpo_swe.yaml --infra examples/eks_p5.infra.yaml | kubectl apply -f -
  kubectl logs -f -l dockyard-k8s/fleet=nccl-launcher -n rl-research > nccl.log
  dockyard-k8s nccl-test --summarize nccl.log --min-busbw 300
  dockyard-k8s nccl-test examples/grpo_swe.yaml --infra examples/eks_p5.infra.yaml --run

exit codes: 0 ok, 1 wrong values or bandwidth below --min-busbw, 2 bad input
"""


def register(sub: Any) -> None:
    p = sub.add_parser("nccl-test",
                       description="Render an MPIJob (kubeflow.org/v2beta1, needs the MPI Operator) that runs "
                                   "nccl-tests all_reduce_perf across the GPU nodes the run would use, with the "
                                   "same platform settings (EFA, placement, /dev/shm). --summarize LOG prints "
                                   "the bus bandwidth per message size of a finished test's launcher log.",
                       epilog=RUN_ARGS_HELP + "\n" + EXAMPLES)
    p.add_argument("recipe", metavar="RECIPE", nargs="?", help="recipe YAML (not needed with --summarize)")
    p.add_argument("overrides", nargs="*", default=[], metavar="KEY=VALUE", help="recipe overrides (Hydra style)")
    add_layer_args(p, example="ncclTest.nodes=4")  # -f/--infra (repeatable), --set, --set-string, --set-file, -n
    add_output_arg(p, ("yaml", "json"), help_extra=" of the MPIJob")
    p.add_argument("--output-file", metavar="FILE", help="write the MPIJob to FILE instead of stdout")
    p.add_argument("--summarize", metavar="LOG", help="summarise a launcher log ('-' for stdin) and exit")
    p.add_argument("--min-busbw", type=float, metavar="GB/s",
                   help="with --summarize/--run: exit 1 when the peak bus bandwidth is below this")
    p.add_argument("--run", action="store_true", help="apply the MPIJob, wait, print the summary (live)")
    p.add_argument("--timeout", type=float, default=3600, metavar="SECONDS",
                   help="with --run: how long to wait for the launcher (default 3600)")
    p.add_argument("--keep", action="store_true", help="with --run: keep the MPIJob afterwards (default: delete)")
    p.add_argument("--context", help="kubeconfig context for --run (default: the current context)")
    p.add_argument("--kubeconfig", help="kubeconfig file for --run (default: $KUBECONFIG, ~/.kube/config)")


def run(args: argparse.Namespace) -> int:
    if not args.summarize and not args.recipe:
        raise UsageError("nccl-test needs RECIPE (or --summarize LOG)")
    if args.summarize:
        summary = nccl.parse_all_reduce(sys.stdin.read() if args.summarize == "-" else _read(args.summarize))
    elif args.run:
        args.live = True  # load_bundle: the kubeconfig context's namespace when none is given, as `run` does
        summary = run_live(args, render_mpijob(args))
    else:
        text = document_text(render_mpijob(args), args.output)
        if args.output_file:
            write_file(args.output_file, text)
            print(f"wrote {args.output_file}")
        else:
            print(text, end="")
        return 0
    print(format_summary(summary, min_busbw=args.min_busbw))
    return EXIT_FAILURE if nccl.summary_problems(summary, min_busbw=args.min_busbw) else 0


def render_mpijob(args: argparse.Namespace) -> dict[str, Any]:
    """Load and check the run like `check` does, then render its NCCL test MPIJob."""
    bundle = load_bundle(args)
    problems = [bundle.run.locate(path, message) for path, message in nccl.nccl_problems(bundle.run.infra)]
    if problems:
        raise ConfigError(problems)
    return nccl.nccl_mpijob(bundle.run.infra)


def run_live(args: argparse.Namespace, mpijob: dict[str, Any]) -> Any:
    """Apply the MPIJob, wait for the launcher, parse its log (render.nccl.run_and_summarize
    with the live client's apply / logs / delete)."""
    # nccl-test is offline but for --run: the cluster client is imported here alone
    from dockyard_k8s.cli._live import connect
    from dockyard_k8s.live.nccl import live_callables

    with connect(args) as client:
        print(f"applying MPIJob {mpijob['metadata']['namespace']}/{mpijob['metadata']['name']}; waiting for the "
              f"launcher (up to {args.timeout:.0f}s)...", flush=True)
        return nccl.run_and_summarize(mpijob, **live_callables(client, timeout=args.timeout, cleanup=not args.keep))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"--summarize {path}: cannot read file: {e.strerror or e}") from e


def format_summary(summary: Any, *, min_busbw: float | None = None) -> str:
    """Bus bandwidth per message size, then the verdict lines."""
    if not summary.rows:
        return "no all_reduce_perf result rows found (did the test run to completion? see the launcher log)"
    rows = [[nccl.human_bytes(r.size), r.elements, f"{r.oop_busbw:.2f}", f"{r.ip_busbw:.2f}",
             "-" if r.oop_wrong is None and r.ip_wrong is None else (r.oop_wrong or 0) + (r.ip_wrong or 0)]
            for r in summary.rows]
    lines = [table(rows, ["size", "count", "busbw GB/s (out-of-place)", "busbw GB/s (in-place)", "#wrong"]), ""]
    peak = summary.peak
    assert peak is not None
    largest = summary.rows[-1]
    lines.append(f"ranks: {summary.ranks or '?'}  largest message {nccl.human_bytes(largest.size)}: "
                 f"{max(largest.oop_busbw, largest.ip_busbw):.2f} GB/s  peak: "
                 f"{max(peak.oop_busbw, peak.ip_busbw):.2f} GB/s at {nccl.human_bytes(peak.size)}"
                 + (f"  average: {summary.avg_busbw:g} GB/s" if summary.avg_busbw is not None else ""))
    verdict = nccl.summary_problems(summary, min_busbw=min_busbw)
    lines.append(("✔ " if not verdict else "✖ ") + ("fabric OK" if not verdict else "; ".join(verdict)))
    return "\n".join(lines)
