"""The live flows against a real cluster (kind + KubeRay operator, no GPU needed).

How to run (see docs/live.md; scripts/playground.sh up does the same):
    kind create cluster --name dockyard
    helm install kuberay-operator kuberay/kuberay-operator --version 1.7.0   # >= 1.6.0: Ray token auth in our Secret
    kubectl create namespace dockyard-e2e
    DOCKYARD_E2E_KUBECONFIG=~/.kube/config make test

KubeRay 1.7.0 has every field the launcher renders. On an older operator the installed CRDs
are read first: the fields they lack are left out of the run tests (``lacking_fields``), and
``test_fields_the_installed_operator_lacks`` checks the launcher refuses them by name, then
says what was left out.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from support.paths import EXAMPLES

pytestmark = pytest.mark.e2e

NS = os.environ.get("DOCKYARD_E2E_NAMESPACE", "dockyard-e2e")
# Ray >= 2.52 (token authentication, on by default); kuberay.rayVersion must match the image.
RAY_IMAGE = os.environ.get("DOCKYARD_E2E_RAY_IMAGE", "rayproject/ray:2.52.1")
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


# infra keys that render a RayJob field, to leave it out on an operator that lacks it
FIELD_KEYS = {"spec.preRunningDeadlineSeconds": "launch.preRunningDeadlineSeconds=null",
              # KubeRay < 1.5.1: no authOptions, so the operator could not read a token-protected job;
              # 1.5.x: authOptions without secretName (v1.6.0), the Secret the run's token is in
              "spec.rayClusterSpec.authOptions": "kuberay.auth.mode=disabled",
              "spec.rayClusterSpec.authOptions.secretName": "kuberay.auth.mode=disabled"}


def lacking_fields() -> list[str]:
    """RayJob fields the run renders that the cluster's installed CRD does not declare."""
    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.live.client import connect
    from dockyard_k8s.live.crdfields import undeclared_fields
    from dockyard_k8s.live.kinds import KINDS

    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"), sets=E2E_SETS,
                          env=os.environ)
    job = next(o for o in bundle.objects if o["kind"] == "RayJob")
    with connect(kubeconfig=os.environ["DOCKYARD_E2E_KUBECONFIG"]) as client:
        crd = client.get(KINDS["CustomResourceDefinition"], None, "rayjobs.ray.io")
    return undeclared_fields(job, crd) if crd else []


def args(*extra: str, keep_all: bool = False) -> list[str]:
    out = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
    sets = [*E2E_SETS, *([] if keep_all else [FIELD_KEYS[f] for f in LACKING if f in FIELD_KEYS])]
    for s in sets:
        out += ["--set", s]
    return [*out, *extra]


LACKING = lacking_fields() if os.environ.get("DOCKYARD_E2E_KUBECONFIG") else []


def test_fields_the_installed_operator_lacks(e2e_cli: Any) -> None:
    if not LACKING:
        return  # the installed KubeRay has every field the run renders
    r = e2e_cli("run", *args("--detach", keep_all=True))
    assert r.code == 1 and "nothing was applied" in r.err, r.out + r.err
    assert all(f in r.err for f in LACKING) and "KubeRay v" in r.err
    pytest.skip(f"the installed KubeRay lacks {', '.join(LACKING)}: the run tests leave it out "
                "(install KubeRay >= 1.6.0 to test them too)")


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
