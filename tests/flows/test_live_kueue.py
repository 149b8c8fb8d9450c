"""`run` / `status` / `logs` / `doctor` / `plan --live` of a run queued with Kueue, against the fake
API server holding Kueue's CRDs and queue objects, and the Workload as Kueue writes it. What
Kueue does over time (suspension, admission once there is quota, preemption, a re-run of an
admitted run) is tested on the real Kueue: tests/e2e/test_kueue_live.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakekube import FakeKube
from states import (
    KUEUE,
    NS,
    RUN,
    busy_workload,
    cluster_queue,
    condition,
    flavor,
    install_kueue,
    local_queue,
    set_job,
    workload_of,
)

from support.paths import EXAMPLES

KUEUE_ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe_kueue.infra.yaml")]
GPU = "nvidia.com/gpu"
P4DE = {"node.kubernetes.io/instance-type": "p4de.24xlarge"}


def queue_objects(gpus: int = 24, checks: list[str] | None = None) -> list[dict[str, Any]]:
    """rl-research's queue: a CPU flavor first, then the A100 nodes the example selects."""
    return [flavor("default-flavor", {"node-role": "cpu"}), flavor("a100", P4DE),
            cluster_queue("rl-research", {"default-flavor": {"cpu": 64, "memory": "512Gi", GPU: 0},
                                          "a100": {"cpu": 600, "memory": "4Ti", GPU: gpus}}, checks=checks),
            local_queue("rl-research", NS, "rl-research"),
            {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "research-normal"},
             "value": 100}]


@pytest.fixture
def kueue(fake: FakeKube) -> Iterator[None]:
    """Kueue installed, with rl-research's queue."""
    install_kueue(fake)
    for obj in queue_objects():
        fake.put(obj)
    yield


def test_the_team_queue_objects_are_render_only(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *KUEUE_ARGS, "--detach")
    assert r.code == 0, r.err
    for kind in ("ResourceFlavor", "Topology", "ClusterQueue", "LocalQueue"):
        assert f"{kind} " in r.out and "skipped (render-only" in r.out
    assert not any("kueue.x-k8s.io" in q.path for q in fake.requests if q.method != "GET")  # read, never written
    job = fake.get("ray.io/v1", "RayJob", NS, RUN)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "rl-research"


def test_a_render_only_local_queue_must_exist_before_run(cli: Any, fake: FakeKube) -> None:
    """The example renders its team's LocalQueue for an admin (queueObjects.render); `run` does not
    apply it, so without it on the cluster the Workload could never be admitted: refused, nothing applied."""
    install_kueue(fake)
    for obj in queue_objects():
        if obj["kind"] != "LocalQueue":
            fake.put(obj)
    r = cli("run", *KUEUE_ARGS, "--detach")
    assert r.code == 1, r.out + r.err
    assert f"  LocalQueue {NS}/rl-research, used as label kueue.x-k8s.io/queue-name; create: ask the platform admin " \
           "for it (infra.kueue.queueObjects.render renders it for them to apply)" in r.err
    assert not [q for q in fake.requests if q.method == "PATCH"]


def test_multikueue_status_and_logs_say_where_the_pods_run(cli: Any, fake: FakeKube) -> None:
    install_kueue(fake)
    fake.put({"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": "dispatch"},
              "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}})
    for obj in queue_objects(checks=["dispatch"]):
        fake.put(obj)
    assert cli("run", *KUEUE_ARGS, "--detach").code == 0
    # admitted by the manager cluster's Kueue, dispatched to worker cluster gpu-west (Kueue v0.19.2
    # workload_types.go: admissionChecks, clusterName)
    workload_of(fake, fake.get("ray.io/v1", "RayJob", NS, RUN), {
        "admission": {"clusterQueue": "rl-research", "podSetAssignments": [
            {"name": "head", "count": 1, "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "8"}}]},
        "admissionChecks": [{"name": "dispatch", "state": "Ready", "message": 'The workload was admitted on "gpu-west"',
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "clusterName": "gpu-west",
        "conditions": [
            condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue rl-research"),
            condition("Admitted", "True", "Admitted", "The workload is admitted")]})
    out = cli("status", *KUEUE_ARGS).out
    assert "admission check dispatch: Ready: The workload was admitted on \"gpu-west\"" in out
    assert "dispatched by MultiKueue to worker cluster gpu-west: the pods run there, not on this cluster" in out
    assert "--context gpu-west" in out
    r = cli("logs", *KUEUE_ARGS)
    assert r.code == 1
    assert "error: no head pod in the run (no pods at all yet)" in r.err
    assert "hint: Workload rayjob-grpo-swe-" in r.err and ": admitted in ClusterQueue rl-research" in r.err
    assert "dispatched by MultiKueue to worker cluster gpu-west: the pods run there" in r.err
    assert "follow them there: --context gpu-west" in r.err


def nodes(fake: FakeKube, gpu_nodes: int = 3) -> None:
    for i in range(gpu_nodes):
        fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gpu-{i}", "labels": P4DE},
                  "status": {"allocatable": {GPU: "8", "cpu": "96", "memory": "1100Gi", "pods": "110"},
                             "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(2):
        fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"cpu-{i}", "labels": {
            "node-role": "cpu"}}, "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "ephemeral-storage":
                                                             "500Gi", "pods": "110"}}})


def test_plan_live_reads_kueue_from_the_cluster(cli: Any, fake: FakeKube, kueue: None) -> None:
    nodes(fake)
    fake.put(busy_workload("vision-job", "default", "rl-research", {GPU: ("a100", 16)}))
    r = cli("plan", *KUEUE_ARGS, "--live", "--set", "infra.kueue.topology.mode=none",
            "--set", "infra.kueue.topology.together=false")
    assert r.code == 1, r.out + r.err
    assert r.out.startswith("kueue: live cluster fake; usage: 1 admitted Workload(s)")
    assert "✖ RayJob rl-research/grpo-swe waits in the queue (WaitingForQuota)" in r.out
    fake.remove(KUEUE, "Workload", "default", "vision-job")
    r = cli("plan", *KUEUE_ARGS, "--live", "--set", "infra.kueue.topology.mode=none",
            "--set", "infra.kueue.topology.together=false")
    assert "✔ RayJob rl-research/grpo-swe admitted" in r.out


def test_plan_live_of_a_queued_run_without_kueue_is_bad_input(cli: Any, fake: FakeKube) -> None:
    nodes(fake)
    r = cli("plan", *KUEUE_ARGS, "--live")
    assert r.code == 2
    assert "Kueue is not installed, and without its webhook the job would run unqueued" in r.err


def doctor_lines(cli: Any, *extra: str) -> dict[str, str]:
    r = cli("doctor", *KUEUE_ARGS, "--set", "infra.kueue.topology.mode=none", "--set",
            "infra.kueue.topology.together=false", *extra)
    return {line[2:].split()[0] + (" " + line[2:].split()[1] if line[2:].startswith("Kueue quota") else ""): line
            for line in r.out.splitlines() if line[:2] in ("✔ ", "✖ ", "! ")}


def test_doctor_checks_the_queue_chain_coverage_and_fit(cli: Any, fake: FakeKube, kueue: None) -> None:
    nodes(fake)
    found = doctor_lines(cli)
    assert found["Kueue"].startswith("✔ Kueue") and "installed" in found["Kueue"]
    assert "rl-research/rl-research -> ClusterQueue rl-research" in found["LocalQueue"]
    assert "covers cpu, memory, nvidia.com/gpu" in found["ClusterQueue"]
    assert found["Kueue quota"].startswith("✔") and "admitted now in flavors a100, default-flavor" in found[
        "Kueue quota"]
    found = doctor_lines(cli, "--set", "kuberay.trainer.extendedResources.vpc\\.amazonaws\\.com/efa=4")
    assert found["ClusterQueue"].startswith("✖") and "covers no vpc.amazonaws.com/efa" in found["ClusterQueue"]
    found = doctor_lines(cli, "--set", "kuberay.trainer.replicas=4")
    assert found["Kueue quota"].startswith("✖") and "can never be admitted (ExceedsMaxQuota)" in found["Kueue quota"]
    fake.put(busy_workload("vision-job", "default", "rl-research", {GPU: ("a100", 16)}))
    found = doctor_lines(cli)
    assert found["Kueue quota"].startswith("!") and "must wait now (WaitingForQuota)" in found["Kueue quota"]


def test_doctor_s_fix_for_a_cluster_queue_that_does_not_select_the_namespace_is_not_more_quota(
        cli: Any, fake: FakeKube, kueue: None) -> None:
    nodes(fake)
    cq = fake.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "rl-research")
    assert cq is not None
    cq["spec"]["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "vision"}}
    fake.put(cq)
    r = cli("doctor", *KUEUE_ARGS, "--set", "infra.kueue.topology.mode=none", "--set",
            "infra.kueue.topology.together=false")
    line = next(x for x in r.out.splitlines() if x.startswith("✖ Kueue quota"))
    assert "can never be admitted (Misconfigured): workload namespace doesn't match ClusterQueue selector" in line
    fix = r.out.splitlines()[r.out.splitlines().index(line) + 1].strip()
    assert fix.startswith("fix: namespace rl-research (labels {'kubernetes.io/metadata.name': 'rl-research'}) is "
                          "not selected; ask the platform admin to fix the ClusterQueue"), fix
    assert "nominal quota" not in fix


def test_doctor_names_a_missing_local_queue_and_a_missing_kueue(cli: Any, fake: FakeKube) -> None:
    nodes(fake)
    found = doctor_lines(cli)
    assert found["Kueue"].startswith("✖") and "Kueue is not installed" in found["Kueue"]
    install_kueue(fake)
    found = doctor_lines(cli)
    assert found["LocalQueue"].startswith("✖") and "LocalQueue rl-research doesn't exist in namespace rl-research" \
        in found["LocalQueue"]


def test_run_of_a_queued_job_on_a_cluster_without_kueue_says_nothing_queues_it(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *KUEUE_ARGS, "--timeout", "0.5")
    assert "note: the run is queued with Kueue (kueue.x-k8s.io/queue-name) but this cluster serves no Kueue " \
           "Workloads: Kueue is not installed" in r.out


def test_a_suspended_queued_job_kueue_makes_no_workload_for_is_said(cli: Any, fake: FakeKube,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Kueue v0.19.2 makes no Workload for a job whose WorkloadPriorityClass went missing after the
    launch checked it (its reconciler's error is in its log only): the run said only "waiting to be
    admitted" until its timeout. Here no Kueue runs at all, which looks the same from the API."""
    from dockyard_k8s.live import orchestrate

    monkeypatch.setattr(orchestrate, "NO_WORKLOAD_SECONDS", 0.0)
    install_kueue(fake)
    for obj in queue_objects():
        fake.put(obj)
    assert cli("run", *KUEUE_ARGS, "--detach").code == 0
    set_job(fake, "Suspended")
    r = cli("run", *KUEUE_ARGS, "--timeout", "2")
    assert ("note: Kueue has made no Workload for RayJob grpo-swe in 0s, so nothing queues it: Kueue's job reconciler "
            "fails on it (its WorkloadPriorityClass research-normal missing? `kubectl get workloadpriorityclass "
            "research-normal`; the error is in the Kueue manager's log only)") in r.out, r.out + r.err
    assert r.out.count("Kueue has made no Workload") == 1


def test_status_of_a_queued_run_holds_its_own_workload_not_another_run_s(cli: Any, fake: FakeKube,
                                                                          kueue: None) -> None:
    """Seen on the real Kueue (tests/e2e/test_kueue_live.py, a preempted run): `status -o json`
    listed every Workload of the namespace among the run's objects, the preemptor's too."""
    assert cli("run", *KUEUE_ARGS, "--detach").code == 0
    job = fake.get("ray.io/v1", "RayJob", NS, RUN)
    mine = workload_of(fake, job, {"conditions": [
        condition("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set head")]})
    fake.put(busy_workload("rayjob-other-3c1a9", NS, "rl-research", {GPU: ("a100", 8)}))
    doc = json.loads(cli("status", *KUEUE_ARGS, "-o", "json").out)
    assert [o["name"] for o in doc["objects"] if o["kind"] == "Workload"] == [mine["metadata"]["name"]]
    assert doc["kueue"]["name"] == mine["metadata"]["name"] and doc["kueue"]["state"] == "pending"
