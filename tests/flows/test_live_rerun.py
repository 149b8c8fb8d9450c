"""Re-running a spec whose RayJob deletes itself when it ends (KubeRay deletionRules, DeleteSelf):
the launch record remembers the spec `run` created it from, so the re-run says it finished."""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube
from kuberay_sim import NS, RUN, set_job

from support.paths import EXAMPLES

DELETE_SELF = ["--set", "launch.shutdownAfterJobFinishes=false", "--set", "launch.ttlSecondsAfterFinished=0",
               "--set", "launch.deletionRules=[{policy: DeleteSelf, condition: {jobStatus: SUCCEEDED, ttlSeconds: 0}}]"]
ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml"), *DELETE_SELF]


def finished_and_deleted(fake: FakeKube) -> None:
    """What KubeRay does: the job succeeds, the DeleteSelf rule deletes the RayJob."""
    set_job(fake, "Complete", "SUCCEEDED")
    fake.remove("ray.io/v1", "RayJob", NS, RUN)
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None


def test_a_rerun_after_delete_self_says_it_finished_and_creates_nothing(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.out + r.err
    finished_and_deleted(fake)
    rv = fake.rv
    again = cli("run", *ARGS, "--timeout", "30")  # the timeout: a safety net, never reached
    assert again.code == 0, again.out + again.err
    assert (f"RayJob {NS}/{RUN} already succeeded: KubeRay deleted it when it ended (deletionRules: DeleteSelf on "
            "jobStatus SUCCEEDED)") in again.out
    assert "nothing was re-run. --replace starts it again." in again.out
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None and fake.rv == rv  # nothing written


def test_replace_or_a_changed_spec_runs_again_after_delete_self(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    finished_and_deleted(fake)
    r = cli("run", *ARGS, "--detach", "--set", "kuberay.trainer.replicas=1")
    assert r.code == 0, r.out + r.err
    assert "created    RayJob" in r.out and "already" not in r.out
    finished_and_deleted(fake)
    r = cli("run", *ARGS, "--detach", "--set", "kuberay.trainer.replicas=1", "--replace")
    assert r.code == 0, r.out + r.err
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None


def test_a_rayjob_that_was_never_created_is_created(cli: Any, fake: FakeKube) -> None:
    """The record alone (a launch that stopped before its RayJob) is no sign of a finished run."""
    assert cli("run", *ARGS, "--detach").code == 0
    cm = fake.get("v1", "ConfigMap", NS, f"{RUN}-launch")
    assert cm["metadata"]["annotations"].get("dockyard-k8s/submitted")
    fake.remove("ray.io/v1", "RayJob", NS, RUN)
    del cm["metadata"]["annotations"]["dockyard-k8s/submitted"]
    fake.put(cm)
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0 and "created    RayJob" in r.out, r.out + r.err
