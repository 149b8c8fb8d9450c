"""Kueue's quota, as plain data: ClusterQueues and Cohorts as one tree of quota nodes.

Read from Kueue v0.19.2 (``pkg/cache/scheduler/resource_node.go``, ``apis/kueue/v1beta2``); no
code was copied. Every ClusterQueue and Cohort is a node with, per (flavor, resource):

* ``quotas``: nominal quota, borrowing limit, lending limit (None: no limit);
* ``subtree``: its own nominal plus what its children can lend (a child keeps
  ``subtree - lendingLimit`` to itself, its *local* quota);
* ``usage``: what its workloads use (a ClusterQueue), or what its children use past their local
  quota (a Cohort).

:func:`available` is what a ClusterQueue can still admit without preemption (its unused local
quota plus what the cohort can give, capped by the borrowing limit), :func:`potential_available`
the most it could ever have (everything else empty): a request above that can never fit
(``ExceedsMaxQuota``). Amounts are integers: millicores for cpu, base units otherwise.

Snapshots come from objects: :func:`snapshot_from_objects` reads ClusterQueue, Cohort,
ResourceFlavor, LocalQueue, Topology, WorkloadPriorityClass, PriorityClass, AdmissionCheck,
Namespace and Workload objects (``kubectl get ... -o yaml``, or the live cluster's), with usage
from admitted Workloads, else the ClusterQueues' ``status.flavorsReservation``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.kube import as_mapping, conditions, format_quantity, true_conditions
from dockyard_k8s.plan.inventory import items_of
from dockyard_k8s.plan.units import amounts

FR = tuple[str, str]  # (flavor, resource)


def kueue_amount(resource: str, amount: int) -> str:
    """An amount as Kueue prints it (``resources.ResourceQuantity``, then apimachinery's canonical
    text): cpu from millicores, DecimalSI (``16``, ``500m``); memory, ephemeral-storage and
    hugepages BinarySI (``64Gi``); the rest DecimalSI."""
    if resource == "cpu":
        return format_quantity(Fraction(amount, 1000))
    return format_quantity(amount, binary=resource in ("memory", "ephemeral-storage")
                           or resource.startswith("hugepages-"))


@dataclass
class ResourceQuota:
    nominal: int
    borrowing: int | None = None
    lending: int | None = None


@dataclass
class QuotaNode:
    """A ClusterQueue (``cq``) or a Cohort of the quota tree."""

    name: str
    cq: bool
    parent: QuotaNode | None = None
    quotas: dict[FR, ResourceQuota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    children: list[QuotaNode] = field(default_factory=list)

    def local_quota(self, fr: FR) -> int:
        """Capacity only this subtree sees (what the lending limit keeps from the parent)."""
        quota = self.quotas.get(fr)
        if quota is not None and quota.lending is not None:
            return max(0, self.subtree.get(fr, 0) - quota.lending)
        return 0

    def local_available(self, fr: FR) -> int:
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def parents(self) -> Iterator[QuotaNode]:
        """The cohorts above, nearest first."""
        walk = self.parent
        while walk is not None:
            yield walk
            walk = walk.parent

    def root(self) -> QuotaNode:
        return [self, *self.parents()][-1]


def available(node: QuotaNode, fr: FR) -> int:
    """What ``node`` can still use in ``fr``: local room plus the parent's, within the borrowing limit."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent = available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing is not None:
        local = node.local_quota(fr)
        stored = node.subtree.get(fr, 0) - local
        used_in_parent = max(0, node.usage.get(fr, 0) - local)
        parent = min(stored - used_in_parent + quota.borrowing, parent)
    return node.local_available(fr) + parent


def potential_available(node: QuotaNode, fr: FR) -> int:
    """The most ``node`` could use in ``fr`` if nothing else ran (borrowing limits hold)."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    avail = node.local_quota(fr) + potential_available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing is not None:
        avail = min(node.subtree.get(fr, 0) + quota.borrowing, avail)
    return avail


def add_usage(node: QuotaNode, fr: FR, value: int) -> None:
    """Charge ``value`` to ``node``; what its local quota cannot hold goes up to the cohort."""
    local = node.local_available(fr)
    node.usage[fr] = node.usage.get(fr, 0) + value
    if node.parent is not None and value > local:
        add_usage(node.parent, fr, value - local)


def remove_usage(node: QuotaNode, fr: FR, value: int) -> None:
    stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - value
    if stored_in_parent > 0 and node.parent is not None:
        remove_usage(node.parent, fr, min(value, stored_in_parent))


def borrowing_with(node: QuotaNode, fr: FR, value: int) -> bool:
    """Whether ``value`` more takes ``node`` past its own quota (a ClusterQueue's nominal quota, a Cohort's
    subtree quota): BorrowingWith."""
    return node.subtree.get(fr, 0) < node.usage.get(fr, 0) + value


def within_nominal(node: QuotaNode, frs: set[FR]) -> bool:
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def _accumulate(node: QuotaNode) -> None:
    """Subtree quota and usage of a cohort from its children (updateCohortResourceNode)."""
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    if node.cq:
        return
    node.usage = {}
    for child in node.children:
        _accumulate(child)
        for fr, value in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + value - child.local_quota(fr)
        for fr, value in child.usage.items():
            node.usage[fr] = node.usage.get(fr, 0) + max(0, value - child.local_quota(fr))


# --- the objects a plan reads ---------------------------------------------------------------------


@dataclass
class Flavor:
    name: str
    node_labels: dict[str, str]
    node_taints: list[dict[str, Any]]
    tolerations: list[dict[str, Any]]
    topology: str | None


@dataclass
class ClusterQueue:
    name: str
    node: QuotaNode
    groups: list[tuple[list[str], list[str]]]  # (covered resources, flavors in order)
    namespace_selector: dict[str, Any] | None  # None: no namespace matches (Kueue's default)
    preemption: dict[str, Any]
    fungibility: dict[str, Any]
    stop_policy: str
    admission_checks: list[str]
    cohort: str | None
    workloads: list[Admitted] = field(default_factory=list)

    def group_of(self, resource: str) -> tuple[list[str], list[str]] | None:
        return next((group for group in self.groups if resource in group[0]), None)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A workload holding quota in a ClusterQueue (a preemption candidate)."""

    name: str
    namespace: str
    cluster_queue: str
    priority: int
    usage: dict[FR, int]
    reserved_at: str = ""  # QuotaReserved's lastTransitionTime (RFC 3339 sorts as text); "": admitted now
    evicted: bool = False  # an Evicted condition is True: being preempted already
    uid: str = ""
    queued_at: str = ""  # its queue-order time (queue_order_time); "": none known


def queue_order_time(wl: dict[str, Any]) -> str:
    """GetQueueOrderTimestamp (Kueue's default configuration): when an Evicted condition by
    PodsReadyTimeout or AdmissionCheck is True, its time; else the Workload's creationTimestamp."""
    evicted = conditions(wl).get("Evicted") or {}
    if evicted.get("status") == "True" and evicted.get("reason") in ("PodsReadyTimeout", "AdmissionCheck"):
        return str(evicted.get("lastTransitionTime") or "")
    return str(as_mapping(wl.get("metadata")).get("creationTimestamp") or "")


@dataclass
class Snapshot:
    flavors: dict[str, Flavor] = field(default_factory=dict)
    queues: dict[str, ClusterQueue] = field(default_factory=dict)
    cohorts: dict[str, QuotaNode] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (ns, name) -> object
    topologies: dict[str, list[str]] = field(default_factory=dict)  # name -> level labels, top first
    workload_priorities: dict[str, int] = field(default_factory=dict)
    pod_priorities: dict[str, int] = field(default_factory=dict)
    default_priority: int = 0
    admission_checks: dict[str, str] = field(default_factory=dict)  # name -> controllerName
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    workloads: list[dict[str, Any]] = field(default_factory=list)  # every Workload object read
    usage_source: str = ""


def _kueue(obj: dict[str, Any], kind: str) -> bool:
    return obj.get("kind") == kind and str(obj.get("apiVersion", "")).startswith(kueue.GROUP + "/")


def _amount(resource: str, value: Any, where: str, problems: list[ConfigProblem]) -> int:
    return amounts({resource: value}, where, problems).get(resource, 0)


def _groups(spec: dict[str, Any], node: QuotaNode, where: str, problems: list[ConfigProblem]
            ) -> list[tuple[list[str], list[str]]]:
    out = []
    for rg in spec.get("resourceGroups") or []:
        rg = as_mapping(rg)
        covered = [str(r) for r in rg.get("coveredResources") or []]
        flavors = []
        for fq in rg.get("flavors") or []:
            fq = as_mapping(fq)
            flavor = str(fq.get("name", ""))
            flavors.append(flavor)
            for rq in fq.get("resources") or []:
                rq = as_mapping(rq)
                res = str(rq.get("name", ""))
                at = f"{where} flavor {flavor}"
                borrowing, lending = rq.get("borrowingLimit"), rq.get("lendingLimit")
                node.quotas[(flavor, res)] = ResourceQuota(
                    _amount(res, rq.get("nominalQuota", 0), at, problems),
                    None if borrowing is None else _amount(res, borrowing, at, problems),
                    None if lending is None else _amount(res, lending, at, problems))
        out.append((covered, flavors))
    return out


def holds_quota(wl: dict[str, Any]) -> bool:
    """A Workload that has quota reserved and has not finished."""
    if not as_mapping(as_mapping(wl.get("status")).get("admission")):
        return False
    reserved = conditions(wl).get("QuotaReserved")
    return "Finished" not in true_conditions(wl) and (reserved is None or reserved.get("status") == "True")


def workload_usage(wl: dict[str, Any], problems: list[ConfigProblem]) -> dict[FR, int]:
    """(flavor, resource) -> amount a Workload's admission reserves."""
    out: dict[FR, int] = {}
    meta = as_mapping(wl.get("metadata"))
    where = f"Workload {meta.get('namespace')}/{meta.get('name')}"
    for psa in as_mapping(as_mapping(wl.get("status")).get("admission")).get("podSetAssignments") or []:
        psa = as_mapping(psa)
        flavors = as_mapping(psa.get("flavors"))
        for res, value in as_mapping(psa.get("resourceUsage")).items():
            flavor = flavors.get(res)
            if flavor is not None:
                fr = (str(flavor), str(res))
                out[fr] = out.get(fr, 0) + _amount(str(res), value, where, problems)
    return out


def snapshot_from_objects(objects: list[dict[str, Any]], source: str = "--kueue") -> Snapshot:
    """A quota snapshot of Kueue objects (lists or single objects; other kinds are ignored).

    Raises:
        ConfigError: an unreadable quantity, or a cohort tree with a cycle.
    """
    items = items_of(objects)
    problems: list[ConfigProblem] = []
    snap = Snapshot()
    for o in items:
        meta, spec = as_mapping(o.get("metadata")), as_mapping(o.get("spec"))
        name = str(meta.get("name", ""))
        if _kueue(o, "ResourceFlavor"):
            snap.flavors[name] = Flavor(name, {str(k): str(v) for k, v in as_mapping(spec.get("nodeLabels")).items()},
                                        [t for t in spec.get("nodeTaints") or [] if isinstance(t, dict)],
                                        [t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
                                        spec.get("topologyName") or None)
        elif _kueue(o, "Topology"):
            snap.topologies[name] = [str(as_mapping(lv).get("nodeLabel", "")) for lv in spec.get("levels") or []]
        elif _kueue(o, "LocalQueue"):
            snap.local_queues[(str(meta.get("namespace") or "default"), name)] = o
        elif _kueue(o, "WorkloadPriorityClass"):
            snap.workload_priorities[name] = int(o.get("value") or 0)
        elif o.get("kind") == "PriorityClass":
            snap.pod_priorities[name] = int(o.get("value") or 0)
            if o.get("globalDefault"):
                snap.default_priority = int(o.get("value") or 0)
        elif _kueue(o, "AdmissionCheck"):
            snap.admission_checks[name] = str(spec.get("controllerName", ""))
        elif o.get("kind") == "Namespace" and o.get("apiVersion") == "v1":
            snap.namespaces[name] = {str(k): str(v) for k, v in as_mapping(meta.get("labels")).items()}
        elif _kueue(o, "Workload"):
            snap.workloads.append(o)
        elif _kueue(o, "Cohort"):
            node = snap.cohorts.setdefault(name, QuotaNode(name, False))
            _groups(spec, node, f"{source}: Cohort {name}", problems)
            parent = spec.get("parentName")
            if parent:
                node.parent = snap.cohorts.setdefault(str(parent), QuotaNode(str(parent), False))
        elif _kueue(o, "ClusterQueue"):
            node = QuotaNode(name, True)
            groups = _groups(spec, node, f"{source}: ClusterQueue {name}", problems)
            cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta2, v1beta1
            selector = spec.get("namespaceSelector")
            checks = [str(c) for c in spec.get("admissionChecks") or []]
            checks += [str(as_mapping(c).get("name")) for c in
                       as_mapping(spec.get("admissionChecksStrategy")).get("admissionChecks") or []]
            snap.queues[name] = ClusterQueue(
                name, node, groups, selector if isinstance(selector, dict) else None,
                as_mapping(spec.get("preemption")), as_mapping(spec.get("flavorFungibility")),
                str(spec.get("stopPolicy") or "None"), checks, str(cohort) if cohort else None)
    for cq in snap.queues.values():
        if cq.cohort:
            cq.node.parent = snap.cohorts.setdefault(cq.cohort, QuotaNode(cq.cohort, False))
    for node in snap.cohorts.values():
        seen = {id(node)}
        for walk in node.parents():
            if id(walk) in seen:
                problems.append(ConfigProblem(source, 0, 0, "", f"Cohort {node.name}: the cohort tree has a cycle"))
                node.parent = None
                break
            seen.add(id(walk))
    nodes = [cq.node for cq in snap.queues.values()] + list(snap.cohorts.values())
    for node in nodes:
        if node.parent is not None:
            node.parent.children.append(node)
    _set_usage(snap, items, problems, source)
    for root in {id(n.root()): n.root() for n in nodes}.values():
        _accumulate(root)
    if problems:
        raise ConfigError(problems)
    return snap


def _set_usage(snap: Snapshot, items: list[dict[str, Any]], problems: list[ConfigProblem], source: str) -> None:
    """ClusterQueue usage: the admitted Workloads when any Workload was given, else the queues' status."""
    if snap.workloads:
        held = [w for w in snap.workloads if holds_quota(w)]
        snap.usage_source = f"{len(held)} admitted Workload(s)"
        for wl in held:
            meta = as_mapping(wl.get("metadata"))
            cq = snap.queues.get(str(as_mapping(as_mapping(wl.get("status")).get("admission")).get("clusterQueue")))
            if cq is None:
                continue
            usage = workload_usage(wl, problems)
            for fr, value in usage.items():
                cq.node.usage[fr] = cq.node.usage.get(fr, 0) + value
            priority = as_mapping(wl.get("spec")).get("priority")
            since, evicted = conditions(wl).get("QuotaReserved") or {}, conditions(wl).get("Evicted") or {}
            cq.workloads.append(Admitted(str(meta.get("name")), str(meta.get("namespace") or "default"), cq.name,
                                         int(priority) if isinstance(priority, int) else 0, usage,
                                         str(since.get("lastTransitionTime") or ""), evicted.get("status") == "True",
                                         str(meta.get("uid") or ""), queue_order_time(wl)))
        return
    with_status = 0
    for o in items:
        if not _kueue(o, "ClusterQueue"):
            continue
        cq = snap.queues[str(as_mapping(o.get("metadata")).get("name", ""))]
        status = as_mapping(o.get("status"))
        reserved = status.get("flavorsReservation") or status.get("flavorsUsage") or []
        with_status += bool(reserved)
        for entry in reserved:
            per_flavor = as_mapping(entry)
            for item in per_flavor.get("resources") or []:
                used = as_mapping(item)
                res = str(used.get("name", ""))
                key = (str(per_flavor.get("name", "")), res)
                amount = _amount(res, used.get("total", 0), f"{source}: ClusterQueue {cq.name}", problems)
                cq.node.usage[key] = cq.node.usage.get(key, 0) + amount
    snap.usage_source = (f"status.flavorsReservation of {with_status} ClusterQueue(s)" if with_status
                         else "none given (every ClusterQueue empty)")
