"""The test control plane is what it says: real components at the pinned versions, doing real work.

The readiness checks themselves (version, nodes, CRDs, scheduler canaries, Kueue's webhook, a
tiny RayJob) gate the session in the ``cluster`` fixture (readiness.py); these are the rest.
"""

from __future__ import annotations

import socket
import subprocess
from typing import Any

import controlplane as cp
import pytest
import readiness
from e2e_helpers import loopback

pytestmark = pytest.mark.e2e


@pytest.fixture
def ours(cluster: Any) -> Any:
    if not cluster.ours:
        pytest.skip("checks the control plane scripts/controlplane.sh starts")
    return cluster


def test_the_session_started_only_once_the_stack_passed_its_readiness_gate(ours: Any) -> None:
    """The ``cluster`` fixture ran readiness.gate before any test: every check, in order."""
    assert ours.ready == [check.__name__ for check in readiness.CHECKS]


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
