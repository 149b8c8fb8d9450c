"""Pure helpers about Kubernetes objects that validate, lint and plan all need: the one parse and
format of quantities, the pod templates of every workload kind and their requests, label
selectors, object and image references, and what pods refer to that the objects do not hold.

No I/O, no client library: plain dicts in, plain data out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from dockyard_k8s.plain import Path, dig

_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>[KMGTPE]i)|(?P<dec>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}


def parse_quantity(value: Any) -> Fraction | None:
    """``"500m"`` -> 1/2, ``"2Gi"`` -> 2147483648, ``4`` -> 4; None if not a quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (str, int)):
        return _parse(value)
    if isinstance(value, float):
        return Fraction(str(value)) if math.isfinite(value) else None  # .inf / .nan are not quantities
    return None


# Manifests repeat the same few quantities ("8", "16Gi", "500m") thousands of times, and
# building a Fraction costs more than a cache lookup by far (bench/README.md); Fractions are immutable.
@lru_cache(maxsize=4096)
def _parse(value: str | int) -> Fraction | None:
    if isinstance(value, int):
        return Fraction(value)
    m = _QUANTITY.match(value.strip()) if value.strip() == value else None
    if not m:
        return None
    number = Fraction(m.group("num"))
    if m.group("bin"):
        return number * _BINARY[m.group("bin")]
    if m.group("exp") is not None:
        return number * Fraction(10) ** int(m.group("exp"))
    return number * _DECIMAL[m.group("dec") or ""]


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def quantity_fix(value: str) -> str:
    """The byte units people write (``1000GB``, ``16GiB``, ``512mb``) as Kubernetes spells them:
    ``Gi`` binary or ``G`` decimal, no ``B`` (a lowercase ``m`` is milli there)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?) ?([kmgtpe])(i?)b?", value, re.IGNORECASE)
    if m is None:
        return ""
    number, unit, binary = m[1], m[2].upper(), m[3]
    if binary:
        return f"; did you mean '{number}{unit}i'?"
    return f"; did you mean '{number}{unit}i' (binary) or '{number}{'k' if unit == 'K' else unit}' (decimal)?"


def format_quantity(value: Fraction | int, binary: bool = False) -> str:
    """The canonical text of an amount, as apimachinery's ``Quantity.String()`` writes it.

    ``binary`` (BinarySI: memory, storage): the largest power of 1024 that divides it exactly
    (``64Gi``, ``1536Mi``); below 1024 or not an integer, the decimal form. Decimal (DecimalSI: cpu,
    devices): the largest power of 1000 that leaves an integer (``500m``, ``8``, ``1k``, ``1G``). Finer
    than a nano is rounded up, as the API server does."""
    q = Fraction(value)
    sign, q = ("-", -q) if q < 0 else ("", q)
    if binary and q >= 1024 and q.denominator == 1:
        n, exp = q.numerator, 0
        while n % 1024 == 0 and exp < len(_BINARY_SUFFIXES) - 1:
            n, exp = n // 1024, exp + 1
        return f"{sign}{n}{_BINARY_SUFFIXES[exp]}"
    nanos = -(-q.numerator * 10**9 // q.denominator)  # rounded up to a nano
    if nanos == 0:
        return "0"
    exp = -9
    while nanos % 1000 == 0 and exp < 18:
        nanos, exp = nanos // 1000, exp + 3
    return f"{sign}{nanos}{_DECIMAL_SUFFIXES[exp]}"


def add_quantities(values: list[Any]) -> str:
    """Sum of Kubernetes quantities, written with the largest suffix of the inputs that keeps
    it whole (``16Gi + 3Gi`` -> ``19Gi``; ``500m + 4`` -> ``4500m``): not canonical as
    :func:`format_quantity` is, but in the units the user wrote."""
    total = sum((parse_quantity(v) or Fraction(0) for v in values), Fraction(0))
    units: dict[str, Fraction] = {**_DECIMAL, **{k: Fraction(v) for k, v in _BINARY.items()}}
    suffixes = {m.group("bin") or m.group("dec") or "" for v in values if (m := _QUANTITY.match(str(v).strip()))}
    for suffix in sorted(suffixes | {"", "m"}, key=units.__getitem__, reverse=True):
        scaled = total / units[suffix]
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return str(float(total))


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """A pod template found in an object."""

    path: Path  # the JSON path of the template (``("spec", "template")``)
    metadata: dict[str, Any]
    spec: dict[str, Any]  # its pod spec
    replicas: int | None  # how many pods it makes (a DaemonSet: None, one per node)
    group: str  # its name in a multi-template object (``head``, a ``groupName``, ``submitter``, ``Worker``), or ""


def _template(obj: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    node = dig(obj, *path)
    if not isinstance(node, dict):
        return None
    # The dicts themselves (not copies), so a caller may edit the object through them.
    return as_mapping(node.get("metadata")), as_mapping(node.get("spec"))


def as_mapping(value: Any) -> dict[str, Any]:
    """A mapping field, or {} when it is missing or of another type (the schema reports that)."""
    return value if isinstance(value, dict) else {}


def as_int(value: Any, default: int = 0) -> int:
    """An integer field (not a bool), or ``default`` when it is missing or of another type."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ray_cluster_templates(spec: Any, at: Path) -> Iterator[PodTemplate]:
    if not isinstance(spec, dict):
        return
    found = _template(spec, ("headGroupSpec", "template"))
    if found:
        yield PodTemplate((*at, "headGroupSpec", "template"), found[0], found[1], 1, "head")
    groups = spec.get("workerGroupSpecs")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        found = _template(group, ("template",))
        if found and isinstance(group, dict):
            n = as_int(group.get("replicas"), as_int(group.get("minReplicas"), 1)) * as_int(group.get("numOfHosts"), 1)
            yield PodTemplate((*at, "workerGroupSpecs", i, "template"), found[0], found[1], n,
                              str(group.get("groupName", i)))


def pod_templates(obj: dict[str, Any]) -> list[PodTemplate]:
    """Every pod template of a workload object; [] for kinds that make no pods."""
    kind = obj.get("kind")
    spec = as_mapping(obj.get("spec"))
    out: list[PodTemplate] = []
    if kind == "Pod":
        out.append(PodTemplate((), as_mapping(obj.get("metadata")), spec, 1, ""))
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "DaemonSet", "Job"):
        found = _template(obj, ("spec", "template"))
        if found:  # a DaemonSet's pods: one per node (None)
            count = as_int(spec.get("parallelism" if kind == "Job" else "replicas"), 1) if kind != "DaemonSet" else None
            out.append(PodTemplate(("spec", "template"), *found, count, ""))
    elif kind == "CronJob":
        found = _template(obj, ("spec", "jobTemplate", "spec", "template"))
        if found:
            out.append(PodTemplate(("spec", "jobTemplate", "spec", "template"), *found,
                                   as_int(dig(spec, "jobTemplate", "spec", "parallelism"), 1), ""))
    elif kind == "RayCluster":
        out.extend(_ray_cluster_templates(spec, ("spec",)))
    elif kind == "RayJob":
        out.extend(_ray_cluster_templates(spec.get("rayClusterSpec"), ("spec", "rayClusterSpec")))
        found = _template(obj, ("spec", "submitterPodTemplate"))
        if found:
            out.append(PodTemplate(("spec", "submitterPodTemplate"), *found, 1, "submitter"))
    elif kind == "MPIJob":
        for role, rs in as_mapping(spec.get("mpiReplicaSpecs")).items():
            found = _template(rs, ("template",))
            if found and isinstance(rs, dict):
                out.append(PodTemplate(("spec", "mpiReplicaSpecs", role, "template"), *found,
                                       as_int(rs.get("replicas"), 1), role))
    return out


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """``repo[:tag][@digest]`` -> (repo, tag, digest). A ':' in the registry host is not a tag."""
    name, _, digest = image.partition("@")
    if ":" in name.rsplit("/", 1)[-1]:
        repo, tag = name.rsplit(":", 1)
        return repo, tag, digest or None
    return name, None, digest or None


def format_ref(kind: str, namespace: str | None, name: str) -> str:
    """``Kind namespace/name`` as kubectl prints it: ``Kind name`` without a namespace,
    ``document`` without a kind."""
    if not kind:
        return "document"
    who = f"{namespace}/{name}" if namespace else name
    return f"{kind} {who}" if who else kind


def object_ref(obj: dict[str, Any]) -> str:
    """:func:`format_ref` of an object: ``RayJob team/grpo-swe``, ``PriorityClass grpo-swe``."""
    meta = as_mapping(obj.get("metadata"))
    return format_ref(str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Whether a LabelSelector selects ``labels``. An empty selector selects everything;
    None selects nothing (as in NetworkPolicy/PDB semantics for a missing selector)."""
    if not isinstance(selector, dict):
        return False
    match_labels, expressions = selector.get("matchLabels") or {}, selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return False  # malformed (the schema says how): selects nothing
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    for expr in expressions:
        key, op, values = (expr.get("key"), expr.get("operator"), expr.get("values") or []) if isinstance(expr, dict) \
            else (None, None, None)
        if not isinstance(key, str) or not isinstance(op, str) or not isinstance(values, list):
            return False
        present = key in labels
        matched = {"In": labels.get(key) in values, "NotIn": not (present and labels[key] in values),
                   "Exists": present, "DoesNotExist": not present}
        if not matched.get(op, False):  # an unknown operator selects nothing
            return False
    return True


def containers(pod_spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(field, container) for every container of a pod spec: initContainers, containers,
    ephemeralContainers, in that order."""
    return [(field, c) for field in ("initContainers", "containers", "ephemeralContainers")
            if isinstance(items := pod_spec.get(field), list) for c in items if isinstance(c, dict)]


# --- resource requests (added for lint and plan) ---------------------------------------

# Extended resources that are GPUs, by device plugin (NVIDIA, AMD, Intel).
GPU = "nvidia.com/gpu"
GPU_RESOURCES = (GPU, "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe")


def is_extended_resource(name: str) -> bool:
    """A domain-prefixed resource outside ``*kubernetes.io/`` (``nvidia.com/gpu``): whole and never
    overcommitted (apimachinery's ``IsExtendedResourceName``, without its quota-name check)."""
    return "/" in name and "kubernetes.io/" not in name


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An object's ``status.conditions`` by type."""
    return {str(c.get("type")): c for c in as_mapping(obj.get("status")).get("conditions") or [] if isinstance(c, dict)}


def true_conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The conditions of ``obj`` whose status is True, by type."""
    return {kind: c for kind, c in conditions(obj).items() if c.get("status") == "True"}


def container_requests(container: dict[str, Any]) -> dict[str, Fraction]:
    """Requests of one container, as the API server defaults them: a resource with a
    limit but no request requests its limit. Unparseable quantities are skipped."""
    res = as_mapping(container.get("resources"))
    requests, limits = as_mapping(res.get("requests")), as_mapping(res.get("limits"))
    out: dict[str, Fraction] = {}
    for name, value in {**limits, **requests}.items():
        q = parse_quantity(value)
        if q is not None:
            out[str(name)] = q
    return out


def _add(into: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, Fraction(0)) + v


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Fraction]:
    """The effective requests of a pod, computed like the scheduler's NodeResourcesFit:
    max(sum of app containers + sidecars, each init container + the sidecars started
    before it) per resource, plus ``overhead``. Sidecars are init containers with
    ``restartPolicy: Always`` (Kubernetes >= 1.29)."""
    app: dict[str, Fraction] = {}
    sidecars: dict[str, Fraction] = {}
    peak: dict[str, Fraction] = {}
    for field, c in containers(pod_spec):  # the init containers first, in their order
        if field == "ephemeralContainers":
            continue  # they have no resources
        req = container_requests(c)
        if field == "containers":
            _add(app, req)
        elif c.get("restartPolicy") == "Always":  # a sidecar
            _add(sidecars, req)
        else:
            for k in set(req) | set(sidecars):
                peak[k] = max(peak.get(k, Fraction(0)), req.get(k, Fraction(0)) + sidecars.get(k, Fraction(0)))
    _add(app, sidecars)
    out = {k: max(app.get(k, Fraction(0)), peak.get(k, Fraction(0))) for k in set(app) | set(peak)}
    overhead = pod_spec.get("overhead")
    if isinstance(overhead, dict):
        _add(out, {str(k): q for k, v in overhead.items() if (q := parse_quantity(v)) is not None})
    return {k: out[k] for k in sorted(out)}


# Kinds in the order they must exist: the namespace, then cluster-scoped, then namespaced.
_REFERENCE_ORDER = ("Namespace", "PriorityClass", "WorkloadPriorityClass", "RuntimeClass", "StorageClass",
                    "LocalQueue", "ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim")
_CLUSTER_SCOPED = ("Namespace", "PriorityClass", "WorkloadPriorityClass", "RuntimeClass", "StorageClass")
# What an object's label names (Kueue's, kueue.QUEUE_LABEL and kueue.PRIORITY_LABEL): without the
# LocalQueue the Workload stays Inadmissible; without the WorkloadPriorityClass Kueue makes no
# Workload at all (its job reconciler errors, in its own log only) and the job stays suspended.
_LABEL_REFERENCES = {"kueue.x-k8s.io/queue-name": "LocalQueue",
                     "kueue.x-k8s.io/priority-class": "WorkloadPriorityClass"}
# The StorageClass a claim without storageClassName gets: the cluster's default (the
# DefaultStorageClass admission plugin sets it at creation); with none, the claim stays Pending
# ("no storage class is set") unless a PersistentVolume of no class binds it.
DEFAULT_STORAGE_CLASS = "(default)"


def _pod_references(spec: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(kind, name, how) of what one pod spec refers to by name (optional references left out)."""
    for field, kind in (("priorityClassName", "PriorityClass"), ("runtimeClassName", "RuntimeClass")):
        if spec.get(field):
            yield kind, str(spec[field]), field
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account and account != "default":
        yield "ServiceAccount", str(account), "serviceAccountName"
    for ref in spec.get("imagePullSecrets") or []:
        if isinstance(ref, dict) and ref.get("name"):
            yield "Secret", str(ref["name"]), "imagePullSecrets"
    for _, c in containers(spec):
        for e in c.get("env") or []:
            source = as_mapping(e.get("valueFrom")) if isinstance(e, dict) else {}
            for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                ref = source.get(key)
                if isinstance(ref, dict) and ref.get("name") and not ref.get("optional"):
                    yield kind, str(ref["name"]), f"key {ref.get('key')} (env {e.get('name')})"
        for e in c.get("envFrom") or []:
            for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                ref = e.get(key) if isinstance(e, dict) else None
                if isinstance(ref, dict) and ref.get("name") and not ref.get("optional"):
                    yield kind, str(ref["name"]), "envFrom"
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        for key, name, kind in (("persistentVolumeClaim", "claimName", "PersistentVolumeClaim"),
                                ("secret", "secretName", "Secret"), ("configMap", "name", "ConfigMap")):
            ref = as_mapping(v.get(key))
            if ref.get(name) and not ref.get("optional"):
                yield kind, str(ref[name]), f"volume {v.get('name')}"


def unheld_references(objects: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """What the objects' pods (and Kueue's labels) refer to that the objects do not hold, each once: (kind,
    namespace — empty for cluster-scoped kinds —, name, how it is used), the namespaces first,
    then cluster-scoped kinds, then namespaced ones (what must exist before a ``kubectl apply``
    of the objects; ``doctor`` looks each up)."""
    held = {(str(o.get("kind")), str(dig(o, "metadata", "namespace") or ""), str(dig(o, "metadata", "name")))
            for o in objects}
    found: dict[tuple[str, str, str], list[str]] = {}
    for obj in objects:
        meta = as_mapping(obj.get("metadata"))
        ns = str(meta.get("namespace") or "")
        if ns:
            found.setdefault(("Namespace", "", ns), [])
        labels = as_mapping(meta.get("labels"))
        named = [(kind, str(labels[label]), f"label {label}") for label, kind in _LABEL_REFERENCES.items()
                 if labels.get(label)]
        # A claim's class (not "": no class, bound to a static PV by name; none: the default class):
        # without the StorageClass or a PersistentVolume of that class the claim, and every pod
        # mounting it, stays Pending.
        storage_class = as_mapping(obj.get("spec")).get("storageClassName")
        if obj.get("kind") == "PersistentVolumeClaim" and storage_class != "":
            named.append(("StorageClass", str(storage_class or DEFAULT_STORAGE_CLASS),
                          f"storageClassName of claim {meta.get('name')}" if storage_class else
                          f"claim {meta.get('name')} (no storageClassName: the cluster's default class)"))
        for kind, name, how in [*named, *(r for t in pod_templates(obj) for r in _pod_references(t.spec))]:
            key = (kind, "" if kind in _CLUSTER_SCOPED else ns, name)
            uses = found.setdefault(key, [])
            if how not in uses:
                uses.append(how)
    missing = sorted((k for k in found if k not in held), key=lambda k: (_REFERENCE_ORDER.index(k[0]), k[1], k[2]))
    return [(kind, ns, name, "; ".join(found[kind, ns, name])) for kind, ns, name in missing]


def missing_references(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """:func:`unheld_references` as (``Kind namespace/name``, how it is used)."""
    return [(format_ref(kind, ns, name), how) for kind, ns, name, how in unheld_references(objects)]
