"""`lint` and `plan` understand the endpoint: `--serve SPEC` alone or beside a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import run_cli
from support.paths import EXAMPLES

KIND = str(EXAMPLES / "llama3_8b_kind.serve.yaml")
EKS = str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")
WORKSTATION = "plan.nodePools=[{name: ws, instanceType: workstation-a10-24gb, count: 1}]"
P5 = ("plan.nodePools=[{name: p5, instanceType: p5.48xlarge, count: 2}, "
      "{name: cpu, instanceType: m6i.16xlarge, count: 2}]")


def test_lint_of_an_endpoint_reports_its_pod_security_level_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli("lint", "--serve", KIND, "-o", "json")
    code, out = result.code, result.text
    assert code == 0
    report = json.loads(out[out.index("{"):])
    assert report["summary"]["error"] == 0 and report["summary"]["warning"] == 0
    assert {p["object"]: p["level"] for p in report["podSecurity"]} == {"Deployment llama/llama-8b": "baseline"}


def test_lint_finds_the_gpu_and_image_pitfalls_in_an_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli("lint", "--serve", KIND, "--set", "serve.image=vllm/vllm-openai:latest",
                     "--set", "serve.shmSize=1Gi", "--set", "infra.runtimeClassName=runc", "--set",
                     "lint.gpuRuntimeClass=nvidia")
    code, out = result.code, result.text
    assert code == 1
    assert "Deployment llama/llama-8b  (llama-8b/04-deployment-llama-8b.yaml)" in out
    # the findings whole: tests/golden/messages/lint.txt
    (tag,) = [line for line in out.splitlines() if line.startswith("  error    image-tag: container 'vllm': ")]
    assert "vllm/vllm-openai:latest uses the moving" in tag
    assert "gpu-shm: /dev/shm sizeLimit 1Gi is below 8Gi" in out
    (runtime,) = [line for line in out.splitlines() if "gpu-runtime-class: " in line]
    assert "runtimeClassName 'runc'" in runtime and "needs 'nvidia'" in runtime


def test_plan_of_the_single_gpu_endpoint_on_a_workstation(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli("plan", "--serve", KIND, "--set", WORKSTATION)
    code, out = result.code, result.text
    assert code == 0, out
    assert "Deployment llama/llama-8b  1     1        1       0        ws x1" in out
    assert "✔ fits: all 1 pods placed" in out


def test_plan_places_the_endpoint_beside_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    """One GPU: the run takes it, the endpoint waits (the scheduler's own words)."""
    result = run_cli("plan", str(EXAMPLES / "grpo_tiny.yaml"), "--infra",
                     str(EXAMPLES / "kind_single_gpu.infra.yaml"), "--serve", KIND, "--set", WORKSTATION)
    code, out = result.code, result.text
    assert code == 1
    assert "Deployment llama/llama-8b: 1 pod: 0/1 nodes are available:" in out
    assert "1 Insufficient nvidia.com/gpu." in out
    result = run_cli("plan", "--serve", KIND, "--set", WORKSTATION.replace("count: 1", "count: 2"),
                     str(EXAMPLES / "grpo_tiny.yaml"), "--infra",
                     str(EXAMPLES / "kind_single_gpu.infra.yaml"))
    code, out = result.code, result.text
    assert code == 0, out


def test_plan_counts_an_autoscaled_endpoint_at_its_maximum(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli("plan", "--serve", EKS, "--set", P5)
    code, out = result.code, result.text
    assert code == 1  # 6 pods x 4 GPUs on 16 GPUs
    assert "Deployment inference/llama-70b  6     4        4       2" in out
    assert "note: Deployment inference/llama-70b: planned at 6 replicas" in out  # the note whole: golden plan.txt
    result = run_cli("plan", "--serve", EKS, "--set", P5, "--set", "serve.autoscaling.maxReplicas=4")
    code, out = result.code, result.text
    assert code == 0, out


def test_lint_needs_something_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli("lint")
    code, out = result.code, result.text
    assert code == 2 and "--serve SPEC" in out


def test_a_bad_serve_spec_is_bad_input_for_lint_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.serve.yaml"
    spec.write_text("serve:\n  model: {id: a/b}\n  replicas: 2\n")
    result = run_cli("lint", "--serve", str(spec))
    code, out = result.code, result.text
    assert code == 2 and f"{spec}:3:13: serve.replicas: got 2 replicas sharing the cache claim" in out
