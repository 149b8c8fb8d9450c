"""The session's readiness gate (issue 21 §3): the stack the ``cluster`` fixture starts is used only
once real components have done real work on it. If one check fails, no e2e result would mean
anything: the fixture fails, every e2e test errors with that check's message, and the component
logs are printed at the end of the session.
"""

from __future__ import annotations

import json
from typing import Any

import controlplane as cp


def gate(cluster: Any) -> list[str]:
    """Each of :data:`CHECKS` in order (the names of those passed); an AssertionError names the
    first that fails."""
    ns = cluster.namespace()
    passed = []
    for check in CHECKS:
        try:
            check(cluster, ns)
        except AssertionError as e:
            raise AssertionError(f"the control plane is not ready: {check.__name__}: {e}") from e
        passed.append(check.__name__)
    return passed


def api_server_pinned(cluster: Any, ns: str) -> None:
    """/readyz, and /version (server and kubectl) says the pinned Kubernetes, stamped at build."""
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    version = json.loads(cluster.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == cp.pins()["KUBERNETES"], version
    client = json.loads(cluster.kubectl("version", "--client", "-o", "json").stdout)
    assert client["clientVersion"]["gitVersion"] == cp.pins()["KUBERNETES"], client


def nodes_ready(cluster: Any, ns: str) -> None:
    nodes = {n["metadata"]["name"]: n for n in cluster.get("nodes")["items"]}
    assert len(nodes) == len(cp.FLEET), sorted(nodes)
    for name, node in nodes.items():
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True", name
    assert nodes["p5-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert nodes["p4de-0"]["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "p4de.24xlarge"


def crds_established(cluster: Any, ns: str) -> None:
    crds = {c["metadata"]["name"]: c for c in cluster.get("crd")["items"]}
    for name in ("rayjobs.ray.io", "rayclusters.ray.io", "clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io",
                 "scaledobjects.keda.sh", "podmonitors.monitoring.coreos.com"):
        conditions = {c["type"]: c["status"] for c in crds[name]["status"]["conditions"]}
        assert conditions["Established"] == "True", name


def scheduler_canaries(cluster: Any, ns: str) -> None:
    """The real scheduler places a 1-GPU pod (kwok runs it) and finds a 99-GPU one Unschedulable."""
    def pod(name: str, gpus: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
    cluster.apply(pod("canary-1gpu", 1), pod("canary-99gpu", 99))
    cluster.wait("1-GPU pod Running",
                 lambda: cluster.get("-n", ns, "pod", "canary-1gpu")["status"].get("phase") == "Running")

    def unschedulable() -> bool:
        conditions = cluster.get("-n", ns, "pod", "canary-99gpu")["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)
    cluster.wait("99-GPU pod Unschedulable", unschedulable)
    cluster.kubectl("-n", ns, "delete", "pod", "canary-1gpu", "canary-99gpu", "--wait=false")


def kueue_webhook_denies(cluster: Any, ns: str) -> None:
    """Kueue's validating webhook answers the API server (at its URL, through its own certificate)."""
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "e2e-invalid"},
           "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
               {"name": "default", "resources": [{"name": "memory", "nominalQuota": 1}]}]}]}}
    proc = cluster.kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert proc.returncode != 0
    assert 'admission webhook "vclusterqueue.kb.io" denied the request' in proc.stderr, proc.stderr


def tiny_rayjob_completes(cluster: Any, ns: str) -> None:
    """The real KubeRay operator takes a RayJob to Complete (its head run by kwok, its dashboard the stand-in)."""
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "tiny", "namespace": ns},
           "spec": {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                    "rayClusterSpec": {"rayVersion": "2.52.1", "headGroupSpec": {"rayStartParams": {}, "template": {
                        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.1",
                                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}}
    cluster.apply(job)

    def complete() -> bool:
        status = cluster.get("-n", ns, "rayjob", "tiny").get("status") or {}
        return (status.get("jobDeploymentStatus"), status.get("jobStatus")) == ("Complete", "SUCCEEDED")
    cluster.wait("RayJob Complete", complete)


CHECKS = (api_server_pinned, nodes_ready, crds_established, scheduler_canaries, kueue_webhook_denies,
          tiny_rayjob_completes)
