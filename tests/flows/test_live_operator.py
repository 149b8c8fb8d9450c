"""What `run` concludes from what KubeRay writes when it refuses a RayJob: on v1.4.2 Warning
events only (no status), on v1.5+ ``ValidationFailed`` with its message; and `cluster up` beside
the Ray autoscaler. Each state is written into the fake as KubeRay writes it; what the operator
does over time (attempts, retries, readiness after a change, ReplicaFailure) is tested on the real
control plane (tests/e2e/test_run_failures.py, test_cluster.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fakekube import FakeKube
from flowkit import in_background, wait_following
from states import NS, RUN

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
# v1.4.2 has neither field: no pre-running deadline, no authOptions (Ray token auth off)
NO_DEADLINE = ["--set", "launch.preRunningDeadlineSeconds=null", "--set", "kuberay.auth.mode=disabled"]


def refused(fake: FakeKube, message: str, *, status: bool) -> None:
    """KubeRay refuses the RayJob once `run` follows it (rayjob_controller.go validateRayJob):
    v1.4.2 with a Warning event only ("The RayJob spec is invalid NS/NAME: ..."), v1.5+ with the
    event and then its status, and `run` ends on whichever it reads first: each test writes one."""
    wait_following(fake)
    if status:
        fake.set_status("ray.io/v1", "RayJob", NS, RUN, {"jobDeploymentStatus": "ValidationFailed",
                                                         "reason": "ValidationFailed", "message": message},
                        manager="kuberay-operator")
        return
    head, _, rest = message.partition(": ")
    fake.add_event(NS, fake.get("ray.io/v1", "RayJob", NS, RUN), "InvalidRayJobSpec", f"{head} {NS}/{RUN}: {rest}")


@pytest.mark.parametrize("fake", ["1.4.2"], indirect=True)
def test_invalid_spec_on_an_old_operator_ends_the_run(cli: Any, fake: FakeKube) -> None:
    t = in_background(lambda: refused(fake, "The RayJob spec is invalid: worker group trainer can be suspended only "
                                            "when the RayJobDeletionPolicy feature gate is enabled", status=False))
    r = cli("run", *ARGS, *NO_DEADLINE, "--timeout", "30")
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 1, r.out + r.err
    assert "✖ RayJob/grpo-swe: InvalidRayJobSpec" in r.out and "RayJobDeletionPolicy feature gate" in r.out
    assert "stopped following after" not in r.out  # it did not wait for the timeout


def test_validation_failed_prints_the_operator_message(cli: Any, fake: FakeKube) -> None:
    t = in_background(lambda: refused(fake, "The RayJob spec is invalid: K8s token auth mode is currently not "
                                            "supported for RayJob", status=True))
    r = cli("run", *ARGS)
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 1
    assert any(line.startswith("✖ failed: jobDeploymentStatus ValidationFailed") and "K8s token auth mode is "
               "currently not supported" in line for line in r.out.splitlines()), r.out


AUTOSCALING = """\
defaults: [{infra}]
kuberay:
  spec:
    enableInTreeAutoscaling: true
    workerGroupSpecs:
      - {{groupName: trainer, minReplicas: 1, maxReplicas: 6}}
"""


@pytest.fixture
def autoscaled(tmp_path: Any) -> list[str]:
    """The example with the Ray autoscaler on and room for it to scale the trainers (1 to 6)."""
    infra = tmp_path / "autoscaled.infra.yaml"
    infra.write_text(AUTOSCALING.format(infra=EXAMPLES / "grpo_swe.infra.yaml"))
    return [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(infra)]


def _autoscale(fake: FakeKube, replicas: int) -> None:
    """What the Ray autoscaler does: it writes the trainer group's replicas (an Update)."""
    cluster = fake.get("ray.io/v1", "RayCluster", NS, RUN)
    group = next(g for g in cluster["spec"]["workerGroupSpecs"] if g["groupName"] == "trainer")
    group["replicas"] = replicas
    group["scaleStrategy"] = {"workersToDelete": ["grpo-swe-trainer-worker-abcde"]}
    fake.put(cluster, manager="autoscaler")


def test_cluster_up_again_keeps_what_the_autoscaler_scaled(cli: Any, fake: FakeKube, autoscaled: list[str]) -> None:
    # workerGroupSpecs is one atomic list in KubeRay's CRD: the autoscaler's write of one
    # group's replicas makes it the owner of every group; a re-apply that resets replicas
    # would conflict (409) or, forced, undo the scaling
    assert cli("cluster", "up", *autoscaled, "--detach").code == 0
    _autoscale(fake, 5)
    r = cli("cluster", "up", *autoscaled, "--detach")
    assert r.code == 0, r.out + r.err
    groups = {g["groupName"]: g for g in fake.get("ray.io/v1", "RayCluster", NS, RUN)["spec"]["workerGroupSpecs"]}
    assert groups["trainer"]["replicas"] == 5
    assert groups["trainer"]["scaleStrategy"] == {"workersToDelete": ["grpo-swe-trainer-worker-abcde"]}
    assert "keeps the replicas the autoscaler set (trainer 5)" in r.out


def test_a_changed_autoscaled_cluster_says_who_owns_the_worker_groups(cli: Any, fake: FakeKube,
                                                                     autoscaled: list[str]) -> None:
    assert cli("cluster", "up", *autoscaled, "--detach").code == 0
    _autoscale(fake, 5)
    changed = [*autoscaled, "--set", "kuberay.trainer.cpu=80"]
    r = cli("cluster", "up", *changed, "--detach")
    assert r.code == 1
    assert "spec.workerGroupSpecs is one atomic list in KubeRay's RayCluster CRD, " \
           'last written by "autoscaler"' in r.err
    assert "--force-conflicts" in r.err
    forced = cli("cluster", "up", *changed, "--detach", "--force-conflicts")
    assert forced.code == 0, forced.out + forced.err
    groups = {g["groupName"]: g for g in fake.get("ray.io/v1", "RayCluster", NS, RUN)["spec"]["workerGroupSpecs"]}
    assert groups["trainer"]["replicas"] == 5  # the scaling survives the forced change
    assert groups["trainer"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "80"
