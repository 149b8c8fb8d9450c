"""``dockyard-k8s job submit|list|logs|stop``: Ray jobs on a bringup or attached cluster,
through the Ray Jobs REST API of the head's dashboard (port-forward managed, or --address)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from dockyard_k8s.cli._live import command_text, connect, ray_target, say, warn
from dockyard_k8s.cli._output import add_output_arg, table
from dockyard_k8s.cli._runargs import (
    CLUSTER_HELP,
    RUN_ARGS_HELP,
    RUN_NAME_HELP,
    add_run_args,
    load_bundle,
    run_name_arg,
)
from dockyard_k8s.errors import EXIT_FAILURE, UsageError
from dockyard_k8s.live.launch import run_submission
from dockyard_k8s.live.rayhead import job_row, latest_job, ray_jobs, submission_id
from dockyard_k8s.live.runs import ray_target as run_ray_target
from dockyard_k8s.live.runs import run_job_id
from dockyard_k8s.output import document_text

EXAMPLES = """\
examples:
  dockyard-k8s job submit recipe.yaml optimizer.lr=3e-6     # the run's entrypoint, on its cluster
  dockyard-k8s job submit grpo-swe -n rl-research -- python eval.py --split test   # a command of yours
  dockyard-k8s job list --address http://127.0.0.1:8265
  dockyard-k8s job logs recipe.yaml --follow                # the run's own job
  dockyard-k8s job stop --cluster my-cluster -n rl-research --job grpo-swe-1a2b3c4d5e
  dockyard-k8s job logs grpo-swe -n rl-research --follow    # by run name: no launch files needed
"""


def _target_args(p: argparse.ArgumentParser) -> None:
    add_run_args(p, recipe_required=False, by_name=True, cluster=True)
    p.add_argument("--address", metavar="URL", help="Ray dashboard URL (http://host:8265): no port-forward")
    p.add_argument("--cluster", metavar="NAME", help="a RayCluster by name, instead of RECIPE")


def register(sub: Any) -> None:
    p = sub.add_parser("job",
                       description="Talk to the Ray Jobs REST API of a cluster's head (dashboard, port 8265). The "
                                   "cluster is the run's (RECIPE), one named by --cluster (port-forwarded with "
                                   "kubectl), or --address.",
                       epilog=RUN_NAME_HELP + "\n" + CLUSTER_HELP + "\n" + EXAMPLES)
    js = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    submit = js.add_parser("submit", help="submit the run's entrypoint (idempotent: same spec, same job)",
                           epilog=RUN_ARGS_HELP)
    _target_args(submit)
    submit.add_argument("--entrypoint", help="command to run instead of the run's entrypoint (or the words "
                        "after --, as `ray job submit -- CMD` takes them)")
    submit.add_argument("--wait", action="store_true", help="print the logs until the job ends; exit 1 if it fails")
    submit.set_defaults(func=job_submit)
    ls = js.add_parser("list", help="jobs of the cluster")
    _target_args(ls)
    add_output_arg(ls, ("text", "json", "yaml"))
    ls.set_defaults(func=job_list)
    logs = js.add_parser("logs", help="logs of one job")
    _target_args(logs)
    logs.add_argument("--job", dest="job_id", metavar="ID", help="submission id (default: the run's job)")
    logs.add_argument("--follow", action="store_true", help="stream new lines until the job ends")
    logs.set_defaults(func=job_logs)
    stop = js.add_parser("stop", help="stop a job")
    _target_args(stop)
    stop.add_argument("--job", dest="job_id", metavar="ID", help="submission id (default: the run's job)")
    stop.set_defaults(func=job_stop)


def _job_id(args: argparse.Namespace, bundle: Any, ray: Any) -> str:
    """--job, or the run's own job: its newest submission (a `run --replace` makes a new one)."""
    if args.job_id:
        return str(args.job_id)
    ref = getattr(args, "run_ref", None)
    if ref is not None:  # by run name: the RayJob's job, else the run's latest submission
        found = run_job_id(ref, ray.list())
        if not found:
            raise UsageError(f"run {ref.run} has no Ray job yet: pass --job ID (`dockyard-k8s job list {ref.run}`)")
        return found
    if bundle is None:
        raise UsageError("say which job: --job ID (or RECIPE for the run's own job)")
    base = run_submission(bundle)[0]
    return str((latest_job(ray, base) or {}).get("submission_id") or base)


def _with_ray(args: argparse.Namespace, action: Any) -> int:
    name = run_name_arg(args)
    bundle = load_bundle(args) if args.recipe and not name else None
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(connect(args)) if not args.address or name else None
        target = ray_target(args)
        if name:
            assert client is not None  # a run by name is found on the cluster
            args.run_ref, target = run_ray_target(client, args.namespace or client.default_namespace, name, target)
        ray = stack.enter_context(ray_jobs(target, bundle, client, on_forward=warn))
        return int(action(ray, bundle))


def job_submit(args: argparse.Namespace) -> int:
    def action(ray: Any, bundle: Any) -> int:
        if bundle is None:
            ref = getattr(args, "run_ref", None)
            if not args.entrypoint:
                raise UsageError(f"job submit {ref.run} needs --entrypoint (the run's own entrypoint comes with "
                                 "its RECIPE)" if ref else "job submit needs RECIPE (its entrypoint) or --entrypoint")
            prefix = ref.run if ref else "job"  # by run name: `job logs RUN` finds it again
            sub_id, command, runtime_env = submission_id(prefix, args.entrypoint, None), args.entrypoint, None
        else:
            sub_id, command, runtime_env = run_submission(bundle, args.entrypoint)
        existing = ray.get(sub_id)
        if existing:
            say(f"job {sub_id} already submitted ({existing.get('status')}); nothing re-submitted")
        else:
            ray.submit(command, sub_id=sub_id, runtime_env=runtime_env)
            say(f"submitted job {sub_id}")
        if not args.wait:
            where = [*(["--address", args.address] if args.address else []),
                     *(["--cluster", args.cluster] if args.cluster else [])]
            say(f"  logs: {command_text(args, 'job logs', *where, '--job', sub_id, '--follow')}")
            return 0
        for chunk in ray.follow_logs(sub_id):
            print(chunk, end="", flush=True)
        status = (ray.get(sub_id) or {}).get("status")
        say(f"job {sub_id}: {status}")
        return 0 if status == "SUCCEEDED" else EXIT_FAILURE

    return _with_ray(args, action)


def job_list(args: argparse.Namespace) -> int:
    def action(ray: Any, bundle: Any) -> int:
        jobs = sorted(ray.list(), key=lambda j: j.get("start_time") or 0)
        if args.output in ("json", "yaml"):
            print(document_text(jobs, args.output), end="")
            return 0
        if not jobs:
            say("no jobs")
            return 0
        say(table([job_row(j) for j in jobs], ["id", "status", "entrypoint", "message"]))
        return 0

    return _with_ray(args, action)


def job_logs(args: argparse.Namespace) -> int:
    def action(ray: Any, bundle: Any) -> int:
        job = _job_id(args, bundle, ray)
        if args.follow:
            for chunk in ray.follow_logs(job):
                print(chunk, end="", flush=True)
        else:
            print(ray.logs(job), end="")
        return 0

    return _with_ray(args, action)


def job_stop(args: argparse.Namespace) -> int:
    def action(ray: Any, bundle: Any) -> int:
        job = _job_id(args, bundle, ray)
        stopped = ray.stop(job)
        say(f"job {job}: {'stop requested' if stopped else 'not running (nothing to stop)'}")
        return 0

    return _with_ray(args, action)
