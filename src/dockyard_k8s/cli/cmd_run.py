"""``dockyard-k8s run``: apply the run's objects (server-side apply) and follow it to the end."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.bundle import Bundle
from dockyard_k8s.cli._live import command_text, connect, ray_target, say, say_follow_hints, warn
from dockyard_k8s.cli._runargs import (
    CLUSTER_HELP,
    RUN_ARGS_HELP,
    add_cluster_args,
    add_run_args,
    invocation_of,
    load_bundle,
)
from dockyard_k8s.config.loader import Setting
from dockyard_k8s.errors import EXIT_FAILURE, EXIT_INTERRUPTED
from dockyard_k8s.kube import format_ref, object_ref
from dockyard_k8s.live.launch import LaunchOptions, Outcome, launch, preview
from dockyard_k8s.render.rayauth import secret_name

EXAMPLES = """\
examples:
  dockyard-k8s run examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s run recipe.yaml --detach                 # apply, print how to follow, return
  dockyard-k8s run recipe.yaml --dry-run=server         # admission + validation, nothing persisted
  dockyard-k8s run recipe.yaml --replace optimizer.lr=3e-6   # stop the running job, start this one
"""


def register(sub: Any) -> None:
    p = sub.add_parser("run",
                       description="Apply the rendered objects in order with server-side apply (field manager "
                                   "dockyard-k8s; ResourceQuota/LimitRange are render-only and skipped), then follow "
                                   "the run with watches: objects, pods per fleet, job status, and every pod "
                                   "problem with a hint as it happens. Re-running an unchanged spec changes nothing.",
                       epilog=RUN_ARGS_HELP + "\n" + CLUSTER_HELP + "\n" + EXAMPLES)
    add_run_args(p)
    add_cluster_args(p)
    add_follow_args(p)
    p.add_argument("--dry-run", choices=("client", "server"),
                   help="client: list what would be applied (no cluster contact); server: dryRun=All")
    p.add_argument("--replace", action="store_true", help="delete the run's job/cluster first, wait, then apply")
    p.add_argument("--force-conflicts", action="store_true",
                   help="take over fields another manager owns (server-side apply force)")


def add_follow_args(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--wait", dest="detach", action="store_false", default=False,
                      help="follow until the job ends (default)")
    mode.add_argument("--detach", action="store_true", help="return after applying, printing how to follow")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="stop following after SECONDS (exit 1; "
                                                                    "the run keeps going)")
    p.add_argument("--pre-running-deadline", type=int, metavar="SECONDS",
                   help="give up when not running after SECONDS (sets launch.preRunningDeadlineSeconds for a "
                        "RayJob; enforced while following for other shapes)")
    p.add_argument("--fail-fast", action="store_true",
                   help="exit 1 at the first problem that cannot heal (bad image, missing secret, crash loop)")


def run(args: argparse.Namespace) -> int:
    return execute(args, load_bundle(args, deadline_setting(args)))


def deadline_setting(args: argparse.Namespace) -> list[Setting]:
    """``--pre-running-deadline`` as the infra value it sets (KubeRay enforces it for a RayJob)."""
    if not args.pre_running_deadline:
        return []
    return [Setting(("launch", "preRunningDeadlineSeconds"), args.pre_running_deadline,
                    f"--pre-running-deadline {args.pre_running_deadline}")]


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    return LaunchOptions(dry_run=args.dry_run or "", replace=args.replace, force_conflicts=args.force_conflicts,
                         detach=args.detach, timeout=args.timeout, pre_running_deadline=args.pre_running_deadline,
                         fail_fast=args.fail_fast, ray=ray_target(args), invocation=invocation_of(args))


def _client_dry_run(args: argparse.Namespace, bundle: Bundle) -> int:
    to_apply, skipped = preview(bundle, launch_options(args))
    token = format_ref("Secret", bundle.run.namespace, secret_name(bundle.run.infra))
    for obj in to_apply:
        say(f"would create {token} with a random Ray token, unless it exists" if object_ref(obj) == token else
            f"would apply {object_ref(obj)}")
    for obj in skipped:
        say(f"would skip  {object_ref(obj)} (render-only)")
    if bundle.run.infra["launch"]["mode"] == "attach":
        say("would submit the entrypoint to the attached Ray cluster (Ray Jobs API)")
    say(f"{len(to_apply)} object(s) would be applied (client dry run: the cluster was not contacted)")
    return 0


def execute(args: argparse.Namespace, bundle: Bundle) -> int:
    """Apply and (unless --detach) follow; shared by `run` and `cluster up`."""
    if args.dry_run == "client":
        return _client_dry_run(args, bundle)
    try:
        with connect(args) as client:
            outcome = launch(client, bundle, launch_options(args), say=say, note=warn)
    except KeyboardInterrupt:
        say("\ninterrupted: nothing was stopped, the run keeps going on the cluster.")
        say_follow_hints(args, bundle)
        return EXIT_INTERRUPTED
    return report(args, bundle, outcome)


def report(args: argparse.Namespace, bundle: Bundle, outcome: Outcome) -> int:
    """Print how the launch ended; the exit code."""
    if outcome.reason == "dry-run":  # the tally above counts what the server would have done
        say(outcome.message)
        return 0
    if outcome.reason in ("already-finished", "started-from-another-spec"):  # said by launch
        return 0 if outcome.ok else EXIT_FAILURE
    if outcome.reason == "detached":
        if outcome.submission_id:
            say(f"  logs:  {command_text(args, 'job logs')} {outcome.submission_id} --follow")
        else:
            say("detached; follow it with:")
            say_follow_hints(args, bundle)
        return 0
    if outcome.ok:
        say(f"✔ {outcome.reason}: {outcome.message}")
        if outcome.reason == "ready":
            say(f"  dashboard: {command_text(args, 'cluster dashboard')}")
            say(f"  submit:    {command_text(args, 'job submit')}")
        return 0
    say(f"✖ {outcome.reason}: {outcome.message}")
    if not outcome.submission_id:
        say_follow_hints(args, bundle)
    return EXIT_FAILURE
