"""``dockyard-k8s run``: apply the run's objects (server-side apply) and follow it to the end."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from dockyard_k8s.bundle import Bundle
from dockyard_k8s.cli._live import command_text, connect, ray_target, say, say_client_dry_run, say_follow_hints, warn
from dockyard_k8s.cli._runargs import add_apply_args, add_run_args, invocation_of, live_epilog, load_bundle
from dockyard_k8s.config.loader import Setting
from dockyard_k8s.errors import EXIT_FAILURE, EXIT_INTERRUPTED
from dockyard_k8s.kube import format_ref
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
                       epilog=live_epilog(EXAMPLES))
    add_run_args(p, cluster=True)
    add_follow_args(p)
    p.add_argument("--replace", action="store_true", help="delete the run's job/cluster first, wait, then apply")


def add_follow_args(p: argparse.ArgumentParser) -> None:
    """``run``'s and ``cluster up``'s apply flags."""
    add_apply_args(p, until="the job ends", keeps="the run keeps going")
    p.add_argument("--pre-running-deadline", type=int, metavar="SECONDS",
                   help="give up when not running after SECONDS (sets launch.preRunningDeadlineSeconds for a "
                        "RayJob; enforced while following for other shapes)")


def run(args: argparse.Namespace, values: Sequence[Setting] = ()) -> int:
    """``run``, and ``cluster up`` with its ``values`` (the bringup shape)."""
    return execute(args, load_bundle(args, [*values, *deadline_setting(args)]))


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
    infra = bundle.run.infra
    attach = "would submit the entrypoint to the attached Ray cluster (Ray Jobs API)"
    return say_client_dry_run(to_apply, skipped, token=format_ref("Secret", bundle.run.namespace, secret_name(infra)),
                              then=attach if infra["launch"]["mode"] == "attach" else "")


def execute(args: argparse.Namespace, bundle: Bundle) -> int:
    """Apply and (unless --detach) follow; shared by `run` and `cluster up`."""
    for note in bundle.run.notes:  # what check says beside its ✔ (an unpinned image, a limit raised)
        warn(f"note: {note}")
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
