"""What KubeRay and the kubelet would do, played on the fake API server by flow tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakekube import FakeKube

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NS = "rl-research"
RUN = "grpo-swe"


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
    """The RayJob's RayCluster and its pods (what KubeRay creates), all running."""
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


def set_job(fake: FakeKube, deployment: str, job: str = "", *, run: str = RUN, **extra: Any) -> None:
    fake.set_status("ray.io/v1", "RayJob", NS, run, {"jobDeploymentStatus": deployment, "jobStatus": job,
                                                     "rayClusterName": f"{run}-abcde", **extra})
