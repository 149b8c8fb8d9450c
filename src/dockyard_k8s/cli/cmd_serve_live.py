"""The live ``serve`` subcommands' handlers: up, status, logs, down, test (their flags are
``cmd_serve.py``'s, which imports this module when one of them runs). Call ``live/serve.py`` (or
``live/openai.py``), print."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dockyard_k8s.cli import _live
from dockyard_k8s.cli._live import connect, say
from dockyard_k8s.cli._targets import load_serve_bundle
from dockyard_k8s.errors import EXIT_FAILURE, EXIT_INTERRUPTED, ClusterError, UsageError
from dockyard_k8s.live import serve
from dockyard_k8s.live.openai import complete
from dockyard_k8s.live.orchestrate import status_doc as run_doc
from dockyard_k8s.live.portforward import port_forward
from dockyard_k8s.live.serve import ServeStatus, api_key
from dockyard_k8s.output import dump_json
from dockyard_k8s.plain import dig
from dockyard_k8s.render.serve import service_url
from dockyard_k8s.serve_bundle import ServeBundle


def say_follow_hints(args: argparse.Namespace, bundle: ServeBundle) -> None:
    cfg = bundle.config
    _live.say_follow_hints(args, command="serve", kubectl=f"kubectl -n {cfg.namespace} get deploy,pods,pvc,svc "
                                                          f"-l dockyard-k8s/endpoint={cfg.name}")


# --- up ------------------------------------------------------------------------------------------


def run_up(args: argparse.Namespace) -> int:
    bundle = load_serve_bundle(args)
    if args.dry_run == "client":
        return _live.say_client_dry_run(bundle.objects)
    options = serve.UpOptions(dry_run="server" if args.dry_run == "server" else "",
                              force_conflicts=args.force_conflicts, detach=args.detach, timeout=args.timeout,
                              fail_fast=args.fail_fast)
    try:
        with connect(args) as client:
            outcome = serve.up(client, bundle, options, say=say)
    except KeyboardInterrupt:
        say("\ninterrupted: nothing was stopped, the endpoint keeps starting on the cluster.")
        say_follow_hints(args, bundle)
        return EXIT_INTERRUPTED
    if outcome.reason == "dry-run":
        return 0
    if outcome.reason == "detached":
        say("detached; follow it with:")
        say_follow_hints(args, bundle)
        return 0
    if outcome.ok:
        say(f"✔ {bundle.config.name} is ready: {outcome.message}")
        say(f"  in cluster: {service_url(bundle.config)}/v1 (OpenAI API, model "
            f"{bundle.config.serve['model']['servedName']!r})")
        say(f"  try it:     {_live.command_text(args, 'serve test')}")
        return 0
    say(f"✖ {outcome.reason}: {outcome.message}")
    say_follow_hints(args, bundle)
    return EXIT_FAILURE


# --- status --------------------------------------------------------------------------------------


def _claim_line(claim: dict[str, Any]) -> str:
    spec, st = claim.get("spec") or {}, claim.get("status") or {}
    size = dig(st, "capacity", "storage") or dig(spec, "resources", "requests", "storage") or "?"
    modes = ",".join(st.get("accessModes") or spec.get("accessModes") or [])
    cls = spec.get("storageClassName") or "default class"
    return f"PersistentVolumeClaim {claim['metadata']['name']}: {st.get('phase') or 'Pending'} ({size} {modes}, {cls})"


def _scaler_line(obj: dict[str, Any]) -> str:
    conds = {c.get("type"): c.get("status") for c in dig(obj, "status", "conditions") or []}
    hpa = dig(obj, "status", "hpaName") or "-"
    shown = ", ".join(f"{k}={conds[k]}" for k in ("Ready", "Active", "Fallback") if k in conds) or "no status yet"
    return f"ScaledObject {obj['metadata']['name']}: {shown}; HPA {hpa}"


def status_doc(st: ServeStatus, bundle: ServeBundle) -> dict[str, Any]:
    doc = run_doc(st.view, bundle.config.namespace)
    doc.pop("run")
    return {"endpoint": bundle.config.name, **doc,
            "claims": [{"name": c["metadata"]["name"], "phase": dig(c, "status", "phase") or "Pending"}
                       for c in st.claims],
            "autoscaler": [{"name": s["metadata"]["name"], "status": s.get("status") or {}} for s in st.scalers],
            "service": None if st.service is None else {"name": st.service["metadata"]["name"],
                                                        "clusterIP": dig(st.service, "spec", "clusterIP")}}


def run_status(args: argparse.Namespace) -> int:
    bundle = load_serve_bundle(args)
    cfg = bundle.config
    with connect(args) as client:
        st = serve.status(client, bundle)
        context = client.context
    if args.output == "json":
        print(dump_json(status_doc(st, bundle)), end="")
        return 0 if st.found else EXIT_FAILURE
    if not st.found:
        say(f"nothing of endpoint {cfg.name} in namespace {cfg.namespace} (label dockyard-k8s/endpoint={cfg.name})")
        say(f"  start it: {_live.command_text(args, 'serve up')}")
        return EXIT_FAILURE
    say(f"endpoint {cfg.name} in {cfg.namespace}" + (f" (context {context})" if context else ""))
    _live.say_phases(st.view, ("Deployment",))
    for claim in st.claims:
        say(_claim_line(claim))
    for scaler in st.scalers:
        say(_scaler_line(scaler))
    if st.service is not None:
        say(f"Service {st.service['metadata']['name']}: {service_url(cfg)}/v1")
    _live.say_pods(st.view, completed=False)
    return 0


# --- logs / down ---------------------------------------------------------------------------------


def run_logs(args: argparse.Namespace) -> int:
    since = _live.log_window(args)
    bundle = load_serve_bundle(args)
    with connect(args) as client:
        _live.print_logs(args, client, bundle.config.namespace, serve.log_pods(client, bundle, pod=args.pod), since)
    return 0


def run_down(args: argparse.Namespace) -> int:
    bundle = load_serve_bundle(args)
    cfg = bundle.config
    with connect(args) as client:
        deleted = serve.down(client, bundle, delete_cache=args.delete_cache, dry_run=args.dry_run,
                             timeout=args.timeout, say=say)
    say(f"deleted {len(deleted)} object(s) of endpoint {cfg.name}; its pods follow (garbage collection)" if deleted
        else f"nothing left of endpoint {cfg.name} in {cfg.namespace}")
    return 0


# --- test ----------------------------------------------------------------------------------------


def run_test(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise UsageError(f"--max-tokens {args.max_tokens}: expected at least 1")
    cfg = load_serve_bundle(args).config
    model = str(cfg.serve["model"]["servedName"])
    key = None
    if cfg.serve["apiKeySecret"]["name"]:  # read before anything is sent: never a request without it
        with connect(args) as client:
            key = api_key(client, cfg)
    if args.address:
        answer = complete(args.address.rstrip("/"), model, args.prompt, args.max_tokens, timeout=args.timeout,
                          api_key=key)
        where = args.address
    else:
        target = f"svc/{cfg.name}"
        port = int(cfg.serve["port"] or 0)  # filled from the backend when the spec leaves it out
        try:
            with port_forward(cfg.namespace, target, port, context=args.context, kubeconfig=args.kubeconfig,
                              checked=key is not None) as url:  # reading the key has checked the kubeconfig
                print(f"port-forward: {url} -> {cfg.namespace}/{target}:{port}", file=sys.stderr, flush=True)
                answer = complete(url, model, args.prompt, args.max_tokens, timeout=args.timeout, api_key=key)
        except ClusterError as e:
            if e.hint.startswith("is the head pod running"):  # port_forward's hint is about Ray heads
                e.hint = f"is the endpoint up and Ready? `{_live.command_text(args, 'serve status')}`"
            raise
        where = f"{cfg.namespace}/{target}"
    if not answer.ok:
        say(f"✖ {cfg.name} ({where}): {answer.problem}")
        say(f"  hint: {answer.hint}")
        return EXIT_FAILURE
    say(f"✔ {cfg.name} answered in {answer.seconds * 1000:.0f} ms: {answer.prompt_tokens} prompt + "
        f"{answer.completion_tokens} completion tokens ({answer.tokens_per_second:.1f} tokens/s), model "
        f"{answer.model!r}")
    say(f"  {args.prompt!r} -> {answer.text!r}")
    return 0
