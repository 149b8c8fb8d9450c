"""A run queued with the real Kueue v0.19.2 (issue 21 §4): suspended while its ClusterQueue has too
little quota, admitted once the quota is raised; preempted by a run of a higher
WorkloadPriorityClass. What `run`, `status` and `runs` say is checked against the Workloads and
RayJobs the cluster holds.

Kueue's queue objects are cluster-scoped (but the LocalQueue): each test names them after its
namespace and deletes them at the end.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from e2e_helpers import RUN, SMALL, cli_process, fleet_counts, labelled, versions

from support.cli import printed

pytestmark = pytest.mark.e2e

QUEUE = "team"  # the LocalQueue of the test's namespace


def queued(*extra: str, run: str = RUN, priority: str | None = None) -> tuple[str, ...]:
    sets = ["--set", f"infra.kueue.queueName={QUEUE}", "--set", f"launch.name={run}"]
    if priority:
        sets += ["--set", f"infra.kueue.priorityClass={priority}"]
    return (*sets, *extra)


@pytest.fixture
def kueue(cluster: Any, ns: str) -> Iterator[Callable[[int], None]]:
    """``kueue(gpus)``: a ResourceFlavor, a ClusterQueue (``gpus`` nvidia.com/gpu, preemption of
    lower priorities within it) for the namespace, its LocalQueue ``team``, WorkloadPriorityClasses
    ``<ns>-low`` and ``<ns>-high``; ``kueue(gpus)`` again changes the quota."""
    if not cluster.ours:
        pytest.skip("creates cluster-scoped Kueue objects on the control plane")

    def make(gpus: int) -> None:
        cluster.apply(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": ns}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": ns},
             "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                      "preemption": {"withinClusterQueue": "LowerPriority"},
                      "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                          {"name": ns, "resources": [{"name": "cpu", "nominalQuota": 1000},
                                                     {"name": "memory", "nominalQuota": "10000Gi"},
                                                     {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": QUEUE, "namespace": ns}, "spec": {"clusterQueue": ns}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": f"{ns}-low"},
             "value": 10},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
             "metadata": {"name": f"{ns}-high"}, "value": 1000},
        )

    yield make
    cluster.kubectl("delete", "--wait=false", "--ignore-not-found", f"clusterqueue/{ns}", f"resourceflavor/{ns}",
                    f"workloadpriorityclass/{ns}-low", f"workloadpriorityclass/{ns}-high")


def workload(cluster: Any, ns: str, run: str = RUN) -> dict[str, Any] | None:
    """The Kueue Workload of the run's RayJob (owned by it)."""
    job = cluster.get("-n", ns, "rayjob", run)
    owned = [w for w in cluster.get("-n", ns, "workloads")["items"]
             if any(o["uid"] == job["metadata"]["uid"] for o in w["metadata"].get("ownerReferences", []))]
    return owned[-1] if owned else None


def condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next((c for c in (wl or {}).get("status", {}).get("conditions", []) if c["type"] == kind), {})


def runs_rows(e2e_cli: Any, ns: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in json.loads(e2e_cli("runs", "-n", ns, "-o", "json").out)}


def test_a_run_waits_suspended_for_quota_and_runs_once_it_is_raised(cluster: Any, e2e_cli: Any, example: Any,
                                                                   ns: str, kueue: Any) -> None:
    kueue(1)  # the run asks for 2 GPUs
    assert e2e_cli("run", *example(*queued("--detach"))).code == 0
    wl = cluster.wait("the Workload pending on quota", lambda: (w := workload(cluster, ns)) and "insufficient quota"
                      in condition(w, "QuotaReserved").get("message", "") and w)
    assert condition(wl, "QuotaReserved")["status"] == "False" and condition(wl, "Admitted").get("status") != "True"
    job = cluster.wait("the RayJob suspended", lambda: (j := cluster.get("-n", ns, "rayjob", RUN)).get(
        "status", {}).get("jobDeploymentStatus") == "Suspended" and j)
    assert job["spec"]["suspend"] is True

    cluster.wait("the LocalQueue counting it", lambda: cluster.get("-n", ns, "localqueue", QUEUE).get(
        "status", {}).get("pendingWorkloads") == 1)
    text = e2e_cli("status", RUN, "-n", ns).out
    assert "RayJob grpo-swe: jobDeploymentStatus Suspended, jobStatus - (waiting to be admitted, e.g. by Kueue)" \
        in text, text
    assert f"  LocalQueue {QUEUE}: 1 pending, 0 admitted Workload(s) (no position" in text, text  # no visibility API
    assert f"Workload {wl['metadata']['name']}: queued in LocalQueue {QUEUE}, not admitted (Pending): " in text
    assert f"insufficient quota for nvidia.com/gpu in flavor {ns}" in text
    doc = json.loads(e2e_cli("status", RUN, "-n", ns, "-o", "json").out)
    assert doc["main"]["state"] == "suspended"
    pods = cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN}")["items"]
    assert set(fleet_counts(pods)) == {"sandbox"}  # no GPU pod before admission
    row = runs_rows(e2e_cli, ns)[RUN]
    assert (row["state"], row["queue"]) == ("suspended", "pending (Pending)")

    # `run` again follows it: queued in Kueue's words, then admitted once the quota is raised
    raiser = threading.Thread(target=lambda: (cluster.wait("`run` saying it is queued", lambda: "not admitted (Pending)"
                                                           in printed(), timeout=60), kueue(8)), daemon=True)
    raiser.start()
    r = e2e_cli("run", *example(*queued("--timeout", "90")))
    raiser.join(10)
    assert r.code == 0, r.out + r.err
    assert f"unchanged  RayJob {ns}/{RUN}" in r.out  # the re-run wrote nothing: Kueue's admission did
    lines = r.out.splitlines()
    pending = lines.index(next(x for x in lines if "not admitted (Pending)" in x))
    admitted = lines.index(next(x for x in lines if f"Workload {wl['metadata']['name']}: admitted in ClusterQueue "
                                f"{ns}; flavors head {ns}" in x))
    assert pending < admitted < lines.index("✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED")
    assert f"insufficient quota for nvidia.com/gpu in flavor {ns}" in lines[pending]
    wl = workload(cluster, ns)
    assert condition(wl, "Admitted")["status"] == "True" and condition(wl, "Finished")["status"] == "True"
    assert wl["status"]["admission"]["clusterQueue"] == ns
    row = runs_rows(e2e_cli, ns)[RUN]
    assert (row["state"], row["queue"]) == ("succeeded", "finished")

    # Kueue wrote its labels into the worker groups when it admitted the job: a re-run keeps them
    groups = cluster.get("-n", ns, "rayjob", RUN)["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert all(g["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] == g["groupName"] for g in groups)
    before = versions(labelled(cluster, ns))
    again = e2e_cli("run", *example(*queued("--timeout", "30")))
    assert again.code == 0, again.out + again.err
    assert f"RayJob {ns}/{RUN} already finished (jobDeploymentStatus Complete, jobStatus SUCCEEDED)" in again.out
    assert f"unchanged  RayJob {ns}/{RUN}" in again.out
    assert versions(labelled(cluster, ns)) == before


def test_a_missing_workload_priority_class_or_local_queue_stops_the_run_before_anything_is_applied(
        cluster: Any, e2e_cli: Any, example: Any, ns: str, kueue: Any) -> None:
    """Kueue v0.19 makes no Workload for a job whose WorkloadPriorityClass is missing (its job
    reconciler errors, in its own log only): the RayJob stayed Suspended, `run` said "waiting to be
    admitted" until its timeout. A LocalQueue that is not there keeps the Workload Inadmissible."""
    kueue(16)
    r = e2e_cli("run", *example(*queued("--timeout", "20", priority="nope")))
    assert r.code == 1, r.out + r.err
    assert "WorkloadPriorityClass nope, used as label kueue.x-k8s.io/priority-class; create: " in r.err
    assert "nothing was applied" in r.err
    assert labelled(cluster, ns) == {}
    other = e2e_cli("run", *example("--set", "infra.kueue.queueName=elsewhere", "--timeout", "20"))
    assert other.code == 1 and f"LocalQueue {ns}/elsewhere, used as label kueue.x-k8s.io/queue-name" in other.err
    assert labelled(cluster, ns) == {}
    doctor = e2e_cli("doctor", *example(*queued(priority="nope")))
    assert doctor.code == 1, doctor.out
    assert "✖ WorkloadPriorityClass  missing: nope (label kueue.x-k8s.io/priority-class): Kueue makes no Workload" \
        in doctor.out


def test_a_queued_run_is_not_said_to_have_outlived_kuberay_s_pre_running_deadline(cluster: Any, e2e_cli: Any,
                                                                                  example: Any, ns: str,
                                                                                  kueue: Any) -> None:
    """KubeRay checks preRunningDeadlineSeconds only while Initializing or Waiting, and its clock
    starts again when Kueue admits the job (initRayJobStatusIfNeed): a suspended RayJob is not
    late, whatever the time it waits in the queue."""
    kueue(1)
    r = e2e_cli("run", *example(*queued("--pre-running-deadline", "1", "--timeout", "9")))
    job = cluster.get("-n", ns, "rayjob", RUN)
    assert job["status"]["jobDeploymentStatus"] == "Suspended"  # KubeRay did not fail it: not late
    assert "KubeRay did not end it" not in r.out, r.out
    assert "✖ timeout: stopped following after 9s" in r.out


def test_a_run_kueue_admitted_beyond_what_the_nodes_hold_is_told_so(cluster: Any, e2e_cli: Any, example: Any,
                                                                    ns: str, kueue: Any) -> None:
    """A ClusterQueue with more quota than the nodes hold (40 GPUs; 3 p4de nodes of 8): Kueue admits
    4 pods of 8 GPUs and the real scheduler refuses one. The hint says that Kueue's quota had room
    and the nodes do not (pods still terminating, or a quota larger than the nodes), not only
    "free GPUs" (what a run without Kueue is told)."""
    kueue(40)
    r = e2e_cli("run", *example(*queued("--timeout", "30"), sets=("kuberay.trainer.replicas=3", "sandbox.replicas=1")))
    assert r.code == 1, r.out + r.err
    wl = workload(cluster, ns)
    assert condition(wl, "Admitted")["status"] == "True"
    assert "FailedScheduling: 0/8 nodes are available" in r.out and "Insufficient nvidia.com/gpu" in r.out
    # the pod left over is short of all three on the p4de nodes the others fill
    assert (f"hint: Kueue admitted the run (ClusterQueue {ns} has quota for its cpu, memory, nvidia.com/gpu), but no "
            "node has enough free yet: pods of a workload Kueue evicted or that just ended may still be "
            "terminating") in r.out, r.out
    assert "the ClusterQueue's quota is more than the nodes hold: lower kuberay." in r.out
    assert "no node has enough free GPUs for a" not in r.out


def test_a_queue_whose_cluster_queue_does_not_select_the_namespace_is_fatal_not_a_wait(
        cluster: Any, e2e_cli: Any, example: Any, ns: str, kueue: Any) -> None:
    """A LocalQueue pointing at a ClusterQueue whose namespaceSelector leaves the namespace out:
    Kueue v0.19.2 keeps the Workload pending ("workload namespace doesn't match ClusterQueue
    selector") forever. `run --fail-fast` ends on it with the fix, rather than wait for its timeout."""
    kueue(8)
    other = f"{ns}-other"
    cluster.apply(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": other},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "elsewhere"}},
                  "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                      {"name": ns, "resources": [{"name": "cpu", "nominalQuota": 1000},
                                                 {"name": "memory", "nominalQuota": "10000Gi"},
                                                 {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "other", "namespace": ns},
         "spec": {"clusterQueue": other}})
    try:
        r = e2e_cli("run", *example("--set", "infra.kueue.queueName=other", "--fail-fast", "--timeout", "120"))
        wl = workload(cluster, ns)  # before the ClusterQueue goes: Kueue then says it doesn't exist
    finally:
        cluster.kubectl("delete", "--wait=false", "--ignore-not-found", f"clusterqueue/{other}")
    assert r.code == 1, r.out + r.err
    assert "workload namespace doesn't match ClusterQueue selector" in condition(wl, "QuotaReserved")["message"]
    assert f"✖ Workload/{wl['metadata']['name']}: Inadmissible: workload namespace doesn't match ClusterQueue " \
           "selector" in r.out, r.out
    assert f"does not select namespace {ns} (its namespaceSelector)" in r.out
    assert f"✖ fatal: Workload/{wl['metadata']['name']}: Inadmissible (--fail-fast)" in r.out


def test_a_higher_priority_run_preempts_a_lower_one(cluster: Any, e2e_cli: Any, example: Any, ns: str,
                                                   kueue: Any) -> None:
    kueue(2)  # room for one run of 2 GPUs
    for run in ("low", "high"):
        cluster.script(run, {"steps": [["RUNNING", 600]]}, namespace=ns)
    assert e2e_cli("run", *example(*queued("--detach", run="low", priority=f"{ns}-low"))).code == 0
    cluster.wait("low running", lambda: cluster.get("-n", ns, "rayjob", "low").get("status", {}).get("jobStatus") ==
                 "RUNNING")
    low = workload(cluster, ns, "low")
    assert condition(low, "Admitted")["status"] == "True" and low["spec"]["priority"] == 10
    rows = runs_rows(e2e_cli, ns)
    assert (rows["low"]["state"], rows["low"]["queue"]) == ("running", "admitted")
    # a re-run of the admitted run writes nothing: it does not suspend again what Kueue resumed
    before = versions(labelled(cluster, ns, "low"))
    again = e2e_cli("run", *example(*queued("--detach", run="low", priority=f"{ns}-low")))
    assert again.code == 0 and f"unchanged  RayJob {ns}/low" in again.out, again.out + again.err
    assert versions(labelled(cluster, ns, "low")) == before
    assert not cluster.get("-n", ns, "rayjob", "low")["spec"].get("suspend")  # false is omitted

    assert e2e_cli("run", *example(*queued("--detach", run="high", priority=f"{ns}-high"))).code == 0
    low = cluster.wait("low preempted", lambda: condition(w := workload(cluster, ns, "low"), "Preempted").get(
        "status") == "True" and condition(w, "Admitted").get("status") != "True" and w)
    evicted, preempted = condition(low, "Evicted"), condition(low, "Preempted")
    assert (evicted["status"], evicted["reason"], preempted["reason"]) == ("True", "Preempted", "InClusterQueue")
    assert "due to prioritization in the ClusterQueue" in preempted["message"]
    cluster.wait("high running", lambda: cluster.get("-n", ns, "rayjob", "high").get("status", {}).get("jobStatus") ==
                 "RUNNING")
    assert condition(workload(cluster, ns, "high"), "Admitted")["status"] == "True"
    low_job = cluster.get("-n", ns, "rayjob", "low")
    assert low_job["spec"]["suspend"] is True and low_job["status"]["jobDeploymentStatus"] == "Suspended"

    text = e2e_cli("status", "low", "-n", ns).out
    assert "RayJob low: jobDeploymentStatus Suspended" in text
    assert f"Workload {low['metadata']['name']}: evicted (Preempted, InClusterQueue): {preempted['message']}" in text
    doc = json.loads(e2e_cli("status", "low", "-n", ns, "-o", "json").out)
    assert {f["fleet"] for f in doc["fleets"] if f["pods"]} == {"sandbox"}  # its GPU pods are gone
    rows = runs_rows(e2e_cli, ns)
    assert (rows["high"]["state"], rows["high"]["queue"]) == ("running", "admitted")
    assert (rows["low"]["state"], rows["low"]["queue"]) == ("suspended", "evicted (Preempted, InClusterQueue)")


def test_run_follows_its_run_through_a_preemption_and_the_re_admission(cluster: Any, e2e_cli: Any, example: Any,
                                                                        ns: str, kueue: Any) -> None:
    """`run` (not detached) follows the low-priority run while a higher-priority run preempts it
    (Kueue v0.19.2 evicts its Workload, KubeRay suspends the RayJob and deletes its cluster): it
    says so in Kueue's words and keeps following, no ✖, until Kueue admits it again once the high
    run is taken down; KubeRay then starts it on a new cluster (a new Ray job) and `run` ends ✔, 0.
    A second `run` of the preempted run, meanwhile, writes nothing (the spec Kueue suspended stays
    suspended) and stops at its timeout with 1.

    The pods are sized so that the fleet holds both runs at once (only the queue's quota makes them
    compete): Kueue admits low again as soon as high's Workload goes, while high's pods still have
    their grace period, and full-size pods would meet the scheduler's FailedScheduling for the cpu
    those terminating pods (another run's) hold until they are gone."""
    kueue(2)  # room for one run of 2 GPUs
    sets = (*SMALL, "kuberay.trainer.cpu=8", "kuberay.trainer.memory=64Gi", "kuberay.inference.cpu=8",
            "kuberay.inference.memory=64Gi")
    cluster.script("low", {"steps": [["RUNNING", 600]]}, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]]},
                   namespace=ns)
    cluster.script("high", {"steps": [["RUNNING", 600]]}, namespace=ns)
    low_args = example(*queued("--timeout", "400", run="low", priority=f"{ns}-low"), sets=sets)
    started = "RayJob low: jobDeploymentStatus Running, jobStatus RUNNING"
    during: dict[str, Any] = {}

    def preempt_then_free() -> None:
        try:
            cluster.wait("`run` saying low runs", lambda: started in printed(), timeout=180)
            during["high"] = cli_process("run", *example(*queued("--detach", run="high", priority=f"{ns}-high"),
                                                         sets=sets))
            cluster.wait("`run` saying low is preempted", lambda: all(
                x in printed().split(started, 1)[1] for x in ("RayJob low: jobDeploymentStatus Suspended,",
                                                              "evicted (Preempted, InClusterQueue)")), timeout=180)
            during["workload"] = workload(cluster, ns, "low")
            during["job"] = cluster.get("-n", ns, "rayjob", "low")
            during["printed"] = printed()
            during["status"] = cli_process("status", "low", "-n", ns)
            during["status_json"] = cli_process("status", "low", "-n", ns, "-o", "json")
            during["rerun"] = cli_process("run", *example(*queued("--timeout", "5", run="low", priority=f"{ns}-low"),
                                                          sets=sets))
            during["job_after_rerun"] = cluster.get("-n", ns, "rayjob", "low")
            during["down"] = cli_process("down", "high", "-n", ns)
        except BaseException as e:  # end the followed run rather than let it wait for its timeout
            during["error"] = e
            cluster.kubectl("-n", ns, "delete", "rayjob", "low", "high", "--wait=false", "--ignore-not-found")

    helper = threading.Thread(target=preempt_then_free, daemon=True)
    helper.start()
    r = e2e_cli("run", *low_args)
    helper.join(120)
    assert "error" not in during, during.get("error")
    assert during["high"].returncode == 0, during["high"].stdout + during["high"].stderr

    # what `run` said while low was preempted, and Kueue and KubeRay agree
    wl, job = during["workload"], during["job"]
    evicted, preempted = condition(wl, "Evicted"), condition(wl, "Preempted")
    assert (evicted["status"], evicted["reason"], preempted["reason"]) == ("True", "Preempted", "InClusterQueue")
    assert (job["spec"]["suspend"], job["status"]["jobDeploymentStatus"]) == (True, "Suspended")
    said = during["printed"]
    assert f"Workload {wl['metadata']['name']}: evicted (Preempted, InClusterQueue): {preempted['message']}" in said
    assert "(waiting to be admitted, e.g. by Kueue)" in said
    assert "✖" not in said, said  # a preemption is not a failure: no finding, no end

    # `status` at that point
    assert during["status"].returncode == 0, during["status"].stderr
    text = during["status"].stdout
    assert "RayJob low: jobDeploymentStatus Suspended" in text, text
    assert f"Workload {wl['metadata']['name']}: evicted (Preempted, InClusterQueue)" in text, text
    doc = json.loads(during["status_json"].stdout)
    assert doc["main"]["state"] == "suspended", doc["main"]
    assert (doc["kueue"]["state"], doc["kueue"]["reason"]) == ("evicted", "Preempted, InClusterQueue")
    # the run's objects: its own Workload, not the high run's beside it in the namespace
    assert [o["name"] for o in doc["objects"] if o["kind"] == "Workload"] == [wl["metadata"]["name"]], doc["objects"]

    # a second `run` of the preempted run: nothing written, Kueue's words, then its timeout
    rerun = during["rerun"]
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert f"unchanged  RayJob {ns}/low" in rerun.stdout, rerun.stdout
    assert f"Workload {wl['metadata']['name']}: evicted (Preempted, InClusterQueue)" in rerun.stdout, rerun.stdout
    assert "✖ timeout: stopped following after 5s; the run keeps going" in rerun.stdout
    assert during["job_after_rerun"]["spec"]["suspend"] is True  # the re-run did not resume what Kueue suspended
    assert during["down"].returncode == 0, during["down"].stdout + during["down"].stderr

    # re-admitted once high is gone: a new cluster, a new Ray job, the run ends well
    assert r.code == 0, r.out + r.err
    lines = r.out.splitlines()

    def first(text: str, after: int = 0) -> int:
        return next(i for i, x in enumerate(lines) if i >= after and text in x)

    running = first(started)
    evicted_at = first("evicted (Preempted, InClusterQueue)", running)
    suspended = first("RayJob low: jobDeploymentStatus Suspended", running)
    admitted = first(f"Workload {wl['metadata']['name']}: admitted in ClusterQueue {ns}", max(evicted_at, suspended))
    done = lines.index("✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED")
    assert running < min(evicted_at, suspended) and admitted < done, r.out
    assert not [x for x in lines if "✖" in x], r.out
    live = cluster.get("-n", ns, "rayjob", "low")["status"]
    assert (live["jobDeploymentStatus"], live["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert not live.get("failed")  # a preemption is no failed attempt
    jobs = [j for j in cluster.ray_jobs() if j["namespace"] == ns and j["cluster"].startswith("low-")]
    assert len({j["cluster"] for j in jobs}) == 2 and jobs[-1]["status"] == "SUCCEEDED", jobs
    wl = workload(cluster, ns, "low")
    assert condition(wl, "Admitted")["status"] == "True" and condition(wl, "Finished")["status"] == "True"
    assert condition(wl, "Evicted")["status"] == "False"  # Kueue resets it when it admits again

    text = e2e_cli("status", "low", "-n", ns).out
    assert "RayJob low: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in text and "evicted" not in text, text
    rows = runs_rows(e2e_cli, ns)
    assert (rows["low"]["state"], rows["low"]["queue"]) == ("succeeded", "finished")
    assert "high" not in rows
