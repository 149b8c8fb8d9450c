"""The flows behind ``run`` and ``status`` (and what ``down``, in teardown.py, finds), generic over kinds.

Everything of a run is found by the label ``dockyard-k8s/run=<run>`` (one LIST per kind,
never one request per pod); what to apply is exactly the bundle ``render`` prints, minus
the render-only kinds (ResourceQuota, LimitRange). A model endpoint (``serve``) goes through
the same flows with its own ``selector`` (``dockyard-k8s/endpoint=<name>``) and its
Deployment as the main object.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import format_ref
from dockyard_k8s.live.client import ApplyResult, KubeClient, WatchEvent
from dockyard_k8s.live.diagnose import OPERATOR_REFUSED, Diagnosis
from dockyard_k8s.live.kinds import EVENT, KINDS, POD, RAYCLUSTER, RAYJOB, Kind, kind_of
from dockyard_k8s.live.kueue import list_workloads, queue_counts, queue_position, queued, workload_state
from dockyard_k8s.live.progress import (
    MAIN_KINDS,
    Phase,
    PreRunningClock,
    RunView,
    desired_pods,
    main_object,
    phase_of,
    pre_running_state,
)
from dockyard_k8s.live.scaling import explain_conflict, keep_added, keep_autoscaled
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL
from dockyard_k8s.render.record import RENDER_ONLY

# Kinds a run may own beyond what is rendered: what the operators create from our objects
# (a RayJob's RayCluster) and the workload kinds of every launch shape, so `down` and
# `status` still find them after the spec changed shape.
RUN_KINDS = ("RayJob", "RayCluster", "Job", "StatefulSet", "Deployment", "Service", "ConfigMap",
             "PodDisruptionBudget", "NetworkPolicy", "Secret",  # Secret: the Ray token `run` created
             "ServiceAccount")  # the sandbox's own
# Kept by `down` unless asked: data a next run reuses.
KEEP_BY_DEFAULT = frozenset({"PersistentVolumeClaim"})


@dataclass(frozen=True, slots=True)
class Applied:
    ref: str
    action: str  # created | configured | unchanged | skipped (render-only) | would create... (dry run)


def tally(applied: list[Applied]) -> str:
    """How many objects got each action (its first word), in the order first met: ``2 created, 5 unchanged``."""
    counts = Counter(a.action.split()[0] for a in applied)
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def run_selector(run: str) -> str:
    return f"{RUN_LABEL}={run}"


def split_apply(objects: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(objects `run` applies, in order; render-only objects it skips)."""
    objs = list(objects)
    return [o for o in objs if o.get("kind") not in RENDER_ONLY], [o for o in objs if o.get("kind") in RENDER_ONLY]


def _name(obj: dict[str, Any]) -> tuple[Kind, str | None, str]:
    kind = kind_of(obj)
    meta = obj.get("metadata") or {}
    return kind, (meta.get("namespace") if kind.namespaced else None), str(meta.get("name"))


def _preflight(client: KubeClient, objects: list[dict[str, Any]], force: bool) -> None:
    """A server dry run of every object first: admission, schemas (an older operator's CRD)
    and conflicts refuse the run before anything is applied, so nothing is half-applied."""
    refused: list[ClusterError] = []
    for obj in objects:
        try:
            apply_one(client, obj, dry_run=True, force=force)
        except ClusterError as e:
            if e.status == 0:  # not an answer of the API server (unreachable): as it is
                raise
            refused.append(e)
    if not refused:
        return
    if len({(str(r), r.hint) for r in refused}) == 1:  # one reason (a namespace missing): said once
        one = refused[0]
        more = f"; the same for {len(refused) - 1} more object(s) of the run" if len(refused) > 1 else ""
        raise ClusterError(f"{one} (nothing was applied{more})", obj=one.obj, status=one.status, hint=one.hint)
    lines = "\n".join(f"  {r.obj}: {r}" + (f"\n    hint: {r.hint}" if r.hint else "") for r in refused)
    raise ClusterError(f"the API server refuses {len(refused)} object(s) of the run; nothing was applied:\n{lines}",
                       status=refused[0].status)


def _keep_scaling(client: KubeClient, obj: dict[str, Any], say: Callable[[str], None]) -> dict[str, Any]:
    """An autoscaled RayCluster applied with the replicas its autoscaler set, a RayJob or
    RayCluster with what KubeRay and Kueue added to its worker groups (live/scaling)."""
    if obj.get("kind") not in ("RayCluster", "RayJob"):  # no GET for the kinds nobody else writes so
        return obj
    kind, ns, name = _name(obj)
    live = client.get(kind, ns, name)
    out, kept = keep_autoscaled(obj, live)
    if kept:
        groups = ", ".join(f"{g} {n}" for g, n in sorted(kept.items()))
        say(f"{format_ref(kind.kind, ns, name)} keeps the replicas the autoscaler set ({groups})")
    return keep_added(out, live)


def apply_one(client: KubeClient, obj: dict[str, Any], *, dry_run: bool = False, force: bool = False,
              before: dict[str, Any] | None = None) -> ApplyResult:
    """Server-side apply of one object. A conflict on a RayJob's or RayCluster's worker groups that
    another manager wrote after they were read (Kueue admitting the job in between) is tried once
    more with what it wrote, as :func:`_keep_scaling` would have kept it; any other is explained."""
    try:
        return client.apply(obj, dry_run=dry_run, force=force, before=before)
    except ClusterError as e:
        if e.status != 409 or obj.get("kind") not in ("RayCluster", "RayJob"):
            raise explain_conflict(e, obj) from e
        kind, ns, name = _name(obj)
        live = client.get(kind, ns, name)
        again = keep_added(obj, live)
        if again is obj:
            raise explain_conflict(e, obj) from e
        try:
            return client.apply(again, dry_run=dry_run, force=force, before=live)
        except ClusterError as e2:
            raise explain_conflict(e2, again) from e2


def wait_terminating(client: KubeClient, kind: Kind, namespace: str | None, name: str, obj: dict[str, Any], *,
                     timeout: float, say: Callable[[str], None]) -> None:
    """An object being deleted (a finalizer holds it) must be gone before it is applied again:
    applied onto, it would still be deleted, taking the new run with it."""
    what = format_ref(kind.kind, namespace, name)
    finalizers = ", ".join(dig(obj, "metadata", "finalizers") or []) or "garbage collection"
    say(f"waiting for {what} to finish deleting ({finalizers}) ...")
    if not wait_deleted(client, kind, namespace, name, timeout=timeout):
        raise ClusterError(f"still being deleted after {int(timeout)}s (held by {finalizers})", obj=what,
                           hint="its controller must release the finalizer (is the operator running?): "
                                f"`kubectl get {kind.plural} -n {namespace} {name} -o yaml`")


def apply_objects(client: KubeClient, objects: Iterable[dict[str, Any]], *, dry_run: bool = False,
                  force: bool = False, terminating_timeout: float = 300,
                  say: Callable[[str], None] = print) -> list[Applied]:
    """Server-side apply in order, each object's action said; render-only kinds are reported as
    skipped. Before the first write, a server dry run of everything; an object still being
    deleted is waited for first; ``Warning`` headers are said."""
    out = []
    to_apply, skipped = split_apply(objects)
    for obj in skipped:
        kind, ns, name = _name(obj)
        item = Applied(format_ref(kind.kind, ns, name), "skipped (render-only; apply it with `render | kubectl apply`)")
        out.append(item)
        say(f"{item.action:<10} {item.ref}")
    to_apply = [_keep_scaling(client, obj, say) for obj in to_apply]
    if not dry_run:
        _preflight(client, to_apply, force)
    for obj in to_apply:
        kind, ns, name = _name(obj)
        before = client.get(kind, ns, name)
        if before is not None and dig(before, "metadata", "deletionTimestamp") and not dry_run:
            wait_terminating(client, kind, ns, name, before, timeout=terminating_timeout, say=say)
            before = None
        result = apply_one(client, obj, dry_run=dry_run, force=force, before=before)
        action = result.action if not dry_run else f"{result.action} (server dry run)"
        item = Applied(format_ref(kind.kind, ns, name), action)
        out.append(item)
        say(f"{item.action:<10} {item.ref}")
        for text in result.warnings:
            say(f"warning: {item.ref}: {text}")
    return out


_Inbox = queue.Queue[tuple[Kind, WatchEvent | BaseException]]


@contextmanager
def _watching(client: KubeClient, namespace: str | None, sources: list[tuple[Kind, str, str]]) -> Iterator[_Inbox]:
    """One thread per watch (kind, label selector, field selector) feeding one queue with
    (kind, event), or (kind, the error) that ended it; leaving the block stops them all."""
    stop = threading.Event()
    inbox: _Inbox = queue.Queue()

    def pump(kind: Kind, label_selector: str, field_selector: str) -> None:
        try:
            for ev in client.watch(kind, namespace, label_selector=label_selector, field_selector=field_selector,
                                   stop=stop):
                inbox.put((kind, ev))
        except BaseException as e:  # handed to the waiting thread
            if not stop.is_set():
                inbox.put((kind, e))

    threads = [threading.Thread(target=pump, args=s, daemon=True, name=f"watch-{s[0].plural}") for s in sources]
    for t in threads:
        t.start()
    try:
        yield inbox
    finally:
        stop.set()
        client.close_streams()
        join_all(threads)


def watch_for(client: KubeClient, kind: Kind, namespace: str | None, *, timeout: float,
              field_selector: str = "", label_selector: str = "") -> Generator[WatchEvent, None, None]:
    """Watch events until ``timeout`` seconds pass, even when none arrive: the watch runs in
    a thread feeding a queue, so the deadline is checked while the stream is silent. Errors
    of the watch are raised here; closing the generator stops the watch."""
    deadline = time.monotonic() + timeout
    with _watching(client, namespace, [(kind, label_selector, field_selector)]) as inbox:
        while (left := deadline - time.monotonic()) > 0:
            try:
                _, ev = inbox.get(timeout=min(0.5, max(0.01, left)))
            except queue.Empty:
                continue
            if isinstance(ev, BaseException):
                raise ev
            yield ev


# How long stopping a command's watch threads may take, all of them together: close_streams
# ends every open watch at once; a thread still inside a request it cannot end (a LIST) is a
# daemon and is left behind rather than waited for (one join each, in turn, made the verdict
# and Ctrl-C late by seconds).
JOIN_SECONDS = 0.5


def join_all(threads: Iterable[threading.Thread], seconds: float = JOIN_SECONDS,
             clock: Callable[[], float] = time.monotonic) -> None:
    """Join ``threads`` within one shared deadline of ``seconds``."""
    deadline = clock() + seconds
    for t in threads:
        t.join(timeout=max(0.0, deadline - clock()))


def wait_deleted(client: KubeClient, kind: Kind, namespace: str | None, name: str, *, timeout: float) -> bool:
    """Watch one object until it is gone (like ``kubectl wait --for=delete``); False on timeout."""
    with closing(watch_for(client, kind, namespace, timeout=timeout, field_selector=f"metadata.name={name}")) as events:
        return any((ev.type == "SYNC" and not ev.items) or ev.type == "DELETED" for ev in events)


def replace_main(client: KubeClient, objects: list[dict[str, Any]], *, timeout: float = 300,
                 say: Callable[[str], None] = print) -> bool:
    """``run --replace``: delete the run's main object (job or cluster) and wait until it is gone.
    True when something was deleted."""
    main = main_object(objects)
    if main is None:
        return False
    kind, ns, name = _name(main)
    if not client.delete(kind, ns, name, propagation="Foreground"):
        return False
    say(f"deleting {format_ref(kind.kind, ns, name)} (--replace) ...")
    if not wait_deleted(client, kind, ns, name, timeout=timeout):
        raise ClusterError(f"still present after {int(timeout)}s", obj=format_ref(kind.kind, ns, name),
                           hint="a finalizer may block deletion: `kubectl get -o yaml` shows metadata.finalizers")
    return True


def watched_kinds(objects: Iterable[dict[str, Any]]) -> list[Kind]:
    """Workload kinds to follow: the main kinds present, plus the RayCluster a RayJob makes."""
    kinds = {str(o.get("kind")): kind_of(o) for o in objects}
    out = [kinds[k] for k in MAIN_KINDS if k in kinds]
    if "RayJob" in kinds and "RayCluster" not in kinds:
        out.append(RAYCLUSTER)
    if "Deployment" in kinds:
        out.append(kinds["Deployment"])
    return out


def new_view(run: str, objects: list[dict[str, Any]], main_kind: str | None = None) -> RunView:
    """``main_kind`` names the kind to wait on when it is not one of the run's (serve: Deployment)."""
    main = main_object(objects)
    return RunView(run, desired_pods(objects), main_kind or (str(main.get("kind")) if main else None))


def list_of_run(client: KubeClient, kind: Kind, namespace: str, run: str, *, rendered: Iterable[str],
                note: Callable[[str], None], selector: str | None = None) -> list[dict[str, Any]]:
    """The run's objects of one kind (a LIST by label, or ``selector``). A kind the server
    does not serve lists as empty; one the user may not list (403) too, with a note, unless
    the run renders it (then the command cannot do its job and the error stands)."""
    try:
        items, _ = client.list(kind, namespace if kind.namespaced else None,
                               label_selector=selector or run_selector(run), missing_ok=True)
    except ClusterError as e:
        if e.status != 403 or kind.kind in set(rendered):
            raise
        note(f"warning: not allowed to list {kind.resource} in {namespace} (403): not looked at "
             f"(`kubectl auth can-i list {kind.resource} -n {namespace}`)")
        return []
    return items


def snapshot(client: KubeClient, namespace: str, run: str, objects: list[dict[str, Any]], *,
             selector: str | None = None, main_kind: str | None = None) -> RunView:
    """One LIST per kind (label selector) + one LIST of Warning events: the run right now."""
    view = new_view(run, objects, main_kind)
    rendered = {str(o.get("kind")) for o in objects}
    for kind in [*watched_kinds(objects), POD]:
        view.sync(kind.kind, list_of_run(client, kind, namespace, run, rendered=rendered, note=view.notes.append,
                                         selector=selector))
    if queued(objects):  # Kueue's Workloads carry no run label: the job owns its Workload (not another run's)
        main = view.main()
        view.sync("Workload", [w for w in list_workloads(client, namespace)
                               if main is not None and kueue.owned_by(w, main)])
        state = workload_state(wl) if (wl := view.workload()) is not None else None
        if state is not None and state.state == "pending" and state.queue:
            view.queue_position = queue_position(client, namespace, state.queue, state.name)
            if view.queue_position is None:  # no visibility API: the LocalQueue's counts, at least
                view.queue_counts = queue_counts(client, namespace, state.queue)
    if "RayJob" in view.objects and not view.of_kind("RayCluster"):
        # KubeRay names the RayJob's cluster in status; older operators do not copy our labels onto it
        for job in view.of_kind("RayJob"):
            name = dig(job, "status", "rayClusterName")
            cluster = client.get(RAYCLUSTER, namespace, name) if name else None
            if cluster:
                view.update("RayCluster", "ADDED", cluster)
    events, _ = client.list(EVENT, namespace, field_selector="type=Warning")
    view.sync("Event", events)
    return view


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a launch or a follow ended."""

    ok: bool
    reason: str  # succeeded | failed | ready | timeout | pre-running-deadline | fatal | applied | detached ...
    message: str
    submission_id: str = ""  # attach mode: the Ray job


def follow(client: KubeClient, namespace: str, run: str, objects: list[dict[str, Any]], *,
           say: Callable[[str], None], timeout: float | None = None, pre_running_deadline: float | None = None,
           fail_fast: bool = False, operator_deadline: float | None = None, selector: str | None = None,
           main_kind: str | None = None, on_view: Callable[[RunView], Outcome | None] | None = None) -> Outcome:
    """Watch the run until its main object is terminal; print progress and findings as they happen.
    ``pre_running_deadline`` ends following when the run is not running in time; with
    ``operator_deadline`` it is the fallback of a deadline the operator should have enforced.

    Three watches feed one queue: the workload kinds and the pods (label selector), and
    Warning events of the namespace. Nothing is polled. ``selector`` and ``main_kind`` make
    it follow something other than a run (an endpoint: its label, its Deployment). ``on_view``
    looks at the view after each change and may end following with its own outcome (``run``'s
    check that the Ray head refuses a request without the token).
    """
    view = new_view(run, objects, main_kind)
    start = time.monotonic()
    selector = selector or run_selector(run)
    rendered = {str(o.get("kind")) for o in objects}
    sources = [(k, selector, "") for k in watched_kinds(objects)]
    sources += [(POD, selector, ""), (EVENT, "", "type=Warning")]
    if queued(objects):
        if client.list(KINDS["Workload"], namespace, missing_ok=True)[1]:  # "" when not served
            sources.append((KINDS["Workload"], "", ""))  # the run's Workload: Kueue's reasons while it waits
        else:
            say("note: the run is queued with Kueue (kueue.x-k8s.io/queue-name) but this cluster serves no Kueue "
                "Workloads: Kueue is not installed, so nothing queues the job (it runs as soon as it is created)")
    tracked = {k.kind for k, _, _ in sources} - {"Event"}
    told_no_workload = "Workload" not in tracked  # a queued job Kueue makes no Workload for: said once
    synced: set[str] = set()
    last: dict[str, Any] | None = None  # the main object as the last event that had it left it
    deadline_clock = PreRunningClock(start)  # stopped while Kueue holds the job, restarted per attempt

    def stamp() -> str:
        secs = int(time.monotonic() - start)
        return f"[{secs // 60:02d}:{secs % 60:02d}]"

    def tell(f: Diagnosis) -> None:
        say(f"{stamp()} ✖ {f.line()}\n         hint: {f.hint}")

    with _watching(client, namespace, sources) as inbox:
        while True:
            now = time.monotonic()
            if timeout is not None and now - start >= timeout:
                return Outcome(False, "timeout", f"stopped following after {int(timeout)}s; the run keeps going")
            waited = deadline_clock.elapsed(now)
            if pre_running_deadline is not None and waited is not None and waited >= pre_running_deadline:
                if operator_deadline:
                    return Outcome(False, "pre-running-deadline",
                                   f"not running after {int(waited)}s; its preRunningDeadlineSeconds is "
                                   f"{int(operator_deadline)} but KubeRay did not end it (an operator older than "
                                   "v1.6.0 ignores the field, or the operator is not reconciling); the run is left "
                                   "as is")
                return Outcome(False, "pre-running-deadline",
                               f"not running after {int(pre_running_deadline)}s (pre-running deadline); "
                               "the run is left as is")
            if not told_no_workload and len(synced) == len(sources) and now - start >= NO_WORKLOAD_SECONDS \
                    and view.workload() is None and getattr(view.main_phase(), "state", "") == "suspended":
                told_no_workload = True
                say(f"{stamp()} {no_workload_note(view.main() or {})}")
            batch = _burst(inbox)
            for source, ev in batch:
                kind = source.kind
                if isinstance(ev, ClusterError) and ev.status == 403 and kind not in rendered and kind != "Pod":
                    say(f"warning: not allowed to watch {source.resource} in {namespace} (403): followed without them")
                    ev = WatchEvent("SYNC", {}, [])
                    told_no_workload = told_no_workload or kind == "Workload"  # unseen, not missing
                if isinstance(ev, BaseException):
                    raise ev
                if ev.type == "SYNC":
                    view.sync(kind, ev.items)
                    if kind == "Event" and "Event" not in synced:
                        # warnings from before this command about objects the run does not watch
                        # (ReplicaSets...) are history; those about pods and watched objects count
                        # while they concern the live ones (matched by uid)
                        for key, event in list(view.events.items()):
                            if dig(event, "involvedObject", "kind") not in tracked:
                                view.events.pop(key)
                    synced.add(kind)
                else:
                    view.update(kind, ev.type, ev.obj)
                deadline_clock.observe(pre_running_state(view.main(), view.pods), time.monotonic())
                last = view.main() or last  # as of each event: a burst may hold its end and its deletion
                if len(synced) == len(sources):
                    for line in view.changes(fleets=False):  # each state of the main object
                        say(f"{stamp()} {line}")
            if not batch or len(synced) < len(sources):
                continue  # print once every first list is in
            for line in view.changes():
                say(f"{stamp()} {line}")
            refused: Diagnosis | None = None
            for f in view.new_findings():
                tell(f)
                if f.reason in OPERATOR_REFUSED:  # KubeRay <= 1.4: no status, requeued forever
                    refused = refused or f
                if fail_fast and f.fatal:
                    return Outcome(False, "fatal", f"{f.fleet}/{f.pod}: {f.reason} (--fail-fast)")
            phase: Phase | None = view.main_phase()
            main = view.main()
            if (phase is None and last is not None) or dig(main, "metadata", "deletionTimestamp"):
                # the main object was there and is gone, or is going (a finalizer holds it)
                return deleted_outcome(main or last or {}, view.pods, namespace)
            # before a terminal state: a bringup cluster is "ready" as soon as its head is
            verdict = on_view(view) if on_view is not None else None
            if verdict is not None:
                return verdict
            if phase is not None:
                if phase.terminal:
                    for f in _drain(inbox, view):
                        tell(f)
                    return Outcome(phase.ok, phase.state, phase.summary)
            elif view.main_kind is None:
                return Outcome(True, "applied", "nothing to wait for")
            if refused is not None:
                return Outcome(False, "invalid", f"{refused.pod}: {refused.reason}: {refused.message}")


# Kueue makes a queued job's Workload within a second or so; a suspended job without one after
# this long is one Kueue's job reconciler fails on, and nothing else would say so.
NO_WORKLOAD_SECONDS = 15.0


def no_workload_note(main: dict[str, Any]) -> str:
    """Why a suspended, queued job may have no Workload (seen on Kueue v0.19.2: a missing
    WorkloadPriorityClass fails its reconciler, in the manager's log only)."""
    priority = kueue.priority_class(main)
    missing = f"its WorkloadPriorityClass {priority} missing? `kubectl get workloadpriorityclass {priority}`; " \
        if priority else ""
    return (f"note: Kueue has made no Workload for {main.get('kind')} {dig(main, 'metadata', 'name')} in "
            f"{int(NO_WORKLOAD_SECONDS)}s, so nothing queues it: Kueue's job reconciler fails on it ({missing}the "
            "error is in the Kueue manager's log only), or the manager is not running (`kubectl -n kueue-system "
            "get pods`)")


# A burst of watch events (16 sandbox pods turning Ready within milliseconds) is taken in whole
# before the fleets' lines print, so it reads as one line per fleet instead of one per pod (the main
# object's states are each said): after the first event, more are taken while they come within
# QUIET seconds of each other, for at most BURST.
QUIET, BURST = 0.05, 0.2


def _burst(inbox: _Inbox) -> list[tuple[Kind, WatchEvent | BaseException]]:
    try:
        out = [inbox.get(timeout=0.25)]
    except queue.Empty:
        return []
    end = time.monotonic() + BURST
    while not isinstance(out[-1][1], BaseException) and (left := end - time.monotonic()) > 0:
        try:
            out.append(inbox.get(timeout=min(QUIET, left)))
        except queue.Empty:
            break
    return out


def deleted_outcome(last: dict[str, Any], pods: list[dict[str, Any]], namespace: str) -> Outcome:
    """The main object went while it was followed (``kubectl delete``, another ``down``, a
    deletion rule): its verdict when it had ended before (a DeleteSelf rule acting at once),
    else ``deleted``; nothing is left to wait for."""
    phase = phase_of(last, pods)
    if phase.terminal:
        return Outcome(phase.ok, phase.state, f"{phase.summary} (then deleted)")
    meta = last.get("metadata") or {}
    what = format_ref(str(last.get("kind")), namespace, str(meta.get("name")))
    return Outcome(False, "deleted", f"{what} was deleted while it was followed")


def _drain(inbox: _Inbox, view: RunView) -> list[Diagnosis]:
    """At the end, take in what already arrived so no problem seen by a watch goes unsaid."""
    while True:
        try:
            kind, ev = inbox.get_nowait()
        except queue.Empty:
            break
        if isinstance(ev, WatchEvent):
            if ev.type == "SYNC":
                view.sync(kind.kind, ev.items)
            else:
                view.update(kind.kind, ev.type, ev.obj)
    return view.new_findings()


def find_run_objects(client: KubeClient, namespace: str, run: str, kinds: Iterable[Kind], *,
                     selector: str | None = None, rendered: Iterable[str] = (),
                     note: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every object of the run (or of ``selector``) among ``kinds`` (one LIST each; kinds the
    server lacks are skipped, and kinds not ``rendered`` the user may not list, with a ``note``)."""
    return [obj for kind in dict.fromkeys(kinds) for obj in list_of_run(
        client, kind, namespace, run, rendered=rendered, note=note or (lambda _: None), selector=selector)]


def down_kinds(objects: Iterable[dict[str, Any]]) -> list[Kind]:
    """Kinds to look for, in deletion order: the reverse of apply order (workloads first),
    NetworkPolicy last (``teardown.down`` deletes it once the run's pods are gone)."""
    order = dict.fromkeys([RAYJOB, RAYCLUSTER, *(kind_of(o) for o in reversed(list(objects))),
                           *(KINDS[name] for name in (*RUN_KINDS, *sorted(RENDER_ONLY), *sorted(KEEP_BY_DEFAULT)))])
    return sorted(order, key=lambda k: k.kind == "NetworkPolicy")


def status_doc(view: RunView, namespace: str) -> dict[str, Any]:
    """``status -o json``: plain data for scripts."""
    main = view.main()
    phase = view.main_phase()
    workload = view.workload()
    queue = None if workload is None else workload_state(workload)
    return {
        "run": view.run,
        "namespace": namespace,
        "main": None if main is None else {
            "kind": main.get("kind"), "name": dig(main, "metadata", "name"),
            "state": phase.state if phase else None, "summary": phase.summary if phase else None,
            "terminal": phase.terminal if phase else None, "status": main.get("status") or {},
        },
        "objects": [{"kind": k, "name": dig(o, "metadata", "name")} for k in sorted(view.objects) if k != "Pod"
                    for o in view.of_kind(k)],
        "fleets": [dataclasses.asdict(row) for row in view.fleets()],
        "pods": [{"name": dig(p, "metadata", "name"), "fleet": dig(p, "metadata", "labels", FLEET_LABEL),
                  "phase": dig(p, "status", "phase")} for p in view.pods],
        "findings": [dataclasses.asdict(f) for f in view.findings()],
        "kueue": None if queue is None else {**dataclasses.asdict(queue), "summary": queue.summary(),
                                             "position": view.queue_position, "queueCounts": view.queue_counts},
        "notes": list(view.notes),
    }
