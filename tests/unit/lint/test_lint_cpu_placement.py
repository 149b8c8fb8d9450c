"""lint's cpu-pod-on-gpu-nodes (issue 22 item 28): a pod that requests no GPU, in an input with GPU
pods, must be kept off the GPU nodes by its placement (a GPU label excluded, the GPU pods' instance
types excluded, another value of the label the GPU pods select)."""

from __future__ import annotations

import os

import pytest
from lintkit import clean_set, run_lint

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.lint.model import LintConfig
from support.paths import REPO

EX = os.path.join(REPO, "examples")
RULE = "cpu-pod-on-gpu-nodes"


def objects(cpu_pod: dict, gpu_pod: dict | None = None) -> list[dict]:
    """The clean set with the Deployment's placement replaced by ``cpu_pod``, ``gpu_pod`` merged into
    the GPU Job's pod spec."""
    objs = clean_set()
    objs[0]["spec"]["template"]["spec"].pop("affinity")
    objs[0]["spec"]["template"]["spec"].update(cpu_pod)
    objs[1]["spec"]["template"]["spec"].update(gpu_pod or {})
    return objs


def flagged(objs, config=None) -> list[str]:
    return [f.object for f in run_lint(objs, config).findings if f.rule == RULE]


def required(*expressions: dict) -> dict:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}}


@pytest.mark.parametrize(("cpu_pod", "gpu_pod"), [
    (required({"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]}), None),
    (required({"key": "cloud.google.com/gke-accelerator", "operator": "DoesNotExist"}), None),
    (required({"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["p5.48xlarge"]}),
     {"nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"}}),
    ({"nodeSelector": {"role": "cpu"}}, {"nodeSelector": {"role": "gpu-training"}}),  # the EKS manifests' way
    ({"nodeSelector": {"node.kubernetes.io/instance-type": "m6i.16xlarge"}}, None),  # a CPU type of the catalogue
    ({"nodeSelector": {"nvidia.com/gpu.present": "false"}}, None),
])
def test_a_placement_that_rules_gpu_nodes_out_passes(cpu_pod, gpu_pod):
    assert flagged(objects(cpu_pod, gpu_pod)) == []


@pytest.mark.parametrize(("cpu_pod", "gpu_pod"), [
    ({}, None),
    ({"nodeSelector": {"role": "cpu"}}, None),  # the GPU pods select nothing: their nodes may carry it too
    ({"nodeSelector": {"node.kubernetes.io/instance-type": "p4de.24xlarge"}}, None),
    # one term of two rules GPU nodes out: the other does not
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}, None),
])
def test_a_placement_that_allows_gpu_nodes_is_flagged(cpu_pod, gpu_pod):
    assert flagged(objects(cpu_pod, gpu_pod)) == ["Deployment team/web"]


def test_a_toleration_of_the_gpu_pods_proves_nothing():
    """The Job tolerates nvidia.com/gpu, as GPU pods do whether their nodes are tainted or not."""
    assert flagged(objects({})) == ["Deployment team/web"]


def test_no_gpu_pods_no_finding_and_daemonsets_are_not_checked():
    assert flagged([clean_set()[0]]) == []
    objs = objects({})
    objs[0]["kind"] = "DaemonSet"
    assert flagged(objs) == []


def test_the_infra_specs_gpu_node_labels_count():
    objs = objects({"nodeSelector": {"pool": "cpu"}})
    config = LintConfig.from_section({"gpuNodeLabels": {"pool": "gpu"}})
    assert flagged(objs) == ["Deployment team/web"] and flagged(objs, config) == []


def test_a_rendered_run_passes_and_fails_once_the_placement_is_turned_off():
    def lint_run(*sets: str) -> list[str]:
        run = build_bundle(f"{EX}/grpo_swe.yaml", f"{EX}/grpo_swe.infra.yaml",
                           Layers(sets=list(sets), env={"HOME": "/nonexistent"}))
        return flagged(run.objects)

    assert lint_run() == []
    assert lint_run("infra.cpuScheduling.avoidGpuNodes=false", "sandbox.nodeSelector=null",
                    "kuberay.head.nodeSelector=null") == [
        "Deployment rl-research/grpo-swe-sandbox", "RayJob rl-research/grpo-swe", "RayJob rl-research/grpo-swe"]
