"""A stateful fake Kubernetes API server, in process, as an httpx2 transport.

It implements, for the resources it serves, the semantics the launcher relies on, as
the Kubernetes API documents them (each is asserted in ``test_fakekube.py``):

* CRUD: GET 404 ``Status{reason: NotFound}``, POST 201 / 409 ``AlreadyExists``,
  DELETE with ``propagationPolicy`` (ownerReferences cascade unless ``Orphan``) and ``dryRun``;
* server-side apply (PATCH ``application/apply-patch+yaml``): ``fieldManager`` required,
  creates when absent (201), updates (200), no-op keeps ``resourceVersion``, field
  ownership per manager with 409 ``Conflict`` unless ``force=true``, ``dryRun=All`` persists
  nothing; lists are atomic (as for ``x-kubernetes-list-type: atomic``);
* LIST with ``labelSelector`` (=, ==, !=, in, notin, exists, !exists) and ``fieldSelector``
  (only fields the kind supports; others 400), returning the collection resourceVersion;
  ``limit``/``continue`` chunking ("Retrieving large results sets in chunks"): at most
  ``limit`` items and an opaque ``metadata.continue`` token while more remain, every chunk
  a consistent snapshot at the first chunk's resourceVersion, ``remainingItemCount`` only
  without selectors, selectors changed under a token 400, a token older than the last
  compaction 410 ``Expired``; ``max_page`` returns fewer items than ``limit``, as a server may;
  ``slow_list_over`` makes an unchunked LIST of more items time out (504 ``Timeout``, the
  API server's request timeout on a list too large to send in time);
* WATCH from a resourceVersion: only later events, selector transitions become
  ADDED/DELETED, no resourceVersion = synthetic ADDED for the current state, a compacted
  version gives ``ERROR`` 410 Expired (or HTTP 410 with ``gone_as_http``), server-side
  ``timeoutSeconds``, bookmarks on request;
* pod logs: container required when the pod has several, ``tailLines``, ``sinceSeconds``,
  ``previous``, ``follow`` streaming until the container ends;
* SelfSubjectAccessReview answered from a deny list; ``/version``.

Test helpers (``put``, ``set_status``, ``add_event``, ``add_log``, ``fail``, ``compact``,
``drop_watches``...) play the role of controllers and of a flaky network.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

import httpx2
import yaml

# (apiVersion, plural) -> (kind, namespaced): what a stock API server + KubeRay CRDs serve.
BUILTIN = {
    ("v1", "pods"): ("Pod", True),
    ("v1", "events"): ("Event", True),
    ("v1", "configmaps"): ("ConfigMap", True),
    ("v1", "secrets"): ("Secret", True),
    ("v1", "services"): ("Service", True),
    ("v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True),
    ("v1", "resourcequotas"): ("ResourceQuota", True),
    ("v1", "limitranges"): ("LimitRange", True),
    ("v1", "namespaces"): ("Namespace", False),
    ("v1", "nodes"): ("Node", False),
    ("apps/v1", "deployments"): ("Deployment", True),
    ("apps/v1", "statefulsets"): ("StatefulSet", True),
    ("apps/v1", "daemonsets"): ("DaemonSet", True),
    ("apps/v1", "replicasets"): ("ReplicaSet", True),
    ("batch/v1", "jobs"): ("Job", True),
    ("networking.k8s.io/v1", "networkpolicies"): ("NetworkPolicy", True),
    ("policy/v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True),
    ("scheduling.k8s.io/v1", "priorityclasses"): ("PriorityClass", False),
    ("node.k8s.io/v1", "runtimeclasses"): ("RuntimeClass", False),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions"): ("CustomResourceDefinition", False),
    ("authorization.k8s.io/v1", "selfsubjectaccessreviews"): ("SelfSubjectAccessReview", False),
}
CRDS = {
    ("ray.io/v1", "rayjobs"): ("RayJob", True),
    ("ray.io/v1", "rayclusters"): ("RayCluster", True),
    ("kubeflow.org/v2beta1", "mpijobs"): ("MPIJob", True),
}
# Field selectors each kind supports (apiserver registry GetAttrs); everything has the metadata ones.
FIELDS = {
    "Event": {"involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
              "reason", "type", "source"},
    "Pod": {"spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName"},
    "Secret": {"type"},
}
SERVER_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp")


class Recorded(NamedTuple):
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes


class _Change(NamedTuple):
    rv: int
    res: tuple[str, str]
    type: str
    obj: dict[str, Any]
    prev: dict[str, Any] | None


class _Stream(httpx2.SyncByteStream):
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


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "details": details, "code": code}


class ApiFailure(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.doc = status(code, reason, message)


# --- selectors -----------------------------------------------------------------------------

def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """Kubernetes label selector syntax (k8s.io/apimachinery labels.Parse)."""
    reqs: list[Callable[[dict[str, str]], bool]] = []
    for part in _split_top(text or ""):
        words = part.split()
        if len(words) >= 3 and words[1] in ("in", "notin"):
            key, op = words[0], words[1]
            rest = part.split(op, 1)[1].strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise ApiFailure(400, "BadRequest", f"unable to parse requirement: {part}")
            values = {v.strip() for v in rest[1:-1].split(",") if v.strip()}
            if op == "in":
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif "!=" in part:
            key, value = (s.strip() for s in part.split("!=", 1))
            reqs.append(lambda lb, k=key, v=value: lb.get(k) != v)
        elif "==" in part or "=" in part:
            key, value = (s.strip() for s in part.replace("==", "=", 1).split("=", 1))
            if not key:
                raise ApiFailure(400, "BadRequest", f"unable to parse requirement: {part}")
            reqs.append(lambda lb, k=key, v=value: lb.get(k) == v)
        elif part.startswith("!"):
            absent = part[1:].strip()
            reqs.append(lambda lb, k=absent: k not in lb)
        elif " " not in part:
            reqs.append(lambda lb, k=part: k in lb)
        else:
            raise ApiFailure(400, "BadRequest", f"unable to parse requirement: {part}")
    return lambda labels: all(r(labels) for r in reqs)


def _get_path(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for seg in dotted.split("."):
        cur = cur.get(seg) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def parse_field_selector(text: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    allowed = {"metadata.name", "metadata.namespace"} | FIELDS.get(kind, set())
    reqs = []
    for part in _split_top(text or ""):
        neg = "!=" in part
        key, value = (s.strip() for s in (part.split("!=", 1) if neg else part.replace("==", "=", 1).split("=", 1)))
        if key not in allowed:
            raise ApiFailure(400, "BadRequest", f'field label not supported: {key}')
        reqs.append((key, value, neg))
    return lambda obj: all((_get_path(obj, k) != v) if n else (_get_path(obj, k) == v) for k, v, n in reqs)


# --- field ownership for server-side apply ---------------------------------------------------

def _leaves(obj: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(obj, dict) and obj:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in obj.items():
            if not prefix and k == "status":
                continue
            if prefix == ("metadata",) and k in SERVER_META:
                continue
            out.update(_leaves(v, (*prefix, k)))
        return out
    return {prefix: obj}


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    cur = obj
    for seg in path[:-1]:
        if not isinstance(cur.get(seg), dict):
            cur[seg] = {}
        cur = cur[seg]
    cur[path[-1]] = copy.deepcopy(value)


def _unset(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    chain = [obj]
    cur: Any = obj
    for seg in path[:-1]:
        cur = cur.get(seg) if isinstance(cur, dict) else None
        if not isinstance(cur, dict):
            return
        chain.append(cur)
    cur.pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):  # prune emptied maps
        if chain[depth] == {}:
            chain[depth - 1].pop(path[depth - 1], None)


class FakeKube(httpx2.BaseTransport):
    def __init__(self, *, crds: bool = True, namespaces: tuple[str, ...] = ("default",)) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.served = dict(BUILTIN) | (dict(CRDS) if crds else {})
        self.rv = 1000
        self.compacted = 0
        self.store: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self.owners: dict[tuple[Any, ...], dict[str, set[tuple[str, ...]]]] = {}
        self.history: list[_Change] = []
        self.logs: dict[tuple[str, str, str, bool], list[tuple[float, str]]] = {}
        self.logs_done: set[tuple[str, str, str]] = set()
        self.now = 10_000.0  # the fake's clock, for sinceSeconds
        self.requests: list[Recorded] = []
        self.faults: list[list[Any]] = []
        self.denied: set[tuple[str, str, str]] = set()
        self.version = {"major": "1", "minor": "31", "gitVersion": "v1.31.2", "platform": "linux/amd64"}
        self.gone_as_http = False
        self.max_watch_seconds = 30.0
        self.bookmarks = False
        self.drop_gen = 0
        self.closed = False
        self.watching: dict[str, int] = {}
        self.max_page = 0  # > 0: a chunk of a LIST with a limit holds at most this many items
        self.snapshots: dict[int, tuple[int, str, list[dict[str, Any]]]] = {}  # LIST chunking state
        self.snapshot_seq = 0
        self.slow_list_over = 0  # > 0: an unchunked LIST of more items times out (504), as a large one does
        for ns in namespaces:
            self.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    # --- test helpers ------------------------------------------------------------------------
    def _res_of(self, api_version: str, kind: str) -> tuple[str, str]:
        for (av, plural), (k, _) in self.served.items():
            if av == api_version and k == kind:
                return (av, plural)
        raise KeyError(f"{api_version} {kind} not served")

    def _bump(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, res: tuple[str, str], etype: str, obj: dict[str, Any], prev: dict[str, Any] | None) -> None:
        self.history.append(_Change(int(obj["metadata"]["resourceVersion"]), res, etype, copy.deepcopy(obj),
                                    copy.deepcopy(prev) if prev else None))
        self.cond.notify_all()

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object as a controller would (no field ownership)."""
        with self.lock:
            obj = copy.deepcopy(obj)
            res = self._res_of(obj["apiVersion"], obj["kind"])
            namespaced = self.served[res][1]
            meta = obj.setdefault("metadata", {})
            ns = meta.get("namespace", "default") if namespaced else ""
            if namespaced:
                meta["namespace"] = ns
            key = (ns, meta["name"])
            prev = self.store.setdefault(res, {}).get(key)
            meta.setdefault("uid", prev["metadata"]["uid"] if prev else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            meta["resourceVersion"] = str(self._bump())
            self.store[res][key] = obj
            self._record(res, "MODIFIED" if prev else "ADDED", obj, prev)
            return copy.deepcopy(obj)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            res = self._res_of(api_version, kind)
            obj = self.store.get(res, {}).get((namespace if self.served[res][1] else "", name))
            return copy.deepcopy(obj) if obj else None

    def all(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.store.get(self._res_of(api_version, kind), {}).values()]

    def set_status(self, api_version: str, kind: str, namespace: str, name: str, status_: dict[str, Any]) -> None:
        """What an operator does through the status subresource."""
        with self.lock:
            obj = self.get(api_version, kind, namespace, name)
            assert obj is not None, f"{kind} {namespace}/{name} missing"
            obj["status"] = status_
            self.put(obj)

    def remove(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        with self.lock:
            res = self._res_of(api_version, kind)
            self._delete(res, namespace if self.served[res][1] else "", name, "Background")

    def add_event(self, namespace: str, involved: dict[str, Any], reason: str, message: str,
                  etype: str = "Warning") -> dict[str, Any]:
        meta = involved.get("metadata") or {}
        name = f"{meta.get('name')}.{uuid.uuid4().hex[:8]}"
        return self.put({"apiVersion": "v1", "kind": "Event",
                         "metadata": {"name": name, "namespace": namespace},
                         "involvedObject": {"kind": involved.get("kind"), "name": meta.get("name"),
                                            "namespace": namespace, "uid": meta.get("uid")},
                         "reason": reason, "message": message, "type": etype,
                         "lastTimestamp": f"2026-01-01T00:{len(self.history) % 60:02d}:00Z"})

    def add_log(self, namespace: str, pod: str, container: str, lines: list[str], *, previous: bool = False,
                at: float | None = None) -> None:
        with self.lock:
            self.logs.setdefault((namespace, pod, container, previous), []).extend(
                (self.now if at is None else at, line) for line in lines)
            self.cond.notify_all()

    def end_logs(self, namespace: str, pod: str, container: str) -> None:
        with self.lock:
            self.logs_done.add((namespace, pod, container))
            self.cond.notify_all()

    def fail(self, *, status_code: int = 503, path_contains: str = "", method: str = "", times: int = 1,
             retry_after: str | None = None, reset: bool = False) -> None:
        """The next ``times`` matching requests fail with ``status_code`` (or a connection reset)."""
        with self.lock:
            self.faults.append([method, path_contains, status_code, times, retry_after, reset])

    def deny(self, verb: str, resource: str, subresource: str = "") -> None:
        self.denied.add((verb, resource, subresource))

    def compact(self) -> None:
        """Forget history (etcd compaction): watches from older versions get 410 Gone."""
        with self.lock:
            self.compacted = self.rv
            self.history = []
            self.snapshots.clear()  # continue tokens from before expire (410)
            self.drop_gen += 1
            self.cond.notify_all()

    def drop_watches(self) -> None:
        """End every open watch stream (as an API server restart or LB timeout does)."""
        with self.lock:
            self.drop_gen += 1
            self.cond.notify_all()

    def shutdown(self) -> None:
        with self.lock:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Block until ``predicate()`` is truthy (a safety timeout, never an assertion on speed)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                if time.monotonic() > deadline:
                    raise AssertionError("fake API server: condition not reached")
                self.cond.wait(0.05)

    def wait_watching(self, plural: str, count: int = 1, timeout: float = 10.0) -> None:
        self.wait_for(lambda: self.watching.get(plural, 0) >= count, timeout)

    # --- HTTP ----------------------------------------------------------------------------------
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        params = dict(parse_qsl(request.url.query.decode() if isinstance(request.url.query, bytes)
                                else str(request.url.query), keep_blank_values=True))
        path = request.url.path
        with self.lock:
            self.requests.append(Recorded(request.method, path, params, dict(request.headers), body))
            for fault in self.faults:
                method, needle, code, times, retry_after, reset = fault
                if times > 0 and (not method or method == request.method) and needle in path:
                    fault[3] -= 1
                    if reset:
                        raise httpx2.ReadError("connection reset by peer", request=request)
                    headers = {"Retry-After": retry_after} if retry_after else {}
                    return self._json(code, status(code, "TooManyRequests" if code == 429 else "InternalError",
                                                   "injected failure"), headers)
        try:
            return self._route(request.method, path, params, request.headers, body)
        except ApiFailure as e:
            return self._json(e.doc["code"], e.doc)

    @staticmethod
    def _json(code: int, doc: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return httpx2.Response(code, headers={"Content-Type": "application/json", **(headers or {})},
                               content=json.dumps(doc).encode())

    def _parse(self, path: str) -> tuple[tuple[str, str], str, str, str]:
        """-> (resource, namespace, name, subresource)"""
        segs = [s for s in path.split("/") if s]
        if segs[:2] == ["api", "v1"]:
            api_version, rest = "v1", segs[2:]
        elif segs[:1] == ["apis"] and len(segs) >= 3:
            api_version, rest = f"{segs[1]}/{segs[2]}", segs[3:]
        else:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        res = (api_version, rest[0])
        if res not in self.served:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        return res, ns, name, sub

    def _route(self, method: str, path: str, params: dict[str, str], headers: Any, body: bytes) -> httpx2.Response:
        if path == "/version":
            return self._json(200, self.version)
        res, ns, name, sub = self._parse(path)
        kind, namespaced = self.served[res]
        if not namespaced:
            ns = ""
        if res == ("authorization.k8s.io/v1", "selfsubjectaccessreviews") and method == "POST":
            return self._access_review(json.loads(body))
        if sub == "log" and method == "GET":
            return self._logs(ns, name, params)
        if sub:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        with self.lock:
            if method == "GET" and name:
                obj = self.store.get(res, {}).get((ns, name))
                if obj is None:
                    raise ApiFailure(404, "NotFound", f'{res[1]} "{name}" not found')
                return self._json(200, obj)
            if method == "GET":
                if params.get("watch") in ("true", "1"):
                    return self._watch(res, kind, ns, params)
                return self._json(200, self._list(res, kind, ns, params))
            if method == "POST" and not name:
                return self._create(res, kind, ns, json.loads(body), params)
            if method == "PATCH" and name:
                return self._apply(res, kind, ns, name, params, headers, body)
            if method == "DELETE" and name:
                if (ns, name) not in self.store.get(res, {}):
                    raise ApiFailure(404, "NotFound", f'{res[1]} "{name}" not found')
                if params.get("dryRun") == "All":
                    return self._json(200, self.store[res][(ns, name)])
                gone = self._delete(res, ns, name, params.get("propagationPolicy", "Background"))
                return self._json(200, gone)
        raise ApiFailure(405, "MethodNotAllowed", f"{method} not supported on {path}")

    def _matching(self, res: tuple[str, str], kind: str, ns: str, params: dict[str, str]) -> Callable[..., bool]:
        lsel = parse_label_selector(params.get("labelSelector", ""))
        fsel = parse_field_selector(params.get("fieldSelector", ""), kind)

        def match(obj: dict[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            return (not ns or meta.get("namespace") == ns) and lsel(meta.get("labels") or {}) and fsel(obj)
        return match

    def _list(self, res: tuple[str, str], kind: str, ns: str, params: dict[str, str]) -> dict[str, Any]:
        query = json.dumps([res, ns, params.get("labelSelector", ""), params.get("fieldSelector", "")])
        token = params.get("continue", "")
        if token:
            rv, start, items = self._snapshot(token, query)
        else:
            match = self._matching(res, kind, ns, params)
            rv, start = self.rv, 0
            items = [o for (_, _), o in sorted(self.store.get(res, {}).items()) if match(o)]
        limit = int(params.get("limit") or 0)
        if self.slow_list_over and not limit and len(items) > self.slow_list_over:
            # what the API server's request timeout (60 s) answers when one unchunked LIST is too large
            raise ApiFailure(504, "Timeout", "the server was unable to return a response in the time allotted, "
                                             f"but may still be processing the request (get {res[1]})")
        if self.max_page and limit > self.max_page:  # "the server may return fewer items than limit"
            limit = self.max_page
        end = start + limit if limit > 0 else len(items)
        page = [copy.deepcopy(o) for o in items[start:end]]
        for item in page:  # list items carry no apiVersion/kind (like the real server's typed lists)
            item.pop("apiVersion", None)
            item.pop("kind", None)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if end < len(items):
            if token:
                snap_id = int(self._token(token)["id"])
            else:  # the rest is read from this snapshot: one consistent list (stored objects are
                # replaced by put, never changed in place, so holding them is a snapshot)
                snap_id = self._bump_snapshot()
                self.snapshots[snap_id] = (rv, query, items)
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": rv, "id": snap_id, "start": end}).encode()).decode()
            if not params.get("labelSelector") and not params.get("fieldSelector"):
                meta["remainingItemCount"] = len(items) - end
        return {"apiVersion": res[0], "kind": f"{kind}List", "metadata": meta, "items": page}

    def _bump_snapshot(self) -> int:
        self.snapshot_seq += 1
        return self.snapshot_seq

    @staticmethod
    def _token(token: str) -> dict[str, Any]:
        try:
            doc = json.loads(base64.urlsafe_b64decode(token.encode()))
            assert isinstance(doc, dict) and {"rv", "id", "start"} <= doc.keys()
            return doc
        except (ValueError, AssertionError):
            raise ApiFailure(400, "BadRequest", "continue key is not valid: illegal base64 data") from None

    def _snapshot(self, token: str, query: str) -> tuple[int, int, list[dict[str, Any]]]:
        doc = self._token(token)
        snap = self.snapshots.get(int(doc["id"]))
        if int(doc["rv"]) <= self.compacted or snap is None:
            raise ApiFailure(410, "Expired", "The provided continue parameter is too old to display a consistent "
                                             "list result. You can start a new list without the continue parameter.")
        rv, snap_query, items = snap
        if snap_query != query:
            raise ApiFailure(400, "BadRequest", "the continue token was issued for a different list: selectors "
                                                "and the collection must not change between chunks")
        return rv, int(doc["start"]), items

    def _create(self, res: tuple[str, str], kind: str, ns: str, obj: dict[str, Any],
                params: dict[str, str]) -> httpx2.Response:
        name = (obj.get("metadata") or {}).get("name", "")
        if (ns, name) in self.store.get(res, {}):
            raise ApiFailure(409, "AlreadyExists", f'{res[1]} "{name}" already exists')
        if ns:
            obj.setdefault("metadata", {})["namespace"] = ns
        if params.get("dryRun") == "All":
            return self._json(201, obj)
        return self._json(201, self.put(obj))

    def _apply(self, res: tuple[str, str], kind: str, ns: str, name: str, params: dict[str, str], headers: Any,
               body: bytes) -> httpx2.Response:
        ctype = headers.get("content-type", "")
        if ctype != "application/apply-patch+yaml":
            raise ApiFailure(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {ctype}")
        manager = params.get("fieldManager", "")
        if not manager:
            raise ApiFailure(400, "BadRequest", "PATCH, fieldManager is required for apply requests")
        applied = yaml.safe_load(body)
        meta = applied.get("metadata") or {}
        if meta.get("name") != name:
            raise ApiFailure(400, "BadRequest", "the name of the object does not match the name on the URL")
        if (applied.get("apiVersion"), applied.get("kind")) != (res[0], kind):
            raise ApiFailure(400, "BadRequest", f"apiVersion/kind {applied.get('apiVersion')}/{applied.get('kind')} "
                                                f"does not match {res[0]}/{kind}")
        if ns and meta.get("namespace", ns) != ns:
            raise ApiFailure(400, "BadRequest", "the namespace of the object does not match the namespace on the URL")
        key = (ns, name)
        existing = self.store.get(res, {}).get(key)
        owners = copy.deepcopy(self.owners.get((res, key), {}))
        new_leaves = _leaves(applied)
        if existing is None:
            result = copy.deepcopy(applied)
            code = 201
        else:
            result = copy.deepcopy(existing)
            old_leaves = _leaves(existing)
            conflicts = [".".join(p) for p, v in new_leaves.items()
                         if p in old_leaves and old_leaves[p] != v
                         and any(p in paths for m, paths in owners.items() if m != manager)]
            if conflicts and params.get("force") != "true":
                raise ApiFailure(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s): conflicts with "
                                                  f"another manager on {', '.join(sorted(conflicts))}")
            for p in owners.get(manager, set()) - set(new_leaves):
                if not any(p in paths for m, paths in owners.items() if m != manager):
                    _unset(result, p)
            for p, v in new_leaves.items():
                _set(result, p, v)
            code = 200
        for m in list(owners):
            if m != manager and params.get("force") == "true":
                owners[m] -= set(new_leaves)
        owners[manager] = set(new_leaves)
        if ns:
            result["metadata"]["namespace"] = ns
        if existing is not None and _leaves(result) == _leaves(existing):
            return self._json(200, existing)  # no-op: resourceVersion unchanged
        if params.get("dryRun") == "All":
            return self._json(code, result)
        if existing is not None:
            spec_changed = {p: v for p, v in _leaves(result).items() if p[0] != "metadata"} != {
                p: v for p, v in _leaves(existing).items() if p[0] != "metadata"}
            result["metadata"]["generation"] = existing["metadata"].get("generation", 1) + (1 if spec_changed else 0)
        else:
            result["metadata"]["generation"] = 1
        self.owners[(res, key)] = owners
        stored = self.put(result)
        return self._json(code, stored)

    def _delete(self, res: tuple[str, str], ns: str, name: str, propagation: str) -> dict[str, Any]:
        obj = self.store[res].pop((ns, name))
        self.owners.pop((res, (ns, name)), None)
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self._bump())
        self._record(res, "DELETED", gone, obj)
        if propagation != "Orphan":
            uid = obj["metadata"]["uid"]
            for other_res, objs in list(self.store.items()):
                for (ons, oname), other in list(objs.items()):
                    refs = (other.get("metadata") or {}).get("ownerReferences") or []
                    if any(r.get("uid") == uid for r in refs):
                        self._delete(other_res, ons, oname, propagation)
        return gone

    def _watch(self, res: tuple[str, str], kind: str, ns: str, params: dict[str, str]) -> httpx2.Response:
        match = self._matching(res, kind, ns, params)
        rv_param = params.get("resourceVersion", "")
        if rv_param not in ("", "0") and int(rv_param) < self.compacted:
            expired = status(410, "Expired", f"too old resource version: {rv_param} ({self.compacted})")
            if self.gone_as_http:
                raise ApiFailure(410, "Expired", expired["message"])
            line = json.dumps({"type": "ERROR", "object": expired}).encode() + b"\n"
            return httpx2.Response(200, headers={"Content-Type": "application/json"},
                                   stream=_Stream(lambda _: iter([line])))
        initial: list[bytes] = []
        if rv_param in ("", "0"):
            initial = [json.dumps({"type": "ADDED", "object": o}).encode() + b"\n"
                       for o in self.store.get(res, {}).values() if match(o)]
            start = self.rv
        else:
            start = int(rv_param)
        timeout = min(float(params.get("timeoutSeconds") or 1800), self.max_watch_seconds)
        gen = self.drop_gen
        self.watching[res[1]] = self.watching.get(res[1], 0) + 1
        self.cond.notify_all()
        return httpx2.Response(200, headers={"Content-Type": "application/json"},
                               stream=_Stream(lambda closed: self._watch_chunks(
                                   res, match, start, timeout, gen, initial,
                                   params.get("allowWatchBookmarks") == "true", closed)))

    def _watch_chunks(self, res: tuple[str, str], match: Callable[..., bool], pos: int, timeout: float, gen: int,
                      initial: list[bytes], bookmarks: bool, closed: threading.Event) -> Iterator[bytes]:
        yield from initial
        deadline = time.monotonic() + timeout
        try:
            while True:
                with self.cond:
                    while True:
                        if self.closed or closed.is_set() or self.drop_gen != gen or time.monotonic() >= deadline:
                            return
                        batch = [c for c in self.history if c.rv > pos and c.res == res]
                        if batch:
                            break
                        if bookmarks and self.bookmarks and self.rv > pos:
                            pos = self.rv
                            yield json.dumps({"type": "BOOKMARK", "object": {
                                "kind": self.served[res][0], "apiVersion": res[0],
                                "metadata": {"resourceVersion": str(pos)}}}).encode() + b"\n"
                        self.cond.wait(0.05)
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
                        yield json.dumps({"type": etype, "object": change.obj}).encode() + b"\n"
        finally:
            with self.lock:
                self.watching[res[1]] -= 1

    def _access_review(self, review: dict[str, Any]) -> httpx2.Response:
        attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
        key = (attrs.get("verb", ""), attrs.get("resource", ""), attrs.get("subresource", ""))
        allowed = key not in self.denied and (key[0], key[1], "") not in self.denied
        review = {**review, "status": {"allowed": allowed}}
        return self._json(201, review)

    def _logs(self, ns: str, name: str, params: dict[str, str]) -> httpx2.Response:
        with self.lock:
            pod = self.store.get(("v1", "pods"), {}).get((ns, name))
            if pod is None:
                raise ApiFailure(404, "NotFound", f'pods "{name}" not found')
            spec = pod.get("spec") or {}
            names = [c["name"] for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])]
            container = params.get("container", "")
            if not container:
                if len(spec.get("containers") or []) != 1:
                    raise ApiFailure(400, "BadRequest", f"a container name must be specified for pod {name}, "
                                                        f"choose one of: [{' '.join(names)}]")
                container = spec["containers"][0]["name"]
            if container not in names:
                raise ApiFailure(400, "BadRequest", f"container {container} is not valid for pod {name}")
            previous = params.get("previous") == "true"
            key = (ns, name, container, previous)
            if previous and key not in self.logs:
                raise ApiFailure(400, "BadRequest",
                                 f'previous terminated container "{container}" in pod "{name}" not found')
            lines = list(self.logs.get(key, []))
        since = params.get("sinceSeconds")
        if since:
            lines = [(t, s) for t, s in lines if t >= self.now - int(since)]
        tail = params.get("tailLines")
        if tail:
            lines = lines[-int(tail):] if int(tail) else []
        text = [s + "\n" for _, s in lines]
        if params.get("follow") != "true" or previous:
            return httpx2.Response(200, headers={"Content-Type": "text/plain"}, content="".join(text).encode())

        def chunks(closed: threading.Event) -> Iterator[bytes]:
            for line in text:
                yield line.encode()
            sent = len(self.logs.get(key, []))
            while True:
                with self.cond:
                    while True:
                        have = self.logs.get(key, [])
                        if len(have) > sent:
                            fresh = have[sent:]
                            sent = len(have)
                            break
                        gone = (ns, name) not in self.store.get(("v1", "pods"), {})
                        if self.closed or closed.is_set() or gone or (ns, name, container) in self.logs_done:
                            return
                        self.cond.wait(0.05)
                for _, line in fresh:
                    yield (line + "\n").encode()

        return httpx2.Response(200, headers={"Content-Type": "text/plain"}, stream=_Stream(chunks))
