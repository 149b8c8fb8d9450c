"""What the Deployment controller, the kubelet and the volume provisioner would do for a model
endpoint, played on the fake API server by the serve flow tests."""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube, bundled_crds

from support.paths import EXAMPLES

KIND_SPEC = str(EXAMPLES / "llama3_8b_kind.serve.yaml")
EKS_SPEC = str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")
NS = "llama"
NAME = "llama-8b"


def serve_keda(fake: FakeKube) -> None:
    """The KEDA operator's CRDs are installed (the bundled v2.20.2 ones), and prometheus-operator's
    PodMonitor (kube-prometheus-stack, what KEDA queries): both are served, and checked against
    their schema by the fake."""
    fake.install_crds([*bundled_crds("keda"), *bundled_crds("prometheus")])


def server_pod(name: str = f"{NAME}-7d9f8c6b5-x2k4q", *, phase: str = "Pending", ready: bool = False,
               scheduled: bool = True, state: dict[str, Any] | None = None, last_state: dict[str, Any] | None = None,
               unschedulable: str = "", restarts: int = 0, endpoint: str = NAME, namespace: str = NS) -> dict[str, Any]:
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


def rollout(fake: FakeKube, *, ready: int, want: int = 1, name: str = NAME, namespace: str = NS,
            conditions: list[dict[str, Any]] | None = None) -> None:
    """The Deployment controller's status: ``ready`` of ``want`` replicas updated and available."""
    dep = fake.get("apps/v1", "Deployment", namespace, name)
    assert dep is not None
    fake.set_status("apps/v1", "Deployment", namespace, name, {
        "observedGeneration": dep["metadata"].get("generation", 1), "replicas": max(ready, want),
        "updatedReplicas": want, "readyReplicas": ready, "availableReplicas": ready,
        "conditions": conditions or [{"type": "Available", "status": "True" if ready >= want else "False"}]})


def bind_claim(fake: FakeKube, phase: str = "Bound", *, name: str = f"{NAME}-cache", namespace: str = NS) -> None:
    claim = fake.get("v1", "PersistentVolumeClaim", namespace, name)
    assert claim is not None
    status = {"phase": phase}
    if phase == "Bound":
        status |= {"accessModes": claim["spec"]["accessModes"], "capacity": {"storage": "100Gi"}}
    fake.set_status("v1", "PersistentVolumeClaim", namespace, name, status)
