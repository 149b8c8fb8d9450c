"""Doctor's checks are pure functions of what was read from the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from dockyard_k8s.live.doctor import (
    Facts,
    check_access,
    check_capacity,
    check_cni,
    check_crds,
    check_named,
    check_operator,
    check_version,
    evaluate,
    exit_ok,
    needed_access,
)


def gpu_pod(gpus: int, replicas: int, fleet: str = "trainer") -> dict[str, Any]:
    return {"kind": "Deployment", "spec": {"replicas": replicas, "template": {
        "metadata": {"labels": {"dockyard-k8s/fleet": fleet}},
        "spec": {"containers": [{"resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                                               "limits": {"nvidia.com/gpu": str(gpus), "memory": "16Gi"}}}]}}}}


def node(gpus: int, ready: bool = True, unschedulable: bool = False) -> dict[str, Any]:
    return {"spec": {"unschedulable": unschedulable}, "status": {
        "allocatable": {"nvidia.com/gpu": str(gpus)}, "conditions": [{"type": "Ready", "status": str(ready)}]}}


@pytest.mark.parametrize(("minor", "ok"), [("28", False), ("29", True), ("31+", True)])
def test_version(minor: str, ok: bool) -> None:
    assert check_version({"major": "1", "minor": minor, "gitVersion": f"v1.{minor}"}).ok is ok
    assert check_version(None).ok is False


def test_crds_and_operator() -> None:
    good = {"spec": {"versions": [{"name": "v1", "served": True}, {"name": "v1alpha1", "served": False}]}}
    old = {"spec": {"versions": [{"name": "v1alpha1", "served": True}]}}
    assert check_crds({"rayjobs.ray.io": good, "rayclusters.ray.io": good}, True).ok
    assert not check_crds({"rayjobs.ray.io": good, "rayclusters.ray.io": old}, True).ok
    assert not check_crds({"rayjobs.ray.io": None, "rayclusters.ray.io": good}, True).ok
    assert check_crds(None, True).ok is None and check_crds({}, False).ok is None
    assert check_operator([{"metadata": {}, "status": {"readyReplicas": 1}}], True).ok
    assert not check_operator([{"metadata": {}, "status": {}}], True).ok
    assert not check_operator([], True).ok


@pytest.mark.parametrize(("nodes", "ok", "words"), [
    ([node(8), node(8)], True, "16 allocatable"),
    ([node(8)], False, "fewer GPUs"),
    ([node(4), node(4), node(4), node(4)], False, "no node has more than 4"),
    ([node(0)], False, "device plugin"),
    ([node(8), node(8, ready=False), node(8, unschedulable=True)], False, "fewer GPUs"),
])
def test_gpu_capacity(nodes: list[dict[str, Any]], ok: bool, words: str) -> None:
    gpu, _quota = check_capacity([gpu_pod(8, 2)], nodes, [])
    assert gpu.ok is ok
    assert words in gpu.detail + gpu.hint


def test_quota_headroom() -> None:
    quota = {"metadata": {"name": "q"}, "status": {
        "hard": {"requests.nvidia.com/gpu": "16", "requests.memory": "100Gi", "pods": "10", "count/jobs": "1"},
        "used": {"requests.nvidia.com/gpu": "4", "requests.memory": "90Gi", "pods": "1"}}}
    _, q = check_capacity([gpu_pod(8, 2)], [node(8)] * 2, [quota])
    assert q.ok is False
    assert "requests.nvidia.com/gpu needs 16, 12 left" in q.detail  # limits count as requests for GPUs
    assert "requests.memory needs 32Gi, 10Gi left" in q.detail
    assert "pods" not in q.detail
    _, roomy = check_capacity([gpu_pod(1, 1)], [node(8)], [{"metadata": {"name": "q"}, "status": {
        "hard": {"requests.nvidia.com/gpu": "16"}, "used": {}}}])
    assert roomy.ok


def test_named_objects_and_rendered_ones() -> None:
    assert check_named("PriorityClass", ["p"], {"p": True}, [], "h").ok
    assert not check_named("PriorityClass", ["p"], {"p": False}, [], "h").ok
    assert check_named("PriorityClass", ["p"], {"p": False}, ["p"], "h").ok  # the run creates it
    assert check_named("PriorityClass", [], None, [], "h").ok
    assert check_named("PriorityClass", ["p"], None, [], "h").ok is None


def test_access_essential_vs_optional() -> None:
    needed = needed_access([{"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "x"}}])
    assert ("patch", "ray.io", "rayjobs", "", True, "run, status, down") in needed
    assert ("watch", "ray.io", "rayclusters", "", True, "run, status") in needed  # the RayJob's cluster
    assert ("delete", "apps", "statefulsets", "", False, "down") in needed  # another shape's kind: tolerated
    assert ("create", "", "pods", "exec", False, "dashboard, job, dev") in needed
    checks = check_access({("create", "pods", "exec"): False}, needed)
    assert [c.ok for c in checks] == [True, False] and not checks[1].fatal
    checks = check_access({("delete", "rayjobs.ray.io", ""): False}, needed)
    assert checks[0].ok is False and "delete rayjobs.ray.io" in checks[0].detail


def test_cni() -> None:
    assert check_cni([{"metadata": {"name": "cilium"}}], True).ok
    unknown = check_cni([{"metadata": {"name": "kindnet"}}], True)
    assert unknown.ok is None and "inert" in unknown.hint and not unknown.fatal
    assert check_cni(None, False).ok is None


def test_unreachable_cluster_stops_at_the_first_check() -> None:
    facts = Facts(None, None, None, None, None, None, None, None, None, None, None)
    checks = evaluate(facts, [], "ns", ray_needed=True)
    assert [c.name for c in checks] == ["API server"] and not exit_ok(checks)


def test_warnings_do_not_fail_doctor() -> None:
    facts = Facts({"major": "1", "minor": "30"}, {"metadata": {}}, None, None, None, None, None, None, None, None,
                  None)
    checks = evaluate(facts, [gpu_pod(1, 1)], "ns", ray_needed=True)
    assert exit_ok(checks)
    assert {c.mark for c in checks} == {"✔", "!"}
