"""`run` in every launch mode, to its end, on the real control plane (issue 21 §4).

Each test checks what the launcher prints against what the cluster holds, read back with the
real kubectl: the main object's state, the pods of every fleet, the run list; then what a re-run
of the same spec does (writes nothing: every resourceVersion is the same; a finished job says so).
The runs are the example sized down (conftest ``SMALL``) so they share the fake fleet.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import NO_OPERATOR, RUN, fleet_counts, labelled, ray_jobs, status_fleets, trainer_layer, versions

pytestmark = pytest.mark.e2e



def status_json(e2e_cli: Any, ns: str, run: str = RUN) -> dict[str, Any]:
    r = e2e_cli("status", run, "-n", ns, "-o", "json")
    assert r.code == 0, r.out + r.err
    return dict(json.loads(r.out))


def runs_json(e2e_cli: Any, ns: str) -> dict[str, dict[str, Any]]:
    r = e2e_cli("runs", "-n", ns, "-o", "json")
    assert r.code == 0, r.out + r.err
    return {x["name"]: x for x in json.loads(r.out)}


def requested_gpus(obj: dict[str, Any]) -> int:
    """nvidia.com/gpu the live object's pod templates ask for, replicas counted (what `runs` says)."""
    spec = obj["spec"]
    templates: list[tuple[int, dict[str, Any]]] = []
    ray = spec.get("rayClusterSpec") or (spec if obj["kind"] == "RayCluster" else None)
    if ray is not None:
        templates.append((1, ray["headGroupSpec"]["template"]))
        templates += [(g.get("replicas", 1) * g.get("numOfHosts", 1), g["template"]) for g in ray["workerGroupSpecs"]]
    else:
        templates.append((spec.get("replicas", spec.get("parallelism", 1)), spec["template"]))
    return sum(n * int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", 0))
               for n, t in templates for c in t["spec"]["containers"])


def assert_status_is_the_cluster(cluster: Any, e2e_cli: Any, ns: str, run: str = RUN) -> dict[str, Any]:
    """`status -o json`'s fleet table is what the cluster's pods (by the run label) say."""
    doc = status_json(e2e_cli, ns, run)
    pods = cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={run}")["items"]
    assert status_fleets(doc) == fleet_counts(pods)
    return doc


def assert_rerun_writes_nothing(cluster: Any, e2e_cli: Any, args: list[str], ns: str, *, says: str) -> None:
    before = versions(labelled(cluster, ns))
    again = e2e_cli("run", *args)
    assert again.code == 0, again.out + again.err
    assert says in again.out, again.out
    actions = [line.split()[0] for line in again.out.splitlines() if line.split()[:1] and
               line.split()[0] in ("created", "configured", "unchanged")]
    assert actions and set(actions) == {"unchanged"}, again.out
    assert versions(labelled(cluster, ns)) == before


def test_rayjob_runs_to_success_and_status_runs_logs_and_a_rerun_agree_with_the_cluster(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]]}, namespace=ns)
    r = e2e_cli("run", *example("--timeout", "120"))
    assert r.code == 0, r.out + r.err
    assert "✔ succeeded: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in r.out
    job = cluster.get("-n", ns, "rayjob", RUN)
    assert (job["status"]["jobDeploymentStatus"], job["status"]["jobStatus"]) == ("Complete", "SUCCEEDED")

    doc = assert_status_is_the_cluster(cluster, e2e_cli, ns)
    assert doc["main"]["state"] == "succeeded"
    assert doc["main"]["status"]["jobId"] == job["status"]["jobId"]
    assert doc["main"]["status"]["rayClusterName"] == job["status"]["rayClusterName"]
    assert status_fleets(doc)["submitter"]["done"] == 1
    text = e2e_cli("status", RUN, "-n", ns).out
    assert "RayJob grpo-swe: jobDeploymentStatus Complete, jobStatus SUCCEEDED" in text
    assert f"RayCluster {job['status']['rayClusterName']}: ready" in text

    listed = runs_json(e2e_cli, ns)
    assert list(listed) == [RUN]
    assert (listed[RUN]["mode"], listed[RUN]["state"]) == ("rayjob", "succeeded")
    assert listed[RUN]["gpus"] == requested_gpus(job) == 2

    # `logs` is the submitter's log, as the cluster serves it
    submitter = cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN},dockyard-k8s/fleet=submitter")["items"]
    logs = e2e_cli("logs", RUN, "-n", ns)
    assert logs.code == 0, logs.err
    assert logs.out.strip() == cluster.kubectl("-n", ns, "logs", submitter[0]["metadata"]["name"]).stdout.strip()
    # KubeRay made the submitter pod from our template: our labels and priority class, its own
    # `ray job submit` of the entrypoint (the container has no command of ours)
    (pod,) = submitter
    assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "ray-job-submitter"
    assert pod["spec"]["priorityClassName"] == "gpu-training"
    (container,) = pod["spec"]["containers"]
    script = " ".join(container.get("args") or [])
    assert container["name"] == "ray-job-submitter" and "ray job submit" in script, container
    assert job["spec"]["entrypoint"] in script and job["status"]["jobId"] in script, script

    jobs_before = ray_jobs(cluster, ns, start)
    assert len(jobs_before) == 1
    assert_rerun_writes_nothing(cluster, e2e_cli, example("--timeout", "60"), ns,
                                says="RayJob " + ns + "/grpo-swe already finished (jobDeploymentStatus Complete, "
                                     "jobStatus SUCCEEDED); nothing was re-run")
    assert ray_jobs(cluster, ns, start) == jobs_before  # no second Ray job


def test_dry_run_server_persists_nothing_and_says_what_would_change(cluster: Any, e2e_cli: Any, example: Any,
                                                                    ns: str) -> None:
    fresh = e2e_cli("run", *example("--dry-run=server"))
    assert fresh.code == 0, fresh.out + fresh.err
    assert "created (server dry run) RayJob " + ns + "/grpo-swe" in fresh.out, fresh.out
    assert "server dry run: nothing was persisted" in fresh.out + fresh.err
    assert labelled(cluster, ns) == {}  # not even the token Secret or the launch record
    assert e2e_cli("runs", "-n", ns, "-o", "name").out.split() == []

    assert e2e_cli("run", *example("--detach")).code == 0
    before = versions(labelled(cluster, ns))
    again = e2e_cli("run", *example("--dry-run=server"))
    assert again.code == 0, again.out + again.err
    assert "unchanged (server dry run) RayJob " + ns + "/grpo-swe" in again.out, again.out
    scaled = e2e_cli("run", *example("--dry-run=server", "--set", "sandbox.replicas=2"))
    assert scaled.code == 0, scaled.out + scaled.err
    assert f"configured (server dry run) Deployment {ns}/grpo-swe-sandbox" in scaled.out, scaled.out
    assert "unchanged (server dry run) RayJob " + ns + "/grpo-swe" in scaled.out, scaled.out
    # a changed RayJob KubeRay has started: the dry run says what `run` would, a refusal (KubeRay
    # reads the spec once)
    cluster.wait("KubeRay starting the RayJob", lambda: cluster.get("-n", ns, "rayjob", RUN).get("status", {}).get(
        "jobDeploymentStatus") not in (None, "", "New"))
    changed = e2e_cli("run", *example("--dry-run=server", "--set", "kuberay.trainer.env.NCCL_DEBUG=INFO"))
    assert changed.code == 1 and "from another spec" in changed.out and "nothing was applied" in changed.out, \
        changed.out + changed.err
    assert versions(labelled(cluster, ns)) == before
    live = cluster.get("-n", ns, "rayjob", RUN)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    env = {e["name"]: e.get("value") for e in live["template"]["spec"]["containers"][0]["env"]}
    assert env["NCCL_DEBUG"] == "WARN"


def test_bringup_is_ready_and_an_unchanged_rerun_writes_nothing(cluster: Any, e2e_cli: Any, example: Any,
                                                              ns: str) -> None:
    args = example("--set", "launch.mode=bringup", "--timeout", "120")
    r = e2e_cli("run", *args)
    assert r.code == 0, r.out + r.err
    assert "✔ ready: ready, workers ready 2/2" in r.out
    rc = cluster.get("-n", ns, "raycluster", RUN)
    conditions = {c["type"]: c["status"] for c in rc["status"]["conditions"]}
    assert conditions["HeadPodReady"] == "True" and rc["status"]["readyWorkerReplicas"] == 2
    doc = assert_status_is_the_cluster(cluster, e2e_cli, ns)
    assert doc["main"]["kind"] == "RayCluster" and doc["main"]["state"] == "ready"
    listed = runs_json(e2e_cli, ns)
    assert (listed[RUN]["mode"], listed[RUN]["state"], listed[RUN]["gpus"]) == ("bringup", "ready",
                                                                                requested_gpus(rc))
    assert_rerun_writes_nothing(cluster, e2e_cli, args, ns, says="✔ ready: ready, workers ready 2/2")


def test_attach_submits_to_the_running_cluster_once(cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 1], ["SUCCEEDED", 0, "done"]], "logs": "step 1\nstep 2: loss 0.4\n"},
                   namespace=ns)
    shared = e2e_cli("cluster", "up", *example("--set", "launch.name=shared", "--timeout", "120"))
    assert shared.code == 0, shared.out + shared.err
    args = example("--set", "launch.mode=attach", "--set", "launch.attach.cluster=shared", "--timeout", "60")
    r = e2e_cli("run", *args)
    assert r.code == 0, r.out + r.err
    jobs = ray_jobs(cluster, ns, start, "shared")
    assert len(jobs) == 1 and jobs[0]["status"] == "SUCCEEDED"
    sid = jobs[0]["submission_id"]
    assert f"submitted job {sid}" in r.out and f"✔ succeeded: job {sid}: SUCCEEDED" in r.out
    assert jobs[0]["metadata"] == {"dockyard-k8s/run": RUN}
    # the Ray job's own logs, from the head (through a port-forward, with the cluster's token)
    logs = e2e_cli("job", "logs", RUN, "-n", ns)
    assert logs.code == 0, logs.out + logs.err
    assert logs.out.splitlines()[-2:] == ["step 1", "step 2: loss 0.4"], logs.out
    # nothing GPU-side: the run's own objects are the sandbox, its recipe and its record
    kinds = {k.split("/")[0] for k in labelled(cluster, ns)}
    assert "RayJob" not in kinds and "RayCluster" not in kinds and "Secret" not in kinds
    listed = runs_json(e2e_cli, ns)
    assert (listed[RUN]["mode"], listed[RUN]["state"], listed[RUN]["gpus"]) == ("attach", "submitted", 0)
    assert (listed["shared"]["mode"], listed["shared"]["state"]) == ("bringup", "ready")

    assert_rerun_writes_nothing(cluster, e2e_cli, args, ns,
                                says=f"job {sid} already submitted (SUCCEEDED); nothing re-submitted")
    assert ray_jobs(cluster, ns, start, "shared") == jobs


def test_job_mode_runs_to_completion(cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    args = example("--set", "launch.mode=job", *[a for s in NO_OPERATOR for a in ("--set", s)], "--timeout", "60")
    r = e2e_cli("run", *args)
    assert r.code == 0, r.out + r.err
    job = cluster.get("-n", ns, "job", RUN)
    conditions = {c["type"]: c["status"] for c in job["status"]["conditions"]}
    assert conditions["Complete"] == "True" and job["status"]["succeeded"] == 1
    assert "✔ succeeded: complete" in r.out
    doc = assert_status_is_the_cluster(cluster, e2e_cli, ns)
    assert (doc["main"]["kind"], doc["main"]["state"]) == ("Job", "succeeded")
    assert status_fleets(doc)["head"]["done"] == 1
    assert "Job grpo-swe: complete, active 0, succeeded 1, failed 0" in e2e_cli("status", RUN, "-n", ns).out
    listed = runs_json(e2e_cli, ns)
    assert (listed[RUN]["mode"], listed[RUN]["state"], listed[RUN]["gpus"]) == ("job", "succeeded",
                                                                                requested_gpus(job))
    assert_rerun_writes_nothing(cluster, e2e_cli, args, ns,
                                says=f"Job {ns}/grpo-swe already finished (complete, active 0, succeeded 1, failed 0)")
    # a changed recipe changes the Job's pod template, which the API server keeps as created: said in one
    # line (its 422 prints the whole template, ~6,000 characters), nothing applied
    changed = e2e_cli("run", *args, "optimizer.lr=9e-6")
    assert changed.code == 1, changed.out + changed.err
    assert f"error: Job {ns}/{RUN}: Invalid: spec.template: field is immutable (nothing was applied)" in changed.err
    assert "--replace deletes it and creates it from this spec" in changed.err and len(changed.err) < 600


def test_statefulset_mode_ends_when_the_head_entrypoint_exits(cluster: Any, e2e_cli: Any, example: Any, ns: str,
                                                              tmp_path: Path) -> None:
    """The head is `<run>-trainer-0` (a trainer pod): its entrypoint's exit is the run's end.
    kwok plays the head's container exiting 0 and being restarted (stages.yaml `exit`)."""
    if not cluster.ours:
        pytest.skip("the head's exit is played by the control plane's kwok stage")
    layer = trainer_layer(tmp_path / "exit.infra.yaml", {"e2e.dockyard-k8s.dev/exit": "0"})
    args = example("--set", "launch.mode=statefulset", *[a for s in NO_OPERATOR for a in ("--set", s)],
                   "--infra", str(layer), "--timeout", "30")
    r = e2e_cli("run", *args)
    head = cluster.get("-n", ns, "pod", f"{RUN}-trainer-0")
    assert head["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 0
    assert r.code == 0, r.out + r.err
    assert "✔ succeeded: head entrypoint exited with code 0" in r.out
    doc = assert_status_is_the_cluster(cluster, e2e_cli, ns)
    assert (doc["main"]["kind"], doc["main"]["name"], doc["main"]["state"]) == ("StatefulSet", f"{RUN}-trainer",
                                                                                 "succeeded")
    listed = runs_json(e2e_cli, ns)
    assert (listed[RUN]["mode"], listed[RUN]["state"]) == ("statefulset", "succeeded")
