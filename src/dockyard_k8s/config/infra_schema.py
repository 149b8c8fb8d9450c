"""The infra spec: every field, its type, its shipped default and what it renders.

This one dict is the source of truth for the infra file: the loader checks files
against it, its ``default`` keywords are the shipped-defaults layer, ``dockyard-k8s
schema`` prints it for editors, and ``docs/infra-spec.md`` is generated from it.
"""

from __future__ import annotations

from dockyard_k8s import names
from dockyard_k8s.config.network import INTERNAL_CIDRS
from dockyard_k8s.config.platforms import EKS_PRESETS, GPU_NODE_LABELS, PLATFORMS
from dockyard_k8s.config.schema import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    GPU_TOLERATIONS,
    INT64_MAX,
    NCCL_SIZE,
    QUANTITY,
    TOLERATIONS,
    Schema,
    array,
    boolean,
    free_object,
    integer,
    obj,
    quantity,
    string,
    string_map,
)
from dockyard_k8s.config.serve_schema import SERVE

_ENV = string_map("Extra environment variables of the container (name: value).",
                  values={"type": ["string", "number", "boolean"]}, keys="env-name")
_NODE_SELECTOR = string_map("nodeSelector of the pods (label: value).",
                            values={"type": "string", "x-format": "label-value"}, keys="label-key")


_GPU_NODE_LABELS = {**string_map("Labels that mark a GPU node (label: value): a value excludes nodes whose label "
                                 "has it (NotIn), \"*\" nodes that carry the label at all (DoesNotExist). null "
                                 "removes one.",
                                 values={"type": "string", "pattern": rf"^(\*|{names.BOUNDED_LABEL_VALUE_FMT})$"},
                                 keys="label-key"),
                    "default": dict(GPU_NODE_LABELS)}

_SELECTOR = free_object("A Kubernetes label selector ({matchLabels, matchExpressions}); {} selects all.")
_PORT = {
    "type": ["integer", "object"], "minimum": 1, "maximum": 65535,
    "description": "A port: 443, or {port, endPort, protocol} (a range; protocol TCP, UDP or SCTP, default TCP).",
    "properties": {
        "port": integer("First (or only) port.", minimum=1, maximum=65535),
        "endPort": integer("Last port of the range.", None, minimum=1, maximum=65535, nullable=True),
        "protocol": string("Protocol.", "TCP", enum=["TCP", "UDP", "SCTP"]),
    },
    "required": ["port"], "additionalProperties": False,
}
_ALLOWED_CIDR = {
    "type": ["string", "object"], "x-format": "cidr",
    "description": "A CIDR (every port), or {cidr, ports, private}.",
    "properties": {
        "cidr": string("The destination range.", fmt="cidr"),
        "ports": array("Ports allowed (default: every port).", _PORT, []),
        "private": boolean("Explicit opt-in for a range inside private or possibly internal space (RFC 1918, "
                           "100.64.0.0/10, 198.18.0.0/15, 240.0.0.0/4, fc00::/7, fe80::/10, NAT64 64:ff9b::/96 and "
                           "64:ff9b:1::/48, IPv6 global unicast 2000::/3); `check` lists it.", False),
    },
    "required": ["cidr"], "additionalProperties": False,
}


NODE_POOL = obj("A node pool: count identical nodes.", {
    "name": string("Pool name; nodes are named <name>-0, <name>-1...", pattern=DNS1123_LABEL),
    "instanceType": string("An instance type of the catalogue (`dockyard-k8s plan --list-instance-types`) "
                           "or of plan.instanceTypes."),
    "count": integer("Number of nodes.", 1, minimum=0, maximum=100000),
    "labels": string_map("Node labels besides the instance-type, hostname, os and arch labels.",
                         values={"type": "string"}),
    "taints": array("Node taints ({key, value, effect}).", {"type": "object"}, []),
    "rootVolume": quantity("Root volume size; ephemeral-storage allocatable is 90% of it minus 1Gi "
                           "(EKS and Karpenter defaults: 20Gi -> 17Gi).", "20Gi"),
}, required=("name", "instanceType"))
INSTANCE_TYPE = obj("An instance type: what one node offers to pods.", {
    "allocatable": string_map("Node allocatable (cpu, memory, pods, ephemeral-storage, nvidia.com/gpu, "
                              "vpc.amazonaws.com/efa...), as `kubectl describe node` shows it.",
                              values={"type": ["string", "integer"]}),
    "labels": string_map("Labels every node of this type carries.", values={"type": "string"}),
}, required=("allocatable",))


def _topology(what: str, *, nullable: bool = False) -> Schema:
    props: dict[str, Schema] = {
        "mode": string("none; preferred: Kueue puts every pod of the pod set in one domain of `level` when it can "
                       "(kueue.x-k8s.io/podset-preferred-topology); required: only then, else the run waits "
                       "(podset-required-topology). Needs a ResourceFlavor with a topologyName.", "none",
                       enum=["none", "preferred", "required"]),
        "level": string("The node label of a level of the flavor's Topology (e.g. cloud.google.com/gce-topology-block;"
                        " the eks profile: topology.k8s.aws/network-node-layer-2, one layer-2 network switch).",
                        None, nullable=True),
    }
    return obj(what, props, nullable=True, default=None) if nullable else obj(what, props)


# docs/kueue.md: what each key renders and which Kueue rules `check` enforces (config/kueue.py).
_KUEUE = obj("Queue the run with Kueue (docs/kueue.md): labels on the RayJob / RayCluster / Job / StatefulSets, "
             "topology-aware placement, and the team's queue objects for an admin.", {
    "queueName": string("LocalQueue of the run's namespace (label kueue.x-k8s.io/queue-name); null: not queued. "
                        "Kueue creates the workload suspended and resumes it once admitted.", None, nullable=True),
    "priorityClass": string("WorkloadPriorityClass (label kueue.x-k8s.io/priority-class): the queue order and "
                            "preemption priority; pods keep infra.priorityClassName.", None, nullable=True),
    "sandbox": boolean("Queue the sandbox Deployment too (Kueue's deployment integration: one Workload per pod, "
                       "admitted on its own). Off: the pool runs beside the queue, as a service the run needs.",
                       False),
    "topology": obj("Topology-aware placement of the GPU worker pod sets (trainer, inference).", {
        **_topology("")["properties"],
        "together": boolean("trainer and inference in the same domain (kueue.x-k8s.io/podset-group-name); Kueue "
                            "allows it when one of the two has 1 replica.", False),
    }),
    "fleets": obj("Per pod set: a topology request replacing infra.kueue.topology for that fleet.", {
        fleet: _topology(f"The {fleet} pod set's topology request.", nullable=True)
        for fleet in ("head", "trainer", "inference", "submitter")
    }),
    "queueObjects": obj("The team's queue objects for a platform admin, rendered first and never applied by `run` "
                        "(like ResourceQuota): LocalQueue, an example ClusterQueue and ResourceFlavors sized from "
                        "the run, and a Topology when a topology mode is set.", {
        "render": boolean("Render them.", False),
        "clusterQueue": string("ClusterQueue name; defaults to infra.kueue.queueName.", None, nullable=True),
        "cohort": string("Cohort of the ClusterQueue (borrowing and lending with other teams' queues).", None,
                         nullable=True),
        "gpuFlavor": string("ResourceFlavor of the GPU pod sets; defaults to the GPU nodes' instance type, else gpu.",
                            None, nullable=True),
        "cpuFlavor": string("ResourceFlavor of the head and submitter (listed first: GPU pod sets skip it, its "
                            "GPU quota is 0).", "default-flavor"),
        "topologyName": string("Topology object name (when a topology mode is set).", "default"),
        "runs": integer("Nominal quota for this many runs of this size at once.", 1, minimum=1),
        "priorityValue": integer("Render the WorkloadPriorityClass infra.kueue.priorityClass with this value (a "
                                 "higher one is admitted first and may preempt lower ones); null: not rendered, the "
                                 "cluster's own class is used (an int32, as the CRD stores it).", None,
                                 minimum=-(2**31), nullable=True),
        "multiKueue": obj("MultiKueue: the ClusterQueue dispatches its Workloads to worker clusters. With clusters, "
                          "renders a MultiKueueCluster per worker, their MultiKueueConfig, an AdmissionCheck "
                          "(controllerName kueue.x-k8s.io/multikueue) and lists the check on the ClusterQueue. Each "
                          "worker needs the same namespace, LocalQueue and ClusterQueue.", {
            "admissionCheck": string("Name of the AdmissionCheck and of its MultiKueueConfig.", "multikueue",
                                     pattern=DNS1123_LABEL),
            "clusters": array("The worker clusters (at most 20), each {name, kubeConfigSecret}: a MultiKueueCluster "
                              "named name whose kubeconfig is the key kubeconfig of Secret kubeConfigSecret (default "
                              "<name>-kubeconfig) in Kueue's namespace (kueue-system by default); the Secret holds "
                              "credentials and is not rendered.", obj("A worker cluster.", {
                "name": string("MultiKueueCluster name.", pattern=DNS1123_SUBDOMAIN),
                "kubeConfigSecret": string("Secret in Kueue's namespace (kueue-system by default) whose key "
                                           "kubeconfig holds the worker's kubeconfig; defaults to <name>-kubeconfig. "
                                           "Not rendered: it holds credentials.", None, pattern=DNS1123_SUBDOMAIN,
                                           nullable=True),
            }, required=("name",)), []),
        }),
    }),
})


def _sizing(what: str, *, replicas: int | None, gpus: int, cpu: str, memory: str, shm: str) -> Schema:
    props: dict[str, Schema] = {
        "gpus": integer(f"nvidia.com/gpu per {what} pod (requests = limits).", gpus, minimum=0),
        "cpu": quantity(f"CPU request per {what} pod.", cpu),
        "memory": quantity(f"Memory request per {what} pod.", memory),
        "cpuLimit": quantity("CPU limit; defaults to the request.", None, nullable=True),
        "memoryLimit": quantity("Memory limit; defaults to the request.", None, nullable=True),
        "extendedResources": string_map(
            "Other extended resources per pod, requests = limits (e.g. vpc.amazonaws.com/efa: 32).",
            values={"type": ["string", "integer"], "pattern": QUANTITY}, keys="resource-name"),
        "shmSize": quantity("Size of the memory-backed /dev/shm (emptyDir medium: Memory); "
                            "NCCL and DataLoader workers need it. null drops the volume.", shm, nullable=True),
        "nodeSelector": _NODE_SELECTOR,
        "tolerations": GPU_TOLERATIONS if gpus else TOLERATIONS,
        "env": _ENV,
        "rayStartParams": string_map("Extra `ray start` parameters (KubeRay rayStartParams).",
                                     values={"type": ["string", "number", "boolean"]}),
    }
    if replicas is not None:
        props = {"replicas": integer(f"Number of {what} pods.", replicas, minimum=0), **props}
    return obj(f"Sizing and placement of the {what} pods.", props)


INFRA: Schema = obj("dockyard-k8s infra spec: where and how to run a recipe.", {
    "defaults": {
        "type": ["string", "array", "null"], "items": {"type": "string"}, "default": None,
        "description": "Parent infra file(s), relative to this file, merged first (chains allowed).",
    },
    "infra": obj("Namespace, image and governance shared by every object of the run.", {
        "namespace": string("Namespace of every namespaced object.", "default", pattern=DNS1123_LABEL),
        "image": string("Container image of the GPU pods (and of the sandbox unless sandbox.image is set). "
                        "Pin a tag or digest.", None, nullable=True),
        "imagePullPolicy": string("imagePullPolicy of every container.", "IfNotPresent",
                                  enum=["IfNotPresent", "Always", "Never"]),
        "imagePullSecrets": array("Names of Secrets used to pull the images.",
                                  {"type": "string", "x-format": "dns-subdomain"}, []),
        "priorityClassName": string("PriorityClass of every managed pod (GPU gang, submitter, sandbox). "
                                    "It must exist in the cluster.", None, nullable=True, fmt="dns-subdomain"),
        "clusterDomain": string("Cluster DNS domain, for the injected sandbox URL.", "cluster.local"),
        "clusterDns": obj("Where cluster DNS runs: the only resolver the sandbox (and a default-deny run) may "
                          "ask, on UDP/TCP 53.", {
            "namespace": string("Namespace of the DNS pods.", "kube-system", pattern=DNS1123_LABEL),
            "podLabels": {**string_map("Labels of the DNS pods; null: k8s-app: kube-dns (kube-dns and CoreDNS on "
                                       "kubeadm, kind, k3s, EKS and GKE).",
                                       values={"type": "string", "x-format": "label-value"}, keys="label-key"),
                          "type": ["object", "null"], "default": None},
        }),
        "labels": string_map("Extra labels on every object and pod template.",
                             values={"type": "string", "x-format": "label-value"}, keys="label-key"),
        "security": obj("Opt-in hardening of the GPU head and worker containers (unverified on GPUs, so off).", {
            "enabled": boolean("Render the securityContext below on GPU containers.", False),
            "runAsNonRoot": boolean("Refuse to start as root.", False),
            "runAsUser": integer("UID to run as.", None, minimum=0, maximum=INT64_MAX, nullable=True),
            "readOnlyRootFilesystem": boolean("Read-only root filesystem.", False),
        }),
        "resourceQuota": obj("Namespace ResourceQuota, rendered first; never applied by `run`.", {
            "hard": string_map("Hard limits (e.g. requests.nvidia.com/gpu: 16).",
                               values={"type": ["string", "number"]}),
        }, nullable=True, default=None),
        "limitRange": obj("Namespace LimitRange, rendered first; never applied by `run`.", {
            "limits": array("LimitRangeItem objects.", {"type": "object"}, []),
        }, nullable=True, default=None),
        # --- platform profiles (docs/platforms.md; data in config/platforms.py) ---
        "platform": string("Platform profile: a defaults layer between the shipped defaults and the user "
                           "defaults (generic: none; eks: EFA, presets, topology, FSx; kind/k3s: one GPU node).",
                           "generic", enum=list(PLATFORMS)),
        "instanceType": string("eks: GPU node instance type; selects a sizing preset (GPUs, EFA, cpu, memory, "
                               "node selector) for the trainer and inference pods.", None, nullable=True,
                               enum=list(EKS_PRESETS)),
        "runtimeClassName": string("runtimeClassName of every pod that requests nvidia.com/gpu "
                                   "(kind/k3s: nvidia, else the pod sees no GPU).", None, nullable=True,
                                   fmt="dns-subdomain"),
        "gpuScheduling": obj("Placement of the GPU worker pods (added unless kuberay.spec sets its own).", {
            "onePodPerNode": boolean("Required pod anti-affinity on kubernetes.io/hostname between GPU pods.",
                                     False),
            "topologySpreadConstraints": array("Spread of the GPU worker pods; labelSelector defaults to "
                                               "them.", {"type": "object"}, []),
        }),
        "cpuScheduling": obj("Placement of the run's pods that request no GPU (sandbox, a head without GPUs, "
                             "the submitter): off the GPU nodes by default, so they never take the CPU and memory "
                             "a GPU pod needs while CPU nodes are free.", {
            "avoidGpuNodes": boolean("A required node affinity on every pod that requests no GPU (and every term of "
                                     "its own): not on a node with one of gpuNodeLabels, nor of an instance type a "
                                     "GPU fleet selects. false: wherever the scheduler likes (kind/k3s: one node).",
                                     True),
            "gpuNodeLabels": _GPU_NODE_LABELS,
        }),
        "storage": obj("A PersistentVolumeClaim mounted into every GPU pod (shared FSx on eks, model cache "
                       "on kind/k3s).", {
            "enabled": boolean("Mount the claim.", False),
            "claimName": string("Claim name; defaults to <run>-cache when create is true.", None, nullable=True,
                                pattern=DNS1123_LABEL),
            "create": boolean("Render the claim (else it must exist). Kept on `down`.", False),
            "storageClassName": string("StorageClass of a created claim (null: the cluster default).", None,
                                       nullable=True, fmt="dns-subdomain"),
            "accessMode": string("Access mode of a created claim; RWO cannot be shared across nodes.",
                                 "ReadWriteMany",
                                 enum=["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]),
            "size": quantity("Size of a created claim.", "100Gi"),
            "mountPath": string("Where the claim is mounted.", "/data", fmt="absolute-path"),
        }),
        "networkPolicy": obj("Default-deny posture for the whole run: deny all, then allow the run's own pods "
                             "(never the sandbox's into the GPU pods), DNS, HTTPS to public addresses and the "
                             "KubeRay operator (kuberay.networkPolicy).", {
            "defaultDeny": boolean("Render the deny-all and allow policies (needs an enforcing CNI).", False),
            "scope": string("run: deny covers the run's pods; namespace: every pod of the namespace.", "run",
                            enum=["run", "namespace"]),
            "httpsEgress": boolean("Allow TCP 443 to public addresses (model hubs, package indexes).", True),
            "privateCidrs": array("Excluded from HTTPS egress (private, link-local and metadata space).",
                                  string("A CIDR block.", fmt="cidr"), list(INTERNAL_CIDRS)),
            "extraEgress": array("More NetworkPolicyEgressRule objects for the GPU pods.", {"type": "object"}, []),
        }) | {"x-moved": {
            "operatorPodLabels": "kuberay.networkPolicy.operator.podSelector, a label selector (write "
                                 "podSelector: {matchLabels: {...}} with these labels; the default already admits "
                                 "the Helm chart's and the kustomize manifests' operator pods)",
            "extraIngress": "kuberay.networkPolicy.extraIngress (each rule needs `from`; its pod and namespace "
                            "selectors are narrowed to non-sandbox pods)",
        }},
        "priorityClass": obj("A PriorityClass created for the GPU pods (head and workers).", {
            "create": boolean("Render the PriorityClass (cluster-scoped) and use it on the GPU pods.", False),
            "name": string("Its name; defaults to <namespace>-<run>-gpu.", None, nullable=True,
                           fmt="dns-subdomain"),
            "value": integer("Priority value.", 1000000, minimum=-2147483648, maximum=1000000000),
            "preemptionPolicy": string("Whether GPU pods preempt lower-priority pods.", "PreemptLowerPriority",
                                       enum=["PreemptLowerPriority", "Never"]),
        }),
        "kueue": _KUEUE,
        "imagePull": obj("Image handling for large training images.", {
            "requirePinned": boolean("Reject images without a pinned tag or digest (and :latest); when false, "
                                     "`check` notes them.", False),
            "coldPullSeconds": integer("Added to launch.activeDeadlineSeconds and the bootstrap timeout, for a "
                                       "cold pull of the image.", 0, minimum=0),
            "prePull": boolean("Render a DaemonSet that pulls infra.image on the GPU nodes.", False),
            "pauseImage": string("Image of the pre-pull DaemonSet's idle container.",
                                 "registry.k8s.io/pause:3.10"),
        }),
    }),
    "launch": obj("How the run is launched.", {
        "mode": string("rayjob: a RayJob (ephemeral cluster, torn down after the job); bringup: a "
                       "long-lived RayCluster; attach: nothing GPU-side, the job goes to an existing cluster; "
                       "job / statefulset: no KubeRay operator (a single-node Job, or multi-node Ray on "
                       "StatefulSets).",
                       "rayjob", enum=["rayjob", "bringup", "attach", "job", "statefulset"]),
        "bootstrap": obj("job / statefulset: the Ray bootstrap script's waits.", {
            "timeoutSeconds": integer("How long the head waits for every node, and a worker for the head "
                                      "(infra.imagePull.coldPullSeconds is added).", 300, minimum=1),
            "pollSeconds": integer("Seconds between two checks.", 5, minimum=1),
        }),
        "name": string("Run name: names every object and labels them for status/logs/down. "
                       "Defaults to the recipe file name.", None, nullable=True, pattern=DNS1035_LABEL),
        "entrypoint": string("Command the job runs; {recipe} is replaced by the mounted recipe path. "
                             "The recipe overrides are appended.",
                             "python -m dockyard_rl.train --config {recipe}"),
        "sandboxUrlsKey": string("Recipe key the launcher sets to null (in the mounted recipe and as "
                                 "++KEY=null after the entrypoint) so the injected DOCKYARD_SANDBOX_URLS wins "
                                 "over the recipe's own default; only when the resolved recipe has that key and "
                                 "sandbox.injectUrls is on. null: never.", "env.code.sandbox_urls", nullable=True),
        "submissionMode": string("KubeRay RayJob submissionMode.", "K8sJobMode",
                                 enum=["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]),
        "shutdownAfterJobFinishes": boolean("Delete the RayCluster when the job ends (rayjob mode).", True),
        "ttlSecondsAfterFinished": integer("Seconds to keep the cluster after the job ends, to read logs.",
                                           600, minimum=0),
        "activeDeadlineSeconds": integer("Deadline of the whole job, seconds (pad 600 for a cold image pull).",
                                         None, minimum=1, nullable=True),
        "preRunningDeadlineSeconds": integer("Deadline to reach Running, seconds (KubeRay fails the job after).",
                                             None, minimum=1, nullable=True),
        "backoffLimit": integer("Retries of the RayJob; each retry creates a new RayCluster.", 0, minimum=0),
        "suspend": boolean("Create the RayJob suspended (queueing systems such as Kueue resume it).", False),
        "runtimeEnv": free_object("Ray runtime_env of the job (rendered as runtimeEnvYAML)."),
        "deletionRules": array("KubeRay deletionStrategy.deletionRules; needs shutdownAfterJobFinishes: false.",
                               {"type": "object"}, []),
        "submitter": obj("The RayJob submitter pod (K8sJobMode).", {
            "image": string("Submitter image; defaults to infra.image. A small Ray image starts faster.",
                            None, nullable=True),
            "cpu": quantity("CPU request.", "500m"),
            "memory": quantity("Memory request.", "200Mi"),
            "cpuLimit": quantity("CPU limit.", "1"),
            "memoryLimit": quantity("Memory limit.", "1Gi"),
        }),
        "attach": obj("attach mode: the existing Ray cluster to submit to: cluster or address, one of them.", {
            "cluster": string("Name of an existing RayCluster in the namespace.", None, nullable=True,
                              pattern=DNS1035_LABEL),
            "address": string("Ray dashboard URL (http://host:8265), instead of a cluster name.",
                              None, nullable=True, fmt="http-url"),
        }),
    }),
    "kuberay": obj("The GPU RayCluster: a head and the two worker groups, trainer and inference.", {
        "rayVersion": string("Ray version of the image (RayCluster spec.rayVersion); token auth needs >= 2.52.0. "
                             "null: read from infra.image's tag when it is a Ray image (rayproject/ray, ray-ml, "
                             "ray-llm: 2.52.1-py311-gpu -> 2.52.1), else 2.52.1; `run` checks that the head refuses "
                             "a request without the token.", None, nullable=True),
        "head": _sizing("head", replicas=None, gpus=0, cpu="8", memory="32Gi", shm="8Gi"),
        "trainer": _sizing("trainer", replicas=1, gpus=8, cpu="32", memory="256Gi", shm="64Gi"),
        "inference": _sizing("inference", replicas=1, gpus=8, cpu="32", memory="256Gi", shm="64Gi"),
        "spec": free_object("RayCluster spec fragment deep-merged over the rendered spec: worker groups "
                            "match by groupName, containers/env/volumes by name; anything KubeRay supports."),
        "extraGroups": array("Worker groups kuberay.spec may add besides trainer and inference (a groupName "
                             "not listed here is refused as a likely typo).", {"type": "string",
                                                                               "pattern": DNS1123_LABEL}, []),
        "networkPolicy": obj("Ingress to the GPU pods (head, workers, submitter) in every launch mode but attach: "
                             "only from the run's own pods except the sandbox (any port), the KubeRay operator "
                             "(dashboard port) and extraIngress. Sandbox pods are never admitted.", {
            "enabled": boolean("Render the policy (needs an enforcing CNI).", True),
            "operator": obj("The KubeRay operator, admitted to the head's dashboard port (8265).", {
                "podSelector": {**_SELECTOR, "type": ["object", "null"], "default": None,
                                "description": "Label selector of the operator pods; null: app.kubernetes.io/name "
                                               "in (kuberay-operator, kuberay), the Helm chart's and the kustomize "
                                               "manifests' labels."},
                "namespaceSelector": {**_SELECTOR, "description": "Namespaces the operator may run in "
                                                                  "({}: any)."},
            }),
            "extraIngress": array("More NetworkPolicyIngressRule objects (a monitoring namespace on the metrics "
                                  "port...). Every podSelector/namespaceSelector source is narrowed to non-sandbox "
                                  "pods; a rule needs `from`, and an ipBlock must not cover private space.",
                                  {"type": "object"}, []),
        }),
        "auth": obj("Ray token authentication of the GPU cluster (Ray >= 2.52): without it, anyone who reaches the "
                    "dashboard (8265), GCS (6379) or client port (10001) runs code on the GPU pods.", {
            "mode": string("token: every Ray container gets RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from the Secret "
                           "(and RayClusters spec.authOptions.secretName, KubeRay >= 1.6.0); disabled: no "
                           "authentication.",
                           "token", enum=["token", "disabled"]),
            "secretName": string("Secret with the token under key auth_token; defaults to <run>-ray-auth, which "
                                 "`run`/`cluster up` create with a random token when missing (render users: "
                                 "docs/security.md). attach mode: the attached cluster's token.", None,
                                 nullable=True, fmt="dns-subdomain"),
        }),
        "serviceAccountName": string("ServiceAccount of the GPU pods and the submitter (null: the namespace's "
                                     "default).", None, nullable=True, fmt="dns-subdomain"),
        "automountServiceAccountToken": {
            "type": ["boolean", "null"], "default": None,
            "description": "Mount a Kubernetes API token into the GPU pods and the submitter. null: no token (the "
                           "training code gets no cluster credentials), except the head when "
                           "kuberay.spec.enableInTreeAutoscaling is on (its autoscaler sidecar needs it)."},
        "pdb": obj("PodDisruptionBudget over the GPU pods (bringup mode; opt-in).", {
            "enabled": boolean("Render the PDB.", False),
            "maxUnavailable": integer("Voluntary disruptions allowed; 0 blocks drains of the gang.", 0,
                                      minimum=0),
        }),
    }),
    "sandbox": obj("The GPU-free pool that executes untrusted agent code (POST /task/submit).", {
        "enabled": boolean("Render the pool. false drops Deployment, Service, NetworkPolicy and PDB.", True),
        "replicas": integer("Executor replicas.", 2, minimum=0),
        "image": string("Executor image; defaults to infra.image.", None, nullable=True),
        "imagePullPolicy": string("Defaults to infra.imagePullPolicy.", None, nullable=True,
                                  enum=["IfNotPresent", "Always", "Never"]),
        "command": array("Container command; the image's entrypoint when unset.", {"type": "string"}, None,
                         nullable=True),
        "args": array("Container args.", {"type": "string"}, None, nullable=True),
        "port": integer("Executor port (Service and container).", 9090, minimum=1, maximum=65535),
        "injectUrls": boolean("Inject DOCKYARD_SANDBOX_URLS into every GPU pod and pass "
                              "env.code.sandbox_urls=null to the recipe.", True),
        "env": _ENV,
        "nodeSelector": _NODE_SELECTOR,
        "tolerations": TOLERATIONS,
        "topologySpreadConstraints": array(
            "Spread of the executor replicas; labelSelector defaults to the pool's pods.", {"type": "object"}, []),
        "serviceAccountName": string("ServiceAccount of the executors. null: a dedicated, empty one (<run>-sandbox, no "
                                     "token, no cloud identity) is rendered, since EKS Pod Identity, IRSA and "
                                     "workload identity hand cloud credentials to pods by ServiceAccount whatever "
                                     "automountServiceAccountToken says; a name: that existing account (never "
                                     "'default').", None, nullable=True, fmt="dns-subdomain"),
        "resources": obj("Requests are what the scheduler reserves per replica: replicas x request must fit.", {
            "cpu": quantity("CPU request.", "1"),
            "memory": quantity("Memory request.", "2Gi"),
            "ephemeralStorage": quantity("ephemeral-storage request (guards against disk-pressure eviction).",
                                         "10Gi"),
            "cpuLimit": quantity("CPU limit; defaults to the request.", None, nullable=True),
            "memoryLimit": quantity("Memory limit; defaults to the request.", None, nullable=True),
            "ephemeralStorageLimit": quantity("ephemeral-storage limit; defaults to the request.", None,
                                              nullable=True),
        }),
        "security": obj("Container hardening (on by default: the pool runs untrusted code).", {
            "enabled": boolean("allowPrivilegeEscalation: false, drop ALL capabilities, seccomp RuntimeDefault.",
                               True),
            "runAsNonRoot": boolean("Refuse to run as root (opt-in: the image's user is root).", False),
            "runAsUser": integer("UID to run as.", None, minimum=0, nullable=True),
            "readOnlyRootFilesystem": boolean("Read-only root filesystem; writablePaths get emptyDirs.", False),
            "writablePaths": array("emptyDir mounts added when the root filesystem is read-only.",
                                   {"type": "string"}, ["/tmp", "/workspace"]),
            "automountServiceAccountToken": boolean(
                "Mount a Kubernetes API token into executor pods. Off: untrusted code gets no credentials.",
                False),
        }),
        "networkPolicy": obj("Ingress only from the run's head, trainer and inference pods to the executor port; "
                             "egress to cluster DNS and the public IPv4 internet, never to private, reserved, "
                             "NAT64, IPv6 or metadata space without an opt-in (docs/security.md).", {
            "enabled": boolean("Render the NetworkPolicy (needs an enforcing CNI).", True),
            "allowEgress": boolean("Egress to the public IPv4 internet on every port but 53 (executors clone "
                                   "repositories); false: only cluster DNS and allowedEgressCidrs.", True),
            "allowedEgressCidrs": array("More destinations: a CIDR, or {cidr, ports, private}. A range inside "
                                        "private space needs private: true; one inside a metadata range is an "
                                        "error. Metadata and blockedEgressCidrs are excepted from each.",
                                        _ALLOWED_CIDR, []),
            "blockedEgressCidrs": array(
                "More ranges never reachable, excepted from every allowed range (the metadata endpoints "
                "169.254.0.0/16, 100.100.100.200, 168.63.129.16, fd00:ec2::254 and ::23 always are).",
                string("A CIDR block.", fmt="cidr"), []),
            "extraEgress": array("More NetworkPolicyEgressRule objects to pods named by label (a model endpoint "
                                 "the agents call); `to` is required and holds podSelector/namespaceSelector peers "
                                 "only (ranges go in allowedEgressCidrs); narrowed to pods that are no dockyard-k8s "
                                 "Ray pod or executor.", {"type": "object"}, []),
            "ingressFrom": array("More sources allowed to the executor port (NetworkPolicyPeer objects: a router, "
                                 "an eval job); narrowed to non-sandbox pods, and an ipBlock must not cover private "
                                 "space.", {"type": "object"}, []),
        }),
        "pdb": obj("PodDisruptionBudget of the pool.", {
            "enabled": boolean("Render the PDB.", True),
            "maxUnavailable": integer("Replicas that may be disrupted at once.", 1, minimum=0),
        }),
        "probes": boolean("TCP readiness and liveness probes on the executor port.", True),
        "runtimeClassName": string("RuntimeClass of the executor pods: a sandboxed runtime (gVisor, Kata) keeps a "
                                   "kernel exploit inside the sandbox; it must exist in the cluster. null: the "
                                   "node's default runtime (lint reports it).", None, nullable=True),
        "hostUsers": {"type": ["boolean", "null"], "default": None,
                      "description": "false: executor pods run in a user namespace (root in the container is "
                                     "not root on the node; Kubernetes >= 1.33, or 1.30+ with the "
                                     "UserNamespacesSupport gate, and a runtime that supports it). null: not set."},
    }),
    "ncclTest": obj("`dockyard-k8s nccl-test`: an MPIJob running nccl-tests all_reduce_perf on the run's GPU "
                    "nodes, with the same platform settings.", {
        "image": string("nccl-tests image (mpirun + all_reduce_perf); eks: the public EFA build.", None,
                        nullable=True),
        "nodes": integer("Worker pods (one per node); defaults to the run's GPU pods.", None, minimum=1,
                         nullable=True),
        "gpusPerNode": integer("GPUs per worker; defaults to kuberay.trainer.gpus.", None, minimum=1,
                               nullable=True),
        "minBytes": string("all_reduce_perf -b.", "8", pattern=NCCL_SIZE),
        "maxBytes": string("all_reduce_perf -e.", "1G", pattern=NCCL_SIZE),
        "stepFactor": integer("all_reduce_perf -f.", 2, minimum=2),
        "iterations": integer("all_reduce_perf -n.", 100, minimum=1),
        "check": boolean("all_reduce_perf -c 1: check results (#wrong column).", True),
        "binary": string("Path of all_reduce_perf in the image.", "/opt/nccl-tests/build/all_reduce_perf"),
        "mpirunPath": string("Path of mpirun in the image.", "mpirun"),
        "mpirunArgs": array("Extra mpirun arguments.", {"type": "string"}, []),
        "env": _ENV,
        "extendedResources": string_map("Extra resources per worker (EFA, hugepages), requests = limits.",
                                        values={"type": ["string", "integer"]}),
        "activeDeadlineSeconds": integer("Deadline of the test (imagePull.coldPullSeconds is added).", 1800,
                                         minimum=1),
    }),
    # Read by `dockyard-k8s lint` and `plan` only; no renderer looks at these two sections.
    "lint": obj("Policy lint settings (`dockyard-k8s lint`); docs/lint.md lists the rules.", {
        "ignore": array("Rule ids never reported for this run (each suppression is listed in the summary).",
                        {"type": "string"}, []),
        "shmPerGpu": quantity("Minimum memory-backed /dev/shm per GPU of a pod (64Gi for 8 GPUs by default).",
                              "8Gi"),
        "gpuRuntimeClass": string("RuntimeClass GPU pods must set (e.g. nvidia on k3s/kind without the NVIDIA "
                                  "runtime as default); null: infra.runtimeClassName if set, else not required.",
                                  None, nullable=True),
        "coldPullSeconds": integer("Time a cold pull of a multi-GB image takes; deadlines shorter than this "
                                   "are flagged.", 600, minimum=0),
    }),
    "plan": obj("Node inventory for `dockyard-k8s plan` (instead of --nodes FILE); docs/plan.md.", {
        "nodePools": array("Node pools: {name, instanceType, count, labels, taints, rootVolume}; instanceType "
                           "from the built-in catalogue or plan.instanceTypes.", NODE_POOL, []),
        "instanceTypes": {"type": "object", "default": {}, "additionalProperties": INSTANCE_TYPE,
                          "description": "Your own instance types by name: {allocatable, labels}."},
    }),
    # Read by `dockyard-k8s serve` only (config/serve_schema.py; docs/serve.md).
    "serve": SERVE,
})
