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

import base64
import binascii
import contextlib
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

from dockyard_k8s.errors import ClusterError, ConfigProblem
from dockyard_k8s.live import crdfields
from dockyard_k8s.live import kubeconfig as kc
from dockyard_k8s.live import requests as rq
from dockyard_k8s.live.kinds import Kind
from dockyard_k8s.plain import Record

log = logging.getLogger("dockyard_k8s.live")

# Items per LIST chunk: kubectl's --chunk-size default.
PAGE_SIZE = 500
# Seconds to establish a connection (TCP + TLS): an unreachable server fails in seconds.
CONNECT_TIMEOUT = 5.0
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


class WatchEvent(Record):
    """``SYNC`` carries the full list (first list or a re-list after 410): objects not in
    ``items`` are gone. ``ADDED``/``MODIFIED``/``DELETED`` carry one object."""

    __slots__ = ("type", "obj", "items")

    def __init__(self, type: str, obj: dict[str, Any], items: list[dict[str, Any]]) -> None:
        self.type = type
        self.obj = obj
        self.items = items


class ApplyResult(Record):
    __slots__ = ("obj", "action")

    def __init__(self, obj: dict[str, Any], action: str) -> None:
        self.obj = obj  # what the server returned
        self.action = action  # created | configured | unchanged


def unreachable_reason(e: Exception) -> str:
    """Why a connection failed, in words (httpx wraps the socket/ssl error text)."""
    text = str(e) or type(e).__name__
    low = text.lower()
    if isinstance(e, httpx2.ConnectTimeout) or "timed out" in low:
        return f"no answer within {CONNECT_TIMEOUT:g} s (connect timeout): a firewall, VPN or wrong address?"
    if "refused" in low:
        return "connection refused (nothing listens there)"
    if "name or service not known" in low or "nodename nor servname" in low or "name resolution" in low or \
            "no address associated" in low:
        return "the host name does not resolve (DNS)"
    if "certificate verify failed" in low or "certificate_verify_failed" in low:
        return (f"the server's TLS certificate is not trusted ({text}): check the cluster's "
                "certificate-authority(-data) in the kubeconfig")
    if "network is unreachable" in low or "no route to host" in low:
        return "no route to the host (network unreachable)"
    return text


def _backoff(attempt: int, retry_after: str | None = None) -> float:
    if retry_after and retry_after.isdigit():
        return min(float(retry_after), 30.0)
    return min(0.2 * 2 ** attempt, 8.0)


# A server-side apply the schema refuses is answered 500 (structured-merge-diff's conversion
# error is not an API status): permanent, never worth a retry.
SCHEMA_REFUSED = "failed to create typed patch object"
# The API server's refusal of a create in a namespace being deleted (apiserver's namespace
# lifecycle admission): 403 Forbidden, cause NamespaceTerminating.
_TERMINATING = re.compile(r"unable to create new content in namespace (\S+) because it is being terminated")
# RFC 7234 warning-values: 299 - "text" (several per header, comma separated)
_WARNING = re.compile(r'\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')


def _status_doc(body: bytes) -> dict[str, Any]:
    with contextlib.suppress(ValueError):
        doc = json.loads(body)
        if isinstance(doc, dict):
            return doc
    return {}


# metadata the server sets or moves on its own: not part of what an apply changes
_SERVER_META = frozenset({"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp", "selfLink"})


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_META}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def warnings_of(resp: httpx2.Response) -> list[str]:
    """The texts of a response's ``Warning`` headers (admission webhooks, pruned fields,
    deprecated versions)."""
    out = []
    for value in resp.headers.get_list("warning"):
        found = _WARNING.findall(value)
        out += [re.sub(r"\\(.)", r"\1", text) for text in found] if found else [value]
    return out


def api_error(status: int, body: bytes, req: rq.Request) -> ClusterError:
    """A failed response as a ClusterError naming the object (Status body when there is one)."""
    doc = _status_doc(body)
    message = str(doc.get("message") or "")
    reason = str(doc.get("reason") or "")
    raw_details = doc.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    if not message:
        message = body.decode(errors="replace").strip()[:300] or f"HTTP {status}"
    text = f"{reason}: {message}" if reason and reason not in message else message
    hint = STATUS_HINTS.get(status, "")
    if status == 404 and details.get("kind") == "namespaces":
        ns = details.get("name") or "?"
        return ClusterError(f"namespace {ns} does not exist", obj=req.obj, status=status,
                            hint=f"create it (kubectl create namespace {ns}) or choose another with -n / "
                                 "infra.namespace")
    terminating = _TERMINATING.search(message)
    if status == 403 and (terminating or any(isinstance(c, dict) and c.get("reason") == "NamespaceTerminating"
                                             for c in details.get("causes") or [])):
        # the namespace lifecycle admission plugin's answer, not an RBAC denial
        ns = terminating.group(1) if terminating else str(req.obj).partition(" ")[2].partition("/")[0] or "?"
        return ClusterError(f"unable to create new content in namespace {ns} because it is being terminated",
                            obj=req.obj, status=status,
                            hint=f"namespace {ns} is being deleted: wait until `kubectl get namespace {ns}` says "
                                 "NotFound (its finalizers and the objects in it must go first), create it again, "
                                 "then run again; or choose another namespace with -n / infra.namespace")
    fields = crdfields.undeclared_in_message(message) if SCHEMA_REFUSED in message else []
    if fields:
        kind = req.obj.split(" ")[0]
        text, hint = crdfields.explain(kind, fields)
    elif SCHEMA_REFUSED in message:
        hint = "the cluster's schema for this kind does not accept the object: compare `dockyard-k8s doctor`"
    elif status == 400 and "HTTP request to an HTTPS server" in message:
        hint = ("the kubeconfig's server is http:// or has no scheme (kubectl reads `host:port` as http://, "
                "and sends no credentials over it): write https://HOST:PORT")
    elif status >= 500:
        hint = "the API server failed repeatedly; retry later or check the control plane"
    return ClusterError(text, obj=req.obj, status=status, hint=hint)


class KubeClient:
    """Send :class:`~dockyard_k8s.live.requests.Request` objects; higher-level verbs on top."""

    def __init__(self, http: httpx2.Client, *, namespace: str = "default", context: str = "",
                 sleep: Callable[[float], None] = time.sleep, max_retries: int = 5,
                 page_size: int = PAGE_SIZE, server: str = "") -> None:
        self.http = http
        self.server = server or str(http.base_url).rstrip("/")
        self.reached = False  # some request got an HTTP answer
        self.default_namespace = namespace
        self.context = context
        self.sleep = sleep
        self.max_retries = max_retries
        self.page_size = page_size
        self._open: set[httpx2.Response] = set()
        self._lock = threading.Lock()
        self.warnings: list[tuple[str, str]] = []  # (object, text) of Warning headers, see take_warnings

    # --- sending --------------------------------------------------------------------------

    def _unreachable_hint(self) -> str:
        where = f"context {self.context}" if self.context else "the kubeconfig"
        return (f"is the cluster up and is {self.server} the right address for it ({where})? "
                "`kubectl cluster-info` tries the same; pick another context with --context")

    def _build(self, req: rq.Request) -> httpx2.Request:
        timeout = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=None if req.stream else 60.0)
        if req.param("watch"):
            timeout = httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT, read=float(rq.WATCH_TIMEOUT_SECONDS + 30))
        return self.http.build_request(req.method, req.path, params=list(req.params), headers=dict(req.headers),
                                       content=req.body, timeout=timeout)

    def _send(self, req: rq.Request) -> httpx2.Response:
        """Send with retries; the response is open (streamed) when ``req.stream``."""
        attempt = 0
        while True:
            try:
                resp = self.http.send(self._build(req), stream=req.stream)
            except httpx2.TransportError as e:
                # A server never reached is not worth 6 s of retries (kubectl does not retry
                # either); once it answered, a failed connection is a blip: retry.
                never = not self.reached and isinstance(e, (httpx2.ConnectError, httpx2.ConnectTimeout))
                if never or attempt >= self.max_retries:
                    raise ClusterError(f"cannot reach the API server at {self.server}: {unreachable_reason(e)}",
                                       hint=self._unreachable_hint()) from e
                log.debug("%s %s: %s; retrying", req.method, req.path, type(e).__name__)
                self.sleep(_backoff(attempt))
                attempt += 1
                continue
            self.reached = True
            log.debug("%s %s -> %s", req.method, req.path, resp.status_code)
            self._warnings(resp, req)
            if resp.status_code == 500 and SCHEMA_REFUSED.encode() in resp.read():
                resp.close()
                raise api_error(resp.status_code, resp.content, req)
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

    def _warnings(self, resp: httpx2.Response, req: rq.Request) -> None:
        for text in warnings_of(resp):
            with self._lock:
                if (req.obj, text) not in self.warnings:
                    self.warnings.append((req.obj, text))

    def take_warnings(self) -> list[tuple[str, str]]:
        """(object, text) of every Warning header answered since the last call."""
        with self._lock:
            out, self.warnings = self.warnings, []
        return out

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
    def _stream(self, req: rq.Request, stop: threading.Event | None = None) -> Iterator[httpx2.Response]:
        resp = self._send(req)
        with self._lock:
            self._open.add(resp)
        if stop is not None and stop.is_set():
            # close_streams ran while this one was being opened: it did not see it. The stop is
            # set before close_streams is called, so a stream is closed by one or the other
            resp.close()
        try:
            yield resp
        finally:
            with self._lock:
                self._open.discard(resp)
            resp.close()

    def stream_lines(self, req: rq.Request, stop: threading.Event | None = None) -> Iterator[str]:
        """Lines of a streamed answer (a watch or ``logs -f``) until the server ends it, or
        until ``close_streams`` once ``stop`` is set (a stream opened meanwhile closes itself)."""
        with self._stream(req, stop) as resp:
            if stop is not None and stop.is_set():
                return
            yield from resp.iter_lines()

    def close_streams(self) -> None:
        """Close every open stream (ends watches and followed logs running in threads). The
        socket is shut down first: closing the response does not wake a thread blocked reading
        it, and a real API server's idle watch (a quiet namespace's Warning events) sends nothing
        for up to 30 minutes."""
        with self._lock:
            streams = list(self._open)
        for resp in streams:
            with contextlib.suppress(Exception):
                sock = resp.extensions["network_stream"].get_extra_info("socket")
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
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
        """Server-side apply; ``before`` (the object as it was, or None) decides the action word:
        a write changes the resourceVersion; a dry run keeps it whatever it would change, so
        there the content is compared, server-set metadata aside. A write that changed only
        server-set metadata (``managedFields``: the launcher now shares fields another manager
        wrote with the same values) changed nothing of the object: ``unchanged``."""
        out = dict(self.call(rq.prepare_apply(obj, force=force, dry_run=dry_run)))
        if before is None:
            action = "created"
        elif dry_run:
            action = "unchanged" if _content(out) == _content(before) else "configured"
        else:
            same = (out.get("metadata") or {}).get("resourceVersion") == (before.get("metadata") or {}).get(
                "resourceVersion") or _content(out) == _content(before)
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
                for line in self.stream_lines(req, stop):
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


def _lightkube_config(config: kc.Kubeconfig, selected: kc.Selected) -> Any:
    """lightkube's SingleConfig of the selected context; a field of the wrong type is a
    located KubeconfigError (lightkube would raise msgspec's ValidationError)."""
    import msgspec
    from lightkube.config.kubeconfig import SingleConfig
    from lightkube.config.models import Cluster, Context, User

    def convert(value: dict[str, Any], model: type, section: str, name: str) -> Any:
        try:
            return msgspec.convert(value, model)
        except msgspec.ValidationError as e:
            text = str(e)
            field = text.rpartition("at `$.")[2].rstrip("`").split(".")[0].split("[")[0] if "at `$." in text else ""
            at = config.locate(section, name, field)
            path = f"{section}.{name}" + (f".{field}" if field else "")
            raise kc.KubeconfigError([ConfigProblem(at.file, at.line, at.col, path,
                                                    text.partition(" - at ")[0])]) from None

    cluster_name, user_name = str(selected.context["cluster"]), str(selected.context.get("user"))
    for section, name, body, fields in (("clusters", cluster_name, selected.cluster, ("certificate-authority-data",)),
                                        ("users", user_name, selected.user or {},
                                         ("client-certificate-data", "client-key-data"))):
        for field in fields:
            _check_base64(config, section, name, field, body.get(field))
    context = convert(selected.context, Context, "contexts", selected.name)
    cluster = convert({**selected.cluster, "server": server_url(str(selected.cluster["server"]))}, Cluster,
                      "clusters", cluster_name)
    user = convert(selected.user, User, "users", user_name) if selected.user is not None else User()
    if not cluster.server.startswith("https://"):
        user = User()  # kubectl sends no credentials over plain HTTP (client-go's IsConfigTransportTLS)
    return SingleConfig(context_name=selected.name, context=context, cluster=cluster, user=user,
                        fname=None)


def server_url(server: str) -> str:
    """The server as kubectl reads it: one without a scheme (``127.0.0.1:6443``) is plain
    HTTP (client-go's DefaultServerURL before any TLS setting is considered), so kubectl then
    sends no credentials either."""
    return server if "://" in server else f"http://{server}"


def _check_base64(config: kc.Kubeconfig, section: str, name: str, field: str, value: Any) -> None:
    """A ``*-data`` field is base64 (kubectl: "illegal base64 data at input byte N"), located."""
    if value is None:
        return
    at = config.locate(section, name, field)
    try:
        base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as e:
        raise kc.KubeconfigError([ConfigProblem(at.file, at.line, at.col, f"{section}.{name}.{field}",
                                                f"not base64 ({e}): expected the PEM file's base64 "
                                                f"(`base64 -w0 FILE`)")]) from None


def _tls_problem(config: kc.Kubeconfig, selected: kc.Selected, e: OSError) -> kc.KubeconfigError:
    """A TLS file of the context that cannot be loaded, at the kubeconfig line naming it."""
    import ssl

    fields = [("clusters", str(selected.context["cluster"]), selected.cluster, "certificate-authority"),
              ("users", str(selected.context.get("user")), selected.user or {}, "client-certificate"),
              ("users", str(selected.context.get("user")), selected.user or {}, "client-key")]
    named = [(sec, name, field, body[field]) for sec, name, body, field in fields if body.get(field)]
    if isinstance(e, ssl.SSLError):  # a file or a -data field: not PEM
        named = [(sec, name, field + suffix, body[field + suffix]) for sec, name, body, field in fields
                 for suffix in ("", "-data") if body.get(field + suffix)]
        why = f"not a PEM certificate/key ({getattr(e, 'reason', None) or e})"
    else:
        named = [n for n in named if n[3] == e.filename] or named
        missing = [n for n in named if not os.path.exists(str(n[3]))]
        named = missing or named
        why = f"{named[0][3] if len(named) == 1 else e.filename or 'a file'}: {e.strerror or e}"
    sec, name, field = named[0][:3] if named else ("contexts", selected.name, "")
    at = config.locate(sec, name, field)
    what = field if len(named) <= 1 else "/".join(n[2] for n in named)
    return kc.KubeconfigError([ConfigProblem(at.file, at.line, at.col, f"{sec}.{name}.{what}".rstrip("."),
                                                f"cannot load the TLS file: {why}")])


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
    from lightkube.config.client_adapter import Client as http_client
    from lightkube.config.client_adapter import ConnectionParams
    from lightkube.config.kubeconfig import KubeConfig, SingleConfig

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
        single = _lightkube_config(config, selected)
    assert single is not None
    try:
        http = http_client(single, ConnectionParams(timeout=httpx2.Timeout(30.0, connect=CONNECT_TIMEOUT),
                                                    transport=transport))
    except OSError as e:  # a certificate or key file missing (FileNotFoundError) or not PEM (ssl.SSLError)
        if found is None:
            raise ClusterError(f"in-cluster service account: {e}") from e
        raise _tls_problem(config, selected, e) from e
    except Exception as e:  # lightkube's ConfigError (an unsupported auth-provider...)
        raise ClusterError(f"context {single.context_name}: {e}", hint=kc.HINT) from e
    if found is not None and selected.user and str(single.cluster.server).startswith("https://"):
        # exec plugins and token files: ours, whose failures are located (credentials.py)
        from dockyard_k8s.live.credentials import user_auth

        auth = user_auth(config, str(selected.context.get("user")), selected.user, selected.cluster)
        if auth is not None:
            http.auth = auth
    return KubeClient(http, namespace=single.namespace, context=single.context_name, sleep=sleep,
                      server=str(single.cluster.server))
