"""The live flows against a real cluster (kind + KubeRay operator, no GPU needed).

How to run (see docs/live.md):
    kind create cluster --name dockyard
    helm install kuberay-operator kuberay/kuberay-operator --version 1.4.2
    kubectl create namespace dockyard-e2e
    DOCKYARD_E2E_KUBECONFIG=~/.kube/config make test
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NS = os.environ.get("DOCKYARD_E2E_NAMESPACE", "dockyard-e2e")
RAY_IMAGE = os.environ.get("DOCKYARD_E2E_RAY_IMAGE", "rayproject/ray:2.49.0")
# GPU requests rewritten away; everything sized for a laptop kind node.
E2E_SETS = [
    f"infra.namespace={NS}", f"infra.image={RAY_IMAGE}", "infra.imagePullSecrets=[]", "infra.priorityClassName=null",
    "launch.name=dockyard-e2e", "launch.activeDeadlineSeconds=1800", "launch.preRunningDeadlineSeconds=1200",
    "launch.ttlSecondsAfterFinished=60", "launch.entrypoint=python -c \"import ray; ray.init(); print('e2e-ok')\"",
    "kuberay.spec={}",
    *(f"kuberay.{f}.{k}={v}" for f in ("head", "trainer", "inference")
      for k, v in (("cpu", "500m"), ("memory", "1Gi"), ("shmSize", "null"), ("nodeSelector", "{}"))),
    *(f"kuberay.{f}.{k}={v}" for f in ("trainer", "inference") for k, v in (("gpus", "0"), ("replicas", "1"),
                                                                           ("tolerations", "[]"))),
    "sandbox.replicas=1", "sandbox.image=python:3.11-slim", "sandbox.nodeSelector={}", "sandbox.resources.cpu=100m",
    "sandbox.resources.memory=128Mi", "sandbox.resources.ephemeralStorage=100Mi", "sandbox.resources.cpuLimit=null",
    "sandbox.resources.memoryLimit=null", "sandbox.topologySpreadConstraints=[]",
    "sandbox.command=[python,-m,http.server,'9090']",
]


def args(*extra: str) -> list[str]:
    out = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
    for s in E2E_SETS:
        out += ["--set", s]
    return [*out, *extra]


def test_doctor_preflight(e2e_cli: Any) -> None:
    r = e2e_cli("doctor", *args())
    assert "✔ API server" in r.out and "✔ KubeRay CRDs" in r.out, r.out + r.err
    assert r.code == 0, r.out


def test_run_status_logs_down(e2e_cli: Any) -> None:
    try:
        r = e2e_cli("run", *args("--timeout", "1500"))
        assert r.code == 0, r.out + r.err
        again = e2e_cli("run", *args("--detach"))
        assert "unchanged" in again.out and "created" not in again.out
        status = json.loads(e2e_cli("status", *args("-o", "json")).out)
        assert status["main"]["state"] == "succeeded"
        logs = e2e_cli("logs", *args())
        assert "e2e-ok" in logs.out
    finally:
        first = e2e_cli("down", *args())
        assert first.code == 0
        second = e2e_cli("down", *args())
        assert "nothing left" in second.out


def test_failure_is_surfaced_with_a_hint(e2e_cli: Any) -> None:
    try:
        r = e2e_cli("run", *args("--set", "infra.image=ghcr.io/dockyard-rl/does-not-exist:0.0.0", "--fail-fast",
                                 "--timeout", "600"))
        assert r.code == 1
        assert "ErrImagePull" in r.out or "ImagePullBackOff" in r.out
        assert "hint:" in r.out
    finally:
        e2e_cli("down", *args())
