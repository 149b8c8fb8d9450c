"""What the fake API server serves and how clients discover it.

:class:`Resource` is one served REST collection (built-in or from a CRD). Discovery follows
the legacy documents every kubectl version understands (``/api``, ``/apis``,
``/api/v1``, ``/apis/GROUP/VERSION``; a request for aggregated discovery gets the legacy
form, and clients fall back), and ``kubectl get`` gets a ``meta.k8s.io/v1 Table`` when it
asks for one (``Accept: ...;as=Table``), with the columns the real server prints for the
kinds the launcher uses (CRDs: their ``additionalPrinterColumns``).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable
from typing import Any

from fake_schema import ANY, Node, builtin_root, crd_root

ANY_NODE = ANY  # the schema of a kind served without one

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclasses.dataclass
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset({"status"})
    verbs: tuple[str, ...] = VERBS
    schema_of: Callable[[], Node | None] | None = None  # lazy: CRD schemas are large
    deprecation: str = ""  # the Warning a request to a deprecated version gets
    columns: tuple[tuple[str, str, str], ...] = ()  # (name, type, JSONPath) for Table output
    crd: str = ""  # the CustomResourceDefinition that serves it
    _schema: Node | None = dataclasses.field(default=None, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        return (self.api_version, self.plural)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def schema(self) -> Node | None:
        if self._schema is None and self.schema_of is not None:
            self._schema = self.schema_of()
        return self._schema

    def resource_docs(self) -> list[dict[str, Any]]:
        main = {"name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
                "kind": self.kind, "verbs": list(self.verbs)}
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        subs = []
        for sub in sorted(self.subresources):
            kind = {"scale": "Scale", "log": "Pod"}.get(sub, self.kind)
            doc = {"name": f"{self.plural}/{sub}", "singularName": "", "namespaced": self.namespaced, "kind": kind,
                   "verbs": ["get"] if sub == "log" else ["get", "patch", "update"]}
            if sub == "scale":
                doc |= {"group": "autoscaling", "version": "v1"}
            subs.append(doc)
        return [main, *subs]


def _b(group: str, version: str, plural: str, kind: str, namespaced: bool = True, short: tuple[str, ...] = (),
       subs: tuple[str, ...] = ("status",), all_: bool = False, verbs: tuple[str, ...] = VERBS) -> Resource:
    api_version = f"{group}/{version}" if group else version
    return Resource(group, version, plural, kind, namespaced, short, ("all",) if all_ else (), frozenset(subs),
                    verbs, lambda: builtin_root(api_version, kind))


# What a stock 1.31 API server serves, for the kinds the launcher and kubectl touch.
BUILTINS = [
    _b("", "v1", "pods", "Pod", short=("po",), subs=("status", "log"), all_=True),
    _b("", "v1", "events", "Event", short=("ev",), subs=()),
    _b("", "v1", "configmaps", "ConfigMap", short=("cm",), subs=()),
    _b("", "v1", "secrets", "Secret", subs=()),
    _b("", "v1", "services", "Service", short=("svc",), all_=True),
    _b("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",), subs=()),
    _b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",)),
    _b("", "v1", "resourcequotas", "ResourceQuota", short=("quota",)),
    _b("", "v1", "limitranges", "LimitRange", short=("limits",), subs=()),
    _b("", "v1", "namespaces", "Namespace", False, ("ns",)),
    _b("", "v1", "nodes", "Node", False, ("no",)),
    _b("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",)),
    _b("apps", "v1", "deployments", "Deployment", short=("deploy",), subs=("status", "scale"), all_=True),
    _b("apps", "v1", "statefulsets", "StatefulSet", short=("sts",), subs=("status", "scale"), all_=True),
    _b("apps", "v1", "daemonsets", "DaemonSet", short=("ds",), all_=True),
    _b("apps", "v1", "replicasets", "ReplicaSet", short=("rs",), subs=("status", "scale"), all_=True),
    _b("batch", "v1", "jobs", "Job", all_=True),
    _b("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=("netpol",), subs=()),
    _b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",)),
    _b("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",), ()),
    _b("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, (), ()),
    _b("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",), ()),
    _b("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       ("crd", "crds")),
    _b("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, (), (),
       verbs=("create",)),
]


def crd_resources(crd: dict[str, Any]) -> list[Resource]:
    """The served versions of a CustomResourceDefinition object."""
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served"):
            continue
        schema = ((v.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object",
                                                                      "x-kubernetes-preserve-unknown-fields": True}
        subs = frozenset(k for k in (v.get("subresources") or {}))
        columns = tuple((c["name"], c.get("type", "string"), c["jsonPath"]) for c in
                        v.get("additionalPrinterColumns") or [])
        warning = ""
        if v.get("deprecated"):
            warning = v.get("deprecationWarning") or (f"{spec['group']}/{v['name']} {names['kind']} is "
                                                      "deprecated")
        out.append(Resource(spec["group"], v["name"], names["plural"], names["kind"], spec.get("scope") !=
                            "Cluster", tuple(names.get("shortNames") or ()), tuple(names.get("categories") or ()),
                            subs, VERBS, (lambda s=schema: crd_root(s)), warning, columns,
                            crd["metadata"]["name"]))
    return out


# --- discovery documents ----------------------------------------------------------------------

def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}


def group_list(resources: list[Resource]) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for r in resources:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    out = []
    for name, versions in groups.items():
        vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        out.append({"name": name, "versions": vs, "preferredVersion": vs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def resource_list(resources: list[Resource], api_version: str) -> dict[str, Any] | None:
    docs = [d for r in resources if r.api_version == api_version for d in r.resource_docs()]
    if not docs:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version, "resources": docs}


# --- Table output (kubectl get) ---------------------------------------------------------------

def _age(stamp: str, now: float) -> str:
    try:
        then = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<unknown>"
    secs = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _jsonpath(obj: Any, path: str) -> Any:
    cur = obj
    for seg in path.strip(".").split("."):
        if not seg:
            continue
        cur = cur.get(seg) if isinstance(cur, dict) else None
    return cur


def _pod_cells(pod: dict[str, Any]) -> list[Any]:
    st = pod.get("status") or {}
    statuses = st.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or []) or len(statuses)
    ready = sum(1 for c in statuses if c.get("ready"))
    reason = st.get("phase") or "Pending"
    for c in statuses:
        waiting = (c.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return [f"{ready}/{total}", reason, sum(int(c.get("restartCount") or 0) for c in statuses)]


def table(resource: Resource, items: list[dict[str, Any]], now: float, resource_version: str) -> dict[str, Any]:
    """A ``meta.k8s.io/v1 Table`` of ``items`` (kubectl get's default output)."""
    names = ["Name"]
    if resource.kind == "Pod":
        names += ["Ready", "Status", "Restarts"]
    names += [c[0] for c in resource.columns if c[0].lower() != "age"]
    names.append("Age")
    rows = []
    for item in items:
        meta = item.get("metadata") or {}
        cells: list[Any] = [meta.get("name")]
        if resource.kind == "Pod":
            cells += _pod_cells(item)
        for name, _, path in resource.columns:
            if name.lower() != "age":
                value = _jsonpath(item, path)
                cells.append("" if value is None else value if isinstance(value, (int, float)) else str(value))
        cells.append(_age(str(meta.get("creationTimestamp") or ""), now))
        partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        rows.append({"cells": cells, "object": partial})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": [{"name": n, "type": "string", "format": "name" if n == "Name" else "",
                                   "description": "", "priority": 0} for n in names],
            "rows": rows}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def encode(doc: Any) -> bytes:
    return json.dumps(doc).encode()


# --- OpenAPI v3 (what kubectl reads to know the server validates fields itself) ----------------

def _gv_path(api_version: str) -> str:
    return f"api/{api_version}" if "/" not in api_version else f"apis/{api_version}"


def openapi_root(resources: list[Resource]) -> dict[str, Any]:
    gvs = sorted({r.api_version for r in resources})
    return {"paths": {_gv_path(gv): {"serverRelativeURL": f"/openapi/v3/{_gv_path(gv)}?hash=fake"} for gv in gvs}}


def openapi_gv(resources: list[Resource], api_version: str) -> dict[str, Any] | None:
    """PATCH operations per object path carrying the GVK and the query parameters
    (``fieldValidation`` among them): what kubectl's query-parameter verifier looks for.
    Schemas are not served (clients that need them, ``kubectl explain``, are out of scope)."""
    params = [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
    paths: dict[str, Any] = {}
    for r in resources:
        if r.api_version != api_version or "patch" not in r.verbs:
            continue
        base = "/" + _gv_path(api_version) + ("/namespaces/{namespace}" if r.namespaced else "")
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        paths[f"{base}/{r.plural}/{{name}}"] = {"patch": {"operationId": f"patch{r.kind}", "parameters": params,
                                                          "x-kubernetes-group-version-kind": gvk,
                                                          "x-kubernetes-action": "patch",
                                                          "responses": {"200": {"description": "OK"}}}}
    if not any(r.api_version == api_version for r in resources):
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.31.2"}, "paths": paths,
            "components": {"schemas": {}}}


# --- OpenAPI v2 in protobuf: what kubectl < 1.28 reads for the same question ---------------------
# Field numbers of gnostic's openapi_v2 messages (Document.paths = 8, Paths.path = 2,
# NamedPathItem{name 1, value 2}, PathItem.patch = 8, Operation{parameters 8, vendor_extension 13},
# ParametersItem.parameter = 1, Parameter.non_body_parameter = 2,
# NonBodyParameter.query_parameter_sub_schema = 3, QueryParameterSubSchema{in 2, name 4, type 6},
# NamedAny{name 1, value 2}, Any.yaml = 2, Info{title 1, version 2}).

def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def openapi_v2_protobuf(resources: list[Resource]) -> bytes:
    """A Swagger 2.0 document (protobuf) with one PATCH operation per object path, carrying
    the GVK extension and the ``fieldValidation`` query parameter."""
    paths = b""
    for r in resources:
        if "patch" not in r.verbs:
            continue
        base = "/" + _gv_path(r.api_version) + ("/namespaces/{namespace}" if r.namespaced else "")
        gvk = f"group: {json.dumps(r.group)}\nkind: {r.kind}\nversion: {r.version}\n"
        params = b""
        for name in ("dryRun", "fieldManager", "fieldValidation", "force"):
            query = _field(2, "query") + _field(4, name) + _field(6, "string")
            params += _field(8, _field(1, _field(2, _field(3, query))))
        operation = _field(5, f"patch{r.kind}") + params + _field(
            13, _field(1, "x-kubernetes-group-version-kind") + _field(2, _field(2, gvk)))
        paths += _field(2, _field(1, f"{base}/{r.plural}/{{name}}") + _field(2, _field(8, operation)))
    return _field(1, "2.0") + _field(2, _field(1, "Kubernetes") + _field(2, "v1.31.2")) + _field(8, paths)


# --- protobuf requests (kubectl >= 1.30 posts SelfSubjectAccessReviews as protobuf) ------------

def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """A protobuf message's fields (varint and length-delimited only: what these messages use)."""
    out: dict[int, list[bytes | int]] = {}
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
            out.setdefault(number, []).append(value)
        elif wire == 2:
            size, i = _read_varint(data, i)
            out.setdefault(number, []).append(data[i:i + size])
            i += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


def access_review_from_protobuf(body: bytes) -> dict[str, Any]:
    """A protobuf SelfSubjectAccessReview (``k8s\\0`` + runtime.Unknown envelope) as JSON data.
    ResourceAttributes fields: namespace 1, verb 2, group 3, version 4, resource 5,
    subresource 6, name 7 (k8s.io/api/authorization/v1/generated.proto)."""
    if not body.startswith(b"k8s\x00"):
        raise ValueError("not a Kubernetes protobuf envelope")
    raw = _fields(body[4:])[2][0]
    spec = _fields(raw).get(2, [b""])[0]
    assert isinstance(spec, bytes)
    attrs_raw = _fields(spec).get(1, [b""])[0]
    assert isinstance(attrs_raw, bytes)
    names = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
    attrs = {names[n]: v[0].decode() for n, v in _fields(attrs_raw).items()
             if n in names and isinstance(v[0], bytes) and v[0]}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
