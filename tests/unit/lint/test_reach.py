"""The product's reachability (lint/reach.py, behind `sandbox-isolation` and `check`): its worst
cases, and that it never says "refused" where the independent test evaluator finds a path."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dockyard_k8s.lint import reach
from support.netpol import Address, Network, Pod, Port

NS = "team"


def policy(spec: dict[str, Any], name: str = "p", ns: str = NS) -> dict[str, Any]:
    return {"kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns}, "spec": spec}


SRC = reach.Target(NS, {"app": "src"})
DST = reach.Target(NS, {"app": "dst"}, (("http", 8080, "TCP"),))


def test_spans() -> None:
    assert reach.merge([(5, 9), (1, 3), (4, 4)]) == [(1, 9)]
    assert reach.overlap([(1, 10), (20, 30)], [(5, 25)]) == [(5, 10), (20, 25)]
    assert reach.minus([(1, 100)], [(10, 20), (50, 50)]) == [(1, 9), (21, 49), (51, 100)]
    assert reach.show_ports({"TCP": [(6379, 6379), (8000, 8100)]}) == "TCP 6379, 8000-8100"
    assert reach.show_ports({p: [(1, 65535)] for p in reach.PROTOCOLS}) == "every port"


def test_no_policy_means_everything() -> None:
    ports, egress, _ingress = reach.Policies([]).pod_to_pod(SRC, DST)
    assert ports == {p: [(1, 65535)] for p in reach.PROTOCOLS}
    assert egress.rules == ("no policy restricts its egress",)


def test_ipblock_is_assumed_to_match_pods_when_it_leaves_private_space_in() -> None:
    def ingress_from(block: dict[str, Any]) -> reach.Ports:
        pols = reach.Policies([policy({"podSelector": {"matchLabels": {"app": "dst"}}, "policyTypes": ["Ingress"],
                                       "ingress": [{"from": [{"ipBlock": block}]}]})])
        return pols.pod_to_pod(SRC, DST)[0]

    assert ingress_from({"cidr": "10.0.0.0/8"})  # pods live in private space: it may match SRC (Calico)
    assert ingress_from({"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]})  # 172.16/12 left in
    assert not ingress_from({"cidr": "203.0.113.0/24"})  # public: not a pod IP
    rfc1918_cgnat = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]
    assert ingress_from({"cidr": "0.0.0.0/0", "except": rfc1918_cgnat})  # 240/4 and 198.18/15 may hold pods too
    assert not ingress_from({"cidr": "0.0.0.0/0", "except": [*rfc1918_cgnat, "198.18.0.0/15", "240.0.0.0/4"]})
    assert ingress_from({"cidr": "2600::/12"})  # IPv6 clusters give pods global addresses


def test_namespace_selectors_only_trust_the_name_label() -> None:
    def admits(sel: dict[str, Any], src_ns: str) -> bool:
        pols = reach.Policies([policy({"podSelector": {}, "policyTypes": ["Ingress"],
                                       "ingress": [{"from": [{"namespaceSelector": sel}]}]})])
        return bool(pols.ingress_of(DST, reach.Target(src_ns, {})).ports)

    assert admits({"matchLabels": {"team": "eval"}}, "anything")  # unknown labels: assume they hold
    assert not admits({"matchLabels": {"kubernetes.io/metadata.name": "eval"}}, "other")
    assert admits({"matchLabels": {"kubernetes.io/metadata.name": "eval"}}, "eval")
    # a podSelector alone stays in the policy's namespace
    pols = reach.Policies([policy({"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
        {"podSelector": {}}]}]})])
    assert not pols.ingress_of(DST, reach.Target("other", {})).ports


def test_named_ports_and_ranges() -> None:
    pols = reach.Policies([policy({"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [
        {"ports": [{"port": "http"}, {"port": 9000, "endPort": 9010, "protocol": "UDP"}]}]})])
    assert pols.pod_to_pod(SRC, DST)[0] == {"TCP": [(8080, 8080)], "UDP": [(9000, 9010)]}


def test_egress_to_an_address_range_honours_excepts() -> None:
    pols = reach.Policies([policy({"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}}], "ports": [{"port": 443}]},
        {"to": [{"podSelector": {}}]}]})])
    assert pols.egress_to(SRC, "169.254.0.0/16") == []
    ((addrs, ports, rule),) = pols.egress_to(SRC, "10.0.0.0/8")
    assert reach.show_addresses(addrs) == "10.0.0.0-10.255.255.255" and ports == {"TCP": [(443, 443)]}
    assert rule == "NetworkPolicy team/p egress[0]"


# --- never less strict than the independent evaluator -----------------------------------------

labels = st.dictionaries(st.sampled_from(["app", "role"]), st.sampled_from(["a", "b"]), max_size=2)
selectors = st.one_of(st.just({}), st.fixed_dictionaries({"matchLabels": labels}))
peers = st.one_of(
    st.fixed_dictionaries({"podSelector": selectors}),
    st.fixed_dictionaries({"namespaceSelector": st.one_of(st.just({}), st.fixed_dictionaries(
        {"matchLabels": st.fixed_dictionaries({"kubernetes.io/metadata.name": st.sampled_from([NS, "other"])})}))},
        optional={"podSelector": selectors}),
    st.fixed_dictionaries({"ipBlock": st.sampled_from([
        {"cidr": "0.0.0.0/0"}, {"cidr": "10.0.0.0/8"}, {"cidr": "10.1.0.0/16"}, {"cidr": "203.0.113.0/24"},
        {"cidr": "0.0.0.0/0", "except": ["10.1.0.0/16"]}, {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}])}))
ports = st.lists(st.one_of(st.fixed_dictionaries({"port": st.sampled_from([80, 8080, "http"])}),
                           st.fixed_dictionaries({"port": st.just(8000), "endPort": st.just(8100)}),
                           st.fixed_dictionaries({"protocol": st.just("UDP")})), max_size=2)
rules = st.fixed_dictionaries({}, optional={"from": st.lists(peers, max_size=2), "ports": ports})
egress_rules = st.fixed_dictionaries({}, optional={"to": st.lists(peers, max_size=2), "ports": ports})
specs = st.fixed_dictionaries({"podSelector": selectors,
                               "policyTypes": st.sampled_from([["Ingress"], ["Egress"], ["Ingress", "Egress"]])},
                              optional={"ingress": st.lists(rules, max_size=2), "egress": st.lists(egress_rules,
                                                                                                   max_size=2)})


@settings(max_examples=300, deadline=None)
@given(specs=st.lists(specs, max_size=3), src_labels=labels, dst_labels=labels,
       src_ns=st.sampled_from([NS, "other"]), port=st.sampled_from([80, 8080, 8050, 53]),
       proto=st.sampled_from(["TCP", "UDP"]))
def test_product_never_refuses_what_the_evaluator_allows(specs: list[dict[str, Any]], src_labels: dict[str, str],
                                                        dst_labels: dict[str, str], src_ns: str, port: int,
                                                        proto: str) -> None:
    objects = [policy(s, name=f"p{i}") for i, s in enumerate(specs)]
    src = Pod("src", src_ns, src_labels, "10.1.0.5")
    dst = Pod("dst", NS, dst_labels, "10.2.0.6", (Port("http", 8080),))
    evaluator = Network(objects, pods=[src, dst])
    if evaluator.refused(src, dst, port, proto):
        return
    product, _, _ = reach.Policies(objects).pod_to_pod(
        reach.Target(src_ns, src_labels), reach.Target(NS, dst_labels, (("http", 8080, "TCP"),)))
    assert any(lo <= port <= hi for lo, hi in product.get(proto, [])), (specs, src_labels, dst_labels)
    # and towards an address outside every pod
    out = Address("203.0.113.9")
    if not evaluator.refused(src, out, port, proto):
        found = reach.Policies(objects).egress_to(reach.Target(src_ns, src_labels), "203.0.113.9/32")
        assert any(any(lo <= port <= hi for lo, hi in p.get(proto, [])) for _, p, _ in found), specs
