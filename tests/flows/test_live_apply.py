"""`run`'s apply against what real API servers and operators answer: an older KubeRay's
CRD, Warning headers, a server dry run that changes something, an operator that never acts
(issue 13 items 2, 6, 7). An object still being deleted when `run` applies it again is tested on
the real control plane (tests/e2e/test_down.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fakekube import FakeKube
from states import NS

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def patches(fake: FakeKube, plural: str) -> list[Any]:
    return [q for q in fake.requests if q.method == "PATCH" and q.path.rsplit("/", 2)[-2] == plural]


@pytest.mark.parametrize("fake", ["1.4.2"], indirect=True)
def test_a_field_the_installed_crd_lacks_refuses_the_run_before_anything_is_applied(cli: Any,
                                                                                     fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach")
    assert r.code == 1
    assert "error: RayJob rl-research/grpo-swe: the cluster's RayJob CRD has no field " \
           "spec.preRunningDeadlineSeconds (KubeRay v1.6.0 added it)" in r.err
    assert "nothing was applied" in r.err
    # Ray token auth (kuberay.auth, the default) renders authOptions, which 1.4.2 lacks too
    assert "spec.rayClusterSpec.authOptions (KubeRay v1.5.1 added it; its secretName v1.6.0)" in r.err
    assert "upgrade the operator and its CRDs to KubeRay >= v1.6.0, or unset kuberay.auth (mode: disabled turns " \
           "Ray authentication off), launch.preRunningDeadlineSeconds" in r.err
    assert len(patches(fake, "rayjobs")) == 1  # a schema refusal is not retried
    assert fake.get("apps/v1", "Deployment", NS, "grpo-swe-sandbox") is None  # nothing half-applied
    assert fake.get("v1", "Secret", NS, "grpo-swe-ray-auth") is None  # the token Secret neither
    ok = cli("run", *ARGS, "--detach", "--set", "launch.preRunningDeadlineSeconds=null",
             "--set", "kuberay.auth.mode=disabled")
    assert ok.code == 0, ok.err


def test_apply_asks_for_strict_field_validation(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    assert {q.params.get("fieldValidation") for q in fake.requests if q.method == "PATCH"} == {"Strict"}


def test_warning_headers_are_printed(cli: Any, fake: FakeKube) -> None:
    fake.warn_on("Deployment", 'would violate PodSecurity "restricted:latest": runAsNonRoot != true')
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    assert 'warning: Deployment rl-research/grpo-swe-sandbox: would violate PodSecurity "restricted:latest"' in r.out
    assert r.out.count("would violate PodSecurity") == 1


@pytest.mark.parametrize("fake", ["1.4.2"], indirect=True)
def test_doctor_compares_the_installed_crds_with_the_run(cli: Any, fake: FakeKube) -> None:
    r = cli("doctor", *ARGS)
    assert r.code == 1
    line = next(x for x in r.out.splitlines() if x.startswith("✖ KubeRay CRD fields"))
    assert "rayjobs.ray.io lacks spec.preRunningDeadlineSeconds (KubeRay v1.6.0)" in line
    assert "KubeRay >= v1.6.0" in r.out


def test_doctor_crd_fields_are_fine_on_a_current_operator(cli: Any, fake: FakeKube) -> None:
    r = cli("doctor", *ARGS)
    assert "✔ KubeRay CRD fields" in r.out


def test_a_local_pre_running_deadline_ends_following_when_the_operator_does_not(cli: Any, fake: FakeKube) -> None:
    # nothing reconciles the RayJob here: an operator that is down (or one that ignores the deadline)
    r = cli("run", *ARGS, "--pre-running-deadline", "1", "--timeout", "30")
    assert r.code == 1, r.out + r.err
    assert "✖ pre-running-deadline" in r.out and "KubeRay did not end it" in r.out


def test_server_dry_run_says_configured_when_content_changes(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    before = fake.rv
    r = cli("run", *ARGS, "--dry-run=server", "--set", "sandbox.replicas=4")
    assert r.code == 0, r.err
    assert "configured (server dry run) Deployment rl-research/grpo-swe-sandbox" in r.out
    assert "unchanged (server dry run) ConfigMap rl-research/grpo-swe-recipe" in r.out
    assert fake.rv == before
