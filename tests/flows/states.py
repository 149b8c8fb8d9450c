"""One cluster state, written straight into the fake API server, for the flow tests of how the
launcher reads it: a run's pods and the RayCluster KubeRay makes for its RayJob, the RayJob's
status, Kueue's queue objects and a Workload, a model endpoint's pods, rollout and cache claim.

Nothing here reacts to a write. What the operators do over time (KubeRay's attempts, retries,
deadlines and finalizer; Kueue's admission, suspension and preemption; the Deployment
controller's rollout) is tested on the real control plane, in ``tests/e2e``: a state written here
is one the real components were seen to write there.
"""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube, bundled_crds

from support.paths import EXAMPLES

NS = "rl-research"
RUN = "grpo-swe"


# --- a run: its pods, its RayCluster, its RayJob's status ----------------------------------------

def pod(name: str, fleet: str, *, phase: str = "Pending", ready: bool = False, scheduled: bool = True,
        container_state: dict[str, Any] | None = None, last_state: dict[str, Any] | None = None,
        run: str = RUN, namespace: str = NS, conditions: list[dict[str, Any]] | None = None,
        containers: tuple[str, ...] = ("main",), restarts: int = 0) -> dict[str, Any]:
    conds = conditions if conditions is not None else [
        {"type": "PodScheduled", "status": "True" if scheduled else "False"},
        {"type": "Ready", "status": "True" if ready else "False"},
    ]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"dockyard-k8s/run": run, "dockyard-k8s/fleet": fleet}},
        "spec": {"containers": [{"name": c, "image": "img"} for c in containers]},
        "status": {"phase": phase, "conditions": conds,
                   "containerStatuses": [{"name": containers[0], "ready": ready, "restartCount": restarts,
                                          "state": container_state or ({"running": {}} if phase == "Running" else
                                                                       {"waiting": {"reason": "ContainerCreating"}}),
                                          **({"lastState": last_state} if last_state else {})}]},
    }


def start_cluster(fake: FakeKube, *, run: str = RUN, workers: dict[str, int] | None = None, ready: bool = True,
                  submitter: bool = True) -> list[dict[str, Any]]:
    """The RayJob's RayCluster ``<run>-abcde`` and its pods (what KubeRay creates), all running."""
    workers = workers or {"trainer": 2, "inference": 1}
    cluster = f"{run}-abcde"
    job = fake.get("ray.io/v1", "RayJob", NS, run)
    owner = [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": run, "uid": job["metadata"]["uid"]}] if job else []
    fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": cluster, "namespace": NS, "labels": {"dockyard-k8s/run": run},
                           "ownerReferences": owner},
              "spec": {}, "status": {"state": "ready" if ready else ""}})
    phase = "Running" if ready else "Pending"
    pods = [pod(f"{cluster}-head-x1", "head", phase=phase, ready=ready)]
    for fleet, n in workers.items():
        pods += [pod(f"{cluster}-{fleet}-worker-{i}", fleet, phase=phase, ready=ready) for i in range(n)]
    if submitter:
        pods.append(pod(f"{run}-submit-q2", "submitter", phase=phase, ready=ready))
    return [fake.put(p) for p in pods]


def owned_by_the_cluster(fake: FakeKube, pods: list[dict[str, Any]], *, run: str = RUN) -> None:
    """``pods`` as KubeRay makes them: owned by the RayCluster (collected with it), labelled with
    it (``ray.io/cluster``), bound to a node (their deletion is graceful)."""
    owner = fake.get("ray.io/v1", "RayCluster", NS, f"{run}-abcde")
    assert owner is not None
    for p in pods:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "controller": True,
                                             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
        p["metadata"]["labels"]["ray.io/cluster"] = owner["metadata"]["name"]
        p["spec"]["nodeName"] = "p4de-0"
        fake.put(p)


def set_job(fake: FakeKube, deployment: str, job: str = "", *, run: str = RUN, **extra: Any) -> None:
    """The RayJob's status as KubeRay writes it: jobDeploymentStatus, jobStatus, its cluster, ``extra``."""
    fake.set_status("ray.io/v1", "RayJob", NS, run, {"jobDeploymentStatus": deployment, "jobStatus": job,
                                                     "rayClusterName": f"{run}-abcde", **extra})


def set_cluster(fake: FakeKube, status: dict[str, Any], *, name: str = RUN) -> None:
    """The RayCluster's status as KubeRay writes it (``observedGeneration`` defaults to the current one)."""
    cluster = fake.get("ray.io/v1", "RayCluster", NS, name)
    assert cluster is not None
    fake.set_status("ray.io/v1", "RayCluster", NS, name,
                    {"observedGeneration": cluster["metadata"].get("generation", 1), **status},
                    manager="kuberay-operator")


# --- Kueue's objects --------------------------------------------------------------------------------

KUEUE = "kueue.x-k8s.io/v1beta2"


def install_kueue(fake: FakeKube) -> None:
    """Kueue's CRDs (the bundled v0.19.2 ones): the cluster serves its objects."""
    fake.install_crds(bundled_crds("kueue"))


def condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    """A Workload condition as Kueue writes it."""
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


def flavor(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": labels} if labels else {}}


def cluster_queue(name: str, flavors: dict[str, dict[str, Any]], *, checks: list[str] | None = None) -> dict[str, Any]:
    covered = sorted({r for q in flavors.values() for r in q})
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": covered, "flavors": [
        {"name": f, "resources": [{"name": r, "nominalQuota": q.get(r, 0)} for r in covered]}
        for f, q in flavors.items()]}]}
    if checks:
        spec["admissionChecks"] = checks
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def busy_workload(name: str, namespace: str, cq: str, usage: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """Someone else's admitted Workload holding ``usage`` ({resource: (flavor, amount)})."""
    return {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": name, "namespace": namespace},
            "spec": {"queueName": "other", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"admission": {"clusterQueue": cq, "podSetAssignments": [{
                "name": "main", "count": 1, "flavors": {r: f for r, (f, _) in usage.items()},
                "resourceUsage": {r: str(a) for r, (_, a) in usage.items()}}]},
                "conditions": [condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
                               condition("Admitted", "True", "Admitted", "The workload is admitted")]}}


def workload_of(fake: FakeKube, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The job's Workload as Kueue makes it (``<kind>-<job>-<hash>``, owned by the job) with ``status``."""
    meta = job["metadata"]
    wl = fake.put({"apiVersion": KUEUE, "kind": "Workload", "metadata": {
        "name": f"{job['kind'].lower()}-{meta['name']}-5d2f1", "namespace": meta["namespace"],
        "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
        "ownerReferences": [{"apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"],
                             "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"queueName": meta["labels"]["kueue.x-k8s.io/queue-name"], "podSets": [
            {"name": "head", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}})
    return fake.set_status(KUEUE, "Workload", meta["namespace"], wl["metadata"]["name"], status)


# --- a model endpoint ---------------------------------------------------------------------------------

KIND_SPEC = str(EXAMPLES / "llama3_8b_kind.serve.yaml")
EKS_SPEC = str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")
SERVE_NS = "llama"
ENDPOINT = "llama-8b"


def serve_keda(fake: FakeKube) -> None:
    """The KEDA operator's CRDs are installed (the bundled v2.20.2 ones), and prometheus-operator's
    PodMonitor (kube-prometheus-stack, what KEDA queries): both are served, and checked against
    their schema by the fake."""
    fake.install_crds([*bundled_crds("keda"), *bundled_crds("prometheus")])


def server_pod(name: str = f"{ENDPOINT}-7d9f8c6b5-x2k4q", *, phase: str = "Pending", ready: bool = False,
               scheduled: bool = True, state: dict[str, Any] | None = None, last_state: dict[str, Any] | None = None,
               unschedulable: str = "", restarts: int = 0, endpoint: str = ENDPOINT,
               namespace: str = SERVE_NS) -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "True" if scheduled else "False",
                   **({"reason": "Unschedulable", "message": unschedulable} if unschedulable else {})},
                  {"type": "Ready", "status": "True" if ready else "False"}]
    container = {"name": "vllm", "ready": ready, "restartCount": restarts,
                 "state": state or ({"running": {}} if phase == "Running" else
                                    {"waiting": {"reason": "ContainerCreating"}})}
    if last_state:
        container["lastState"] = last_state
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"dockyard-k8s/endpoint": endpoint, "dockyard-k8s/fleet": "serve"}},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0"}]},
            "status": {"phase": phase, "conditions": conditions, "containerStatuses": [container]}}


def rollout(fake: FakeKube, *, ready: int, want: int = 1, name: str = ENDPOINT, namespace: str = SERVE_NS,
            conditions: list[dict[str, Any]] | None = None) -> None:
    """The Deployment controller's status: ``ready`` of ``want`` replicas updated and available."""
    dep = fake.get("apps/v1", "Deployment", namespace, name)
    assert dep is not None
    fake.set_status("apps/v1", "Deployment", namespace, name, {
        "observedGeneration": dep["metadata"].get("generation", 1), "replicas": max(ready, want),
        "updatedReplicas": want, "readyReplicas": ready, "availableReplicas": ready,
        "conditions": conditions or [{"type": "Available", "status": "True" if ready >= want else "False"}]})


def bind_claim(fake: FakeKube, phase: str = "Bound", *, name: str = f"{ENDPOINT}-cache",
               namespace: str = SERVE_NS) -> None:
    claim = fake.get("v1", "PersistentVolumeClaim", namespace, name)
    assert claim is not None
    status = {"phase": phase}
    if phase == "Bound":
        status |= {"accessModes": claim["spec"]["accessModes"], "capacity": {"storage": "100Gi"}}
    fake.set_status("v1", "PersistentVolumeClaim", namespace, name, status)
