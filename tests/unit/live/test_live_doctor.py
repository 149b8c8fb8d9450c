"""Doctor's checks are pure functions of what was read from the cluster."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dockyard_k8s.live.checks import Check
from dockyard_k8s.live.doctor import (
    Facts,
    check_access,
    check_capacity,
    check_cni,
    check_crds,
    check_version,
    evaluate,
    exit_ok,
    needed_access,
    verdict,
)
from dockyard_k8s.live.netpol import enforcement, flag_value
from dockyard_k8s.live.operator import check_operator, watch_namespaces
from dockyard_k8s.live.references import check_references
from dockyard_k8s.render.rayauth import TokenSecret


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


def refs(*items: tuple[str, str, str, str]) -> list[tuple[str, str, str, str]]:
    return list(items)


def test_references_missing_present_and_created_by_the_run() -> None:
    wanted = refs(("PriorityClass", "", "p", "priorityClassName"),
                  ("Secret", "ns", "pull", "imagePullSecrets"),
                  ("Secret", "ns", "wandb", "key api-key (env WANDB_API_KEY)"),
                  ("Secret", "ns", "run-ray-auth", "key auth_token (env RAY_AUTH_TOKEN)"),
                  ("PersistentVolumeClaim", "ns", "data", "volume data"))
    found = {("PriorityClass", "", "p"): True, ("Secret", "ns", "pull"): True, ("Secret", "ns", "wandb"): False,
             ("PersistentVolumeClaim", "ns", "data"): False}
    own = TokenSecret("Secret ns/run-ray-auth", "the Ray token", "kubectl -n ns create secret generic run-ray-auth ...",
                      own=True)
    pc, secrets, pvc = check_references(wanted, found, own)
    assert (pc.name, pc.ok, pc.detail) == ("PriorityClass", True, "p")
    assert secrets.ok is False and secrets.fatal
    assert secrets.detail == "missing: wandb (key api-key (env WANDB_API_KEY))"  # the token Secret: run makes it
    assert secrets.hint == "kubectl -n ns create secret generic wandb --from-literal=api-key=... " \
                           "(or `dockyard-k8s dev secrets`)"
    assert (pvc.name, pvc.ok) == ("PVCs", False) and "data (volume data)" in pvc.detail
    named = dataclasses.replace(own, own=False)
    _, secrets, _ = check_references(wanted, {**found, ("Secret", "ns", "run-ray-auth"): False}, named)
    assert "run-ray-auth (key auth_token" in secrets.detail  # kuberay.auth.secretName: must exist
    assert "kubectl -n ns create secret generic run-ray-auth ..." in secrets.hint
    unknown = check_references(wanted[1:3], {("Secret", "ns", "pull"): None, ("Secret", "ns", "wandb"): None})
    assert [c.ok for c in unknown] == [None] and not unknown[0].fatal
    assert unknown[0].detail == "pull, wandb: cannot tell (no permission to read secrets)"  # not "Secrets"
    (cls,) = check_references([("StorageClass", "", "fsx", "storageClassName of claim c")],
                              {("StorageClass", "", "fsx"): None})
    assert cls.detail == "fsx: cannot tell (no permission to read storageclasses)"  # not "StorageClasss"


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


def ds(name: str, namespace: str = "kube-system", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"template": {"spec": spec}}}


def aws_node(*agent_args: str, agent: bool = True) -> dict[str, Any]:
    containers: list[dict[str, Any]] = [{"name": "aws-node", "image": "x/amazon-k8s-cni:v1.19.0"}]
    if agent:
        containers.append({"name": "aws-eks-nodeagent", "image": "x/amazon/aws-network-policy-agent:v1.2.0",
                           "args": list(agent_args)})
    return ds("aws-node", containers=containers)


def k3s_node(*args: str) -> dict[str, Any]:
    import json

    return {"metadata": {"annotations": {"k3s.io/node-args": json.dumps(["server", *args])}}}


@pytest.mark.parametrize(("daemonsets", "nodes", "enforced", "words"), [
    ([ds("cilium")], None, True, "kube-system/cilium"),
    ([ds("anetd")], None, True, "GKE Dataplane V2"),
    ([ds("calico-node", "calico-system")], None, True, "calico-system/calico-node"),  # the Tigera operator's
    ([ds("kube-network-policies"), ds("kindnet")], None, True, "kube-network-policies"),  # kind >= v0.24
    ([aws_node("--enable-network-policy=true")], None, True, "--enable-network-policy=true"),
    ([aws_node("--enable-network-policy", "true")], None, True, "aws-node"),
    ([aws_node("--enable-network-policy=false")], None, False, "without --enable-network-policy=true (the EKS"),
    ([aws_node()], None, False, "without --enable-network-policy=true"),  # the agent's default is off
    ([aws_node(agent=False)], None, False, "VPC CNI < v1.14"),
    ([aws_node("--enable-network-policy=false"), ds("calico-node", "calico-system")], None, True,
     "calico-system/calico-node (kube-system/aws-node: its network policy agent"),
    ([ds("kube-flannel-ds", "kube-flannel")], None, False, "flannel never enforces"),
    ([ds("canal")], None, True, "canal"),  # Calico's policy on flannel
    ([], [k3s_node("--write-kubeconfig-mode", "0644")], True, "k3s (its embedded kube-router"),
    ([], [k3s_node("--disable-network-policy")], False, "k3s: its servers run with --disable-network-policy"),
    ([ds("kindnet")], None, None, "no network plugin recognised"),
    (None, None, None, "cannot list DaemonSets"),
])
def test_network_plugins(daemonsets: list[dict[str, Any]] | None, nodes: list[dict[str, Any]] | None,
                         enforced: bool | None, words: str) -> None:
    found = enforcement(daemonsets, nodes)
    assert found.enforced is enforced
    assert words in found.detail
    if enforced is False:
        check = check_cni(found, True)
        assert check.mark == "✖" and not check.fatal and "inert" in check.detail and check.hint


def test_k3s_is_known_from_its_version_when_no_node_is_readable() -> None:
    found = enforcement([], None, {"gitVersion": "v1.31.4+k3s1"})
    assert found.enforced is True and "default assumed" in found.detail


def test_cni_check_needs_a_policy() -> None:
    assert check_cni(None, False).ok is None
    assert check_cni(enforcement([ds("kindnet")]), True).mark == "!"


@pytest.mark.parametrize(("args", "flag", "value"), [
    (["--a=1", "--watch-namespace=x,y"], "--watch-namespace", "x,y"),
    (["--watch-namespace", "x"], "--watch-namespace", "x"),
    (["-watch-namespace=x"], "--watch-namespace", "x"),  # Go's flag package takes one dash too
    (["--enable-network-policy"], "--enable-network-policy", "true"),  # a bare boolean flag
    (["--other"], "--watch-namespace", None),
    (["--watch-namespace=a", "--watch-namespace=b"], "--watch-namespace", "b"),
])
def test_flag_value(args: list[str], flag: str, value: str | None) -> None:
    assert flag_value(args, flag) == value


def operator(args: list[str], *, command: list[str] | None = None, env: list[dict[str, Any]] | None = None,
             ready: int = 1) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "kuberay-operator", "args": args, "env": env or []}
    if command:
        container["command"] = command
    return {"metadata": {"namespace": "ray-system", "name": "kuberay-operator"},
            "spec": {"template": {"spec": {"containers": [container]}}}, "status": {"readyReplicas": ready}}


@pytest.mark.parametrize(("deployment", "watched"), [
    (operator([]), []),  # every namespace
    (operator(["--watch-namespace", "a,b"], command=["/manager"]), ["a", "b"]),  # the Helm chart's form
    (operator(["--watch-namespace="]), []),
    (operator(["--watch-namespace=a"], command=["/manager", "--watch-namespace=b"]), ["a"]),  # the last wins
    (operator(["--watch-namespace=$(NS)"], env=[{"name": "NS", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.namespace"}}}]), ["ray-system"]),
    (operator(["--watch-namespace=$(UNSET)"]), None),
    (operator(["--config", "/etc/kuberay/config.yaml", "--watch-namespace=a"]), None),  # flags ignored then
])
def test_watch_namespaces(deployment: dict[str, Any], watched: list[str] | None) -> None:
    assert watch_namespaces(deployment) == watched


def test_operator_must_watch_the_namespace() -> None:
    many = [f"ns-{i}" for i in range(62)]
    check = check_operator([operator([f"--watch-namespace={','.join(many)}"])], True, "elsewhere")
    assert check.ok is False and check.fatal
    assert "ray-system/kuberay-operator watches only ns-0, ns-1, ns-2, ns-3, ns-4, … (62 in all) " \
           "(--watch-namespace), not elsewhere" in check.detail
    assert "add elsewhere to the operator's --watch-namespace" in check.hint
    assert check_operator([operator(["--watch-namespace=a"])], True, "a").ok
    assert check_operator([operator([])], True, "anything").ok
    assert check_operator([operator(["--config=/c.yaml"])], True, "a").mark == "!"
    both = [operator(["--watch-namespace=a"]), operator(["--watch-namespace=b"], ready=0)]
    assert check_operator(both, True, "b").ok is False  # the one watching b is not ready


def test_final_line_never_says_it_works_under_a_cross() -> None:
    fine = [Check("a", True, "ok"), Check("b", None, "?", fatal=False)]
    assert verdict(fine) == "the run can work here"
    warned = [*fine, Check("NetworkPolicy", False, "not enforced", fatal=False)]
    assert exit_ok(warned) and "can work here" not in verdict(warned) and "✖" in verdict(warned)
    assert "cannot work" in verdict([*fine, Check("Secrets", False, "missing: x")])


def test_unreachable_cluster_stops_at_the_first_check() -> None:
    facts = Facts(None)
    checks = evaluate(facts, [], "ns", ray_needed=True)
    assert [c.name for c in checks] == ["API server"] and not exit_ok(checks)


def test_warnings_do_not_fail_doctor() -> None:
    facts = Facts({"major": "1", "minor": "30"}, {"metadata": {}})
    checks = evaluate(facts, [gpu_pod(1, 1)], "ns", ray_needed=True)
    assert exit_ok(checks)
    assert {c.mark for c in checks} == {"✔", "!"}
