"""Helpers shared by the live commands: connecting, follow-up hints, the Ray target, logs.

It imports the cluster client (``live/``): only the live commands import it (their flags are
``_runargs.py``'s, so that ``serve``'s and ``plan``'s offline parsers stay light).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from dockyard_k8s.bundle import Bundle
from dockyard_k8s.cli._output import table
from dockyard_k8s.errors import UsageError
from dockyard_k8s.kube import object_ref
from dockyard_k8s.live import client as client_mod
from dockyard_k8s.live import logs as lg
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kubeconfig import Target, resolve
from dockyard_k8s.live.progress import phase_of
from dockyard_k8s.live.rayhead import RayTarget
from dockyard_k8s.render.meta import RUN_LABEL


def say(line: str = "") -> None:
    print(line, flush=True)


def warn(line: str) -> None:
    """A side remark (a port-forward opened): stderr, so stdout stays the command's output."""
    print(line, file=sys.stderr, flush=True)


def cluster_target(args: argparse.Namespace) -> Target:
    """The kubeconfig and context the flags name, read once per command and kept on ``args``:
    the namespace default (``load_bundle``) and the client (:func:`connect`) both come from it."""
    target = getattr(args, "cluster_target", None)
    if target is None:
        target = args.cluster_target = resolve(getattr(args, "kubeconfig", None), getattr(args, "context", None))
    return target


def connect(args: argparse.Namespace) -> KubeClient:
    return client_mod.connect(target=cluster_target(args))  # the flags' kubeconfig and context, resolved


def say_client_dry_run(to_apply: Sequence[dict[str, Any]], skipped: Sequence[dict[str, Any]] = (), *,
                       token: str = "", then: str = "") -> int:
    """``run --dry-run=client``'s and ``serve up``'s list: what would be applied (the Ray ``token``
    Secret: created unless it exists), what skipped, ``then`` what would follow."""
    for obj in to_apply:
        ref = object_ref(obj)
        say(f"would create {token} with a random Ray token, unless it exists" if ref == token else f"would apply {ref}")
    for obj in skipped:
        say(f"would skip  {object_ref(obj)} (render-only)")
    if then:
        say(then)
    say(f"{len(to_apply)} object(s) would be applied (client dry run: the cluster was not contacted)")
    return 0


def command_text(args: argparse.Namespace, command: str, *extra: str) -> str:
    """The command line that targets the same run (RECIPE) or endpoint (``serve`` SPEC), for hints."""
    parts = ["dockyard-k8s", *command.split()]
    target = getattr(args, "recipe", None) or getattr(args, "spec", None)
    if target:
        parts.append(target)
    for flag, dest in (("--infra", "infra"), ("--set", "sets"), ("--set", "implied_sets"),
                       ("--set-string", "set_strings"), ("--set-file", "set_files")):
        for value in getattr(args, dest, None) or []:
            parts += [flag, value]
    for flag, dest in (("-n", "namespace"), ("--context", "context"), ("--kubeconfig", "kubeconfig")):
        if getattr(args, dest, None):
            parts += [flag, getattr(args, dest)]
    return shlex.join([*parts, *(getattr(args, "overrides", None) or []), *extra])


def say_follow_hints(args: argparse.Namespace, bundle: Bundle | None = None, *, command: str = "",
                     kubectl: str = "") -> None:
    """Say how to follow a run (or, with ``command="serve"`` and its ``kubectl`` line, an endpoint)."""
    if bundle is not None:
        ns, run = bundle.run.namespace, bundle.run.name
        kubectl = f"kubectl -n {ns} get all,rayjobs,rayclusters -l {RUN_LABEL}={run}"
    prefix = f"{command} " if command else ""
    say("\n".join([
        f"  status:  {command_text(args, prefix + 'status')}",
        f"  logs:    {command_text(args, prefix + 'logs', '--follow')}",
        f"  delete:  {command_text(args, prefix + 'down')}",
        f"  kubectl: {kubectl}",
    ]))


def ray_target(args: argparse.Namespace) -> RayTarget:
    """The Ray dashboard the flags name (--address, --cluster with -n, the kubeconfig flags)."""
    return RayTarget(address=getattr(args, "address", None), cluster=getattr(args, "cluster", None),
                     namespace=getattr(args, "namespace", None), context=getattr(args, "context", None),
                     kubeconfig=getattr(args, "kubeconfig", None))


def log_window(args: argparse.Namespace) -> int | None:
    """``--since`` in seconds; ``--follow`` with ``--previous`` is bad input."""
    if args.follow and args.previous:
        raise UsageError("--follow and --previous cannot be combined (a previous container has ended)")
    return lg.parse_duration(args.since) if args.since else None


def print_logs(args: argparse.Namespace, client: KubeClient, namespace: str, pods: list[dict[str, Any]],
               since: int | None) -> None:
    """``logs`` and ``serve logs``: the pods' lines, each with its ``fleet/pod`` prefix when
    there are several pods; ``--follow`` streams them (a stream that fails is said on stderr)."""
    prefixed = len(pods) > 1
    container = getattr(args, "container", None) or ""
    if args.follow:
        lines = lg.follow_logs(client, namespace, pods, container=container, tail=args.tail, since=since,
                               on_error=lambda prefix, e: print(f"{prefix}: {e}", file=sys.stderr))
    else:
        lines = lg.read_logs(client, namespace, pods, container=container, tail=args.tail, since=since,
                             previous=args.previous)
    for prefix, line in lines:
        print(f"{prefix} {line}" if prefixed else line, flush=args.follow)


def say_phases(view: Any, kinds: Sequence[str]) -> None:
    """``status``'s and ``serve status``'s first lines: each object of ``kinds``, its phase and details."""
    for kind in kinds:
        for obj in view.of_kind(kind):
            phase = phase_of(obj, view.pods)
            say(f"{kind} {obj['metadata']['name']}: {phase.summary}")
            for line in phase.details:
                say(f"  {line}")


def say_pods(view: Any, *, completed: bool = True) -> None:
    """Their last lines: the pods of each fleet (``completed``: with those that ended well) and the
    problems found, each with its hint."""
    done = ["completed"] if completed else []
    rows = [[r.fleet, r.desired, r.pods, r.scheduled, r.ready, *([r.done] if completed else []), r.failed]
            for r in view.fleets()]
    if rows:
        say("")
        say(table(rows, ["fleet", "desired", "pods", "scheduled", "ready", *done, "failed"]))
    findings = view.findings()
    if findings:
        say("\nproblems")
    for f in findings:
        say(f"  ✖ {f.line()}")
        say(f"    hint: {f.hint}")
