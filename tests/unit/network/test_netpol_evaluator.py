"""The test-side NetworkPolicy evaluator (tests/support/netpol.py) on hand-written policies:
each rule of the networking.k8s.io/v1 semantics it claims, so the tests built on it mean
what they say."""

from __future__ import annotations

from typing import Any

import pytest

from support.netpol import ALL_PORTS, Address, Network, Pod, PolicyError, Port, pods_of

NS = "team"
WEB = Pod("web", NS, {"app": "web", "tier": "front"}, "10.0.0.10", (Port("http", 8080), Port("dns", 53, "UDP")))
DB = Pod("db", NS, {"app": "db"}, "10.0.0.20", (Port("pg", 5432),))
OTHER = Pod("other", "elsewhere", {"app": "web"}, "10.1.0.5")
MON = Pod("prom", "monitoring", {"app": "prometheus"}, "10.2.0.7")
INTERNET = Address("93.184.216.34")
IMDS = Address("169.254.169.254")


def policy(name: str, spec: dict[str, Any], ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def net(*policies: dict[str, Any], **kw: Any) -> Network:
    kw.setdefault("pods", [WEB, DB, OTHER, MON])
    kw.setdefault("namespaces", {"monitoring": {"purpose": "observability"}})
    return Network(list(policies), **kw)


def select(**labels: str) -> dict[str, Any]:
    return {"matchLabels": labels}


# --- isolation and policy types ---

def test_no_policy_admits_everything_in_both_directions() -> None:
    n = net()
    assert n.allowed(WEB, DB, 5432) and n.allowed(OTHER, WEB, 1) and n.allowed(WEB, IMDS, 80)
    assert n.open_ports(WEB, DB, "UDP", ipblock_matches_pods=False)[0] == ALL_PORTS


def test_a_selecting_policy_with_no_rules_denies_that_direction_only() -> None:
    n = net(policy("deny-in", {"podSelector": select(app="db"), "policyTypes": ["Ingress"]}))
    assert n.refused(WEB, DB)  # every port
    assert n.allowed(DB, WEB, 8080)  # egress of db is not isolated; web is not isolated at all
    assert n.allowed(WEB, OTHER, 80)


def test_policy_types_default_like_the_api_server() -> None:
    # No policyTypes + egress rules: Ingress and Egress. The (absent) ingress rules deny all ingress.
    with_egress = policy("p", {"podSelector": select(app="web"),
                               "egress": [{"to": [{"podSelector": select(app="db")}]}]})
    n = net(with_egress)
    assert n.refused(DB, WEB) and n.allowed(WEB, DB, 5432) and n.refused(WEB, INTERNET, 443)
    # No policyTypes and `egress: []`: Ingress only, egress stays open.
    n = net(policy("p", {"podSelector": select(app="web"), "egress": []}))
    assert n.refused(DB, WEB) and n.allowed(WEB, INTERNET, 443)


def test_policy_of_another_namespace_does_not_select() -> None:
    n = net(policy("deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, ns="elsewhere"))
    assert n.allowed(WEB, DB, 5432)
    assert n.refused(WEB, OTHER) and n.refused(OTHER, WEB)  # other's egress is isolated too


def test_policies_add_up() -> None:
    base = {"podSelector": select(app="db"), "policyTypes": ["Ingress"]}
    a = policy("a", {**base, "ingress": [{"from": [{"podSelector": select(app="web")}], "ports": [{"port": 5432}]}]})
    b = policy("b", {**base, "ingress": [{"from": [{"namespaceSelector": select(purpose="observability")}],
                                          "ports": [{"port": 9187}]}]})
    n = net(a, b)
    assert n.allowed(WEB, DB, 5432) and n.refused(WEB, DB, 9187)
    assert n.allowed(MON, DB, 9187) and n.refused(MON, DB, 5432)


def test_connection_needs_egress_of_the_source_and_ingress_of_the_destination() -> None:
    open_in = policy("in", {"podSelector": select(app="db"), "policyTypes": ["Ingress"], "ingress": [{}]})
    closed_out = policy("out", {"podSelector": select(app="web"), "policyTypes": ["Egress"]})
    n = net(open_in, closed_out)
    v = n.refused(WEB, DB, 5432)
    assert v and "egress isolated by NetworkPolicy team/out" in v.why
    assert n.allowed(MON, DB, 5432)
    closed_in = policy("in", {"podSelector": select(app="db"), "policyTypes": ["Ingress"]})
    open_out = policy("out", {"podSelector": select(app="web"), "policyTypes": ["Egress"], "egress": [{}]})
    assert net(closed_in, open_out).refused(WEB, DB, 5432)


# --- peers ---

def _ingress_from(*peers: dict[str, Any]) -> Network:
    return net(policy("p", {"podSelector": select(app="db"), "policyTypes": ["Ingress"],
                            "ingress": [{"from": list(peers)}]}))


def test_pod_selector_alone_means_pods_of_the_policy_namespace() -> None:
    n = _ingress_from({"podSelector": select(app="web")})
    assert n.allowed(WEB, DB, 5432)
    assert n.refused(OTHER, DB)  # same labels, other namespace


def test_namespace_selector_alone_means_every_pod_there() -> None:
    n = _ingress_from({"namespaceSelector": select(purpose="observability")})
    assert n.allowed(MON, DB, 1) and n.refused(WEB, DB) and n.refused(OTHER, DB)
    # every namespace carries kubernetes.io/metadata.name
    n = _ingress_from({"namespaceSelector": select(**{"kubernetes.io/metadata.name": "elsewhere"})})
    assert n.allowed(OTHER, DB, 1) and n.refused(MON, DB)


def test_both_selectors_in_one_peer_are_anded_and_empty_namespace_selector_is_every_namespace() -> None:
    n = _ingress_from({"namespaceSelector": {}, "podSelector": select(app="web")})
    assert n.allowed(WEB, DB, 1) and n.allowed(OTHER, DB, 1) and n.refused(MON, DB)
    # two peers are ORed
    n = _ingress_from({"podSelector": select(app="web")}, {"namespaceSelector": select(purpose="observability")})
    assert n.allowed(WEB, DB, 1) and n.allowed(MON, DB, 1) and n.refused(OTHER, DB)


def test_empty_or_absent_from_admits_every_source() -> None:
    for rule in ({}, {"from": []}, {"ports": [{"port": 5432}]}):
        n = net(policy("p", {"podSelector": select(app="db"), "policyTypes": ["Ingress"], "ingress": [rule]}))
        assert n.allowed(OTHER, DB, 5432) and n.allowed(Address("8.8.8.8"), DB, 5432)


def test_match_expressions() -> None:
    def admits(expr: dict[str, Any], pod: Pod) -> bool:
        n = _ingress_from({"namespaceSelector": {}, "podSelector": {"matchExpressions": [expr]}})
        return bool(n.allowed(pod, DB, 1))

    assert admits({"key": "app", "operator": "In", "values": ["web", "x"]}, WEB)
    assert not admits({"key": "app", "operator": "In", "values": ["x"]}, WEB)
    assert admits({"key": "tier", "operator": "NotIn", "values": ["back"]}, WEB)
    assert admits({"key": "tier", "operator": "NotIn", "values": ["front"]}, MON)  # absent key: not in
    assert not admits({"key": "tier", "operator": "NotIn", "values": ["front"]}, WEB)
    assert admits({"key": "tier", "operator": "Exists"}, WEB) and not admits({"key": "tier", "operator": "Exists"}, MON)
    assert admits({"key": "tier", "operator": "DoesNotExist"}, MON)


def test_ip_block_with_except_against_addresses() -> None:
    n = net(policy("p", {"podSelector": select(app="web"), "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "169.254.0.0/16"]}}]}]}))
    assert n.allowed(WEB, INTERNET, 443)
    assert n.refused(WEB, IMDS) and n.refused(WEB, Address("10.9.9.9"))
    assert n.refused(WEB, Address("2001:db8::1"))  # an IPv4 block never matches IPv6
    # selectors never match an address outside every pod
    n = net(policy("p", {"podSelector": select(app="web"), "policyTypes": ["Egress"],
                         "egress": [{"to": [{"namespaceSelector": {}}]}]}))
    assert n.refused(WEB, INTERNET) and n.allowed(WEB, OTHER, 1)


def test_ip_block_against_pod_ips_is_cni_specific_so_both_claims_take_the_worst_case() -> None:
    n = net(policy("p", {"podSelector": select(app="web"), "policyTypes": ["Egress"],
                         "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16"}}]}]}))
    assert n.check(WEB, DB, 5432, ipblock_matches_pods=True)
    assert not n.check(WEB, DB, 5432, ipblock_matches_pods=False)
    assert not n.refused(WEB, DB, 5432)  # some CNI lets it through
    assert not n.allowed(WEB, DB, 5432)  # some CNI refuses it
    # on the ingress side too: an ipBlock source range admits pods whose IPs are in it (Calico)
    n = _ingress_from({"ipBlock": {"cidr": "10.0.0.0/24"}})
    assert not n.refused(WEB, DB) and n.refused(OTHER, DB)
    assert n.allowed(Address("10.0.0.99"), DB, 5432)


# --- ports ---

def _egress_ports(*ports: dict[str, Any]) -> Network:
    return net(policy("p", {"podSelector": select(app="db"), "policyTypes": ["Egress"],
                            "egress": [{"ports": list(ports)}]}))


def test_ports_numbers_ranges_and_protocols() -> None:
    n = _egress_ports({"port": 443}, {"protocol": "TCP", "port": 8000, "endPort": 8100},
                      {"protocol": "UDP", "port": 53})
    assert n.allowed(DB, INTERNET, 443) and n.refused(DB, INTERNET, 444)
    assert n.allowed(DB, INTERNET, 8000) and n.allowed(DB, INTERNET, 8100) and n.refused(DB, INTERNET, 8101)
    assert n.allowed(DB, INTERNET, 53, "UDP") and n.refused(DB, INTERNET, 53, "TCP")
    assert n.refused(DB, INTERNET, 443, "UDP")
    assert n.open_ports(DB, INTERNET, ipblock_matches_pods=False)[0] == ((443, 443), (8000, 8100))
    # an entry without `port` is every port of its protocol
    n = _egress_ports({"protocol": "UDP"})
    assert n.allowed(DB, INTERNET, 12345, "UDP") and n.refused(DB, INTERNET, 12345, "TCP")
    assert n.refused(DB, INTERNET, 1, "SCTP")


def test_named_ports_resolve_against_the_destination_pod() -> None:
    n = _egress_ports({"port": "http"})
    assert n.allowed(DB, WEB, 8080) and n.refused(DB, WEB, 80)
    assert n.refused(DB, INTERNET)  # an address has no named ports
    assert n.refused(DB, OTHER)  # OTHER names no port "http"
    n = _egress_ports({"port": "dns"})  # named UDP port, entry says TCP (the default)
    assert n.refused(DB, WEB, 53, "TCP") and n.refused(DB, WEB, 53, "UDP")
    n = _egress_ports({"port": "dns", "protocol": "UDP"})
    assert n.allowed(DB, WEB, 53, "UDP")
    # ingress: the destination is the selected pod itself
    n = net(policy("p", {"podSelector": select(app="web"), "policyTypes": ["Ingress"],
                         "ingress": [{"ports": [{"port": "http"}]}]}))
    assert n.allowed(DB, WEB, 8080) and n.refused(DB, WEB, 8081)


def test_a_replica_shares_labels_and_ports() -> None:
    n = net(policy("p", {"podSelector": select(app="web"), "policyTypes": ["Ingress"],
                         "ingress": [{"from": [{"podSelector": select(app="db")}]}]}))
    twin = WEB.replica("10.0.0.11")
    assert twin.labels == WEB.labels and twin.ip != WEB.ip and n.refused(WEB, twin)


# --- malformed policies fail loudly ---

@pytest.mark.parametrize("spec", [
    {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]},
    {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/8"]}}]}]},
    {"podSelector": {}, "egress": [{"ports": [{"port": "http", "endPort": 90}]}]},
    {"podSelector": {}, "egress": [{"ports": [{"port": 90, "endPort": 80}]}]},
    {"podSelector": {}, "egress": [{"ports": [{"port": 80, "protocol": "ICMP"}]}]},
    {"podSelector": {}, "egress": [{"too": []}]},
    {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}},
    {"policyTypes": ["Ingress"]},
    {"podSelector": {}, "policyTypes": ["Sideways"]},
])
def test_malformed_policies_raise(spec: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        n = net(policy("bad", spec))
        n.check(WEB, DB, 80, ipblock_matches_pods=True)
        n.check(DB, WEB, 80, ipblock_matches_pods=True)


# --- pods from rendered objects ---

def test_pods_of_reads_every_template_with_ips_from_the_pod_cidr() -> None:
    template = {"metadata": {"labels": {"f": "x"}}, "spec": {"containers": [
        {"name": "c", "ports": [{"name": "dashboard", "containerPort": 8265}]}]}}
    objects = [
        {"kind": "RayJob", "metadata": {"name": "j", "namespace": NS}, "spec": {
            "rayClusterSpec": {"headGroupSpec": {"template": template},
                               "workerGroupSpecs": [{"groupName": "trainer", "template": template}]},
            "submitterPodTemplate": template}},
        {"kind": "Deployment", "metadata": {"name": "d", "namespace": NS}, "spec": {"template": template}},
        {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": NS}},
    ]
    pods = pods_of(objects, "192.168.0.0/16")
    assert [p.name for p in pods] == ["RayJob/j/head", "RayJob/j/trainer", "RayJob/j/submitter", "Deployment/d"]
    assert [p.ip for p in pods] == ["192.168.0.2", "192.168.0.3", "192.168.0.4", "192.168.0.5"]
    assert pods[0].ports == (Port("dashboard", 8265),)
    n = Network(objects)
    with pytest.raises(LookupError, match="4 pods"):
        n.find(f="x")
    assert len(n.where(f="x")) == 4
    with pytest.raises(LookupError, match="0 pods"):
        n.find(f="x", namespace="nowhere")
