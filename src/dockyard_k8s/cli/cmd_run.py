"""``dockyard-k8s run``: apply the run's objects (server-side apply) and follow it to the end."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from dockyard_k8s.cli._live import CLUSTER_HELP, add_cluster_args, connect, follow_hints, run_of, say
from dockyard_k8s.cli._output import object_ref
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, load_bundle
from dockyard_k8s.errors import EXIT_FAILURE, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle
    from dockyard_k8s.live.client import KubeClient

EXAMPLES = """\
examples:
  dockyard-k8s run examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s run recipe.yaml --detach                 # apply, print how to follow, return
  dockyard-k8s run recipe.yaml --dry-run=server         # admission + validation, nothing persisted
  dockyard-k8s run recipe.yaml --replace optimizer.lr=3e-6   # stop the running job, start this one
"""


def register(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("run",
                       description="Apply the rendered objects in order with server-side apply (field manager "
                                   "dockyard-k8s; ResourceQuota/LimitRange are render-only and skipped), then follow "
                                   "the run with watches: objects, pods per fleet, job status, and every pod "
                                   "problem with a hint as it happens. Re-running an unchanged spec changes nothing.",
                       epilog=RUN_ARGS_HELP + "\n" + CLUSTER_HELP + "\n" + EXAMPLES, formatter_class=formatter)
    add_run_args(p)
    add_cluster_args(p)
    add_follow_args(p)
    p.add_argument("--dry-run", choices=("client", "server"),
                   help="client: list what would be applied (no cluster contact); server: dryRun=All")
    p.add_argument("--replace", action="store_true", help="delete the run's job/cluster first, wait, then apply")
    p.add_argument("--force-conflicts", action="store_true",
                   help="take over fields another manager owns (server-side apply force)")
    p.set_defaults(func=run)


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
    if args.pre_running_deadline:
        args.sets = [*args.sets, f"launch.preRunningDeadlineSeconds={args.pre_running_deadline}"]
    return execute(args, load_bundle(args))


def _client_dry_run(bundle: Bundle) -> int:
    from dockyard_k8s.live.orchestrate import split_apply

    to_apply, skipped = split_apply(bundle.objects)
    for obj in to_apply:
        say(f"would apply {object_ref(obj)}")
    for obj in skipped:
        say(f"would skip  {object_ref(obj)} (render-only)")
    if bundle.run.infra["launch"]["mode"] == "attach":
        say("would submit the entrypoint to the attached Ray cluster (Ray Jobs API)")
    say(f"{len(to_apply)} object(s) would be applied (client dry run: the cluster was not contacted)")
    return 0


def execute(args: argparse.Namespace, bundle: Bundle) -> int:
    """Apply and (unless --detach) follow; shared by `run` and `cluster up`."""
    if args.dry_run == "client":
        return _client_dry_run(bundle)
    from dockyard_k8s.live.orchestrate import apply_objects, replace_main

    ns, run_name = run_of(bundle)
    client = connect(args)
    try:
        if args.replace and not args.dry_run:
            replace_main(client, bundle.objects, say=say)
        applied = apply_objects(client, bundle.objects, dry_run=args.dry_run == "server", force=args.force_conflicts,
                                on_applied=lambda a: say(f"{a.action:<10} {a.ref}"))
        counts: dict[str, int] = {}
        for a in applied:
            counts[a.action.split()[0]] = counts.get(a.action.split()[0], 0) + 1
        say(f"run {run_name} in {ns}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        if args.dry_run == "server":
            return 0
        if bundle.run.infra["launch"]["mode"] == "attach":
            return _attach_submit(args, bundle, client)
        finished = _already_finished(client, bundle, applied)
        if finished is not None:
            return finished
        if args.detach:
            say("detached; follow it with:")
            for line in follow_hints(args, bundle):
                say(line)
            return 0
        return _follow(args, bundle, client)
    except KeyboardInterrupt:
        say("\ninterrupted: nothing was stopped, the run keeps going on the cluster.")
        for line in follow_hints(args, bundle):
            say(line)
        return EXIT_INTERRUPTED
    finally:
        client.close()


def _already_finished(client: KubeClient, bundle: Bundle, applied: list[Any]) -> int | None:
    """Re-running an unchanged spec whose job already ended: say so instead of waiting forever."""
    from dockyard_k8s.live.kinds import kind_of
    from dockyard_k8s.live.progress import main_object, phase_of

    main = main_object(bundle.objects)
    if main is None:
        return None
    ref = object_ref(main)
    action = next((a.action for a in applied if a.ref == ref), "")
    meta = main["metadata"]
    if action == "configured" and main["kind"] == "RayJob":
        say(f"note: {ref} changed while it exists; KubeRay does not restart a started job on spec changes "
            "(use --replace to start it again)")
    if action != "unchanged":
        return None
    live = client.get(kind_of(main), meta.get("namespace"), meta["name"])
    if live is None:
        return None
    phase = phase_of(live, [])
    if phase.terminal and main["kind"] != "RayCluster":
        say(f"{ref} already finished ({phase.summary}); nothing was re-run. --replace starts it again.")
        return 0 if phase.ok else EXIT_FAILURE
    return None


def _follow(args: argparse.Namespace, bundle: Bundle, client: KubeClient) -> int:
    from dockyard_k8s.live.orchestrate import follow
    from dockyard_k8s.live.progress import main_object

    ns, run_name = run_of(bundle)
    main = main_object(bundle.objects)
    local_deadline = args.pre_running_deadline if main is None or main["kind"] != "RayJob" else None
    outcome = follow(client, ns, run_name, bundle.objects, say=say, timeout=args.timeout,
                     pre_running_deadline=local_deadline, fail_fast=args.fail_fast)
    if outcome.ok:
        say(f"✔ {outcome.reason}: {outcome.message}")
        if outcome.reason == "ready":
            say(f"  dashboard: {_cmd(args, 'cluster dashboard')}")
            say(f"  submit:    {_cmd(args, 'job submit')}")
        return 0
    say(f"✖ {outcome.reason}: {outcome.message}")
    for line in follow_hints(args, bundle):
        say(line)
    return EXIT_FAILURE


def _cmd(args: argparse.Namespace, command: str) -> str:
    from dockyard_k8s.cli._live import command_text

    return command_text(args, command)


def _attach_submit(args: argparse.Namespace, bundle: Bundle, client: KubeClient) -> int:
    """attach mode: nothing GPU-side was applied; the entrypoint goes to the Ray Jobs API."""
    from dockyard_k8s.cli._live import ray_address
    from dockyard_k8s.live.rayjobs import RayJobsClient, submission_id
    from dockyard_k8s.render.ray import entrypoint

    infra = bundle.run.infra
    _, run_name = run_of(bundle)
    command = entrypoint(infra, bundle.run.job_args)
    runtime_env = infra["launch"]["runtimeEnv"] or None
    sub_id = submission_id(run_name, command, runtime_env)
    with ray_address(args, bundle, client) as url:
        ray = RayJobsClient(url)
        try:
            existing = ray.get(sub_id)
            if existing and args.replace and existing.get("status") not in ("SUCCEEDED", "FAILED", "STOPPED"):
                ray.stop(sub_id)
                ray.wait(sub_id)
            if existing and args.replace:
                ray.delete(sub_id)
                existing = None
            if existing:
                say(f"job {sub_id} already submitted ({existing.get('status')}); nothing re-submitted")
            else:
                ray.submit(command, sub_id=sub_id, runtime_env=runtime_env, metadata={"dockyard-k8s/run": run_name})
                say(f"submitted job {sub_id} to {url}")
            if args.detach:
                say(f"  logs:  {_cmd(args, 'job logs')} {sub_id} -f")
                return 0
            for chunk in ray.follow_logs(sub_id):
                print(chunk, end="", flush=True)
            info = ray.get(sub_id) or {}
            status = info.get("status")
            say(f"{'✔' if status == 'SUCCEEDED' else '✖'} job {sub_id}: {status} {info.get('message') or ''}".rstrip())
            return 0 if status == "SUCCEEDED" else EXIT_FAILURE
        finally:
            ray.close()
