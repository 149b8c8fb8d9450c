"""The sandbox cannot touch the GPU cluster: every example infra file x every launch mode,
judged by the test-side evaluator of NetworkPolicy semantics (tests/support/netpol.py), on
the pod CIDRs CNIs use in the wild, with ipBlock's CNI-specific matching at its worst."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.examples import CASES, EXAMPLES, example_bundle, mode_sets
from support.netpol import Address, Network, Pod
from support.paths import REPO

FLEET = "dockyard-k8s/fleet"
POD_CIDRS = ("10.244.0.0/16", "10.42.0.0/16", "192.168.0.0/16", "100.64.0.0/16", "172.20.0.0/16")
RAY_PORTS = (6379, 8265, 10001, 52365, 8080, 12345)  # GCS, dashboard, client, agent, metrics, a worker port
METADATA = ("169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "168.63.129.16",
            "fd00:ec2::254", "fd00:ec2::23")
PRIVATE = ("10.0.0.1", "10.255.255.254", "172.16.0.1", "172.31.255.254", "192.168.0.1", "192.168.255.254",
           "100.64.0.1", "100.127.255.254", "fc00::1", "fd12:3456::1", "fe80::1")
PUBLIC = ("140.82.112.3", "151.101.1.69")
# Counted as public before issue 22 item 25, each internal somewhere: NAT64 of 10.0.0.1 (64:ff9b::/96
# maps every IPv4 address, private ones too), RFC 8215 local NAT64, class E (GKE pod and Service
# ranges may use 240.0.0.0/4), RFC 2544 benchmarking space (used as internal space), and IPv6 global
# unicast (pods of IPv6 clusters, EKS IPv6 and GKE dual-stack, get global addresses).
RESERVED = ("64:ff9b::a00:1", "64:ff9b:1::a00:1", "240.0.0.1", "255.255.255.254", "198.18.0.1", "198.19.255.254",
            "2600:1f18:ab::1", "2606:4700::6810:84e5")


def bundle_objects(example: str, mode: str, sets: list[str] | None = None) -> list[dict[str, Any]]:
    """As tests/golden renders the case, plus ``sets``."""
    return example_bundle(example, [*mode_sets(example, mode), *(sets or [])]).objects


def outsiders(ns: str) -> list[Pod]:
    """Pods that are not the run's: the operator (Helm and kustomize labels), cluster DNS,
    a stranger in the namespace, a pod of another namespace, the attached cluster's head."""
    return [
        Pod("operator-helm", "kuberay-system", {"app.kubernetes.io/name": "kuberay-operator"}, "10.99.0.10"),
        Pod("operator-kustomize", "ray-system", {"app.kubernetes.io/name": "kuberay",
                                                 "app.kubernetes.io/component": "kuberay-operator"}, "10.99.0.11"),
        Pod("coredns", "kube-system", {"k8s-app": "kube-dns"}, "10.99.0.2"),
        Pod("stranger", ns, {"app": "notebook"}, "10.99.0.20"),
        Pod("elsewhere", "other-team", {"app": "web"}, "10.99.0.30"),
        Pod("attached-head", ns, {"ray.io/cluster": "shared-ray", "ray.io/node-type": "head"}, "10.99.0.40"),
    ]


def test_every_example_infra_file_is_covered() -> None:
    assert sorted(p.name.removesuffix(".infra.yaml") for p in (REPO / "examples").glob("*.infra.yaml")) == \
        sorted(EXAMPLES)


@pytest.fixture(scope="module")
def rendered() -> dict[tuple[str, str], list[dict[str, Any]]]:
    return {(e, m): bundle_objects(e, m) for e, m in CASES}


def networks(objects: list[dict[str, Any]]) -> Iterator[Network]:
    ns = next(o["metadata"]["namespace"] for o in objects if o["kind"] == "NetworkPolicy")
    for cidr in POD_CIDRS:
        yield Network(objects, pods=outsiders(ns), pod_cidr=cidr)


def gpu_pods(net: Network) -> list[Pod]:
    """Every pod of the run but the sandbox's (the GPU gang, the submitter, the pre-pull DaemonSet)."""
    return [p for p in net.pods if p.labels.get(FLEET) not in (None, "sandbox")]


def ray_pods(net: Network) -> list[Pod]:
    return [p for p in net.pods if p.labels.get(FLEET) in ("head", "trainer", "inference")]


@pytest.mark.parametrize(("example", "mode"), CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_refused_paths(rendered: Any, example: str, mode: str) -> None:
    for net in networks(rendered[example, mode]):
        sandbox = net.find(**{FLEET: "sandbox"})
        gpus = gpu_pods(net)
        assert bool(ray_pods(net)) == (mode != "attach")
        for gpu in gpus:
            assert net.refused(sandbox, gpu)  # no port at all: 6379, 8265, 10001, 52365, any worker port
        for ip in METADATA + PRIVATE + RESERVED:
            assert net.refused(sandbox, Address(ip))
        assert net.refused(sandbox, sandbox.replica("10.250.0.9"))  # another executor
        assert net.refused(sandbox, Address("8.8.8.8"), 53, "UDP")  # DNS only to the cluster's resolvers
        assert net.refused(sandbox, net.find(namespace="kube-system", **{"k8s-app": "kube-dns"}), 9153)
        for who in ("stranger", "elsewhere", "operator-helm"):
            intruder = next(p for p in net.pods if p.name == who)
            assert net.refused(intruder, sandbox)  # other pods and namespaces never send tasks
        if mode != "attach":
            head = next(p for p in ray_pods(net) if p.labels[FLEET] in ("head", "trainer"))
            for who in ("stranger", "elsewhere"):
                assert net.refused(next(p for p in net.pods if p.name == who), head)


@pytest.mark.parametrize(("example", "mode"), CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_allowed_paths(rendered: Any, example: str, mode: str) -> None:
    for net in networks(rendered[example, mode]):
        sandbox = net.find(**{FLEET: "sandbox"})
        port = 9090
        dns = net.find(namespace="kube-system", **{"k8s-app": "kube-dns"})
        assert net.allowed(sandbox, dns, 53, "UDP") and net.allowed(sandbox, dns, 53, "TCP")
        for ip in PUBLIC:
            assert net.allowed(sandbox, Address(ip), 443)
        if mode == "attach":
            assert net.allowed(next(p for p in net.pods if p.name == "attached-head"), sandbox, port)
            continue
        ray = ray_pods(net)
        for gpu in ray:
            assert net.allowed(gpu, sandbox, port)  # GPU pods -> executor port
            for other in ray:
                for p in RAY_PORTS:
                    assert net.allowed(gpu, other, p)  # pods of the run -> each other
        head = next(p for p in ray if p.labels[FLEET] in ("head", "trainer"))
        for who in ("operator-helm", "operator-kustomize"):
            assert net.allowed(next(p for p in net.pods if p.name == who), head, 8265)
            assert net.refused(next(p for p in net.pods if p.name == who), head, 6379)
        submitters = net.where(**{FLEET: "submitter"})
        assert bool(submitters) == (mode == "rayjob")
        for sub in submitters:
            assert net.allowed(sub, head, 8265)


@pytest.mark.parametrize("mode", ["rayjob", "statefulset", "job"])
def test_each_side_refuses_on_its_own(mode: str) -> None:
    """ipBlock matching pod IPs is CNI-specific: the GPU side's ingress and the sandbox's egress
    must each refuse the sandbox without the other."""
    objects = bundle_objects("k3s_single_gpu", mode)  # default-deny too: the allow policy must refuse as well
    sandbox_policy = [o for o in objects if o["kind"] != "NetworkPolicy" or o["metadata"]["name"].endswith("-sandbox")]
    gpu_side = [o for o in objects if o["kind"] != "NetworkPolicy" or not o["metadata"]["name"].endswith("-sandbox")]
    for objs in (sandbox_policy, gpu_side):
        for net in networks(objs):
            sandbox = net.find(**{FLEET: "sandbox"})
            for gpu in gpu_pods(net):
                assert net.refused(sandbox, gpu)


def test_the_old_defaults_are_what_this_catches() -> None:
    """The rendering before the fix (namespace-wide executor ingress, 0.0.0.0/0 egress, no GPU
    policy): the evaluator finds every path of the issue open, so the tests above can fail."""
    objects = bundle_objects("grpo_swe", "rayjob")
    for o in objects:
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "grpo-swe-sandbox":
            o["spec"]["ingress"] = [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]}]
            o["spec"]["egress"][1] = {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}}]}
    old = [o for o in objects if not (o["kind"] == "NetworkPolicy" and o["metadata"]["name"].endswith("gpu-ingress"))]
    net = next(networks(old))
    sandbox = net.find(**{FLEET: "sandbox"})
    head = net.find(**{FLEET: "head"})
    assert not net.refused(sandbox, head, 8265)
    assert not net.refused(sandbox, sandbox.replica("10.250.0.9"), 9090)
    assert not net.refused(sandbox, Address("10.0.0.1"), 5432)
    assert not net.refused(sandbox, Address("8.8.8.8"), 53, "UDP")


def test_possibly_internal_ranges_open_only_when_opted_in() -> None:
    """IPv6 global unicast and the other ranges once counted as public: an allowed range inside
    one needs `private: true`, like private space (issue 22 item 25)."""
    sets = ["sandbox.networkPolicy.allowedEgressCidrs=[{cidr: '2000::/3', private: true}, "
            "{cidr: '198.18.0.0/15', private: true, ports: [443]}]"]
    net = next(networks(bundle_objects("grpo_swe", "rayjob", sets)))
    sandbox = net.find(**{FLEET: "sandbox"})
    assert net.allowed(sandbox, Address("2606:4700::6810:84e5"), 443)
    assert net.allowed(sandbox, Address("198.18.0.1"), 443) and net.refused(sandbox, Address("198.18.0.1"), 22)
    for ip in ("64:ff9b::a00:1", "240.0.0.1", "fd12:3456::1", "10.0.0.1", "fd00:ec2::254"):
        assert net.refused(sandbox, Address(ip))


def test_extra_egress_never_names_a_pod_of_an_attached_ray_cluster() -> None:
    """An attached cluster's pods carry no fleet label, only KubeRay's
    ray.io/cluster: the narrowing of extraEgress must refuse them too, in every namespace."""
    sets = ["launch.mode=attach", "launch.attach.cluster=shared-ray",
            "sandbox.networkPolicy.extraEgress=[{to: [{podSelector: {}}, {namespaceSelector: {}}]}]"]
    for net in networks(bundle_objects("grpo_swe", "attach", sets)):
        sandbox = net.find(**{FLEET: "sandbox"})
        head = next(p for p in net.pods if p.name == "attached-head")
        for port in RAY_PORTS:
            assert net.refused(sandbox, head, port)
        elsewhere = Pod("other-ray", "ray-system", {"ray.io/cluster": "team", "ray.io/node-type": "worker"},
                        "10.99.0.50")
        assert net.refused(sandbox, elsewhere)


def test_an_ingress_to_the_head_service_kuberay_makes_is_a_path() -> None:
    """A hand-written Ingress to <cluster>-head-svc, the Service KubeRay makes,
    plus a rule admitting the ingress controller: the sandbox's public egress comes back in."""
    from dockyard_k8s.lint.isolation import exposures

    nginx = ("kuberay.networkPolicy.extraIngress=[{from: [{namespaceSelector: {matchLabels: "
             "{kubernetes.io/metadata.name: ingress-nginx}}}], ports: [{port: 8265}]}]")
    objects = bundle_objects("grpo_swe", "bringup", [nginx])
    ns = objects[0]["metadata"]["namespace"]
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "dash", "namespace": ns},
               "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                   "service": {"name": "grpo-swe-head-svc", "port": {"number": 8265}}}}]}}]}}
    assert not [e for e in exposures(objects) if "Ingress" in e.message]
    found = [e for e in exposures([*objects, ingress]) if "Ingress" in e.message]
    ((severity, first),) = [(e.severity, e.message.split(": ", 1)[0]) for e in found]  # wording: golden lint.txt
    assert severity == "error" and first.endswith("RayCluster rl-research/grpo-swe (head) from outside the cluster")
    assert f"Ingress {ns}/dash (backend Service grpo-swe-head-svc) on TCP 80, 443" in found[0].message
