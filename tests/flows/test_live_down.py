"""`serve down` against the stateful fake: an endpoint's NetworkPolicies stay until its pods are gone.

A run's `down` (its policies and token Secret kept until the pods are gone, a RayJob held by a
finalizer) is tested on the real control plane: tests/e2e/test_down.py."""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube


def test_serve_down_keeps_the_policies_while_a_server_pod_terminates(cli: Any, fake: FakeKube) -> None:
    """`serve down` waits the same way, within its own --timeout."""
    from serve_sim import KIND_SPEC, NAME, server_pod
    from serve_sim import NS as SERVE_NS

    fake.kubelet_terminates = False
    fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SERVE_NS}, "status": {"phase": "Active"}})
    assert cli("serve", "up", KIND_SPEC, "--detach").code == 0
    dep = fake.get("apps/v1", "Deployment", SERVE_NS, NAME)
    pod = server_pod(phase="Running", ready=True)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME,
                                           "uid": dep["metadata"]["uid"]}]  # collected with the Deployment
    pod["spec"]["nodeName"] = "gpu-0"
    fake.put(pod)
    policies = len(fake.all("networking.k8s.io/v1", "NetworkPolicy"))
    assert policies
    r = cli("serve", "down", KIND_SPEC, "--timeout", "0.2")
    assert r.code == 1, r.out + r.err
    assert "the NetworkPolicies were kept" in r.err and pod["metadata"]["name"] in r.err
    assert len(fake.all("networking.k8s.io/v1", "NetworkPolicy")) == policies
    fake.finish_pod(SERVE_NS, pod["metadata"]["name"])
    r = cli("serve", "down", KIND_SPEC)
    assert r.code == 0, r.out + r.err
    assert fake.all("networking.k8s.io/v1", "NetworkPolicy") == []
