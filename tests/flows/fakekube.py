"""A stateful fake Kubernetes API server, in process, as an httpx2 transport (and, with
``fake_http.serve``, on 127.0.0.1 for the real kubectl).

It implements, for what it serves, the semantics the launcher's conclusions depend on, as
the Kubernetes API documents them; each is asserted in ``test_fakekube*.py``:

* resources: the built-ins of a 1.31 server (``fake_discovery.BUILTINS``) and CRDs, which
  are served from the real CRD objects (applying a ``CustomResourceDefinition`` serves it,
  deleting it stops serving); discovery documents and ``Table`` output for kubectl;
* namespaces must exist (404 ``namespaces "x" not found``) and not be terminating (403);
* CRUD with the real Status bodies: 404 NotFound, 409 AlreadyExists / Conflict on a stale
  resourceVersion, 403 Forbidden from RBAC-like deny rules (``deny``) worded as RBAC does;
* deletion: finalizers and ``deletionTimestamp``, ``propagationPolicy``
  Foreground/Background/Orphan through ownerReferences, graceful pod termination (pods
  bound to a node stay Terminating until the kubelet is done: ``kubelet_terminates``);
* server-side apply with field ownership (``fake_ssa``): list merging by the schemas' list
  types, duplicate and missing keys, undeclared fields failing the apply (HTTP 500, as
  real servers answer), ``managedFields``, conflicts with other managers, ``force``;
* create/update/patch prune undeclared fields (``fieldValidation`` Ignore/Warn/Strict), ``Warning`` headers;
* ``/status``, ``/scale`` (the main resource ignores ``status``), ``generation``, ``dryRun=All``;
* LIST with label and field selectors and ``limit``/``continue`` chunking (``fake_lists``),
  WATCH with resourceVersion/410/bookmarks, pod logs (``fake_streams``);
  SelfSubjectAccessReview from the same deny rules; ``/version``.

No controller runs in it. Test helpers (``put``, ``set_status``, ``add_event``, ``add_log``,
``fail``, ``compact``, ``drop_watches``, ``load``...; ``states.py`` builds on them) write the state
a controller would have written, and play a flaky network; what the operators do over time is
tested on the real control plane (tests/e2e).
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

import fake_discovery as disc
import fake_ssa as ssa
import fake_streams as streams
import httpx2
import yaml
from fake_api import ApiFailure, now_stamp, qualified, spec_of, status
from fake_gc import DeletionMixin
from fake_lists import list_items
from fake_selectors import parse_field_selector, parse_label_selector
from fake_writes import WritesMixin

from support.paths import PACKAGE

HERE = Path(__file__).resolve().parent
BUNDLED = PACKAGE / "validate" / "crds"
# CRD files per KubeRay version the fake can serve, plus the MPI Operator's.
KUBERAY_CRDS = {
    "1.7.0": [BUNDLED / "kuberay-v1.7.0" / f"ray.io_{p}.yaml" for p in ("rayjobs", "rayclusters")],
    "1.4.2": [HERE / "crds" / "kuberay-v1.4.2" / f"ray.io_{p}.yaml" for p in ("rayjobs", "rayclusters")],
}
MPI_CRD = HERE / "crds" / "mpi-operator" / "kubeflow.org_mpijobs.yaml"


def bundled_crds(prefix: str) -> list[Path]:
    """The CRD files dockyard-k8s bundles for ``prefix`` (``kueue``, ``keda``...)."""
    return sorted(p for d in BUNDLED.glob(f"{prefix}-v*") for p in d.glob("*.yaml"))
# Requests kubectl and the launcher make -> the RBAC verb.
VERB = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@functools.cache
def crd_doc(path: str) -> dict[str, Any]:
    """A CRD file, parsed once per process (shared: never mutate it)."""
    with open(path, encoding="utf-8") as f:
        return dict(yaml.load(f, Loader=yaml.CSafeLoader))


# How long a test waits for the CLI (in another thread) to reach a state before it gives up.
# It only ends a broken test: on a loaded machine (2 cores shared by several test runs) the
# CLI may take many seconds to load, render and validate before its first request.
SAFETY_TIMEOUT = 300.0


class Recorded(NamedTuple):
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes


class FakeKube(WritesMixin, DeletionMixin, httpx2.BaseTransport):
    def __init__(self, *, crds: bool = True, kuberay: str = "1.7.0", namespaces: tuple[str, ...] = ("default",),
                 user: str = "alice") -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.resources: dict[tuple[str, str], disc.Resource] = {r.key: r for r in disc.BUILTINS}
        self.rv = 1000
        self.compacted = 0
        self.store: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self.managers: dict[tuple[Any, ...], ssa.Managers] = {}
        self.manager_times: dict[tuple[Any, ...], dict[ssa.Manager, str]] = {}
        self.history = streams.History()
        self.logs: dict[tuple[str, str, str, bool], list[tuple[float, str]]] = {}
        self.logs_done: set[tuple[str, str, str]] = set()
        self.now = 10_000.0  # the fake's clock for sinceSeconds
        self.requests: list[Recorded] = []
        self.faults: list[list[Any]] = []
        self.denied: list[tuple[str, str, str, str | None]] = []
        self.user = user
        self.version = {"major": "1", "minor": "31", "gitVersion": "v1.31.2", "platform": "linux/amd64"}
        self.gone_as_http = False
        self.max_watch_seconds = 30.0
        self.bookmarks = False
        self.kubelet_terminates = True  # a bound pod's deletion completes at once (the kubelet is quick)
        self.drop_gen = 0
        self.closed = False
        self.watching: dict[str, int] = {}
        self.max_page = 0  # > 0: a chunk of a LIST with a limit holds at most this many items
        self.snapshots: dict[int, tuple[int, str, list[dict[str, Any]]]] = {}  # LIST chunking (fake_lists)
        self.snapshot_seq = 0
        self.slow_list_over = 0  # > 0: an unchunked LIST of more items times out (504), as a large one does
        self.warnings: list[tuple[str, str]] = []  # (kind, text): a Warning for every write of that kind
        self.errors: list[str] = []  # the fake's own failures (tests assert there are none)
        self._gc_needed = False
        self._uids: set[str] = set()
        self._seq = 0
        for ns in namespaces:
            self.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "spec": {
                "finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        if crds:
            for path in [*KUBERAY_CRDS[kuberay], MPI_CRD]:
                self.install_crd(crd_doc(str(path)))

    # --- registry --------------------------------------------------------------------------
    def resource(self, api_version: str, kind: str) -> disc.Resource:
        for r in self.resources.values():
            if r.api_version == api_version and r.kind == kind:
                return r
        raise KeyError(f"{api_version} {kind} not served")

    def install_crds(self, paths: Iterable[Path]) -> None:
        for path in paths:
            self.install_crd(crd_doc(str(path)))

    def install_crd(self, crd: dict[str, Any]) -> None:
        """Create a CustomResourceDefinition (served at once: Established) — as applying it would."""
        with self.lock:
            doc = {**crd, "metadata": {**crd["metadata"]}, "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}],
                "acceptedNames": crd["spec"]["names"], "storedVersions": [
                    v["name"] for v in crd["spec"]["versions"] if v.get("storage")]}}
            self._write(self.resources[("apiextensions.k8s.io/v1", "customresourcedefinitions")], doc, copy_in=False)

    def _serve_crd(self, crd: dict[str, Any] | None, name: str) -> None:
        for key in [k for k, r in self.resources.items() if r.crd == name]:
            del self.resources[key]
            if crd is None:  # the custom resources go with their definition
                self.store.pop(key, None)
        for r in disc.crd_resources(crd) if crd else []:
            self.resources[r.key] = r

    # --- storing ---------------------------------------------------------------------------
    def _bump(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, res: tuple[str, str], etype: str, obj: dict[str, Any], prev: dict[str, Any] | None) -> None:
        change = streams.Change(int(obj["metadata"]["resourceVersion"]), res, etype, obj, prev)
        self.history.add(change)
        if res == ("apiextensions.k8s.io/v1", "customresourcedefinitions"):
            self._serve_crd(None if etype == "DELETED" else obj, obj["metadata"]["name"])
        self.cond.notify_all()

    def _write(self, res: disc.Resource, obj: dict[str, Any], *, copy_in: bool = True) -> dict[str, Any]:
        """Store ``obj`` (a new dict, never mutated afterwards) as the next version."""
        obj = copy.deepcopy(obj) if copy_in else obj
        meta = obj.setdefault("metadata", {})
        ns = str(meta.get("namespace", "default")) if res.namespaced else ""
        if res.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        key = (ns, str(meta["name"]))
        prev = self.store.setdefault(res.key, {}).get(key)
        meta.setdefault("uid", prev["metadata"]["uid"] if prev else str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", prev["metadata"].get("creationTimestamp") if prev else now_stamp())
        if "generation" not in meta:
            old_gen = int((prev or {}).get("metadata", {}).get("generation") or 0)
            meta["generation"] = 1 if prev is None else old_gen + (spec_of(obj) != spec_of(prev))
        mkey = (res.key, key)
        if self.managers.get(mkey):
            meta["managedFields"] = ssa.managed_fields(self.managers[mkey], res.api_version,
                                                       self.manager_times.get(mkey, {}))
        meta["resourceVersion"] = str(self._bump())
        if meta.get("deletionTimestamp") or any(r.get("uid") not in self._uids
                                                for r in meta.get("ownerReferences") or []):
            self._gc_needed = True
        self._uids.add(str(meta["uid"]))
        self.store[res.key][key] = obj
        self._record(res.key, "MODIFIED" if prev else "ADDED", obj, prev)
        return obj

    def _own(self, res: disc.Resource, key: tuple[str, str], managers: ssa.Managers,
             touched: Iterable[ssa.Manager]) -> None:
        mkey = (res.key, key)
        self.managers[mkey] = managers
        times = self.manager_times.setdefault(mkey, {})
        for m in touched:
            times[m] = now_stamp()

    # --- test helpers: what controllers and the kubelet do --------------------------------
    def put(self, obj: dict[str, Any], *, manager: str | None = None) -> dict[str, Any]:
        """Create or replace an object as a controller would (no admission, any namespace);
        ``manager`` records the write in managedFields (operation Update)."""
        with self.lock:
            res = self.resource(obj["apiVersion"], obj["kind"])
            if manager:
                meta = obj.get("metadata") or {}
                key = (str(meta.get("namespace", "default")) if res.namespaced else "", str(meta["name"]))
                old = self.store.get(res.key, {}).get(key)
                me = (manager, "Update", "")
                node = res.schema() or disc.ANY_NODE
                self._own(res, key, ssa.update(old, obj, me, node, self.managers.get((res.key, key), {}),
                                               status=True), [me])
            stored = self._write(res, obj)
            self._settle()
            return copy.deepcopy(stored)

    def load(self, objects: Iterable[dict[str, Any]]) -> int:
        """Seed many objects at once, as if stored before any watch began: no history, no
        controllers, no garbage collection (big namespaces for benchmarks). Returns how many."""
        count = 0
        with self.lock:
            for obj in objects:
                res = self.resource(obj["apiVersion"], obj["kind"])
                meta = obj.setdefault("metadata", {})
                ns = str(meta.setdefault("namespace", "default")) if res.namespaced else ""
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", now_stamp())
                meta["resourceVersion"] = str(self._bump())
                self._uids.add(meta["uid"])
                self.store.setdefault(res.key, {})[(ns, str(meta["name"]))] = obj
                count += 1
        return count

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            res = self.resource(api_version, kind)
            obj = self.store.get(res.key, {}).get((namespace if res.namespaced else "", name))
            return copy.deepcopy(obj) if obj else None

    def all(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.store.get(self.resource(api_version, kind).key, {}).values()]

    def set_status(self, api_version: str, kind: str, namespace: str, name: str, status_: dict[str, Any], *,
                   manager: str = "") -> dict[str, Any]:
        """What an operator does through the status subresource (generation unchanged)."""
        with self.lock:
            obj = self.get(api_version, kind, namespace, name)
            assert obj is not None, f"{kind} {namespace}/{name} missing"
            obj["status"] = status_
            return self.put(obj, manager=manager or None)

    def remove(self, api_version: str, kind: str, namespace: str, name: str, propagation: str = "Background") -> None:
        """DELETE as a client would (finalizers and owners are honoured)."""
        with self.lock:
            res = self.resource(api_version, kind)
            self._delete(res, namespace if res.namespaced else "", name, {"propagationPolicy": propagation})

    def remove_finalizer(self, api_version: str, kind: str, namespace: str, name: str, finalizer: str) -> None:
        """What the controller owning ``finalizer`` does when its clean-up is done."""
        with self.lock:
            obj = self.get(api_version, kind, namespace, name)
            if obj is None:
                return
            obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
            self.put(obj)

    def finish_pod(self, namespace: str, name: str) -> None:
        """The kubelet confirms a terminating pod is gone."""
        with self.lock:
            pod = self.store.get(("v1", "pods"), {}).get((namespace, name))
            if pod is not None and not pod["metadata"].get("finalizers"):
                self._remove(self.resources[("v1", "pods")], namespace, name)
                self._settle()

    def add_event(self, namespace: str, involved: dict[str, Any], reason: str, message: str,
                  etype: str = "Warning") -> dict[str, Any]:
        meta = involved.get("metadata") or {}
        name = f"{meta.get('name')}.{uuid.uuid4().hex[:8]}"
        self._seq += 1
        return self.put({"apiVersion": "v1", "kind": "Event",
                         "metadata": {"name": name, "namespace": namespace},
                         "involvedObject": {"kind": involved.get("kind"), "name": meta.get("name"),
                                            "namespace": namespace, "uid": meta.get("uid"),
                                            "apiVersion": involved.get("apiVersion")},
                         "reason": reason, "message": message, "type": etype, "count": 1,
                         "source": {"component": "fake"},
                         "lastTimestamp": f"2026-01-01T{self._seq // 3600 % 24:02d}:{self._seq // 60 % 60:02d}:"
                                          f"{self._seq % 60:02d}Z"})

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

    def fail(self, *, status_code: int = 500, method: str = "", path_contains: str = "", times: int = 1,
             retry_after: str | None = None, reset: bool = False) -> None:
        """The next ``times`` matching requests fail with ``status_code`` (or a connection reset)."""
        with self.lock:
            self.faults.append([method, path_contains, status_code, times, retry_after, reset])

    def deny(self, verb: str, resource: str, subresource: str = "", namespace: str | None = None) -> None:
        """An RBAC rule the user lacks: requests get 403 and SelfSubjectAccessReview says no.
        ``verb`` or ``resource`` may be ``*``."""
        self.denied.append((verb, resource, subresource, namespace))

    def is_denied(self, verb: str, resource: str, subresource: str, namespace: str) -> bool:
        return any(v in (verb, "*") and r in (resource, "*") and s in (subresource, "") and n in (None, namespace)
                   for v, r, s, n in self.denied)

    def warn_on(self, kind: str, text: str) -> None:
        """Every write of ``kind`` answers with this Warning header (an admission webhook's warning)."""
        self.warnings.append((kind, text))

    def compact(self) -> None:
        """Forget history (etcd compaction): watches from older versions get 410 Gone."""
        with self.lock:
            self.compacted = self.rv
            self.history.clear()
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

    def wait_for(self, predicate: Callable[[], Any], timeout: float = SAFETY_TIMEOUT) -> Any:
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

    def wait_watching(self, plural: str, count: int = 1, timeout: float = SAFETY_TIMEOUT) -> None:
        self.wait_for(lambda: self.watching.get(plural, 0) >= count, timeout)

    # --- HTTP ----------------------------------------------------------------------------------
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        query = request.url.query
        params = dict(parse_qsl(query.decode() if isinstance(query, bytes) else str(query), keep_blank_values=True))
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
        warnings: list[str] = []
        try:
            with self.lock:
                resp = self._route(request.method, path, params, request.headers, body, warnings)
        except ApiFailure as e:
            resp = self._json(e.doc["code"], e.doc)
        except Exception as e:  # a bug of the fake: answer 500 and keep it for the test to fail on
            import traceback

            self.errors.append(f"{request.method} {path} {dict(request.headers)} {body[:200]!r}: "
                               f"{traceback.format_exc()}")
            resp = self._json(500, status(500, "InternalError", f"fake API server bug: {e!r}"))
        if warnings:
            resp.headers["Warning"] = ", ".join(f"299 - {json.dumps(t)}" for t in warnings)
        return resp

    @staticmethod
    def _json(code: int, doc: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return httpx2.Response(code, headers={"Content-Type": "application/json", **(headers or {})},
                               content=json.dumps(doc).encode())

    def _parse(self, path: str) -> tuple[disc.Resource, str, str, str]:
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
        res = self.resources.get((api_version, rest[0])) if rest else None
        if res is None:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in res.subresources:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        return res, (ns if res.namespaced else ""), name, sub

    def _discovery(self, path: str) -> httpx2.Response | None:
        segs = [s for s in path.split("/") if s]
        served = list(self.resources.values())
        if segs == ["api"]:
            return self._json(200, disc.api_versions())
        if segs == ["apis"]:
            return self._json(200, disc.group_list(served))
        if segs in (["openapi", "v2"], ["swagger-2.0.0.pb-v1"]):
            return httpx2.Response(200, headers={"Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+"
                                                                 "protobuf"}, content=disc.openapi_v2_protobuf(served))
        if segs == ["openapi", "v3"]:
            return self._json(200, disc.openapi_root(served))
        if segs[:2] == ["openapi", "v3"] and len(segs) in (4, 5):
            doc = disc.openapi_gv(served, "/".join(segs[3:]))
            if doc is None:
                raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
            return self._json(200, doc)
        if (segs[:1] == ["api"] and len(segs) == 2) or (segs[:1] == ["apis"] and len(segs) == 3):
            doc = disc.resource_list(served, "/".join(segs[1:]))
            if doc is None:
                raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
            return self._json(200, doc)
        return None

    def _forbid(self, verb: str, res: disc.Resource, ns: str, name: str, sub: str) -> None:
        if not self.is_denied(verb, res.plural, sub, ns):
            return
        what = f"{res.plural}/{sub}" if sub else res.plural
        head = f'{qualified(res)} "{name}" is forbidden' if name else f"{qualified(res)} is forbidden"
        where = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        details: dict[str, Any] = {"group": res.group, "kind": res.plural}
        if name:
            details = {"name": name, **details}
        raise ApiFailure(403, "Forbidden", f'{head}: User "{self.user}" cannot {verb} resource "{what}" in API '
                                           f'group "{res.group}" {where}', **details)

    def _route(self, method: str, path: str, params: dict[str, str], headers: Any, body: bytes,
               warnings: list[str]) -> httpx2.Response:
        if path == "/version":
            return self._json(200, self.version)
        found = self._discovery(path)
        if found is not None:
            return found
        res, ns, name, sub = self._parse(path)
        watch = params.get("watch") in ("true", "1")
        verb = ("watch" if watch else "list") if method == "GET" and not name else VERB.get(method, "")
        if method == "DELETE" and not name:
            verb = "deletecollection"
        self._forbid(verb, res, ns, name, sub)
        if res.deprecation:
            warnings.append(res.deprecation)
        if res.plural == "selfsubjectaccessreviews" and method == "POST":
            protobuf = "protobuf" in str(headers.get("content-type", ""))
            return self._access_review(disc.access_review_from_protobuf(body) if protobuf else json.loads(body))
        if sub == "log" and method == "GET":
            return streams.logs(self, ns, name, params)
        accept = str(headers.get("accept", ""))
        if method == "GET" and name:
            obj = self._existing(res, ns, name)
            if sub == "scale":
                return self._json(200, self._scale_of(res, obj))
            if disc.wants_table(accept):
                return self._json(200, disc.table(res, [obj], time.time(), obj["metadata"]["resourceVersion"]))
            return self._json(200, obj)
        if method == "GET":
            match = self._matching(res, ns, params)
            if watch:
                return streams.watch(self, res.key, match, params)
            items, list_meta = list_items(self, res, ns, params, match)
            if disc.wants_table(accept):
                doc = disc.table(res, items, time.time(), list_meta["resourceVersion"])
                return self._json(200, {**doc, "metadata": list_meta})
            return self._json(200, {"apiVersion": res.api_version, "kind": f"{res.kind}List", "metadata": list_meta,
                                    "items": [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
                                              for o in items]})
        if res.plural == "selfsubjectaccessreviews":
            raise ApiFailure(405, "MethodNotAllowed", f"{method} not supported on {path}")
        if method == "POST" and not name:
            return self._create(res, ns, self._decode(body), params, headers, warnings)
        if method == "PUT" and name:
            return self._update(res, ns, name, sub, self._decode(body), params, headers, warnings)
        if method == "PATCH" and name:
            ctype = str(headers.get("content-type", "")).split(";")[0]
            if ctype == "application/apply-patch+yaml":
                return self._apply(res, ns, name, sub, params, body, warnings)
            if ctype not in ssa.PATCHERS:
                raise ApiFailure(415, "UnsupportedMediaType",
                                 f"the body of the request was in an unknown format - accepted media types "
                                 f"include: {', '.join([*ssa.PATCHERS, 'application/apply-patch+yaml'])}")
            return self._patch(res, ns, name, sub, ctype, self._decode(body), params, headers, warnings)
        if method == "DELETE" and name:
            return self._delete(res, ns, name, params, self._decode(body) if body else {})
        if method == "DELETE":
            match = self._matching(res, ns, params)
            for key, obj in sorted(self.store.get(res.key, {}).items()):
                if match(obj):
                    self._delete(res, key[0], key[1], params)
            return self._json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}})
        raise ApiFailure(405, "MethodNotAllowed", f"{method} not supported on {path}")

    @staticmethod
    def _decode(body: bytes) -> Any:
        try:
            return json.loads(body) if body else {}
        except ValueError:
            return yaml.safe_load(body)

    def _existing(self, res: disc.Resource, ns: str, name: str) -> dict[str, Any]:
        obj = self.store.get(res.key, {}).get((ns, name))
        if obj is None:
            raise ApiFailure(404, "NotFound", f'{qualified(res)} "{name}" not found', name=name, group=res.group,
                             kind=res.plural)
        return obj

    def _matching(self, res: disc.Resource, ns: str, params: dict[str, str]) -> Callable[[dict[str, Any]], bool]:
        lsel = parse_label_selector(params.get("labelSelector", ""))
        fsel = parse_field_selector(params.get("fieldSelector", ""), res.kind)

        def match(obj: dict[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            return (not ns or meta.get("namespace") == ns) and lsel(meta.get("labels") or {}) and fsel(obj)
        return match

    def _access_review(self, review: dict[str, Any]) -> httpx2.Response:
        attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
        allowed = not self.is_denied(attrs.get("verb", ""), attrs.get("resource", ""), attrs.get("subresource", ""),
                                     attrs.get("namespace", ""))
        out = {**review, "status": {"allowed": allowed}}
        if not allowed:
            out["status"]["reason"] = ""
        return self._json(201, out)
