"""Workload shape: probes, disruption budgets, job lifetimes, StatefulSet services,
priority and namespaces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.kube import parse_quantity, selector_matches
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname
from dockyard_k8s.lint.rules.images import GANG_KINDS

LONG_RUNNING = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")
CLUSTER_SCOPED = ("Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
                  "RuntimeClass", "StorageClass", "CustomResourceDefinition", "ValidatingWebhookConfiguration",
                  "MutatingWebhookConfiguration", "IngressClass", "ValidatingAdmissionPolicy", "List")


def probes(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind not in LONG_RUNNING:
        return
    for pod in o.pods:
        for path, k in pod.containers("containers"):
            missing = [p for p in ("readinessProbe", "livenessProbe") if not isinstance(k.get(p), dict)]
            if missing:
                yield Hit((*path, missing[0]), f"container {cname(k)!r} has no {' and no '.join(missing)}",
                          WARNING if "readinessProbe" in missing else INFO)


def _disruptions_allowed(pdb: Obj, replicas: int) -> int | None:
    """Voluntary disruptions a PDB allows for ``replicas`` healthy pods (None if unknown)."""
    spec = pdb.get("spec") or {}
    for field, invert in (("maxUnavailable", False), ("minAvailable", True)):
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, str) and value.endswith("%"):
            pct = parse_quantity(value[:-1])
            if pct is None:
                return None
            # maxUnavailable rounds up, minAvailable rounds up too (so allowed = replicas - ceil).
            amount = -((-pct * replicas) // 100)
        elif isinstance(value, int):
            amount = value
        else:
            return None
        return int(replicas - amount) if invert else int(amount)
    return None


def pdb(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind in ("Deployment", "StatefulSet") and o.pods:
        replicas = o.pods[0].template.replicas or 0
        pod = o.pods[0]
        budgets = c.selecting("PodDisruptionBudget", pod, lambda p: p.get("spec", "selector"))
        if replicas >= 2 and not budgets:
            yield Hit(("spec", "replicas"), f"{replicas} replicas and no PodDisruptionBudget: a node drain may "
                                            "evict them all at once")
        if len(budgets) > 1:
            yield Hit(pod.spec_path, f"pods are selected by {len(budgets)} PodDisruptionBudgets "
                                     f"({', '.join(b.name for b in budgets)}): the eviction API refuses to evict "
                                     "them at all", ERROR)
    if o.kind == "PodDisruptionBudget":
        selector = o.get("spec", "selector")
        for w in c.of_kind("Deployment", "StatefulSet"):
            if w.namespace != o.namespace or not w.pods or not selector_matches(selector, w.pods[0].labels):
                continue
            allowed = _disruptions_allowed(o, w.pods[0].template.replicas or 0)
            if allowed is not None and allowed <= 0:
                field = "maxUnavailable" if "maxUnavailable" in (o.get("spec") or {}) else "minAvailable"
                yield Hit(("spec", field), f"allows no voluntary disruption of {w.ref} "
                                           f"({w.pods[0].template.replicas} replicas): node drains hang")


def job_ttl(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind == "Job" and o.get("spec", "ttlSecondsAfterFinished") is None:
        yield Hit(("spec", "ttlSecondsAfterFinished"), "finished Job and its pods are kept forever "
                                                       "(no ttlSecondsAfterFinished)")
    if o.kind == "CronJob" and o.get("spec", "jobTemplate", "spec", "ttlSecondsAfterFinished") is None \
            and o.get("spec", "successfulJobsHistoryLimit") is None:
        yield Hit(("spec", "jobTemplate", "spec", "ttlSecondsAfterFinished"),
                  "jobs of this CronJob set no ttlSecondsAfterFinished")
    if o.kind == "RayJob" and o.get("spec", "shutdownAfterJobFinishes") is not True \
            and not o.get("spec", "deletionStrategy") and o.get("spec", "rayClusterSpec") is not None:
        yield Hit(("spec", "shutdownAfterJobFinishes"), "the RayCluster (and its GPUs) outlives the job: neither "
                                                        "shutdownAfterJobFinishes nor a deletionStrategy is set")


def job_deadline(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind in ("Job", "RayJob") and o.get("spec", "activeDeadlineSeconds") is None:
        yield Hit(("spec", "activeDeadlineSeconds"), f"{o.kind} has no activeDeadlineSeconds: a hung run holds "
                                                     "its nodes until someone notices")


def deadline_cold_pull(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind not in ("Job", "RayJob"):
        return
    pull = c.config.cold_pull_seconds
    for field in ["activeDeadlineSeconds"] + (["preRunningDeadlineSeconds"] if o.kind == "RayJob" else []):
        value: Any = o.get("spec", field)
        if isinstance(value, int) and not isinstance(value, bool) and value < pull:
            yield Hit(("spec", field), f"{field} {value}s is shorter than a cold image pull ({pull}s, "
                                       "lint.coldPullSeconds): the run can fail before its image is on the node")
    for p in o.pods:
        value = p.spec.get("activeDeadlineSeconds")
        if isinstance(value, int) and not isinstance(value, bool) and value < pull:
            yield Hit(p.at("activeDeadlineSeconds"), f"pod activeDeadlineSeconds {value}s is shorter than a cold "
                                                     f"image pull ({pull}s)")


def statefulset_service(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind != "StatefulSet":
        return
    name = o.get("spec", "serviceName")
    if not name:
        yield Hit(("spec", "serviceName"), "no serviceName: pods get no stable DNS names "
                                           "(<pod>.<service>) for peers to find the head")
        return
    services = [s for s in c.of_kind("Service") if s.name == name and s.namespace == o.namespace]
    if not services:
        yield Hit(("spec", "serviceName"), f"serviceName {name!r} names no Service among the linted objects")
    elif services[0].get("spec", "clusterIP") != "None":
        yield Hit(("spec", "serviceName"), f"Service {name!r} is not headless (clusterIP: None): pods get no "
                                           "per-pod DNS records")


def priority_class(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if (pod.gpus or o.kind in GANG_KINDS) and not pod.spec.get("priorityClassName"):
            yield Hit(pod.at("priorityClassName"), "GPU gang pod without priorityClassName: any pending pod can "
                                                   "preempt it and stall the whole gang")


def namespace(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind in CLUSTER_SCOPED or not o.kind:
        return
    if o.namespace == "default":
        yield Hit(("metadata", "namespace"), "object lives in the default namespace")
    elif not o.namespace:
        yield Hit(("metadata", "namespace"), "no namespace: the object goes wherever kubectl's context points",
                  INFO)


RULES = (
    Rule("probes", WARNING, "Long-running containers should have readiness and liveness probes",
         "Without a readiness probe a Service sends tasks to an executor that is still starting; without a "
         "liveness probe a hung executor keeps its slot forever. (Ray pods get their probes from KubeRay; Jobs "
         "need none.) Fix: readinessProbe and livenessProbe (sandbox.probes adds TCP probes on the executor port).",
         ("kube-linter no-readiness-probe/no-liveness-probe", "Polaris readinessProbeMissing/livenessProbeMissing",
          "kube-score pod-probes", "Checkov"), probes),
    Rule("pod-disruption-budget", WARNING, "Replicated workloads should have a PDB that allows a disruption",
         "A node drain evicts every pod of a Deployment at once unless a PodDisruptionBudget limits it; a PDB that "
         "allows no disruption (maxUnavailable: 0) blocks drains and upgrades instead, and a pod under two PDBs "
         "cannot be evicted at all. Fix: one PDB per pool with maxUnavailable: 1 (sandbox.pdb).",
         ("kube-score deployment-has-poddisruptionbudget", "Polaris missingPodDisruptionBudget",
          "kube-linter pdb-max-unavailable"), pdb),
    Rule("job-ttl", WARNING, "Finished jobs should be cleaned up",
         "Finished Jobs keep their pods (and logs) forever; a RayJob that does not shut its RayCluster down keeps "
         "the GPUs allocated after the job ends. Fix: ttlSecondsAfterFinished on Jobs; on RayJobs "
         "launch.shutdownAfterJobFinishes (with ttlSecondsAfterFinished to read logs) or launch.deletionRules.",
         ("kube-linter", "kube-score"), job_ttl),
    Rule("job-deadline", INFO, "Jobs should have a deadline",
         "activeDeadlineSeconds bounds how long a stuck run can hold GPUs. Fix: launch.activeDeadlineSeconds "
         "(training time plus lint.coldPullSeconds for the first pull).",
         ("kube-score", "EKS RL manifests"), job_deadline),
    Rule("deadline-cold-pull", WARNING, "Deadlines must leave room for a cold image pull",
         "A cold pull of a 15-20 GB training image takes 5-10 minutes, and the deadline clock runs during it: a "
         "deadline shorter than that fails the run before the image is on the node. Fix: add "
         "lint.coldPullSeconds (600 by default) to activeDeadlineSeconds, and keep preRunningDeadlineSeconds above "
         "it.", ("EKS RL manifests: add 10 minutes to activeDeadlineSeconds",), deadline_cold_pull),
    Rule("statefulset-service", WARNING, "StatefulSets need a headless Service named by serviceName",
         "Multi-node training on a StatefulSet finds its head at <pod>.<service>.<namespace>.svc; that record "
         "exists only when spec.serviceName names a headless Service (clusterIP: None), applied before the "
         "StatefulSet. Fix: add the headless Service and name it in serviceName.",
         ("kube-score statefulset-has-servicename", "EKS RL manifests"), statefulset_service),
    Rule("priority-class", WARNING, "GPU gang pods should set a priorityClassName",
         "Without a priority class, GPU pods have priority 0 and a preempting scheduler may evict one of them for "
         "any pending pod, which stalls every other pod of the gang. Fix: infra.priorityClassName (the class must "
         "exist in the cluster).", ("Polaris priorityClassNotSet", "kube-linter"), priority_class),
    Rule("namespace", WARNING, "Objects should not live in the default namespace",
         "The default namespace is shared by everything applied without a namespace, has no quota of its own and "
         "mixes runs. Fix: infra.namespace (or -n) naming a namespace for the team or the run.",
         ("Polaris", "kube-linter", "Checkov"), namespace),
)
