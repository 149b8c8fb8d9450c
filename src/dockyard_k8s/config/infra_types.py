"""The loaded infra spec as TypedDicts: generated from ``infra_schema.INFRA``; do not edit.

Regenerate with ``.venv/bin/python -m dockyard_k8s.config.typegen > src/dockyard_k8s/config/infra_types.py``
(see ``config/typegen.py`` for how schema types map to these).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Quantity = str | int | float  # a Kubernetes quantity as written: "16Gi", 4, 0.5


class InfraClusterDns(TypedDict):
    namespace: str
    podLabels: dict[str, str] | None


class InfraSecurity(TypedDict):
    enabled: bool
    runAsNonRoot: bool
    runAsUser: int | None
    readOnlyRootFilesystem: bool


class InfraResourceQuota(TypedDict):
    hard: dict[str, str | float]


class InfraLimitRange(TypedDict):
    limits: list[dict[str, Any]]


class InfraGpuScheduling(TypedDict):
    onePodPerNode: bool
    topologySpreadConstraints: list[dict[str, Any]]


class InfraCpuScheduling(TypedDict):
    avoidGpuNodes: bool
    gpuNodeLabels: dict[str, str]


class InfraStorage(TypedDict):
    enabled: bool
    claimName: str | None
    create: bool
    storageClassName: str | None
    accessMode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]
    size: Quantity
    mountPath: str


class InfraNetworkPolicy(TypedDict):
    defaultDeny: bool
    scope: Literal["run", "namespace"]
    httpsEgress: bool
    privateCidrs: list[str]
    extraEgress: list[dict[str, Any]]


class InfraPriorityClass(TypedDict):
    create: bool
    name: str | None
    value: int
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"]


class InfraKueueTopology(TypedDict):
    mode: Literal["none", "preferred", "required"]
    level: str | None
    together: bool


class InfraKueueFleetsHead(TypedDict):
    mode: Literal["none", "preferred", "required"]
    level: str | None


InfraKueueFleetsTrainer = InfraKueueFleetsHead
InfraKueueFleetsInference = InfraKueueFleetsHead
InfraKueueFleetsSubmitter = InfraKueueFleetsHead


class InfraKueueFleets(TypedDict):
    head: InfraKueueFleetsHead | None
    trainer: InfraKueueFleetsTrainer | None
    inference: InfraKueueFleetsInference | None
    submitter: InfraKueueFleetsSubmitter | None


class InfraKueueQueueObjectsMultiKueueClustersItem(TypedDict):
    name: str
    kubeConfigSecret: str | None


class InfraKueueQueueObjectsMultiKueue(TypedDict):
    admissionCheck: str
    clusters: list[InfraKueueQueueObjectsMultiKueueClustersItem]


class InfraKueueQueueObjects(TypedDict):
    render: bool
    clusterQueue: str | None
    cohort: str | None
    gpuFlavor: str | None
    cpuFlavor: str
    topologyName: str
    runs: int
    priorityValue: int | None
    multiKueue: InfraKueueQueueObjectsMultiKueue


class InfraKueue(TypedDict):
    queueName: str | None
    priorityClass: str | None
    sandbox: bool
    topology: InfraKueueTopology
    fleets: InfraKueueFleets
    queueObjects: InfraKueueQueueObjects


class InfraImagePull(TypedDict):
    requirePinned: bool
    coldPullSeconds: int
    prePull: bool
    pauseImage: str


class Infra(TypedDict):
    namespace: str
    image: str | None
    imagePullPolicy: Literal["IfNotPresent", "Always", "Never"]
    imagePullSecrets: list[str]
    priorityClassName: str | None
    clusterDomain: str
    clusterDns: InfraClusterDns
    labels: dict[str, str]
    security: InfraSecurity
    resourceQuota: InfraResourceQuota | None
    limitRange: InfraLimitRange | None
    platform: Literal["generic", "eks", "kind", "k3s"]
    instanceType: Literal["p4de.24xlarge", "p5.48xlarge", "p5en.48xlarge"] | None
    runtimeClassName: str | None
    gpuScheduling: InfraGpuScheduling
    cpuScheduling: InfraCpuScheduling
    storage: InfraStorage
    networkPolicy: InfraNetworkPolicy
    priorityClass: InfraPriorityClass
    kueue: InfraKueue
    imagePull: InfraImagePull


class LaunchBootstrap(TypedDict):
    timeoutSeconds: int
    pollSeconds: int


class LaunchSubmitter(TypedDict):
    image: str | None
    cpu: Quantity
    memory: Quantity
    cpuLimit: Quantity
    memoryLimit: Quantity


class LaunchAttach(TypedDict):
    cluster: str | None
    address: str | None


class Launch(TypedDict):
    mode: Literal["rayjob", "bringup", "attach", "job", "statefulset"]
    bootstrap: LaunchBootstrap
    name: str | None
    entrypoint: str
    sandboxUrlsKey: str | None
    submissionMode: Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]
    shutdownAfterJobFinishes: bool
    ttlSecondsAfterFinished: int
    activeDeadlineSeconds: int | None
    preRunningDeadlineSeconds: int | None
    backoffLimit: int
    suspend: bool
    runtimeEnv: dict[str, Any]
    deletionRules: list[dict[str, Any]]
    submitter: LaunchSubmitter
    attach: LaunchAttach


class KuberayHead(TypedDict):
    gpus: int
    cpu: Quantity
    memory: Quantity
    cpuLimit: Quantity | None
    memoryLimit: Quantity | None
    extendedResources: dict[str, Quantity]
    shmSize: Quantity | None
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, Any]]
    env: dict[str, str | float | bool]
    rayStartParams: dict[str, str | float | bool]


class KuberayTrainer(TypedDict):
    replicas: int
    gpus: int
    cpu: Quantity
    memory: Quantity
    cpuLimit: Quantity | None
    memoryLimit: Quantity | None
    extendedResources: dict[str, Quantity]
    shmSize: Quantity | None
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, Any]]
    env: dict[str, str | float | bool]
    rayStartParams: dict[str, str | float | bool]


KuberayInference = KuberayTrainer


class KuberayNetworkPolicyOperator(TypedDict):
    podSelector: dict[str, Any] | None
    namespaceSelector: dict[str, Any]


class KuberayNetworkPolicy(TypedDict):
    enabled: bool
    operator: KuberayNetworkPolicyOperator
    extraIngress: list[dict[str, Any]]


class KuberayAuth(TypedDict):
    mode: Literal["token", "disabled"]
    secretName: str | None


class KuberayPdb(TypedDict):
    enabled: bool
    maxUnavailable: int


class Kuberay(TypedDict):
    rayVersion: str | None
    head: KuberayHead
    trainer: KuberayTrainer
    inference: KuberayInference
    spec: dict[str, Any]
    extraGroups: list[str]
    networkPolicy: KuberayNetworkPolicy
    auth: KuberayAuth
    serviceAccountName: str | None
    automountServiceAccountToken: bool | None
    pdb: KuberayPdb


class SandboxResources(TypedDict):
    cpu: Quantity
    memory: Quantity
    ephemeralStorage: Quantity
    cpuLimit: Quantity | None
    memoryLimit: Quantity | None
    ephemeralStorageLimit: Quantity | None


class SandboxSecurity(TypedDict):
    enabled: bool
    runAsNonRoot: bool
    runAsUser: int | None
    readOnlyRootFilesystem: bool
    writablePaths: list[str]
    automountServiceAccountToken: bool


class SandboxNetworkPolicyAllowedEgressCidrsItemPortsItem(TypedDict):
    port: int
    endPort: int | None
    protocol: Literal["TCP", "UDP", "SCTP"]


class SandboxNetworkPolicyAllowedEgressCidrsItem(TypedDict):
    cidr: str
    ports: list[int | SandboxNetworkPolicyAllowedEgressCidrsItemPortsItem]
    private: bool


class SandboxNetworkPolicy(TypedDict):
    enabled: bool
    allowEgress: bool
    allowedEgressCidrs: list[str | SandboxNetworkPolicyAllowedEgressCidrsItem]
    blockedEgressCidrs: list[str]
    extraEgress: list[dict[str, Any]]
    ingressFrom: list[dict[str, Any]]


class SandboxPdb(TypedDict):
    enabled: bool
    maxUnavailable: int


class Sandbox(TypedDict):
    enabled: bool
    replicas: int
    image: str | None
    imagePullPolicy: Literal["IfNotPresent", "Always", "Never"] | None
    command: list[str] | None
    args: list[str] | None
    port: int
    injectUrls: bool
    env: dict[str, str | float | bool]
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, Any]]
    topologySpreadConstraints: list[dict[str, Any]]
    serviceAccountName: str | None
    resources: SandboxResources
    security: SandboxSecurity
    networkPolicy: SandboxNetworkPolicy
    pdb: SandboxPdb
    probes: bool
    runtimeClassName: str | None
    hostUsers: bool | None


class NcclTest(TypedDict):
    image: str | None
    nodes: int | None
    gpusPerNode: int | None
    minBytes: str
    maxBytes: str
    stepFactor: int
    iterations: int
    check: bool
    binary: str
    mpirunPath: str
    mpirunArgs: list[str]
    env: dict[str, str | float | bool]
    extendedResources: dict[str, str | int]
    activeDeadlineSeconds: int


class Lint(TypedDict):
    ignore: list[str]
    shmPerGpu: Quantity
    gpuRuntimeClass: str | None
    coldPullSeconds: int


class PlanNodePoolsItem(TypedDict):
    name: str
    instanceType: str
    count: int
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    rootVolume: Quantity


class PlanInstanceTypesValue(TypedDict):
    allocatable: dict[str, str | int]
    labels: dict[str, str]


class Plan(TypedDict):
    nodePools: list[PlanNodePoolsItem]
    instanceTypes: dict[str, PlanInstanceTypesValue]


class ServeModelHubTokenSecret(TypedDict):
    name: str | None
    key: str


class ServeModel(TypedDict):
    id: str | None
    revision: str | None
    path: str | None
    claimName: str | None
    mountPath: str | None
    servedName: str | None
    hubTokenSecret: ServeModelHubTokenSecret


class ServeEngine(TypedDict):
    tensorParallelSize: int | None
    maxModelLen: int | None
    dtype: Literal["auto", "bfloat16", "float16", "float32"]
    gpuMemoryUtilization: float
    extraArgs: list[str]


class ServeApiKeySecret(TypedDict):
    name: str | None
    key: str
    adminKey: str


class ServeSecretEnvValue(TypedDict):
    secret: str
    key: str


class ServeAutoscalingFallback(TypedDict):
    failureThreshold: int
    replicas: int | None
    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]


class ServeAutoscaling(TypedDict):
    enabled: bool
    minReplicas: int
    maxReplicas: int
    metric: str | None
    threshold: float
    query: str | None
    prometheusAddress: str
    pollingInterval: int
    scaleDownStabilizationSeconds: int
    authenticationRef: str | None
    fallback: ServeAutoscalingFallback


class ServeMetrics(TypedDict):
    scrape: Literal["auto", "podMonitor", "annotations"]
    podMonitorLabels: dict[str, str]


class ServeCache(TypedDict):
    enabled: bool | None
    create: bool
    claimName: str | None
    storageClass: str | None
    size: Quantity
    accessMode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]
    mountPath: str
    subPath: str | None
    perReplica: bool


class ServePriorityClass(TypedDict):
    name: str | None
    create: bool
    value: int
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"]


class ServeNetworkIngressItem(TypedDict):
    namespace: str
    podLabels: dict[str, str]


class ServeNetworkRunsItem(TypedDict):
    name: str
    namespace: str | None
    sandbox: bool


class ServeNetworkEgressItem(TypedDict):
    namespace: str
    podLabels: dict[str, str]
    ports: list[int]


class ServeNetwork(TypedDict):
    defaultDeny: bool
    scope: Literal["endpoint", "namespace"]
    ingress: list[ServeNetworkIngressItem]
    runs: list[ServeNetworkRunsItem]
    egress: list[ServeNetworkEgressItem]
    httpsEgress: bool
    privateCidrs: list[str]
    extraIngress: list[dict[str, Any]]
    extraEgress: list[dict[str, Any]]


class ServeProbes(TypedDict):
    startupSeconds: int
    periodSeconds: int


class ServeRollout(TypedDict):
    strategy: Literal["auto", "Recreate", "RollingUpdate"]
    maxSurge: int
    maxUnavailable: int


class ServePdb(TypedDict):
    enabled: bool
    maxUnavailable: int


class Serve(TypedDict):
    name: str | None
    model: ServeModel
    backend: Literal["sglang", "vllm"]
    image: str | None
    imagePullPolicy: Literal["IfNotPresent", "Always", "Never"] | None
    port: int | None
    engine: ServeEngine
    replicas: int
    gpus: int
    cpu: Quantity
    memory: Quantity
    cpuLimit: Quantity | None
    memoryLimit: Quantity | None
    extendedResources: dict[str, str | int]
    shmSize: Quantity | None
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, Any]]
    topologySpreadConstraints: list[dict[str, Any]] | None
    env: dict[str, str | float | bool]
    apiKeySecret: ServeApiKeySecret
    secretEnv: dict[str, ServeSecretEnvValue]
    autoscaling: ServeAutoscaling
    metrics: ServeMetrics
    cache: ServeCache
    priorityClass: ServePriorityClass
    network: ServeNetwork
    probes: ServeProbes
    rollout: ServeRollout
    pdb: ServePdb


class InfraSpec(TypedDict):
    defaults: str | list[str] | None
    infra: Infra
    launch: Launch
    kuberay: Kuberay
    sandbox: Sandbox
    ncclTest: NcclTest
    lint: Lint
    plan: Plan
    serve: Serve
