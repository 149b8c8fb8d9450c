"""What a run looks like from the API: kind handlers and the run view. Pure.

A *kind handler* turns one workload object (plus the run's pods) into a :class:`Phase`.
RayJob and RayCluster read KubeRay's status; Job and StatefulSet cover the
operator-free launch shapes; anything else falls back to standard conditions. The
*main* object is the one a run waits on (:data:`MAIN_KINDS`).

:class:`RunView` accumulates objects, pods and Warning events (from a snapshot or from
watches) and answers: per-fleet desired/scheduled/ready, findings, and whether the
run reached a terminal state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dockyard_k8s import kube
from dockyard_k8s.live.diagnose import (
    Diagnosis,
    admitted_by_kueue,
    event_finding,
    fleet_of,
    object_findings,
    pod_findings,
    retried,
    submitter_retries,
    waiting_for_terminating,
    workload_finding,
)
from dockyard_k8s.live.kueue import workload_of, workload_state
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import FLEET_LABEL

FLEET_ORDER = ("head", "trainer", "inference", "sandbox", "submitter")
# RayJob status values (KubeRay v1 rayjob_types.go).
RAYJOB_TERMINAL_DEPLOYMENT = frozenset({"Complete", "Failed", "ValidationFailed"})
# The kind a run waits on, first match in the rendered objects wins.
MAIN_KINDS = ("RayJob", "MPIJob", "Job", "RayCluster", "StatefulSet")


@dataclass(frozen=True, slots=True)
class Phase:
    state: str  # pending | running | ready | suspended | succeeded | failed
    summary: str  # one line for progress and status
    terminal: bool  # the run will not change by itself any more (or, for a cluster, it is up)
    ok: bool  # with terminal: success
    details: tuple[str, ...] = ()  # extra lines for `status` (reason, message, conditions)


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _cond_line(c: dict[str, Any]) -> str:
    text = f"{c.get('type')}={c.get('status')}"
    if c.get("reason"):
        text += f" ({c['reason']})"
    if c.get("message"):
        text += f": {c['message']}"
    return text


def _attempts(obj: dict[str, Any]) -> tuple[int, int]:
    """(failed attempts so far, attempts allowed): ``status.failed`` and ``spec.backoffLimit`` + 1."""
    st = _status(obj)
    return int(st.get("failed") or 0), int((obj.get("spec") or {}).get("backoffLimit") or 0) + 1


def rayjob_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    """KubeRay's RayJob. Over only at ``jobDeploymentStatus`` Complete, Failed or
    ValidationFailed: with ``backoffLimit`` left, a failed attempt turns ``Retrying`` in the
    same status write (its ``jobStatus`` still FAILED) and starts again with a new cluster;
    a ``jobStatus`` that ended while the deployment still says Running is settled by the
    operator (its transition grace period), not here."""
    st = _status(obj)
    deployment = st.get("jobDeploymentStatus") or ""
    job = st.get("jobStatus") or ""
    failed, allowed = _attempts(obj)
    details = tuple(f"{k}: {st[k]}" for k in ("reason", "message", "rayClusterName", "jobId", "dashboardURL")
                    if st.get(k))
    if allowed > 1:
        details += (f"attempts: {failed} failed of {allowed} allowed (backoffLimit {allowed - 1})",)
    summary = f"jobDeploymentStatus {deployment or '-'}, jobStatus {job or '-'}"
    if st.get("reason"):
        summary += f", reason {st['reason']}"
    message = f": {st['message']}" if st.get("message") else ""
    attempt = f"attempt {min(failed + 1, allowed)} of {allowed}"
    if deployment in RAYJOB_TERMINAL_DEPLOYMENT:
        ok = deployment == "Complete" and job == "SUCCEEDED"
        if not ok:
            summary += message
            if allowed > 1 and failed:
                summary += f" ({failed} of {allowed} attempts failed)"
        return Phase("succeeded" if ok else "failed", summary, True, ok, details)
    if deployment == "Retrying" or (failed and deployment in ("", "Initializing")):
        return Phase("retrying", f"{summary}{message}; retrying: {attempt}", False, False, details)
    if deployment in ("Suspended", "Suspending"):
        return Phase("suspended", summary + " (waiting to be admitted, e.g. by Kueue)", False, False, details)
    if allowed > 1:
        summary += f" ({attempt})"
    if deployment in ("Running", "Waiting"):
        return Phase("running", summary, False, False, details)
    return Phase("pending", summary, False, False, details)


def raycluster_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    """KubeRay's RayCluster, ready *now*: ``HeadPodReady`` true, ready workers >= desired,
    and the operator has seen the current spec (``observedGeneration`` = ``generation``).
    ``state: ready`` and ``RayClusterProvisioned`` are never cleared once set, so they say
    nothing after a spec change or a crash; ``ReplicaFailure`` is a finding, not an end."""
    st = _status(obj)
    conds = kube.conditions(obj)
    details = tuple(_cond_line(c) for c in conds.values())
    ready_workers, desired = int(st.get("readyWorkerReplicas") or 0), int(st.get("desiredWorkerReplicas") or 0)
    workers = f"workers ready {ready_workers}/{desired}"
    state = st.get("state") or ""
    if state == "suspended" or "RayClusterSuspended" in kube.true_conditions(obj):
        return Phase("suspended", "suspended", False, False, details)
    generation = (obj.get("metadata") or {}).get("generation")
    observed = st.get("observedGeneration")
    head = conds.get("HeadPodReady")
    head_ready = (head or {}).get("status") == "True" if head else state == "ready"  # operators without conditions
    if observed is not None and generation is not None and int(observed) < int(generation):
        waiting = f"the operator has not applied generation {generation} yet (observed {observed})"
    elif not head_ready:
        waiting = f"head pod not ready ({(head or {}).get('reason') or state or 'no status yet'})"
    elif ready_workers < desired:
        waiting = "workers starting"
    else:
        return Phase("ready", f"ready, {workers}", True, True, details)
    return Phase("pending", f"provisioning: {waiting}, {workers}", False, False, details)


def job_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    st = _status(obj)
    conds = kube.conditions(obj)
    details = tuple(_cond_line(c) for c in conds.values())
    counts = f"active {st.get('active', 0)}, succeeded {st.get('succeeded', 0)}, failed {st.get('failed', 0)}"
    true = kube.true_conditions(obj)
    for kind in ("Failed", "FailureTarget"):
        if c := true.get(kind):
            return Phase("failed", f"failed ({c.get('reason') or '-'}): {c.get('message') or counts}", True,
                         False, details)
    if "Complete" in true or "SuccessCriteriaMet" in true:
        return Phase("succeeded", f"complete, {counts}", True, True, details)
    if (obj.get("spec") or {}).get("suspend"):
        return Phase("suspended", f"suspended, {counts}", False, False, details)
    if st.get("active") or st.get("ready"):
        return Phase("running", counts, False, False, details)
    return Phase("pending", counts, False, False, details)


def _head_exit(pods: list[dict[str, Any]], head: str) -> int | None:
    """Exit code of the head pod's main container once it finished (restarted or not): the pod
    named ``head`` (the statefulset shape's ``<run>-trainer-0``), else one of fleet head."""
    for pod in pods:
        if (pod.get("metadata") or {}).get("name") != head and fleet_of(pod) != "head":
            continue
        for cs in (_status(pod).get("containerStatuses") or [])[:1]:
            term = (cs.get("state") or {}).get("terminated") or {}
            if term:
                return int(term.get("exitCode", 1))
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last and last.get("exitCode") == 0:
                return 0
    return None


def statefulset_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    """Operator-free multi-node Ray: running once every replica is ready; finished when the
    head pod's entrypoint (pod 0) exits — 0 is success."""
    st = _status(obj)
    want = int((obj.get("spec") or {}).get("replicas", 1))
    ready = int(st.get("readyReplicas", 0))
    summary = f"ready {ready}/{want}"
    code = _head_exit(pods, f"{(obj.get('metadata') or {}).get('name')}-0")
    if code is not None:
        ok = code == 0
        return Phase("succeeded" if ok else "failed", f"head entrypoint exited with code {code}", True, ok)
    if want and ready >= want:
        return Phase("running", summary, False, False)
    return Phase("pending", summary, False, False)


def deployment_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    """Ready once the rollout is complete, as ``kubectl rollout status`` decides it: the
    controller saw this generation and every replica is updated and available, none old left.
    Terminal then (a model endpoint waits for exactly this; the sandbox pool's Deployment is
    never what a run waits on), and when the rollout exceeded its progress deadline."""
    st = _status(obj)
    want = int((obj.get("spec") or {}).get("replicas", 1))
    ready = int(st.get("readyReplicas", 0))
    conds = kube.conditions(obj)
    details = tuple(_cond_line(c) for c in conds.values())
    progressing = conds.get("Progressing") or {}
    if progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Phase("failed", f"rollout stuck: {progressing.get('message') or 'progress deadline exceeded'}, "
                               f"ready {ready}/{want}", True, False, details)
    seen = int(st.get("observedGeneration", 0)) >= int((obj.get("metadata") or {}).get("generation", 0))
    updated, available = int(st.get("updatedReplicas", 0)), int(st.get("availableReplicas", 0))
    total = int(st.get("replicas", 0))
    summary = f"ready {ready}/{want}"
    if updated < want and total:
        summary += f", updated {updated}/{want}"
    if seen and updated >= want and available >= want and total <= updated:
        return Phase("ready", summary, True, True, details)
    return Phase("pending", summary, False, False, details)


def conditions_phase(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    """Any other kind (MPIJob...): the usual Succeeded/Complete/Failed/Running/Ready conditions."""
    conds = kube.conditions(obj)
    details = tuple(_cond_line(c) for c in conds.values())
    for kind, state, terminal, ok in (("Failed", "failed", True, False), ("Succeeded", "succeeded", True, True),
                                      ("Complete", "succeeded", True, True), ("Running", "running", False, False),
                                      ("Ready", "ready", False, True)):
        if c := kube.true_conditions(obj).get(kind):
            return Phase(state, _cond_line(c), terminal, ok, details)
    return Phase("pending", "no condition yet", False, False, details)


# kind -> handler. New workload kinds plug in here.
KIND_PHASE: dict[str, Callable[[dict[str, Any], list[dict[str, Any]]], Phase]] = {
    "RayJob": rayjob_phase,  # KubeRay jobStatus / jobDeploymentStatus
    "RayCluster": raycluster_phase,  # state + conditions; "ready" ends `cluster up` / bringup `run`
    "Job": job_phase,  # operator-free single node (batch/v1 conditions)
    "StatefulSet": statefulset_phase,  # operator-free multi-node (head pod exit code)
    "Deployment": deployment_phase,  # a model endpoint's server (serve); the sandbox pool (never main)
}


def phase_of(obj: dict[str, Any], pods: list[dict[str, Any]]) -> Phase:
    return KIND_PHASE.get(str(obj.get("kind")), conditions_phase)(obj, pods)


def runs_the_head(obj: dict[str, Any]) -> bool:
    """A StatefulSet whose pod 0 is the Ray head (render/shapes.py: DOCKYARD_HEAD_POD names it)."""
    pod0 = f"{(obj.get('metadata') or {}).get('name')}-0"
    return any({e.get("name"): e.get("value") for e in c.get("env") or []}.get("DOCKYARD_HEAD_POD") == pod0
               for t in kube.pod_templates(obj) for c in (t.spec.get("containers") or [])[:1])


def main_object(objects: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The object the run waits on: a RayJob, else a Job, a RayCluster, a StatefulSet (the one
    that runs the Ray head, of the statefulset shape's several)."""
    objs = list(objects)
    for kind in MAIN_KINDS:
        found = [obj for obj in objs if obj.get("kind") == kind]
        if found:
            return next((o for o in found if kind == "StatefulSet" and runs_the_head(o)), found[0])
    return None


# --- desired pods per fleet ---------------------------------------------------------------

def desired_pods(objects: Iterable[dict[str, Any]]) -> dict[str, int]:
    """fleet -> pods the rendered objects ask for (only templates carrying the fleet label;
    DaemonSets, one pod per node, are left out of fleet counts)."""
    out: dict[str, int] = {}
    for obj in objects:
        for t in kube.pod_templates(obj):
            fleet = (t.metadata.get("labels") or {}).get(FLEET_LABEL)
            if fleet and t.replicas is not None:
                out[fleet] = out.get(fleet, 0) + t.replicas
    return out


# --- the run view ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FleetRow:
    fleet: str
    desired: int
    pods: int  # pods that exist
    scheduled: int
    ready: int
    done: int  # pods that completed (Succeeded)
    failed: int


def fleet_rows(desired: dict[str, int], pods: Iterable[dict[str, Any]]) -> list[FleetRow]:
    counts: dict[str, list[int]] = {}
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        c = counts.setdefault(fleet_of(pod), [0, 0, 0, 0, 0])
        phase = _status(pod).get("phase")
        c[0] += 1
        true = kube.true_conditions(pod)
        c[1] += "PodScheduled" in true or phase in ("Running", "Succeeded", "Failed")
        c[2] += "Ready" in true
        c[3] += phase == "Succeeded"
        c[4] += phase == "Failed"
    names = [f for f in FLEET_ORDER if f in desired or f in counts]
    names += sorted(f for f in {*desired, *counts} if f not in FLEET_ORDER)
    return [FleetRow(f, desired.get(f, 0), *counts.get(f, [0, 0, 0, 0, 0])) for f in names]


def fleet_line(row: FleetRow) -> str:
    text = f"{row.fleet}: {row.scheduled}/{row.desired} scheduled, {row.ready}/{row.desired} ready"
    if row.done:
        text += f", {row.done} completed"
    if row.failed:
        text += f", {row.failed} failed"
    return text


def _second(stamp: Any) -> str:
    """An RFC 3339 time (the API server's, UTC) to the second: conditions carry no more."""
    return str(stamp or "")[:19]


def event_seen(event: dict[str, Any]) -> str:
    """When an event was last observed, to the second (core/v1 ``lastTimestamp``, or the
    events.k8s.io series' ``lastObservedTime``, or ``eventTime``)."""
    series = event.get("series") or {}
    return max(_second(t) for t in (event.get("lastTimestamp"), series.get("lastObservedTime"),
                                    event.get("eventTime"), event.get("firstTimestamp"),
                                    (event.get("metadata") or {}).get("creationTimestamp")))


def history(event: dict[str, Any], pod: dict[str, Any] | None) -> bool:
    """An event about ``pod`` older than the pod's current state: a FailedScheduling before its
    ``PodScheduled`` turned true, anything else before it turned ``Ready``. It was a problem; the
    pod got past it."""
    if pod is None:
        return False
    kind = "PodScheduled" if event.get("reason") == "FailedScheduling" else "Ready"
    since = _second(kube.true_conditions(pod).get(kind, {}).get("lastTransitionTime"))
    seen = event_seen(event)
    return bool(since and seen and seen <= since)


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{obj.get('kind')}/{meta.get('namespace')}/{meta.get('name')}")


class RunView:
    """The run as seen from the API, fed by list snapshots and watch events.

    ``run`` is the run name: Warning events count when they concern a pod of the run
    (matched by uid) or an object whose name starts with the run name (the controllers
    name everything they create after it).
    """

    def __init__(self, run: str, desired: dict[str, int], main_kind: str | None = None) -> None:
        self.run = run
        self.desired = desired
        self.main_kind = main_kind
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}  # kind -> key -> object
        self.events: dict[str, dict[str, Any]] = {}
        self.reported: set[tuple[str, str]] = set()
        self.notes: list[str] = []  # what could not be looked at (a kind the user may not list)
        self._last_lines: dict[str, str] = {}
        self.queue_position: tuple[int, int] | None = None  # Kueue's visibility API, when asked (status)
        self.queue_counts: tuple[int, int] | None = None  # the LocalQueue's (pending, admitted) Workloads

    # --- feeding -----------------------------------------------------------------------
    def sync(self, kind: str, items: list[dict[str, Any]]) -> None:
        if kind == "Event":
            self.events = {_key(e): e for e in items}
        else:
            self.objects[kind] = {_key(o): o for o in items}

    def update(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        store = self.events if kind == "Event" else self.objects.setdefault(kind, {})
        if etype == "DELETED":
            store.pop(_key(obj), None)
        else:
            store[_key(obj)] = obj

    # --- reading -----------------------------------------------------------------------
    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return sorted(self.objects.get(kind, {}).values(), key=lambda o: str((o.get("metadata") or {}).get("name")))

    @property
    def pods(self) -> list[dict[str, Any]]:
        return self.of_kind("Pod")

    def main(self) -> dict[str, Any] | None:
        items = self.of_kind(self.main_kind) if self.main_kind else []
        return (main_object(items) or items[0]) if items else None

    def main_phase(self) -> Phase | None:
        obj = self.main()
        return phase_of(obj, self.pods) if obj else None

    def fleets(self) -> list[FleetRow]:
        return fleet_rows(self.desired, self.pods)

    def workload(self) -> dict[str, Any] | None:
        """The Kueue Workload of the main object (a queued run), when Kueue made one."""
        main = self.main()
        return workload_of(self.of_kind("Workload"), main) if main is not None and "Workload" in self.objects \
            else None

    def _event_fleet(self, inv: dict[str, Any], pod: dict[str, Any] | None) -> str | None:
        name = str(inv.get("name", ""))
        if inv.get("kind") == "Pod":
            return fleet_of(pod) if pod is not None else None
        if inv.get("kind") in self.objects and inv.get("uid"):
            # an object the run tracks: only the live one's events (not an earlier attempt's cluster)
            return str(inv["kind"]) if str(inv["uid"]) in self.objects[str(inv["kind"])] else None
        if name == self.run or name.startswith(self.run + "-"):
            return "sandbox" if "-sandbox" in name else str(inv.get("kind") or "-")
        return None

    @staticmethod
    def _event_pod(inv: dict[str, Any], pods_by_uid: dict[str, dict[str, Any]],
                   pods_by_name: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        if inv.get("kind") != "Pod":
            return None
        return pods_by_uid.get(str(inv["uid"])) if inv.get("uid") else pods_by_name.get(str(inv.get("name", "")))

    def _bound(self, inv: dict[str, Any]) -> bool:
        """An event about a claim (``inv``) the view holds that is Bound now (a ProvisioningFailed
        before a volume was found): history, as a FailedScheduling before the pod was scheduled."""
        if inv.get("kind") != "PersistentVolumeClaim":
            return False
        claim = self.objects.get("PersistentVolumeClaim", {}).get(str(inv.get("uid")))
        return claim is not None and (claim.get("status") or {}).get("phase") == "Bound"

    def findings(self) -> list[Diagnosis]:
        """Pod-state findings first, then event findings not already explained, deduplicated."""
        pods = self.pods
        main = self.main()
        out: dict[tuple[str, str], Diagnosis] = {}
        for pod in pods:
            retries = submitter_retries(pod, pods, main)
            for f in pod_findings(pod):
                out.setdefault(f.key, retried(f, retries))
        for obj in self.of_kind("RayCluster"):
            for f in object_findings(obj):
                out.setdefault(f.key, f)
        by_uid = {str((p.get("metadata") or {}).get("uid")): p for p in pods}
        by_name = {str((p.get("metadata") or {}).get("name")): p for p in pods}

        image = ("ErrImagePull", "ImagePullBackOff")
        pulling = {k[0] for k in out if k[1] in image}  # pods already explained by an image problem
        for event in sorted(self.events.values(), key=event_seen):  # the latest of a reason wins
            inv = event.get("involvedObject") or event.get("regarding") or {}  # core/v1 or events.k8s.io
            about = self._event_pod(inv, by_uid, by_name)
            fleet = self._event_fleet(inv, about)
            if fleet is None or history(event, about) or self._bound(inv):
                continue
            found = event_finding(event, fleet)
            if found is None or (found.reason in image and found.pod in pulling):
                continue  # an image pull event and the pod's ImagePullBackOff state are one problem
            if found.reason in image:
                pulling.add(found.pod)
            out[found.key] = found
        said = list(out.values())
        workload = self.workload()
        if workload is not None and (state := workload_state(workload)).state == "admitted":
            said = admitted_by_kueue(said, state.cluster_queue, state.flavors)
        elif workload is not None and state.state == "pending" and (never := workload_finding(
                state.name, str(dig(workload, "metadata", "namespace") or ""), state.message)):
            said.append(never)
        return waiting_for_terminating(said, pods)  # the run's own terminating pods: the surer hint

    def new_findings(self) -> list[Diagnosis]:
        """Findings not reported before (each pod + reason once)."""
        fresh = [f for f in self.findings() if f.key not in self.reported]
        self.reported.update(f.key for f in fresh)
        return fresh

    def changes(self, *, fleets: bool = True) -> list[str]:
        """Progress lines that changed since the last call (main object, each fleet unless not
        ``fleets``: a burst of pod changes is said once, the main object's every state)."""
        lines: dict[str, str] = {}
        main = self.main()
        if main is not None:
            phase = phase_of(main, self.pods)
            lines["main"] = f"{main.get('kind')} {(main.get('metadata') or {}).get('name')}: {phase.summary}"
            workload = self.workload()
            if workload is not None:  # Kueue's own words on why it waits (or where it was admitted)
                lines["kueue"] = workload_state(workload).summary()
        for row in self.fleets() if fleets else ():
            lines[row.fleet] = fleet_line(row)
        out = [text for key, text in lines.items() if self._last_lines.get(key) != text]
        self._last_lines.update(lines)
        return out


# --- the pre-running deadline's clock -------------------------------------------------------

# RayJob deployment states in which KubeRay applies preRunningDeadlineSeconds (rayjob_controller.go:
# checkPreRunningDeadlineAndUpdateStatusIfNeeded runs in Initializing and Waiting; New becomes
# Initializing in the next reconcile). Suspended, Suspending and Retrying wait for Kueue or for the
# next attempt: no deadline there, and the next Initializing starts KubeRay's clock again.
RAYJOB_PRE_RUNNING = frozenset({"", "New", "Initializing", "Waiting"})
RAYJOB_PAUSED = frozenset({"Suspended", "Suspending", "Retrying"})


def pre_running_state(obj: dict[str, Any] | None, pods: list[dict[str, Any]]) -> tuple[str, str]:
    """(``counting`` | ``paused`` | ``done``, the attempt) of the main object for a pre-running
    deadline. A RayJob counts while KubeRay checks its deadline; the attempt is its
    ``status.startTime`` (KubeRay restarts its clock there on admission and on each new attempt)
    with its failed count. Other kinds count while pending and pause while suspended. Not there
    yet: counting."""
    if obj is None:
        return "counting", ""
    if obj.get("kind") == "RayJob":
        st = _status(obj)
        deployment = str(st.get("jobDeploymentStatus") or "")
        if deployment in RAYJOB_PRE_RUNNING:
            return "counting", f"{st['startTime']}/{st.get('failed') or 0}" if st.get("startTime") else ""
        return ("paused" if deployment in RAYJOB_PAUSED else "done"), ""
    state = phase_of(obj, pods).state
    if state == "pending":
        return "counting", ""
    return ("paused" if state in ("suspended", "retrying") else "done"), ""


class PreRunningClock:
    """The local pre-running deadline, on KubeRay's clock: it runs while the main object is
    not running yet (:func:`pre_running_state`), stops while it is suspended (queued in Kueue)
    or between attempts, and starts again from zero when counting resumes or a new attempt
    begins. Fed with the view after each change; read with the time now."""

    def __init__(self, start: float) -> None:
        self.since: float | None = start  # when the clock last started; None: not counting
        self.attempt: str | None = None  # the attempt last seen counting (None: none seen yet)

    def observe(self, state: tuple[str, str], now: float) -> None:
        what, attempt = state
        if what != "counting":
            self.since = None
        elif self.since is None or (self.attempt is not None and attempt and attempt != self.attempt):
            self.since = now  # counting again, or KubeRay began a new attempt
        if what == "counting" and attempt:
            self.attempt = attempt

    def elapsed(self, now: float) -> float | None:
        """Seconds on the clock, None while it is stopped."""
        return None if self.since is None else now - self.since
