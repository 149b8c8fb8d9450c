"""What Kueue does, played on the fake API server (``fake.extend(Kueue())``).

Written from Kueue v0.19.2's source (``pkg/controller/jobs/{rayjob,raycluster,job}``,
``pkg/controller/jobframework/reconciler.go``, ``pkg/scheduler``, ``pkg/workload/evict``) and
``../shared/notes/kueue.md`` — independently of the launcher's own admission engine (``plan``),
so the flow tests do not hold the launcher to itself. With the default feature gates:

* the jobs' **webhook**: a RayJob / RayCluster / Job created with ``kueue.x-k8s.io/queue-name``
  is defaulted to ``suspend: true`` (and, when its ClusterQueue dispatches with MultiKueue, to
  ``managedBy: kueue.x-k8s.io/multikueue``); a RayJob that keeps its cluster after finishing is
  refused with Kueue's message;
* the **job reconciler**: each queued job gets a Workload ``<kind>-<name>-<hash>`` it owns
  (controller ownerReference, label ``kueue.x-k8s.io/job-uid``), with the job's pod sets
  (``head``, one per worker group, ``submitter``; a Job's ``main``) and the LocalQueue;
  a job that ends marks its Workload ``Finished``; a job owned by a queued job (the RayCluster
  KubeRay makes for a RayJob, with its labels) is left alone;
* the **scheduler**, on every change: pending Workloads by priority then age, each admitted
  when every pod set gets a flavor, in the ClusterQueue's flavor order, with room in the
  queue's nominal quota (plus what the other queues of its cohort leave unused). Admission
  writes ``status.admission`` and ``QuotaReserved`` / ``Admitted`` (after the admission checks:
  MultiKueue sets ``clusterName``), then unsuspends the job with the flavors' node labels in its
  pod templates. Otherwise ``QuotaReserved=False`` (reason ``Pending``) with the message
  ``couldn't assign flavors to pod set P: insufficient unused quota for R in flavor F, N more
  needed``; a missing LocalQueue is ``Inadmissible`` with ``LocalQueue X doesn't exist``;
* **eviction** (:meth:`Kueue.evict`): ``Evicted`` (``Preempted``) with Kueue's preemption
  message, quota released, the job suspended again, then requeued;
* the LocalQueues' ``status.pendingWorkloads`` / ``admittedWorkloads``.

Not played: TAS, fair sharing, borrowing limits, partial admission, preemption decisions (the
tests decide who is evicted).
"""

from __future__ import annotations

import hashlib
from typing import Any

from fake_streams import Change
from fakekube import Extension, FakeKube, bundled_crds

API = "kueue.x-k8s.io/v1beta2"
QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGER = "kueue"
JOBS = {"RayJob": "ray.io/v1", "RayCluster": "ray.io/v1", "Job": "batch/v1"}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def amount(resource: str, value: Any) -> int:
    """A quantity in Kueue's units (millicores for cpu, bytes, devices); enough of the grammar."""
    text = str(value)
    scale = 1
    for suffix, size in _BINARY.items():
        if text.endswith(suffix):
            text, scale = text[:-2], size
            break
    else:
        if text.endswith("m"):
            return int(float(text[:-1])) if resource == "cpu" else int(float(text[:-1]) / 1000)
    number = float(text) * scale
    return int(number * 1000) if resource == "cpu" else int(number)


def show(resource: str, value: int) -> str:
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        if value and value % _BINARY[suffix] == 0:
            return f"{value // _BINARY[suffix]}{suffix}"
    return str(value)


def _requests(template: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in (template.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for name, value in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            out[name] = out.get(name, 0) + amount(name, value)
    return out


def pod_sets(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Workload's spec.podSets for a job (name, count, template)."""
    spec = job.get("spec") or {}
    if job["kind"] == "Job":
        return [{"name": "main", "count": int(spec.get("parallelism") or 1), "template": spec["template"]}]
    cluster = spec.get("rayClusterSpec") if job["kind"] == "RayJob" else spec
    out = [{"name": "head", "count": 1, "template": cluster["headGroupSpec"]["template"]}]
    out += [{"name": g["groupName"].lower(), "count": int(g.get("replicas", 1)), "template": g["template"]}
            for g in cluster.get("workerGroupSpecs") or []]
    if job["kind"] == "RayJob" and spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        template = spec.get("submitterPodTemplate") or {"spec": {"containers": [{
            "name": "ray-job-submitter", "resources": {"requests": {"cpu": "500m", "memory": "200Mi"},
                                                       "limits": {"cpu": "1", "memory": "1Gi"}}}]}}
        out.append({"name": "submitter", "count": 1, "template": template})
    return out


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's pod templates, in pod-set order (the submitter's when it has one)."""
    spec = job["spec"]
    if job["kind"] == "Job":
        return [spec["template"]]
    cluster = spec["rayClusterSpec"] if job["kind"] == "RayJob" else spec
    out = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster.get("workerGroupSpecs") or [])]
    if job["kind"] == "RayJob" and spec.get("submitterPodTemplate"):
        out.append(spec["submitterPodTemplate"])
    return out


def _child(obj: dict[str, Any]) -> bool:
    """A job owned by a queued job (the RayCluster of a RayJob, which carries its labels) is not
    managed on its own: jobframework skips objects whose owner Kueue manages."""
    return any(o.get("controller") and o.get("kind") in JOBS for o in obj["metadata"].get("ownerReferences") or [])


def _cond(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


def _set(conds: list[dict[str, Any]], cond: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(c for c in conds if c["type"] != cond["type"]), cond]


class Kueue(Extension):
    def __init__(self, *, worker_cluster: str = "worker-1") -> None:
        self.fake: FakeKube | None = None
        self.worker_cluster = worker_cluster  # where MultiKueue dispatches
        self._busy = False

    def install(self, fake: FakeKube) -> None:
        self.fake = fake
        fake.install_crds(bundled_crds("kueue"))

    def _fake(self) -> FakeKube:
        assert self.fake is not None
        return self.fake

    # --- the webhook ------------------------------------------------------------------------
    def admit(self, fake: FakeKube, op: str, res: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        from fake_api import ApiFailure

        queue = ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE)
        if obj.get("kind") not in JOBS or not queue or _child(obj):
            return
        spec = obj.setdefault("spec", {})
        if obj["kind"] == "RayJob" and spec.get("rayClusterSpec") and not spec.get("shutdownAfterJobFinishes"):
            raise ApiFailure(403, "Forbidden", 'admission webhook "vrayjob.kb.io" denied the request: '
                                              "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed "
                                              "job should delete the cluster after finishing")
        if op == "CREATE":
            spec["suspend"] = True
            if self._multikueue(obj["metadata"].get("namespace", "default"), queue):
                spec.setdefault("managedBy", MULTIKUEUE)

    def _multikueue(self, ns: str, queue: str) -> bool:
        fake = self._fake()
        lq = fake.get(API, "LocalQueue", ns, queue)
        cq = fake.get(API, "ClusterQueue", "", (lq or {}).get("spec", {}).get("clusterQueue", "")) if lq else None
        for name in (cq or {}).get("spec", {}).get("admissionChecks") or []:
            check = fake.get(API, "AdmissionCheck", "", name)
            if check and check["spec"].get("controllerName") == MULTIKUEUE:
                return True
        return False

    # --- the controllers --------------------------------------------------------------------
    def on_change(self, fake: FakeKube, change: Change) -> None:
        if self._busy:
            return
        obj = change.obj
        self._busy = True
        try:
            if obj.get("kind") in JOBS and change.type != "DELETED" and ((obj["metadata"].get("labels") or {}).get(
                    QUEUE)) and not _child(obj):
                self._reconcile_job(obj)
            if obj.get("kind") in (*JOBS, "Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor"):
                self.schedule()
        finally:
            self._busy = False

    def workload_name(self, job: dict[str, Any]) -> str:
        digest = hashlib.sha256(f"{job['kind']}/{job['metadata']['uid']}".encode()).hexdigest()[:5]
        return f"{job['kind'].lower()}-{job['metadata']['name']}-{digest}"

    def workload_of(self, job: dict[str, Any]) -> dict[str, Any] | None:
        return self._fake().get(API, "Workload", job["metadata"]["namespace"], self.workload_name(job))

    def _reconcile_job(self, job: dict[str, Any]) -> None:
        fake = self._fake()
        wl = self.workload_of(job)
        meta = job["metadata"]
        if wl is None:
            owner = {"apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"], "uid": meta["uid"],
                     "controller": True, "blockOwnerDeletion": True}
            priority = 0
            wpc = (meta.get("labels") or {}).get(PRIORITY)
            if wpc and (found := fake.get(API, "WorkloadPriorityClass", "", wpc)):
                priority = int(found.get("value") or 0)
            fake.put({"apiVersion": API, "kind": "Workload", "metadata": {
                "name": self.workload_name(job), "namespace": meta["namespace"], "ownerReferences": [owner],
                "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]}},
                "spec": {"queueName": meta["labels"][QUEUE], "priority": priority, "podSets": [
                    {**ps, "template": {"spec": (ps["template"].get("spec") or {})}} for ps in pod_sets(job)]}},
                manager=MANAGER)
            return
        st = job.get("status") or {}
        done = st.get("jobDeploymentStatus") in ("Complete", "Failed") or any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in st.get("conditions") or [])
        conds = (wl.get("status") or {}).get("conditions") or []
        if done and not any(c["type"] == "Finished" for c in conds):
            ok = st.get("jobStatus") == "SUCCEEDED" or any(c.get("type") == "Complete" for c in st.get(
                "conditions") or [])
            fake.set_status(API, "Workload", meta["namespace"], wl["metadata"]["name"], {
                **(wl.get("status") or {}), "conditions": _set(conds, _cond(
                    "Finished", "True", "Succeeded" if ok else "Failed", st.get("message") or "Job finished"))},
                manager=MANAGER)

    # --- the scheduler ------------------------------------------------------------------------
    def _usage(self, cq: str) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for wl in self._fake().all(API, "Workload"):
            st = wl.get("status") or {}
            adm = st.get("admission") or {}
            finished = any(c["type"] == "Finished" and c["status"] == "True" for c in st.get("conditions") or [])
            if adm.get("clusterQueue") != cq or finished:
                continue
            for psa in adm.get("podSetAssignments") or []:
                for res, flavor in (psa.get("flavors") or {}).items():
                    key = (flavor, res)
                    out[key] = out.get(key, 0) + amount(res, psa["resourceUsage"][res])
        return out

    @staticmethod
    def _nominal(cq: dict[str, Any]) -> dict[tuple[str, str], int]:
        out = {}
        for rg in cq["spec"].get("resourceGroups") or []:
            for fq in rg["flavors"]:
                for rq in fq["resources"]:
                    out[(fq["name"], rq["name"])] = amount(rq["name"], rq["nominalQuota"])
        return out

    def _room(self, cq: dict[str, Any]) -> dict[tuple[str, str], int]:
        """Unused nominal quota of the queue, plus what the other queues of its cohort leave unused."""
        own, used = self._nominal(cq), self._usage(cq["metadata"]["name"])
        room = {k: v - used.get(k, 0) for k, v in own.items()}
        cohort = cq["spec"].get("cohortName")
        if cohort:
            for other in self._fake().all(API, "ClusterQueue"):
                if other["metadata"]["name"] == cq["metadata"]["name"] or other["spec"].get("cohortName") != cohort:
                    continue
                theirs, their_use = self._nominal(other), self._usage(other["metadata"]["name"])
                for k, v in theirs.items():
                    if k in room:
                        room[k] += max(0, v - their_use.get(k, 0))
        return room

    def schedule(self) -> None:
        fake = self._fake()
        pending = [w for w in fake.all(API, "Workload") if not (w.get("status") or {}).get("admission")
                   and not any(c["type"] == "Finished" for c in (w.get("status") or {}).get("conditions") or [])]
        pending.sort(key=lambda w: (-int(w["spec"].get("priority") or 0), w["metadata"]["creationTimestamp"]))
        for stale in pending:
            wl = fake.get(API, "Workload", stale["metadata"]["namespace"], stale["metadata"]["name"])
            st = (wl or {}).get("status") or {}
            if wl is not None and not st.get("admission") and not any(
                    c["type"] == "Finished" for c in st.get("conditions") or []):
                self._try_admit(wl)
        self._queue_counts()

    def _queue_counts(self) -> None:
        """LocalQueue status.pendingWorkloads / admittedWorkloads, as the queue controller keeps them."""
        fake = self._fake()
        workloads = fake.all(API, "Workload")
        for lq in fake.all(API, "LocalQueue"):
            ns, name = lq["metadata"]["namespace"], lq["metadata"]["name"]
            mine = [w for w in workloads if w["metadata"]["namespace"] == ns and w["spec"].get("queueName") == name
                    and not any(c["type"] == "Finished" for c in (w.get("status") or {}).get("conditions") or [])]
            admitted = sum(1 for w in mine if (w.get("status") or {}).get("admission"))
            counts = {"pendingWorkloads": len(mine) - admitted, "admittedWorkloads": admitted,
                      "reservingWorkloads": admitted}
            if {k: (lq.get("status") or {}).get(k) for k in counts} != counts:
                fake.set_status(API, "LocalQueue", ns, name, {**(lq.get("status") or {}), **counts}, manager=MANAGER)

    def _try_admit(self, wl: dict[str, Any]) -> None:
        fake = self._fake()
        ns, name = wl["metadata"]["namespace"], wl["metadata"]["name"]
        conds = (wl.get("status") or {}).get("conditions") or []
        lq = fake.get(API, "LocalQueue", ns, wl["spec"]["queueName"])
        cq = fake.get(API, "ClusterQueue", "", lq["spec"]["clusterQueue"]) if lq else None
        if lq is None or cq is None:
            what = (f"LocalQueue {wl['spec']['queueName']}" if lq is None
                    else f"ClusterQueue {lq['spec']['clusterQueue']}")
            self._write_status(wl, conds, _cond("QuotaReserved", "False", "Inadmissible", f"{what} doesn't exist"))
            return
        room = self._room(cq)
        flavor_order = [(rg["coveredResources"], [f["name"] for f in rg["flavors"]])
                        for rg in cq["spec"].get("resourceGroups") or []]
        taken: dict[tuple[str, str], int] = {}
        assignments, messages = [], []
        for ps in wl["spec"]["podSets"]:
            total = {r: v * ps["count"] for r, v in _requests(ps["template"]).items() if v}
            chosen: dict[str, str] = {}
            reasons: list[str] = []
            for covered, flavors in flavor_order:
                wanted = {r: v for r, v in total.items() if r in covered}
                if not wanted:
                    continue
                for flavor in flavors:
                    short = {r: taken.get((flavor, r), 0) + v - room.get((flavor, r), 0) for r, v in wanted.items()}
                    if all(s <= 0 for s in short.values()):
                        chosen.update({r: flavor for r in wanted})
                        break
                    reasons += [f"insufficient unused quota for {r} in flavor {flavor}, {show(r, s)} more needed"
                                for r, s in sorted(short.items()) if s > 0]
            uncovered = [r for r in total if r not in chosen]
            if uncovered:
                messages.append(f"couldn't assign flavors to pod set {ps['name']}: {', '.join(sorted(reasons))}")
                continue
            for r, v in total.items():
                taken[(chosen[r], r)] = taken.get((chosen[r], r), 0) + v
            assignments.append({"name": ps["name"], "count": ps["count"], "flavors": chosen,
                                "resourceUsage": {r: show(r, v) for r, v in total.items()}})
        if messages:
            self._write_status(wl, conds, _cond("QuotaReserved", "False", "Pending", "; ".join(messages)))
            return
        cq_name = cq["metadata"]["name"]
        status: dict[str, Any] = {"admission": {"clusterQueue": cq_name, "podSetAssignments": assignments}}
        conds = _set(conds, _cond("QuotaReserved", "True", "QuotaReserved",
                                  f"Quota reserved in ClusterQueue {cq_name}"))
        checks = cq["spec"].get("admissionChecks") or []
        if checks:
            status["admissionChecks"] = [{"name": c, "state": "Ready", "message":
                                          f'The workload was admitted on "{self.worker_cluster}"',
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in checks]
            status["clusterName"] = self.worker_cluster
        conds = _set(conds, _cond("Admitted", "True", "Admitted", "The workload is admitted"))
        conds = [c for c in conds if c["type"] not in ("Evicted", "Preempted")]
        fake.set_status(API, "Workload", ns, name, {**(wl.get("status") or {}), **status, "conditions": conds},
                        manager=MANAGER)
        self._start_job(wl, assignments)

    def _write_status(self, wl: dict[str, Any], conds: list[dict[str, Any]], cond: dict[str, Any]) -> None:
        current = next((c for c in conds if c["type"] == cond["type"]), None)
        if current and (current["status"], current["reason"], current["message"]) == (
                cond["status"], cond["reason"], cond["message"]):
            return
        self._fake().set_status(API, "Workload", wl["metadata"]["namespace"], wl["metadata"]["name"],
                                {**(wl.get("status") or {}), "conditions": _set(conds, cond)}, manager=MANAGER)

    def _job(self, wl: dict[str, Any]) -> dict[str, Any] | None:
        owner = next((o for o in wl["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
        if owner is None:
            return None
        return self._fake().get(JOBS[owner["kind"]], owner["kind"], wl["metadata"]["namespace"], owner["name"])

    def _start_job(self, wl: dict[str, Any], assignments: list[dict[str, Any]]) -> None:
        """RunWithPodSetsInfo: unsuspend, the flavors' node labels into the pod templates."""
        fake = self._fake()
        job = self._job(wl)
        if job is None:
            return
        for template, psa in zip(_templates(job), assignments, strict=False):
            labels: dict[str, str] = {}
            for flavor in dict.fromkeys(psa["flavors"].values()):
                rf = fake.get(API, "ResourceFlavor", "", flavor) or {}
                labels.update((rf.get("spec") or {}).get("nodeLabels") or {})
            if labels:
                spec = template.setdefault("spec", {})
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **labels}
        job["spec"]["suspend"] = False
        fake.put(job, manager=MANAGER)

    # --- what tests drive ---------------------------------------------------------------------
    def evict(self, ns: str, workload: str, *, reason: str = "Preempted", message: str = "",
              preempted: str = "InClusterQueue") -> None:
        """Kueue evicts an admitted Workload: conditions, quota released, the job suspended again."""
        fake = self._fake()
        wl = fake.get(API, "Workload", ns, workload)
        assert wl is not None
        conds = (wl.get("status") or {}).get("conditions") or []
        text = message or ("Preempted to accommodate a workload (UID: 5b2e, JobUID: 9c1f) due to prioritization in "
                           "the ClusterQueue; preemptor path: /research/team-a; preemptee path: /research/team-a")
        conds = _set(conds, _cond("Evicted", "True", reason, text))
        if reason == "Preempted":
            conds = _set(conds, _cond("Preempted", "True", preempted, text))
        conds = _set(conds, _cond("QuotaReserved", "False", "Pending", text))
        conds = _set(conds, _cond("Admitted", "False", "NoReservation", "The workload has no reservation"))
        conds = _set(conds, _cond("Requeued", "True", reason, text))
        st = {k: v for k, v in (wl.get("status") or {}).items() if k not in ("admission", "clusterName")}
        st["requeueState"] = {"count": int(((wl.get("status") or {}).get("requeueState") or {}).get("count") or 0)
                              + 1}
        with fake.lock:
            self._busy = True
            try:
                fake.set_status(API, "Workload", ns, workload, {**st, "conditions": conds}, manager=MANAGER)
                job = self._job(wl)
                if job is not None:
                    job["spec"]["suspend"] = True
                    fake.put(job, manager=MANAGER)
            finally:
                self._busy = False

    def release(self) -> None:
        """Run the scheduler now (after a test freed quota by other means)."""
        with self._fake().lock:
            self._busy = True
            try:
                self.schedule()
            finally:
                self._busy = False
            self._fake()._dispatch()


# --- the cluster's queue objects ------------------------------------------------------------------

def flavor(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": labels} if labels else {}}


def cluster_queue(name: str, flavors: dict[str, dict[str, Any]], *, cohort: str = "",
                  checks: list[str] | None = None) -> dict[str, Any]:
    covered = sorted({r for q in flavors.values() for r in q})
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": covered, "flavors": [
        {"name": f, "resources": [{"name": r, "nominalQuota": q.get(r, 0)} for r in covered]}
        for f, q in flavors.items()]}]}
    if cohort:
        spec["cohortName"] = cohort
    if checks:
        spec["admissionChecks"] = checks
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def busy_workload(name: str, namespace: str, cq: str, usage: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """Someone else's admitted Workload holding ``usage`` ({resource: (flavor, amount)})."""
    return {"apiVersion": API, "kind": "Workload", "metadata": {"name": name, "namespace": namespace},
            "spec": {"queueName": "other", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x"}]}}}]},
            "status": {"admission": {"clusterQueue": cq, "podSetAssignments": [{
                "name": "main", "count": 1, "flavors": {r: f for r, (f, _) in usage.items()},
                "resourceUsage": {r: str(a) for r, (_, a) in usage.items()}}]},
                "conditions": [_cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
                               _cond("Admitted", "True", "Admitted", "The workload is admitted")]}}


__all__ = ["API", "Kueue", "busy_workload", "cluster_queue", "flavor", "local_queue", "pod_sets"]
