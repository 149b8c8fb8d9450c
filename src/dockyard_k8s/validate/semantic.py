"""What the API server rejects but the OpenAPI schemas cannot express, object by object.

Checked on the v1.29-1.33 strict schemas (``../shared/notes/validation.md``): these all
pass the schema and fail at ``kubectl apply`` or, worse, later in a controller. Sources:
``pkg/apis/core/validation`` (pods, services) and ``k8s.io/apimachinery`` (names, labels:
:mod:`.names`). Every rule works on any manifest, and on every pod template
:func:`dockyard_k8s.kube.pod_templates` finds (Deployments, Jobs, RayJob/RayCluster groups,
MPIJobs...). Rules across objects (a Service selecting no pod) are in :mod:`.cross`.

:func:`object_problems` is the entry point: by kind, then each pod template
(:func:`_pod_spec`), each container (:func:`_container`). A rule appends ``(path, message)``
to one list; a new rule goes next to the field it checks, with its source.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Any

from dockyard_k8s.kube import (
    PodTemplate,
    is_extended_resource,
    parse_quantity,
    pod_templates,
    quantity_fix,
    selector_matches,
)
from dockyard_k8s.names import (
    NAME_FORMAT,
    check_name,
    is_config_key,
    is_env_var_name,
    is_percent,
    label_value_problem,
    port_name_problem,
    qualified_name_problem,
    show_labels,
)
from dockyard_k8s.plain import show
from dockyard_k8s.validate.problem import JsonPath

Found = list[tuple[JsonPath, str]]

# These rules run on every object of `validate` (10,000 objects in a benchmark) and on every
# `check`: each appends to one list instead of yielding.

# restartPolicy a pod template may use, by owner kind (None: any of the three).
RESTART_POLICIES = {
    "Deployment": ("Always",), "ReplicaSet": ("Always",), "StatefulSet": ("Always",),
    "DaemonSet": ("Always",), "ReplicationController": ("Always",),
    "Job": ("OnFailure", "Never"), "CronJob": ("OnFailure", "Never"),
}
POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
IMAGE_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SECCOMP_TYPES = ("RuntimeDefault", "Localhost", "Unconfined")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
WORKLOADS_WITH_SELECTOR = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")

_EMPTY: dict[str, Any] = {}

# The API server decodes these integers into Go int32 / int64 fields: a larger number is refused
# ("cannot unmarshal number ... into ... int32"). By where they are (apps, batch, core, KubeRay).
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
_WORKLOAD_INT32 = ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds", "parallelism",
                   "completions", "backoffLimit", "ttlSecondsAfterFinished", "backoffLimitPerIndex",
                   "maxFailedIndexes")
_POD_INT64 = ("terminationGracePeriodSeconds", "activeDeadlineSeconds")
_PROBE_INT32 = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold")
_SECURITY_INT64 = ("runAsUser", "runAsGroup", "fsGroup")
_RAYJOB_INT32 = ("backoffLimit", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "preRunningDeadlineSeconds")
_RAY_GROUP_INT32 = ("replicas", "minReplicas", "maxReplicas", "numOfHosts")


def _dict(value: Any) -> dict[str, Any]:
    return value if value.__class__ is dict else _EMPTY


def _list(value: Any) -> list[Any]:
    return value if value.__class__ is list else []


def _labels(out: Found, labels: Any, at: JsonPath) -> None:
    if labels.__class__ is not dict:
        return
    for key, value in labels.items():
        if key.__class__ is not str:
            continue
        why = qualified_name_problem(key)
        if why:
            out.append(((*at, key), why))
        if value.__class__ is str:
            why = label_value_problem(value)
            if why:
                out.append(((*at, key), why))


def _selector(out: Found, selector: Any, at: JsonPath) -> None:
    sel = _dict(selector)
    _labels(out, sel.get("matchLabels"), (*at, "matchLabels"))
    for i, expr in enumerate(_list(sel.get("matchExpressions"))):
        op = _dict(expr).get("operator")
        values = _list(_dict(expr).get("values"))
        if op in ("In", "NotIn") and not values:
            out.append(((*at, "matchExpressions", i, "values"), f"operator {op} needs at least one value"))
        elif op in ("Exists", "DoesNotExist") and values:
            out.append(((*at, "matchExpressions", i, "values"), f"operator {op} takes no values"))
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist", None):
            out.append(((*at, "matchExpressions", i, "operator"),
                        f"got {show(op)}, expected one of: In, NotIn, Exists, DoesNotExist"))


def _port(out: Found, value: Any, at: JsonPath, what: str, *field: str | int, low: int = 1) -> None:
    """An integer ``value`` (at ``at + field``) is a port number; strings are port names."""
    if value.__class__ is int and not low <= value <= 65535:
        out.append(((*at, *field), f"{what} {value} is out of range, expected {low}-65535"))


def _enum(out: Found, value: Any, allowed: tuple[str, ...], at: JsonPath, *field: str | int) -> None:
    """``value`` (at ``at + field``) is one of ``allowed``; None and non-strings are the schema's business."""
    if value.__class__ is str and value not in allowed:
        out.append(((*at, *field), f"got {show(value)}, expected one of: {', '.join(allowed)}"))


def _resources(out: Found, res: Any, at: JsonPath) -> None:
    """Quantities, requests <= limits; a domain-prefixed name outside kubernetes.io (nvidia.com/gpu) is an
    extended resource: whole, not overcommitted (requests == limits)."""
    if res.__class__ is not dict or not res:
        return
    parsed: dict[str, dict[str, Any]] = {"limits": {}, "requests": {}}
    for section in ("limits", "requests"):
        values = res.get(section)
        if values.__class__ is not dict:
            continue
        for name, raw in values.items():
            if name.__class__ is not str:
                continue  # only an in-memory object can have one (the reader makes keys strings, as kubectl)
            q = parse_quantity(raw)
            if q is None:
                if isinstance(raw, str | int | float) and not isinstance(raw, bool):
                    out.append(((*at, section, name), f"got {show(raw)}, expected a quantity such as 500m, 2, 16Gi"
                                                           f"{quantity_fix(str(raw))}"))
                continue
            if q < 0:
                out.append(((*at, section, name), f"got {show(raw)}, expected a quantity >= 0"))
            elif q.denominator != 1 and is_extended_resource(name):
                out.append(((*at, section, name),
                            f"got {show(raw)}: {name} is an extended resource, expected a whole number"))
            parsed[section][name] = q
    limits, requests = parsed["limits"], parsed["requests"]
    raw_limits: dict[str, Any] = _dict(res.get("limits"))
    for name, q in requests.items():
        extended = is_extended_resource(name)
        if name in limits and q > limits[name]:
            out.append(((*at, "requests", name), f"request {show(_dict(res['requests'])[name])} is greater than "
                                                 f"limit {show(raw_limits[name])}"))
        elif extended and name in limits and q != limits[name]:
            out.append(((*at, "requests", name), f"{name} is an extended resource: requests must equal limits"))
        elif extended and name not in raw_limits:
            out.append(((*at, "limits", name),
                        f"{name} is an extended resource: set it in limits (requests default to it)"))


def _ints(out: Found, d: dict[str, Any], at: JsonPath, fields: tuple[str, ...], limit: int) -> None:
    """Integers of ``fields`` beyond what the API server's Go type holds (int32 or int64)."""
    for field in fields:
        value = d.get(field)
        if value.__class__ is int and not -limit - 1 <= value <= limit:
            bits = 32 if limit == INT32_MAX else 64
            out.append(((*at, field), f"got {value}, expected at most {limit} (the API server reads it as a "
                                      f"{bits}-bit integer)"))


def _env_names(out: Found, env: Any, at: JsonPath) -> None:
    for i, item in enumerate(_list(env)):
        name = _dict(item).get("name")
        if name.__class__ is str and not is_env_var_name(name):
            out.append(((*at, i, "name"), f"env name {show(name)} is not valid (letters, digits, '_', '-' and '.', "
                                          "not starting with a digit)"))


def _security(out: Found, ctx: Any, at: JsonPath) -> None:
    if ctx.__class__ is not dict:
        return
    _ints(out, ctx, at, _SECURITY_INT64, INT64_MAX)
    profile = ctx.get("seccompProfile")
    if profile.__class__ is not dict:
        return
    kind = profile.get("type")
    _enum(out, kind, SECCOMP_TYPES, at, "seccompProfile", "type")
    if kind == "Localhost" and not profile.get("localhostProfile"):
        out.append(((*at, "seccompProfile", "localhostProfile"), "type Localhost needs localhostProfile"))
    elif kind in ("RuntimeDefault", "Unconfined") and profile.get("localhostProfile"):
        out.append(((*at, "seccompProfile", "localhostProfile"), f"only allowed with type Localhost, got type {kind}"))


def _pod_spec(out: Found, spec: dict[str, Any], at: JsonPath, owner: str) -> None:
    get = spec.get
    _ints(out, spec, at, _POD_INT64, INT64_MAX)
    _ints(out, spec, at, ("priority",), INT32_MAX)
    _enum(out, get("restartPolicy"), RESTART_POLICIES.get(owner, POD_RESTART_POLICIES), at, "restartPolicy")
    _enum(out, get("dnsPolicy"), DNS_POLICIES, at, "dnsPolicy")
    _security(out, get("securityContext"), (*at, "securityContext"))
    for i, tol in enumerate(_list(get("tolerations"))):
        t = _dict(tol)
        op = t.get("operator")
        _enum(out, op, TOLERATION_OPERATORS, at, "tolerations", i, "operator")
        _enum(out, t.get("effect") or None, TAINT_EFFECTS, at, "tolerations", i, "effect")
        if op == "Exists" and t.get("value"):
            out.append(((*at, "tolerations", i, "value"), "must be empty when operator is Exists"))
        if not t.get("key") and t.get("operator", "Equal") == "Equal":
            out.append(((*at, "tolerations", i, "operator"),
                        "an empty key needs operator Exists (it matches every taint)"))
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            out.append(((*at, "tolerations", i, "tolerationSeconds"), "only allowed with effect NoExecute"))
    volumes: set[str] = set()
    for i, vol in enumerate(_list(get("volumes"))):
        name = _dict(vol).get("name")
        why = check_name(name, "dns1123label", "volume name")
        if why:
            out.append(((*at, "volumes", i, "name"), why))
        if name.__class__ is str:
            if name in volumes:
                out.append(((*at, "volumes", i, "name"), f"duplicate volume name {show(name)}"))
            volumes.add(name)
    names: set[str] = set()
    for field in ("initContainers", "containers", "ephemeralContainers"):
        items = get(field)
        if items.__class__ is not list:
            continue
        for n, c in enumerate(items):
            if c.__class__ is dict:
                _container(out, c, (*at, field, n), field, volumes, names)


_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def _container(out: Found, c: dict[str, Any], at: JsonPath, field: str, volumes: set[str], names: set[str]) -> None:
    get = c.get
    name = get("name")
    if name.__class__ is str:
        why = check_name(name, "dns1123label", "container name")
        if why:
            out.append(((*at, "name"), why))
        if name in names:
            out.append(((*at, "name"), f"duplicate container name {show(name)}"))
        names.add(name)
    if field != "ephemeralContainers" and not get("image"):
        out.append(((*at, "image"), "missing image"))
    _env_names(out, get("env"), (*at, "env"))
    _enum(out, get("imagePullPolicy"), IMAGE_PULL_POLICIES, at, "imagePullPolicy")
    restart = get("restartPolicy")
    if restart is not None:
        if field != "initContainers":
            out.append(((*at, "restartPolicy"),
                        "a container restartPolicy is only allowed on initContainers (sidecars)"))
        else:
            _enum(out, restart, ("Always",), at, "restartPolicy")
    port_names: set[str] = set()
    for i, port in enumerate(_list(get("ports"))):
        p = _dict(port)
        _port(out, p.get("containerPort"), at, "containerPort", "ports", i, "containerPort")
        _port(out, p.get("hostPort"), at, "hostPort", "ports", i, "hostPort", low=0)
        _enum(out, p.get("protocol"), PROTOCOLS, at, "ports", i, "protocol")
        pname = p.get("name")
        if pname.__class__ is str:
            why = port_name_problem(pname)
            if why:
                out.append(((*at, "ports", i, "name"), why))
            if pname in port_names:
                out.append(((*at, "ports", i, "name"), f"duplicate port name {show(pname)}"))
            port_names.add(pname)
    _resources(out, get("resources"), (*at, "resources"))
    _security(out, get("securityContext"), (*at, "securityContext"))
    for i, mount in enumerate(_list(get("volumeMounts"))):
        vname = _dict(mount).get("name")
        if vname.__class__ is str and vname not in volumes:
            out.append(((*at, "volumeMounts", i, "name"), f"no volume named {show(vname)} in this pod"))
    for probe in _PROBES:
        check = get(probe)
        if check.__class__ is not dict:
            continue
        _ints(out, check, (*at, probe), _PROBE_INT32, INT32_MAX)
        _ints(out, check, (*at, probe), ("terminationGracePeriodSeconds",), INT64_MAX)
        for action in ("httpGet", "tcpSocket", "grpc"):
            port = _dict(check.get(action)).get("port")
            if port is None:
                continue
            _port(out, port, at, "port", probe, action, "port")
            if port.__class__ is str and port not in port_names:
                out.append(((*at, probe, action, "port"), f"no container port named {show(port)}"))


def object_problems(obj: dict[str, Any], templates: list[PodTemplate] | None = None) -> Found:
    """Every semantic problem of one object on its own (no cross-object rules); ``templates``
    are its :func:`.kube.pod_templates` when the caller has them."""
    out: Found = []
    kind = obj.get("kind")
    meta = _dict(obj.get("metadata"))
    if "name" not in meta and "generateName" not in meta:
        out.append((("metadata",), "missing metadata.name"))
    name = meta.get("name")
    if name.__class__ is str:
        fmt = NAME_FORMAT.get(kind, "dns1123subdomain") if kind.__class__ is str else "dns1123subdomain"
        why = check_name(name, fmt, f"{kind} name")
        if why:
            out.append((("metadata", "name"), why))
    why = check_name(meta.get("namespace"), "dns1123label", "namespace")
    if why:
        out.append((("metadata", "namespace"), why))
    _labels(out, meta.get("labels"), ("metadata", "labels"))
    annotations = meta.get("annotations")
    if annotations.__class__ is dict:
        for key in annotations:
            why = qualified_name_problem(key) if key.__class__ is str else None
            if why:
                out.append((("metadata", "annotations", key), why))
    spec = _dict(obj.get("spec"))
    for template in pod_templates(obj) if templates is None else templates:
        _labels(out, template.metadata.get("labels"), (*template.path, "metadata", "labels"))
        _pod_spec(out, template.spec, (*template.path, "spec") if template.path else ("spec",), str(kind))
    if kind in WORKLOADS_WITH_SELECTOR or kind == "Job":
        _ints(out, spec, ("spec",), _WORKLOAD_INT32, INT32_MAX)
        if kind == "Job":
            _ints(out, spec, ("spec",), ("activeDeadlineSeconds",), INT64_MAX)
        _workload(out, kind, spec)
    elif kind in ("RayJob", "RayCluster"):
        cluster = _dict(spec.get("rayClusterSpec")) if kind == "RayJob" else spec
        at: JsonPath = ("spec", "rayClusterSpec") if kind == "RayJob" else ("spec",)
        if kind == "RayJob":
            _ints(out, spec, ("spec",), _RAYJOB_INT32, INT32_MAX)
        for i, group in enumerate(_list(cluster.get("workerGroupSpecs"))):
            _ints(out, _dict(group), (*at, "workerGroupSpecs", i), _RAY_GROUP_INT32, INT32_MAX)
    elif kind == "PriorityClass":
        _ints(out, obj, (), ("value",), INT32_MAX)
    elif kind == "Service":
        _service(out, spec)
    elif kind == "NetworkPolicy":
        _network_policy(out, spec)
    elif kind == "PodDisruptionBudget":
        _selector(out, spec.get("selector"), ("spec", "selector"))
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            out.append((("spec",), "set minAvailable or maxUnavailable, not both"))
        for field in ("minAvailable", "maxUnavailable"):
            value = spec.get(field)
            if isinstance(value, str) and not is_percent(value):
                out.append((("spec", field), f"got {show(value)}, expected an integer or a percentage such as '25%'"))
    elif kind == "ResourceQuota":
        for name, raw in _dict(spec.get("hard")).items():
            if parse_quantity(raw) is None:
                out.append((("spec", "hard", name), f"got {show(raw)}, expected a quantity"))
    elif kind == "LimitRange":
        for i, limit in enumerate(_list(spec.get("limits"))):
            for field in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
                for name, raw in _dict(_dict(limit).get(field)).items():
                    if parse_quantity(raw) is None:
                        out.append((("spec", "limits", i, field, name), f"got {show(raw)}, expected a quantity"))
    elif kind in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData", "stringData"):
            for key in _dict(obj.get(field)):
                if not isinstance(key, str) or not is_config_key(key):
                    out.append(((field, str(key)), f"key {show(key)} is not valid (letters, digits, '-', '_', '.')"))
    return out


def _workload(out: Found, kind: Any, spec: dict[str, Any]) -> None:
    replicas = spec.get("replicas")
    if replicas.__class__ is int and replicas < 0:
        out.append((("spec", "replicas"), f"got {replicas}, expected a number >= 0"))
    selector = spec.get("selector")
    if kind == "Job" and selector is None:
        return
    if kind != "Job" and not _dict(selector):
        out.append((("spec", "selector"), "missing selector (apps/v1 requires one that matches the template labels)"))
        return
    _selector(out, selector, ("spec", "selector"))
    labels = _dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))
    if not selector_matches(_dict(selector), labels):
        out.append((("spec", "selector"), (f"selector does not match the pod template labels "
                                           f"(spec.template.metadata.labels: {show_labels(labels)})")))


def _service(out: Found, spec: dict[str, Any]) -> None:
    _enum(out, spec.get("type"), SERVICE_TYPES, ("spec",), "type")
    ports = _list(spec.get("ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = _dict(port)
        where = ("spec", "ports", i)
        _port(out, p.get("port"), where, "port", "port")
        target = p.get("targetPort")
        _port(out, target, where, "targetPort", "targetPort")
        _port(out, p.get("nodePort"), where, "nodePort", "nodePort")
        _enum(out, p.get("protocol"), PROTOCOLS, where, "protocol")
        if target.__class__ is str:
            why = port_name_problem(target)
            if why:
                out.append(((*where, "targetPort"), why))
        name = p.get("name")
        if len(ports) > 1 and not name:
            out.append(((*where, "name"), "every port needs a name when a Service has several"))
        if name.__class__ is str:
            if name in names:
                out.append(((*where, "name"), f"duplicate port name {show(name)}"))
            names.add(name)
    for key, value in _dict(spec.get("selector")).items():
        if key.__class__ is str and value.__class__ is str:
            _labels(out, {key: value}, ("spec", "selector"))


def _network_policy(out: Found, spec: dict[str, Any]) -> None:
    _selector(out, spec.get("podSelector"), ("spec", "podSelector"))
    for i, kind in enumerate(_list(spec.get("policyTypes"))):
        _enum(out, kind, ("Ingress", "Egress"), ("spec", "policyTypes"), i)
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_list(spec.get(direction))):
            where = ("spec", direction, i)
            for j, port in enumerate(_list(_dict(rule).get("ports"))):
                p = _dict(port)
                _enum(out, p.get("protocol"), PROTOCOLS, where, "ports", j, "protocol")
                _port(out, p.get("port"), where, "port", "ports", j, "port")
                end = p.get("endPort")
                if isinstance(end, int) and isinstance(p.get("port"), int) and end < p["port"]:
                    out.append(((*where, "ports", j, "endPort"), f"endPort {end} is lower than port {p['port']}"))
            for j, peer in enumerate(_list(_dict(rule).get(peers_key))):
                block = _dict(_dict(peer).get("ipBlock"))
                if block:
                    _ip_block(out, block, (*where, peers_key, j, "ipBlock"))


@functools.lru_cache(maxsize=1024)  # the same few blocks recur in every policy of a large input
def _network(text: str) -> Any:
    """The network a CIDR names, or None."""
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _ip_block(out: Found, block: dict[str, Any], at: JsonPath) -> None:
    net = _network(str(block.get("cidr")))
    if net is None:
        out.append(((*at, "cidr"), f"got {show(block.get('cidr'))}, expected a CIDR such as 10.0.0.0/8"))
        return
    for i, item in enumerate(_list(block.get("except"))):
        sub = _network(str(item))
        if sub is None:
            out.append(((*at, "except", i), f"got {show(item)}, expected a CIDR"))
            continue
        if sub.version != net.version or not sub.subnet_of(net):
            out.append(((*at, "except", i), f"{item} is not inside cidr {block.get('cidr')}"))

