"""The nodes a plan places pods on, and what is already running on them.

Three sources, one shape (:class:`Inventory`):

* :func:`from_pools` — the infra spec's ``plan.nodePools`` (count x instance type, the
  catalogue or ``plan.instanceTypes``);
* :func:`from_objects` — ``kubectl get nodes -o yaml`` (and optionally ``kubectl get pods
  -A -o yaml`` and ResourceQuotas) read from files;
* :func:`inventory_from_cluster` — the same objects fetched by the live path (``live/``
  calls it with what the API returned; nothing here talks to a cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dockyard_k8s.config.platforms import GPU_PRESENT_LABEL
from dockyard_k8s.errors import ClusterError, ConfigError, ConfigProblem
from dockyard_k8s.kube import containers, pod_requests
from dockyard_k8s.plain import Path, format_path, show
from dockyard_k8s.plan import catalog
from dockyard_k8s.plan.units import amounts, parse_units, to_units
from dockyard_k8s.suggest import did_you_mean

# (an object of the inventory, a path in it, what is wrong) -> the problem, at its file:line
Locate = Callable[[dict[str, Any], Path, str], ConfigProblem]

HOSTNAME = "kubernetes.io/hostname"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# Labels that name a node's pool on common platforms, tried in order.
POOL_LABELS = ("eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool", "cloud.google.com/gke-nodepool",
               "kubernetes.azure.com/agentpool", "dockyard-k8s/pool", INSTANCE_TYPE)


@dataclass(frozen=True, slots=True)
class PlacedPod:
    """A pod on a node (existing or simulated), as affinity and spread rules see it."""

    namespace: str
    labels: dict[str, str]
    anti_affinity: list[dict[str, Any]]  # required terms


@dataclass(eq=False)
class Node:
    """A node, and what the simulation has placed on it so far (``requested``, ``pods`` and
    ``host_ports`` grow as pods are placed): state, not a value."""

    name: str
    pool: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    pods: list[PlacedPod] = field(default_factory=list)
    host_ports: set[tuple[str, int]] = field(default_factory=set)

    def __repr__(self) -> str:
        return f"Node({self.name!r}, pool={self.pool!r}, pods={len(self.pods)})"


@dataclass(frozen=True, slots=True)
class Quota:
    """A namespace ResourceQuota: hard limits and what is already used (scheduler units)."""

    name: str
    namespace: str
    hard: dict[str, int]
    used: dict[str, int]


@dataclass(frozen=True, slots=True)
class Inventory:
    nodes: list[Node]
    quotas: list[Quota]
    source: str  # how it was built, for the report

    def pools(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            out.setdefault(n.pool, []).append(n)
        return out


def known_type(name: str, plan: Mapping[str, Any]) -> bool:
    """An instance type of the catalogue or of the infra spec's ``plan.instanceTypes``."""
    return name in catalog.AWS or name in catalog.EXPLICIT or name in (plan.get("instanceTypes") or {})


def pool_problems(section: Mapping[str, Any]) -> list[tuple[Path, str]]:
    """What is wrong in the infra spec's ``plan`` section beyond its schema, as (path under
    ``plan``, message): the loader reports each at its file:line:col, so ``check`` and ``plan``
    refuse it alike. An unknown instance type in a pool, a quantity that is none."""
    out: list[tuple[Path, str]] = []
    custom = section.get("instanceTypes") or {}
    for itype, spec in custom.items():
        for k, v in ((spec or {}).get("allocatable") or {}).items():
            if parse_units(str(k), v) is None:
                out.append((("instanceTypes", itype, "allocatable", k),
                            f"got {show(v)}, expected a Kubernetes quantity like 4, 500m or 16Gi"))
    for i, pool in enumerate(section.get("nodePools") or []):
        itype = str(pool.get("instanceType"))
        if not known_type(itype, section):
            hint = did_you_mean(itype, [*catalog.names(), *custom])
            out.append((("nodePools", i, "instanceType"),
                        f"unknown instance type {show(itype)} (expected one of the catalogue: `dockyard-k8s plan "
                        f"--list-instance-types`, or a name under plan.instanceTypes){hint}"))
    return out


def from_pools(section: dict[str, Any]) -> Inventory:
    """Nodes of the infra spec's ``plan`` section (the loader has reported :func:`pool_problems`
    at their lines; a caller that did not load it gets them here).

    Raises:
        ConfigError: an unknown instance type or a bad quantity.
    """
    file = "<infra spec>"
    problems = [ConfigProblem(file, 0, 0, format_path(("plan", *path)), message)
                for path, message in pool_problems(section)]
    if problems:
        raise ConfigError(problems)
    custom = section.get("instanceTypes") or {}
    nodes: list[Node] = []
    for pool in section.get("nodePools") or []:
        name, itype = str(pool.get("name")), str(pool.get("instanceType"))
        root_bytes = parse_units("ephemeral-storage", pool.get("rootVolume"))  # None: none given
        labels = {INSTANCE_TYPE: itype, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        if itype in custom:
            alloc = amounts(custom[itype].get("allocatable") or {}, file, problems)
            labels.update(custom[itype].get("labels") or {})
        elif itype in catalog.AWS:
            alloc = catalog.eks_allocatable(catalog.AWS[itype], root_bytes or 20 * catalog.GI)
            root_bytes = None
        else:
            alloc = amounts(catalog.EXPLICIT[itype], file, problems)
        if root_bytes is not None:  # explicit types: a rootVolume overrides their ephemeral-storage
            alloc["ephemeral-storage"] = root_bytes - root_bytes // 10 - catalog.GI
        if alloc.get(catalog.GPU, 0) > 0:  # as the NVIDIA GPU operator's feature discovery labels a GPU node
            labels.setdefault(GPU_PRESENT_LABEL, "true")
        for j in range(int(pool.get("count", 1))):
            node_name = f"{name}-{j}"
            nodes.append(Node(node_name, name, {**labels, **(pool.get("labels") or {}), HOSTNAME: node_name},
                              list(pool.get("taints") or []), False, dict(alloc)))
    counts = ", ".join(f"{p.get('name')} {p.get('count', 1)} x {p.get('instanceType')}"
                       for p in section.get("nodePools") or [])
    return Inventory(nodes, [], f"plan.nodePools ({counts})")


def items_of(objects: Iterable[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    """The objects, a ``*List``'s items in its place (an API list's items may carry no kind: the
    list's); with ``kind``, only those of that kind."""
    out = []
    for o in objects:
        if str(o.get("kind", "")).endswith("List"):
            items = o["items"] if isinstance(o.get("items"), list) else []
            out += [i for i in items if isinstance(i, dict) and kind in (None, i.get("kind", kind))]
        elif kind in (None, o.get("kind")):
            out.append(o)
    return out


def pod_units(spec: dict[str, Any]) -> dict[str, int]:
    """A pod's effective requests in scheduler units."""
    return {k: to_units(k, v) for k, v in pod_requests(spec).items() if v}


def required_anti_affinity(spec: dict[str, Any]) -> list[dict[str, Any]]:
    aff = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    terms = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, dict)]


def host_ports(spec: dict[str, Any]) -> set[tuple[str, int]]:
    """The (protocol, hostPort) pairs a pod's containers claim (the API gives ephemeral ones no ports)."""
    return {(str(p.get("protocol", "TCP")), int(p["hostPort"])) for _, c in containers(spec)
            for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")}


def from_objects(objects: Iterable[dict[str, Any]], source: str = "--nodes", *, live: bool = False,
                 locate: Locate | None = None) -> Inventory:
    """Nodes (``kubectl get nodes -o yaml``), the pods already bound to them (``kubectl get
    pods -A -o yaml``: their requests are subtracted, their labels count for affinity and
    spread) and ResourceQuotas with their ``status.used``. Lists or single objects.
    ``live``: the objects are what a cluster listed (``source`` names it). ``locate`` places a
    problem of an object read from a file at its line.

    Raises:
        ConfigError: no Node among the files' objects, or a node with unreadable allocatable.
        ClusterError: the live cluster lists no node.
    """
    objects = list(objects)
    problems: list[ConfigProblem] = []
    nodes: list[Node] = []
    for o in items_of(objects, "Node"):
        meta = o.get("metadata") or {}
        name = str(meta.get("name", ""))
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        labels.setdefault(HOSTNAME, name)
        status = o.get("status") or {}
        part = "allocatable" if status.get("allocatable") else "capacity"
        found: list[ConfigProblem] = []
        alloc = amounts(status.get(part) or {}, f"{source}: Node {name}", found)
        problems += found if locate is None else [locate(o, ("status", part, p.path), p.message) for p in found]
        pool = next((labels[k] for k in POOL_LABELS if k in labels), "nodes")
        spec = o.get("spec") or {}
        nodes.append(Node(name, pool, labels, list(spec.get("taints") or []), bool(spec.get("unschedulable")), alloc))
    if not nodes and not problems:
        if live:
            raise ClusterError(f"{source}: the cluster reports no nodes, so no pod of the run can be placed (check "
                               "its node pools with `kubectl get nodes`; a managed cluster may be scaled to zero)")
        problems.append(ConfigProblem(source, 0, 0, "", "no Node objects found (expected the output of "
                                                        "`kubectl get nodes -o yaml`)"))
    by_name = {n.name: n for n in nodes}
    for p in items_of(objects, "Pod"):
        spec = p.get("spec") or {}
        host = by_name.get(str(spec.get("nodeName") or ""))
        phase = (p.get("status") or {}).get("phase")
        if host is None or phase in ("Succeeded", "Failed"):
            continue
        meta = p.get("metadata") or {}
        for k, v in pod_units(spec).items():
            host.requested[k] = host.requested.get(k, 0) + v
        host.pods.append(PlacedPod(str(meta.get("namespace") or "default"),
                                   {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
                                   required_anti_affinity(spec)))
        host.host_ports |= host_ports(spec)
    quotas = [quota_of(q, problems) for q in items_of(objects, "ResourceQuota")]
    if problems:
        raise ConfigError(problems)
    return Inventory(nodes, quotas, source)


def quota_of(obj: dict[str, Any], problems: list[ConfigProblem] | None = None) -> Quota:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    sink: list[ConfigProblem] = [] if problems is None else problems
    where = f"ResourceQuota {meta.get('name')}"
    hard = amounts((obj.get("spec") or {}).get("hard") or {}, where, sink)
    used = amounts(status.get("used") or {}, where, sink)
    return Quota(str(meta.get("name", "")), str(meta.get("namespace") or "default"), hard, used)


def inventory_from_cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                           quotas: list[dict[str, Any]] | None = None) -> Inventory:
    """The live path's entry point: Node, Pod and ResourceQuota objects as the API returned
    them (plain dicts, e.g. ``kubectl get -o json`` items or a client's ``to_dict()``)."""
    return from_objects([*nodes, *pods, *(quotas or [])], source="live cluster", live=True)

