"""KubeClient: the one place that sends requests to the Kubernetes API, built on lightkube.

What lightkube (1.x) does:
* the connection: its kubeconfig model (``SingleConfig``, which :func:`connect` fills from the
  kubeconfig as kubectl reads it) and HTTP adapter (``httpx2`` with the cluster's TLS and the user's
  credentials; exec plugins and token files are :mod:`~dockyard_k8s.live.credentials`', whose
  failures are located);
* the requests: ``GenericSyncClient``, what ``lightkube.Client`` is made of, prepares each one from
  a generic resource (:func:`resource_of`: group, version, plural, namespace -> URL), encodes and
  decodes JSON (msgspec), reads a LIST in chunks (``limit``/``continue``) and keeps a watch open,
  resuming from the last resourceVersion seen when the server ends the stream (``on_error`` says
  what a failure does).

``lightkube.Client``'s own verbs are not used: they take selectors as mappings (ours are strings,
``status.phase!=Succeeded,status.phase!=Failed`` names one key twice), have no ``fieldValidation``,
``allowWatchBookmarks`` or ``previous`` (logs) parameter, and return no response headers.

What stays ours:
* :meth:`_Sender.send`: retries with exponential backoff on 429 (honouring ``Retry-After``), 5xx
  and connection resets, none for a server never reached; streams another thread can end
  (:meth:`KubeClient.close_streams`: a real API server's quiet watch sends nothing for minutes);
* the error wording (:mod:`~dockyard_k8s.live.answers`, naming the object), from the plain
  ``httpx2`` error rather than lightkube's ApiError (built for some bodies only);
* server-side apply with ``fieldValidation=Strict`` (as kubectl), its action word and the
  answer's Warning headers (:class:`ApplyResult`);
* 410 Gone: a LIST whose continue token expired is read again in one piece (client-go's pager);
  a watch re-lists (a SYNC event: objects not in it are gone), where lightkube would restart
  without a version and send every object again as ADDED, deletions missed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import msgspec
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ApiError
from lightkube.core.generic_client import ALL_NS, BasicRequest, GenericSyncClient
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.core_v1 import PodLog
from lightkube.types import OnErrorAction, OnErrorResult, PatchType

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import format_ref
from dockyard_k8s.live import kubeconfig as kc
from dockyard_k8s.live.answers import SCHEMA_REFUSED, unreachable_reason, warnings_of, worded
from dockyard_k8s.live.credentials import single_config, tls_problem, user_auth
from dockyard_k8s.live.kinds import KINDS, Kind, kind_of

log = logging.getLogger("dockyard_k8s.live")
T = TypeVar("T")

FIELD_MANAGER = "dockyard-k8s"
# Items per LIST chunk: kubectl's --chunk-size default.
PAGE_SIZE = 500
# Seconds to establish a connection (TCP + TLS): an unreachable server fails in seconds.
CONNECT_TIMEOUT = 5.0
TIMEOUT = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=60.0)
# Server-side watch timeout: the server closes the stream after this and the watch resumes
# from the last resourceVersion (client-go uses a random 5-10 min; we stay below LB idle limits).
WATCH_TIMEOUT_SECONDS = 290
# A watch silent for longer than the server's timeout is a dead connection; a followed log may
# be silent for hours.
WATCH_READ = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=WATCH_TIMEOUT_SECONDS + 30)
FOLLOW_READ = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=None)
# Statuses worth retrying: throttling and transient server/load-balancer errors.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """``SYNC`` carries the full list (first list or a re-list after 410): objects not in
    ``items`` are gone. ``ADDED``/``MODIFIED``/``DELETED`` carry one object."""

    type: str
    obj: dict[str, Any]
    items: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ApplyResult:
    obj: dict[str, Any]  # what the server returned
    action: str  # created | configured | unchanged
    warnings: tuple[str, ...] = ()  # the answer's Warning headers (admission, pruned fields, deprecations)


def _backoff(attempt: int, retry_after: str | None = None) -> float:
    if retry_after and retry_after.isdigit():
        return min(float(retry_after), 30.0)
    return min(0.2 * 2 ** attempt, 8.0)


# metadata the server sets or moves on its own: not part of what an apply changes
_SERVER_META = frozenset({"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp", "selfLink"})


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_META}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


@functools.cache
def resource_of(kind: Kind) -> Any:
    """lightkube's generic resource of a kind (created once: lightkube registers each)."""
    group, _, version = kind.api_version.rpartition("/")
    create = create_namespaced_resource if kind.namespaced else create_global_resource
    return create(group, version, kind.kind, kind.plural)


def _params(**kwargs: Any) -> dict[str, Any]:
    """Query parameters without the unset ones (None, "", False)."""
    return {k: v for k, v in kwargs.items() if v is not None and v != "" and v is not False}


def _plain(obj: Any, kind: Kind) -> dict[str, Any]:
    """A decoded object (lightkube's generic resource, a dict) as a dict; list and watch items
    omit apiVersion and kind."""
    out = dict(obj)
    out.setdefault("apiVersion", kind.api_version)
    out.setdefault("kind", kind.kind)
    return out


class _Stopped(Exception):
    """A stream opened by a thread whose stop is set (see :meth:`_Sender.send`)."""


class _Sender(GenericSyncClient):
    """lightkube's request pipeline (prepare_request -> send -> handle_response, list_chunks,
    watch) with our ``send``."""

    # lightkube's own turns an error into ApiError for some bodies only: the plain httpx2
    # error, which answers.worded reads
    raise_for_status = staticmethod(httpx2.Response.raise_for_status)

    def __init__(self, config: SingleConfig, transport: httpx2.BaseTransport | None, *,
                 sleep: Callable[[float], None], max_retries: int) -> None:
        super().__init__(ConnectionParams(timeout=TIMEOUT, transport=transport), config)
        self._watch_timeout = WATCH_READ
        self.http: httpx2.Client = self._client
        self.server, self.context = str(config.cluster.server), config.context_name
        self.sleep = sleep
        self.max_retries = max_retries
        self.reached = False  # some request got an HTTP answer
        self.open: set[httpx2.Response] = set()
        self.lock = threading.Lock()
        # .stop: the Event that ends the watch or log this thread follows (one per thread)
        self.local = threading.local()

    def _unreachable(self, e: httpx2.TransportError) -> ClusterError:
        where = f"context {self.context}" if self.context else "the kubeconfig"
        reason = unreachable_reason(e, self.http.timeout.connect or CONNECT_TIMEOUT)
        return ClusterError(f"cannot reach the API server at {self.server}: {reason}",
                            hint=f"is the cluster up and is {self.server} the right address for it ({where})? "
                                 "`kubectl cluster-info` tries the same; pick another context with --context")

    def send(self, req: httpx2.Request, stream: bool = False) -> httpx2.Response:
        """Send with retries; an error answer comes back read, a stream is registered (or
        refused, :class:`_Stopped`, when this thread's stop is set)."""
        attempt = 0
        while True:
            try:
                resp = self.http.send(req, stream=stream)
            except httpx2.TransportError as e:
                # A server never reached is not worth 6 s of retries (kubectl does not retry
                # either); once it answered, a failed connection is a blip: retry.
                never = not self.reached and isinstance(e, (httpx2.ConnectError, httpx2.ConnectTimeout))
                if never or attempt >= self.max_retries:
                    raise self._unreachable(e) from e
                log.debug("%s %s: %s; retrying", req.method, req.url.path, type(e).__name__)
                self.sleep(_backoff(attempt))
                attempt += 1
                continue
            self.reached = True
            log.debug("%s %s -> %s", req.method, req.url.path, resp.status_code)
            if resp.is_error:
                resp.read()
                if resp.status_code in RETRY_STATUSES and attempt < self.max_retries and \
                        SCHEMA_REFUSED.encode() not in resp.content:
                    self.sleep(_backoff(attempt, resp.headers.get("Retry-After")))
                    attempt += 1
                    continue
            if stream:
                self._track(resp)
            return resp

    def _track(self, resp: httpx2.Response) -> None:
        with self.lock:
            self.open = {r for r in self.open if not r.is_closed} | {resp}
            stop = getattr(self.local, "stop", None)
            if stop is not None and stop.is_set():
                # close_streams ran while this one was being opened: it did not see it. The stop
                # is set before close_streams is called, so a stream is closed by one or the other
                resp.close()
                raise _Stopped


class KubeClient:
    """The verbs the launcher uses, on lightkube's request pipeline (module docstring)."""

    def __init__(self, config: SingleConfig, *, transport: httpx2.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, max_retries: int = 5,
                 page_size: int = PAGE_SIZE) -> None:
        self.lk = _Sender(config, transport, sleep=sleep, max_retries=max_retries)
        self.http = self.lk.http  # raw requests that lightkube has no verb for (the pod proxy)
        self.server, self.context, self.default_namespace = self.lk.server, self.lk.context, config.namespace
        self.page_size = page_size

    def close_streams(self) -> None:
        """Close every open stream (ends watches and followed logs running in threads). The
        socket is shut down first: closing the response does not wake a thread blocked reading
        it, and a real API server's idle watch (a quiet namespace's Warning events) sends nothing
        for up to 30 minutes."""
        with self.lk.lock:
            streams = list(self.lk.open)
        for resp in streams:
            with contextlib.suppress(Exception):
                sock = resp.extensions["network_stream"].get_extra_info("socket")
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(Exception):
                resp.close()

    def close(self) -> None:
        self.close_streams()
        self.lk.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sending --------------------------------------------------------------------------

    def _request(self, method: str, kind: Kind, namespace: str | None, name: str | None = None, *, obj: Any = None,
                 params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                 what: str = "") -> tuple[httpx2.Response, Any]:
        """(answer, decoded object) of one request on a kind."""
        ns = namespace if kind.namespaced else None
        br = self.lk.prepare_request(method, resource_of(kind), obj=obj, name=name, namespace=ns, params=params,
                                     headers=headers)
        with worded(what or format_ref(kind.kind, ns, name or "")):
            resp = self.lk.send(self.lk.build_adapter_request(br))
            return resp, self.lk.handle_response(method, resp, br)

    def _get(self, br: BasicRequest, what: str, *, stream: bool = False) -> httpx2.Response:
        """A GET lightkube has no verb for (the version, a pod's log, Kueue's visibility API)."""
        with worded(what):
            resp = self.lk.send(self.lk.build_adapter_request(br), stream=stream)
            self.lk.raise_for_status(resp)
            return resp

    def get_json(self, path: str, what: str) -> Any:
        """The JSON answer of GET ``path`` (relative to the server, without a query: lightkube's
        request has its parameters apart)."""
        resp = self._get(BasicRequest("GET", path), what)
        with worded(what):
            return msgspec.json.decode(resp.content)

    # --- verbs ----------------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return dict(self.get_json("/version", "API server version"))

    def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return dict(self._request("get", kind, namespace, name)[1])
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
        pager does. ``namespace`` None: every namespace. ``missing_ok``: a kind the server does
        not serve (CRD not installed) lists as empty instead of failing."""
        what = f"{kind.plural} in {namespace}" if namespace and kind.namespaced else kind.plural
        for limit in (self.page_size, 0):
            items: list[dict[str, Any]] = []
            rv: str | None = None
            br = self._collection(kind, namespace, labelSelector=label_selector, fieldSelector=field_selector,
                                  limit=limit or None)
            try:
                with worded(what):
                    for version, chunk in self.lk.list_chunks(br):
                        rv = version or ""
                        items += [_plain(item, kind) for item in chunk]
                return items, rv or ""
            except ClusterError as e:
                if missing_ok and e.status == 404:
                    return [], ""
                if e.status != 410 or rv is None:  # a 410 on the first chunk is an error as any other
                    raise
                log.debug("%s: continue token expired; listing again in one piece", what)
        raise AssertionError("an unchunked list has no continue token")

    def _collection(self, kind: Kind, namespace: str | None, *, watch: bool = False, **params: Any) -> BasicRequest:
        """lightkube's LIST (or watch) of a kind in ``namespace``, or in every one (``*``) when None."""
        where = (namespace or ALL_NS) if kind.namespaced else None
        return self.lk.prepare_request("list", resource_of(kind), namespace=where, watch=watch,
                                       params=_params(**params))

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False, force: bool = False,
              before: dict[str, Any] | None = None, field_manager: str = FIELD_MANAGER) -> ApplyResult:
        """Server-side apply (it creates the object when absent) with ``fieldValidation=Strict``,
        as kubectl sends it: a field the server's schema lacks fails the apply instead of being
        dropped. ``before`` (the object as it was, or None) decides the action word: a write
        changes the resourceVersion; a dry run keeps it whatever it would change, so there the
        content is compared, server-set metadata aside. A write that changed only server-set
        metadata (``managedFields``: the launcher now shares fields another manager wrote with
        the same values) changed nothing of the object: ``unchanged``."""
        kind = kind_of(obj)
        meta = obj.get("metadata") or {}
        resp, answer = self._request(
            "patch", kind, meta.get("namespace"), str(meta.get("name", "")), obj=obj,
            headers={"Content-Type": PatchType.APPLY.value},
            params=_params(fieldManager=field_manager, fieldValidation="Strict", force=force and "true",
                           dryRun=dry_run and "All"))
        out = dict(answer)
        action = "created"
        if before is not None:
            same_version = not dry_run and (out.get("metadata") or {}).get("resourceVersion") == (
                before.get("metadata") or {}).get("resourceVersion")
            action = "unchanged" if same_version or _content(out) == _content(before) else "configured"
        return ApplyResult(out, action, tuple(warnings_of(resp)))

    def delete(self, kind: Kind, namespace: str | None, name: str, *, propagation: str = "Background",
               dry_run: bool = False) -> bool:
        """True when deleted, False when it was already gone. ``Background`` lets the garbage
        collector remove what it owns (a RayJob's RayCluster and submitter Job)."""
        try:
            self._request("delete", kind, namespace, name,
                          params=_params(propagationPolicy=propagation, dryRun=dry_run and "All"))
        except ClusterError as e:
            if e.status == 404:
                return False
            raise
        return True

    def can_i(self, verb: str, resource: str, *, group: str = "", namespace: str = "",
              subresource: str = "") -> bool:
        """``kubectl auth can-i VERB RESOURCE``: a SelfSubjectAccessReview (nothing persisted)."""
        attrs = _params(namespace=namespace, verb=verb, group=group, resource=resource, subresource=subresource)
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": attrs}}
        doc = self._request("post", KINDS["SelfSubjectAccessReview"], None, obj=review,
                            what=f"can-i {verb} {resource}{'/' + subresource if subresource else ''}")[1]
        return bool((doc.get("status") or {}).get("allowed"))

    def pod_log(self, namespace: str, pod: str, *, container: str = "", tail: int | None = None,
                since: int | None = None, previous: bool = False) -> str:
        """A container's log as it is now."""
        return self._log(namespace, pod, container=container, tail=tail, since=since, previous=previous).text

    def follow_log(self, namespace: str, pod: str, *, container: str = "", tail: int | None = None,
                   since: int | None = None, stop: threading.Event | None = None) -> Iterator[str]:
        """A container's log lines as they come (``logs -f``) until the server ends the stream,
        or until ``close_streams`` once ``stop`` is set (a stream opened meanwhile closes itself)."""
        self.lk.local.stop = stop
        try:
            resp = self._log(namespace, pod, container=container, tail=tail, since=since, follow=True)
        except _Stopped:
            return
        try:
            yield from resp.iter_lines()
        finally:
            resp.close()

    def _log(self, namespace: str, pod: str, *, follow: bool = False, container: str = "",
             tail: int | None = None, since: int | None = None, previous: bool = False) -> httpx2.Response:
        br = self.lk.prepare_request("get", PodLog, name=pod, namespace=namespace, params=_params(
            container=container, follow=follow and "true", tailLines=tail, sinceSeconds=since,
            previous=previous and "true"))
        br.timeout = FOLLOW_READ if follow else None
        return self._get(br, format_ref("Pod", namespace, pod), stream=follow)

    def watch(self, kind: Kind, namespace: str | None, *, label_selector: str = "", field_selector: str = "",
              stop: threading.Event | None = None, max_failures: int = 8) -> Iterator[WatchEvent]:
        """List then watch, until ``stop`` is set: yields SYNC first, then changes. Each watch
        runs in a thread of its own (``stop`` is that thread's).

        lightkube resumes from the last resourceVersion seen (events and bookmarks) when the
        server closes the stream, and after a dropped connection (``on_error``: up to
        ``max_failures`` in a row, with backoff); a 410 Gone ends its watch, and this one
        re-lists (a new SYNC) and watches from there.
        """
        what = f"{kind.plural} in {namespace}" if namespace and kind.namespaced else kind.plural
        stop = stop or threading.Event()
        gone = True  # list first, and again after a 410 Gone

        def on_error(e: Exception, failures: int) -> OnErrorResult:
            nonlocal gone
            code = e.status.code if isinstance(e, ApiError) else \
                e.response.status_code if isinstance(e, httpx2.HTTPStatusError) else 0
            gone = code == 410
            if gone or stop.is_set():
                return OnErrorResult(OnErrorAction.STOP)
            if isinstance(e, httpx2.TransportError) and failures <= max_failures:
                self.lk.sleep(_backoff(failures))
                return OnErrorResult(OnErrorAction.RETRY)
            return OnErrorResult(OnErrorAction.RAISE)

        self.lk.local.stop = stop
        while True:
            if gone:
                items, rv = self.list(kind, namespace, label_selector=label_selector, field_selector=field_selector)
                yield WatchEvent("SYNC", {}, items)
            if stop.is_set():
                return
            br = self._collection(kind, namespace, watch=True, labelSelector=label_selector,
                                  fieldSelector=field_selector, resourceVersion=rv, allowWatchBookmarks="true",
                                  timeoutSeconds=WATCH_TIMEOUT_SECONDS)
            gone = False
            try:
                with worded(what):
                    for etype, obj in self.lk.watch(br, on_error=on_error):
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if etype != "BOOKMARK":
                            yield WatchEvent(etype, _plain(obj, kind), [])
                        if stop.is_set():
                            return
            except _Stopped:
                return
            except httpx2.StreamError:  # closed by close_streams: done when stopped, else resumed from rv
                continue
            except httpx2.TransportError as e:
                raise ClusterError(f"watch keeps failing: {e}", obj=what) from e
            if not gone:
                return
            log.debug("watch %s: 410 Gone, re-listing", what)


def allowed(fetch: Callable[[], T]) -> T | None:
    """``fetch()``; None when the API server refuses it (401, 403): "cannot tell", not a failure."""
    try:
        return fetch()
    except ClusterError as e:
        if e.status in (401, 403):
            return None
        raise


def connect(*, context: str | None = None, kubeconfig: str | None = None, target: kc.Target | None = None,
            transport: httpx2.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> KubeClient:
    """A client for the current (or named) context of the kubeconfig kubectl would use
    (``--kubeconfig``, else ``$KUBECONFIG`` merged, else ``~/.kube/config``, else the
    in-cluster service account). ``target``: that kubeconfig and context already resolved
    (:func:`~dockyard_k8s.live.kubeconfig.resolve`; the files are not read again). Nothing is sent yet.

    Raises:
        KubeconfigError: a malformed kubeconfig or an unusable context (exit 2), located.
        ClusterError: no configuration at all.
    """
    found = (target if target is not None else kc.resolve(kubeconfig, context)).usable()
    single: SingleConfig | None
    if found is None:
        try:
            single = KubeConfig.from_service_account().get()
        except Exception as e:  # not in a pod: no token file, no KUBERNETES_SERVICE_HOST
            where = os.environ.get("KUBECONFIG") or kc.DEFAULT_KUBECONFIG
            raise ClusterError(f"no kubeconfig: {where} does not exist and this is not a pod with a service account",
                               hint=kc.HINT) from e
    else:
        config, selected = found
        single = single_config(config, selected)
    assert single is not None
    try:
        client = KubeClient(single, transport=transport, sleep=sleep)
    except OSError as e:  # a certificate or key file missing (FileNotFoundError) or not PEM (ssl.SSLError)
        if found is None:
            raise ClusterError(f"in-cluster service account: {e}") from e
        raise tls_problem(config, selected, e) from e
    except Exception as e:  # lightkube's ConfigError (an unsupported auth-provider...)
        raise ClusterError(f"context {single.context_name}: {e}", hint=kc.HINT) from e
    if found is not None and selected.user and str(single.cluster.server).startswith("https://"):
        # exec plugins and token files: ours, whose failures are located (credentials.py)
        auth = user_auth(config, str(selected.context.get("user")), selected.user, selected.cluster)
        if auth is not None:
            client.http.auth = auth
    return client
