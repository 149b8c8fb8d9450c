"""Place every pod of a run on an inventory, the way the default scheduler filters nodes.

Pods are created in apply order (then head, worker groups, submitter inside a RayJob);
each is first admitted against the namespace's ResourceQuotas (a pod over quota is never
created: ``exceeded quota: ...``), then placed on the first node, in inventory order, that
passes every filter (first fit; the real scheduler scores feasible nodes and may pick
another, so node names are indicative, the fit verdict is what counts). A pod no node
takes gets the scheduler's FitError message. Priorities and preemption are not simulated.

Speed: a template's static filters run once per node; a node that fails a monotone filter
(resources, ports, anti-affinity: they only get worse as pods are added) is skipped for
the rest of the template's replicas, so identical replicas cost O(nodes + replicas).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dockyard_k8s.plan.inventory import Inventory, Node, PlacedPod, Quota, quota_of
from dockyard_k8s.plan.pods import Group, groups_of, missing_for_quota, quota_usage, scaled_replicas
from dockyard_k8s.plan.predicates import (
    PORTS,
    SPREAD,
    SPREAD_LABEL,
    Requirements,
    Spread,
    Topology,
    fit_error,
    resource_reasons,
    static_reason,
)
from dockyard_k8s.plan.units import format_amount


@dataclass
class GroupResult:
    group: Group
    nodes: list[str | None]  # node of each replica, None when pending
    reasons: list[str]  # why each pending replica is pending ("" when placed)

    @property
    def placed(self) -> int:
        return sum(1 for n in self.nodes if n is not None)

    @property
    def pending(self) -> int:
        return len(self.nodes) - self.placed


@dataclass
class PlanResult:
    groups: list[GroupResult]
    inventory: Inventory
    notes: list[str] = field(default_factory=list)

    @property
    def pods(self) -> int:
        return sum(len(g.nodes) for g in self.groups)

    @property
    def pending(self) -> int:
        return sum(g.pending for g in self.groups)

    @property
    def fits(self) -> bool:
        return self.pending == 0

    def gangs(self) -> dict[str, list[GroupResult]]:
        out: dict[str, list[GroupResult]] = {}
        for g in self.groups:
            if g.group.gang:
                out.setdefault(g.group.gang, []).append(g)
        return out

    @property
    def startable(self) -> bool:
        """Every pod of every GPU gang (head and worker groups) is placed."""
        return all(g.pending == 0 for groups in self.gangs().values() for g in groups)

    @property
    def exit_code(self) -> int:
        return 0 if self.fits else 1


def _pretty(values: dict[str, int], names: list[str]) -> str:
    """The quota admission plugin's prettyPrint: sorted ``name=quantity`` joined by commas."""
    return ",".join(f"{r}={format_amount(r, values.get(r, 0))}" for r in names)


def _quota_reason(quotas: list[Quota], group: Group, usage: dict[str, int]) -> str | None:
    for q in quotas:
        if q.namespace != group.namespace:
            continue
        tracked = set(q.hard)
        missing = missing_for_quota(group.spec, tracked)
        if missing:
            what = "; ".join(f"{r} for: {','.join(names)}" for r, names in sorted(missing.items()))
            return f"failed quota: {q.name}: must specify {what}"
        over = sorted(r for r in tracked & set(usage) if q.used.get(r, 0) + usage[r] > q.hard[r])
        if over:
            return (f"exceeded quota: {q.name}, requested: {_pretty(usage, over)}, used: {_pretty(q.used, over)}, "
                    f"limited: {_pretty(q.hard, over)}")
    return None


def _charge(quotas: list[Quota], group: Group, usage: dict[str, int]) -> None:
    for q in quotas:
        if q.namespace == group.namespace:
            for r in set(q.hard) & set(usage):
                q.used[r] = q.used.get(r, 0) + usage[r]


class _State:
    def __init__(self, nodes: list[Node], groups: list[Group]) -> None:
        keys = {str(t.get("topologyKey", "")) for g in groups for t in g.req.anti_affinity}
        keys |= {str(c.get("topologyKey", "")) for g in groups for c in g.req.spread}
        self.topology = Topology(nodes, keys)
        self.version = 0

    def place(self, node: Node, req: Requirements) -> PlacedPod:
        pod = req.placed()
        for k, v in req.requests.items():
            node.requested[k] = node.requested.get(k, 0) + v
        node.pods.append(pod)
        node.host_ports |= req.host_ports
        self.topology.add(node, pod)
        self.version += 1
        return pod

    def unplace(self, node: Node, req: Requirements, pod: PlacedPod) -> None:
        for k, v in req.requests.items():
            node.requested[k] = node.requested.get(k, 0) - v
        node.pods.remove(pod)
        node.host_ports -= req.host_ports
        self.topology.remove(node, pod)
        self.version += 1

    def dynamic_reasons(self, req: Requirements, node: Node, spread: Spread | None) -> list[str]:
        if req.host_ports & node.host_ports:  # NodePorts
            return [PORTS]
        short = resource_reasons(req, node)
        if short:
            return short
        if spread is not None and (why := spread.reason(node)):
            return [why]
        if (self.topology.anti or req.anti_affinity) and (why := self.topology.anti_affinity_reason(req, node)):
            return [why]
        return []


def plan(objects: list[dict[str, Any]], inventory: Inventory, *, atomic_gangs: bool = False) -> PlanResult:
    """Simulate the scheduling of every pod of ``objects`` on ``inventory`` (which it fills).

    ``atomic_gangs``: a gang that does not fully fit is rolled back, as a gang scheduler
    (Volcano, YuniKorn, Kueue) would bind none of its pods.
    """
    groups = groups_of(objects)
    by_ref = {(q.namespace, q.name): q for q in inventory.quotas}
    for q in (quota_of(o) for o in objects if o.get("kind") == "ResourceQuota"):  # the run's own: new limits
        live = by_ref.get((q.namespace, q.name))
        by_ref[(q.namespace, q.name)] = dataclasses.replace(live, hard=q.hard) if live else q
    quotas = list(by_ref.values())
    nodes = inventory.nodes
    state = _State(nodes, groups)
    notes = [f"{o.get('kind')} {(o.get('metadata') or {}).get('name')}: one pod per node, not planned"
             for o in objects if o.get("kind") == "DaemonSet"]
    notes += [f"{kind} {ns}/{name}: planned at {top} replicas, the most its ScaledObject may scale it to"
              for (ns, kind, name), top in scaled_replicas(objects).items()]
    last_of_gang = {g.gang: i for i, g in enumerate(groups) if g.gang}
    gang_pods: dict[str, list[tuple[GroupResult, int, Node, PlacedPod]]] = {}
    results: list[GroupResult] = []
    for gi, group in enumerate(groups):
        result = GroupResult(group, [None] * group.replicas, [""] * group.replicas)
        results.append(result)
        req = group.req
        statics = [static_reason(req, n) for n in nodes]
        candidates = [i for i, why in enumerate(statics) if why is None]
        dead = [False] * len(candidates)
        spread = Spread(req, nodes) if req.spread else None
        cursor, cached = 0, (-1, "")
        usage = quota_usage(group.spec)
        for idx in range(group.replicas):
            why = _quota_reason(quotas, group, usage)
            if why:
                result.reasons[idx] = why
                continue
            _charge(quotas, group, usage)
            chosen = None
            for j in range(cursor, len(candidates)):
                if dead[j]:
                    continue
                node = nodes[candidates[j]]
                blocked = state.dynamic_reasons(req, node, spread)
                if blocked:  # all but spreading are monotone: later replicas will not fit either
                    dead[j] = blocked[0] not in (SPREAD, SPREAD_LABEL)
                    continue
                chosen = node
                break
            while cursor < len(dead) and dead[cursor]:
                cursor += 1
            if chosen is None:
                if cached[0] != state.version:
                    counts = Counter(reason for static, node in zip(statics, nodes, strict=True)
                                     for reason in ([static] if static else state.dynamic_reasons(req, node, spread)))
                    cached = (state.version, fit_error(counts, len(nodes)))
                result.reasons[idx] = cached[1]
                continue
            pod = state.place(chosen, req)
            if spread is not None:
                spread.placed(chosen)
            result.nodes[idx] = chosen.name
            if group.gang:
                gang_pods.setdefault(group.gang, []).append((result, idx, chosen, pod))
        if atomic_gangs and group.gang and last_of_gang[group.gang] == gi:
            members = [r for r in results if r.group.gang == group.gang]
            total = sum(len(r.nodes) for r in members)
            placed = sum(r.placed for r in members)
            if placed < total:
                for member, idx, node, pod in gang_pods.get(group.gang, []):
                    state.unplace(node, member.group.req, pod)
                    member.nodes[idx] = None
                    member.reasons[idx] = (f"gang not admitted: only {placed}/{total} pods of {group.gang} fit, and a "
                                      "gang scheduler binds all of them or none")
    return PlanResult(results, inventory, notes)
