"""The Kueue simulation does what Kueue v0.19.2 does, one behaviour per test, driven through the
fake API server without launcher code (kueue_sim.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fakekube import FakeKube
from kuberay_sim import KubeRay
from kueue_sim import API, Kueue, busy_workload, cluster_queue, flavor, local_queue

NS = "team"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
GPU = "nvidia.com/gpu"
P5 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}


def container(cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, **({GPU: str(gpus)} if gpus else {})}
    return {"name": "c", "image": "ray", "resources": {"requests": res, "limits": res}}


def rayjob(name: str = "train", queue: str = "q", trainers: int = 2, **spec: Any) -> dict:
    def template(fleet: str, c: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"labels": {"dockyard-k8s/fleet": fleet}}, "spec": {"containers": [c]}}

    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": template(
                         "head", container("8", "32Gi"))}, "workerGroupSpecs": [
                         {"groupName": "trainer", "replicas": trainers, "rayStartParams": {},
                          "template": template("trainer", container("32", "256Gi", 8))}]}, **spec}}


@pytest.fixture
def cluster() -> Iterator[tuple[FakeKube, Kueue, httpx2.Client]]:
    fake = FakeKube(namespaces=(NS, "other"))
    fake.extend(KubeRay())
    kueue = fake.extend(Kueue())
    assert isinstance(kueue, Kueue)
    for obj in (flavor("cpu"), flavor("h100", P5),
                cluster_queue("team-a", {"cpu": {"cpu": 64, "memory": "512Gi", GPU: 0},
                                         "h100": {"cpu": 600, "memory": "4Ti", GPU: 16}}),
                local_queue("q", NS, "team-a")):
        fake.put(obj)
    with httpx2.Client(transport=fake, base_url="https://x") as http:
        yield fake, kueue, http
    fake.shutdown()


def submit(http: httpx2.Client, job: dict) -> httpx2.Response:
    return http.patch(f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{job['metadata']['name']}",
                      params={"fieldManager": "dockyard-k8s"}, headers=APPLY, content=json.dumps(job))


def workload(fake: FakeKube, kueue: Kueue, name: str = "train") -> dict:
    job = fake.get("ray.io/v1", "RayJob", NS, name)
    assert job is not None
    wl = kueue.workload_of(job)
    assert wl is not None
    return wl


def conditions(wl: dict) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in wl["status"].get("conditions") or []}


def test_the_webhook_creates_a_queued_job_suspended_and_refuses_one_that_keeps_its_cluster(cluster: Any) -> None:
    fake, _, http = cluster
    fake.put(busy_workload("big", "other", "team-a", {GPU: ("h100", 16)}))  # nothing can be admitted
    assert submit(http, rayjob()).status_code == 201
    assert fake.get("ray.io/v1", "RayJob", NS, "train")["spec"]["suspend"] is True
    r = submit(http, rayjob("keeper", shutdownAfterJobFinishes=False))
    assert r.status_code == 403
    assert r.json()["message"] == ('admission webhook "vrayjob.kb.io" denied the request: '
                                   "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
                                   "delete the cluster after finishing")


def test_the_job_owns_its_workload_with_its_pod_sets(cluster: Any) -> None:
    fake, kueue, http = cluster
    submit(http, rayjob())
    wl = workload(fake, kueue)
    job = fake.get("ray.io/v1", "RayJob", NS, "train")
    assert wl["metadata"]["name"].startswith("rayjob-train-")
    assert wl["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == job["metadata"]["uid"]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("head", 1), ("trainer", 2),
                                                                            ("submitter", 1)]
    assert wl["spec"]["queueName"] == "q"


def test_admission_by_quota_in_flavor_order_resumes_the_job_with_the_flavors_labels(cluster: Any) -> None:
    fake, kueue, http = cluster
    submit(http, rayjob())
    wl = workload(fake, kueue)
    flavors = {psa["name"]: set(psa["flavors"].values()) for psa in wl["status"]["admission"]["podSetAssignments"]}
    assert flavors == {"head": {"cpu"}, "trainer": {"h100"}, "submitter": {"cpu"}}
    assert conditions(wl)["QuotaReserved"] == ("True", "QuotaReserved", "Quota reserved in ClusterQueue team-a")
    assert conditions(wl)["Admitted"][0] == "True"
    job = fake.get("ray.io/v1", "RayJob", NS, "train")
    assert job["spec"]["suspend"] is False
    trainer = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert trainer["nodeSelector"] == P5
    assert fake.get("ray.io/v1", "RayCluster", NS, job["status"]["rayClusterName"]) is not None  # KubeRay started


def test_no_room_keeps_it_pending_in_kueues_words_until_quota_frees(cluster: Any) -> None:
    fake, kueue, http = cluster
    fake.put(busy_workload("big", "other", "team-a", {GPU: ("h100", 8)}))
    submit(http, rayjob())
    wl = workload(fake, kueue)
    assert "admission" not in wl["status"]
    status, reason, message = conditions(wl)["QuotaReserved"]
    assert (status, reason) == ("False", "Pending")
    assert message.startswith("couldn't assign flavors to pod set trainer: insufficient unused quota for cpu in "
                              "flavor cpu, 8 more needed, ")  # the head took 8 of the cpu flavor's 64
    assert message.endswith("insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed")
    assert fake.get("ray.io/v1", "RayJob", NS, "train")["spec"]["suspend"] is True
    lq = fake.get(API, "LocalQueue", NS, "q")["status"]
    assert (lq["pendingWorkloads"], lq["admittedWorkloads"]) == (1, 0)
    fake.remove(API, "Workload", "other", "big")
    assert conditions(workload(fake, kueue))["Admitted"][0] == "True"
    assert fake.get("ray.io/v1", "RayJob", NS, "train")["spec"]["suspend"] is False


def test_a_missing_local_queue_is_inadmissible(cluster: Any) -> None:
    fake, kueue, http = cluster
    submit(http, rayjob(queue="nope"))
    assert conditions(workload(fake, kueue))["QuotaReserved"] == ("False", "Inadmissible",
                                                                  "LocalQueue nope doesn't exist")


def test_eviction_suspends_the_job_again_and_requeues(cluster: Any) -> None:
    fake, kueue, http = cluster
    submit(http, rayjob())
    wl = workload(fake, kueue)
    fake.put(busy_workload("urgent", "other", "team-a", {GPU: ("h100", 16)}))  # the preemptor takes the quota
    kueue.evict(NS, wl["metadata"]["name"])
    wl = workload(fake, kueue)
    assert conditions(wl)["Evicted"][:2] == ("True", "Preempted")
    assert conditions(wl)["Preempted"][1] == "InClusterQueue"
    assert conditions(wl)["Preempted"][2].startswith("Preempted to accommodate a workload")
    assert "admission" not in wl["status"] and wl["status"]["requeueState"]["count"] == 1
    job = fake.get("ray.io/v1", "RayJob", NS, "train")
    assert job["spec"]["suspend"] is True
    assert job["status"]["jobDeploymentStatus"] == "Suspended"  # KubeRay deleted the cluster


def test_a_finished_job_releases_its_quota_to_the_next(cluster: Any) -> None:
    fake, kueue, http = cluster
    sim = next(e for e in fake.extensions if isinstance(e, KubeRay))
    submit(http, rayjob("first"))
    submit(http, rayjob("second"))
    assert "admission" not in workload(fake, kueue, "second")["status"]
    sim.run_pods(NS, sim.cluster_of(NS, "first"))
    sim.finish(NS, "first")
    assert conditions(workload(fake, kueue, "first"))["Finished"][:2] == ("True", "Succeeded")
    assert conditions(workload(fake, kueue, "second"))["Admitted"][0] == "True"


def test_multikueue_dispatches_to_a_worker_cluster(cluster: Any) -> None:
    fake, kueue, http = cluster
    fake.put({"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": "mk"},
              "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}})
    cq = fake.get(API, "ClusterQueue", "", "team-a")
    cq["spec"]["admissionChecks"] = ["mk"]
    fake.put(cq)
    submit(http, rayjob())
    job = fake.get("ray.io/v1", "RayJob", NS, "train")
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    wl = workload(fake, kueue)
    assert wl["status"]["clusterName"] == "worker-1"
    assert wl["status"]["admissionChecks"][0]["message"] == 'The workload was admitted on "worker-1"'
