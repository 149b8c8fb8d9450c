"""Kind handlers, desired pods per fleet and the run view (pure)."""

from __future__ import annotations

import os
import queue
from typing import Any

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.live.orchestrate import _burst
from dockyard_k8s.live.progress import (
    FleetRow,
    RunView,
    desired_pods,
    fleet_rows,
    main_object,
    phase_of,
)
from support.paths import EXAMPLES


def obj(kind: str, status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "x", "uid": kind}, "spec": spec or {}, "status": status or {}}


@pytest.mark.parametrize(("status", "state", "terminal", "ok"), [
    ({}, "pending", False, False),
    ({"jobDeploymentStatus": "Initializing"}, "pending", False, False),
    ({"jobDeploymentStatus": "Running", "jobStatus": "PENDING"}, "running", False, False),
    ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, "running", False, False),
    ({"jobDeploymentStatus": "Suspended"}, "suspended", False, False),
    ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "succeeded", True, True),
    ({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "reason": "AppFailed"}, "failed", True, False),
    ({"jobDeploymentStatus": "Failed", "reason": "PreRunningDeadlineExceeded"}, "failed", True, False),
    ({"jobDeploymentStatus": "ValidationFailed"}, "failed", True, False),
    # the operator settles a job that ended while the deployment says Running (its transition
    # grace period, JobDeploymentStatusTransitionGracePeriodExceeded): not over until it does
    ({"jobDeploymentStatus": "Running", "jobStatus": "FAILED"}, "running", False, False),
    ({"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, "failed", True, False),
    # backoffLimit left: the failed attempt is Retrying in the same write, then a new cluster
    ({"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "failed": 1}, "retrying", False, False),
    ({"jobDeploymentStatus": "", "failed": 1}, "retrying", False, False),
    ({"jobDeploymentStatus": "Initializing", "failed": 2}, "retrying", False, False),
])
def test_rayjob_phase(status: dict[str, Any], state: str, terminal: bool, ok: bool) -> None:
    p = phase_of(obj("RayJob", status), [])
    assert (p.state, p.terminal, p.ok) == (state, terminal, ok)


def test_rayjob_details_carry_reason_and_message() -> None:
    p = phase_of(obj("RayJob", {"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded", "message": "m"}), [])
    assert "reason DeadlineExceeded" in p.summary and "message: m" in p.details
    assert p.summary.endswith(": m")  # the operator's message ends a failed run's line


def test_rayjob_attempts() -> None:
    retrying = phase_of(obj("RayJob", {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "failed": 1,
                                       "message": "boom"}, {"backoffLimit": 2}), [])
    assert retrying.summary.endswith("boom; retrying: attempt 2 of 3")
    running = phase_of(obj("RayJob", {"jobDeploymentStatus": "Running", "failed": 1}, {"backoffLimit": 2}), [])
    assert "(attempt 2 of 3)" in running.summary
    done = phase_of(obj("RayJob", {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "failed": 3,
                                   "message": "boom"}, {"backoffLimit": 2}), [])
    assert done.terminal and done.summary.endswith("boom (3 of 3 attempts failed)")


@pytest.mark.parametrize(("status", "state", "terminal"), [
    ({}, "pending", False),
    ({"conditions": [{"type": "HeadPodReady", "status": "False", "reason": "HeadPodNotFound"}]}, "pending", False),
    ({"state": "ready"}, "ready", True),  # an operator without status conditions: state is all there is
    # state and RayClusterProvisioned are never cleared: the head's condition and the workers decide
    ({"conditions": [{"type": "RayClusterProvisioned", "status": "True"}]}, "pending", False),
    ({"state": "ready", "conditions": [{"type": "HeadPodReady", "status": "False", "reason": "ContainersNotReady"}]},
     "pending", False),
    ({"state": "ready", "readyWorkerReplicas": 1, "desiredWorkerReplicas": 2,
      "conditions": [{"type": "HeadPodReady", "status": "True"}]}, "pending", False),
    ({"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2, "observedGeneration": 1,
      "conditions": [{"type": "HeadPodReady", "status": "True"}]}, "pending", False),  # generation 2 not seen yet
    ({"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2, "observedGeneration": 2,
      "conditions": [{"type": "HeadPodReady", "status": "True"}]}, "ready", True),
    # ReplicaFailure is transient (a later reconcile removes it) and state failed is not set by
    # KubeRay 1.4-1.7: findings, not the end
    ({"state": "failed"}, "pending", False),
    ({"conditions": [{"type": "ReplicaFailure", "status": "True", "message": "quota"}]}, "pending", False),
    ({"state": "suspended"}, "suspended", False),
])
def test_raycluster_phase(status: dict[str, Any], state: str, terminal: bool) -> None:
    cluster = obj("RayCluster", status)
    cluster["metadata"]["generation"] = 2
    p = phase_of(cluster, [])
    assert (p.state, p.terminal) == (state, terminal)


@pytest.mark.parametrize(("status", "spec", "state", "ok"), [
    ({}, {}, "pending", False),
    ({"active": 1}, {}, "running", False),
    ({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}, {}, "succeeded", True),
    ({"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}, {},
     "failed", False),
    ({}, {"suspend": True}, "suspended", False),
])
def test_job_phase(status: dict[str, Any], spec: dict[str, Any], state: str, ok: bool) -> None:
    p = phase_of(obj("Job", status, spec), [])
    assert (p.state, p.ok) == (state, ok)


def head_pod(state: dict[str, Any], last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "s-0", "labels": {"dockyard-k8s/fleet": "head"}},
            "status": {"containerStatuses": [{"name": "ray", "state": state, **({"lastState": last} if last else {})}]}}


def test_statefulset_phase_follows_the_head_pod() -> None:
    sts = obj("StatefulSet", {"readyReplicas": 1}, {"replicas": 2})
    assert phase_of(sts, []).state == "pending"
    sts["status"]["readyReplicas"] = 2
    assert phase_of(sts, [head_pod({"running": {}})]).state == "running"
    assert phase_of(sts, [head_pod({"terminated": {"exitCode": 0}})]).state == "succeeded"
    assert phase_of(sts, [head_pod({"running": {}}, {"terminated": {"exitCode": 0}})]).ok  # restarted after success
    failed = phase_of(sts, [head_pod({"terminated": {"exitCode": 1}})])
    assert failed.state == "failed" and failed.terminal


def test_a_rendered_statefulset_run_waits_on_its_head_pod_trainer_0() -> None:
    """The statefulset shape's head is pod 0 of the trainer StatefulSet, a trainer pod: the run
    is over when its entrypoint exits, and the trainer StatefulSet is what it waits on (not the
    first by name, inference)."""
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                          Layers(env=os.environ, sets=["launch.mode=statefulset", "kuberay.head.nodeSelector=null"]))
    sets = [o for o in bundle.objects if o["kind"] == "StatefulSet"]
    assert main_object(sets)["metadata"]["name"] == "grpo-swe-trainer"
    assert main_object(list(reversed(sets)))["metadata"]["name"] == "grpo-swe-trainer"
    trainer = {**sets[0], "status": {"readyReplicas": 2}}
    head = {"metadata": {"name": "grpo-swe-trainer-0", "labels": {"dockyard-k8s/fleet": "trainer"}},
            "status": {"containerStatuses": [{"name": "ray-worker", "state": {"running": {}},
                                              "lastState": {"terminated": {"exitCode": 0}}}]}}
    worker = {**head, "metadata": {**head["metadata"], "name": "grpo-swe-trainer-1"}}
    assert phase_of(trainer, [worker]).state == "running"  # a worker's restart is not the end
    done = phase_of(trainer, [worker, head])
    assert (done.state, done.summary) == ("succeeded", "head entrypoint exited with code 0")
    view = RunView("grpo-swe", {}, "StatefulSet")
    view.sync("StatefulSet", [{**o, "metadata": {**o["metadata"], "uid": o["metadata"]["name"]}} for o in sets])
    assert view.main()["metadata"]["name"] == "grpo-swe-trainer"


def test_unknown_kinds_use_conditions() -> None:
    assert phase_of(obj("MPIJob", {"conditions": [{"type": "Succeeded", "status": "True"}]}), []).ok
    assert phase_of(obj("MPIJob", {"conditions": [{"type": "Running", "status": "True"}]}), []).state == "running"
    assert phase_of(obj("MPIJob"), []).state == "pending"


def test_desired_pods_from_the_example_bundle() -> None:
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                          Layers(env=os.environ))
    assert desired_pods(bundle.objects) == {"sandbox": 16, "head": 1, "trainer": 2, "inference": 1, "submitter": 1}
    assert main_object(bundle.objects)["kind"] == "RayJob"
    bringup = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                           Layers(sets=["launch.mode=bringup"], env=os.environ))
    assert "submitter" not in desired_pods(bringup.objects)
    assert main_object(bringup.objects)["kind"] == "RayCluster"
    attach = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                          Layers(sets=["launch.mode=attach", "launch.attach.cluster=c"], env=os.environ))
    assert main_object(attach.objects) is None


def test_desired_pods_of_operator_free_shapes() -> None:
    def tmpl(fleet: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"dockyard-k8s/fleet": fleet}}}

    objects = [{"kind": "Job", "spec": {"template": tmpl("head")}},
               {"kind": "StatefulSet", "spec": {"replicas": 4, "template": tmpl("trainer")}},
               {"kind": "Deployment", "spec": {"template": tmpl("sandbox")}}]
    assert desired_pods(objects) == {"head": 1, "trainer": 4, "sandbox": 1}


def pod(name: str, fleet: str, phase: str, ready: bool = False, scheduled: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": name, "labels": {"dockyard-k8s/fleet": fleet}},
            "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": str(scheduled)},
                                                      {"type": "Ready", "status": str(ready)}]}}


def test_fleet_rows_count_each_state() -> None:
    pods = [pod("a", "trainer", "Running", True), pod("b", "trainer", "Pending", scheduled=False),
            pod("c", "submitter", "Succeeded"), pod("d", "sandbox", "Failed")]
    rows = {r.fleet: r for r in fleet_rows({"trainer": 2, "submitter": 1, "sandbox": 2}, pods)}
    assert rows["trainer"] == FleetRow("trainer", 2, 2, 1, 1, 0, 0)
    assert rows["submitter"] == FleetRow("submitter", 1, 1, 1, 0, 1, 0)
    assert rows["sandbox"] == FleetRow("sandbox", 2, 1, 1, 0, 0, 1)


def test_run_view_matches_events_to_pods_by_uid_and_reports_once() -> None:
    view = RunView("grpo-swe", {"trainer": 1}, "RayJob")
    view.sync("Pod", [pod("grpo-swe-abc-trainer-worker-0", "trainer", "Pending", scheduled=False)])
    ev_ok = {"metadata": {"uid": "e1"}, "type": "Warning", "reason": "FailedScheduling", "message": "Insufficient cpu",
             "involvedObject": {"kind": "Pod", "name": "grpo-swe-abc-trainer-worker-0",
                                "uid": "grpo-swe-abc-trainer-worker-0"}}
    ev_stale = {**ev_ok, "metadata": {"uid": "e2"}, "reason": "FailedMount",
                "involvedObject": {"kind": "Pod", "name": "grpo-swe-abc-trainer-worker-0", "uid": "old-pod"}}
    ev_other = {**ev_ok, "metadata": {"uid": "e3"}, "involvedObject": {"kind": "Pod", "name": "other-run-x"}}
    ev_object = {**ev_ok, "metadata": {"uid": "e4"}, "reason": "FailedCreate", "message": "exceeded quota: q",
                 "involvedObject": {"kind": "ReplicaSet", "name": "grpo-swe-sandbox-6f7"}}
    view.sync("Event", [ev_ok, ev_stale, ev_other, ev_object])
    found = view.new_findings()
    assert sorted((f.fleet, f.reason) for f in found) == [("sandbox", "ExceededQuota"),
                                                          ("trainer", "FailedScheduling")]
    assert view.new_findings() == []  # each pod + reason once


def test_run_view_changes_only_report_what_changed() -> None:
    view = RunView("r", {"trainer": 1}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Initializing"})])
    view.sync("Pod", [])
    first = view.changes()
    assert "RayJob x: jobDeploymentStatus Initializing, jobStatus -" in first
    assert "trainer: 0/1 scheduled, 0/1 ready" in first
    assert view.changes() == []
    view.update("Pod", "ADDED", pod("p", "trainer", "Running", True))
    assert view.changes() == ["trainer: 1/1 scheduled, 1/1 ready"]
    view.update("Pod", "DELETED", pod("p", "trainer", "Running", True))
    assert view.changes() == ["trainer: 0/1 scheduled, 0/1 ready"]


def rayjob(deployment: str, start: str = "", failed: int = 0) -> dict[str, Any]:
    status: dict[str, Any] = {"jobDeploymentStatus": deployment, "failed": failed}
    if start:
        status["startTime"] = start
    return obj("RayJob", status)


def test_the_pre_running_clock_stops_while_kueue_holds_the_job_and_starts_again_at_admission() -> None:
    """KubeRay checks preRunningDeadlineSeconds only in Initializing and Waiting, from the
    startTime it sets when the job leaves New: time suspended in Kueue's queue does not count."""
    from dockyard_k8s.live.progress import PreRunningClock, pre_running_state

    clock = PreRunningClock(0)
    clock.observe(pre_running_state(None, []), 0)  # not created yet: counting from the start
    assert clock.elapsed(1) == 1
    clock.observe(pre_running_state(rayjob("Initializing", "T1"), []), 1)
    assert clock.elapsed(2) == 2  # the first attempt seen: the clock goes on
    clock.observe(pre_running_state(rayjob("Suspended"), []), 2)
    assert clock.elapsed(500) is None  # queued: not late, however long
    clock.observe(pre_running_state(rayjob("New"), []), 500)
    clock.observe(pre_running_state(rayjob("Initializing", "T2"), []), 501)
    assert clock.elapsed(510) == 9  # from the new attempt's start, as KubeRay counts
    clock.observe(pre_running_state(rayjob("Running", "T2"), []), 510)
    assert clock.elapsed(900) is None


def test_the_pre_running_clock_starts_again_with_each_attempt() -> None:
    from dockyard_k8s.live.progress import PreRunningClock, pre_running_state

    clock = PreRunningClock(0)
    clock.observe(pre_running_state(rayjob("Initializing", "T1"), []), 0)
    clock.observe(pre_running_state(rayjob("Running", "T1"), []), 5)
    clock.observe(pre_running_state(rayjob("Retrying", "T1", failed=1), []), 60)
    assert clock.elapsed(70) is None  # KubeRay deletes the attempt's cluster: no deadline
    clock.observe(pre_running_state(rayjob("Initializing", "T2", failed=1), []), 70)
    assert clock.elapsed(75) == 5
    # a Retrying write never seen (the watch gave the next one): the new startTime says it
    clock.observe(pre_running_state(rayjob("Initializing", "T3", failed=2), []), 80)
    assert clock.elapsed(81) == 1


def test_the_pre_running_clock_of_a_batch_job_pauses_while_suspended() -> None:
    from dockyard_k8s.live.progress import PreRunningClock, pre_running_state

    clock = PreRunningClock(0)
    clock.observe(pre_running_state(obj("Job", spec={"suspend": True}), []), 1)
    assert clock.elapsed(100) is None
    clock.observe(pre_running_state(obj("Job"), []), 100)
    assert clock.elapsed(103) == 3
    clock.observe(pre_running_state(obj("Job", {"active": 1}), []), 104)
    assert clock.elapsed(200) is None


def failed_submitter(name: str, job: str = "job-uid") -> dict[str, Any]:
    p = pod(name, "submitter", "Failed")
    p["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "grpo-swe", "uid": job}]
    p["status"]["containerStatuses"] = [{"name": "ray-job-submitter", "state": {"terminated": {"exitCode": 1}}}]
    return p


@pytest.mark.parametrize(("limit", "failed", "fatal"), [
    (None, 1, False), (None, 2, False), (None, 3, True),  # KubeRay's default backoffLimit 2: three submissions
    (0, 1, True), (1, 1, False), (1, 2, True),
])
def test_a_failed_submitter_pod_is_fatal_only_once_its_job_has_no_retry_left(limit: int | None, failed: int,
                                                                            fatal: bool) -> None:
    spec = {"submitterConfig": {"backoffLimit": limit}} if limit is not None else {}
    view = RunView("grpo-swe", {"submitter": 1}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Running"}, spec)])
    pods = [failed_submitter(f"grpo-swe-{i}") for i in range(failed)]
    view.sync("Pod", [*pods, failed_submitter("grpo-swe-old", job="an-earlier-attempt")])
    found = {f.pod: f for f in view.findings() if f.reason == "Error"}
    last = found[f"grpo-swe-{failed - 1}"]
    assert last.fatal is fatal
    assert ("KubeRay's submitter Job retries it" in last.hint) is not fatal
    assert found["grpo-swe-old"].fatal is (limit == 0)  # counted within its own Job


def test_a_failed_pod_of_other_fleets_stays_fatal() -> None:
    view = RunView("grpo-swe", {"trainer": 1}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Running"})])
    trainer = failed_submitter("grpo-swe-trainer")
    trainer["metadata"]["labels"]["dockyard-k8s/fleet"] = "trainer"
    view.sync("Pod", [trainer])
    assert [f.fatal for f in view.findings()] == [True]


def scheduled_pod(name: str, scheduled_at: str, ready_at: str | None = None) -> dict[str, Any]:
    p = pod(name, "trainer", "Running", ready=ready_at is not None)
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at},
                                 {"type": "Ready", "status": "True" if ready_at else "False",
                                  "lastTransitionTime": ready_at or scheduled_at}]
    return p


def warning(uid: str, reason: str, pod_name: str, **times: Any) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "creationTimestamp": "2026-12-03T10:00:00Z"}, "type": "Warning",
            "reason": reason, "message": "0/8 nodes are available: 3 Insufficient nvidia.com/gpu.",
            "involvedObject": {"kind": "Pod", "name": pod_name, "uid": pod_name}, **times}


def test_an_event_older_than_the_pod_s_current_condition_is_history() -> None:
    """A gang refused while other pods held the GPUs, then scheduled and Ready: its
    FailedScheduling events are history, not a problem of the run any more."""
    view = RunView("grpo-swe", {"trainer": 2}, "RayJob")
    view.sync("Pod", [scheduled_pod("w0", "2026-12-03T10:00:30Z", "2026-12-03T10:00:40Z"),
                      scheduled_pod("w1", "2026-12-03T10:00:30Z")])
    view.sync("Event", [
        # the new events API: eventTime with microseconds, lastObservedTime of its series
        warning("e1", "FailedScheduling", "w0", eventTime="2026-12-03T10:00:01.123456Z",
                series={"count": 3, "lastObservedTime": "2026-12-03T10:00:30.500000Z"}),
        warning("e2", "FailedScheduling", "w1", lastTimestamp="2026-12-03T10:00:29Z"),
        warning("e3", "FailedMount", "w0", lastTimestamp="2026-12-03T10:00:35Z", message="secret x not found"),
        warning("e4", "FailedMount", "w1", lastTimestamp="2026-12-03T10:00:35Z", message="secret x not found"),
    ])
    assert [(f.pod, f.reason) for f in view.findings()] == [("w1", "FailedMount")]  # w1 is not Ready yet


def test_of_two_events_of_one_pod_and_reason_the_last_observed_is_said() -> None:
    """One notion of an event's time (progress.event_seen) for history and for which one is said:
    a series of the new events API last observed after a core/v1 event of the same reason."""
    view = RunView("grpo-swe", {"trainer": 1}, "RayJob")
    view.sync("Pod", [pod("w0", "trainer", "Pending")])
    view.sync("Event", [
        warning("e1", "FailedScheduling", "w0", eventTime="2026-12-03T10:00:01.000000Z", message="new",
                series={"count": 9, "lastObservedTime": "2026-12-03T10:05:00.000000Z"}),
        warning("e2", "FailedScheduling", "w0", lastTimestamp="2026-12-03T10:01:00Z", message="old"),
    ])
    assert [f.message for f in view.findings()] == ["new"]


def test_an_event_after_the_pod_s_condition_still_counts() -> None:
    view = RunView("grpo-swe", {"trainer": 1}, "RayJob")
    view.sync("Pod", [scheduled_pod("w0", "2026-12-03T10:00:30Z", "2026-12-03T10:00:40Z")])
    view.sync("Event", [warning("e1", "Unhealthy", "w0", lastTimestamp="2026-12-03T10:00:41Z",
                                message="Readiness probe failed")])
    assert [f.reason for f in view.findings()] == ["Unhealthy"]


def test_a_pod_waiting_for_the_run_s_terminating_pods_is_told_so_not_to_lower_its_request() -> None:
    """Seen on the real control plane: KubeRay's next attempt creates its cluster while the failed
    attempt's pods are still terminating (30 s of grace on a real cluster), and the scheduler refuses
    the new pods for resources those still hold. "lower kuberay.inference.cpu or add nodes" was false."""
    view = RunView("grpo-swe", {"inference": 1}, "RayJob")
    old = pod("grpo-swe-a-inference", "inference", "Running", ready=True)
    old["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z"
    old["spec"] = {"containers": [{"name": "ray-worker", "resources": {"requests": {"cpu": "8"}}}]}
    sandbox = pod("grpo-swe-sandbox-x", "sandbox", "Running", ready=True)  # terminating, holds no cpu request
    sandbox["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z"
    new = pod("grpo-swe-b-inference", "inference", "Pending")
    new["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "0/8 nodes are available: 3 Insufficient cpu, 5 node(s) didn't "
                                               "match Pod's node affinity/selector."}]
    view.sync("Pod", [old, sandbox, new])
    [found] = view.findings()
    assert (found.pod, found.reason, found.fatal) == ("grpo-swe-b-inference", "FailedScheduling", False)
    assert found.hint.startswith("1 pod of the run is still terminating and holds cpu until it is gone")
    view.sync("Pod", [sandbox, new])  # once they are gone, the capacity hint is the true one again
    assert "lower kuberay.inference.cpu" in view.findings()[0].hint
    new["status"]["conditions"][0]["message"] = "0/3 nodes are available: 3 Insufficient cpu."  # ends the sentence
    view.sync("Pod", [old, sandbox, new])
    assert view.findings()[0].hint.startswith("1 pod of the run is still terminating and holds cpu until")


def test_a_pod_of_a_run_kueue_admitted_is_told_the_quota_had_room_not_only_to_add_nodes() -> None:
    """Seen on the real control plane: Kueue re-admits a preempted run as soon as the preemptor's
    Workload is gone, while the preemptor's pods still have their grace period; the scheduler then
    refuses the run's pods for the cpu those hold. "lower kuberay.trainer.cpu or add nodes" alone
    was misleading: Kueue's quota had room, the nodes are being freed."""
    view = RunView("x", {"trainer": 1, "sandbox": 1}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Initializing"})])
    workload = {"kind": "Workload", "metadata": {"name": "rayjob-x-1", "ownerReferences": [
        {"kind": "RayJob", "name": "x", "uid": "RayJob"}]}, "spec": {"queueName": "q"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
                   "admission": {"clusterQueue": "team-a", "podSetAssignments": [
                       {"name": "trainer", "flavors": {"cpu": "default", "nvidia.com/gpu": "h100"}}]}}}
    view.sync("Workload", [workload])
    message = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption "
               "victims found for incoming pod.")
    trainer, sandbox = pod("x-trainer-0", "trainer", "Pending"), pod("x-sandbox-0", "sandbox", "Pending")
    for p in (trainer, sandbox):
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": message}]
    view.sync("Pod", [trainer, sandbox])
    hints = {f.fleet: f.hint for f in view.findings()}
    assert hints["trainer"] == (
        "Kueue admitted the run (ClusterQueue team-a has quota for its cpu), but no node has enough free yet: pods of "
        "a workload Kueue evicted or that just ended may still be terminating, and the scheduler places this pod once "
        "they are gone; if it stays Pending, the ClusterQueue's quota is more than the nodes hold: lower "
        "kuberay.trainer.cpu or the quota, or add nodes")
    # the sandbox is not in the Workload (Kueue's quota did not count it): the capacity hint stands
    assert hints["sandbox"].startswith("no node has cpu left for a sandbox pod: lower sandbox.resources.cpu")

    # no node could hold it even empty: admission does not change that
    trainer["status"]["conditions"][0]["message"] = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 "
                                                     "nodes are available: 3 Preemption is not helpful for scheduling.")
    view.sync("Pod", [trainer])
    assert view.findings()[0].hint.startswith("no node that a trainer pod may use has that much cpu")
    # not admitted (evicted): the capacity hint again
    trainer["status"]["conditions"][0]["message"] = message
    workload["status"]["conditions"] = [{"type": "Evicted", "status": "True", "reason": "Preempted"}]
    view.sync("Pod", [trainer])
    assert view.findings()[0].hint.startswith("no node has cpu left for a trainer pod: lower kuberay.trainer.cpu")


def test_a_workload_kueue_will_never_admit_from_this_namespace_is_a_fatal_finding() -> None:
    view = RunView("x", {"trainer": 1}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Suspended"})])
    message = "workload namespace doesn't match ClusterQueue selector"
    workload = {"kind": "Workload", "metadata": {"name": "rayjob-x-1", "namespace": "team", "ownerReferences": [
        {"kind": "RayJob", "name": "x", "uid": "RayJob"}]}, "spec": {"queueName": "q"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                   "message": message}]}}
    view.sync("Workload", [workload])
    assert view.findings() == []  # the RayJob is in namespace default, the Workload in team: not the run's
    workload["metadata"]["namespace"] = "default"
    view.sync("Workload", [workload])
    [found] = view.findings()
    assert (found.fleet, found.pod, found.reason, found.fatal) == ("Workload", "rayjob-x-1", "Inadmissible", True)
    assert found.hint.startswith("the ClusterQueue of infra.kueue.queueName does not select namespace default")
    workload["status"]["conditions"][0]["message"] = "couldn't assign flavors to pod set trainer: insufficient quota"
    view.sync("Workload", [workload])
    assert view.findings() == []  # waiting for quota is not fatal


def test_a_burst_of_pod_changes_is_said_once_per_fleet_and_every_state_of_the_main_object() -> None:
    queued: queue.Queue[Any] = queue.Queue()
    for i in range(16):  # kwok turns 16 sandbox pods Ready within milliseconds
        queued.put(("Pod", i))
    assert [ev for _, ev in _burst(queued)] == list(range(16))  # taken in whole, then the lines print
    assert _burst(queued) == []  # nothing came within the wait

    view = RunView("grpo-swe", {"sandbox": 2}, "RayJob")
    view.sync("RayJob", [obj("RayJob", {"jobDeploymentStatus": "Initializing"})])
    view.sync("Pod", [pod("a", "sandbox", "Running", ready=True), pod("b", "sandbox", "Pending")])
    assert view.changes(fleets=False) == ["RayJob x: jobDeploymentStatus Initializing, jobStatus -"]
    assert view.changes() == ["sandbox: 2/2 scheduled, 1/2 ready"]  # the fleets at the burst's end
