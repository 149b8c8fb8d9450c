"""The ``serve`` section of the infra spec: a model endpoint (vLLM or SGLang).

Why a section of the infra spec and not a file kind of its own (docs/serve.md says it for
users): the endpoint needs what the infra spec already holds — namespace, platform profile,
pull secrets and policy, labels, pinned-image policy, the run's shared storage claim when it
serves a checkpoint — and the infra spec already has the layering, ``--set``, ``${VAR}``, the
strict file:line checks and the one JSON Schema editors use. A serve file is an infra file
with a ``serve:`` section (``defaults:`` can inherit a run's infra file); runs ignore it.

This module is data: the schema (``SERVE``, mounted as ``INFRA["properties"]["serve"]``) and
the facts of each backend (``BACKENDS``). ``config/serve.py`` fills the derived defaults and
checks the cross-field rules; ``render/serve.py`` renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dockyard_k8s.config.network import INTERNAL_CIDRS
from dockyard_k8s.config.schema import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    GPU_TOLERATIONS,
    HUB_ID,
    Schema,
    array,
    boolean,
    integer,
    number,
    obj,
    quantity,
    string,
    string_map,
)

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import Serve


@dataclass(frozen=True, slots=True)
class Backend:
    """What one model server needs from us; ``flags`` maps our options to its command line."""

    image: str
    port: int
    health_path: str  # liveness, readiness and start-up probes
    metric: str  # Prometheus gauge of queued requests (KEDA's default trigger)
    command: tuple[str, ...]
    flags: dict[str, str]  # option -> flag
    extra: tuple[str, ...]  # always passed


# backend -> facts. Images are pinned release tags; override with serve.image.
BACKENDS: dict[str, Backend] = {
    # vLLM OpenAI-compatible server (docs.vllm.ai "Production Metrics", "Using Kubernetes"):
    # /health answers once the engine is up, /metrics carries vllm:num_requests_waiting.
    "vllm": Backend(
        image="vllm/vllm-openai:v0.11.0", port=8000, health_path="/health", metric="vllm:num_requests_waiting",
        command=("python3", "-m", "vllm.entrypoints.openai.api_server"),
        flags={"model": "--model", "servedName": "--served-model-name", "host": "--host", "port": "--port",
               "tensorParallelSize": "--tensor-parallel-size", "maxModelLen": "--max-model-len", "dtype": "--dtype",
               "gpuMemoryUtilization": "--gpu-memory-utilization", "revision": "--revision", "apiKey": "--api-key"},
        extra=()),
    # SGLang (docs "Production Metrics", python/sglang/srt/metrics/collector.py): metrics only
    # with --enable-metrics; sglang:num_queue_reqs is its queue gauge. v0.5.19-cu129 is the
    # last CUDA 12 image (SGLang install docs); newer tags need a CUDA 13 driver. Auth
    # (python/sglang/srt/utils/auth.py): --api-key guards every route but /health*, /ready* and
    # /metrics, and also unlocks the admin routes unless --admin-api-key is set, which then alone does.
    "sglang": Backend(
        image="lmsysorg/sglang:v0.5.19-cu129", port=30000, health_path="/health", metric="sglang:num_queue_reqs",
        command=("python3", "-m", "sglang.launch_server"),
        flags={"model": "--model-path", "servedName": "--served-model-name", "host": "--host", "port": "--port",
               "tensorParallelSize": "--tp-size", "maxModelLen": "--context-length", "dtype": "--dtype",
               "gpuMemoryUtilization": "--mem-fraction-static", "revision": "--revision", "apiKey": "--api-key",
               "adminApiKey": "--admin-api-key"},
        extra=("--enable-metrics",)),
}

_NAMESPACE = string("a namespace name", pattern=DNS1123_LABEL)
_POD_LABELS = string_map("Labels of the pods (all of them); empty: every pod of the namespace.",
                         values={"type": "string"})

_INGRESS_PEER = obj("Pods allowed to call the serving port.", {
    "namespace": _NAMESPACE,
    "podLabels": _POD_LABELS,
}, required=("namespace",))
_RUN_PEER = obj("A run whose pods call the endpoint (evaluation, sampling, a run's own checkpoint).", {
    "name": string("the run's name (its launch.name, label dockyard-k8s/run)", pattern=DNS1035_LABEL),
    "namespace": string("The run's namespace; defaults to the endpoint's.", None, nullable=True,
                        pattern=DNS1123_LABEL),
    "sandbox": boolean("Also admit the run's sandbox pool (untrusted code). Off: it never reaches the endpoint.",
                       False),
}, required=("name",))
_EGRESS_PEER = obj("An internal service the server may call (a secrets store, an OpenTelemetry collector).", {
    "namespace": _NAMESPACE,
    "podLabels": _POD_LABELS,
    "ports": array("a list of TCP ports", integer("A port.", minimum=1, maximum=65535)),
}, required=("namespace", "ports"))
_SECRET_REF = obj("A key of a Secret of the namespace.", {
    "secret": string("a Secret name", pattern=DNS1123_SUBDOMAIN),
    "key": string("Key inside the Secret.", "token"),
}, required=("secret",))

SERVE: Schema = obj("A model endpoint (`dockyard-k8s serve`; docs/serve.md): a vLLM or SGLang Deployment behind a "
                    "ClusterIP Service, its model cache, default-deny networking, KEDA autoscaling. Runs ignore "
                    "this section.", {
    "name": string("Endpoint name: names every object and labels them (dockyard-k8s/endpoint) for serve "
                   "status/down. Defaults to the spec file name (llama.serve.yaml -> llama).", None,
                   nullable=True, pattern=DNS1035_LABEL),
    "model": {**obj("What to serve: a hub id, or a directory on a claim (a run's checkpoint). Exactly one. "
                    "A string is short for {id: ...}: `model: Qwen/Qwen2.5-7B`.", {
        "id": string("Model hub id (org/name), downloaded into the cache at first start.", None, nullable=True,
                     pattern=HUB_ID),
        "revision": string("Hub revision (branch, tag or commit) to pin.", None, nullable=True),
        "path": string("Absolute directory of the weights inside the claim (a checkpoint a run wrote); "
                       "instead of id.", None, nullable=True),
        "claimName": string("Existing PersistentVolumeClaim holding path, mounted read-only; defaults to "
                            "infra.storage.claimName when infra.storage is enabled.", None, nullable=True,
                            pattern=DNS1123_SUBDOMAIN),
        "mountPath": string("Where that claim is mounted; path must be inside it. Defaults to "
                            "infra.storage.mountPath for that claim, else /models.", None, nullable=True),
        "servedName": string("Model name clients send (OpenAI `model`); defaults to id, or the endpoint name "
                             "for a path.", None, nullable=True),
        "hubTokenSecret": obj("Secret with a hub token for gated models, by reference only (exported as "
                              "HF_TOKEN); its value never appears in the spec or the objects.", {
            "name": string("Secret name; null: no token.", None, nullable=True, pattern=DNS1123_SUBDOMAIN),
            "key": string("Key inside the Secret.", "token"),
        }),
    }), "type": ["object", "string"], "pattern": HUB_ID, "x-shorthand": "id"},
    "backend": string("Model server: vllm (port 8000) or sglang (port 30000).", "vllm", enum=sorted(BACKENDS)),
    "image": string("Server image; defaults to the backend's pinned release (vllm: "
                    f"{BACKENDS['vllm'].image}; sglang: {BACKENDS['sglang'].image}).", None, nullable=True),
    "imagePullPolicy": string("Defaults to infra.imagePullPolicy.", None, nullable=True,
                              enum=["IfNotPresent", "Always", "Never"]),
    "port": integer("Serving port (container and Service); defaults to the backend's.", None, minimum=1,
                    maximum=65535, nullable=True),
    "engine": obj("Launch arguments, mapped to the backend's flags.", {
        "tensorParallelSize": integer("GPUs one model instance spans; defaults to serve.gpus (and must equal it).",
                                      None, minimum=1, nullable=True),
        "maxModelLen": integer("Context length (vllm --max-model-len, sglang --context-length); null: the "
                               "model's.", None, minimum=1, nullable=True),
        "dtype": string("Weight and activation dtype.", "auto", enum=["auto", "bfloat16", "float16", "float32"]),
        "gpuMemoryUtilization": number("Fraction of GPU memory for weights + KV cache (vllm "
                                       "--gpu-memory-utilization, sglang --mem-fraction-static).", 0.9,
                                       minimum=0.05, maximum=1.0),
        "extraArgs": array("More server arguments, appended verbatim.", {"type": "string"}, []),
    }),
    "replicas": integer("Server pods (without autoscaling).", 1, minimum=1),
    "gpus": integer("nvidia.com/gpu per pod (requests = limits).", 1, minimum=0),
    "cpu": quantity("CPU request per pod.", "4"),
    "memory": quantity("Memory request per pod.", "16Gi"),
    "cpuLimit": quantity("CPU limit; null: none (throttling the tokenizer and scheduler threads costs latency).",
                         None, nullable=True),
    "memoryLimit": quantity("Memory limit (loading weights goes through host memory).", "32Gi", nullable=True),
    "extendedResources": string_map("Other extended resources per pod, requests = limits.",
                                    values={"type": ["string", "integer"]}),
    "shmSize": quantity("Memory-backed /dev/shm (tensor parallelism uses it); null: lint.shmPerGpu per GPU "
                        "(8Gi), 1Gi without GPUs.", None, nullable=True),
    "nodeSelector": string_map("nodeSelector of the pods (label: value).", values={"type": "string"}),
    "tolerations": GPU_TOLERATIONS,
    "topologySpreadConstraints": array(
        "Spread of the server pods (labelSelector defaults to them). null: with more than one replica, one "
        "constraint across nodes (kubernetes.io/hostname, maxSkew 1, ScheduleAnyway, per rollout revision), so "
        "a node's loss (a drain, a bad GPU) takes one replica; []: none.", {"type": "object"}, None, nullable=True),
    "env": string_map("Extra environment variables of the server (name: value). Never a credential: see "
                      "secretEnv.", values={"type": ["string", "number", "boolean"]}),
    "apiKeySecret": obj("The API key callers must send (Authorization: Bearer), from a Secret of the namespace, by "
                        "reference: --api-key (vLLM: the /v1 routes; SGLang: every route), /health and /metrics "
                        "stay open for probes and Prometheus. Required when a run's sandbox may call the endpoint.", {
        "name": string("Secret name; null: no key (every caller the NetworkPolicies admit may use the API).", None,
                       nullable=True, pattern=DNS1123_SUBDOMAIN),
        "key": string("Key of the API key inside the Secret.", "api-key"),
        "adminKey": string("SGLang: key of the admin API key (--admin-api-key), which alone unlocks the admin "
                           "routes (weight updates, cache flush, profiling...), so holders of the API key cannot.",
                           "admin-api-key"),
    }),
    "secretEnv": {"type": "object", "default": {}, "additionalProperties": _SECRET_REF,
                  "description": "Environment variables from Secrets, by reference (NAME: {secret, key})."},
    "autoscaling": obj("KEDA ScaledObject on a Prometheus query of the backend's queue gauge (needs KEDA and a "
                       "Prometheus that scrapes the pods).", {
        "enabled": boolean("Render the ScaledObject; the Deployment's replicas are then KEDA's.", False),
        "minReplicas": integer("Fewest pods (loading weights takes minutes: no scale to zero).", 1, minimum=1),
        "maxReplicas": integer("Most pods.", 4, minimum=1),
        "metric": string("Queue gauge; defaults to the backend's (vllm:num_requests_waiting, "
                         "sglang:num_queue_reqs).", None, nullable=True),
        "threshold": number("Queued requests per pod that add a pod (KEDA AverageValue target).", 5,
                            minimum=0.001),
        "query": string("PromQL; defaults to sum(<metric>{namespace=\"<ns>\",model_name=\"<servedName>\"}).",
                        None, nullable=True),
        "prometheusAddress": string("Prometheus base URL as KEDA's operator reaches it.",
                                    "http://prometheus-operated.monitoring.svc:9090"),
        "pollingInterval": integer("Seconds between two queries.", 15, minimum=1),
        "scaleDownStabilizationSeconds": integer(
            "Scale-in delay: the HPA removes pods only when every recommendation of this many past seconds "
            "allows it (its scaleDown stabilization window; KEDA's cooldownPeriod applies only to scaling to "
            "zero, which serve never does).", 300, minimum=0, maximum=3600),
        "authenticationRef": string("A KEDA TriggerAuthentication of the namespace for Prometheus, by name.",
                                    None, nullable=True, pattern=DNS1123_SUBDOMAIN),
        "fallback": obj("What KEDA does when the query fails failureThreshold times in a row (an empty result "
                        "counts: ignoreNullValues is false, so a lost metric is never read as 0).", {
            "failureThreshold": integer("Failed queries in a row before the fallback.", 3, minimum=1),
            "replicas": integer("Fallback replicas; null: minReplicas.", None, minimum=1, nullable=True),
            "behavior": string("KEDA fallback.behavior: currentReplicasIfHigher keeps the current replicas when "
                               "there are more (never scales in on a lost metric); static: exactly `replicas`.",
                               "currentReplicasIfHigher",
                               enum=["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]),
        }),
    }) | {"x-moved": {
        "cooldownPeriod": "serve.autoscaling.scaleDownStabilizationSeconds (KEDA uses cooldownPeriod only when "
                          "scaling to zero, which serve never does: minReplicas >= 1; from 1 to N pods the HPA "
                          "scales, and its scale-down stabilization window is the scale-in delay)",
    }},
    "metrics": obj("How Prometheus finds the server's /metrics (the queue gauge KEDA scales on).", {
        "scrape": string("auto: a PodMonitor when autoscaling queries prometheus-operator's Prometheus (the default "
                         "prometheus-operated, or kube-prometheus-stack's <release>-kube-prom(etheus-stack)-prometheus "
                         "Service), else prometheus.io/* annotations; podMonitor; annotations (a Prometheus with "
                         "annotation-based pod discovery; prometheus-operator ignores them).", "auto",
                         enum=["auto", "podMonitor", "annotations"]),
        "podMonitorLabels": {**string_map("Labels of the PodMonitor: the Prometheus's podMonitorSelector must match "
                                          "them (kube-prometheus-stack selects release: <its Helm release name>; "
                                          "`release: null` drops the label).", values={"type": "string"},
                                          keys="label-key"), "default": {"release": "kube-prometheus-stack"}},
    }),
    "cache": obj("The model cache (HF_HOME): weights downloaded once, kept across restarts and `serve down`.", {
        "enabled": {"type": ["boolean", "null"], "default": None,
                    "description": "Mount a cache; null: on for a hub id, off for a path."},
        "create": boolean("Render the PersistentVolumeClaim (else claimName must exist). Kept on `serve down` "
                          "unless --delete-cache.", True),
        "claimName": string("Claim name; defaults to <name>-cache.", None, nullable=True, pattern=DNS1123_SUBDOMAIN),
        "storageClass": string("StorageClass of a created claim (null: the cluster default; kind/k3s profile: "
                               "the local-path class).", None, nullable=True),
        "size": quantity("Size of a created claim.", "100Gi"),
        "accessMode": string("Access mode of the claim (of an existing claim: what it is). ReadWriteOnce "
                             "attaches to one node: several replicas need ReadWriteMany or perReplica.",
                             "ReadWriteOnce",
                             enum=["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]),
        "mountPath": string("Where the cache is mounted (HF_HOME).", "/root/.cache/huggingface"),
        "subPath": string("Directory inside the claim (e.g. on a shared filesystem).", None, nullable=True),
        "perReplica": boolean("One claim per pod (generic ephemeral volume, deleted with the pod): any replica "
                              "count on ReadWriteOnce storage, at the price of a download per new pod.", False),
    }),
    "priorityClass": obj("PriorityClass of the server pods, so inference is never evicted for best-effort pods.", {
        "name": string("Its name; null: none.", "gpu-inference", nullable=True, pattern=DNS1123_SUBDOMAIN),
        "create": boolean("Render it (cluster-scoped; kind/k3s profile: on). Else it must exist.", False),
        "value": integer("Priority value.", 1000000, minimum=-2147483648, maximum=1000000000),
        "preemptionPolicy": string("Whether server pods preempt lower-priority pods.", "PreemptLowerPriority",
                                   enum=["PreemptLowerPriority", "Never"]),
    }),
    "network": obj("Default-deny for the server pods, then explicit allows. Port-forward (serve test) goes "
                   "through the kubelet and is not affected. Needs an enforcing CNI.", {
        "defaultDeny": boolean("Render the deny-all and allow NetworkPolicies.", True),
        "scope": string("endpoint: the deny covers the server pods; namespace: every pod of the namespace (the "
                        "allows are the server pods' only), as a run's infra.networkPolicy.scope.", "endpoint",
                        enum=["endpoint", "namespace"]),
        "ingress": array("Callers of the serving port by namespace (gateway, monitoring, evaluation jobs); "
                         "sandbox pools are excluded.", _INGRESS_PEER, []),
        "runs": array("Runs whose pods call the endpoint; their sandbox pool only with sandbox: true.", _RUN_PEER,
                      []),
        "egress": array("Internal services the server may call ({namespace, podLabels, ports}).", _EGRESS_PEER,
                        []),
        "httpsEgress": boolean("Allow TCP 443 to public addresses (the model hub); private ranges excepted.", True),
        "privateCidrs": array("Excepted from HTTPS egress.", string("A CIDR block.", fmt="cidr"),
                              list(INTERNAL_CIDRS)),
        "extraIngress": array("More NetworkPolicyIngressRule objects.", {"type": "object"}, []),
        "extraEgress": array("More NetworkPolicyEgressRule objects.", {"type": "object"}, []),
    }),
    "probes": obj("Health probes on the backend's health path.", {
        "startupSeconds": integer("Time allowed to download and load the weights before liveness counts "
                                  "(infra.imagePull.coldPullSeconds is added to the rollout deadline).", 1800,
                                  minimum=10),
        "periodSeconds": integer("Seconds between two readiness checks.", 10, minimum=1),
    }),
    "rollout": obj("How a new version replaces the old pods.", {
        "strategy": string("auto: Recreate with one replica, else RollingUpdate without surge, so a node never "
                           "needs GPUs for the old and the new pod at once.", "auto",
                           enum=["auto", "Recreate", "RollingUpdate"]),
        "maxSurge": integer("Extra pods during a RollingUpdate (each needs free GPUs).", 0, minimum=0),
        "maxUnavailable": integer("Pods a RollingUpdate may take down at once.", 1, minimum=0),
    }),
    "pdb": obj("PodDisruptionBudget of the server pods.", {
        "enabled": boolean("Render the PDB.", True),
        "maxUnavailable": integer("Pods a drain may evict at once (0 blocks drains).", 1, minimum=0),
    }),
})


def backend_of(serve: Serve) -> Backend:
    return BACKENDS[str(serve["backend"])]
