"""Logs of a run's pods: choose the pods, fetch or follow them, merge with ``fleet/pod`` prefixes."""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.diagnose import fleet_of
from dockyard_k8s.live.orchestrate import join_all
from dockyard_k8s.plain import dig

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: str) -> int:
    """``90s``, ``10m``, ``1h30m`` or plain seconds -> seconds (kubectl ``--since`` style)."""
    if text.isdigit():
        return int(text)
    m = _DURATION.match(text)
    if not text or not m or not any(m.groups()):
        raise UsageError(f"--since {text}: expected a duration such as 30s, 10m or 1h")
    h, mi, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + s


def default_fleet(main_kind: str | None, pods: list[dict[str, Any]]) -> str:
    """What `logs` shows without --fleet/--pod: the RayJob submitter (the job's output, still
    there after the cluster is gone) when it exists, else the head."""
    return "submitter" if main_kind == "RayJob" and any(fleet_of(p) == "submitter" for p in pods) else "head"


def select_pods(pods: list[dict[str, Any]], *, fleet: str | None = None, pod: str | None = None,
                main_kind: str | None = None) -> list[dict[str, Any]]:
    def name(p: dict[str, Any]) -> str:
        return str((p.get("metadata") or {}).get("name"))

    if pod:
        chosen = [p for p in pods if name(p) == pod]
        if not chosen:
            raise ClusterError(f"no pod {pod} in the run", hint="`dockyard-k8s status` lists the run's pods")
        return chosen
    wanted = fleet or default_fleet(main_kind, pods)
    chosen = sorted((p for p in pods if fleet_of(p) == wanted), key=name)
    if not chosen:
        have = sorted({fleet_of(p) for p in pods})
        raise ClusterError(f"no {wanted} pod in the run" + (f" (fleets with pods: {', '.join(have)})" if have
                                                              else " (no pods at all yet)"),
                           hint="`dockyard-k8s status` shows why pods are missing")
    return chosen


def container_of(pod: dict[str, Any], wanted: str = "") -> str:
    """The container to read: the one asked for, the annotated default, else the first."""
    containers = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    if wanted:
        return wanted
    default = dig(pod, "metadata", "annotations", "kubectl.kubernetes.io/default-container")
    if default in containers:
        return str(default)
    return str(containers[0]) if containers else ""


def prefix_of(pod: dict[str, Any]) -> str:
    return f"{fleet_of(pod)}/{(pod.get('metadata') or {}).get('name')}"


def read_logs(client: KubeClient, namespace: str, pods: list[dict[str, Any]], *, container: str = "",
              tail: int | None = None, since: int | None = None, previous: bool = False) -> Iterator[tuple[str, str]]:
    """(prefix, line) of each pod in turn (one request per pod: logs have no list call)."""
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name"))
        text = client.pod_log(namespace, name, container=container_of(pod, container), tail=tail, since=since,
                              previous=previous)
        for line in text.splitlines():
            yield prefix_of(pod), line


def follow_logs(client: KubeClient, namespace: str, pods: list[dict[str, Any]], *, container: str = "",
                tail: int | None = None, since: int | None = None,
                on_error: Callable[[str, Exception], None] | None = None) -> Iterator[tuple[str, str]]:
    """(prefix, line) as they arrive from every pod at once, until every stream ends."""
    inbox: queue.Queue[tuple[str, str | None]] = queue.Queue()
    stop = threading.Event()

    def pump(pod: dict[str, Any]) -> None:
        name = str((pod.get("metadata") or {}).get("name"))
        try:
            for line in client.follow_log(namespace, name, container=container_of(pod, container), tail=tail,
                                          since=since, stop=stop):
                inbox.put((prefix_of(pod), line))
        except Exception as e:  # one pod failing does not stop the others
            if on_error and not stop.is_set():
                on_error(prefix_of(pod), e)
        finally:
            inbox.put((prefix_of(pod), None))

    threads = [threading.Thread(target=pump, args=(p,), daemon=True, name=f"logs-{prefix_of(p)}") for p in pods]
    for t in threads:
        t.start()
    open_streams = len(threads)
    try:
        while open_streams:
            try:
                prefix, line = inbox.get(timeout=0.25)
            except queue.Empty:
                continue
            if line is None:
                open_streams -= 1
            else:
                yield prefix, line
    finally:
        stop.set()
        client.close_streams()
        join_all(threads)  # one shared deadline: Ctrl-C is not late by 5 s a pod
