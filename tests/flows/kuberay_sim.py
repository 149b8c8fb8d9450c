"""What KubeRay and the kubelet do, played on the fake API server.

:class:`KubeRay` is an :class:`~fakekube.Extension` following the operator's RayJob and
RayCluster controllers as read at tags v1.4.2 and v1.7.0 (``ray-operator/controllers/ray/``;
facts in ``../shared/notes/kuberay.md``), reacting to every write as a controller would:

* a new RayJob gets the finalizer ``ray.io/rayjob-finalizer``, ``jobId`` and a cluster
  named ``<rayjob>-<5 chars>`` (``GenerateRayClusterName``) in ``status.rayClusterName``,
  then ``Initializing``; the RayCluster carries the RayJob's labels plus
  ``ray.io/originated-from-*`` and a controller ownerReference;
* the RayCluster's head and worker pods (``<cluster>-head-xxxxx``,
  ``<cluster>-<group>-worker-xxxxx``) keep the template labels, with ``ray.io/cluster``,
  ``ray.io/node-type``, ``ray.io/group`` set by the operator; the cluster status is
  recomputed from the pods: ``readyWorkerReplicas``, ``observedGeneration``, conditions
  ``HeadPodReady`` (current), ``RayClusterProvisioned`` (set once), ``state: ready``
  (never cleared);
* once the cluster is ready: the submitter Job (named after the RayJob, labelled only
  ``ray.io/originated-from-*``) and its pod, then ``Running``; the Ray job's end
  (:meth:`KubeRay.finish`) gives ``Complete`` / ``Failed`` with ``AppFailed``, and with
  attempts left ``Retrying`` in the same write, then a new cluster per attempt;
* an invalid RayJob: Warning events ``InvalidRayJobSpec`` / ``InvalidRayJobMetadata`` and no
  status on <= 1.4; ``ValidationFailed`` with ``status.message`` on >= 1.5;
* ``spec.suspend``: ``Suspending`` (cluster deleted) then ``Suspended``; resuming starts over;
* deleting the RayJob: the operator stops the Ray job, then removes its finalizer
  (``hold_finalizer`` keeps it until :meth:`KubeRay.release`).

The kubelet's part (pods scheduled, running, ready) is the tests' (:meth:`KubeRay.run_pods`).
The helpers at the end (``pod``, ``start_cluster``, ``set_job``) write statuses directly,
for tests of the launcher's reading of one state.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from fake_streams import Change
from fakekube import Extension, FakeKube

from support.paths import EXAMPLES

NS = "rl-research"
RUN = "grpo-swe"
FINALIZER = "ray.io/rayjob-finalizer"
OPERATOR = "kuberay-operator"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery util/rand
TERMINAL_JOB = ("SUCCEEDED", "FAILED", "STOPPED")


def _suffix(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(5))


def _owner(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _validation_error(job: dict[str, Any], version: tuple[int, ...]) -> tuple[str, str] | None:
    """(event reason, message) of the first rule of ValidateRayJobMetadata/Spec the job breaks."""
    meta, spec = job["metadata"], job.get("spec") or {}
    if len(meta["name"]) > 47:
        return "InvalidRayJobMetadata", "The RayJob metadata is invalid: RayJob name should be no more than 47 " \
                                        "characters"
    if spec.get("suspend") and not spec.get("shutdownAfterJobFinishes"):
        return "InvalidRayJobSpec", "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to " \
                                    "false is not allowed to be suspended"
    if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
        return "InvalidRayJobSpec", "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set"
    if spec.get("submissionMode") == "InteractiveMode" and int(spec.get("backoffLimit") or 0) > 0:
        return "InvalidRayJobSpec", "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode"
    if version < (1, 5) and spec.get("deletionPolicy"):
        return "InvalidRayJobSpec", "RayJobDeletionPolicy feature gate must be enabled to use the DeletionPolicy " \
                                    "feature"
    return None


class KubeRay(Extension):
    """The KubeRay operator (RayJob + RayCluster controllers) of ``version``."""

    def __init__(self, version: str = "1.7.0", *, hold_finalizer: bool = False, seed: int = 7) -> None:
        self.version = tuple(int(p) for p in version.split("."))
        self.hold_finalizer = hold_finalizer
        self.rng = random.Random(seed)
        self.invalid: dict[str, tuple[str, str]] = {}  # RayJob name -> (reason, message) a test imposes
        self.ray_jobs: dict[str, dict[str, Any]] = {}  # jobId -> what the Ray dashboard says
        self.stopped: list[str] = []  # jobIds stopped because their RayJob was deleted
        self.fake: FakeKube | None = None
        self.paused = False  # the operator is down (or slow): nothing is reconciled
        self._busy = False

    def install(self, fake: FakeKube) -> None:
        self.fake = fake

    # --- reacting to writes ---------------------------------------------------------------
    def on_change(self, fake: FakeKube, change: Change) -> None:
        if self._busy or self.paused:
            return
        kind = change.obj.get("kind")
        self._busy = True
        try:
            if kind == "RayJob" and change.type != "DELETED":
                self.reconcile_job(change.obj["metadata"]["namespace"], change.obj["metadata"]["name"])
            elif kind == "RayCluster" and change.type != "DELETED":
                self.reconcile_cluster(change.obj["metadata"]["namespace"], change.obj["metadata"]["name"])
            elif kind == "Pod" and (change.obj["metadata"].get("labels") or {}).get("ray.io/cluster"):
                ns = change.obj["metadata"]["namespace"]
                cluster = change.obj["metadata"]["labels"]["ray.io/cluster"]
                if fake.get("ray.io/v1", "RayCluster", ns, cluster):
                    self.reconcile_cluster(ns, cluster)
        finally:
            self._busy = False

    def _fake(self) -> FakeKube:
        assert self.fake is not None, "fake.extend(KubeRay(...)) first"
        return self.fake

    def _status(self, job: dict[str, Any], **changes: Any) -> dict[str, Any]:
        st = {**(job.get("status") or {}), **changes}
        return self._fake().set_status("ray.io/v1", "RayJob", job["metadata"]["namespace"], job["metadata"]["name"],
                                       {k: v for k, v in st.items() if v is not None}, manager=OPERATOR)

    def _event(self, obj: dict[str, Any], reason: str, message: str, etype: str = "Warning") -> None:
        self._fake().add_event(obj["metadata"]["namespace"], obj, reason, message, etype)

    def reconcile_job(self, ns: str, name: str) -> None:
        """Run the RayJob controller until it waits on something outside it."""
        fake = self._fake()
        for _ in range(20):
            job = fake.get("ray.io/v1", "RayJob", ns, name)
            if job is None or not self._step(job):
                return

    def _step(self, job: dict[str, Any]) -> bool:
        fake = self._fake()
        meta, spec, st = job["metadata"], job.get("spec") or {}, job.get("status") or {}
        if meta.get("deletionTimestamp"):
            if FINALIZER in (meta.get("finalizers") or []) and not self.hold_finalizer:
                self.release(meta["namespace"], meta["name"])
            return False
        invalid = self.invalid.get(meta["name"]) or _validation_error(job, self.version)
        if invalid:
            reason, message = invalid
            if self.version < (1, 5):
                where = f"{meta['namespace']}/{meta['name']}"
                head, _, rest = message.partition(": ")  # 1.4: "The RayJob spec is invalid NS/NAME: ..."
                self._event(job, reason, f"{head} {where}: {rest}")
                return False
            if st.get("jobDeploymentStatus") != "ValidationFailed":
                self._event(job, reason, f"{meta['namespace']}/{meta['name']}: {message}")
                self._status(job, jobDeploymentStatus="ValidationFailed", reason="ValidationFailed", message=message)
            return False
        deployment = st.get("jobDeploymentStatus") or ""
        if deployment == "":
            if FINALIZER not in (meta.get("finalizers") or []):
                job["metadata"]["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                fake.put(job, manager=OPERATOR)
            self._status(job, jobId=st.get("jobId") or f"{meta['name']}-{_suffix(self.rng)}",
                         rayClusterName=st.get("rayClusterName") or f"{meta['name']}-{_suffix(self.rng)}",
                         jobStatus=st.get("jobStatus") or "", jobDeploymentStatus="Initializing",
                         startTime="2026-01-01T00:00:00Z")
            return True
        if deployment in ("Initializing", "Running") and spec.get("suspend"):
            self._status(job, jobDeploymentStatus="Suspending")
            return True
        if deployment == "Initializing":
            cluster = self._cluster_for(job)
            if (cluster.get("status") or {}).get("state") != "ready":
                return False
            if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
                self._submitter_for(job)
            self.ray_jobs.setdefault(st["jobId"], {"status": "RUNNING", "message": ""})
            self._status(job, jobDeploymentStatus="Running",
                         dashboardURL=f"{st['rayClusterName']}-head-svc.{meta['namespace']}.svc.cluster.local:8265")
            return True
        if deployment == "Running":
            info = self.ray_jobs.get(st.get("jobId") or "", {"status": "PENDING", "message": ""})
            if info["status"] not in TERMINAL_JOB:
                if st.get("jobStatus") != info["status"]:
                    self._status(job, jobStatus=info["status"], message=info["message"] or None)
                    return True
                return False
            failed = info["status"] == "FAILED"
            attempts = int(st.get("failed") or 0) + (1 if failed else 0)
            result = "Failed" if failed else "Complete"
            if failed and attempts < int(spec.get("backoffLimit") or 0) + 1:
                result = "Retrying"  # checkBackoffLimitAndUpdateStatusIfNeeded, same status write
            self._status(job, jobStatus=info["status"], jobDeploymentStatus=result,
                         reason="AppFailed" if failed else None, message=info["message"] or None, failed=attempts,
                         succeeded=int(st.get("succeeded") or 0) + (0 if failed else 1),
                         endTime=None if result == "Retrying" else "2026-01-01T01:00:00Z")
            return result == "Retrying"
        if deployment in ("Retrying", "Suspending"):
            self._delete_cluster_resources(job)
            reset = {k: None for k in ("rayClusterName", "dashboardURL", "jobId", "message", "reason", "startTime",
                                       "endTime", "rayClusterStatus")}
            nxt = "" if deployment == "Retrying" else "Suspended"
            self._status(job, **reset, jobStatus="", jobDeploymentStatus=nxt)
            return True
        if deployment == "Suspended" and not spec.get("suspend"):
            self._status(job, jobStatus="", jobDeploymentStatus="")
            return True
        return False

    def _cluster_for(self, job: dict[str, Any]) -> dict[str, Any]:
        fake = self._fake()
        meta, st = job["metadata"], job["status"]
        cluster = fake.get("ray.io/v1", "RayCluster", meta["namespace"], st["rayClusterName"])
        if cluster is None:
            labels = {**(meta.get("labels") or {}), "ray.io/originated-from-cr-name": meta["name"],
                      "ray.io/originated-from-crd": "RayJob"}
            cluster = fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {
                "name": st["rayClusterName"], "namespace": meta["namespace"], "labels": labels,
                "annotations": meta.get("annotations") or {}, "ownerReferences": [_owner(job)]},
                "spec": copy.deepcopy(job["spec"]["rayClusterSpec"])}, manager=OPERATOR)
            self._event(job, "CreatedRayCluster", f"Created RayCluster {meta['namespace']}/{st['rayClusterName']}",
                        "Normal")
            self.reconcile_cluster(meta["namespace"], st["rayClusterName"])
            cluster = fake.get("ray.io/v1", "RayCluster", meta["namespace"], st["rayClusterName"]) or cluster
        return cluster

    def _submitter_for(self, job: dict[str, Any]) -> None:
        fake = self._fake()
        meta, spec = job["metadata"], job["spec"]
        if fake.get("batch/v1", "Job", meta["namespace"], meta["name"]):
            return
        template = copy.deepcopy(spec.get("submitterPodTemplate") or {"spec": {"restartPolicy": "Never",
                                                                                "containers": [{
                                                                                    "name": "ray-job-submitter",
                                                                                    "image": "rayproject/ray"}]}})
        submitter = fake.put({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [_owner(job)],
            "labels": {"ray.io/originated-from-cr-name": meta["name"], "ray.io/originated-from-crd": "RayJob",
                       "app.kubernetes.io/created-by": OPERATOR}},
            "spec": {"backoffLimit": 2, "template": template}, "status": {"active": 1}}, manager=OPERATOR)
        self._event(job, "CreatedRayJobSubmitter", f"Created Kubernetes Job {meta['namespace']}/{meta['name']}",
                    "Normal")
        tmeta = template.get("metadata") or {}
        fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{meta['name']}-{_suffix(self.rng)}", "namespace": meta["namespace"],
            "labels": {**(tmeta.get("labels") or {}), "batch.kubernetes.io/job-name": meta["name"],
                       "job-name": meta["name"]}, "ownerReferences": [_owner(submitter)]},
            "spec": {**template.get("spec", {}), "nodeName": "cpu-node-0"},
            "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                          {"type": "Ready", "status": "True"}]}}, manager="kubelet")

    def _delete_cluster_resources(self, job: dict[str, Any]) -> None:
        fake = self._fake()
        ns, st = job["metadata"]["namespace"], job.get("status") or {}
        if st.get("rayClusterName") and fake.get("ray.io/v1", "RayCluster", ns, st["rayClusterName"]):
            fake.remove("ray.io/v1", "RayCluster", ns, st["rayClusterName"])
        if fake.get("batch/v1", "Job", ns, job["metadata"]["name"]):
            fake.remove("batch/v1", "Job", ns, job["metadata"]["name"])

    def reconcile_cluster(self, ns: str, name: str) -> None:
        """The RayCluster controller: pods for every group, status from the pods."""
        fake = self._fake()
        cluster = fake.get("ray.io/v1", "RayCluster", ns, name)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return
        spec = cluster.get("spec") or {}
        pods = [p for p in fake.all("v1", "Pod") if p["metadata"].get("namespace") == ns and
                (p["metadata"].get("labels") or {}).get("ray.io/cluster") == name]
        groups = [("head", "headgroup", 1, (spec.get("headGroupSpec") or {}).get("template") or {})]
        groups += [("worker", g["groupName"], 0 if g.get("suspend") else int(g.get("replicas") or 0), g.get(
            "template") or {}) for g in spec.get("workerGroupSpecs") or []]
        for node_type, group, want, template in groups:
            have = [p for p in pods if p["metadata"]["labels"].get("ray.io/group") == group]
            for _ in range(want - len(have)):
                tmeta = template.get("metadata") or {}
                prefix = f"{name}-head" if node_type == "head" else f"{name}-{group}-worker"
                pods.append(fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": f"{prefix}-{_suffix(self.rng)}", "namespace": ns, "ownerReferences": [_owner(cluster)],
                    "labels": {**(tmeta.get("labels") or {}), "ray.io/cluster": name, "ray.io/node-type": node_type,
                               "ray.io/group": group, "ray.io/is-ray-node": "yes",
                               "app.kubernetes.io/created-by": OPERATOR, "app.kubernetes.io/name": "kuberay"},
                    "annotations": tmeta.get("annotations") or {}},
                    "spec": copy.deepcopy(template.get("spec") or {}),
                    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}},
                    manager=OPERATOR))
        self._cluster_status(cluster, pods)

    def _cluster_status(self, cluster: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        def ready(p: dict[str, Any]) -> bool:
            return (p.get("status") or {}).get("phase") == "Running" and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in (p.get("status") or {}).get(
                    "conditions") or [])

        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        spec, st = cluster.get("spec") or {}, dict(cluster.get("status") or {})
        desired = sum(0 if g.get("suspend") else int(g.get("replicas") or 0) for g in spec.get("workerGroupSpecs")
                      or [])
        workers = [p for p in live if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]
        head = next((p for p in live if p["metadata"]["labels"].get("ray.io/node-type") == "head"), None)
        conds = {c["type"]: c for c in st.get("conditions") or []}
        if head is None:
            conds["HeadPodReady"] = {"type": "HeadPodReady", "status": "False", "reason": "HeadPodNotFound",
                                     "message": "Head Pod not found"}
        else:
            conds["HeadPodReady"] = {"type": "HeadPodReady", "status": "True" if ready(head) else "False",
                                     "reason": "HeadPodRunningAndReady" if ready(head) else "ContainersNotReady"}
        all_ready = len(live) == desired + 1 and all(ready(p) for p in live)
        if conds.get("RayClusterProvisioned", {}).get("status") != "True":
            conds["RayClusterProvisioned"] = {
                "type": "RayClusterProvisioned", "status": "True" if all_ready else "False",
                "reason": "AllPodRunningAndReadyFirstTime" if all_ready else "RayClusterPodsProvisioning"}
        st |= {"desiredWorkerReplicas": desired, "readyWorkerReplicas": sum(1 for p in workers if ready(p)),
               "availableWorkerReplicas": sum(1 for p in workers if ready(p)),
               "observedGeneration": cluster["metadata"].get("generation", 1),
               "conditions": list(conds.values())}
        if all_ready:
            st["state"] = "ready"  # never cleared once set
        if st != (cluster.get("status") or {}):
            self._fake().set_status("ray.io/v1", "RayCluster", cluster["metadata"]["namespace"],
                                    cluster["metadata"]["name"], st, manager=OPERATOR)
            for job_ref in cluster["metadata"].get("ownerReferences") or []:
                if job_ref.get("kind") == "RayJob":
                    self.reconcile_job(cluster["metadata"]["namespace"], job_ref["name"])

    # --- what tests drive ------------------------------------------------------------------
    def run_pods(self, ns: str, cluster: str, *, ready: bool = True, only: str = "") -> None:
        """The scheduler and kubelet: bind the cluster's pods and run them (ready or not)."""
        fake = self._fake()
        for p in fake.all("v1", "Pod"):
            labels = p["metadata"].get("labels") or {}
            if p["metadata"].get("namespace") != ns or labels.get("ray.io/cluster") != cluster:
                continue
            if only and labels.get("ray.io/group") != only:
                continue
            p["spec"]["nodeName"] = "gpu-node-0"
            p["status"] = {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [{"name": c.get("name", "main"), "ready": ready, "restartCount": 0,
                                       "state": {"running": {}}} for c in p["spec"].get("containers") or []]}
            fake.put(p, manager="kubelet")

    def cluster_of(self, ns: str, job: str) -> str:
        rayjob = self._fake().get("ray.io/v1", "RayJob", ns, job) or {}
        return str((rayjob.get("status") or {}).get("rayClusterName") or "")

    def finish(self, ns: str, job: str, status: str = "SUCCEEDED", message: str = "") -> None:
        """The Ray job of the RayJob's current attempt ends (as the dashboard reports it)."""
        fake = self._fake()
        rayjob = fake.get("ray.io/v1", "RayJob", ns, job)
        assert rayjob is not None
        job_id = rayjob["status"]["jobId"]
        self.ray_jobs[job_id] = {"status": status, "message": message}
        submitter = fake.get("batch/v1", "Job", ns, job)
        if submitter is not None and status in TERMINAL_JOB:
            cond = "Complete" if status == "SUCCEEDED" else "Failed"
            fake.set_status("batch/v1", "Job", ns, job, {"conditions": [{"type": cond, "status": "True"}],
                                                         "succeeded" if cond == "Complete" else "failed": 1},
                            manager="job-controller")
        with fake.lock:
            self._busy = True
            try:
                self.reconcile_job(ns, job)
            finally:
                self._busy = False
            fake._dispatch()

    def set_ray_status(self, ns: str, job: str, status: str, message: str = "") -> None:
        """The Ray job's status changes without ending (PENDING -> RUNNING)."""
        self.finish(ns, job, status, message)

    def release(self, ns: str, name: str) -> None:
        """The operator stops the Ray job and removes the RayJob's finalizer."""
        fake = self._fake()
        job = fake.get("ray.io/v1", "RayJob", ns, name)
        if job is None:
            return
        if (job.get("status") or {}).get("jobStatus") not in TERMINAL_JOB and (job.get("status") or {}).get("jobId"):
            self.stopped.append(job["status"]["jobId"])
        fake.remove_finalizer("ray.io/v1", "RayJob", ns, name, FINALIZER)


# --- direct writes of one state (tests of how the launcher reads it) ---------------------------

def pod(name: str, fleet: str, *, phase: str = "Pending", ready: bool = False, scheduled: bool = True,
        container_state: dict[str, Any] | None = None, last_state: dict[str, Any] | None = None,
        run: str = RUN, namespace: str = NS, conditions: list[dict[str, Any]] | None = None,
        containers: tuple[str, ...] = ("main",), restarts: int = 0) -> dict[str, Any]:
    conds = conditions if conditions is not None else [
        {"type": "PodScheduled", "status": "True" if scheduled else "False"},
        {"type": "Ready", "status": "True" if ready else "False"},
    ]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"dockyard-k8s/run": run, "dockyard-k8s/fleet": fleet}},
        "spec": {"containers": [{"name": c, "image": "img"} for c in containers]},
        "status": {"phase": phase, "conditions": conds,
                   "containerStatuses": [{"name": containers[0], "ready": ready, "restartCount": restarts,
                                          "state": container_state or ({"running": {}} if phase == "Running" else
                                                                       {"waiting": {"reason": "ContainerCreating"}}),
                                          **({"lastState": last_state} if last_state else {})}]},
    }


def start_cluster(fake: FakeKube, *, run: str = RUN, workers: dict[str, int] | None = None, ready: bool = True,
                  submitter: bool = True) -> list[dict[str, Any]]:
    """The RayJob's RayCluster and its pods (what KubeRay creates), all running."""
    workers = workers or {"trainer": 2, "inference": 1}
    cluster = f"{run}-abcde"
    job = fake.get("ray.io/v1", "RayJob", NS, run)
    owner = [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": run, "uid": job["metadata"]["uid"]}] if job else []
    fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": cluster, "namespace": NS, "labels": {"dockyard-k8s/run": run},
                           "ownerReferences": owner},
              "spec": {}, "status": {"state": "ready" if ready else ""}})
    phase = "Running" if ready else "Pending"
    pods = [pod(f"{cluster}-head-x1", "head", phase=phase, ready=ready)]
    for fleet, n in workers.items():
        pods += [pod(f"{cluster}-{fleet}-worker-{i}", fleet, phase=phase, ready=ready) for i in range(n)]
    if submitter:
        pods.append(pod(f"{run}-submit-q2", "submitter", phase=phase, ready=ready))
    return [fake.put(p) for p in pods]


def set_job(fake: FakeKube, deployment: str, job: str = "", *, run: str = RUN, **extra: Any) -> None:
    fake.set_status("ray.io/v1", "RayJob", NS, run, {"jobDeploymentStatus": deployment, "jobStatus": job,
                                                     "rayClusterName": f"{run}-abcde", **extra})


__all__ = ["EXAMPLES", "FINALIZER", "NS", "RUN", "KubeRay", "pod", "set_job", "start_cluster"]
