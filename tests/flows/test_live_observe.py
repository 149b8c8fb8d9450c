"""`status`, `logs`, `down` and the operator-free shapes against the stateful fake."""

from __future__ import annotations

import json
import threading
from typing import Any

from fakekube import FakeKube
from states import NS, RUN, pod, set_job, start_cluster

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def test_status_of_nothing_exits_1(cli: Any) -> None:
    r = cli("status", *ARGS)
    assert r.code == 1 and "nothing of run grpo-swe" in r.out


def test_status_one_screen(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    set_job(fake, "Initializing", "", message="waiting for workers")
    start_cluster(fake, workers={"trainer": 2}, submitter=False)
    bad = fake.put(pod("grpo-swe-abcde-inference-worker-0", "inference", scheduled=False, conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}]))
    fake.add_event(NS, bad, "FailedScheduling", "0/3 nodes are available: 3 node(s) didn't match Pod's node "
                                                "affinity/selector.")
    oom = fake.put(pod("grpo-swe-sandbox-7d9-abc", "sandbox", phase="Running", container_state={"running": {}},
                       last_state={"terminated": {"reason": "OOMKilled", "exitCode": 137}}, restarts=1))
    fake.add_event(NS, oom, "BackOff", "Back-off restarting failed container")
    r = cli("status", *ARGS)
    assert r.code == 0, r.err
    assert "RayJob grpo-swe: jobDeploymentStatus Initializing, jobStatus -" in r.out
    assert "message: waiting for workers" in r.out
    rows = {line.split()[0]: line.split()[1:] for line in r.out.splitlines() if line.split()
            and line.split()[0] in ("head", "trainer", "inference", "sandbox", "submitter")}
    assert rows["trainer"] == ["2", "2", "2", "2", "0", "0"]
    assert rows["inference"] == ["1", "1", "0", "0", "0", "0"]
    assert rows["sandbox"][0] == "16"
    assert "inference/grpo-swe-abcde-inference-worker-0: FailedScheduling" in r.out
    assert "kuberay.inference.nodeSelector" in r.out
    assert "sandbox/grpo-swe-sandbox-7d9-abc: OOMKilled" in r.out
    assert "sandbox.resources.memoryLimit" in r.out


def test_status_json_and_constant_request_count(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    set_job(fake, "Running", "RUNNING")
    start_cluster(fake, workers={"trainer": 2})
    before = len(fake.requests)
    small = json.loads(cli("status", *ARGS, "-o", "json").out)
    small_requests = len(fake.requests) - before
    for i in range(40):
        fake.put(pod(f"grpo-swe-sandbox-x-{i}", "sandbox", phase="Running", ready=True))
    before = len(fake.requests)
    big = json.loads(cli("status", *ARGS, "-o", "json").out)
    assert len(fake.requests) - before == small_requests  # cost does not grow with pods
    assert big["main"]["state"] == "running"
    fleets = {f["fleet"]: f for f in big["fleets"]}
    assert fleets["sandbox"]["ready"] == 40 and small["namespace"] == NS
    selectors = {q.params.get("labelSelector") for q in fake.requests[before:] if q.method == "GET"
                 and q.path.endswith(("pods", "rayjobs"))}
    assert selectors == {"dockyard-k8s/run=grpo-swe"}


def test_logs_default_is_the_submitter_then_fleets_are_merged(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    start_cluster(fake, workers={"trainer": 2})
    fake.add_log(NS, "grpo-swe-submit-q2", "main", ["job says hi"])
    fake.add_log(NS, "grpo-swe-abcde-trainer-worker-0", "main", ["t0 a", "t0 b", "t0 c"])
    fake.add_log(NS, "grpo-swe-abcde-trainer-worker-1", "main", ["t1 a"])
    assert cli("logs", *ARGS).out == "job says hi\n"
    r = cli("logs", *ARGS, "--fleet", "trainer", "--tail", "2")
    assert r.out.splitlines() == ["trainer/grpo-swe-abcde-trainer-worker-0 t0 b",
                                  "trainer/grpo-swe-abcde-trainer-worker-0 t0 c",
                                  "trainer/grpo-swe-abcde-trainer-worker-1 t1 a"]
    tail_params = [q.params.get("tailLines") for q in fake.requests if q.path.endswith("/log")]
    assert tail_params[-2:] == ["2", "2"]
    r = cli("logs", *ARGS, "--pod", "grpo-swe-abcde-trainer-worker-1")
    assert r.out == "t1 a\n"


def test_logs_previous_since_and_errors(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    start_cluster(fake, workers={"trainer": 1})
    name = "grpo-swe-abcde-trainer-worker-0"
    fake.add_log(NS, name, "main", ["crashed: CUDA OOM"], previous=True)
    fake.add_log(NS, name, "main", ["old"], at=fake.now - 7200)
    fake.add_log(NS, name, "main", ["fresh"])
    assert cli("logs", *ARGS, "--pod", name, "--previous").out == "crashed: CUDA OOM\n"
    assert cli("logs", *ARGS, "--pod", name, "--since", "1h").out == "fresh\n"
    r = cli("logs", *ARGS, "--pod", "nope")
    assert r.code == 1 and "no pod nope" in r.err
    r = cli("logs", *ARGS, "--since", "soon")
    assert r.code == 2
    r = cli("logs", *ARGS, "--pod", "grpo-swe-abcde-head-x1", "--previous")
    assert r.code == 1 and "previous terminated container" in r.err


def test_logs_follow_merges_streams_until_they_end(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    start_cluster(fake, workers={"trainer": 2})
    pods = ["grpo-swe-abcde-trainer-worker-0", "grpo-swe-abcde-trainer-worker-1"]

    def kubelet() -> None:
        fake.wait_for(lambda: sum(1 for q in fake.requests if q.params.get("follow") == "true") >= 2)
        for p in pods:
            fake.add_log(NS, p, "main", [f"{p[-1]} step 1"])
            fake.end_logs(NS, p, "main")

    t = threading.Thread(target=kubelet, daemon=True)
    t.start()
    r = cli("logs", *ARGS, "--fleet", "trainer", "--follow")
    t.join(5)
    assert r.code == 0
    assert sorted(r.out.splitlines()) == [f"trainer/{pods[0]} 0 step 1", f"trainer/{pods[1]} 1 step 1"]


def test_down_deletes_by_label_and_is_idempotent(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    start_cluster(fake)
    fake.put({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {
        "name": "grpo-swe-quota", "namespace": NS, "labels": {"dockyard-k8s/run": RUN}}, "spec": {"hard": {}}})
    fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "someone-else", "namespace": NS, "labels": {"dockyard-k8s/run": "other-run"}}})
    r = cli("down", *ARGS)
    assert r.code == 0, r.err
    assert "deleted RayJob rl-research/grpo-swe" in r.out
    assert "kept ResourceQuota rl-research/grpo-swe-quota" in r.out
    lines = [line for line in r.out.splitlines() if line.startswith("deleted ") and "object(s)" not in line]
    assert lines[-1] == "deleted NetworkPolicy rl-research/grpo-swe-sandbox"  # policy goes last
    assert fake.all("ray.io/v1", "RayCluster") == []  # owned by the RayJob: garbage collected
    assert [c["metadata"]["name"] for c in fake.all("v1", "ConfigMap")] == ["someone-else"]
    again = cli("down", *ARGS)
    assert again.code == 0 and "nothing left of run grpo-swe" in again.out
    gone = cli("down", *ARGS, "--include-governance")
    assert "deleted ResourceQuota" in gone.out and fake.all("v1", "ResourceQuota") == []


def test_follow_and_status_for_operator_free_shapes(client: Any, fake: FakeKube) -> None:
    """Job and StatefulSet runs (issue 6's shapes) are followed with the same code."""
    from dockyard_k8s.live.orchestrate import follow, snapshot

    labels = {"dockyard-k8s/run": RUN}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": RUN, "namespace": NS, "labels": labels},
           "spec": {"template": {"metadata": {"labels": {**labels, "dockyard-k8s/fleet": "head"}},
                                 "spec": {"containers": [{"name": "ray"}]}}}}
    fake.put(job)
    lines: list[str] = []

    def kubelet() -> None:
        for plural in ("jobs", "pods", "events"):
            fake.wait_watching(plural)
        fake.put(pod(f"{RUN}-x1", "head", phase="Running", ready=True))
        fake.set_status("batch/v1", "Job", NS, RUN, {"active": 1, "ready": 1})
        fake.set_status("batch/v1", "Job", NS, RUN, {"succeeded": 1, "conditions": [
            {"type": "Complete", "status": "True"}]})

    t = threading.Thread(target=kubelet, daemon=True)
    t.start()
    outcome = follow(client, NS, RUN, [job], say=lines.append)
    t.join(5)
    assert outcome.ok and outcome.reason == "succeeded"
    assert any("Job grpo-swe: active 1" in line for line in lines)

    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "mn", "namespace": NS, "labels": {"dockyard-k8s/run": "mn"}},
           "spec": {"replicas": 2, "template": {"metadata": {"labels": {"dockyard-k8s/run": "mn",
                                                                         "dockyard-k8s/fleet": "trainer"}}}}}
    fake.put({**sts, "status": {"readyReplicas": 2}})
    fake.put(pod("mn-0", "head", run="mn", phase="Running", ready=True,
                 container_state={"terminated": {"exitCode": 3, "reason": "Error"}}))
    view = snapshot(client, NS, "mn", [sts])
    phase = view.main_phase()
    assert phase is not None and phase.state == "failed" and "exited with code 3" in phase.summary
    assert any(f.reason == "Error" and f.pod == "mn-0" for f in view.findings())


def test_status_and_down_on_a_namespace_of_thousands_of_pods(cli: Any, fake: FakeKube) -> None:
    """LIST in chunks (limit/continue): with 1,300 pods and 1,300 labelled ConfigMaps, where one
    unchunked LIST would time out (504) and the server returns fewer items than asked,
    `status` counts every pod and `down` deletes every object; no response exceeds a chunk."""
    cli("run", *ARGS, "--detach")
    set_job(fake, "Running", "RUNNING")
    start_cluster(fake, workers={"trainer": 2})
    for i in range(1300):
        fake.put(pod(f"grpo-swe-sandbox-x-{i:04d}", "sandbox", phase="Running", ready=True))
        fake.put({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"grpo-swe-extra-{i:04d}", "namespace": NS,
                               "labels": {"dockyard-k8s/run": RUN}}})
    fake.put(pod("other-run-pod", "sandbox", phase="Running", ready=True, run="other"))
    fake.slow_list_over = 1000
    fake.max_page = 400
    before = len(fake.requests)
    doc = json.loads(cli("status", *ARGS, "-o", "json").out)
    assert {f["fleet"]: f["ready"] for f in doc["fleets"]}["sandbox"] == 1300
    assert any(q.params.get("continue") for q in fake.requests[before:])
    r = cli("down", *ARGS)
    assert r.code == 0, r.err
    left = [c for c in fake.all("v1", "ConfigMap") if (c["metadata"].get("labels") or {}).get("dockyard-k8s/run")]
    assert left == []
