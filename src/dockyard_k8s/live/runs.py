"""Runs found on the cluster by name, without the files they were launched from, and the
list of every run of a namespace (``dockyard-k8s runs``).

A run is everything labelled ``dockyard-k8s/run=<run>``. What the launcher applied is what
carries that label and is owned by nothing (a RayJob's RayCluster and submitter Job, a
Deployment's pods are the operators'); the launch record (:mod:`~dockyard_k8s.live.record`)
adds what the run was launched with. ``status RUN``, ``logs RUN``, ``down RUN`` and
``job ... RUN`` work from these.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live import orchestrate, teardown
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS, POD, RAYCLUSTER, RAYJOB, Kind, kind_of
from dockyard_k8s.live.kueue import list_workloads, workload_of, workload_state
from dockyard_k8s.live.logs import select_pods
from dockyard_k8s.live.progress import MAIN_KINDS, RunView, main_object, phase_of
from dockyard_k8s.live.rayhead import RayTarget, ray_cluster_of
from dockyard_k8s.live.record import Record, read_record, self_deleted
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import MANAGED_BY, RUN_LABEL
from dockyard_k8s.render.record import GPUS_ANNOTATION, MODE_ANNOTATION, RECORD_COMPONENT, record_name, total_gpus
from dockyard_k8s.suggest import did_you_mean

MANAGED = f"app.kubernetes.io/managed-by={MANAGED_BY}"
RECORDS = f"app.kubernetes.io/component={RECORD_COMPONENT},{MANAGED}"
# The launch mode a main kind means, for runs without a record (manifests applied without it).
MODE_OF_KIND = {"RayJob": "rayjob", "RayCluster": "bringup", "Job": "job", "StatefulSet": "statefulset",
                "MPIJob": "mpijob"}


@dataclass(frozen=True, slots=True)
class RunRef:
    """A run found on the cluster."""

    namespace: str
    run: str
    objects: list[dict[str, Any]]  # what the launcher applied (live objects, owned by nothing)
    record: Record | None

    @property
    def found(self) -> bool:
        return bool(self.objects) or self.record is not None

    @property
    def mode(self) -> str:
        if self.record is not None and self.record.launch.get("mode"):
            return str(self.record.launch["mode"])
        main = main_object(self.objects)
        return MODE_OF_KIND.get(str(main.get("kind")), "-") if main else ("attach" if self.objects else "-")


def _kinds(extra: Iterable[dict[str, Any]]) -> list[Kind]:
    return [RAYJOB, RAYCLUSTER, *(KINDS[k] for k in orchestrate.RUN_KINDS), *(kind_of(o) for o in extra)]


def find_run(client: KubeClient, namespace: str, run: str) -> RunRef:
    """The run ``run`` of ``namespace``: its record and the objects the launcher applied (one
    GET and one LIST per kind, kinds the server lacks skipped)."""
    record = read_record(client.get(KINDS["ConfigMap"], namespace, record_name(run)))
    found = orchestrate.find_run_objects(client, namespace, run, _kinds(record.objects if record else []))
    applied = [o for o in found if not (o.get("metadata") or {}).get("ownerReferences")]
    return RunRef(namespace, run, applied, record)


def status(client: KubeClient, ref: RunRef) -> RunView:
    """The run right now, as ``launch.status`` gives it for a bundle."""
    return orchestrate.snapshot(client, ref.namespace, ref.run, ref.objects)


def down(client: KubeClient, ref: RunRef, *, include_governance: bool = False, keep_volumes: bool = True,
         dry_run: bool = False, timeout: float = teardown.PODS_TIMEOUT,
         say: Callable[[str], None] = print) -> list[str]:
    """Delete everything of the run, every kind it applied included (from the record); its
    NetworkPolicies once its pods are gone (``timeout`` seconds at most)."""
    kinds_of = [*ref.objects, *(ref.record.objects if ref.record else [])]
    return teardown.down(client, ref.namespace, ref.run, kinds_of, include_governance=include_governance,
                         keep_volumes=keep_volumes, dry_run=dry_run, say=say, pods_timeout=timeout)


def log_pods(client: KubeClient, ref: RunRef, *, fleet: str | None = None, pod: str | None = None,
             selector: str = "") -> list[dict[str, Any]]:
    """The pods whose logs ``logs`` shows: ``pod``, a ``fleet``, or the default (the RayJob
    submitter when there is one, else the head). One LIST."""
    main = main_object(ref.objects)
    label = ",".join(s for s in (orchestrate.run_selector(ref.run), selector) if s)
    pods, _ = client.list(POD, ref.namespace, label_selector=label)
    return select_pods(pods, fleet=fleet, pod=pod, main_kind=main["kind"] if main else None)


def ray_target(client: KubeClient, namespace: str, name: str, target: RayTarget) -> tuple[RunRef, RayTarget]:
    """Run ``name`` found on the cluster, and its Ray dashboard: its RayJob's cluster, its bringup
    cluster, or the cluster/address attach mode named (from the launch record); ``target``'s own
    address or cluster (the flags) win."""
    ref = find_run(client, namespace, name)
    if not ref.found:
        raise no_run(client, ref)
    cluster, address = ray_cluster(client, ref)
    if not (target.address or target.cluster or cluster or address):
        raise ClusterError(f"run {name} has no Ray cluster (yet)", obj=f"run {namespace}/{name}",
                           hint=f"`dockyard-k8s status {name} -n {namespace}` shows where it is")
    return ref, dataclasses.replace(target, address=target.address or address, cluster=target.cluster or cluster,
                                    namespace=namespace)


def near_run(client: KubeClient, namespace: str, run: str) -> str:
    """``; did you mean 'grpo-swe'?`` when a run of ``namespace`` has a name near ``run`` (a typo)."""
    return did_you_mean(run, [r.name for r in list_runs(client, namespace) if r.name != run])


def no_run(client: KubeClient, ref: RunRef) -> ClusterError:
    return ClusterError(f"no run {ref.run} in namespace {ref.namespace}{near_run(client, ref.namespace, ref.run)}",
                        hint="`dockyard-k8s runs -A` lists the runs")


def ray_cluster(client: KubeClient, ref: RunRef) -> tuple[str | None, str | None]:
    """(RayCluster name, dashboard address) the run's Ray jobs go to: the RayJob's cluster,
    the bringup cluster, or what attach mode names (from the record)."""
    attach = ((ref.record.infra.get("launch") or {}).get("attach") or {}) if ref.record else {}
    return ray_cluster_of(main_object(ref.objects), attach)


# --- every run of a namespace ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RunRow:
    namespace: str
    name: str
    mode: str
    state: str
    gpus: int | None
    created: str  # creationTimestamp (RFC 3339)
    queue: str  # Kueue: the Workload's state ("" when the run is not queued or Kueue is absent)
    summary: str

    def as_dict(self, now: dt.datetime | None = None) -> dict[str, Any]:
        """The row as ``runs -o json`` shows it: the fields in order, then ``age`` (at ``now``)."""
        return {**dataclasses.asdict(self), "age": age(self.created, now or dt.datetime.now(dt.UTC))}


def run_of(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, run) of an object labelled with a run; None when it carries no run label."""
    meta = obj.get("metadata") or {}
    run = (meta.get("labels") or {}).get(RUN_LABEL)
    return (str(meta.get("namespace")), str(run)) if run else None


def queue_text(workloads: list[dict[str, Any]], main: dict[str, Any] | None) -> str:
    """The QUEUE column: the state of the Kueue Workload of the run's job, in Kueue's words."""
    wl = workload_of(workloads, main) if main is not None else None
    if wl is None:
        return ""
    st = workload_state(wl)
    return f"{st.state} ({st.reason})" if st.reason and st.state in ("pending", "evicted") else st.state


def list_runs(client: KubeClient, namespace: str | None, *, selector: str = "") -> list[RunRow]:
    """Every run of ``namespace`` (None: all namespaces): one LIST of launch records, one per
    main kind (RayJob, RayCluster, Job, StatefulSet, MPIJob) and one of Kueue Workloads,
    whatever the number of pods. ``selector`` narrows by label (kubectl's -l)."""
    def labels(base: str) -> str:
        return ",".join(s for s in (base, selector) if s)

    records = {key: r for r in client.list(KINDS["ConfigMap"], namespace, label_selector=labels(RECORDS))[0]
               if (key := run_of(r))}
    mains: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for kind in MAIN_KINDS:
        for o in client.list(KINDS[kind], namespace, label_selector=labels(MANAGED), missing_ok=True)[0]:
            if not (o.get("metadata") or {}).get("ownerReferences") and (key := run_of(o)):
                mains[key].append(o)
    queues = list_workloads(client, namespace)
    rows = []
    for ns, run in sorted({*records, *mains}):
        cm = records.get((ns, run))
        ref = RunRef(ns, run, mains.get((ns, run), []), read_record(cm))
        main = main_object(ref.objects)
        phase = phase_of(main, _head_pod(client, main)) if main else None
        annotations = dig(cm, "metadata", "annotations") or {}
        gpus_text = annotations.get(GPUS_ANNOTATION)
        gpus = int(gpus_text) if gpus_text and gpus_text.isdigit() else (total_gpus([main]) if main else None)
        mode = annotations.get(MODE_ANNOTATION) or ref.mode
        created = str(dig(cm or main, "metadata", "creationTimestamp") or "")
        queue = queue_text(queues, main)
        ended = None if main else self_deleted(ref.record, ref.objects)  # a RayJob its DeleteSelf rule removed
        state = phase.state if phase else (ended.state_text if ended else "submitted" if mode == "attach" else "-")
        summary = phase.summary if phase else (ended.summary if ended else "")
        rows.append(RunRow(ns, run, mode, state, gpus, created, queue, summary))
    return rows


def _head_pod(client: KubeClient, main: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod a StatefulSet run's state is read from (its head, pod 0: one GET); [] for the
    kinds whose state is their own status."""
    if main.get("kind") != "StatefulSet":
        return []
    meta = main.get("metadata") or {}
    pod = client.get(POD, meta.get("namespace"), f"{meta.get('name')}-0")
    return [pod] if pod else []


def age(created: str, now: dt.datetime) -> str:
    """kubectl's AGE: 45s, 12m, 5h, 3d."""
    try:
        then = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    secs = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size * (2 if unit != "m" else 1):
            return f"{secs // size}{unit}"
    return f"{secs}s"


def run_job_id(ref: RunRef, jobs: list[dict[str, Any]]) -> str | None:
    """The Ray job of a run found by name: a RayJob's ``status.jobId``, else the latest
    submission whose id the launcher derived from the run name (``<run>-<digest>``)."""
    main = main_object(ref.objects)
    if main is not None and main.get("kind") == "RayJob" and (main.get("status") or {}).get("jobId"):
        return str(main["status"]["jobId"])
    mine = [j for j in jobs if str(j.get("submission_id") or "").startswith(f"{ref.run}-")]
    mine.sort(key=lambda j: j.get("start_time") or 0)
    return str(mine[-1]["submission_id"]) if mine else None
