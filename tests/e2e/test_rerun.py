"""Re-running a finished run's spec: a changed one over a RayJob KubeRay already ran, and an
unchanged one after KubeRay's DeleteSelf deletion rule removed the finished
RayJob, on the real control plane (issue 22 item 7).

KubeRay (deletionRules since v1.5.0; feature gate RayJobDeletionPolicy, beta and on by default in
v1.6.2, which the stack's operator runs with its default gates) deletes a RayJob whose status
matches a DeleteSelf rule once the rule's ttlSeconds passed (rayjob_controller.go
handleDeletionRules / executeDeletionPolicy). The launch record stays (it has no owner), and
remembers the spec `run` created the RayJob from.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from e2e_helpers import RUN, labelled, ray_jobs, versions

pytestmark = pytest.mark.e2e

DELETE_SELF = ("--set", "launch.shutdownAfterJobFinishes=false", "--set", "launch.ttlSecondsAfterFinished=0",
               "--set", "launch.deletionRules=[{policy: DeleteSelf, condition: {jobStatus: SUCCEEDED, ttlSeconds: 0}}]")


def test_a_rerun_after_kuberay_s_delete_self_says_it_finished_and_starts_no_second_training(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]]}, namespace=ns)
    first = e2e_cli("run", *example(*DELETE_SELF, "--timeout", "120"))
    assert first.code == 0, first.out + first.err
    assert "✔ succeeded" in first.out
    cluster.wait("KubeRay's DeleteSelf rule deleting the RayJob",
                 lambda: cluster.kubectl("-n", ns, "get", "rayjob", RUN, check=False).returncode != 0)
    assert len(ray_jobs(cluster, ns, start)) == 1

    again = e2e_cli("run", *example(*DELETE_SELF, "--timeout", "60"))  # the timeout: a safety net
    assert again.code == 0, again.out + again.err
    assert len(ray_jobs(cluster, ns, start)) == 1, again.out  # no second Ray job
    assert (f"RayJob {ns}/{RUN} already succeeded: KubeRay deleted it when it ended (deletionRules: DeleteSelf "
            "on jobStatus SUCCEEDED)") in again.out
    assert "nothing was re-run. --replace starts it again." in again.out
    assert cluster.kubectl("-n", ns, "get", "rayjob", RUN, check=False).returncode != 0  # not created again
    record = cluster.get("-n", ns, "configmap", f"{RUN}-launch")  # what remembers the spec
    assert record["metadata"]["annotations"]["dockyard-k8s/submitted"]
    # runs and status RUN: how it ended, from the record and its rules (the RayJob is gone)
    listed = e2e_cli("runs", "-n", ns, "-o", "json")
    assert listed.code == 0, listed.out + listed.err
    row = next(r for r in json.loads(listed.out) if r["name"] == RUN)
    assert row["state"] == "succeeded (deleted by DeleteSelf)", row
    assert row["summary"] == "KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus SUCCEEDED)"
    status = e2e_cli("status", RUN, "-n", ns)
    assert status.code == 0, status.out + status.err
    assert (f"RayJob {RUN}: succeeded; KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus "
            f"SUCCEEDED); launched {record['metadata']['creationTimestamp']}") in status.out.splitlines()

    replaced = e2e_cli("run", *example(*DELETE_SELF, "--replace", "--timeout", "120"))
    assert replaced.code == 0, replaced.out + replaced.err
    assert "✔ succeeded" in replaced.out
    assert len(ray_jobs(cluster, ns, start)) == 2


def test_a_changed_spec_over_a_finished_rayjob_is_refused_with_nothing_applied(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    """KubeRay builds the cluster and submits the job once (rayjob_controller.go reads the spec in
    New/Initializing): a changed recipe applied over a finished RayJob trained nothing, rewrote the
    run's records and printed the old run's ✔ as the new one's."""
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]]}, namespace=ns)
    first = e2e_cli("run", *example("--timeout", "120"))
    assert first.code == 0, first.out + first.err
    before = versions(labelled(cluster, ns))

    changed = e2e_cli("run", *example("--timeout", "60", "optimizer.lr=9e-6"))
    assert changed.code == 1, changed.out + changed.err
    assert (f"RayJob {ns}/{RUN} already finished (jobDeploymentStatus Complete, jobStatus SUCCEEDED) from another "
            "spec, and KubeRay does not apply a changed spec to a started job: nothing was applied. --replace starts "
            "this spec") in changed.out
    assert "✔" not in changed.out
    assert versions(labelled(cluster, ns)) == before  # no object written: the recipe is the one that ran
    assert len(ray_jobs(cluster, ns, start)) == 1
    dry = e2e_cli("run", *example("--dry-run=server", "optimizer.lr=9e-6"))
    assert dry.code == 1 and "nothing was applied" in dry.out, dry.out + dry.err

    replaced = e2e_cli("run", *example("--replace", "--timeout", "120", "optimizer.lr=9e-6"))
    assert replaced.code == 0, replaced.out + replaced.err
    assert len(ray_jobs(cluster, ns, start)) == 2
