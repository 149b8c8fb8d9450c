"""KubeClient: the one place that sends requests to the Kubernetes API.

Connection and credentials come from lightkube's kubeconfig support (contexts, client
certificates, bearer tokens, exec plugins, in-cluster service accounts); requests are
the plain data of :mod:`dockyard_k8s.live.requests`, sent through an ``httpx2.Client``
(lightkube 1.x's HTTP library) whose transport tests replace.

Behaviour every command relies on:
* retries with exponential backoff on 429 (honouring ``Retry-After``), 5xx and
  connection resets; other errors become :class:`ClusterError` naming the object;
* :meth:`KubeClient.list` reads in chunks (``limit``/``continue``);
* :meth:`KubeClient.watch` lists, then watches from the list's resourceVersion, resumes
  from the last version seen when the stream ends, and re-lists on 410 Gone
  (both the HTTP status and the in-stream ``ERROR`` event form).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import httpx2

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live import requests as rq
from dockyard_k8s.live.kinds import Kind, kind_of

log = logging.getLogger("dockyard_k8s.live")

# Items per LIST chunk: kubectl's --chunk-size default.
PAGE_SIZE = 500
# Statuses worth retrying: throttling and transient server/load-balancer errors.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# One-line hints by HTTP status, shown under the error.
STATUS_HINTS = {
    401: "the cluster rejected the credentials: refresh them (e.g. `kubectl get ns` re-runs your login plugin)",
    403: "missing RBAC permission: `dockyard-k8s doctor RECIPE` lists every verb the launcher needs",
    404: "not found: for ray.io kinds, is the KubeRay operator (its CRDs) installed? see `dockyard-k8s doctor`",
    409: "another field manager owns these fields (kubectl edit, an operator): re-run with --force-conflicts "
         "to take them over, or --replace",
    422: "the API server rejected the object as invalid: run `dockyard-k8s check` and compare with the message",
}


class WatchEvent(NamedTuple):
    """``SYNC`` carries the full list (first list or a re-list after 410): objects not in
    ``items`` are gone. ``ADDED``/``MODIFIED``/``DELETED`` carry one object."""

    type: str
    obj: dict[str, Any]
    items: list[dict[str, Any]]


class ApplyResult(NamedTuple):
    obj: dict[str, Any]  # what the server returned
    action: str  # created | configured | unchanged


def _backoff(attempt: int, retry_after: str | None = None) -> float:
    if retry_after and retry_after.isdigit():
        return min(float(retry_after), 30.0)
    return min(0.2 * 2 ** attempt, 8.0)


def api_error(status: int, body: bytes, req: rq.Request) -> ClusterError:
    """A failed response as a ClusterError naming the object (Status body when there is one)."""
    message = ""
    reason = ""
    with contextlib.suppress(ValueError, AttributeError):
        doc = json.loads(body)
        message = str(doc.get("message") or "")
        reason = str(doc.get("reason") or "")
    if not message:
        message = body.decode(errors="replace").strip()[:300] or f"HTTP {status}"
    text = f"{reason}: {message}" if reason and reason not in message else message
    hint = STATUS_HINTS.get(status, "")
    if status >= 500:
        hint = "the API server failed repeatedly; retry later or check the control plane"
    return ClusterError(text, obj=req.obj, status=status, hint=hint)


class KubeClient:
    """Send :class:`~dockyard_k8s.live.requests.Request` objects; higher-level verbs on top."""

    def __init__(self, http: httpx2.Client, *, namespace: str = "default", context: str = "",
                 sleep: Callable[[float], None] = time.sleep, max_retries: int = 5,
                 page_size: int = PAGE_SIZE) -> None:
        self.http = http
        self.default_namespace = namespace
        self.context = context
        self.sleep = sleep
        self.max_retries = max_retries
        self.page_size = page_size
        self._open: set[httpx2.Response] = set()
        self._lock = threading.Lock()

    # --- sending --------------------------------------------------------------------------

    def _build(self, req: rq.Request) -> httpx2.Request:
        timeout = httpx2.Timeout(30.0, read=None if req.stream else 60.0)
        if req.param("watch"):
            timeout = httpx2.Timeout(30.0, read=float(rq.WATCH_TIMEOUT_SECONDS + 30))
        return self.http.build_request(req.method, req.path, params=list(req.params), headers=dict(req.headers),
                                       content=req.body, timeout=timeout)

    def _send(self, req: rq.Request) -> httpx2.Response:
        """Send with retries; the response is open (streamed) when ``req.stream``."""
        attempt = 0
        while True:
            try:
                resp = self.http.send(self._build(req), stream=req.stream)
            except httpx2.TransportError as e:
                if attempt >= self.max_retries:
                    raise ClusterError(f"cannot reach the API server at {self.http.base_url}: {e}", obj=req.obj,
                                       hint="check the cluster is up and your KUBECONFIG / --context") from e
                log.debug("%s %s: %s; retrying", req.method, req.path, type(e).__name__)
                self.sleep(_backoff(attempt))
                attempt += 1
                continue
            log.debug("%s %s -> %s", req.method, req.path, resp.status_code)
            if resp.status_code in RETRY_STATUSES and attempt < self.max_retries:
                retry_after = resp.headers.get("Retry-After")
                resp.close()
                self.sleep(_backoff(attempt, retry_after))
                attempt += 1
                continue
            if resp.status_code >= 400:
                body = resp.read()
                resp.close()
                raise api_error(resp.status_code, body, req)
            return resp

    def call(self, req: rq.Request) -> Any:
        """Send and decode the JSON answer."""
        resp = self._send(req)
        try:
            return resp.json()
        except ValueError as e:
            raise ClusterError(f"unexpected answer (not JSON): {resp.text[:200]}", obj=req.obj) from e

    def text(self, req: rq.Request) -> str:
        return self._send(req).text

    @contextlib.contextmanager
    def _stream(self, req: rq.Request) -> Iterator[httpx2.Response]:
        resp = self._send(req)
        with self._lock:
            self._open.add(resp)
        try:
            yield resp
        finally:
            with self._lock:
                self._open.discard(resp)
            resp.close()

    def stream_lines(self, req: rq.Request) -> Iterator[str]:
        """Lines of a streamed answer (a watch or ``logs -f``) until the server ends it."""
        with self._stream(req) as resp:
            yield from resp.iter_lines()

    def close_streams(self) -> None:
        """Close every open stream (ends watches and followed logs running in threads)."""
        with self._lock:
            streams = list(self._open)
        for resp in streams:
            with contextlib.suppress(Exception):
                resp.close()

    def close(self) -> None:
        self.close_streams()
        self.http.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- verbs ----------------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return dict(self.call(rq.prepare_version()))

    def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return dict(self.call(rq.prepare_get(kind, namespace, name)))
        except ClusterError as e:
            if e.status == 404:
                return None
            raise

    def list(self, kind: Kind, namespace: str | None, *, label_selector: str = "", field_selector: str = "",
             missing_ok: bool = False) -> tuple[list[dict[str, Any]], str]:
        """Items and the list's resourceVersion, in chunks of ``page_size`` (``limit`` /
        ``continue``, as kubectl and client-go's pager do), so a namespace of tens of thousands
        of pods is read in bounded responses, every chunk from the same snapshot. A token that
        expired mid-list (410, etcd compaction) restarts with one unchunked list, as client-go's
        pager does. ``missing_ok``: a kind the server does not serve (CRD not installed) lists
        as empty instead of failing."""
        items: list[dict[str, Any]] = []
        token = ""
        limit = self.page_size
        while True:
            req = rq.prepare_list(kind, namespace, label_selector=label_selector, field_selector=field_selector,
                                  limit=limit, continue_token=token)
            try:
                doc = self.call(req)
            except ClusterError as e:
                if missing_ok and e.status == 404:
                    return [], ""
                if e.status == 410 and token:
                    log.debug("%s: continue token expired; listing again in one piece", req.obj)
                    items, token, limit = [], "", 0
                    continue
                raise
            items.extend(doc.get("items") or [])
            meta = doc.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                break
        for item in items:  # list items omit apiVersion/kind
            item.setdefault("apiVersion", kind.api_version)
            item.setdefault("kind", kind.kind)
        return items, str(meta.get("resourceVersion") or "")

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False, force: bool = False,
              before: dict[str, Any] | None = None) -> ApplyResult:
        """Server-side apply; ``before`` (the object as it was, or None) decides the action word."""
        out = dict(self.call(rq.prepare_apply(obj, force=force, dry_run=dry_run)))
        if before is None:
            action = "created"
        else:
            same = (out.get("metadata") or {}).get("resourceVersion") == (before.get("metadata") or {}).get(
                "resourceVersion")
            action = "unchanged" if same else "configured"
        return ApplyResult(out, action)

    def delete(self, kind: Kind, namespace: str | None, name: str, *, propagation: str = "Background",
               dry_run: bool = False) -> bool:
        """True when deleted, False when it was already gone."""
        try:
            self.call(rq.prepare_delete(kind, namespace, name, propagation=propagation, dry_run=dry_run))
        except ClusterError as e:
            if e.status == 404:
                return False
            raise
        return True

    def can_i(self, verb: str, resource: str, *, group: str = "", namespace: str = "",
              subresource: str = "") -> bool:
        doc = self.call(rq.prepare_access_review(verb, resource, group=group, namespace=namespace,
                                                 subresource=subresource))
        return bool((doc.get("status") or {}).get("allowed"))

    def watch(self, kind: Kind, namespace: str | None, *, label_selector: str = "", field_selector: str = "",
              stop: threading.Event | None = None, max_failures: int = 8) -> Iterator[WatchEvent]:
        """List then watch, forever (until ``stop`` is set): yields SYNC first, then changes.

        Resumes from the last resourceVersion seen (events and bookmarks) when the server
        closes the stream or the connection drops; re-lists (a new SYNC) on 410 Gone.
        """
        items, rv = self.list(kind, namespace, label_selector=label_selector, field_selector=field_selector)
        yield WatchEvent("SYNC", {}, items)
        failures = 0
        while not (stop and stop.is_set()):
            req = rq.prepare_watch(kind, namespace, label_selector=label_selector, field_selector=field_selector,
                                   resource_version=rv)
            gone = False
            try:
                for line in self.stream_lines(req):
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    etype, obj = event.get("type"), event.get("object") or {}
                    if etype == "ERROR":
                        if obj.get("code") == 410:
                            gone = True
                            break
                        raise api_error(int(obj.get("code") or 500), json.dumps(obj).encode(), req)
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    failures = 0
                    if etype == "BOOKMARK":
                        continue
                    obj.setdefault("apiVersion", kind.api_version)
                    obj.setdefault("kind", kind.kind)
                    yield WatchEvent(str(etype), obj, [])
                    if stop and stop.is_set():
                        return
            except ClusterError as e:
                if e.status != 410:
                    raise
                gone = True
            except (httpx2.TransportError, httpx2.StreamError) as e:
                if stop and stop.is_set():
                    return
                failures += 1
                if failures > max_failures:
                    raise ClusterError(f"watch keeps failing: {e}", obj=req.obj) from e
                self.sleep(_backoff(failures))
                continue
            if gone:
                log.debug("watch %s: 410 Gone, re-listing", req.obj)
                items, rv = self.list(kind, namespace, label_selector=label_selector, field_selector=field_selector)
                yield WatchEvent("SYNC", {}, items)


def _kubeconfig_path(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    env = os.environ.get("KUBECONFIG", "")
    # lightkube reads one file; like kubectl, take the first existing entry of the list.
    for part in env.split(os.pathsep):
        if part and os.path.exists(part):
            return part
    return None


def connect(*, context: str | None = None, kubeconfig: str | None = None,
            transport: httpx2.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> KubeClient:
    """A client for the current (or named) kubeconfig context.

    Raises:
        ClusterError: no usable kubeconfig / context.
    """
    from lightkube.config.client_adapter import Client as http_client
    from lightkube.config.client_adapter import ConnectionParams
    from lightkube.config.kubeconfig import KubeConfig

    path = _kubeconfig_path(kubeconfig)
    try:
        config = KubeConfig.from_file(path) if path else KubeConfig.from_env()
        single = config.get(context)
        assert single is not None
        http = http_client(single, ConnectionParams(timeout=httpx2.Timeout(30.0), transport=transport))
    except Exception as e:  # lightkube raises its own ConfigError, OSError, KeyError on bad files
        where = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ClusterError(f"cannot use kubeconfig {where}: {e}",
                           hint="set KUBECONFIG or pass --kubeconfig / --context (kubectl config get-contexts)") from e
    return KubeClient(http, namespace=single.namespace, context=single.context_name, sleep=sleep)


def object_ref(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    kind = kind_of(obj)
    return f"{kind.kind} {meta.get('namespace')}/{meta.get('name')}" if kind.namespaced else \
        f"{kind.kind} {meta.get('name')}"
