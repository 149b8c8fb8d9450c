"""Re-running a spec whose RayJob deletes itself when it ends (KubeRay deletionRules, DeleteSelf):
the launch record remembers the spec `run` created it from, so the re-run says it finished."""

from __future__ import annotations

import json
from typing import Any

from fakekube import FakeKube
from states import NS, RUN, set_job

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


# --- runs and status RUN after DeleteSelf: the record and its rules say how the run ended ------

def test_runs_and_status_say_how_a_self_deleted_run_ended(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    finished_and_deleted(fake)
    listed = cli("runs", "-o", "wide")
    assert listed.code == 0, listed.out + listed.err
    row = next(line for line in listed.out.splitlines() if line.startswith(f"{RUN} "))
    assert "succeeded (deleted by DeleteSelf)" in row
    assert "KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus SUCCEEDED)" in row
    docs = json.loads(cli("runs", "-o", "json").out)
    assert next(d for d in docs if d["name"] == RUN)["state"] == "succeeded (deleted by DeleteSelf)"
    created = fake.get("v1", "ConfigMap", NS, f"{RUN}-launch")["metadata"]["creationTimestamp"]
    st = cli("status", RUN)
    assert st.code == 0, st.out + st.err  # as for a RayJob that is still there and succeeded
    assert (f"RayJob {RUN}: succeeded; KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus "
            f"SUCCEEDED); launched {created}") in st.out.splitlines()
    doc = json.loads(cli("status", RUN, "-o", "json").out)
    assert doc["endedBy"] == {"policy": "DeleteSelf", "state": "succeeded", "ok": True,
                              "conditions": [{"jobStatus": "SUCCEEDED", "ttlSeconds": 0}]}
    by_files = cli("status", *ARGS)  # by the launch files: the same line
    assert by_files.code == 0 and by_files.out.splitlines()[:6] == st.out.splitlines()[:6], by_files.out


def test_a_failed_rule_says_failed_and_status_exits_as_for_a_failed_rayjob(cli: Any, fake: FakeKube) -> None:
    failed = [*ARGS[:-1], "launch.deletionRules=[{policy: DeleteSelf, condition: {jobStatus: FAILED}}]"]
    assert cli("run", *failed, "--detach").code == 0
    set_job(fake, "Failed", "FAILED")
    live_code = cli("status", RUN).code  # what a failed RayJob that is still there exits with
    fake.remove("ray.io/v1", "RayJob", NS, RUN)
    assert "failed (deleted by DeleteSelf)" in cli("runs").out
    st = cli("status", RUN)
    assert st.code == live_code, st.out + st.err
    assert f"RayJob {RUN}: failed; KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus FAILED)" \
        in st.out


def test_a_rayjob_deleted_before_it_was_submitted_or_of_another_spec_stays_unknown(cli: Any, fake: FakeKube) -> None:
    """No marker, or a record whose spec is not the one `run` created the RayJob from (a re-run
    with a changed spec that stopped before its RayJob): nothing says how it ended."""
    assert cli("run", *ARGS, "--detach").code == 0
    fake.remove("ray.io/v1", "RayJob", NS, RUN)
    cm = fake.get("v1", "ConfigMap", NS, f"{RUN}-launch")
    cm["metadata"]["annotations"]["dockyard-k8s/submitted"] = "0123456789abcdef"
    fake.put(cm)
    assert "deleted" not in cli("runs", "-o", "wide").out
    assert "deleted it" not in cli("status", RUN).out
    del cm["metadata"]["annotations"]["dockyard-k8s/submitted"]
    fake.put(cm)
    assert "deleted" not in cli("runs", "-o", "wide").out
