"""Kueue on the live cluster: the run's Workload, what it says, and the Kueue objects ``doctor`` reads.

* :func:`workload_state` (pure) reads a Workload the way Kueue writes it (v0.19.2
  ``apis/kueue/v1beta2/workload_types.go``): ``Finished``, ``Evicted`` (and ``Preempted``),
  ``Admitted``, ``QuotaReserved``, ``Requeued`` conditions, ``status.admission`` (the
  ClusterQueue and the flavors of each pod set), ``admissionChecks`` and, with MultiKueue,
  ``status.clusterName`` — the worker cluster the job was dispatched to;
* :func:`workload_of` finds the run's Workload among a namespace's by ownerReference (Kueue
  names it ``<kind>-<job>-<hash>``, owned by the job);
* :func:`kueue_objects` is what ``plan --live`` and ``doctor`` read (``doctor.kueue_checks`` judges it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import as_mapping, conditions, true_conditions
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS

# Cluster-scoped Kueue kinds a snapshot needs, then the namespaced ones.
CLUSTER_KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "Topology", "WorkloadPriorityClass", "AdmissionCheck")
VISIBILITY = "visibility.kueue.x-k8s.io/v1beta2"  # the on-demand visibility API (beta, on by default)


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """One Workload, read: ``state`` is finished | evicted | admitted | reserved | pending."""

    name: str
    state: str
    reason: str
    message: str
    queue: str
    cluster_queue: str
    flavors: dict[str, dict[str, str]]  # pod set -> resource -> flavor
    worker_cluster: str  # MultiKueue: where it runs ("" otherwise)
    checks: list[tuple[str, str, str]]  # admission checks: (name, state, message)
    requeues: int
    requeue_at: str

    def summary(self) -> str:
        """One progress line, in Kueue's words."""
        where = f" in ClusterQueue {self.cluster_queue}" if self.cluster_queue else ""
        text = {
            "pending": f"queued in LocalQueue {self.queue}, not admitted",
            "reserved": f"quota reserved{where}, waiting for admission checks",
            "admitted": f"admitted{where}",
            "evicted": "evicted",
            "finished": "finished",
        }[self.state]
        if self.state != "admitted":
            text += (f" ({self.reason})" if self.reason else "") + (f": {self.message}" if self.message else "")
        if self.state == "admitted" and self.flavors:
            text += "; flavors " + ", ".join(f"{ps} {'/'.join(sorted(set(f.values())))}"
                                             for ps, f in self.flavors.items() if f)
        return f"Workload {self.name}: {text}"

    def lines(self, position: tuple[int, int] | None = None, counts: tuple[int, int] | None = None) -> list[str]:
        """What ``status`` prints about it (``position`` from the visibility API, else the LocalQueue's
        ``counts`` of pending and admitted Workloads)."""
        out = [self.summary()]
        if position is not None:
            out.append(f"  position {position[0]} in LocalQueue {self.queue}, {position[1]} in its ClusterQueue "
                       "(Kueue's visibility API)")
        elif counts is not None and self.state == "pending":
            out.append(f"  LocalQueue {self.queue}: {counts[0]} pending, {counts[1]} admitted Workload(s) (no "
                       "position: Kueue's visibility API did not answer)")
        for name, state, message in self.checks:
            out.append(f"  admission check {name}: {state}" + (f": {message}" if message else ""))
        if self.requeues:
            out.append(f"  requeued {self.requeues} time(s)" + (f", next at {self.requeue_at}" if self.requeue_at
                                                                  else ""))
        if self.worker_cluster:
            out += multikueue_lines(self.worker_cluster)
        return out


def multikueue_lines(cluster: str) -> list[str]:
    return [f"  dispatched by MultiKueue to worker cluster {cluster}: the pods run there, not on this cluster",
            f"  follow them there: --context {cluster} (the kubeconfig context of that cluster) with status/logs"]


def workload_state(wl: dict[str, Any]) -> WorkloadState:
    meta, spec, st = as_mapping(wl.get("metadata")), as_mapping(wl.get("spec")), as_mapping(wl.get("status"))
    conds, true = conditions(wl), true_conditions(wl)
    admission = as_mapping(st.get("admission"))
    flavors = {str(as_mapping(psa).get("name")): {str(r): str(f) for r, f in
                                                   as_mapping(as_mapping(psa).get("flavors")).items()}
               for psa in admission.get("podSetAssignments") or []}
    checks = [(str(as_mapping(c).get("name")), str(as_mapping(c).get("state", "")), str(as_mapping(c).get(
        "message", ""))) for c in st.get("admissionChecks") or []]
    requeue = as_mapping(st.get("requeueState"))

    def made(state: str, reason: Any, message: Any) -> WorkloadState:
        return WorkloadState(str(meta.get("name", "")), state, str(reason or ""), str(message or ""),
                             str(spec.get("queueName", "")), str(admission.get("clusterQueue", "")), flavors,
                             str(st.get("clusterName") or ""), checks, int(requeue.get("count") or 0),
                             str(requeue.get("requeueAt") or ""))

    if (c := true.get("Finished")) is not None:
        return made("finished", c.get("reason"), c.get("message"))
    evicted = true.get("Evicted")
    if evicted is not None and "Admitted" not in true:
        preempted = true.get("Preempted")
        reason = str(evicted.get("reason", "")) + (f", {preempted.get('reason', '')}" if preempted else "")
        message = str((preempted or evicted).get("message", ""))
        requeued = conds.get("Requeued")
        if requeued is not None and requeued.get("status") == "False" and requeued.get("message"):
            message += f"; requeue: {requeued.get('message')}"
        return made("evicted", reason, message)
    if (c := true.get("Admitted")) is not None:
        return made("admitted", c.get("reason"), c.get("message"))
    if (c := true.get("QuotaReserved")) is not None:
        return made("reserved", c.get("reason"), c.get("message"))
    c = conds.get("QuotaReserved") or {}
    return made("pending", c.get("reason"), c.get("message"))


def workload_of(workloads: list[dict[str, Any]], obj: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload of a job (by ownerReference; the newest when several)."""
    mine = [w for w in workloads if kueue.owned_by(w, obj)]
    mine.sort(key=lambda w: str(as_mapping(w.get("metadata")).get("creationTimestamp") or ""))
    return mine[-1] if mine else None


def queued(objects: list[dict[str, Any]]) -> bool:
    """Whether the run has a job Kueue queues (the label on a kind it integrates)."""
    return any(o.get("kind") in kueue.INTEGRATED_KINDS and kueue.queue_name(o) for o in objects)


# --- reading the cluster ---------------------------------------------------------------------------


def list_workloads(client: KubeClient, namespace: str | None) -> list[dict[str, Any]]:
    """The namespace's Workloads (None: every namespace's; none when Kueue is not installed)."""
    return client.list(KINDS["Workload"], namespace, missing_ok=True)[0]


def queue_position(client: KubeClient, namespace: str, local_queue: str, workload: str) -> tuple[int, int] | None:
    """(position in the LocalQueue, in the ClusterQueue) from Kueue's visibility API, or None when the
    API is not served, not allowed, or the Workload is not pending."""
    path = f"/apis/{VISIBILITY}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"
    try:
        doc = client.get_json(path, f"LocalQueue {namespace}/{local_queue} pending workloads")
    except ClusterError:
        return None
    for item in as_mapping(doc).get("items") or []:
        item = as_mapping(item)
        if as_mapping(item.get("metadata")).get("name") == workload:
            return int(item.get("positionInLocalQueue", 0)) + 1, int(item.get("positionInClusterQueue", 0)) + 1
    return None


def queue_counts(client: KubeClient, namespace: str, local_queue: str) -> tuple[int, int] | None:
    """(pending, admitted) Workloads of a LocalQueue, from its status (None when unreadable)."""
    try:
        lq = client.get(KINDS["LocalQueue"], namespace, local_queue)
    except ClusterError:
        return None
    if lq is None:
        return None
    st = as_mapping(lq.get("status"))
    return int(st.get("pendingWorkloads") or 0), int(st.get("admittedWorkloads") or 0)


def kueue_installed(client: KubeClient) -> bool:
    """Whether the API server serves Kueue's ClusterQueue (its CRDs are installed)."""
    crd = KINDS["CustomResourceDefinition"]
    return client.get(crd, None, "clusterqueues.kueue.x-k8s.io") is not None


def kueue_objects(client: KubeClient, namespaces: list[str]) -> list[dict[str, Any]]:
    """Every Kueue object a plan of a run in ``namespaces`` reads, plus PriorityClasses and the
    namespaces themselves (a ClusterQueue selects namespaces by their labels)."""
    out: list[dict[str, Any]] = []
    for name in CLUSTER_KINDS:
        out += client.list(KINDS[name], None, missing_ok=True)[0]
    out += list_workloads(client, None)
    for ns in namespaces:
        out += client.list(KINDS["LocalQueue"], ns, missing_ok=True)[0]
        namespace = client.get(KINDS["Namespace"], None, ns)
        if namespace is not None:
            out.append({"apiVersion": "v1", "kind": "Namespace", **namespace})
    out += client.list(KINDS["PriorityClass"], None, missing_ok=True)[0]
    return out
