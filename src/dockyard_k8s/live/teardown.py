"""``down`` (and ``cluster down``, ``serve down``): delete everything labelled with the run,
workloads first and its NetworkPolicies and Ray token Secret only once its pods are gone, then
(``--wait``) until nothing of it is left.

A pod being deleted still runs its grace period (SIGTERM, ``terminationGracePeriodSeconds``): a
sandbox pod whose default-deny policy went first would have the network open until it stops.
KubeRay reads the token Secret to stop the Ray job of a RayJob being deleted, then releases its
finalizer (gone first, the RayJob and its pods stay for ever: v1.6.2 "failed to get auth secret").
So ``down`` watches the run's pods (one watch by label) until none is left, then deletes those;
pods still there after the timeout keep them, ``down`` says so (exit 1) and a second one deletes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import format_ref, object_ref
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import POD
from dockyard_k8s.live.orchestrate import (
    KEEP_BY_DEFAULT,
    _name,
    down_kinds,
    find_run_objects,
    run_selector,
    wait_deleted,
    watch_for,
)
from dockyard_k8s.render.record import RENDER_ONLY

# How long `down` waits for the run's pods before it deletes the NetworkPolicies, by default
# (the CLI's --timeout): Kubernetes' default grace period is 30 s, a Ray pod's preStop may take longer.
PODS_TIMEOUT = 600.0


def down(client: KubeClient, namespace: str, run: str, objects: list[dict[str, Any]], *,
         include_governance: bool = False, keep_volumes: bool = True, dry_run: bool = False,
         say: Callable[[str], None] = print, selector: str | None = None,
         volumes_flag: str = "--delete-volumes", pods_timeout: float = PODS_TIMEOUT) -> list[str]:
    """Delete everything labelled with the run (or ``selector``); returns what was deleted
    (empty: nothing left). ``volumes_flag`` is the flag named when a claim is kept. The
    NetworkPolicies and Secret go once no pod of the run is left (``pods_timeout`` seconds at
    most; then they are kept and a ClusterError says why)."""
    deleted: list[str] = []

    def delete(obj: dict[str, Any]) -> None:
        kind, ns, name = _name(obj)
        what = format_ref(kind.kind, ns, name)
        if kind.kind in RENDER_ONLY and not include_governance:
            say(f"kept {what} (governance; --include-governance deletes it)")
        elif kind.kind in KEEP_BY_DEFAULT and keep_volumes:
            say(f"kept {what} (data; {volumes_flag} deletes it)")
        elif (obj.get("metadata") or {}).get("ownerReferences"):
            return  # its owner's deletion removes it (garbage collection)
        elif client.delete(kind, ns, name, dry_run=dry_run):
            deleted.append(what)
            say(f"deleted {what}" + (" (server dry run)" if dry_run else ""))

    found = find_run_objects(client, namespace, run, down_kinds(objects), selector=selector,
                             rendered={str(o.get("kind")) for o in objects}, note=say)
    last = [o for o in found if o.get("kind") in ("NetworkPolicy", "Secret")]
    for obj in [o for o in found if o not in last]:
        delete(obj)
    if last and not dry_run:
        wait_pods_gone(client, namespace, run, selector=selector or run_selector(run), timeout=pods_timeout,
                       then=", ".join(f"{o['kind']} {o['metadata']['name']}" for o in last), say=say)
    for obj in last:
        delete(obj)
    return deleted


def wait_pods_gone(client: KubeClient, namespace: str, run: str, *, selector: str, timeout: float,
                   then: str, say: Callable[[str], None] = print) -> None:
    """Watch the pods of ``selector`` until none is left (pods the garbage collector has yet to
    delete, pods in their grace period; a bare pod nothing deletes aside) before ``then`` (``Kind
    name, ...``) is deleted. A ClusterError when some are still there after ``timeout``; a user who
    may not list pods is told the wait was skipped."""
    pods: dict[str, dict[str, Any]] = {}
    synced = False
    try:
        with closing(watch_for(client, POD, namespace, timeout=timeout, label_selector=selector)) as events:
            for ev in events:
                if ev.type == "SYNC":
                    synced = True
                    pods = {str(p["metadata"]["name"]): p for p in ev.items if _going(p)}
                    if pods:
                        say(f"waiting for {len(pods)} pod(s) of {run} to be gone before deleting {then} (they stay "
                            "in force while a pod runs its grace period) ...")
                elif ev.type == "DELETED" or not _going(ev.obj):
                    pods.pop(str(ev.obj["metadata"]["name"]), None)
                else:
                    pods[str(ev.obj["metadata"]["name"])] = ev.obj
                if not pods:
                    return
    except ClusterError as e:
        if e.status != 403:
            raise
        say(f"warning: not allowed to list pods in {namespace} (403): deleting {then} without waiting for the "
            "run's pods to be gone")
        return
    names = ", ".join(sorted(pods)[:5]) + (f" and {len(pods) - 5} more" if len(pods) > 5 else "")
    left = f"{len(pods)} pod(s) still there after {timeout:g}s ({names})" if synced else \
        f"its pods were not listed within {timeout:g}s"
    raise ClusterError(f"{left}: kept {then}, so that no pod of the run runs without them",
                       obj=f"run {namespace}/{run}",
                       hint=f"`kubectl get pods -n {namespace} -l {selector}` shows them (a finalizer or a lost "
                            "node holds a pod); `down` again deletes the rest once they are gone, "
                            "`--timeout SECONDS` waits longer")


def _going(pod: dict[str, Any]) -> bool:
    """A pod on its way out: being deleted, or owned (its owner, deleted above, takes it with it).
    A bare pod that merely carries the label is not deleted by ``down`` and is not waited for."""
    meta = pod.get("metadata") or {}
    return bool(meta.get("deletionTimestamp") or meta.get("ownerReferences"))


def wait_gone(client: KubeClient, namespace: str, run: str, objects: list[dict[str, Any]], *, timeout: float,
              include_governance: bool = False, keep_volumes: bool = True, say: Callable[[str], None] = print) -> None:
    """``down --wait``: until nothing labelled with the run is left (finalizers released,
    owned objects and pods collected) but what :func:`down` keeps with the same flags; watches, no polling."""
    deadline = time.monotonic() + timeout
    keep = {*(() if include_governance else RENDER_ONLY), *(KEEP_BY_DEFAULT if keep_volumes else ())}
    kinds = [*down_kinds(objects), POD]
    left = [o for o in find_run_objects(client, namespace, run, kinds, rendered={str(o.get("kind")) for o in objects})
            if o.get("kind") not in keep]
    if not left:
        return
    held = [o for o in left if (o.get("metadata") or {}).get("finalizers")]
    say(f"waiting for {len(left)} object(s) to be gone" + (": " + ", ".join(
        f"{object_ref(o)} ({', '.join(o['metadata']['finalizers'])})" for o in held) if held else "") + " ...")
    for obj in left:
        kind, ns, name = _name(obj)
        if not wait_deleted(client, kind, ns, name, timeout=max(0.0, deadline - time.monotonic())):
            raise ClusterError(f"still present after {int(timeout)}s", obj=format_ref(kind.kind, ns, name),
                               hint="a finalizer holds it (is its operator running?): `kubectl get "
                                    f"{kind.plural} -n {ns} {name} -o yaml` shows metadata.finalizers")
