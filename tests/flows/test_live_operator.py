"""What `run`, `status` and `cluster up` conclude from the KubeRay operator's real behaviour
(the simulation of ``kuberay_sim``): retries, invalid specs on old and new operators, and
RayCluster readiness that is not sticky."""

from __future__ import annotations

from typing import Any

import pytest
from fakekube import FakeKube
from flowkit import in_background, wait_following, wait_output
from kuberay_sim import NS, RUN, KubeRay

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
# v1.4.2 has neither field: no pre-running deadline, no authOptions (Ray token auth off)
NO_DEADLINE = ["--set", "launch.preRunningDeadlineSeconds=null", "--set", "kuberay.auth.mode=disabled"]


@pytest.fixture
def kuberay(fake: FakeKube, request: pytest.FixtureRequest) -> KubeRay:
    version = "1.4.2" if fake.resource("ray.io/v1", "RayJob").schema().field("spec").field(  # type: ignore[union-attr]
        "preRunningDeadlineSeconds") is None else "1.7.0"
    sim = fake.extend(KubeRay(version))
    assert isinstance(sim, KubeRay)
    return sim


def test_retries_are_followed_to_the_last_attempt(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    def operator() -> None:
        wait_following(fake)
        first = kuberay.cluster_of(NS, RUN)
        kuberay.run_pods(NS, first)
        wait_output(fake, "jobStatus RUNNING")
        kuberay.finish(NS, RUN, "FAILED", "Traceback: CUDA error")
        wait_output(fake, "attempt 2 of 3")
        kuberay.run_pods(NS, kuberay.cluster_of(NS, RUN))
        kuberay.finish(NS, RUN, "SUCCEEDED")

    t = in_background(operator)
    r = cli("run", *ARGS, "--set", "launch.backoffLimit=2")
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 0, r.out + r.err
    assert "retrying" in r.out and "attempt 2 of 3" in r.out and "Traceback: CUDA error" in r.out
    assert "✔ succeeded" in r.out and "✖ failed" not in r.out


def test_retries_used_up_fail_with_the_attempt_count(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    def operator() -> None:
        wait_following(fake)
        for attempt in (1, 2):
            kuberay.run_pods(NS, kuberay.cluster_of(NS, RUN))
            kuberay.finish(NS, RUN, "FAILED", f"boom {attempt}")
            if attempt == 1:
                wait_output(fake, "attempt 2 of 2")

    t = in_background(operator)
    r = cli("run", *ARGS, "--set", "launch.backoffLimit=1")
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 1
    assert "✖ failed" in r.out and "2 of 2 attempts failed" in r.out and "boom 2" in r.out


def test_status_shows_the_attempt(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    assert cli("run", *ARGS, "--set", "launch.backoffLimit=2", "--detach").code == 0
    kuberay.run_pods(NS, kuberay.cluster_of(NS, RUN))
    kuberay.finish(NS, RUN, "FAILED", "boom")
    r = cli("status", *ARGS, "--set", "launch.backoffLimit=2")
    assert r.code == 0, r.err
    assert "attempt 2 of 3" in r.out


@pytest.mark.parametrize("fake", ["1.4.2"], indirect=True)
def test_invalid_spec_on_an_old_operator_ends_the_run(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    kuberay.invalid[RUN] = ("InvalidRayJobSpec", "The RayJob spec is invalid: worker group trainer can be "
                                                 "suspended only when the RayJobDeletionPolicy feature gate is enabled")
    r = cli("run", *ARGS, *NO_DEADLINE, "--timeout", "30")
    assert r.code == 1, r.out + r.err
    assert "✖ -/grpo-swe: InvalidRayJobSpec" in r.out and "RayJobDeletionPolicy feature gate" in r.out
    assert "stopped following after" not in r.out  # it did not wait for the timeout


def test_validation_failed_prints_the_operator_message(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    kuberay.invalid[RUN] = ("InvalidRayJobSpec", "The RayJob spec is invalid: K8s token auth mode is currently "
                                                 "not supported for RayJob")
    r = cli("run", *ARGS)
    assert r.code == 1
    final = r.out.strip().splitlines()
    assert any(line.startswith("✖ failed") and "K8s token auth mode is currently not supported" in line
               for line in final)


def test_cluster_up_after_a_spec_change_waits_for_the_new_generation(cli: Any, fake: FakeKube,
                                                                     kuberay: KubeRay) -> None:
    assert cli("cluster", "up", *ARGS, "--detach").code == 0
    kuberay.run_pods(NS, RUN)
    kuberay.paused = True  # the operator has not seen the change yet

    def operator() -> None:
        wait_following(fake, "rayclusters", "pods", "events")
        wait_output(fake, "workers ready")
        kuberay.paused = False
        kuberay.reconcile_cluster(NS, RUN)
        kuberay.run_pods(NS, RUN)

    t = in_background(operator)
    r = cli("cluster", "up", *ARGS, "--set", "kuberay.trainer.replicas=3")
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 0, r.out + r.err
    lines = r.out.splitlines()
    first_ready = next(i for i, line in enumerate(lines) if line.startswith("✔ ready"))
    assert any("generation" in line or "workers ready 3/3" in line for line in lines[:first_ready + 1])
    assert "workers ready 4/4" in lines[first_ready] or "4/4" in r.out  # 3 trainers + 1 inference


def test_cluster_with_a_crashed_head_is_not_ready(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    assert cli("cluster", "up", *ARGS, "--detach").code == 0
    kuberay.run_pods(NS, RUN)
    kuberay.run_pods(NS, RUN, ready=False, only="headgroup")
    r = cli("cluster", "up", *ARGS, "--timeout", "0.5")
    assert r.code == 1, r.out
    assert "✔ ready" not in r.out and "head" in r.out.lower()


def test_replica_failure_is_a_finding_not_the_end(cli: Any, fake: FakeKube, kuberay: KubeRay) -> None:
    def operator() -> None:
        wait_following(fake, "rayclusters", "pods", "events")
        cluster = fake.get("ray.io/v1", "RayCluster", NS, RUN)
        st = cluster["status"]
        st["conditions"] = [*st.get("conditions", []), {"type": "ReplicaFailure", "status": "True",
                                                       "reason": "FailedCreateWorkerPod",
                                                       "message": "pods is forbidden: exceeded quota"}]
        kuberay.paused = True
        fake.set_status("ray.io/v1", "RayCluster", NS, RUN, st, manager="kuberay-operator")
        wait_output(fake, "ReplicaFailure")
        kuberay.paused = False
        st["conditions"] = [c for c in st["conditions"] if c["type"] != "ReplicaFailure"]
        fake.set_status("ray.io/v1", "RayCluster", NS, RUN, st, manager="kuberay-operator")
        kuberay.run_pods(NS, RUN)

    t = in_background(operator)
    r = cli("cluster", "up", *ARGS)
    t.join(10)
    assert not t.errors, t.errors
    assert r.code == 0, r.out + r.err
    assert "ReplicaFailure" in r.out and "exceeded quota" in r.out and "✔ ready" in r.out


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
