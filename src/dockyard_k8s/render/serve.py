"""A model endpoint: resolved serve config -> its objects, in apply order.

    PriorityClass          serve.priorityClass.create (cluster-scoped; kept by `serve down`)
    NetworkPolicy x2       serve.network.defaultDeny: deny all, then the explicit allows
    PersistentVolumeClaim  the model cache (serve.cache, shared and created)
    Deployment             the vLLM / SGLang server
    Service                ClusterIP on the serving port
    PodDisruptionBudget    serve.pdb
    PodMonitor             serve.metrics (prometheus-operator's scrape of /metrics)
    ScaledObject           serve.autoscaling (KEDA, keda.sh/v1alpha1)

Every object carries ``dockyard-k8s/endpoint=<name>`` (render/meta.py); the pods are fleet
``serve``. Pure functions: the same config gives byte-identical objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.serve import ServeConfig, max_replicas, rollout_strategy, scrape_mechanism, shared_cache
from dockyard_k8s.config.serve_schema import backend_of
from dockyard_k8s.kube import GPU
from dockyard_k8s.plain import clone
from dockyard_k8s.render import meta
from dockyard_k8s.render.meta import RUN_LABEL, env_list, metadata, placement, pod_labels, pull_secrets, quantity
from dockyard_k8s.render.meta import selector as _selector
from dockyard_k8s.render.network import DNS_PORTS, NAMESPACE_LABEL, OPEN_EGRESS, dns_peer, egress_blocks, not_sandbox
from dockyard_k8s.render.platform import KEEP_ANNOTATION, add_runtime_class, padded_deadline
from dockyard_k8s.render.sandbox import container_security

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import Serve, ServeCache

FLEET = "serve"
CACHE_VOLUME = "model-cache"
MODEL_VOLUME = "model"
SHM_VOLUME = "dshm"
_BASELINE = {"runAsNonRoot": False, "runAsUser": None, "readOnlyRootFilesystem": False}
METRICS_PATH = "/metrics"  # vLLM's and SGLang's (--enable-metrics) Prometheus endpoint
API_KEY_VAR = "DOCKYARD_API_KEY"  # serve.apiKeySecret, passed as --api-key $(...)
ADMIN_KEY_VAR = "DOCKYARD_ADMIN_API_KEY"  # SGLang's --admin-api-key


def _meta(cfg: ServeConfig, name: str, *, namespaced: bool = True) -> dict[str, Any]:
    return metadata(cfg.infra, name, meta.FLEETS[FLEET], namespaced=namespaced, endpoint=cfg.name)


def selector(cfg: ServeConfig) -> dict[str, str]:
    """Labels selecting the server pods (immutable in a Deployment: never change them)."""
    return _selector(cfg.infra, FLEET, endpoint=cfg.name)


def render_serve(cfg: ServeConfig) -> list[dict[str, Any]]:
    """Every object of the endpoint, in apply order (module docstring)."""
    s = cfg.serve
    out: list[dict[str, Any]] = []
    if s["priorityClass"]["create"]:
        out.append(priority_class(cfg))
    out += network_policies(cfg)
    if shared_cache(s) and s["cache"]["create"]:
        out.append(cache_claim(cfg))
    out += [deployment(cfg), service(cfg)]
    if s["pdb"]["enabled"]:
        out.append(meta.pdb(_meta(cfg, cfg.name), s["pdb"]["maxUnavailable"], {"matchLabels": selector(cfg)}))
    if scrape_mechanism(s) == "podMonitor":
        out.append(pod_monitor(cfg))
    if s["autoscaling"]["enabled"]:
        out.append(scaled_object(cfg))
    return out


def pod_monitor(cfg: ServeConfig) -> dict[str, Any]:
    """prometheus-operator's scrape of the server pods (it ignores prometheus.io/* annotations)."""
    meta = _meta(cfg, cfg.name)
    meta["labels"] = {**meta["labels"], **cfg.serve["metrics"]["podMonitorLabels"]}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": meta,
            "spec": {"selector": {"matchLabels": selector(cfg)},
                     "podMetricsEndpoints": [{"port": "http", "path": METRICS_PATH}]}}


def priority_class(cfg: ServeConfig) -> dict[str, Any]:
    pc = cfg.serve["priorityClass"]
    return meta.priority_class(_meta(cfg, str(pc["name"]), namespaced=False), pc,
                               "Model endpoints of dockyard-k8s: never evicted in favour of best-effort pods.")


# --- network -------------------------------------------------------------------------------------


def _namespace(name: str) -> dict[str, Any]:
    return {"matchLabels": {NAMESPACE_LABEL: name}}


def _pods(labels: dict[str, str], *, sandbox: bool = False) -> dict[str, Any]:
    sel = {"matchLabels": dict(labels)} if labels else {}
    return sel if sandbox else not_sandbox(sel)  # sandbox pools run untrusted code


def ingress_rules(cfg: ServeConfig) -> list[dict[str, Any]]:
    """Who may call the serving port: named namespaces (sandbox pools excepted), runs' pods
    (their sandbox pool only when a run says so), then serve.network.extraIngress."""
    net, port = cfg.serve["network"], [{"protocol": "TCP", "port": cfg.serve["port"]}]
    rules = [{"from": [{"namespaceSelector": _namespace(peer["namespace"]), "podSelector": _pods(peer["podLabels"])}],
              "ports": clone(port)} for peer in net["ingress"]]
    rules += [{"from": [{"namespaceSelector": _namespace(run["namespace"] or cfg.namespace),
                         "podSelector": _pods({RUN_LABEL: run["name"]}, sandbox=run["sandbox"])}],
               "ports": clone(port)} for run in net["runs"]]
    return rules + clone(net["extraIngress"])


def egress_rules(cfg: ServeConfig) -> list[dict[str, Any]]:
    """Cluster DNS, the named internal services, HTTPS to public addresses only, extraEgress."""
    net = cfg.serve["network"]
    rules: list[dict[str, Any]] = [{"to": [dns_peer()], "ports": clone(DNS_PORTS)}]
    rules += [{"to": [{"namespaceSelector": _namespace(peer["namespace"]),
                       "podSelector": {"matchLabels": dict(peer["podLabels"])} if peer["podLabels"] else {}}],
               "ports": [{"protocol": "TCP", "port": p} for p in peer["ports"]]} for peer in net["egress"]]
    if net["httpsEgress"]:
        rules.append({"to": egress_blocks(list(OPEN_EGRESS), net["privateCidrs"]),
                      "ports": [{"protocol": "TCP", "port": 443}]})
    return rules + clone(net["extraEgress"])


def network_policies(cfg: ServeConfig) -> list[dict[str, Any]]:
    """Deny everything for the server pods, then allow what the spec lists (policies add up)."""
    if not cfg.serve["network"]["defaultDeny"]:
        return []
    pods = {"matchLabels": selector(cfg)}
    covered = {} if cfg.serve["network"]["scope"] == "namespace" else clone(pods)
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _meta(cfg, f"{cfg.name}-default-deny"),
            "spec": {"podSelector": covered, "policyTypes": ["Ingress", "Egress"]}}
    spec: dict[str, Any] = {"podSelector": clone(pods), "policyTypes": ["Ingress", "Egress"]}
    ingress = ingress_rules(cfg)
    if ingress:
        spec["ingress"] = ingress
    spec["egress"] = egress_rules(cfg)
    allow = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(cfg, f"{cfg.name}-allow"),
             "spec": spec}
    return [deny, allow]


# --- storage -------------------------------------------------------------------------------------


def _claim_spec(cache: ServeCache) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": [cache["accessMode"]],
                            "resources": {"requests": {"storage": quantity(cache["size"])}}}
    if cache["storageClass"]:
        spec["storageClassName"] = cache["storageClass"]
    return spec


def cache_claim(cfg: ServeConfig) -> dict[str, Any]:
    cache = cfg.serve["cache"]
    meta = _meta(cfg, str(cache["claimName"]))
    meta["annotations"] = {KEEP_ANNOTATION: "true"}  # weights outlive the endpoint: `serve down` keeps them
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": _claim_spec(cache)}


def _volumes(cfg: ServeConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, the server's volume mounts): /dev/shm, the cache, the model claim."""
    s = cfg.serve
    cache, model = s["cache"], s["model"]
    volumes: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory",
                                                                      "sizeLimit": quantity(s["shmSize"])}}]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    if cache["enabled"]:
        if cache["perReplica"]:
            template = {"metadata": {"labels": pod_labels(cfg.infra, FLEET, endpoint=cfg.name)},
                        "spec": _claim_spec(cache)}
            volumes.append({"name": CACHE_VOLUME, "ephemeral": {"volumeClaimTemplate": template}})
        else:
            volumes.append({"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": cache["claimName"]}})
        mount = {"name": CACHE_VOLUME, "mountPath": cache["mountPath"]}
        if cache["subPath"]:
            mount["subPath"] = cache["subPath"]
        mounts.append(mount)
    if model["path"] is not None:
        same = shared_cache(s) and model["claimName"] == cache["claimName"]
        if not same:
            volumes.append({"name": MODEL_VOLUME,
                            "persistentVolumeClaim": {"claimName": model["claimName"], "readOnly": True}})
        mounts.append({"name": CACHE_VOLUME if same else MODEL_VOLUME, "mountPath": model["mountPath"],
                       "readOnly": True})
    return volumes, mounts


# --- the server ----------------------------------------------------------------------------------


def _number(value: Any) -> str:
    return format(value, "g") if isinstance(value, float) else str(value)


def server_command(cfg: ServeConfig) -> tuple[list[str], list[str]]:
    """(command, args) of the model server: our options in the backend's flags, then extraArgs."""
    s = cfg.serve
    b = backend_of(s)
    model, engine, f = s["model"], s["engine"], b.flags
    args = [f["model"], str(model["id"] or model["path"]), f["servedName"], str(model["servedName"]),
            f["host"], "0.0.0.0", f["port"], str(s["port"]),
            f["tensorParallelSize"], str(engine["tensorParallelSize"])]
    if engine["maxModelLen"] is not None:
        args += [f["maxModelLen"], str(engine["maxModelLen"])]
    args += [f["dtype"], engine["dtype"], f["gpuMemoryUtilization"], _number(engine["gpuMemoryUtilization"])]
    if model["id"] and model["revision"]:
        args += [f["revision"], str(model["revision"])]
    if s["apiKeySecret"]["name"]:  # by reference: Kubernetes expands $(VAR) from the container's env
        args += [f["apiKey"], f"$({API_KEY_VAR})"]
        if "adminApiKey" in f:
            args += [f["adminApiKey"], f"$({ADMIN_KEY_VAR})"]
    return list(b.command), [*args, *b.extra, *engine["extraArgs"]]


def _env(cfg: ServeConfig) -> list[dict[str, Any]]:
    s = cfg.serve
    out: list[dict[str, Any]] = []
    if s["cache"]["enabled"]:
        out.append({"name": "HF_HOME", "value": s["cache"]["mountPath"]})
    if s["model"]["path"] is not None:
        out.append({"name": "HF_HUB_OFFLINE", "value": "1"})  # local weights: never reach for the hub
    token = s["model"]["hubTokenSecret"]
    if token["name"]:
        out.append(meta.secret_env("HF_TOKEN", token["name"], token["key"]))
    keys = s["apiKeySecret"]
    if keys["name"]:
        out.append(meta.secret_env(API_KEY_VAR, keys["name"], keys["key"]))
        if "adminApiKey" in backend_of(s).flags:
            out.append(meta.secret_env(ADMIN_KEY_VAR, keys["name"], keys["adminKey"]))
    return out + env_list(s["env"]) + [meta.secret_env(name, ref["secret"], ref["key"])
                                       for name, ref in s["secretEnv"].items()]


def _resources(s: Serve) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": quantity(s["cpu"]), "memory": quantity(s["memory"])}
    limits: dict[str, str] = {}
    if s["cpuLimit"] is not None:
        limits["cpu"] = quantity(s["cpuLimit"])
    if s["memoryLimit"] is not None:
        limits["memory"] = quantity(s["memoryLimit"])
    extended = {**({GPU: s["gpus"]} if s["gpus"] else {}), **s["extendedResources"]}
    for name, amount in extended.items():
        requests[name] = limits[name] = quantity(amount)
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


def _probes(cfg: ServeConfig) -> dict[str, Any]:
    """Start-up probe covers the weight download and load; then readiness and liveness."""
    s = cfg.serve
    get = {"path": backend_of(s).health_path, "port": "http"}
    period = s["probes"]["periodSeconds"]
    startup = s["probes"]["startupSeconds"]
    return {
        "startupProbe": {"httpGet": dict(get), "periodSeconds": 10, "timeoutSeconds": 5,
                         "failureThreshold": max(1, -(-startup // 10))},
        "readinessProbe": {"httpGet": dict(get), "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"httpGet": dict(get), "periodSeconds": 20, "timeoutSeconds": 10, "failureThreshold": 3},
    }


def spread_constraints(cfg: ServeConfig) -> list[dict[str, Any]]:
    """serve.topologySpreadConstraints with the server pods as labelSelector; by default, with
    several replicas, one soft constraint across nodes, per ReplicaSet (``pod-template-hash``), so
    a rollout's new pods spread among themselves instead of around the old ones."""
    s = cfg.serve
    own = {"matchLabels": selector(cfg)}
    if s["topologySpreadConstraints"] is None:
        if max_replicas(s) < 2:
            return []
        return [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                 "labelSelector": own, "matchLabelKeys": ["pod-template-hash"]}]
    return [{**clone(c), "labelSelector": clone(c.get("labelSelector") or own)} for c in s["topologySpreadConstraints"]]


def deployment(cfg: ServeConfig) -> dict[str, Any]:
    s = cfg.serve
    infra = cfg.infra
    command, args = server_command(cfg)
    volumes, mounts = _volumes(cfg)
    container: dict[str, Any] = {
        "name": str(s["backend"]),
        "image": s["image"],
        "imagePullPolicy": s["imagePullPolicy"],
        "command": command,
        "args": args,
        "ports": [{"name": "http", "containerPort": s["port"], "protocol": "TCP"}],
        "env": _env(cfg),
        "resources": _resources(s),
        **_probes(cfg),
        "volumeMounts": mounts,
        # The baseline the sandbox gets: the server needs no privilege and no capability.
        "securityContext": container_security(_BASELINE),
    }
    pod: dict[str, Any] = {"automountServiceAccountToken": False, "enableServiceLinks": False}
    if s["priorityClass"]["name"]:
        pod["priorityClassName"] = s["priorityClass"]["name"]
    pod.update(pull_secrets(infra))
    pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    pod.update(placement(s))
    spread = spread_constraints(cfg)
    if spread:
        pod["topologySpreadConstraints"] = spread
    pod["containers"] = [container]
    pod["volumes"] = volumes
    add_runtime_class(infra, pod)  # kind/k3s: nvidia, else the GPU is invisible
    spec: dict[str, Any] = {}
    if not s["autoscaling"]["enabled"]:
        spec["replicas"] = s["replicas"]  # with KEDA the HPA owns it: applying a count would fight it
    # A rollout counts as stuck only after a cold pull plus the whole start-up allowance.
    spec["progressDeadlineSeconds"] = padded_deadline(infra, s["probes"]["startupSeconds"] + 600)
    r = s["rollout"]
    spec["strategy"] = {"type": "Recreate"} if rollout_strategy(s) == "Recreate" else {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": r["maxSurge"], "maxUnavailable": r["maxUnavailable"]}}
    spec["selector"] = {"matchLabels": selector(cfg)}
    template: dict[str, Any] = {"labels": pod_labels(infra, FLEET, endpoint=cfg.name)}
    if scrape_mechanism(s) == "annotations":  # one mechanism only: a Prometheus doing both would count twice
        template["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": str(s["port"]),
                                   "prometheus.io/path": METRICS_PATH}
    spec["template"] = {"metadata": template, "spec": pod}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(cfg, cfg.name), "spec": spec}


def service(cfg: ServeConfig) -> dict[str, Any]:
    return meta.http_service(_meta(cfg, cfg.name), selector(cfg), cfg.serve["port"])


def service_url(cfg: ServeConfig) -> str:
    """Cluster DNS URL of the endpoint (OpenAI base URL: append /v1)."""
    domain = cfg.infra["infra"]["clusterDomain"]
    return f"http://{cfg.name}.{cfg.namespace}.svc.{domain}:{cfg.serve['port']}"


def fallback(auto: Any) -> dict[str, Any]:
    """KEDA's fallback after ``failureThreshold`` failed queries (its replicas default to the minimum)."""
    fb = auto["fallback"]
    return {"failureThreshold": fb["failureThreshold"], "replicas": fb["replicas"] or auto["minReplicas"],
            "behavior": fb["behavior"]}


def scaled_object(cfg: ServeConfig) -> dict[str, Any]:
    """KEDA scales the Deployment on the backend's queue gauge (AverageValue: queued per pod)."""
    auto = cfg.serve["autoscaling"]
    # ignoreNullValues false: an empty result (the metric is not scraped) is an error, which the
    # fallback answers, never a 0 that scales in (KEDA docs: the Prometheus scaler)
    trigger: dict[str, Any] = {"type": "prometheus", "metadata": {
        "serverAddress": auto["prometheusAddress"], "query": auto["query"], "threshold": _number(auto["threshold"]),
        "ignoreNullValues": "false"}}
    if auto["authenticationRef"]:
        trigger["authenticationRef"] = {"name": auto["authenticationRef"]}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _meta(cfg, cfg.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": cfg.name},
            "pollingInterval": auto["pollingInterval"],
            "minReplicaCount": auto["minReplicas"],
            "maxReplicaCount": max_replicas(cfg.serve),
            "fallback": fallback(auto),
            # KEDA's cooldownPeriod only delays scaling to zero (never done: loading weights takes
            # minutes); from 1 to N the HPA scales in after its scale-down stabilization window.
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                "stabilizationWindowSeconds": auto["scaleDownStabilizationSeconds"]}}}},
            "triggers": [trigger],
        },
    }
