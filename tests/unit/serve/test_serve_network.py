"""The endpoint's NetworkPolicies allow exactly what the spec says, asked of the shared
evaluator (tests/support/netpol.py) on every CNI interpretation of ipBlock: the seed's
default-deny with explicit allows, 443 to public addresses only, and no sandbox pool of any
run reaching the endpoint unless a run says so."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from serve_support import bundle

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.serve_bundle import build_serve_bundle
from support.netpol import Address, Network, Pod, Port
from support.paths import REPO

FLEET = "dockyard-k8s/fleet"
ENDPOINT = {"dockyard-k8s/endpoint": "llama-8b"}
PUBLIC = Address("18.244.0.10")  # a CDN address in front of the model hub
PUBLIC_V6 = Address("2600:9000:2000::1")
METADATA = [Address("169.254.169.254"), Address("100.100.100.200"), Address("fd00:ec2::254")]
PRIVATE = [Address("10.0.0.1"), Address("172.16.5.5"), Address("192.168.1.1"), Address("100.64.0.9"),
           Address("fd12::1")]
KUBE_DNS = Pod("coredns", "kube-system", {"k8s-app": "kube-dns"}, "10.96.0.10", (Port("dns", 53, "UDP"),))
GATEWAY = Pod("envoy", "envoy-gateway-system", {"app.kubernetes.io/name": "envoy"}, "10.250.0.2")
PROMETHEUS = Pod("prometheus", "monitoring", {"app.kubernetes.io/name": "prometheus"}, "10.250.0.3")
OTEL = Pod("otel", "monitoring", {"app.kubernetes.io/name": "opentelemetry-collector"}, "10.250.0.4")
EVAL = Pod("eval", "argo", {"workflows.argoproj.io/workflow": "eval-1"}, "10.250.0.5")
VAULT = Pod("vault", "vault", {"app.kubernetes.io/name": "vault"}, "10.250.0.6")
VAULT_OTHER = Pod("vault-agent", "vault", {"app.kubernetes.io/name": "vault-agent"}, "10.250.0.7")
STRANGER = Pod("stranger", "default", {"app": "web"}, "10.250.0.8")
SANDBOX_IN_ARGO = Pod("executor", "argo", {FLEET: "sandbox", "dockyard-k8s/run": "x"}, "10.250.0.9")
EXTRAS = [KUBE_DNS, GATEWAY, PROMETHEUS, OTEL, EVAL, VAULT, VAULT_OTHER, STRANGER, SANDBOX_IN_ARGO]


def example(name: str) -> list[dict[str, Any]]:
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return build_serve_bundle(f"examples/{name}.serve.yaml", Layers(env={"HOME": "/nonexistent"})).objects
    finally:
        os.chdir(cwd)


def run_objects(namespace: str, *sets: str) -> list[dict[str, Any]]:
    """The grpo-swe run (sandbox pool included) in ``namespace``."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return build_bundle("examples/grpo_swe.yaml", "examples/grpo_swe.infra.yaml",
                            Layers(sets=[f"infra.namespace={namespace}", *sets], env={"HOME": "/nonexistent"})).objects
    finally:
        os.chdir(cwd)


def network(objects: list[dict[str, Any]], pod_cidr: str = "10.244.0.0/16") -> Network:
    return Network(objects, pods=EXTRAS, pod_cidr=pod_cidr)


# --- the single-GPU example: the seed's allows --------------------------------------------------


@pytest.fixture(scope="module")
def kind() -> Network:
    return network(example("llama3_8b_kind"))


def test_the_listed_namespaces_reach_the_serving_port_and_only_it(kind: Network) -> None:
    server = kind.find(**ENDPOINT)
    for caller in (GATEWAY, PROMETHEUS, EVAL):
        assert kind.allowed(caller, server, 8000), kind.explain(caller, server, 8000)
        assert kind.refused(caller, server, 22)
        assert kind.refused(caller, server, 8001)


def test_everyone_else_is_refused(kind: Network) -> None:
    server = kind.find(**ENDPOINT)
    assert kind.refused(STRANGER, server)
    assert kind.refused(VAULT, server)
    for outside in (PUBLIC, *PRIVATE):
        assert kind.refused(outside, server)


def test_a_sandbox_pool_in_a_listed_namespace_never_reaches_the_endpoint(kind: Network) -> None:
    assert kind.refused(SANDBOX_IN_ARGO, kind.find(**ENDPOINT))


def test_egress_to_dns_and_the_listed_internal_services_only(kind: Network) -> None:
    server = kind.find(**ENDPOINT)
    assert kind.allowed(server, KUBE_DNS, 53, "UDP") and kind.allowed(server, KUBE_DNS, 53, "TCP")
    assert kind.allowed(server, VAULT, 8200) and kind.refused(server, VAULT, 8201)
    assert kind.refused(server, VAULT_OTHER, 8200)
    assert kind.allowed(server, OTEL, 4317) and kind.allowed(server, OTEL, 4318)
    assert kind.refused(server, OTEL, 4319) and kind.refused(server, PROMETHEUS, 9090)
    assert kind.refused(server, STRANGER)


def test_https_to_public_addresses_only(kind: Network) -> None:
    server = kind.find(**ENDPOINT)
    assert kind.allowed(server, PUBLIC, 443) and kind.allowed(server, PUBLIC_V6, 443)
    assert kind.refused(server, PUBLIC, 80) and kind.refused(server, PUBLIC, 22)
    for private in (*PRIVATE, *METADATA):
        assert kind.refused(server, private), kind.explain(server, private, 443)


@pytest.mark.parametrize("pod_cidr", ["10.244.0.0/16", "10.42.0.0/16", "192.168.0.0/16", "100.64.0.0/16"])
def test_https_egress_never_reaches_pods_whatever_the_pod_network(pod_cidr: str) -> None:
    """On a CNI that matches ipBlock against pod IPs, 0.0.0.0/0:443 must still not open the
    run's pods (its Ray dashboard, the sandbox): the private-range exceptions cover every
    pod CIDR seen in the wild."""
    net = network([*example("llama3_8b_kind"), *run_objects("llama")], pod_cidr=pod_cidr)
    server = net.find(**ENDPOINT)
    for target in net.where(**{"dockyard-k8s/run": "grpo-swe"}):
        assert net.refused(server, target), net.explain(server, target, 443)


# --- a run's pods call the endpoint; its sandbox pool does not ------------------------------------


def test_the_runs_pods_reach_the_checkpoint_endpoint_but_not_its_sandbox_pool() -> None:
    net = network([*example("grpo_swe_checkpoint"), *run_objects("rl-research")])
    server = net.find(**{"dockyard-k8s/endpoint": "grpo-swe-eval"})
    run = {"dockyard-k8s/run": "grpo-swe"}
    for fleet in ("head", "trainer", "inference", "submitter"):
        pod = net.find(**run, **{FLEET: fleet})
        assert net.allowed(pod, server, 30000), net.explain(pod, server, 30000)
        assert net.refused(pod, server, 8000)
    sandbox = net.find(**run, **{FLEET: "sandbox"})
    assert net.refused(sandbox, server), net.explain(sandbox, server, 30000)
    assert net.refused(STRANGER, server) and net.refused(EVAL, server)
    # httpsEgress: false in that example: the hub is not reachable either
    assert net.refused(server, PUBLIC, 443)


def test_a_run_in_another_namespace_is_admitted_from_there_only(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"network": {"runs": [{"name": "grpo-swe", "namespace": "rl-research"}]}}).objects
    net = network([*objects, *run_objects("rl-research"), *run_objects("elsewhere")])
    server = net.find(**{"dockyard-k8s/endpoint": "llama"})
    assert net.allowed(net.find("rl-research", **{FLEET: "trainer"}), server, 8000)
    assert net.refused(net.find("elsewhere", **{FLEET: "trainer"}), server)
    assert net.refused(net.find("rl-research", **{FLEET: "sandbox"}), server)


def test_a_runs_sandbox_is_admitted_only_when_the_spec_says_so(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"network": {"runs": [{"name": "grpo-swe", "sandbox": True}]},
                                "apiKeySecret": {"name": "llama-keys"}}).objects  # a sandbox caller needs a key
    net = network([*objects, *run_objects("llama")])
    server = net.find(**{"dockyard-k8s/endpoint": "llama"})
    sandbox = net.find("llama", **{FLEET: "sandbox"})
    # The endpoint's side now admits it; the sandbox's own egress never reaches a pod by IP (private
    # space is excepted from its open egress), on any CNI ...
    assert net.refused(sandbox, server)
    # ... until the run names the endpoint in sandbox.networkPolicy.extraEgress (docs/serve.md)
    to_llama = ("sandbox.networkPolicy.extraEgress=[{to: [{podSelector: {matchLabels: "
                "{dockyard-k8s/endpoint: llama}}}], ports: [{port: 8000}]}]")
    net = network([*objects, *run_objects("llama", to_llama)])
    sandbox = net.find("llama", **{FLEET: "sandbox"})
    assert net.allowed(sandbox, server, 8000)
    # and it stays closed on every other port, and for other runs' sandboxes
    assert net.refused(sandbox, server, 8001) and net.refused(SANDBOX_IN_ARGO, server)


def test_default_deny_off_renders_no_policy(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"network": {"defaultDeny": False}}).objects
    assert not [o for o in objects if o["kind"] == "NetworkPolicy"]
    net = network(objects)
    assert net.allowed(STRANGER, net.find(**{"dockyard-k8s/endpoint": "llama"}), 8000)


def test_nothing_listed_means_port_forward_only(tmp_path: Path) -> None:
    net = network(bundle(tmp_path).objects)
    server = net.find(**{"dockyard-k8s/endpoint": "llama"})
    for caller in EXTRAS:
        assert net.refused(caller, server)
    assert net.allowed(server, PUBLIC, 443) and net.allowed(server, KUBE_DNS, 53, "UDP")


def test_pod_labels_narrow_a_namespace_and_extra_rules_add(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"network": {
        "ingress": [{"namespace": "argo", "podLabels": {"workflows.argoproj.io/workflow": "eval-1"}}],
        "extraEgress": [{"to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}], "ports": [{"port": 5432}]}]}}).objects
    net = network(objects)
    server = net.find(**{"dockyard-k8s/endpoint": "llama"})
    assert net.allowed(EVAL, server, 8000)
    assert net.refused(Pod("other-wf", "argo", {"workflows.argoproj.io/workflow": "load"}, "10.250.1.1"), server)
    assert net.allowed(server, Address("10.0.0.1"), 5432) and net.refused(server, Address("10.0.0.2"), 5432)


def test_default_deny_can_cover_the_whole_namespace(tmp_path: Path) -> None:
    """As runs' infra.networkPolicy.scope: namespace, every pod of the endpoint's
    namespace is denied, and only the server pods get the allows."""
    objects = bundle(tmp_path, {"network": {"scope": "namespace", "ingress": [{"namespace": "monitoring"}]}}).objects
    deny, allow = [o for o in objects if o["kind"] == "NetworkPolicy"]
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert allow["spec"]["podSelector"] == {"matchLabels": {"dockyard-k8s/endpoint": "llama",
                                                            "dockyard-k8s/fleet": "serve"}}
    neighbour = Pod("notebook", "llama", {"app": "notebook"}, "10.250.1.1")
    net = Network(objects, pods=[*EXTRAS, neighbour])
    server = net.find(**{FLEET: "serve"})
    assert net.refused(neighbour, PUBLIC, 443) and net.refused(STRANGER, neighbour)
    assert net.allowed(PROMETHEUS, server, 8000) and net.refused(neighbour, server)
    endpoint_only = bundle(tmp_path, {"network": {"ingress": [{"namespace": "monitoring"}]}}).objects
    assert Network(endpoint_only, pods=[*EXTRAS, neighbour]).allowed(neighbour, PUBLIC, 443)
