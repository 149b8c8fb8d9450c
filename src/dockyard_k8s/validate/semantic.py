"""What the API server rejects but the OpenAPI schemas cannot express.

Checked on the v1.29-1.33 strict schemas (``../shared/notes/validation.md``): these all
pass the schema and fail at ``kubectl apply`` or, worse, later in a controller. Sources:
``k8s.io/apimachinery/pkg/util/validation`` (names, labels, ports) and
``pkg/apis/core/validation`` (pods, services). Every rule works on any manifest, and on
every pod template :func:`dockyard_k8s.kube.pod_templates` finds (Deployments, Jobs,
RayJob/RayCluster groups, MPIJobs...).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.kube import containers, parse_quantity, pod_templates, selector_matches
from dockyard_k8s.validate.collect import show
from dockyard_k8s.validate.problem import JsonPath

Found = Iterator[tuple[JsonPath, str]]

# Name grammars of k8s.io/apimachinery/pkg/util/validation, as string tests (no regex to
# compile at start-up: check runs these on every object).


def _alnum(text: str) -> bool:
    """Only ASCII letters and digits (and non-empty)."""
    return text.isascii() and text.isalnum()


def is_dns1123_label(text: str) -> bool:
    """``[a-z0-9]([-a-z0-9]*[a-z0-9])?``"""
    return (bool(text) and text == text.lower() and _alnum(text[0]) and _alnum(text[-1])
            and _alnum(text.replace("-", "")))


def is_dns1123_subdomain(text: str) -> bool:
    """Dot-separated DNS-1123 labels."""
    return all(is_dns1123_label(part) for part in text.split("."))


def is_dns1035_label(text: str) -> bool:
    """``[a-z]([-a-z0-9]*[a-z0-9])?``"""
    return is_dns1123_label(text) and text[0].isalpha()


def _is_qualified_part(text: str) -> bool:
    """``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]``"""
    if not text or not _alnum(text[0]) or not _alnum(text[-1]):
        return False
    middle = text.replace("-", "").replace("_", "").replace(".", "")
    return not middle or _alnum(middle)


def _is_iana_svc_name(text: str) -> bool:
    return (0 < len(text) <= 15 and is_dns1123_label(text) and "--" not in text
            and any(c.isalpha() for c in text))


def _is_config_key(text: str) -> bool:
    middle = text.replace("-", "").replace("_", "").replace(".", "")
    return 0 < len(text) <= 253 and (not middle or _alnum(middle))


def _is_percent(text: str) -> bool:
    return text.endswith("%") and text[:-1].isascii() and text[:-1].isdigit()


# Names whose format differs from the default (DNS-1123 subdomain), by kind.
NAME_FORMAT = {
    "Service": "dns1035",  # becomes a DNS label of the cluster domain
    "Namespace": "dns1123label",
}
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
# Resources the node accounts natively; anything else with a '/' (nvidia.com/gpu) is an
# extended resource: integer, not overcommittable (requests == limits).
NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "storage")
WORKLOADS_WITH_SELECTOR = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def check_name(name: Any, fmt: str, what: str) -> str | None:
    """Why ``name`` is not a valid ``fmt`` name, or None."""
    if not isinstance(name, str):
        return None  # the schema reports the type
    if fmt == "dns1035":
        limit, test, words = 63, is_dns1035_label, "a DNS-1035 label (lowercase letters, digits, '-', " \
                                                   "starting with a letter)"
    elif fmt == "dns1123label":
        limit, test, words = 63, is_dns1123_label, "a DNS-1123 label (lowercase letters, digits, '-')"
    else:
        limit, test, words = 253, is_dns1123_subdomain, "a DNS-1123 subdomain (lowercase letters, digits, '-', '.')"
    if len(name) > limit:
        return f"{what} {show(name)} has {len(name)} characters, expected at most {limit}"
    if not test(name):
        return f"{what} {show(name)} is not {words}"
    return None


def _qualified_name(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not is_dns1123_subdomain(prefix)):
        return f"key {show(key)}: prefix {show(prefix)} is not a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _is_qualified_part(name):
        return (f"key {show(key)} is not a qualified name (at most 63 letters, digits, '-', '_', '.', "
                "starting and ending with a letter or digit, optionally prefixed by a DNS subdomain and '/')")
    return None


def _labels(labels: Any, at: JsonPath) -> Found:
    for key, value in _dict(labels).items():
        if not isinstance(key, str):
            continue
        why = _qualified_name(key)
        if why:
            yield (*at, key), why
        if isinstance(value, str) and value and (len(value) > 63 or not _is_qualified_part(value)):
            yield (*at, key), (f"label value {show(value)} is not valid (at most 63 letters, digits, '-', '_', '.', "
                               "starting and ending with a letter or digit)")


def _selector(selector: Any, at: JsonPath) -> Found:
    sel = _dict(selector)
    yield from _labels(sel.get("matchLabels"), (*at, "matchLabels"))
    for i, expr in enumerate(_list(sel.get("matchExpressions"))):
        op = _dict(expr).get("operator")
        values = _list(_dict(expr).get("values"))
        if op in ("In", "NotIn") and not values:
            yield (*at, "matchExpressions", i, "values"), f"operator {op} needs at least one value"
        elif op in ("Exists", "DoesNotExist") and values:
            yield (*at, "matchExpressions", i, "values"), f"operator {op} takes no values"
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist", None):
            yield (*at, "matchExpressions", i, "operator"), \
                f"got {show(op)}, expected one of: In, NotIn, Exists, DoesNotExist"


def _port(value: Any, at: JsonPath, what: str, low: int = 1) -> Found:
    if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= 65535:
        yield at, f"{what} {value} is out of range, expected {low}-65535"


def _enum(value: Any, allowed: tuple[str, ...], at: JsonPath) -> Found:
    if isinstance(value, str) and value not in allowed:
        yield at, f"got {show(value)}, expected one of: {', '.join(allowed)}"


def _int_or_percent(value: Any, at: JsonPath) -> Found:
    if isinstance(value, str) and not _is_percent(value):
        yield at, f"got {show(value)}, expected an integer or a percentage such as \"25%\""


def _resources(resources: Any, at: JsonPath) -> Found:
    res = _dict(resources)
    parsed: dict[str, dict[str, Any]] = {}
    for section in ("limits", "requests"):
        parsed[section] = {}
        for name, raw in _dict(res.get(section)).items():
            q = parse_quantity(raw)
            where = (*at, section, name)
            if q is None:
                if isinstance(raw, str | int | float) and not isinstance(raw, bool):
                    yield where, f"got {show(raw)}, expected a quantity such as 500m, 2, 16Gi"
                continue
            if q < 0:
                yield where, f"got {show(raw)}, expected a quantity >= 0"
            elif "/" in name and not name.startswith("kubernetes.io/") and q.denominator != 1:
                yield where, f"got {show(raw)}: {name} is an extended resource, expected a whole number"
            parsed[section][name] = q
    limits, requests = parsed["limits"], parsed["requests"]
    for name, q in requests.items():
        extended = "/" in name and not name.startswith("kubernetes.io/")
        if name in limits and q > limits[name]:
            yield (*at, "requests", name), f"request {show(_dict(res['requests'])[name])} is greater than " \
                                           f"limit {show(_dict(res['limits'])[name])}"
        elif extended and name in limits and q != limits[name]:
            yield (*at, "requests", name), f"{name} is an extended resource: requests must equal limits"
        elif extended and name not in limits:
            yield (*at, "limits", name), f"{name} is an extended resource: set it in limits (requests default to it)"


def _security(ctx: Any, at: JsonPath) -> Found:
    profile = _dict(_dict(ctx).get("seccompProfile"))
    kind = profile.get("type")
    yield from _enum(kind, SECCOMP_TYPES, (*at, "seccompProfile", "type"))
    if kind == "Localhost" and not profile.get("localhostProfile"):
        yield (*at, "seccompProfile", "localhostProfile"), "type Localhost needs localhostProfile"
    elif kind in ("RuntimeDefault", "Unconfined") and profile.get("localhostProfile"):
        yield (*at, "seccompProfile", "localhostProfile"), f"only allowed with type Localhost, got type {kind}"


def _pod_spec(spec: dict[str, Any], at: JsonPath, owner: str) -> Found:
    allowed = RESTART_POLICIES.get(owner, POD_RESTART_POLICIES)
    yield from _enum(spec.get("restartPolicy"), allowed, (*at, "restartPolicy"))
    yield from _enum(spec.get("dnsPolicy"), DNS_POLICIES, (*at, "dnsPolicy"))
    yield from _security(spec.get("securityContext"), (*at, "securityContext"))
    for i, tol in enumerate(_list(spec.get("tolerations"))):
        t, where = _dict(tol), (*at, "tolerations", i)
        yield from _enum(t.get("operator"), TOLERATION_OPERATORS, (*where, "operator"))
        yield from _enum(t.get("effect") or None, TAINT_EFFECTS, (*where, "effect"))
        if t.get("operator") == "Exists" and t.get("value"):
            yield (*where, "value"), "must be empty when operator is Exists"
        if not t.get("key") and t.get("operator", "Equal") == "Equal":
            yield (*where, "operator"), "an empty key needs operator Exists (it matches every taint)"
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            yield (*where, "tolerationSeconds"), "only allowed with effect NoExecute"
    volumes: set[str] = set()
    for i, vol in enumerate(_list(spec.get("volumes"))):
        name = _dict(vol).get("name")
        why = check_name(name, "dns1123label", "volume name")
        if why:
            yield (*at, "volumes", i, "name"), why
        if name in volumes:
            yield (*at, "volumes", i, "name"), f"duplicate volume name {show(name)}"
        if isinstance(name, str):
            volumes.add(name)
    names: set[str] = set()
    index = {"initContainers": 0, "containers": 0, "ephemeralContainers": 0}
    for field, c in containers(spec):
        where = (*at, field, index[field])
        index[field] += 1
        yield from _container(c, where, field, volumes, names)


def _container(c: dict[str, Any], at: JsonPath, field: str, volumes: set[str], names: set[str]) -> Found:
    name = c.get("name")
    why = check_name(name, "dns1123label", "container name")
    if why:
        yield (*at, "name"), why
    if isinstance(name, str):
        if name in names:
            yield (*at, "name"), f"duplicate container name {show(name)}"
        names.add(name)
    if field != "ephemeralContainers" and not c.get("image"):
        yield (*at, "image"), "missing image"
    yield from _enum(c.get("imagePullPolicy"), IMAGE_PULL_POLICIES, (*at, "imagePullPolicy"))
    if c.get("restartPolicy") is not None:
        if field != "initContainers":
            yield (*at, "restartPolicy"), "a container restartPolicy is only allowed on initContainers (sidecars)"
        else:
            yield from _enum(c.get("restartPolicy"), ("Always",), (*at, "restartPolicy"))
    port_names: set[str] = set()
    for i, port in enumerate(_list(c.get("ports"))):
        p, where = _dict(port), (*at, "ports", i)
        yield from _port(p.get("containerPort"), (*where, "containerPort"), "containerPort")
        yield from _port(p.get("hostPort"), (*where, "hostPort"), "hostPort", low=0)
        yield from _enum(p.get("protocol"), PROTOCOLS, (*where, "protocol"))
        pname = p.get("name")
        if isinstance(pname, str):
            why = _svc_name(pname)
            if why:
                yield (*where, "name"), why
            if pname in port_names:
                yield (*where, "name"), f"duplicate port name {show(pname)}"
            port_names.add(pname)
    yield from _resources(c.get("resources"), (*at, "resources"))
    yield from _security(c.get("securityContext"), (*at, "securityContext"))
    for i, mount in enumerate(_list(c.get("volumeMounts"))):
        vname = _dict(mount).get("name")
        if isinstance(vname, str) and vname not in volumes:
            yield (*at, "volumeMounts", i, "name"), f"no volume named {show(vname)} in this pod"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = _dict(c.get(probe))
        for action in ("httpGet", "tcpSocket", "grpc"):
            port = _dict(p.get(action)).get("port")
            yield from _port(port, (*at, probe, action, "port"), "port")
            if isinstance(port, str) and port not in port_names:
                yield (*at, probe, action, "port"), f"no container port named {show(port)}"


def _svc_name(name: str) -> str | None:
    if not _is_iana_svc_name(name):
        return (f"port name {show(name)} is not an IANA service name (at most 15 lowercase letters, digits "
                "and '-', with at least one letter)")
    return None


def object_problems(obj: dict[str, Any]) -> Found:
    """Every semantic problem of one object on its own (no cross-object rules)."""
    kind = obj.get("kind")
    meta = _dict(obj.get("metadata"))
    if "name" not in meta and "generateName" not in meta:
        yield ("metadata",), "missing metadata.name"
    why = check_name(meta.get("name"), NAME_FORMAT.get(str(kind), "dns1123subdomain"), f"{kind} name")
    if why:
        yield ("metadata", "name"), why
    why = check_name(meta.get("namespace"), "dns1123label", "namespace")
    if why:
        yield ("metadata", "namespace"), why
    yield from _labels(meta.get("labels"), ("metadata", "labels"))
    for key in _dict(meta.get("annotations")):
        why = _qualified_name(key) if isinstance(key, str) else None
        if why:
            yield ("metadata", "annotations", key), why
    spec = _dict(obj.get("spec"))
    for template in pod_templates(obj):
        yield from _labels(template.metadata.get("labels"), (*template.path, "metadata", "labels"))
        spec_at = (*template.path, "spec") if template.path else ("spec",)
        yield from _pod_spec(template.spec, spec_at, str(kind))
    if kind in WORKLOADS_WITH_SELECTOR or kind == "Job":
        yield from _workload(kind, spec, obj)
    elif kind == "Service":
        yield from _service(spec)
    elif kind == "NetworkPolicy":
        yield from _network_policy(spec)
    elif kind == "PodDisruptionBudget":
        yield from _selector(spec.get("selector"), ("spec", "selector"))
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            yield ("spec",), "set minAvailable or maxUnavailable, not both"
        for field in ("minAvailable", "maxUnavailable"):
            yield from _int_or_percent(spec.get(field), ("spec", field))
    elif kind == "ResourceQuota":
        for name, raw in _dict(spec.get("hard")).items():
            if parse_quantity(raw) is None:
                yield ("spec", "hard", name), f"got {show(raw)}, expected a quantity"
    elif kind == "LimitRange":
        for i, limit in enumerate(_list(spec.get("limits"))):
            for field in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
                for name, raw in _dict(_dict(limit).get(field)).items():
                    if parse_quantity(raw) is None:
                        yield ("spec", "limits", i, field, name), f"got {show(raw)}, expected a quantity"
    elif kind in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData", "stringData"):
            for key in _dict(obj.get(field)):
                if not isinstance(key, str) or not _is_config_key(key):
                    yield (field, str(key)), f"key {show(key)} is not valid (letters, digits, '-', '_', '.')"


def _workload(kind: Any, spec: dict[str, Any], obj: dict[str, Any]) -> Found:
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        yield ("spec", "replicas"), f"got {replicas}, expected a number >= 0"
    selector = spec.get("selector")
    if kind == "Job" and selector is None:
        return
    if kind != "Job" and not _dict(selector):
        yield ("spec", "selector"), "missing selector (apps/v1 requires one that matches the template labels)"
        return
    yield from _selector(selector, ("spec", "selector"))
    labels = _dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))
    if not selector_matches(_dict(selector), labels):
        yield ("spec", "selector"), (f"selector does not match the pod template labels "
                                     f"(spec.template.metadata.labels: {_show_labels(labels)})")


def _show_labels(labels: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items(), key=lambda kv: str(kv[0]))) or "none"


def _service(spec: dict[str, Any]) -> Found:
    yield from _enum(spec.get("type"), SERVICE_TYPES, ("spec", "type"))
    ports = _list(spec.get("ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        p, where = _dict(port), ("spec", "ports", i)
        yield from _port(p.get("port"), (*where, "port"), "port")
        yield from _port(p.get("targetPort"), (*where, "targetPort"), "targetPort")
        yield from _port(p.get("nodePort"), (*where, "nodePort"), "nodePort")
        yield from _enum(p.get("protocol"), PROTOCOLS, (*where, "protocol"))
        target = p.get("targetPort")
        if isinstance(target, str):
            why = _svc_name(target)
            if why:
                yield (*where, "targetPort"), why
        name = p.get("name")
        if len(ports) > 1 and not name:
            yield (*where, "name"), "every port needs a name when a Service has several"
        if isinstance(name, str):
            if name in names:
                yield (*where, "name"), f"duplicate port name {show(name)}"
            names.add(name)
    for key, value in _dict(spec.get("selector")).items():
        if isinstance(key, str) and isinstance(value, str):
            yield from _labels({key: value}, ("spec", "selector"))


def _network_policy(spec: dict[str, Any]) -> Found:
    yield from _selector(spec.get("podSelector"), ("spec", "podSelector"))
    for i, kind in enumerate(_list(spec.get("policyTypes"))):
        yield from _enum(kind, ("Ingress", "Egress"), ("spec", "policyTypes", i))
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_list(spec.get(direction))):
            where = ("spec", direction, i)
            for j, port in enumerate(_list(_dict(rule).get("ports"))):
                p = _dict(port)
                yield from _enum(p.get("protocol"), PROTOCOLS, (*where, "ports", j, "protocol"))
                yield from _port(p.get("port"), (*where, "ports", j, "port"), "port")
                end = p.get("endPort")
                if isinstance(end, int) and isinstance(p.get("port"), int) and end < p["port"]:
                    yield (*where, "ports", j, "endPort"), f"endPort {end} is lower than port {p['port']}"
            for j, peer in enumerate(_list(_dict(rule).get(peers_key))):
                block = _dict(_dict(peer).get("ipBlock"))
                if block:
                    yield from _ip_block(block, (*where, peers_key, j, "ipBlock"))


def _ip_block(block: dict[str, Any], at: JsonPath) -> Found:
    import ipaddress

    try:
        net = ipaddress.ip_network(str(block.get("cidr")), strict=False)
    except ValueError:
        yield (*at, "cidr"), f"got {show(block.get('cidr'))}, expected a CIDR such as 10.0.0.0/8"
        return
    for i, item in enumerate(_list(block.get("except"))):
        try:
            sub = ipaddress.ip_network(str(item), strict=False)
        except ValueError:
            yield (*at, "except", i), f"got {show(item)}, expected a CIDR"
            continue
        if sub.version != net.version or not sub.subnet_of(net):  # type: ignore[arg-type]
            yield (*at, "except", i), f"{item} is not inside cidr {block.get('cidr')}"


def bundle_problems(objects: list[dict[str, Any]]) -> Iterator[tuple[int, JsonPath, str]]:
    """Cross-object rules: (object index, path, message).

    A Service whose selector matches no pod template among the objects, when the objects do
    contain pod templates in its namespace (a Service for pods made elsewhere is not judged);
    a named targetPort that no selected container declares.
    """
    # Index templates by (namespace, label, value) so each Service looks only at the templates
    # sharing one of its selector's pairs: linear, not Services x templates.
    by_pair: dict[tuple[str, str, Any], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    namespaces: set[str] = set()
    for obj in objects:
        if not isinstance(obj, dict) or obj.get("kind") == "Service":
            continue
        ns = str(_dict(obj.get("metadata")).get("namespace") or "")
        for t in pod_templates(obj):
            labels = _dict(t.metadata.get("labels"))
            namespaces.add(ns)
            for key, value in labels.items():
                if isinstance(value, str):
                    by_pair.setdefault((ns, key, value), []).append((labels, t.spec))
    if not namespaces:
        return
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict) or obj.get("kind") != "Service":
            continue
        spec = _dict(obj.get("spec"))
        selector = spec.get("selector")
        ns = str(_dict(obj.get("metadata")).get("namespace") or "")
        if not isinstance(selector, dict) or not selector or ns not in namespaces:
            continue
        key, value = next(iter(selector.items()))
        candidates = by_pair.get((ns, key, value), []) if isinstance(value, str) else []
        matched = [pod for labels, pod in candidates if selector_matches({"matchLabels": selector}, labels)]
        if not matched:
            yield index, ("spec", "selector"), (f"selects no pod: no pod template in namespace "
                                                f"{ns or '(unset)'} has the labels {_show_labels(selector)}")
            continue
        declared = {_dict(p).get("name") for pod in matched for _, c in containers(pod) for p in _list(c.get("ports"))}
        for i, port in enumerate(_list(spec.get("ports"))):
            target = _dict(port).get("targetPort")
            if isinstance(target, str) and target not in declared:
                yield index, ("spec", "ports", i, "targetPort"), \
                    f"no container of the selected pods declares a port named {show(target)}"
