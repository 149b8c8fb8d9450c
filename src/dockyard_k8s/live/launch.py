"""The launch sequence as a library, torchx ``Runner`` style (``__all__``): the CLI parses, calls
one of these, prints the :class:`Outcome`. Progress goes to ``say`` (one line at a time) and, for
attach-mode job logs, ``write`` (raw text); nothing here prints on its own.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import format_ref
from dockyard_k8s.live import orchestrate, references, teardown
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS, POD, RAYCLUSTER, kind_of
from dockyard_k8s.live.netpol import inert_warning
from dockyard_k8s.live.orchestrate import Applied, Outcome, run_selector, split_apply
from dockyard_k8s.live.progress import RunView, main_object, phase_of
from dockyard_k8s.live.rayhead import (
    TERMINAL,
    RayTarget,
    head_pod,
    latest_job,
    launch_secret,
    proxy_status,
    ray_jobs,
    refused,
    replacement_id,
    require_refused,
    submission_id,
    unauthenticated,
)
from dockyard_k8s.live.record import (
    SUBMITTED_ANNOTATION,
    SUBMITTED_MANAGER,
    delete_self_conditions,
    deleted_text,
    ended_as,
    spec_digest,
)
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import MANAGED_BY
from dockyard_k8s.render.rayauth import enabled
from dockyard_k8s.render.record import NO_INVOCATION, Invocation, launch_objects, launch_record, record_name
from dockyard_k8s.render.submission import submission

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle

__all__ = ["LaunchOptions", "Outcome", "down", "launch", "list_clusters", "preview", "status", "wait"]

Say = Callable[[str], None]


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@dataclasses.dataclass(frozen=True)
class LaunchOptions:
    """How ``run`` / ``cluster up`` apply and follow (the flags of ``run``)."""

    dry_run: Literal["", "client", "server"] = ""  # server: dryRun=All, nothing persisted
    replace: bool = False  # delete the run's job/cluster (or Ray job) first
    force_conflicts: bool = False  # take over fields another field manager owns
    detach: bool = False  # return after applying
    timeout: float | None = None  # stop following after this many seconds
    pre_running_deadline: float | None = None  # give up when not running in time
    fail_fast: bool = False  # stop at the first problem that cannot heal
    ray: RayTarget = dataclasses.field(default_factory=RayTarget)  # attach mode: where the Ray dashboard is
    invocation: Invocation = NO_INVOCATION  # the files and --set layers as given, for the launch record


# What --dry-run=client lists in place of the token `run` makes when the run's own Secret is missing.
PREVIEW_TOKEN = "<a random token>"


def preview(bundle: Bundle, options: LaunchOptions = LaunchOptions()) -> tuple[list[dict[str, Any]],
                                                                                list[dict[str, Any]]]:
    """(objects ``launch`` would apply in order, render-only objects it would skip): the run's own
    token Secret first, which ``launch`` applies only when it is missing."""
    own = bundle.findings.token is not None and bundle.findings.token.own
    return split_apply(launch_objects(bundle.run, bundle.objects, options.invocation,
                                      PREVIEW_TOKEN if own else None))


# The infra keys that render what a run's pods may refer to, said before kubectl's way.
RUN_CREATES = {"PriorityClass": "infra.priorityClass.create: true",
               "PersistentVolumeClaim": "infra.storage.create: true"}


def launch(client: KubeClient, bundle: Bundle, options: LaunchOptions = LaunchOptions(), *,
           say: Say = print, write: Callable[[str], None] = _write, note: Say | None = None) -> Outcome:
    """Apply the run in order, then (unless detached) follow it to its end.

    Outcome reasons besides :func:`wait`'s: ``dry-run`` (server dry run), ``detached``,
    ``already-finished`` (an unchanged spec whose job ended: nothing re-run). ``note`` hears
    side remarks (a port-forward opened), which the CLI prints to stderr.
    """
    ns, run = bundle.run.namespace, bundle.run.name
    if options.dry_run == "client":
        raise ValueError("a client dry run contacts no cluster: use preview()")
    deleted = deleted_when_finished(client, bundle, options, say=say)
    if deleted is not None:
        return deleted
    started = started_from_another_spec(client, bundle, options, say=say)
    if started is not None:
        return started
    # First: a Secret the infra file names but the cluster lacks fails before anything changes.
    token, existing = launch_secret(client, bundle.run.infra)
    # A missing token Secret goes with the run: dry-run with it first, applied before any pod reads it.
    objects = launch_objects(bundle.run, bundle.objects, options.invocation, token)
    # Then anything else the pods need and the run does not create (a PriorityClass, an env Secret):
    # the follower could only wait on pods that can never start.
    for unread in references.require(client, objects, what=f"run {run}", creates=RUN_CREATES):
        (note or say)(unread)
    # one line when the network plugin ignores the run's NetworkPolicies
    if any(o.get("kind") == "NetworkPolicy" for o in bundle.objects) and (warning := inert_warning(client)):
        say(warning)
    if options.replace and not options.dry_run:
        orchestrate.replace_main(client, bundle.objects, say=say)
    applied = [Applied(existing, "unchanged")] if existing else []
    for a in applied:
        say(f"{a.action:<10} {a.ref}")
    applied += orchestrate.apply_objects(client, objects, dry_run=options.dry_run == "server",
                                         force=options.force_conflicts, say=say)
    say(f"run {run} in {ns}: {orchestrate.tally(applied)}")
    if not options.dry_run:
        mark_submitted(client, bundle, options, applied)
    if options.dry_run == "server":
        return Outcome(True, "dry-run", "server dry run: nothing was persisted")
    if bundle.run.infra["launch"]["mode"] == "attach":
        return attach_submit(client, bundle, options, say=say, write=write, note=note)
    finished = already_finished(client, bundle, applied, say=say)
    if finished is not None:
        return finished
    if options.detach:
        return detached(client, bundle, say=say, note=note)
    return wait(client, bundle, options, say=say)


def detached(client: KubeClient, bundle: Bundle, *, say: Say = print, note: Say | None = None) -> Outcome:
    """``run --detach`` after applying: the head's refusal of a request without the token is
    checked when its pod is already Ready (one LIST of the run's pods: a re-run); otherwise one
    line says it was not, and which command checks it."""
    if enabled(bundle.run.infra):
        ns, run = bundle.run.namespace, bundle.run.name
        pods, _ = client.list(POD, ns, label_selector=run_selector(run), missing_ok=True)
        asked, outcome = ask_head(client, bundle, pods, say=say)
        if outcome is not None:
            return outcome
        if not asked:
            (note or say)("note: --detach: not checked that the Ray head refuses a request without the token (its "
                          "pod is not Ready yet; `run` without --detach checks it): `dockyard-k8s job list` with the "
                          "same files checks it once it is")
    return Outcome(True, "detached", "applied; not following")


def already_finished(client: KubeClient, bundle: Bundle, applied: list[Applied], *,
                     say: Say = print) -> Outcome | None:
    """Re-running an unchanged spec whose job already ended: say so instead of waiting forever."""
    main = main_object(bundle.objects)
    if main is None:
        return None
    kind = kind_of(main)
    meta = main["metadata"]
    what = format_ref(kind.kind, meta.get("namespace"), meta["name"])
    if Applied(what, "unchanged") not in applied:
        return None
    live = client.get(kind, meta.get("namespace"), meta["name"])
    if live is None:
        return None
    phase = phase_of(live, [])
    if phase.terminal and main["kind"] != "RayCluster":
        say(f"{what} already finished ({phase.summary}); nothing was re-run. --replace starts it again.")
        return Outcome(phase.ok, "already-finished", phase.summary)
    return None


# The jobDeploymentStatus values in which KubeRay still reads a RayJob's spec: before it made the
# cluster, and while suspended (queued in Kueue: the resume builds the cluster from the spec then).
_SPEC_READ = frozenset({"", "New", "Suspended"})


def started_from_another_spec(client: KubeClient, bundle: Bundle, options: LaunchOptions, *,
                              say: Say = print) -> Outcome | None:
    """A changed spec over a RayJob KubeRay has started or ended: KubeRay builds the cluster and
    submits the job once and ignores later spec changes, so applying it would train nothing new,
    leave the RayJob, recipe and launch record describing a run that never happened, and report
    the old run's result as this one's. Says so with nothing applied (a server dry run of the
    RayJob tells whether the spec differs)."""
    main = main_object(bundle.objects)
    if options.replace or main is None or main["kind"] != "RayJob":
        return None
    kind, ns, name = kind_of(main), bundle.run.namespace, main["metadata"]["name"]
    live = client.get(kind, ns, name)
    if live is None or (dig(live, "status", "jobDeploymentStatus") or "") in _SPEC_READ:
        return None
    if orchestrate.apply_one(client, main, dry_run=True, before=live).action == "unchanged":
        return None
    phase = phase_of(live, [])
    state = "finished" if phase.terminal else "started"
    say(f"{format_ref(kind.kind, ns, name)} already {state} ({phase.summary}) from another spec, and KubeRay does not "
        f"apply a changed spec to a started job: nothing was applied. --replace "
        f"{'starts' if phase.terminal else 'stops it and starts'} this spec; `dockyard-k8s status {bundle.run.name} "
        f"-n {ns}` shows the run that is there.")
    return Outcome(False, "started-from-another-spec", f"{state} from another spec; nothing applied")


def _self_deleting(bundle: Bundle) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """(the RayJob, its DeleteSelf conditions) when the run's job deletes itself when it ends."""
    main = main_object(bundle.objects)
    if main is None or main["kind"] != "RayJob":
        return None
    conditions = delete_self_conditions(main)
    return (main, conditions) if conditions else None


def _digest(bundle: Bundle, options: LaunchOptions) -> str:
    return spec_digest(launch_record(bundle.run, split_apply(bundle.objects)[0], options.invocation))


def deleted_when_finished(client: KubeClient, bundle: Bundle, options: LaunchOptions, *,
                          say: Say = print) -> Outcome | None:
    """Re-running an unchanged spec whose RayJob a DeleteSelf rule removed when it ended: its
    launch record says `run` created the RayJob of this very spec, and the RayJob is gone. Says
    so (nothing applied, nothing re-run) instead of starting the training again."""
    found = _self_deleting(bundle)
    if found is None or options.replace:
        return None
    main, conditions = found
    ns, run = bundle.run.namespace, bundle.run.name
    record = client.get(KINDS["ConfigMap"], ns, record_name(run))
    marker = dig(record, "metadata", "annotations", SUBMITTED_ANNOTATION)
    if not marker or marker != _digest(bundle, options):
        return None
    kind, name = kind_of(main), main["metadata"]["name"]
    if client.get(kind, ns, name) is not None:
        return None  # still there: applied and judged as usual (already_finished)
    state, ok = ended_as(conditions)
    say(f"{format_ref(kind.kind, ns, name)} already {state}: {deleted_text(conditions)}, and this spec is the one "
        f"`run` created it from (launch record {ns}/{record_name(run)}); nothing was re-run. --replace starts it "
        "again.")
    return Outcome(ok, "already-finished", f"{state}; deleted by its DeleteSelf rule")


def mark_submitted(client: KubeClient, bundle: Bundle, options: LaunchOptions, applied: list[Applied]) -> None:
    """After `run` created a RayJob that deletes itself when it ends: the digest of its spec on the
    launch record (a field manager of its own: the record's next apply keeps it and stays unchanged)."""
    found = _self_deleting(bundle)
    if found is None:
        return
    ns, job = bundle.run.namespace, found[0]["metadata"]["name"]
    if Applied(format_ref("RayJob", ns, job), "created") not in applied:
        return
    client.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": record_name(bundle.run.name), "namespace": ns,
        "annotations": {SUBMITTED_ANNOTATION: _digest(bundle, options)}}}, field_manager=SUBMITTED_MANAGER)


def wait(client: KubeClient, bundle: Bundle, options: LaunchOptions = LaunchOptions(), *,
         say: Say = print) -> Outcome:
    """Follow the run with watches until its main object is terminal (or a deadline passes)."""
    ns, run = bundle.run.namespace, bundle.run.name
    main = main_object(bundle.objects)
    local_deadline = options.pre_running_deadline
    operator_deadline = None
    if main is not None and main["kind"] == "RayJob":
        # KubeRay (>= 1.6) enforces preRunningDeadlineSeconds itself; the local deadline, a
        # little later, is the fallback when it does not (an older or stopped operator)
        operator_deadline = local_deadline or dig(main, "spec", "preRunningDeadlineSeconds")
        local_deadline = operator_deadline + deadline_margin(operator_deadline) if operator_deadline else None
    return orchestrate.follow(client, ns, run, bundle.objects, say=say, timeout=options.timeout,
                              pre_running_deadline=local_deadline, fail_fast=options.fail_fast,
                              operator_deadline=operator_deadline, on_view=head_auth_check(client, bundle, say=say))


def head_auth_check(client: KubeClient, bundle: Bundle, *, say: Say = print) -> Callable[[RunView], Outcome | None]:
    """Once the run's head pod is Ready, ask it (:func:`ask_head`), once."""
    done: list[bool] = []

    def check(view: RunView) -> Outcome | None:
        if done or not enabled(bundle.run.infra):
            return None
        asked, outcome = ask_head(client, bundle, view.pods, say=say)
        if asked:
            done.append(True)
        return outcome

    return check


def ask_head(client: KubeClient, bundle: Bundle, pods: Iterable[dict[str, Any]], *,
             say: Say = print) -> tuple[bool, Outcome | None]:
    """Ask the run's Ready head pod among ``pods`` for the job list without the token (through the
    API server's pod proxy): a refusal (401) is said with ✔; an answer (2xx) is an Outcome that ends with exit 1
    (token auth is off: an image with Ray < 2.52 ignores RAY_AUTH_MODE), the run left as it is.
    When the API server will not proxy (no ``pods/proxy`` right) or another status comes back (a
    proxy or filter on the way), a note says it was not checked.
    (whether the head was asked, or cannot be; that Outcome). Not asked: no Ready head pod, or it
    is not serving yet (502/503)."""
    ns = bundle.run.namespace
    pod = head_pod(bundle.run.infra, pods)
    if pod is None:
        return False, None
    try:
        status, from_head = proxy_status(client, ns, pod)
    except ClusterError as e:
        status, from_head = 0, False
        why = str(e)
    else:
        why = f"the API server answered {status} to its pods/proxy"
    if not from_head and status in (502, 503):
        return False, None  # not serving yet: ask again at the next change
    verdict = refused(status) if from_head else None
    if verdict:
        say(f"✔ the Ray head {pod} refuses a request without the token (GET /api/jobs/: HTTP {status})")
        return True, None
    if verdict is None:
        if from_head:
            why = f"HTTP {status} is not a Ray head's answer to it, 401: a proxy or filter on the way?"
        say(f"note: could not check that the Ray head {pod} refuses a request without the token ({why}); "
            "`dockyard-k8s job list` with the same files checks it through a port-forward")
        return True, None
    say(f"✖ {unauthenticated(f'the Ray head {pod}', status)}")
    return True, Outcome(False, "unauthenticated", "the run is left as it is: stop it with `dockyard-k8s down` (the "
                                                   "same files), then use an image with Ray >= 2.52")


# KubeRay checks preRunningDeadlineSeconds when it reconciles the RayJob, requeued every 3 s
# while it is not running (RayJobDefaultRequeueDuration, ray-operator/controllers/ray/rayjob_controller.go).
KUBERAY_RECHECK_SECONDS = 3.0


def deadline_margin(seconds: float) -> float:
    """How long after an operator's deadline the local fallback fires: 10%, at least KubeRay's
    recheck interval and a status write more (5 s), at most 60 s."""
    return float(min(60.0, max(KUBERAY_RECHECK_SECONDS + 2.0, seconds / 10)))


def status(client: KubeClient, bundle: Bundle) -> RunView:
    """The run right now: one LIST per kind plus one of Warning events, whatever the pod count."""
    return orchestrate.snapshot(client, bundle.run.namespace, bundle.run.name, bundle.objects)


def down(client: KubeClient, bundle: Bundle, *, include_governance: bool = False, keep_volumes: bool = True,
         dry_run: bool = False, wait: float | None = None, timeout: float = teardown.PODS_TIMEOUT,
         say: Say = print) -> list[str]:
    """Delete everything labelled with the run, its NetworkPolicies once its pods are gone
    (``timeout`` seconds at most); returns what was deleted (empty: nothing left).
    ``wait``: seconds to wait until it is all gone (finalizers released, pods collected)."""
    ns, run = bundle.run.namespace, bundle.run.name
    deleted = teardown.down(client, ns, run, bundle.objects, include_governance=include_governance,
                            keep_volumes=keep_volumes, dry_run=dry_run, say=say, pods_timeout=timeout)
    if wait is not None and not dry_run:
        teardown.wait_gone(client, ns, run, bundle.objects, include_governance=include_governance,
                           keep_volumes=keep_volumes, timeout=wait, say=say)
    return deleted


def run_submission(bundle: Bundle, entrypoint: str | None = None) -> tuple[str, str, dict[str, Any] | None]:
    """(submission id, command, runtime_env) of the run's Ray job (``entrypoint`` instead of the
    run's own): the same run gives the same id, so a second submission finds the first. The
    attached cluster has neither the recipe ConfigMap nor DOCKYARD_SANDBOX_URLS: both go with the job."""
    job = submission(bundle.run.infra, bundle.run.recipe, bundle.run.job_args, command=entrypoint)
    return submission_id(bundle.run.name, job.entrypoint, job.runtime_env), job.entrypoint, job.runtime_env


def attach_submit(client: KubeClient, bundle: Bundle, options: LaunchOptions, *, say: Say = print,
                  write: Callable[[str], None] = _write, note: Say | None = None) -> Outcome:
    """attach mode: nothing GPU-side was applied; the entrypoint goes to the Ray Jobs API."""
    run = bundle.run.name
    base, command, runtime_env = run_submission(bundle)
    with ray_jobs(options.ray, bundle, client, on_forward=note) as ray:
        if enabled(bundle.run.infra):  # the run asked for token auth: an open head gets no job
            status = require_refused(ray.address)
            say(f"✔ the Ray head at {ray.address} refuses a request without the token (GET /api/jobs/: HTTP {status})"
                if refused(status) else f"note: could not check that the Ray head at {ray.address} refuses a "
                f"request without the token (HTTP {status} is not a Ray head's answer to it, 401)")
        existing = latest_job(ray, base)
        sub_id = str((existing or {}).get("submission_id") or base)
        if existing and options.replace:
            if existing.get("status") not in TERMINAL:
                say(f"stopping job {sub_id} (--replace) ...")
                ray.stop(sub_id)
                ray.wait(sub_id)
            # a fresh id: resubmitting the same id at once can meet its old supervisor actor dying
            sub_id, existing = replacement_id(base), None
        if existing:
            say(f"job {sub_id} already submitted ({existing.get('status')}); nothing re-submitted")
        else:
            ray.submit(command, sub_id=sub_id, runtime_env=runtime_env, metadata={"dockyard-k8s/run": run})
            say(f"submitted job {sub_id} to {ray.address}")
        if options.detach:
            return Outcome(True, "detached", f"job {sub_id} submitted; not following", sub_id)
        for chunk in ray.follow_logs(sub_id):
            write(chunk)
        info = ray.get(sub_id) or {}
        state = str(info.get("status") or "")
        message = f"job {sub_id}: {state} {info.get('message') or ''}".rstrip()
        return Outcome(state == "SUCCEEDED", state.lower() or "unknown", message, sub_id)


def list_clusters(client: KubeClient, namespace: str | None, *, selector: str = "") -> list[dict[str, Any]]:
    """RayClusters made by dockyard-k8s in ``namespace`` (None: every namespace), narrowed by a
    label ``selector`` (kubectl's -l)."""
    labels = ",".join(s for s in (f"app.kubernetes.io/managed-by={MANAGED_BY}", selector) if s)
    items, _ = client.list(RAYCLUSTER, namespace, label_selector=labels)
    return items

