"""The example run, end to end, on a real cluster: the session's control plane, or yours.

On the control plane (tests/e2e/conftest.py) the example runs as written: kwok's fake p4de nodes
have the GPUs it asks for, the real KubeRay operator runs the RayJob, the Ray head stand-in
answers for its dashboard. On a cluster given with DOCKYARD_E2E_KUBECONFIG (kind + KubeRay, no
GPU) the GPU requests are rewritten away (``LAPTOP_SETS``) and the run does real work.

KubeRay >= 1.6.0 has every field the launcher renders. On an older operator the installed CRDs
are read first: the fields they lack are left out of the run tests (``lacking_fields``), and
``test_fields_the_installed_operator_lacks`` checks the launcher refuses them by name.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from dockyard_k8s.config.layering import Layers
from support.paths import EXAMPLES

pytestmark = pytest.mark.e2e

# Ray >= 2.52 (token authentication, on by default); kuberay.rayVersion must match the image.
RAY_IMAGE = os.environ.get("DOCKYARD_E2E_RAY_IMAGE", "rayproject/ray:2.52.1")
# For a laptop cluster: GPU requests rewritten away, everything sized for one kind node.
LAPTOP_SETS = [
    f"infra.image={RAY_IMAGE}", "infra.imagePullSecrets=[]", "infra.priorityClassName=null",
    "launch.activeDeadlineSeconds=1800", "launch.preRunningDeadlineSeconds=1200",
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


@pytest.fixture(scope="module")
def lacking(cluster: Any) -> list[str]:
    """RayJob fields the run renders that the cluster's installed CRD does not declare."""
    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.live.client import connect
    from dockyard_k8s.live.crdfields import undeclared_fields
    from dockyard_k8s.live.kinds import KINDS

    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                          Layers(env=os.environ))
    job = next(o for o in bundle.objects if o["kind"] == "RayJob")
    with connect(kubeconfig=cluster.kubeconfig) as client:
        crd = client.get(KINDS["CustomResourceDefinition"], None, "rayjobs.ray.io")
    return undeclared_fields(job, crd) if crd else []


@pytest.fixture
def args(cluster: Any, ns: str, lacking: list[str]) -> Any:
    def _args(*extra: str, keep_all: bool = False) -> list[str]:
        sets = [] if cluster.ours else list(LAPTOP_SETS)
        sets += [] if keep_all else [FIELD_KEYS[f] for f in lacking if f in FIELD_KEYS]
        out = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml"), "-n", ns]
        for s in sets:
            out += ["--set", s]
        return [*out, *extra]
    return _args


def test_fields_the_installed_operator_lacks(e2e_cli: Any, args: Any, lacking: list[str]) -> None:
    if not lacking:
        return  # the installed KubeRay has every field the run renders
    r = e2e_cli("run", *args("--detach", keep_all=True))
    assert r.code == 1 and "nothing was applied" in r.err, r.out + r.err
    assert all(f in r.err for f in lacking) and "KubeRay v" in r.err
    pytest.skip(f"the installed KubeRay lacks {', '.join(lacking)}: the run tests leave it out "
                "(install KubeRay >= 1.6.0 to test them too)")


def test_doctor_preflight(e2e_cli: Any, args: Any) -> None:
    r = e2e_cli("doctor", *args())
    assert "✔ API server" in r.out and "✔ KubeRay CRDs" in r.out, r.out + r.err
    assert r.code == 0, r.out


def test_run_status_logs_down(e2e_cli: Any, args: Any, cluster: Any, ns: str) -> None:
    try:
        r = e2e_cli("run", *args("--timeout", "300"))
        assert r.code == 0, r.out + r.err
        assert "✔ succeeded" in r.out
        again = e2e_cli("run", *args("--detach"))
        assert "created" not in again.out, again.out
        status = json.loads(e2e_cli("status", *args("-o", "json")).out)
        assert status["main"]["state"] == "succeeded"
        logs = e2e_cli("logs", *args())
        assert logs.code == 0, logs.err
        if not cluster.ours:
            assert "e2e-ok" in logs.out
    finally:
        first = e2e_cli("down", *args())
        assert first.code == 0, first.err
        second = e2e_cli("down", *args())
        assert "nothing left" in second.out


def test_the_operator_reads_the_worker_resources_it_is_given(cluster: Any, e2e_cli: Any, args: Any,
                                                            ns: str) -> None:
    """KubeRay parses rayStartParams.resources itself to add --num-gpus: a value it cannot read is
    logged on every reconcile and the flag is missing from `ray start` (found on this stack)."""
    if not cluster.ours:
        pytest.skip("reads the pods kwok runs for the fake GPU nodes")
    try:
        assert e2e_cli("run", *args("--detach")).code == 0
        def workers() -> list[dict[str, Any]]:
            pods = cluster.get("-n", ns, "pods", "-l", "ray.io/group=trainer")["items"]
            return pods if len(pods) == 2 else []
        for pod in cluster.wait("trainer pods", workers):
            command = " ".join(pod["spec"]["containers"][0].get("args") or pod["spec"]["containers"][0]["command"])
            assert "--num-gpus=8" in command, command
            assert """--resources='{"dockyard_fleet_trainer":8}'""" in command, command
    finally:
        e2e_cli("down", *args())


def test_failure_is_surfaced_with_a_hint(e2e_cli: Any, args: Any, cluster: Any) -> None:
    image = ["--set", "infra.image=ghcr.io/dockyard-rl/does-not-exist:0.0.0"]
    if cluster.ours:  # kwok pulls nothing: the pod says what a kubelet says for a missing tag
        image += ["--set-string",
                  "kuberay.spec.headGroupSpec.template.metadata.annotations.e2e\\.dockyard-k8s\\.dev/fail=ErrImagePull"]
    try:
        r = e2e_cli("run", *args(*image, "--fail-fast", "--timeout", "120"))
        assert r.code == 1, r.out + r.err
        assert "ErrImagePull" in r.out or "ImagePullBackOff" in r.out
        assert "hint:" in r.out
    finally:
        e2e_cli("down", *args())
