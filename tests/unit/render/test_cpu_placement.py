"""CPU pods stay off GPU nodes by default (issue 22 item 28): on EKS the sandbox, the head and the
submitter landed on p5 nodes while CPU nodes were free. Every pod of the run that requests no GPU
gets a required node affinity excluding GPU nodes, by the labels each platform really sets and by
the instance types the GPU fleets select; `plan` places them as the scheduler would; a nodeSelector
that could only match a GPU node is an error at its key; infra.cpuScheduling turns it off."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.kube import pod_templates
from dockyard_k8s.plan import from_pools, plan
from dockyard_k8s.render.meta import FLEET_LABEL
from support.paths import REPO

EX = os.path.join(REPO, "examples")
GPU_PRESENT = {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]}
GKE = {"key": "cloud.google.com/gke-accelerator", "operator": "DoesNotExist"}
EKS_ACCELERATOR = {"key": "k8s.amazonaws.com/accelerator", "operator": "DoesNotExist"}


def instance_types(*types: str) -> dict:
    return {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": list(types)}


def placement(objects) -> dict[str, object]:
    """fleet -> its pods' required node affinity terms (None: none)."""
    out = {}
    for obj in objects:
        for t in pod_templates(obj):
            fleet = (t.metadata.get("labels") or {}).get(FLEET_LABEL)
            required = ((t.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution")
            out[fleet] = required["nodeSelectorTerms"] if required else None
    return out


def bundle(infra: str, sets=(), recipe: str = "grpo_swe.yaml"):
    return build_bundle(f"{EX}/{recipe}", f"{EX}/{infra}", Layers(sets=list(sets), env={"HOME": "/nonexistent"}))


def test_the_sandbox_head_and_submitter_of_the_example_stay_off_gpu_nodes():
    found = placement(bundle("grpo_swe.infra.yaml").objects)
    terms = [{"matchExpressions": [GPU_PRESENT, GKE, instance_types("p4de.24xlarge")]}]
    assert found["sandbox"] == terms and found["head"] == terms and found["submitter"] == terms
    assert found["trainer"] is None and found["inference"] is None  # GPU pods go where their GPUs are


def test_on_eks_the_accelerator_label_and_the_preset_instance_type_are_excluded():
    found = placement(bundle("eks_p5.infra.yaml", sets=["launch.mode=rayjob"]).objects)
    assert found["sandbox"] == [{"matchExpressions": [GPU_PRESENT, GKE, EKS_ACCELERATOR,
                                                      instance_types("p5.48xlarge")]}]
    assert found["head"] == found["submitter"] == found["sandbox"]
    assert found["prepull"] is not None and GPU_PRESENT not in found["prepull"][0]["matchExpressions"]


def test_the_nccl_tests_launcher_stays_off_the_gpu_nodes_its_workers_need():
    from dockyard_k8s.render.nccl import nccl_mpijob

    run = bundle("eks_p5.infra.yaml").run
    found = placement([nccl_mpijob(run.infra)])
    assert found["nccl-launcher"] == [{"matchExpressions": [GPU_PRESENT, GKE, EKS_ACCELERATOR,
                                                            instance_types("p5.48xlarge")]}]


def test_kind_and_k3s_have_one_node_so_nothing_is_excluded():
    found = placement(bundle("kind_single_gpu.infra.yaml", recipe="grpo_tiny.yaml").objects)
    assert found["sandbox"] is None and found["head"] is None


def test_check_says_where_the_cpu_pods_go():
    from support.cli import run_cli

    # the lines whole: tests/golden/messages/check-report.txt
    out = run_cli("check", f"{EX}/grpo_swe.yaml", "--infra", f"{EX}/grpo_swe.infra.yaml").out
    (kept,) = [line for line in out.splitlines() if line.startswith("  CPU pods (no GPU requested) kept off GPU")]
    assert "nvidia.com/gpu.present=true, cloud.google.com/gke-accelerator" in kept
    assert kept.endswith("; not p4de.24xlarge (infra.cpuScheduling)")
    out = run_cli("check", f"{EX}/grpo_swe.yaml", "--infra", f"{EX}/grpo_swe.infra.yaml",
                  "--set", "infra.cpuScheduling.avoidGpuNodes=false").out
    assert "CPU pods may land on GPU nodes (" in out and "kept off GPU" not in out


def test_it_is_overridable():
    assert placement(bundle("grpo_swe.infra.yaml", sets=["infra.cpuScheduling.avoidGpuNodes=false"]).objects)[
        "sandbox"] is None
    found = placement(bundle("grpo_swe.infra.yaml", sets=[
        r"infra.cpuScheduling.gpuNodeLabels.nvidia\.com/gpu\.present=null",
        r"infra.cpuScheduling.gpuNodeLabels.node-role=gpu"]).objects)
    assert found["sandbox"] == [{"matchExpressions": [
        GKE, {"key": "node-role", "operator": "NotIn", "values": ["gpu"]}, instance_types("p4de.24xlarge")]}]


def test_a_pods_own_node_affinity_keeps_its_terms_and_gets_the_exclusion_in_each(write):
    infra = write("i.yaml", "defaults: " + f"{EX}/grpo_swe.infra.yaml" + "\nkuberay:\n  spec:\n    headGroupSpec:\n"
                  "      template:\n        spec:\n          affinity:\n            nodeAffinity:\n"
                  "              requiredDuringSchedulingIgnoredDuringExecution:\n                nodeSelectorTerms:\n"
                  "                  - matchExpressions: [{key: zone, operator: In, values: [a]}]\n"
                  "                  - matchExpressions: [{key: zone, operator: In, values: [b]}]\n")
    objects = build_bundle(f"{EX}/grpo_swe.yaml", infra, Layers(env={"HOME": "/nonexistent"})).objects
    terms = placement(objects)["head"]
    assert [t["matchExpressions"][0]["values"] for t in terms] == [["a"], ["b"]]
    assert all(t["matchExpressions"][1:] == [GPU_PRESENT, GKE, instance_types("p4de.24xlarge")] for t in terms)


@pytest.mark.parametrize(("sets", "key"), [
    (["kuberay.head.nodeSelector.node\\.kubernetes\\.io/instance-type=p4de.24xlarge"],
     "kuberay.head.nodeSelector.node.kubernetes.io/instance-type"),
    (["sandbox.nodeSelector.nvidia\\.com/gpu\\.present='true'"], "sandbox.nodeSelector.nvidia.com/gpu.present"),
    (["kuberay.head.nodeSelector.node\\.kubernetes\\.io/instance-type=p5.48xlarge"],  # a GPU type of the catalogue
     "kuberay.head.nodeSelector.node.kubernetes.io/instance-type"),
])
def test_a_cpu_pod_that_selects_gpu_nodes_could_never_schedule(sets, key):
    with pytest.raises(ConfigError) as e:
        bundle("grpo_swe.infra.yaml", sets=sets)
    (problem,) = e.value.problems
    assert problem.path == key or problem.path.replace('["', ".").replace('"]', "") == key, problem
    assert "selects GPU nodes" in problem.message and "infra.cpuScheduling.avoidGpuNodes" in problem.message


def test_in_job_mode_the_sandbox_is_still_kept_off_gpu_nodes_so_selecting_one_is_refused(tmp_path):
    # job mode puts the head and the fleets in the Job's one GPU pod, but the sandbox stays its own CPU
    # Deployment with the keep-off-GPU-nodes affinity: selecting a GPU type left it unschedulable under a ✔
    infra = tmp_path / "job.infra.yaml"
    infra.write_text("infra: {image: nvcr.io/nvidia/nemo-rl:v0.4.0, platform: generic}\n"
                     "launch: {mode: job}\n"
                     "kuberay: {head: {gpus: 0}}\n"
                     "sandbox:\n  nodeSelector: {node.kubernetes.io/instance-type: p4de.24xlarge}\n")
    with pytest.raises(ConfigError) as e:
        build_bundle(f"{EX}/grpo_swe.yaml", str(infra), Layers(env={"HOME": "/nonexistent"}))
    (problem,) = e.value.problems
    assert problem.line == 5 and "sandbox.nodeSelector" in problem.path, problem
    assert "selects GPU nodes" in problem.message and "p4de.24xlarge node has 8 GPUs" in problem.message


# --- plan agrees ------------------------------------------------------------------------------------


POOLS = {"nodePools": [{"name": "gpu", "instanceType": "p5.48xlarge", "count": 3},
                       {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 2, "rootVolume": "400Gi"}]}


def _where(result) -> dict[str, set[str]]:
    pools = {n.name: n.pool for n in result.inventory.nodes}
    return {g.group.name.rsplit(" ", 1)[-1] if g.group.name.startswith("RayJob") else g.group.name:
            {pools[n] for n in g.nodes if n} for g in result.groups}


def test_plan_puts_the_cpu_pods_on_the_cpu_nodes_on_eks():
    """The issue's cluster: p5 GPU nodes (untainted, as a managed node group leaves them) and free CPU
    nodes; no nodeSelector on the head, the submitter or the sandbox."""
    run = bundle("eks_p5.infra.yaml", sets=["launch.mode=rayjob", "sandbox.nodeSelector=null",
                                            "kuberay.trainer.replicas=2", "kuberay.inference.replicas=1"])
    where = _where(plan(run.objects, from_pools(POOLS)))
    assert where["head"] == where["submitter"] == {"cpu"}
    assert where["Deployment rl-research/grpo-swe-sandbox"] == {"cpu"}
    assert where["trainer"] == where["inference"] == {"gpu"}


def test_plan_agrees_where_only_the_gpu_operators_label_tells_gpu_nodes_apart():
    """No instance type selected: the GPU nodes are known by nvidia.com/gpu.present, which plan's
    declared GPU pools carry as the NVIDIA GPU operator labels them."""
    unselected = [f"{key}.nodeSelector=null" for key in ("kuberay.head", "sandbox", "kuberay.trainer",
                                                         "kuberay.inference")]
    run = bundle("grpo_swe.infra.yaml", sets=[*unselected, "sandbox.replicas=2"])
    pools = {"nodePools": [{"name": "gpu", "instanceType": "p4de.24xlarge", "count": 3},
                           {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 2, "rootVolume": "400Gi"}]}
    result = plan(run.objects, from_pools(pools))
    assert all(n.labels.get("nvidia.com/gpu.present") == "true" for n in result.inventory.nodes if n.pool == "gpu")
    where = _where(result)
    assert where["head"] == where["submitter"] == where["Deployment rl-research/grpo-swe-sandbox"] == {"cpu"}
