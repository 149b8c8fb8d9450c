"""The test control plane is what it says: real components at the pinned versions, doing real work.

These are the session's readiness checks (issue 21 §3): if one fails, no other e2e result means
anything, and the component logs are printed at the end of the session.
"""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

import controlplane as cp
import pytest
from e2e_helpers import loopback

pytestmark = pytest.mark.e2e


@pytest.fixture
def ours(cluster: Any) -> Any:
    if not cluster.ours:
        pytest.skip("checks the control plane scripts/controlplane.sh starts")
    return cluster


def test_api_server_is_ready_and_says_its_pinned_version(ours: Any) -> None:
    assert ours.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    version = json.loads(ours.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == cp.pins()["KUBERNETES"]
    client = json.loads(ours.kubectl("version", "--client", "-o", "json").stdout)
    assert client["clientVersion"]["gitVersion"] == cp.pins()["KUBERNETES"]


def test_every_node_of_the_fleet_is_ready_with_its_gpus(ours: Any) -> None:
    nodes = {n["metadata"]["name"]: n for n in ours.get("nodes")["items"]}
    assert len(nodes) == len(cp.FLEET)
    for node in nodes.values():
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert nodes["p5-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert nodes["p4de-0"]["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "p4de.24xlarge"


def test_crds_are_established(ours: Any) -> None:
    crds = {c["metadata"]["name"]: c for c in ours.get("crd")["items"]}
    for name in ("rayjobs.ray.io", "rayclusters.ray.io", "clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io",
                 "scaledobjects.keda.sh", "podmonitors.monitoring.coreos.com"):
        conditions = {c["type"]: c["status"] for c in crds[name]["status"]["conditions"]}
        assert conditions["Established"] == "True", name


def test_the_scheduler_places_a_gpu_pod_and_refuses_an_impossible_one(ours: Any, ns: str) -> None:
    def pod(name: str, gpus: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
    ours.apply(pod("canary-1gpu", 1), pod("canary-99gpu", 99))
    running = ours.wait("1-GPU pod Running", lambda: ours.get("-n", ns, "pod", "canary-1gpu")["status"].get("phase")
                        == "Running")
    assert running
    def unschedulable() -> bool:
        conditions = ours.get("-n", ns, "pod", "canary-99gpu")["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)
    ours.wait("99-GPU pod Unschedulable", unschedulable)
    ours.kubectl("-n", ns, "delete", "pod", "canary-1gpu", "canary-99gpu", "--wait=false")


def test_kueue_webhook_denies_an_invalid_cluster_queue(ours: Any) -> None:
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "e2e-invalid"},
           "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
               {"name": "default", "resources": [{"name": "memory", "nominalQuota": 1}]}]}]}}
    proc = ours.kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert proc.returncode != 0
    assert 'admission webhook "vclusterqueue.kb.io" denied the request' in proc.stderr


def test_a_tiny_rayjob_completes_through_the_real_operator(ours: Any, ns: str) -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "tiny", "namespace": ns},
           "spec": {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                    "rayClusterSpec": {"rayVersion": "2.52.1", "headGroupSpec": {"rayStartParams": {}, "template": {
                        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.1",
                                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}}
    ours.apply(job)
    def complete() -> bool:
        status = ours.get("-n", ns, "rayjob", "tiny").get("status") or {}
        return (status.get("jobDeploymentStatus"), status.get("jobStatus")) == ("Complete", "SUCCEEDED")
    ours.wait("RayJob Complete", complete)


def test_the_api_server_reaches_pods_and_kubelets_only_through_the_head_stand_in(ours: Any, ns: str) -> None:
    """kube-apiserver's ``cluster`` egress is HTTP CONNECT over rayhead.py's unix socket
    (controlplane.egress_selector): a pod that is no Ray head is refused there (kwok's fake pod IP,
    a private address, is never dialled); the kubelet API kwok serves on loopback is relayed."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "egress-canary", "namespace": ns},
           "spec": {"nodeSelector": {"node-role": "cpu"}, "containers": [{"name": "c", "image": "busybox"}]}}
    ours.apply(pod)
    ip = ours.wait("the pod's IP", lambda: ours.get("-n", ns, "pod", "egress-canary")["status"].get("podIP"))
    proxied = ours.kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/egress-canary:8265/proxy/api/jobs/",
                           check=False)
    assert proxied.returncode != 0
    assert f"proxy error from {ours.stack.egress_socket} while dialing {ip}:8265, code 502" in proxied.stderr
    assert any(r["target"] == f"{ip}:8265" for r in ours.egress()["refused"])

    assert "hello from the fake kubelet" in ours.kubectl("-n", ns, "logs", "egress-canary").stdout
    dialled = ours.egress()["dialled"]
    assert dialled and all(loopback(a) for a in dialled), dialled

    with socket.socket(socket.AF_UNIX) as conn:  # what the API server writes, to a private address
        conn.settimeout(10)
        conn.connect(str(ours.stack.egress_socket))
        conn.sendall(b"CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert conn.recv(4096).startswith(b"HTTP/1.1 502 ")
    egress = ours.egress()
    assert any(r["target"] == "10.0.0.1:443" for r in egress["refused"])
    assert all(loopback(a) for a in egress["dialled"]), egress["dialled"]
    ours.kubectl("-n", ns, "delete", "pod", "egress-canary", "--wait=false")


def test_go_mod_replaces_every_staging_module_of_the_pinned_kubernetes(ours: Any) -> None:
    """The wrapper module's replace block is generated from k8s.io/kubernetes' own go.mod, not hand-kept."""
    assert cp.staging_replaces_drift() == []


def test_controlplane_script_prints_how_to_use_the_stack(ours: Any) -> None:
    env = {**__import__("os").environ, "DOCKYARD_CP_CACHE": cp.cache_root().as_posix()}
    out = subprocess.run([str(cp.REPO / "scripts/controlplane.sh"), "env", "--name", ours.stack.name], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert f"export KUBECONFIG={ours.kubeconfig}" in out
