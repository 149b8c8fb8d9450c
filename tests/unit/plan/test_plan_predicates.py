"""Filter predicates one at a time: tolerations, affinity operators, resources, reasons."""

from __future__ import annotations

from collections import Counter

import pytest

from dockyard_k8s.plan.inventory import Node
from dockyard_k8s.plan.predicates import (
    AFFINITY,
    UNSCHEDULABLE,
    Requirements,
    fit_error,
    resource_reasons,
    static_reason,
    tolerates,
)


def _node(**kw) -> Node:
    base = {"name": "n1", "pool": "p", "labels": {"zone": "a", "gen": "5"}, "taints": [], "unschedulable": False,
            "allocatable": {"cpu": 4000, "memory": 8 * 2**30, "pods": 2, "nvidia.com/gpu": 1}}
    return Node(**{**base, **kw})


def _req(spec=None, requests=None) -> Requirements:
    return Requirements.from_pod(spec or {}, {"app": "x"}, "team", requests or {})


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
    ({"key": "j", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
])
def test_tolerates(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_untolerated_taint_reason_names_key_and_value():
    node = _node(taints=[{"key": "soft", "effect": "PreferNoSchedule"},
                         {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    assert static_reason(_req(), node) == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    node = _node(taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    assert static_reason(_req(), node) == "node(s) had untolerated taint {dedicated: }"


def test_unschedulable_comes_first_unless_tolerated():
    node = _node(unschedulable=True, taints=[{"key": "t", "effect": "NoSchedule"}])
    assert static_reason(_req(), node) == UNSCHEDULABLE
    tol = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                           {"key": "t", "operator": "Exists"}]}
    assert static_reason(_req(tol), node) is None


@pytest.mark.parametrize(("expr", "ok"), [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
    ({"key": "missing", "operator": "NotIn", "values": ["a"]}, True),
    ({"key": "zone", "operator": "Exists"}, True),
    ({"key": "zone", "operator": "DoesNotExist"}, False),
    ({"key": "gen", "operator": "Gt", "values": ["4"]}, True),
    ({"key": "gen", "operator": "Lt", "values": ["4"]}, False),
])
def test_required_node_affinity_operators(expr, ok):
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}}
    assert static_reason(_req(spec), _node()) == (None if ok else AFFINITY)


def test_node_selector_and_terms_are_anded_terms_ored():
    terms = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                                   {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    spec = {"nodeSelector": {"zone": "a"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": terms}}}
    assert static_reason(_req(spec), _node()) is None
    spec["nodeSelector"] = {"zone": "b"}
    assert static_reason(_req(spec), _node()) == AFFINITY


def test_resource_reasons_list_every_shortage():
    node = _node(requested={"cpu": 3500, "nvidia.com/gpu": 1})
    node.pods = [object(), object()]  # type: ignore[list-item]
    req = _req(requests={"cpu": 1000, "memory": 2**30, "nvidia.com/gpu": 1, "vpc.amazonaws.com/efa": 1})
    assert resource_reasons(req, node) == ["Too many pods", "Insufficient cpu", "Insufficient nvidia.com/gpu",
                                           "Insufficient vpc.amazonaws.com/efa"]


def test_fit_error_sorts_like_go():
    reasons = Counter({"Insufficient nvidia.com/gpu": 4, "node(s) had untolerated taint {nvidia.com/gpu: }": 2,
                       "Insufficient cpu": 12})
    assert fit_error(reasons, 18) == ("0/18 nodes are available: 12 Insufficient cpu, 2 node(s) had untolerated "
                                      "taint {nvidia.com/gpu: }, 4 Insufficient nvidia.com/gpu.")
    assert fit_error(Counter(), 0) == "no nodes available to schedule pods"
