"""`run` to each failure, on the real control plane (issue 21 §4): what it prints, what `status`
and `runs` say, and what the cluster holds (read back with the real kubectl).

Failures are real where the stack can make them so: the scheduler refuses a gang the fleet cannot
hold, KubeRay enforces preRunningDeadlineSeconds and retries a failed attempt with a new cluster,
its submitter Job retries a failed pod. kwok plays the containers (stages.yaml: OOMKilled, a head
that never turns Ready, a Job's pod exiting 1) and the Ray head stand-in the Ray job
(``cluster.script``). Most tests are in rayjob mode; the job and bringup modes fail their own ways
(the Job controller's backoff limit; a RayCluster that never gets ready).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import NO_OPERATOR, RUN, cli_process, fleet_counts, ray_jobs, status_fleets, trainer_layer

pytestmark = pytest.mark.e2e

HEAD_ANNOTATION = "kuberay.spec.headGroupSpec.template.metadata.annotations."


def status_json(e2e_cli: Any, ns: str) -> dict[str, Any]:
    return dict(json.loads(e2e_cli("status", RUN, "-n", ns, "-o", "json").out))


def runs_row(e2e_cli: Any, ns: str) -> dict[str, Any]:
    rows = json.loads(e2e_cli("runs", "-n", ns, "-o", "json").out)
    assert [r["name"] for r in rows] == [RUN]
    return dict(rows[0])


def pods_of(cluster: Any, ns: str, fleet: str | None = None) -> list[dict[str, Any]]:
    selector = f"dockyard-k8s/run={RUN}" + (f",dockyard-k8s/fleet={fleet}" if fleet else "")
    return list(cluster.get("-n", ns, "pods", "-l", selector)["items"])


def test_a_gpu_gang_the_fleet_cannot_hold_is_said_with_the_scheduler_s_words(cluster: Any, e2e_cli: Any,
                                                                             example: Any, ns: str) -> None:
    """3 trainers and 1 inference pod of 8 GPUs each on p4de nodes, of which there are 3: one
    worker stays Pending, Unschedulable (kube-scheduler's verdict, not ours)."""
    if not cluster.ours:
        pytest.skip("sized for the control plane's fake p4de fleet")
    r = e2e_cli("run", *example("--timeout", "4", sets=("kuberay.trainer.replicas=3", "sandbox.replicas=1")))
    assert r.code == 1, r.out + r.err
    assert "✖ timeout: stopped following after 4s; the run keeps going" in r.out
    assert "FailedScheduling: 0/8 nodes are available" in r.out and "Insufficient nvidia.com/gpu" in r.out
    assert "hint: no node has enough free GPUs for a" in r.out

    workers = [p for p in pods_of(cluster, ns) if p["metadata"]["labels"]["dockyard-k8s/fleet"] in
               ("trainer", "inference")]
    refused = [p for p in workers if any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                                         for c in p["status"].get("conditions", []))]
    assert len(workers) == 4 and len(refused) == 1
    assert all(p["spec"].get("nodeName", "").startswith("p4de-") for p in workers if p not in refused)

    doc = status_json(e2e_cli, ns)
    assert status_fleets(doc) == fleet_counts(pods_of(cluster, ns))
    assert doc["main"]["state"] == "pending"
    name = refused[0]["metadata"]["name"]
    text = e2e_cli("status", RUN, "-n", ns).out
    assert f"✖ {refused[0]['metadata']['labels']['dockyard-k8s/fleet']}/{name}: FailedScheduling" in text
    row = runs_row(e2e_cli, ns)
    assert (row["state"], row["gpus"]) == ("pending", 32)


def test_a_pod_no_node_can_hold_even_empty_is_said_so(cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    """9 GPUs a trainer on a fleet of 8-GPU nodes (no instance type in its nodeSelector, so check
    cannot tell): the real scheduler finds preemption not helpful on every node, and the hint says
    no node can hold the pod even empty, not "free GPUs"."""
    if not cluster.ours:
        pytest.skip("sized for the control plane's fake 8-GPU nodes")
    r = e2e_cli("run", *example("--timeout", "4", sets=("kuberay.trainer.gpus=9", "kuberay.trainer.nodeSelector=null",
                                                        "kuberay.trainer.replicas=1", "sandbox.replicas=1")))
    assert r.code == 1, r.out + r.err
    assert "Insufficient nvidia.com/gpu" in r.out and "Preemption is not helpful for scheduling" in r.out
    assert ("hint: no node that a trainer pod may use has that much nvidia.com/gpu even with every other pod gone "
            "(the scheduler: preemption is not helpful): lower kuberay.trainer.gpus, or it waits") in r.out
    assert "no node has enough free GPUs for a trainer" not in r.out


def test_an_oom_killed_head_ends_a_fail_fast_run(cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 120]]}, namespace=ns)  # the job would go on: the head dies first
    r = e2e_cli("run", *example("--set-string", HEAD_ANNOTATION + "e2e\\.dockyard-k8s\\.dev/fail=OOMKilled",
                                "--fail-fast", "--timeout", "60"))
    assert r.code == 1, r.out + r.err
    assert "✖ fatal: head/" in r.out and ": OOMKilled (--fail-fast)" in r.out
    assert "container ray-head ran out of memory and was killed" in r.out
    assert "hint: raise kuberay.head.memory" in r.out
    head = pods_of(cluster, ns, "head")[0]
    last = head["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["reason"], last["exitCode"]) == ("OOMKilled", 137)
    assert f"head/{head['metadata']['name']}: OOMKilled" in r.out
    text = e2e_cli("status", RUN, "-n", ns).out
    assert f"✖ head/{head['metadata']['name']}: OOMKilled" in text
    doc = status_json(e2e_cli, ns)
    assert status_fleets(doc)["head"] == fleet_counts(pods_of(cluster, ns))["head"] == {
        "pods": 1, "scheduled": 1, "ready": 0, "done": 0, "failed": 0}
    assert runs_row(e2e_cli, ns)["state"] == doc["main"]["state"]


def submitter_job(cluster: Any, ns: str) -> dict[str, Any]:
    """KubeRay's submitter Job (named after the RayJob; its pods carry our labels, it does not)."""
    return dict(cluster.get("-n", ns, "job", RUN))


def test_a_failed_submitter_pod_is_retried_by_kuberay_and_the_run_succeeds(cluster: Any, e2e_cli: Any,
                                                                            example: Any, ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]], "submitter_failures": 1},
                   namespace=ns)
    r = e2e_cli("run", *example("--timeout", "90"))
    assert r.code == 0, r.out + r.err
    assert "✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in r.out
    job = submitter_job(cluster, ns)
    assert (job["status"].get("failed"), job["status"].get("succeeded")) == (1, 1)
    failed = [p for p in pods_of(cluster, ns, "submitter") if p["status"]["phase"] == "Failed"]
    assert len(failed) == 1
    assert f"✖ submitter/{failed[0]['metadata']['name']}: Error: container ray-job-submitter exited with code 1" \
        in r.out
    doc = status_json(e2e_cli, ns)
    assert status_fleets(doc)["submitter"] == fleet_counts(pods_of(cluster, ns))["submitter"]
    assert status_fleets(doc)["submitter"]["failed"] == 1 and status_fleets(doc)["submitter"]["done"] == 1
    assert runs_row(e2e_cli, ns)["state"] == doc["main"]["state"] == "succeeded"


def test_fail_fast_waits_for_kuberay_to_retry_a_failed_submitter_pod(cluster: Any, e2e_cli: Any, example: Any,
                                                                     ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]], "submitter_failures": 1},
                   namespace=ns)
    r = e2e_cli("run", *example("--fail-fast", "--timeout", "90"))
    job = submitter_job(cluster, ns)
    assert (job["status"].get("failed"), job["status"].get("succeeded")) == (1, 1)
    assert r.code == 0, r.out + r.err
    assert "✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in r.out


def test_a_failed_attempt_is_retried_with_a_new_cluster_until_one_succeeds(cluster: Any, e2e_cli: Any,
                                                                          example: Any, ns: str) -> None:
    """launch.backoffLimit 1: attempt 1's Ray job FAILS, KubeRay marks the RayJob Retrying,
    deletes that cluster and runs attempt 2 on a new one. `status` and `runs`, asked while `run`
    follows attempt 2, say which attempt it is."""
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["FAILED", 0, "OOM in the trainer"]]},
                   {"steps": [["RUNNING", 5], ["SUCCEEDED", 0, "done"]]}, namespace=ns)
    during: dict[str, Any] = {}

    def ask_during_attempt_2() -> None:
        failed = ("-n", ns, "get", "rayjob", RUN, "-o", "jsonpath={.status.failed}")
        cluster.wait("attempt 1 failed", lambda: cluster.kubectl(*failed, check=False).stdout == "1", timeout=120)
        during["job"] = cluster.get("-n", ns, "rayjob", RUN)["status"]
        during["status"] = cli_process("status", RUN, "-n", ns, "-o", "json")
        during["runs"] = cli_process("runs", "-n", ns, "-o", "json")

    asker = threading.Thread(target=ask_during_attempt_2, daemon=True)
    asker.start()
    r = e2e_cli("run", *example("--set", "launch.backoffLimit=1", "--timeout", "150"))
    asker.join(60)
    assert r.code == 0, r.out + r.err
    assert during["job"].get("jobDeploymentStatus") != "Complete", during  # asked before attempt 2 ended
    doc = json.loads(during["status"].stdout)
    assert doc["main"]["state"] in ("retrying", "running") and "attempt 2 of 2" in doc["main"]["summary"], doc
    row = next(x for x in json.loads(during["runs"].stdout) if x["name"] == RUN)
    # asked a moment after status: KubeRay may have moved from Retrying to Running in between
    assert row["state"] in ("retrying", "running") and "attempt 2 of 2" in row["summary"], row
    assert "jobDeploymentStatus Retrying, jobStatus FAILED, reason AppFailed: OOM in the trainer; " \
           "retrying: attempt 2 of 2" in r.out
    assert "✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in r.out
    live = cluster.get("-n", ns, "rayjob", RUN)["status"]
    assert (live["failed"], live["succeeded"], live["jobDeploymentStatus"]) == (1, 1, "Complete")
    jobs = ray_jobs(cluster, ns, start)
    assert sorted(j["status"] for j in jobs) == ["FAILED", "SUCCEEDED"]
    assert len({j["cluster"] for j in jobs}) == 2  # each attempt on its own cluster
    clusters = cluster.get("-n", ns, "rayclusters", "-l", f"dockyard-k8s/run={RUN}")["items"]
    assert [c["metadata"]["name"] for c in clusters] == [live["rayClusterName"]]  # attempt 1's was deleted
    doc = status_json(e2e_cli, ns)
    assert doc["main"]["state"] == "succeeded" and doc["main"]["status"]["rayClusterName"] == live["rayClusterName"]
    row = runs_row(e2e_cli, ns)
    assert row["state"] == "succeeded"


def test_kuberay_s_pre_running_deadline_ends_a_run_whose_head_never_turns_ready(cluster: Any, e2e_cli: Any,
                                                                               example: Any, ns: str) -> None:
    """The head pod stays not Ready (kwok's ready stage delayed by an hour): KubeRay fails the
    RayJob after preRunningDeadlineSeconds (it re-checks every 3 s: RayJobDefaultRequeueDuration),
    and `run` says KubeRay's verdict, not its own fallback's."""
    r = e2e_cli("run", *example("--set-string", HEAD_ANNOTATION + "pod-ready\\.stage\\.kwok\\.x-k8s\\.io/delay=1h",
                                "--pre-running-deadline", "2", "--timeout", "60"))
    live = cluster.get("-n", ns, "rayjob", RUN)["status"]
    assert (live["jobDeploymentStatus"], live["reason"]) == ("Failed", "PreRunningDeadlineExceeded")
    assert r.code == 1, r.out + r.err
    assert "KubeRay did not end it" not in r.out, r.out
    assert "✖ failed: jobDeploymentStatus Failed" in r.out and "PreRunningDeadlineExceeded" in r.out
    head = pods_of(cluster, ns, "head")
    assert all(not any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
               for p in head)
    doc = status_json(e2e_cli, ns)
    assert doc["main"]["state"] == "failed" and doc["main"]["status"]["reason"] == "PreRunningDeadlineExceeded"
    assert runs_row(e2e_cli, ns)["state"] == "failed"


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def test_status_forgets_a_scheduling_failure_once_the_gang_runs(cluster: Any, e2e_cli: Any, example: Any,
                                                                ns: str) -> None:
    """Every p4de GPU taken by other pods: the run's workers are refused (FailedScheduling events);
    once those pods go, the workers run, and `status` has no problem left to show."""
    if not cluster.ours:
        pytest.skip("fills the control plane's fake p4de nodes")
    blockers = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"blocker-{i}", "namespace": ns},
                 "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "p4de.24xlarge"},
                          "containers": [{"name": "c", "image": "busybox",
                                          "resources": {"limits": {"nvidia.com/gpu": 8}}}]}} for i in range(3)]
    cluster.apply(*blockers)
    cluster.wait("p4de nodes full", lambda: all(ready(p) for p in cluster.get("-n", ns, "pods", *[
        b["metadata"]["name"] for b in blockers])["items"]))
    assert e2e_cli("run", *example("--detach")).code == 0
    cluster.wait("workers refused", lambda: any(
        e["reason"] == "FailedScheduling" for e in cluster.get("-n", ns, "events", "--field-selector",
                                                               "type=Warning")["items"]))
    cluster.kubectl("-n", ns, "delete", "pod", *[b["metadata"]["name"] for b in blockers], "--wait=false")
    cluster.wait("every pod of the run ready", lambda: (pods := [
        p for p in pods_of(cluster, ns) if p["metadata"]["labels"]["dockyard-k8s/fleet"] != "submitter"]) and all(
        ready(p) for p in pods), timeout=60)
    doc = status_json(e2e_cli, ns)
    assert [f for f in doc["findings"] if f["reason"] == "FailedScheduling"] == []
    assert "FailedScheduling" not in e2e_cli("status", RUN, "-n", ns).out


def test_a_job_mode_pod_that_exits_1_fails_the_run_once_the_job_controller_gives_up(cluster: Any, e2e_cli: Any,
                                                                                     example: Any, ns: str) -> None:
    """launch.mode job with backoffLimit 1: kwok plays the pod's container exiting 1 (stages.yaml
    ``Error``); the real Job controller starts a second pod, then fails the Job
    (BackoffLimitExceeded). `run` names each failed pod and ends with the Job's verdict."""
    if not cluster.ours:
        pytest.skip("the container's exit is played by the control plane's kwok stage")
    r = e2e_cli("run", *example("--set", "launch.mode=job", *[a for s in NO_OPERATOR for a in ("--set", s)],
                                "--set", "launch.backoffLimit=1",
                                "--set-string", HEAD_ANNOTATION + "e2e\\.dockyard-k8s\\.dev/fail=Error",
                                "--timeout", "120"))
    job = cluster.get("-n", ns, "job", RUN)
    failed = {c["type"]: c for c in job["status"]["conditions"] if c["status"] == "True"}["Failed"]
    assert (failed["reason"], job["status"]["failed"], job["status"].get("succeeded", 0)) == (
        "BackoffLimitExceeded", 2, 0)
    assert r.code == 1, r.out + r.err
    assert f"✖ failed: failed (BackoffLimitExceeded): {failed['message']}" in r.out, r.out
    pods = pods_of(cluster, ns, "head")
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Failed"}
    for pod in pods:
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (term["reason"], term["exitCode"]) == ("Error", 1)
        assert f"✖ head/{pod['metadata']['name']}: Error: container ray-head exited with code 1" in r.out, r.out
    assert "✔ succeeded" not in r.out

    doc = status_json(e2e_cli, ns)
    assert (doc["main"]["kind"], doc["main"]["state"]) == ("Job", "failed")
    assert status_fleets(doc) == fleet_counts(pods_of(cluster, ns))
    assert status_fleets(doc)["head"] == {"pods": 2, "scheduled": 2, "ready": 0, "done": 0, "failed": 2}
    text = e2e_cli("status", RUN, "-n", ns).out
    assert f"Job grpo-swe: failed (BackoffLimitExceeded): {failed['message']}" in text, text
    assert all(f"✖ head/{p['metadata']['name']}: Error" in text for p in pods), text
    row = runs_row(e2e_cli, ns)
    assert (row["mode"], row["state"]) == ("job", "failed")


def test_a_bringup_whose_gang_the_fleet_cannot_hold_ends_at_the_pre_running_deadline(cluster: Any, e2e_cli: Any,
                                                                                    example: Any, ns: str) -> None:
    """launch.mode bringup, 3 trainers and 1 inference pod of 8 GPUs on the 3 p4de nodes: one worker
    stays Unschedulable, the RayCluster never gets ready. No operator enforces a deadline on a
    RayCluster: `run`'s own pre-running deadline ends it, and leaves the cluster as it is."""
    if not cluster.ours:
        pytest.skip("sized for the control plane's fake p4de fleet")
    r = e2e_cli("run", *example("--set", "launch.mode=bringup", "--pre-running-deadline", "5", "--timeout", "120",
                                sets=("kuberay.trainer.replicas=3", "sandbox.replicas=1")))
    assert r.code == 1, r.out + r.err
    assert "✖ pre-running-deadline: not running after 5s (pre-running deadline); the run is left as is" in r.out
    workers = [p for p in pods_of(cluster, ns) if p["metadata"]["labels"]["dockyard-k8s/fleet"] in
               ("trainer", "inference")]
    refused = [p for p in workers if any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                                         for c in p["status"].get("conditions", []))]
    assert len(workers) == 4 and len(refused) == 1
    fleet, name = refused[0]["metadata"]["labels"]["dockyard-k8s/fleet"], refused[0]["metadata"]["name"]
    assert f"✖ {fleet}/{name}: FailedScheduling: 0/8 nodes are available" in r.out, r.out
    assert "Insufficient nvidia.com/gpu" in r.out and "hint: no node has enough free GPUs for a" in r.out
    assert "✔ ready" not in r.out

    rc = cluster.get("-n", ns, "raycluster", RUN)
    assert (rc["status"]["readyWorkerReplicas"], rc["status"]["desiredWorkerReplicas"]) == (3, 4)
    doc = status_json(e2e_cli, ns)
    assert (doc["main"]["kind"], doc["main"]["state"]) == ("RayCluster", "pending")
    assert doc["main"]["summary"] == "provisioning: workers starting, workers ready 3/4"
    assert status_fleets(doc) == fleet_counts(pods_of(cluster, ns))
    text = e2e_cli("status", RUN, "-n", ns).out
    assert "RayCluster grpo-swe: provisioning: workers starting, workers ready 3/4" in text, text
    assert f"✖ {fleet}/{name}: FailedScheduling" in text
    row = runs_row(e2e_cli, ns)
    assert (row["mode"], row["state"], row["gpus"]) == ("bringup", "pending", 32)


def test_an_oom_killed_head_ends_a_fail_fast_bringup(cluster: Any, e2e_cli: Any, example: Any, ns: str,
                                                    tmp_path: Path) -> None:
    """launch.mode bringup: the head's container is OOM-killed and crash-loops (stages.yaml
    ``OOMKilled``) while the trainer is still starting (its readiness delayed by an hour: else the
    cluster is ready, and `run` done, in the half second before the kill); --fail-fast ends `run` on it."""
    if not cluster.ours:
        pytest.skip("the OOM kill is played by the control plane's kwok stage")
    layer = trainer_layer(tmp_path / "slow-trainer.infra.yaml", {"pod-ready.stage.kwok.x-k8s.io/delay": "1h"})
    r = e2e_cli("run", *example("--set", "launch.mode=bringup", "--infra", str(layer), "--fail-fast", "--timeout",
                                "60", "--set-string", HEAD_ANNOTATION + "e2e\\.dockyard-k8s\\.dev/fail=OOMKilled"))
    assert r.code == 1, r.out + r.err
    head = pods_of(cluster, ns, "head")[0]
    last = head["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["reason"], last["exitCode"]) == ("OOMKilled", 137)
    assert f"✖ fatal: head/{head['metadata']['name']}: OOMKilled (--fail-fast)" in r.out, r.out
    assert "container ray-head ran out of memory and was killed" in r.out and "hint: raise kuberay.head.memory" in r.out
    assert "✔ ready" not in r.out
    rc = cluster.get("-n", ns, "raycluster", RUN)
    assert {c["type"]: c["status"] for c in rc["status"]["conditions"]}["HeadPodReady"] == "False"
    doc = status_json(e2e_cli, ns)
    assert (doc["main"]["kind"], doc["main"]["state"]) == ("RayCluster", "pending")
    assert doc["main"]["summary"].startswith("provisioning: head pod not ready"), doc["main"]
    assert status_fleets(doc)["head"] == fleet_counts(pods_of(cluster, ns))["head"] == {
        "pods": 1, "scheduled": 1, "ready": 0, "done": 0, "failed": 0}
    text = e2e_cli("status", RUN, "-n", ns).out
    assert f"✖ head/{head['metadata']['name']}: OOMKilled" in text, text
    row = runs_row(e2e_cli, ns)
    assert (row["mode"], row["state"]) == ("bringup", "pending")
