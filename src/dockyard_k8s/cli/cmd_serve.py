"""``dockyard-k8s serve check|render|up|down|status|test SPEC``: a model endpoint.

SPEC is an infra file with a ``serve:`` section (docs/serve.md). This module is the offline side:
the ``serve`` parser with every subcommand's flags, ``check`` and ``render`` (they import nothing
heavy). The live subcommands' handlers (``up``, ``status``, ``logs``, ``down``, ``test``) are
``cmd_serve_live.py``'s, imported with the cluster client only when one of them runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dockyard_k8s.cli._output import (
    OK,
    WARN,
    add_objects_output_args,
    add_output_arg,
    check_output_paths,
    prerequisite_header,
    prerequisite_section,
    print_objects,
    table,
)
from dockyard_k8s.cli._runargs import CLUSTER_HELP, NAMESPACE_HELP, add_apply_args, add_cluster_args, add_log_args
from dockyard_k8s.cli._targets import load_serve_bundle
from dockyard_k8s.config.serve import ServeConfig, rollout_strategy, scrape_mechanism
from dockyard_k8s.config.serve_schema import backend_of
from dockyard_k8s.kube import missing_references, object_ref
from dockyard_k8s.output import document_path, write_document
from dockyard_k8s.render.serve import service_url, spread_constraints

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import Serve

SPEC_HELP = """\
configuration layers, last wins (SPEC is an infra file with a serve: section):
  shipped defaults < platform profile < ~/.config/dockyard-k8s/defaults.yaml ($DOCKYARD_K8S_DEFAULTS)
  < SPEC (and its defaults: parents) < --set KEY=VALUE < -n
"""
EXAMPLES = """\
examples:
  dockyard-k8s serve check examples/llama3_8b_kind.serve.yaml
  dockyard-k8s serve render examples/llama3_8b_kind.serve.yaml --output-dir build/llama   # + kustomization.yaml
  dockyard-k8s serve up examples/llama3_8b_kind.serve.yaml                       # apply, follow until Ready
  dockyard-k8s serve test examples/llama3_8b_kind.serve.yaml                     # one completion, timed
  dockyard-k8s serve status examples/llama3_8b_kind.serve.yaml
  dockyard-k8s serve logs examples/llama3_8b_kind.serve.yaml --follow
  dockyard-k8s serve down examples/llama3_8b_kind.serve.yaml --delete-cache
  dockyard-k8s lint --serve examples/llama3_8b_kind.serve.yaml; dockyard-k8s plan --serve SPEC --nodes nodes.yaml

exit codes: 0 ok, 1 failure (invalid objects, not Ready, no valid answer, API error), 2 bad input, 130 interrupted
"""


def register(sub: Any) -> None:
    p = sub.add_parser("serve",
                       description="A model endpoint: vLLM or SGLang behind a ClusterIP Service, with its model "
                                   "cache, a PriorityClass, default-deny NetworkPolicies and KEDA autoscaling, "
                                   "from the serve: section of an infra file. check/render are offline.",
                       epilog=SPEC_HELP + "\n" + EXAMPLES)
    ss = p.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)

    def sub_parser(name: str, description: str, *, live: bool = False) -> argparse.ArgumentParser:
        q: argparse.ArgumentParser = ss.add_parser(name, help=description.split(".")[0], description=description,
                                                   epilog=SPEC_HELP + ("\n" + CLUSTER_HELP if live else "")
                                                   + "\n" + EXAMPLES)
        q.add_argument("spec", metavar="SPEC", help="serve spec: an infra YAML file with a serve: section")
        q.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a key, e.g. --set serve.replicas=2 (repeatable)")
        q.add_argument("-n", "--namespace", help=NAMESPACE_HELP)
        if live:
            add_cluster_args(q)
        return q

    check = sub_parser("check", "Validate the serve spec, render every object, validate them strictly (Kubernetes "
                                "schemas, KEDA CRDs) and print a one-page summary. Nothing is sent to a cluster.")
    add_output_arg(check, ("text",))
    check.add_argument("--output-file", metavar="FILE.yaml|FILE.json",
                       help="also write the resolved config and the rendered objects to FILE")
    check.set_defaults(func=run_check)
    render = sub_parser("render", "Print the endpoint's objects in apply order (PriorityClass, NetworkPolicies, "
                                  "PVC, Deployment, Service, PDB, ScaledObject). With --output-dir DIR, one file per "
                                  "object plus a kustomization.yaml.")
    add_objects_output_args(render)
    render.set_defaults(func=run_render)

    up = sub_parser("up", "Apply with server-side apply (field manager dockyard-k8s), then follow until the "
                          "endpoint is Ready (its rollout complete), explaining every pod problem (image pull, "
                          "scheduling, OOM, crash loop, PVC pending, failing probes) as it happens. Re-running an "
                          "unchanged spec changes nothing; Ctrl-C stops following only.", live=True)
    add_apply_args(up, until="Ready", keeps="the endpoint keeps starting")
    up.set_defaults(func=_live_handler("run_up"))

    status = sub_parser("status", "The endpoint on one screen: Deployment rollout, pods, cache claim, autoscaler, "
                                  "and the problems explaining anything not ready. Exit 1 when nothing exists.",
                        live=True)
    add_output_arg(status, ("text", "json"))
    status.set_defaults(func=_live_handler("run_status"))

    logs = sub_parser("logs", "Logs of the server pods (several merged, prefixed serve/pod).", live=True)
    logs.add_argument("--pod", metavar="NAME", help="one pod of the endpoint")
    add_log_args(logs)
    logs.set_defaults(func=_live_handler("run_logs"))

    down = sub_parser("down", "Delete every object labelled dockyard-k8s/endpoint=<name>, the ScaledObject and "
                              "Deployment first, the NetworkPolicies once the server pods are gone. The cache claim "
                              "and the (shared) PriorityClass are kept unless asked. Idempotent.", live=True)
    down.add_argument("--delete-cache", action="store_true", help="also delete the model cache claim (weights)")
    down.add_argument("--dry-run", action="store_true", help="server dry run: report, delete nothing")
    down.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                      help="wait at most SECONDS for the pods to be gone before the NetworkPolicies are deleted "
                           "(default 600; then they are kept, exit 1)")
    down.set_defaults(func=_live_handler("run_down"))

    test = sub_parser("test", "Send one OpenAI completion request to the endpoint (through kubectl port-forward "
                              "to its Service, or --address) and print latency and tokens. Exit 0 only on a valid "
                              "answer.", live=True)
    test.add_argument("--address", metavar="URL", help="the server's base URL (no port-forward), e.g. "
                                                       "http://127.0.0.1:8000")
    test.add_argument("--prompt", default="The capital of France is", help="prompt text")
    test.add_argument("--max-tokens", type=int, default=16, metavar="N", help="tokens to generate (default 16)")
    test.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                      help="how long to wait for the answer (default 120)")
    test.set_defaults(func=_live_handler("run_test"))


def _live_handler(name: str) -> Callable[[argparse.Namespace], int]:
    """A live subcommand's handler in ``cmd_serve_live``, imported when it runs: the cluster client
    stays out of ``serve check`` and ``serve render`` (test_offline_imports)."""

    def handler(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module("dockyard_k8s.cli.cmd_serve_live"), name)(args))

    return handler


# --- check / render -------------------------------------------------------------------------------


def run_check(args: argparse.Namespace) -> int:
    out = args.output_file
    if out:
        document_path(out)
    check_output_paths(args)
    bundle = load_serve_bundle(args)
    if out:
        write_document(out, {"config": {"infra": bundle.config.infra["infra"], "serve": bundle.config.serve},
                             "objects": bundle.objects})
    print(summary(bundle.config, bundle.objects))
    print(f"\n{WARN if bundle.validation.missing else OK} {bundle.validation.coverage()}")
    if out:
        print(f"wrote {out}")
    return 0


def run_render(args: argparse.Namespace) -> int:
    check_output_paths(args)
    bundle = load_serve_bundle(args)
    header = prerequisite_header(missing_references(bundle.objects), "dockyard-k8s serve check lists them")
    return print_objects(args, bundle.objects, bundle.validation, header=header)


def _network_line(cfg: ServeConfig) -> str:
    s = cfg.serve
    net = s["network"]
    if not net["defaultDeny"]:
        return "NetworkPolicy OFF (every pod of the cluster can call it)"
    ingress = [p["namespace"] + (f" {p['podLabels']}" if p["podLabels"] else "") for p in net["ingress"]]
    ingress += [f"run {r['namespace'] or cfg.namespace}/{r['name']}" + (" + its sandbox" if r["sandbox"] else "")
                for r in net["runs"]]
    ingress += ["extraIngress"] * bool(net["extraIngress"])
    egress = ["DNS"] + [f"{p['namespace']}:{','.join(map(str, p['ports']))}" for p in net["egress"]]
    if net["httpsEgress"]:
        egress.append("HTTPS to public addresses")
    egress += ["extraEgress"] * bool(net["extraEgress"])
    callers = f"from {', '.join(ingress)} (sandbox pools excluded)" if ingress else \
        "from no pod (port-forward only: serve.network.ingress)"
    deny = f"default-deny (every pod of namespace {cfg.namespace})" if net["scope"] == "namespace" else "default-deny"
    return f"{deny}; port {s['port']} {callers}; egress {', '.join(egress)}"


def _auth_line(s: Serve) -> str:
    """Who may use the API: the key callers must send, and SGLang's admin endpoints."""
    keys = s["apiKeySecret"]
    sglang = s["backend"] == "sglang"
    if not keys["name"]:
        return ("none: every caller the policies admit may use the API"
                + (", and SGLang's admin endpoints (weight updates, cache flush, profiling, abort) too"
                   if sglang else "") + ": serve.apiKeySecret")
    line = f"API key from Secret {keys['name']}/{keys['key']} (Authorization: Bearer; /health and /metrics stay open)"
    if sglang:
        line += (f"; admin endpoints need the admin key (Secret {keys['name']}/{keys['adminKey']}), which callers "
                 "never get")
    return line


def _spread_line(cfg: ServeConfig) -> str:
    return "; ".join(f"{'across nodes' if c.get('topologyKey') == 'kubernetes.io/hostname' else 'across'} "
                     f"({c.get('topologyKey')}, maxSkew {c.get('maxSkew')}, {c.get('whenUnsatisfiable')})"
                     for c in spread_constraints(cfg))


def _fallback_words(auto: Any) -> str:
    fb = auto["fallback"]
    n = fb["replicas"] or auto["minReplicas"]
    return {"static": f"sets {n} replica(s)", "currentReplicas": "holds the current replicas",
            "currentReplicasIfHigher": f"holds the current replicas (at least {n})",
            "currentReplicasIfLower": f"holds the current replicas (at most {n})"}[str(fb["behavior"])]


def _metrics_line(cfg: ServeConfig) -> str:
    """Which scrape mechanism is assumed: KEDA scales only on what Prometheus scrapes."""
    s = cfg.serve
    if scrape_mechanism(s) == "annotations":
        return ("prometheus.io/scrape annotations (a Prometheus with annotation-based pod discovery; "
                "prometheus-operator ignores them: serve.metrics.scrape: podMonitor)")
    labels = ",".join(f"{k}={v}" for k, v in s["metrics"]["podMonitorLabels"].items()) or "no label"
    helm = (", kube-prometheus-stack's default for a Helm release of that name"
            if list(s["metrics"]["podMonitorLabels"]) == ["release"] else "")
    return (f"PodMonitor {cfg.name} (prometheus-operator: scraped by a Prometheus whose podMonitorSelector matches "
            f"{labels}{helm}: serve.metrics.podMonitorLabels), port http /metrics")


def _model_line(s: Serve) -> str:
    m = s["model"]
    if m["path"] is not None:
        where = f"{m['path']} on claim {m['claimName']} (read-only at {m['mountPath']})"
    else:
        where = f"{m['id']}" + (f"@{m['revision']}" if m["revision"] else "") + " (hub"
        token = m["hubTokenSecret"]
        where += f"; token from Secret {token['name']}/{token['key']})" if token["name"] else "; no token)"
    return f"{where}, served as {m['servedName']!r}"


def _cache_line(cfg: ServeConfig) -> str:
    c = cfg.serve["cache"]
    if not c["enabled"]:
        return "none"
    where = f" at {c['mountPath']}" + (f" (subPath {c['subPath']})" if c["subPath"] else "")
    if c["perReplica"]:
        return f"one {c['size']} {c['accessMode']} claim per pod{where} (deleted with the pod)"
    if not c["create"]:
        return f"existing claim {c['claimName']} ({c['accessMode']}){where}"
    cls = c["storageClass"] or "default StorageClass"
    return f"PVC {c['claimName']} {c['size']} {c['accessMode']} ({cls}){where}, kept by serve down"


def summary(cfg: ServeConfig, objects: list[dict[str, Any]]) -> str:
    s = cfg.serve
    e, auto, pc = s["engine"], s["autoscaling"], s["priorityClass"]
    backend = backend_of(s)
    lines = [f"{OK} {cfg.name}: endpoint valid, {len(objects)} objects rendered"]
    size = f"{s['gpus']} GPU, cpu {s['cpu']}, memory {s['memory']}"
    size += f" / limit {s['memoryLimit']}" if s["memoryLimit"] else ""
    size += f", shm {s['shmSize']}"
    pod_extra = []
    runtime = cfg.infra["infra"]["runtimeClassName"]
    if runtime and s["gpus"]:
        pod_extra.append(f"runtimeClass {runtime}")
    if pc["name"]:
        pod_extra.append(f"priority {pc['name']} ({'created' if pc['create'] else 'must exist'})")
    if auto["enabled"]:
        scaling = (f"KEDA {auto['minReplicas']}-{auto['maxReplicas']} pods on {auto['query']} > {auto['threshold']} "
                   f"per pod (Prometheus {auto['prometheusAddress']}); scale-in after "
                   f"{auto['scaleDownStabilizationSeconds']} s of lower load (HPA scale-down stabilization); an "
                   f"empty result is an error, not 0: after {auto['fallback']['failureThreshold']} failed queries "
                   f"KEDA {_fallback_words(auto)}")
    else:
        scaling = f"{s['replicas']} pod(s), fixed"
    strategy = rollout_strategy(s)
    rollout = ("Recreate (the old pod frees its GPU before the new one starts)" if strategy == "Recreate" else
               f"RollingUpdate maxSurge {s['rollout']['maxSurge']}, maxUnavailable {s['rollout']['maxUnavailable']}")
    rows: list[list[Any]] = [
        ["spec", cfg.spec_file],
        ["infra", " < ".join(cfg.sources)],
        ["namespace", cfg.namespace],
    ]
    if cfg.infra["infra"]["platform"] != "generic":
        rows.append(["platform", cfg.infra["infra"]["platform"]])
    rows += [
        ["model", _model_line(s)],
        ["backend", f"{s['backend']} {s['image']} ({s['imagePullPolicy']}), port {s['port']}, health "
                    f"{backend.health_path}, queue metric {auto['metric']}"],
        ["engine", f"tensor parallel {e['tensorParallelSize']}, max model len {e['maxModelLen'] or 'model default'}, "
                   f"dtype {e['dtype']}, GPU memory {e['gpuMemoryUtilization']}"],
        ["pods", f"{size}" + (f"; {', '.join(pod_extra)}" if pod_extra else "")],
        ["scaling", scaling],
        *([["spread", _spread_line(cfg)]] if _spread_line(cfg) else []),
        ["metrics", _metrics_line(cfg)],
        ["rollout", rollout],
        ["cache", _cache_line(cfg)],
        ["network", _network_line(cfg)],
        ["auth", _auth_line(s)],
        ["url", f"{service_url(cfg)}/v1 (OpenAI API)"],
    ]
    lines.append(table(rows, indent="  "))
    if s["network"]["runs"]:
        lines.append("  note: a run under infra.networkPolicy.defaultDeny also needs egress to this endpoint "
                     "(its infra.networkPolicy.extraEgress; docs/serve.md, \"Runs calling the endpoint\")")
    lines += prerequisite_section(missing_references(objects), "must exist before `serve render | kubectl apply` "
                                                               "(`serve up` stops on any missing)")
    lines.append("\nobjects (apply order)")
    lines.append(table([[i, object_ref(o)] for i, o in enumerate(objects, 1)], indent="  "))
    return "\n".join(lines)
