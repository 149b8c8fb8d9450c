"""Whole-run scenarios with exact placements and pending reasons."""

from __future__ import annotations

import pytest
from plankit import GPU_TAINT, container, cpu_nodes, deployment, gpu_nodes, node, rayjob

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.plan import from_objects, from_pools, plan
from support.paths import EXAMPLES


def _placements(result):
    return {g.group.name: g.nodes for g in result.groups}


def _pending(result):
    return {g.group.name: sorted(set(r for r, n in zip(g.reasons, g.nodes, strict=True) if n is None))
            for g in result.groups if g.pending}


def test_fits_exactly(small_cluster):
    result = plan([rayjob()], small_cluster)
    assert _placements(result) == {
        "RayJob team/run head": ["cpu-0"],
        "RayJob team/run trainer": ["gpu-0", "gpu-1"],
        "RayJob team/run inference": ["gpu-2"],
        "RayJob team/run submitter": ["cpu-0"],
    }
    assert (result.fits, result.startable, result.exit_code) == (True, True, 0)


def test_one_gpu_short():
    nodes = [*gpu_nodes(2), node("gpu-2", "96", "1000Gi", 7, labels={"pool": "gpu"}, taints=[GPU_TAINT]),
             *cpu_nodes(1)]
    result = plan([rayjob()], from_objects(nodes))
    assert _placements(result)["RayJob team/run inference"] == [None]
    assert _pending(result) == {"RayJob team/run inference": [
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu, "
        "3 Insufficient nvidia.com/gpu."]}
    assert (result.fits, result.startable, result.exit_code) == (False, False, 1)


def test_taint_not_tolerated():
    result = plan([rayjob(tolerate=False)], from_objects([*gpu_nodes(2), *cpu_nodes(1)]))
    assert _pending(result) == {
        "RayJob team/run trainer": ["0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                    "2 node(s) had untolerated taint {nvidia.com/gpu: present}."],
        "RayJob team/run inference": ["0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                      "2 node(s) had untolerated taint {nvidia.com/gpu: present}."],
    }
    assert _placements(result)["RayJob team/run trainer"] == [None, None]


def test_anti_affinity_forces_one_pod_per_node():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    result = plan([deployment("w", 3, affinity=anti)], from_objects(cpu_nodes(2)))
    assert _placements(result) == {"Deployment team/w": ["cpu-0", "cpu-1", None]}
    assert _pending(result) == {"Deployment team/w": [
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."]}
    # Without the rule both fit on the first node.
    assert _placements(plan([deployment("w", 3)], from_objects(cpu_nodes(2)))) == {
        "Deployment team/w": ["cpu-0", "cpu-0", "cpu-0"]}


def test_existing_pods_anti_affinity_is_respected():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    existing = {"kind": "Pod", "metadata": {"name": "e", "namespace": "team", "labels": {"app": "db"}},
                "spec": {"nodeName": "cpu-0", "affinity": anti, "containers": [container()]},
                "status": {"phase": "Running"}}
    result = plan([deployment("w", 1)], from_objects([*cpu_nodes(1), existing]))
    assert _pending(result) == {"Deployment team/w": [
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."]}


def test_quota_exceeded():
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "team"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "16"}}}
    result = plan([quota, rayjob()], from_objects([*gpu_nodes(3), *cpu_nodes(1)]))
    assert _placements(result)["RayJob team/run inference"] == [None]
    assert _pending(result) == {"RayJob team/run inference": [
        "exceeded quota: gpus, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, "
        "limited: requests.nvidia.com/gpu=16"]}


def test_quota_already_used_in_the_cluster():
    quota = {"kind": "ResourceQuota", "metadata": {"name": "team-quota", "namespace": "team"},
             "spec": {"hard": {"requests.cpu": "4", "pods": "10"}}, "status": {"used": {"requests.cpu": "3500m"}}}
    result = plan([deployment("w", 1)], from_objects([*cpu_nodes(1), quota]))
    assert _pending(result) == {"Deployment team/w": [
        "exceeded quota: team-quota, requested: requests.cpu=1, used: requests.cpu=3500m, limited: requests.cpu=4"]}


def test_quota_requires_tracked_requests():
    quota = {"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team"},
             "spec": {"hard": {"limits.cpu": "64"}}}
    result = plan([quota, deployment("w", 1)], from_objects(cpu_nodes(1)))
    assert _pending(result) == {"Deployment team/w": ["failed quota: q: must specify limits.cpu for: c"]}
    limit_range = {"kind": "LimitRange", "metadata": {"name": "d", "namespace": "team"},
                   "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}}]}}
    assert plan([quota, limit_range, deployment("w", 1)], from_objects(cpu_nodes(1))).fits


def test_sandbox_replicas_times_requests_too_large():
    """The spec's warning: replicas x request must fit on the nodes."""
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"), Layers(env={}))
    pools = {"nodePools": [
        {"name": "gpu", "instanceType": "p4de.24xlarge", "count": 3},
        {"name": "cpu", "instanceType": "m6i.8xlarge", "count": 1, "labels": {"node-role": "cpu"},
         "rootVolume": "500Gi"},
    ]}
    result = plan(bundle.objects, from_pools(pools))
    sandbox = result.groups[0]
    assert sandbox.group.name == "Deployment rl-research/grpo-swe-sandbox"
    assert (sandbox.placed, sandbox.pending) == (15, 1)
    # The sandbox is applied first and takes the CPU node's cores: the Ray head (8 cores, same node-role) no
    # longer fits, so the GPU gang cannot start although every GPU pod is placed.
    assert _pending(result) == {
        "Deployment rl-research/grpo-swe-sandbox": [
            "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector."],
        "RayJob rl-research/grpo-swe head": [
            "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 3 node(s) didn't match Pod's node "
            "affinity/selector."],
    }
    assert _placements(result)["RayJob rl-research/grpo-swe trainer"] == ["gpu-0", "gpu-1"]
    assert (result.fits, result.startable) == (False, False)
    # A second CPU node fixes both.
    pools["nodePools"][1]["count"] = 2
    result = plan(bundle.objects, from_pools(pools))
    assert (result.fits, result.startable) == (True, True)
    assert _placements(result)["RayJob rl-research/grpo-swe head"] == ["cpu-1"]


def test_default_root_volume_is_too_small_for_the_example_sandbox():
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"), Layers(env={}))
    pools = {"nodePools": [{"name": "cpu", "instanceType": "m6i.16xlarge", "count": 2,
                            "labels": {"node-role": "cpu"}}]}
    result = plan(bundle.objects, from_pools(pools))
    assert _pending(result)["Deployment rl-research/grpo-swe-sandbox"] == [
        "0/2 nodes are available: 2 Insufficient ephemeral-storage."]


def test_gang_rollback_frees_the_partial_gang():
    nodes = from_objects([*gpu_nodes(2), *cpu_nodes(1)])
    loose = plan([rayjob()], nodes)
    assert _placements(loose)["RayJob team/run trainer"] == ["gpu-0", "gpu-1"]
    assert not loose.startable
    nodes = from_objects([*gpu_nodes(2), *cpu_nodes(1)])
    atomic = plan([rayjob()], nodes, atomic_gangs=True)
    assert _placements(atomic) == {"RayJob team/run head": [None], "RayJob team/run trainer": [None, None],
                                   "RayJob team/run inference": [None], "RayJob team/run submitter": ["cpu-0"]}
    assert atomic.groups[1].reasons[0] == ("gang not admitted: only 3/4 pods of RayJob team/run fit, and a gang "
                                           "scheduler binds all of them or none")
    assert all(n.requested.get("nvidia.com/gpu", 0) == 0 for n in nodes.nodes)


def test_topology_spread_do_not_schedule():
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "w"}}}]
    nodes = [node("a-0", labels={"zone": "a"}), node("a-1", labels={"zone": "a"}), node("b-0", labels={"zone": "b"}),
             node("x", labels={})]
    result = plan([deployment("w", 4, topologySpreadConstraints=spread)], from_objects(nodes))
    assert _placements(result) == {"Deployment team/w": ["a-0", "b-0", "a-0", "b-0"]}
    spread[0]["whenUnsatisfiable"] = "ScheduleAnyway"
    assert _placements(plan([deployment("w", 4, topologySpreadConstraints=spread)], from_objects(nodes))) == {
        "Deployment team/w": ["a-0", "a-0", "a-0", "a-0"]}


def test_spread_missing_label_reason():
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "w"}}}]
    result = plan([deployment("w", 1, topologySpreadConstraints=spread)],
                  from_objects([node("x"), node("a", cpu="500m", labels={"zone": "a"})]))
    assert _pending(result) == {"Deployment team/w": [
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints "
        "(missing required label)."]}


def test_existing_pods_use_capacity_and_finished_ones_do_not():
    def pod(name, phase):
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "other"},
                "spec": {"nodeName": "cpu-0", "containers": [container(cpu="30", memory="1Gi")]},
                "status": {"phase": phase}}
    inventory = from_objects({"kind": "List", "items": [*cpu_nodes(1), pod("a", "Running"), pod("b", "Succeeded")]}
                             ["items"])
    result = plan([deployment("w", 2, container=container(cpu="1"))], inventory)
    assert _placements(result) == {"Deployment team/w": ["cpu-0", "cpu-0"]}
    result = plan([deployment("v", 1, container=container(cpu="1"))], inventory)
    assert _pending(result) == {"Deployment team/v": ["0/1 nodes are available: 1 Insufficient cpu."]}


def test_too_many_pods_unschedulable_and_host_ports():
    nodes = [node("small", pods=1), node("cordoned", unschedulable=True)]
    c = container()
    c["ports"] = [{"containerPort": 80, "hostPort": 80}]
    result = plan([deployment("w", 2, container=c)], from_objects(nodes))
    assert _placements(result) == {"Deployment team/w": ["small", None]}
    assert _pending(result) == {"Deployment team/w": [
        "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) were unschedulable."]}


def test_daemonsets_are_noted_not_planned():
    ds = {"kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "team"},
          "spec": {"template": {"spec": {"containers": [container()]}}}}
    result = plan([ds], from_objects(cpu_nodes(1)))
    assert result.groups == []
    assert result.notes == ["DaemonSet agent: one pod per node, not planned"]


def test_workstation_fits_one_gpu_pod():
    pools = {"nodePools": [{"name": "box", "instanceType": "workstation-a10-24gb"}]}
    pod = deployment("vllm", 1, container=container(cpu="4", memory="16Gi", gpus=1))
    result = plan([pod], from_pools(pools))
    assert _placements(result) == {"Deployment team/vllm": ["box-0"]}
    two = plan([deployment("vllm", 2, container=container(cpu="2", memory="8Gi", gpus=1))], from_pools(pools))
    assert _pending(two) == {"Deployment team/vllm": ["0/1 nodes are available: 1 Insufficient nvidia.com/gpu."]}


@pytest.mark.parametrize(("pools", "message"), [
    ({"nodePools": [{"name": "x", "instanceType": "p9.huge"}]}, "unknown instance type 'p9.huge'"),
    ({"nodePools": [{"name": "x", "instanceType": "mine"}],
      "instanceTypes": {"mine": {"allocatable": {"cpu": "lots"}}}},
     "got 'lots', expected a Kubernetes quantity"),
])
def test_bad_pools_are_config_errors(pools, message):
    from dockyard_k8s.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        from_pools(pools)
    assert message in str(e.value.problems[0])


def test_custom_instance_type():
    pools = {"nodePools": [{"name": "dgx", "instanceType": "dgx-h100", "count": 1, "labels": {"pool": "gpu"}}],
             "instanceTypes": {"dgx-h100": {"allocatable": {"cpu": "220", "memory": "1900Gi", "pods": 110,
                                                            "nvidia.com/gpu": 8},
                                            "labels": {"nvidia.com/gpu.product": "H100"}}}}
    inv = from_pools(pools)
    assert inv.nodes[0].labels["nvidia.com/gpu.product"] == "H100"
    assert inv.nodes[0].labels["node.kubernetes.io/instance-type"] == "dgx-h100"
    assert plan([rayjob(trainer=1, inference=0, submitter=False)], inv).groups[1].nodes == ["dgx-0"]
