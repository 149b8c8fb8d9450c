"""The streaming answers of the fake API server: watches and followed pod logs.

Watch semantics ("Efficient detection of changes"): from a resourceVersion, only later
events; a change that makes an object enter or leave the selector is ADDED / DELETED for
that watch; without a resourceVersion, synthetic ADDED events for the current state first;
a version older than the compaction point is ``ERROR`` 410 Expired (or HTTP 410);
``timeoutSeconds`` ends the stream; BOOKMARK events when asked for and enabled.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import httpx2
from fake_api import ApiFailure, status

if TYPE_CHECKING:
    from fakekube import FakeKube


class Change(NamedTuple):
    rv: int
    res: tuple[str, str]
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]
    prev: dict[str, Any] | None


class History:
    """Changes per resource, ordered by resourceVersion."""

    def __init__(self) -> None:
        self.by_res: dict[tuple[str, str], list[Change]] = {}
        self.rvs: dict[tuple[str, str], list[int]] = {}

    def add(self, change: Change) -> None:
        self.by_res.setdefault(change.res, []).append(change)
        self.rvs.setdefault(change.res, []).append(change.rv)

    def after(self, res: tuple[str, str], rv: int) -> list[Change]:
        rvs = self.rvs.get(res, [])
        return self.by_res.get(res, [])[bisect.bisect_right(rvs, rv):]

    def clear(self) -> None:
        self.by_res.clear()
        self.rvs.clear()


class Stream(httpx2.SyncByteStream):
    """A response body produced lazily; ``closed`` is set when the client closes the response."""

    def __init__(self, make: Callable[[threading.Event], Iterator[bytes]]) -> None:
        self.closed = threading.Event()
        self.chunks = make(self.closed)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            if self.closed.is_set():
                return
            yield chunk

    def close(self) -> None:
        self.closed.set()


def _line(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def watch(fake: FakeKube, res: tuple[str, str], match: Callable[[dict[str, Any]], bool],
          params: dict[str, str]) -> httpx2.Response:
    rv_param = params.get("resourceVersion", "")
    if rv_param not in ("", "0") and int(rv_param) < fake.compacted:
        expired = status(410, "Expired", f"too old resource version: {rv_param} ({fake.compacted})")
        if fake.gone_as_http:
            raise ApiFailure(410, "Expired", expired["message"])
        return httpx2.Response(200, headers={"Content-Type": "application/json"},
                               stream=Stream(lambda _: iter([_line({"type": "ERROR", "object": expired})])))
    initial: list[bytes] = []
    if rv_param in ("", "0"):
        initial = [_line({"type": "ADDED", "object": o}) for o in fake.store.get(res, {}).values() if match(o)]
        start = fake.rv
    else:
        start = int(rv_param)
    timeout = min(float(params.get("timeoutSeconds") or 1800), fake.max_watch_seconds)
    gen = fake.drop_gen
    fake.watching[res[1]] = fake.watching.get(res[1], 0) + 1
    fake.cond.notify_all()
    bookmarks = params.get("allowWatchBookmarks") == "true"

    def chunks(closed: threading.Event) -> Iterator[bytes]:
        pos = start
        yield from initial
        deadline = time.monotonic() + timeout
        try:
            while True:
                with fake.cond:
                    while True:
                        if fake.closed or closed.is_set() or fake.drop_gen != gen or time.monotonic() >= deadline:
                            return
                        batch = fake.history.after(res, pos)
                        if batch:
                            break
                        if bookmarks and fake.bookmarks and fake.rv > pos:
                            pos = fake.rv
                            yield _line({"type": "BOOKMARK", "object": {
                                "kind": fake.resources[res].kind, "apiVersion": res[0],
                                "metadata": {"resourceVersion": str(pos)}}})
                        fake.cond.wait(0.05)
                for change in batch:
                    pos = change.rv
                    now = change.type != "DELETED" and match(change.obj)
                    before = change.prev is not None and match(change.prev)
                    if change.type == "DELETED":
                        etype = "DELETED" if before else None
                    elif now and before:
                        etype = "MODIFIED"
                    elif now:
                        etype = "ADDED"
                    elif before:
                        etype = "DELETED"  # no longer matches the selector
                    else:
                        etype = None
                    if etype:
                        yield _line({"type": etype, "object": change.obj})
        finally:
            with fake.lock:
                fake.watching[res[1]] -= 1

    return httpx2.Response(200, headers={"Content-Type": "application/json"}, stream=Stream(chunks))


def logs(fake: FakeKube, ns: str, name: str, params: dict[str, str]) -> httpx2.Response:
    """Pod logs: container required when the pod has several, tailLines, sinceSeconds,
    previous, follow until the container ends (or the pod is gone)."""
    with fake.lock:
        pod = fake.store.get(("v1", "pods"), {}).get((ns, name))
        if pod is None:
            raise ApiFailure(404, "NotFound", f'pods "{name}" not found', name=name, kind="pods")
        spec = pod.get("spec") or {}
        names = [c["name"] for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])]
        container = params.get("container", "")
        if not container:
            default = ((pod.get("metadata") or {}).get("annotations") or {}).get(
                "kubectl.kubernetes.io/default-container")
            if len(spec.get("containers") or []) != 1 and default not in names:
                raise ApiFailure(400, "BadRequest", f"a container name must be specified for pod {name}, "
                                                    f"choose one of: [{' '.join(names)}]")
            container = str(default) if default in names else spec["containers"][0]["name"]
        if container not in names:
            raise ApiFailure(400, "BadRequest", f"container {container} is not valid for pod {name}")
        previous = params.get("previous") == "true"
        key = (ns, name, container, previous)
        if previous and key not in fake.logs:
            raise ApiFailure(400, "BadRequest",
                             f'previous terminated container "{container}" in pod "{name}" not found')
        lines = list(fake.logs.get(key, []))
    since = params.get("sinceSeconds")
    if since:
        lines = [(t, s) for t, s in lines if t >= fake.now - int(since)]
    tail = params.get("tailLines")
    if tail:
        lines = lines[-int(tail):] if int(tail) else []
    text = [s + "\n" for _, s in lines]
    if params.get("follow") != "true" or previous:
        return httpx2.Response(200, headers={"Content-Type": "text/plain"}, content="".join(text).encode())

    def chunks(closed: threading.Event) -> Iterator[bytes]:
        for line in text:
            yield line.encode()
        sent = len(fake.logs.get(key, []))
        while True:
            with fake.cond:
                while True:
                    have = fake.logs.get(key, [])
                    if len(have) > sent:
                        fresh = have[sent:]
                        sent = len(have)
                        break
                    gone = (ns, name) not in fake.store.get(("v1", "pods"), {})
                    if fake.closed or closed.is_set() or gone or (ns, name, container) in fake.logs_done:
                        return
                    fake.cond.wait(0.05)
            for _, line in fresh:
                yield (line + "\n").encode()

    return httpx2.Response(200, headers={"Content-Type": "text/plain"}, stream=Stream(chunks))
