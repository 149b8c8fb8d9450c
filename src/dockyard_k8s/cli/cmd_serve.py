"""``dockyard-k8s serve check|render|up|down|status|test SPEC``: a model endpoint.

SPEC is an infra file with a ``serve:`` section (docs/serve.md). ``check`` and ``render`` are
offline and import nothing heavy.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from dockyard_k8s.cli._output import OK, WARN, object_ref, table
from dockyard_k8s.errors import UsageError

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import Serve
    from dockyard_k8s.config.serve import ServeConfig
    from dockyard_k8s.serve_bundle import ServeBundle

SPEC_HELP = """\
configuration layers, last wins (SPEC is an infra file with a serve: section):
  shipped defaults < platform profile < ~/.config/dockyard-k8s/defaults.yaml ($DOCKYARD_K8S_DEFAULTS)
  < SPEC (and its defaults: parents) < --set KEY=VALUE < -n
"""
EXAMPLES = """\
examples:
  dockyard-k8s serve check examples/llama3_8b_kind.serve.yaml
  dockyard-k8s serve render examples/llama3_8b_kind.serve.yaml -o build/llama    # + kustomization.yaml
  dockyard-k8s serve render examples/llama3_8b_kind.serve.yaml --format json

exit codes: 0 ok, 1 invalid rendered objects (a bug: nothing is printed), 2 bad input
"""


def register(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("serve",
                       description="A model endpoint: vLLM or SGLang behind a ClusterIP Service, with its model "
                                   "cache, a PriorityClass, default-deny NetworkPolicies and KEDA autoscaling, "
                                   "from the serve: section of an infra file. check/render are offline.",
                       epilog=SPEC_HELP + "\n" + EXAMPLES, formatter_class=formatter)
    ss = p.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)

    def sub_parser(name: str, description: str) -> argparse.ArgumentParser:
        q: argparse.ArgumentParser = ss.add_parser(name, help=description.split(".")[0], description=description,
                                                   epilog=SPEC_HELP + "\n" + EXAMPLES, formatter_class=formatter)
        add_spec_args(q)
        return q

    check = sub_parser("check", "Validate the serve spec, render every object, validate them strictly (Kubernetes "
                                "schemas, KEDA CRDs) and print a one-page summary. Nothing is sent to a cluster.")
    check.add_argument("-o", "--output", metavar="FILE.yaml|FILE.json",
                       help="also write the resolved config and the rendered objects to FILE")
    check.set_defaults(func=run_check)
    render = sub_parser("render", "Print the endpoint's objects in apply order (PriorityClass, NetworkPolicies, "
                                  "PVC, Deployment, Service, PDB, ScaledObject). With -o DIR, one file per object "
                                  "plus a kustomization.yaml.")
    render.add_argument("-o", "--output-dir", metavar="DIR", help="write one file per object into DIR")
    render.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default yaml)")
    render.set_defaults(func=run_render)



def add_spec_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="serve spec: an infra YAML file with a serve: section")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override a key, e.g. --set serve.replicas=2 (repeatable)")
    parser.add_argument("-n", "--namespace", help="namespace (same as --set infra.namespace=NS)")


def load_serve_bundle(args: argparse.Namespace) -> ServeBundle:
    from dockyard_k8s.config.loader import Setting
    from dockyard_k8s.serve_bundle import build_serve_bundle

    values = [Setting(("infra", "namespace"), args.namespace, f"-n {args.namespace}")] if args.namespace else []
    return build_serve_bundle(args.spec, sets=args.sets, env=os.environ, values=values)


# --- check / render -------------------------------------------------------------------------------


def run_check(args: argparse.Namespace) -> int:
    if args.output and not args.output.endswith((".yaml", ".yml", ".json")):
        raise UsageError(f"-o {args.output}: expected a file name ending in .yaml or .json")
    bundle = load_serve_bundle(args)
    if args.output:
        from dockyard_k8s.render.serialize import dump_json, dump_yaml

        doc = {"config": {"infra": bundle.config.infra["infra"], "serve": bundle.config.serve},
               "objects": bundle.objects}
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(dump_json(doc) if args.output.endswith(".json") else dump_yaml(doc))
    print(summary(bundle.config, bundle.objects))
    if bundle.validation is not None:
        print(f"\n{WARN if bundle.validation.missing else OK} {bundle.validation.coverage()}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


def run_render(args: argparse.Namespace) -> int:
    import sys

    from dockyard_k8s.cli.cmd_render import write_objects
    from dockyard_k8s.render.serialize import as_list, dump_documents, dump_json

    bundle = load_serve_bundle(args)
    if bundle.validation is not None and bundle.validation.missing:  # stdout is the YAML: say it on stderr
        print(f"warning: {bundle.validation.coverage()}", file=sys.stderr)
    if not args.output_dir:
        print(dump_json(as_list(bundle.objects)) if args.format == "json" else dump_documents(bundle.objects), end="")
        return 0
    files = write_objects(bundle.objects, args.output_dir, args.format)
    print(f"wrote {len(files)} objects + kustomization.yaml to {args.output_dir}")
    return 0


def _peers(items: list[dict[str, Any]], fmt: Any) -> str:
    return ", ".join(fmt(i) for i in items) or "-"


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
    return f"default-deny; port {s['port']} {callers}; egress {', '.join(egress)}"


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
    from dockyard_k8s.config.serve import rollout_strategy
    from dockyard_k8s.config.serve_schema import backend_of
    from dockyard_k8s.render.serve import service_url

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
                   f"per pod (Prometheus {auto['prometheusAddress']})")
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
        ["rollout", rollout],
        ["cache", _cache_line(cfg)],
        ["network", _network_line(cfg)],
        ["url", f"{service_url(cfg)}/v1 (OpenAI API)"],
    ]
    lines.append(table(rows, indent="  "))
    if s["network"]["runs"]:
        lines.append("  note: a run under infra.networkPolicy.defaultDeny also needs egress to this endpoint "
                     "(its infra.networkPolicy.extraEgress; docs/serve.md, \"Runs calling the endpoint\")")
    lines.append("\nobjects (apply order)")
    lines.append(table([[i, object_ref(o)] for i, o in enumerate(objects, 1)], indent="  "))
    return "\n".join(lines)
