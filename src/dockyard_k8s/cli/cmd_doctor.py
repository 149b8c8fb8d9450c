"""``dockyard-k8s doctor``: preflight of the current context for this run, each check ✔/✖ with a fix."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from dockyard_k8s.cli._live import connect, say
from dockyard_k8s.cli._output import add_output_arg
from dockyard_k8s.cli._runargs import add_run_args, live_epilog, load_bundle
from dockyard_k8s.errors import EXIT_FAILURE
from dockyard_k8s.live.doctor import evaluate, exit_ok, gather, verdict
from dockyard_k8s.output import document_text

EXAMPLES = """\
examples:
  dockyard-k8s doctor examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s doctor recipe.yaml --context prod -o json
"""


def register(sub: Any) -> None:
    p = sub.add_parser("doctor",
                       description="API reachable and >= 1.29; KubeRay CRDs and operator (ready, watching the "
                                   "namespace); GPUs allocatable vs requested; what the pods name exists "
                                   "(PriorityClass, RuntimeClass, ServiceAccount, Secrets of env/envFrom and pull "
                                   "secrets, ConfigMaps, PVCs; not the Ray token Secret `run` creates); every verb "
                                   "the launcher uses is allowed (SelfSubjectAccessReview); quota headroom; whether "
                                   "the network plugin enforces NetworkPolicy. ✔ ok, ✖ fails, ! could not tell. "
                                   "Exit 1 when a check shows the run cannot work.",
                       epilog=live_epilog(EXAMPLES))
    add_run_args(p, cluster=True)
    add_output_arg(p, ("text", "json", "yaml"))


def run(args: argparse.Namespace) -> int:
    bundle = load_bundle(args)
    ns, run_name = bundle.run.namespace, bundle.run.name
    launch = bundle.run.infra["launch"]
    ray_needed = launch["mode"] in ("rayjob", "bringup") or (launch["mode"] == "attach" and
                                                             bool(launch["attach"]["cluster"]))
    token = bundle.findings.token
    with connect(args) as client:
        facts = gather(client, bundle.objects, ns, ray_needed=ray_needed, token=token)
    checks = evaluate(facts, bundle.objects, ns, ray_needed=ray_needed, token=token)
    ok = exit_ok(checks)
    if args.output in ("json", "yaml"):
        doc = {"run": run_name, "namespace": ns, "context": client.context, "ok": ok, "verdict": verdict(checks),
               "checks": [{**dataclasses.asdict(c), "mark": c.mark} for c in checks]}
        print(document_text(doc, args.output), end="")
        return 0 if ok else EXIT_FAILURE
    say(f"doctor: run {run_name} in {ns}" + (f" on context {client.context}" if client.context else ""))
    width = max(len(c.name) for c in checks)
    for c in checks:
        say(f"{c.mark} {c.name.ljust(width)}  {c.detail}")
        if c.ok is not True and c.hint:
            say(f"  {' ' * width}  fix: {c.hint}")
    say(verdict(checks))
    return 0 if ok else EXIT_FAILURE
