"""`down` against the stateful fake: the run's NetworkPolicies stay until its pods are gone."""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube
from flowkit import in_background, wait_output
from kuberay_sim import NS, RUN, start_cluster

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def owned_by_the_cluster(fake: FakeKube, pods: list[dict[str, Any]]) -> None:
    """The pods as KubeRay makes them: owned by the RayCluster (so collected with it), bound to a node
    (so their deletion is graceful)."""
    owner = fake.get("ray.io/v1", "RayCluster", NS, f"{RUN}-abcde")
    assert owner is not None
    for p in pods:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "controller": True,
                                             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
        p["spec"]["nodeName"] = "p4de-0"
        fake.put(p)


def test_down_deletes_the_network_policies_only_once_the_pods_are_gone(cli: Any, fake: FakeKube) -> None:
    """A pod being deleted runs its grace period: its sandbox policy must still be there."""
    fake.kubelet_terminates = False  # bound pods stay Terminating until the test says the kubelet is done
    cli("run", *ARGS, "--detach")
    start_cluster(fake)
    owned_by_the_cluster(fake, fake.all("v1", "Pod"))
    pods = sorted(p["metadata"]["name"] for p in fake.all("v1", "Pod"))
    policies = sorted(p["metadata"]["name"] for p in fake.all("networking.k8s.io/v1", "NetworkPolicy"))
    seen: list[tuple[list[str], list[str]]] = []

    def kubelet() -> None:
        wait_output(fake, "waiting for")
        for name in pods:  # each pod ends its grace period in turn
            seen.append(([p["metadata"]["name"] for p in fake.all("v1", "Pod")],
                         [p["metadata"]["name"] for p in fake.all("networking.k8s.io/v1", "NetworkPolicy")]))
            fake.finish_pod(NS, name)

    t = in_background(kubelet)
    r = cli("down", *ARGS)
    t.join(5)
    assert not t.errors
    assert r.code == 0, r.out + r.err
    assert f"waiting for {len(pods)} pod(s) of {RUN} to be gone before deleting its {len(policies)} NetworkPolicies" \
        in r.out
    assert len(seen) == len(pods) and all(sorted(pols) == policies for _, pols in seen)  # in force while pods ran
    assert fake.all("v1", "Pod") == [] and fake.all("networking.k8s.io/v1", "NetworkPolicy") == []


def test_down_keeps_the_policies_when_the_pods_do_not_go_in_time(cli: Any, fake: FakeKube) -> None:
    fake.kubelet_terminates = False
    cli("run", *ARGS, "--detach")
    start_cluster(fake)
    head = fake.all("v1", "Pod")[0]
    owned_by_the_cluster(fake, [head])
    r = cli("down", *ARGS, "--timeout", "0.5")
    assert r.code == 1, r.out + r.err
    assert "the NetworkPolicies were kept, so that no pod of the run runs without them" in r.err
    assert "`down` again deletes the policies once they are gone" in r.err
    assert len(fake.all("networking.k8s.io/v1", "NetworkPolicy")) == 2
    fake.finish_pod(NS, head["metadata"]["name"])
    r = cli("down", *ARGS)
    assert r.code == 0, r.out + r.err
    assert fake.all("networking.k8s.io/v1", "NetworkPolicy") == []


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
