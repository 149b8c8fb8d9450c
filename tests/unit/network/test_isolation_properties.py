"""Hypothesis: no generated infra setting reopens a refused path without the explicit opt-in.

Settings are drawn over every network and isolation key (allowed/blocked CIDRs with ports and
`private`, extra sources, the operator's selectors, extra GPU ingress and egress rules,
default-deny, the launch mode, a kuberay.spec worker group that tries the sandbox's label)
on top of an example. A setting the loader refuses is fine (that is a refusal too); one it
accepts is rendered and judged by the test-side evaluator, worst case for ipBlock:

* with the sandbox's policy on: metadata never, private space only inside a range opted in
  with `private: true`, never another executor;
* with a GPU-side policy on (kuberay.networkPolicy, or default-deny): never a GPU pod.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.render import render_run
from support.netpol import Address, Network
from support.paths import REPO

FLEET = "dockyard-k8s/fleet"
POD_CIDRS = ("10.244.0.0/16", "10.42.0.0/16", "192.168.0.0/16", "100.64.0.0/16", "172.20.0.0/16")
PRIVATE = ["10.0.0.0/8", "10.20.0.0/16", "10.244.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "192.168.1.0/24",
           "100.64.0.0/10", "fc00::/7", "fd00::/8", "fe80::/10"]
METADATA = ["169.254.0.0/16", "169.254.169.254/32", "100.100.100.200/32", "168.63.129.16/32", "fd00:ec2::254/128"]
PUBLIC = ["140.82.112.0/20", "8.8.8.0/24", "0.0.0.0/0", "::/0", "2606:4700::/32", "0.0.0.0/1", "128.0.0.0/1",
          "100.0.0.0/8", "168.0.0.0/8", "169.0.0.0/8", "0.0.0.0/4"]
METADATA_IPS = ("169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16", "fd00:ec2::254",
                "fd00:ec2::23")
PRIVATE_IPS = ("10.0.0.1", "10.20.1.1", "172.16.0.1", "172.31.0.9", "192.168.1.5", "192.168.200.1", "100.64.0.1",
               "100.127.0.1", "fc00::1", "fd12::1", "fe80::1")

cidrs = st.sampled_from(PRIVATE + METADATA + PUBLIC)
port_entries = st.one_of(
    st.fixed_dictionaries({"port": st.integers(1, 65535)}),
    st.integers(1, 1000).flatmap(lambda p: st.fixed_dictionaries({"port": st.just(p),
                                                                  "endPort": st.integers(p, 65535)})),
    st.fixed_dictionaries({"port": st.sampled_from([53, 8265, 6379]), "protocol": st.sampled_from(["UDP", "TCP"])}),
)
allowed_entries = st.one_of(cidrs, st.fixed_dictionaries({"cidr": cidrs}, optional={
    "private": st.booleans(),
    "ports": st.lists(st.one_of(st.integers(1, 65535), port_entries), max_size=3)}))
label_maps = st.dictionaries(st.sampled_from(["app", FLEET, "dockyard-k8s/run", "team", "k8s-app"]),
                             st.sampled_from(["sandbox", "head", "x", "grpo-swe", "kube-dns"]), max_size=2)
selectors = st.one_of(st.just({}), st.fixed_dictionaries({"matchLabels": label_maps}),
                      st.fixed_dictionaries({"matchExpressions": st.lists(st.fixed_dictionaries({
                          "key": st.sampled_from([FLEET, "app"]), "operator": st.sampled_from(["In", "NotIn"]),
                          "values": st.lists(st.sampled_from(["sandbox", "head", "x"]), min_size=1, max_size=2)}),
                          min_size=1, max_size=2)}))
peers = st.one_of(
    st.fixed_dictionaries({"podSelector": selectors}),
    st.fixed_dictionaries({"namespaceSelector": selectors}),
    st.fixed_dictionaries({"podSelector": selectors, "namespaceSelector": selectors}),
    st.fixed_dictionaries({"ipBlock": st.fixed_dictionaries({"cidr": cidrs})}),
)
ingress_rules = st.fixed_dictionaries({}, optional={"from": st.lists(peers, max_size=3),
                                                    "ports": st.lists(port_entries, max_size=2)})
egress_rules = st.fixed_dictionaries({}, optional={"to": st.lists(peers, max_size=3),
                                                   "ports": st.lists(port_entries, max_size=2)})
infra_settings = st.fixed_dictionaries({
    "launch": st.fixed_dictionaries({"mode": st.sampled_from(["rayjob", "bringup", "job", "statefulset", "attach"])}),
    "sandbox": st.fixed_dictionaries({"networkPolicy": st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(), "allowEgress": st.booleans(),
        "allowedEgressCidrs": st.lists(allowed_entries, max_size=4),
        "blockedEgressCidrs": st.lists(cidrs, max_size=2),
        "ingressFrom": st.lists(peers, max_size=2),
        "extraEgress": st.lists(egress_rules, max_size=2)})}),
    "kuberay": st.fixed_dictionaries({
        "extraGroups": st.just(["rollout"]),  # the group below is meant, not a typo
        "networkPolicy": st.fixed_dictionaries({
            "operator": st.fixed_dictionaries({"podSelector": st.one_of(st.none(), selectors)},
                                              optional={"namespaceSelector": selectors}),
            "extraIngress": st.lists(ingress_rules, max_size=2)}, optional={"enabled": st.booleans()})}, optional={
        "spec": st.sampled_from([{}, {"workerGroupSpecs": [
            {"groupName": "rollout", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "rayStartParams": {},
             "template": {"metadata": {"labels": {FLEET: "sandbox"}},
                          "spec": {"containers": [{"name": "ray-worker", "image": "x:1"}]}}}]}])}),
    "infra": st.fixed_dictionaries({}, optional={"networkPolicy": st.fixed_dictionaries({}, optional={
        "defaultDeny": st.booleans(), "scope": st.sampled_from(["run", "namespace"]),
        "extraEgress": st.lists(egress_rules, max_size=2)})}),
})


def _covered(ip: str, opted: list[str]) -> bool:
    addr = ipaddress.ip_address(ip)
    return any(addr.version == (n := ipaddress.ip_network(c)).version and addr in n for c in opted)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(extra={"launch": {"mode": "rayjob"}, "sandbox": {"networkPolicy": {
    "ingressFrom": [{"podSelector": {}}], "extraEgress": [{"to": [{"podSelector": {}}, {"namespaceSelector": {}}]}]}},
               "kuberay": {"networkPolicy": {"operator": {"podSelector": {}},
                                             "extraIngress": [{"from": [{"namespaceSelector": {}}]}]}}},
         example="grpo_swe", pod_cidr=POD_CIDRS[0])
@given(extra=infra_settings, example=st.sampled_from(["grpo_swe", "k3s_single_gpu"]),
       pod_cidr=st.sampled_from(POD_CIDRS))
def test_no_setting_reopens_a_refused_path_without_the_opt_in(tmp_path: Path, extra: dict[str, Any], example: str,
                                                               pod_cidr: str) -> None:
    if extra["launch"]["mode"] == "attach":
        extra["launch"]["attach"] = {"cluster": "shared-ray"}
    infra = tmp_path / "gen.infra.yaml"
    infra.write_text(yaml.safe_dump({"defaults": str(REPO / "examples" / f"{example}.infra.yaml"), **extra}))
    recipe = REPO / "examples" / ("grpo_swe.yaml" if example == "grpo_swe" else "grpo_tiny.yaml")
    try:
        run = load_run(str(recipe), str(infra), Layers(env={"HOME": "/nonexistent"}))
    except ConfigError:
        return  # refused at the line written: nothing reopened
    objects = render_run(run)
    np, kr = run.infra["sandbox"]["networkPolicy"], run.infra["kuberay"]
    net = Network(objects, pod_cidr=pod_cidr)
    sandbox = net.find(**{FLEET: "sandbox"})
    gpus = [p for p in net.pods if p.labels.get(FLEET) not in (None, "sandbox")]
    opted = [e["cidr"] for e in np["allowedEgressCidrs"] if isinstance(e, dict) and e.get("private")]
    if np["enabled"]:
        for ip in METADATA_IPS:
            assert net.refused(sandbox, Address(ip)), extra
        for ip in PRIVATE_IPS:
            if not _covered(ip, opted):
                assert net.refused(sandbox, Address(ip)), extra
        assert net.refused(sandbox, sandbox.replica(str(ipaddress.ip_network(pod_cidr)[200]))), extra
    # Each side on its own (ipBlock matching pod IPs is CNI-specific, so neither may rely on the other).
    gpu_side = kr["networkPolicy"]["enabled"] or run.infra["infra"]["networkPolicy"]["defaultDeny"]
    sandbox_side = np["enabled"] and not any(_covered(p.ip, opted) for p in gpus)
    policy = "NetworkPolicy"
    alone = {
        "gpu": [o for o in objects if o["kind"] != policy or not o["metadata"]["name"].endswith("-sandbox")],
        "sandbox": [o for o in objects if o["kind"] != policy or o["metadata"]["name"].endswith("-sandbox")],
    }
    for side, on in (("gpu", gpu_side), ("sandbox", sandbox_side)):
        if on:
            side_net = Network(alone[side], pod_cidr=pod_cidr)
            for gpu in gpus:
                assert side_net.refused(sandbox, gpu), (side, extra)
