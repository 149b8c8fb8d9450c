"""Reading a Kueue Workload (live/kueue.py): states, Kueue's words, the visibility API request."""

from __future__ import annotations

from typing import Any

import httpx2
from live_helpers import Recorder

from dockyard_k8s.live.kueue import queue_position, workload_of, workload_state


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def wl(*conds: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "rayjob-run-1a2b3", "namespace": "team",
                         "ownerReferences": [{"kind": "RayJob", "name": "run", "uid": "u1", "controller": True}]},
            "spec": {"queueName": "q"}, "status": {"conditions": list(conds), **status}}


ADMISSION = {"clusterQueue": "team-a", "podSetAssignments": [
    {"name": "head", "flavors": {"cpu": "default", "memory": "default"}},
    {"name": "trainer", "flavors": {"cpu": "h100", "nvidia.com/gpu": "h100"}}]}


def test_pending_in_kueues_words():
    state = workload_state(wl(cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set trainer: "
                                                                        "insufficient unused quota for nvidia.com/gpu "
                                                                        "in flavor h100, 8 more needed")))
    assert state.state == "pending"
    assert state.summary() == ("Workload rayjob-run-1a2b3: queued in LocalQueue q, not admitted (Pending): couldn't "
                               "assign flavors to pod set trainer: insufficient unused quota for nvidia.com/gpu in "
                               "flavor h100, 8 more needed")
    assert state.lines((3, 7))[1] == "  position 3 in LocalQueue q, 7 in its ClusterQueue (Kueue's visibility API)"
    assert state.lines(None, (4, 2))[1] == ("  LocalQueue q: 4 pending, 2 admitted Workload(s) (no position: Kueue's "
                                           "visibility API did not answer)")


def test_quota_reserved_waits_for_its_admission_checks():
    state = workload_state(wl(cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue team-a"),
                              cond("Admitted", "False", "UnsatisfiedAdmissionChecks", "..."), admission=ADMISSION,
                              admissionChecks=[{"name": "prov", "state": "Pending",
                                                "message": "waiting for capacity"}]))
    assert state.state == "reserved"
    assert state.summary().startswith("Workload rayjob-run-1a2b3: quota reserved in ClusterQueue team-a, waiting for "
                                      "admission checks")
    assert "  admission check prov: Pending: waiting for capacity" in state.lines()


def test_admitted_with_flavors_per_pod_set():
    state = workload_state(wl(cond("QuotaReserved", "True"), cond("Admitted", "True", "Admitted", "The workload is "
                                                                                                  "admitted"),
                              admission=ADMISSION))
    assert state.summary() == ("Workload rayjob-run-1a2b3: admitted in ClusterQueue team-a; flavors head default, "
                               "trainer h100")


def test_evicted_and_preempted_say_why_and_the_requeue():
    text = "Preempted to accommodate a workload (UID: x, JobUID: y) due to prioritization in the ClusterQueue"
    state = workload_state(wl(cond("Evicted", "True", "Preempted", text), cond("Preempted", "True", "InClusterQueue",
                                                                               text),
                              cond("QuotaReserved", "False", "Pending", text), cond("Admitted", "False"),
                              requeueState={"count": 2, "requeueAt": "2026-01-01T00:05:00Z"}))
    assert state.state == "evicted" and state.reason == "Preempted, InClusterQueue"
    assert state.summary() == f"Workload rayjob-run-1a2b3: evicted (Preempted, InClusterQueue): {text}"
    assert "  requeued 2 time(s), next at 2026-01-01T00:05:00Z" in state.lines()


def test_finished_wins_and_multikueue_names_the_worker_cluster():
    done = workload_state(wl(cond("Finished", "True", "Succeeded", "Job finished successfully"),
                             cond("Admitted", "True")))
    assert done.state == "finished" and done.summary().endswith("finished (Succeeded): Job finished successfully")
    remote = workload_state(wl(cond("Admitted", "True"), admission=ADMISSION, clusterName="worker-2"))
    lines = remote.lines()
    assert "  dispatched by MultiKueue to worker cluster worker-2: the pods run there, not on this cluster" in lines
    assert any("--context worker-2" in line for line in lines)


def test_the_workload_of_a_job_is_found_by_owner_reference():
    mine, other = wl(), wl()
    other["metadata"] = {**other["metadata"], "name": "rayjob-other-9z8y7",
                         "ownerReferences": [{"kind": "RayJob", "name": "other", "uid": "u2"}]}
    job = {"kind": "RayJob", "metadata": {"name": "run", "namespace": "team"}}
    assert workload_of([other, mine], job) is mine
    assert workload_of([other], job) is None
    job["metadata"]["uid"] = "not-u1"  # a RayJob of the same name, deleted and re-created
    assert workload_of([mine], job) is None


def test_queue_position_asks_the_visibility_api(make_client: Any) -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"items": [
            {"metadata": {"name": "someone"}, "positionInLocalQueue": 0, "positionInClusterQueue": 3},
            {"metadata": {"name": "rayjob-run-1a2b3"}, "positionInLocalQueue": 1, "positionInClusterQueue": 5}]})

    recorder = Recorder(answer)
    client = make_client(recorder)
    assert queue_position(client, "team", "q", "rayjob-run-1a2b3") == (2, 6)
    (req,) = recorder.requests
    assert (req.method, req.url.path) == (
        "GET", "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team/localqueues/q/pendingworkloads")
    assert queue_position(client, "team", "q", "gone") is None


def test_no_visibility_api_is_no_position(make_client: Any) -> None:
    client = make_client(Recorder(lambda r: httpx2.Response(404, json={"kind": "Status", "code": 404})))
    assert queue_position(client, "team", "q", "rayjob-run-1a2b3") is None
