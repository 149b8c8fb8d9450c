"""The KubeRay simulation does what the real controllers do (tags v1.4.2 and v1.7.0), one
behaviour per test, driven through the fake API server without launcher code."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fakekube import FakeKube
from kuberay_sim import FINALIZER, KubeRay

NS = "default"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def rayjob(name: str = "train", **spec: Any) -> dict:
    worker = {"groupName": "trainer", "replicas": 2, "rayStartParams": {},
              "template": {"metadata": {"labels": {"dockyard-k8s/fleet": "trainer"}},
                           "spec": {"containers": [{"name": "ray-worker", "image": "ray"}]}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": NS, "labels": {"dockyard-k8s/run": name}},
            "spec": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {
                         "metadata": {"labels": {"dockyard-k8s/fleet": "head"}},
                         "spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}},
                                        "workerGroupSpecs": [worker]}, **spec}}


@pytest.fixture(params=["1.4.2", "1.7.0"])
def kuberay(request: pytest.FixtureRequest) -> Iterator[tuple[FakeKube, KubeRay, httpx2.Client]]:
    fake = FakeKube(kuberay=request.param, namespaces=(NS,))
    sim = fake.extend(KubeRay(request.param))
    assert isinstance(sim, KubeRay)
    with httpx2.Client(transport=fake, base_url="https://x") as http:
        yield fake, sim, http
    fake.shutdown()


def submit(http: httpx2.Client, job: dict) -> httpx2.Response:
    r = http.patch(f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{job['metadata']['name']}",
                   params={"fieldManager": "dockyard-k8s"}, headers=APPLY, content=json.dumps(job))
    assert r.status_code in (200, 201), r.text
    return r


def get_job(fake: FakeKube, name: str = "train") -> dict:
    job = fake.get("ray.io/v1", "RayJob", NS, name)
    assert job is not None
    return job


def test_new_rayjob_gets_finalizer_cluster_name_and_initializing(kuberay: Any) -> None:
    fake, _, http = kuberay
    submit(http, rayjob())
    job = get_job(fake)
    assert job["metadata"]["finalizers"] == [FINALIZER]
    assert job["status"]["jobDeploymentStatus"] == "Initializing"
    assert re.fullmatch(r"train-[bcdfghjklmnpqrstvwxz2456789]{5}", job["status"]["rayClusterName"])
    cluster = fake.get("ray.io/v1", "RayCluster", NS, job["status"]["rayClusterName"])
    assert cluster["metadata"]["labels"] == {"dockyard-k8s/run": "train", "ray.io/originated-from-cr-name": "train",
                                             "ray.io/originated-from-crd": "RayJob"}
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"


def test_pods_keep_template_labels_and_carry_operator_labels(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob())
    cluster = sim.cluster_of(NS, "train")
    pods = {p["metadata"]["name"]: p for p in fake.all("v1", "Pod")}
    heads = [n for n in pods if re.fullmatch(rf"{cluster}-head-\w{{5}}", n)]
    workers = [n for n in pods if re.fullmatch(rf"{cluster}-trainer-worker-\w{{5}}", n)]
    assert len(heads) == 1 and len(workers) == 2
    labels = pods[workers[0]]["metadata"]["labels"]
    assert labels["dockyard-k8s/fleet"] == "trainer" and labels["ray.io/cluster"] == cluster
    assert labels["ray.io/node-type"] == "worker" and labels["ray.io/group"] == "trainer"


def test_cluster_status_follows_pods_and_ready_is_sticky(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob())
    name = sim.cluster_of(NS, "train")
    sim.run_pods(NS, name)
    st = fake.get("ray.io/v1", "RayCluster", NS, name)["status"]
    conds = {c["type"]: c for c in st["conditions"]}
    assert st["state"] == "ready" and st["readyWorkerReplicas"] == 2 and st["desiredWorkerReplicas"] == 2
    assert conds["HeadPodReady"]["status"] == "True" and conds["RayClusterProvisioned"]["status"] == "True"
    sim.run_pods(NS, name, ready=False, only="headgroup")  # the head crashes
    st = fake.get("ray.io/v1", "RayCluster", NS, name)["status"]
    conds = {c["type"]: c for c in st["conditions"]}
    assert st["state"] == "ready" and conds["RayClusterProvisioned"]["status"] == "True"  # never cleared
    assert conds["HeadPodReady"]["status"] == "False"
    assert st["observedGeneration"] == fake.get("ray.io/v1", "RayCluster", NS, name)["metadata"]["generation"]


def test_ready_cluster_gets_the_submitter_job_then_running(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob())
    sim.run_pods(NS, sim.cluster_of(NS, "train"))
    job = get_job(fake)
    assert job["status"]["jobDeploymentStatus"] == "Running" and job["status"]["jobStatus"] == "RUNNING"
    submitter = fake.get("batch/v1", "Job", NS, "train")
    assert submitter["metadata"]["labels"] == {"ray.io/originated-from-cr-name": "train",
                                               "ray.io/originated-from-crd": "RayJob",
                                               "app.kubernetes.io/created-by": "kuberay-operator"}
    assert submitter["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    sim.finish(NS, "train", "SUCCEEDED")
    st = get_job(fake)["status"]
    assert (st["jobDeploymentStatus"], st["jobStatus"], st["succeeded"]) == ("Complete", "SUCCEEDED", 1)


def test_failed_attempt_is_retried_with_a_new_cluster(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob(backoffLimit=2))
    first = sim.cluster_of(NS, "train")
    sim.run_pods(NS, first)
    seen: list[str] = []
    rv = http.get(f"/apis/ray.io/v1/namespaces/{NS}/rayjobs").json()["metadata"]["resourceVersion"]
    sim.finish(NS, "train", "FAILED", "Traceback: boom")
    with http.stream("GET", f"/apis/ray.io/v1/namespaces/{NS}/rayjobs", params={
            "watch": "true", "resourceVersion": rv}) as r:
        for line in r.iter_lines():
            st = json.loads(line)["object"].get("status") or {}
            seen.append(f"{st.get('jobDeploymentStatus')}/{st.get('jobStatus')}/{st.get('failed')}")
            if st.get("jobDeploymentStatus") == "Initializing":
                break
    assert seen[0] == "Retrying/FAILED/1"  # Failed is never written on its own: Retrying in the same write
    second = sim.cluster_of(NS, "train")
    assert second != first and fake.get("ray.io/v1", "RayCluster", NS, first) is None
    sim.run_pods(NS, second)
    sim.finish(NS, "train", "FAILED")
    sim.run_pods(NS, sim.cluster_of(NS, "train"))
    sim.finish(NS, "train", "FAILED")
    st = get_job(fake)["status"]
    assert (st["jobDeploymentStatus"], st["failed"], st["reason"]) == ("Failed", 3, "AppFailed")


def test_invalid_rayjob_events_on_1_4_and_validation_failed_on_1_5(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob(suspend=True, shutdownAfterJobFinishes=False))
    job = get_job(fake)
    events = [e for e in fake.all("v1", "Event") if e["reason"] == "InvalidRayJobSpec"]
    assert events and "not allowed to be suspended" in events[0]["message"]
    if sim.version < (1, 5):
        assert not job.get("status") and not job["metadata"].get("finalizers")
    else:
        assert job["status"]["jobDeploymentStatus"] == "ValidationFailed"
        assert "not allowed to be suspended" in job["status"]["message"]


def test_suspend_deletes_the_cluster_and_resume_starts_over(kuberay: Any) -> None:
    fake, sim, http = kuberay
    submit(http, rayjob())
    first = sim.cluster_of(NS, "train")
    submit(http, rayjob(suspend=True))
    job = get_job(fake)
    assert job["status"]["jobDeploymentStatus"] == "Suspended"
    assert fake.get("ray.io/v1", "RayCluster", NS, first) is None
    submit(http, rayjob(suspend=False))
    job = get_job(fake)
    assert job["status"]["jobDeploymentStatus"] == "Initializing" and sim.cluster_of(NS, "train") != first


def test_deleting_a_rayjob_waits_for_the_operator_finalizer(kuberay: Any) -> None:
    fake, sim, http = kuberay
    sim.hold_finalizer = True
    submit(http, rayjob())
    cluster = sim.cluster_of(NS, "train")
    http.delete(f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/train")
    assert get_job(fake)["metadata"]["deletionTimestamp"]
    sim.release(NS, "train")
    assert fake.get("ray.io/v1", "RayJob", NS, "train") is None
    assert fake.get("ray.io/v1", "RayCluster", NS, cluster) is None and fake.all("v1", "Pod") == []
    assert sim.stopped  # the Ray job was stopped first
