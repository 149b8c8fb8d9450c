"""Plan results as text (per group, then pending reasons, then the verdict) or JSON."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dockyard_k8s.plan.catalog import GPU
from dockyard_k8s.plan.inventory import Node
from dockyard_k8s.plan.schedule import GroupResult, PlanResult
from dockyard_k8s.plan.units import format_amount

OK, FAIL = "✔", "✖"


def _where(g: GroupResult, pool_of: dict[str, str], wide: bool) -> str:
    placed = [n for n in g.nodes if n is not None]
    if not placed:
        return "-"
    if wide:
        return ",".join(placed)
    counts = Counter(pool_of[n] for n in placed)
    return ", ".join(f"{pool} x{c}" for pool, c in sorted(counts.items()))


def verdict(result: PlanResult) -> str:
    if result.fits:
        gangs = result.gangs()
        extra = f"; the GPU gang{'s' if len(gangs) > 1 else ''} can start" if gangs else ""
        return f"{OK} fits: all {result.pods} pods placed{extra}"
    lines = [f"{FAIL} does not fit: {result.pending} of {result.pods} pods pending"]
    for gang, groups in result.gangs().items():
        short = [f"{g.group.template} {g.placed}/{len(g.nodes)}" for g in groups if g.pending]
        if short:
            lines.append(f"  {gang} cannot start: {', '.join(short)} placed "
                         "(every GPU group must be fully placed)")
    return "\n".join(lines)


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def _human(resource: str, nodes: list[Node]) -> str:
    """What ``nodes`` have placed of ``resource``, out of their allocatable: ``used/total`` in cores, GiB or devices."""
    used = sum(n.requested.get(resource, 0) for n in nodes)
    total = sum(n.allocatable.get(resource, 0) for n in nodes)
    if resource == "cpu":
        return f"{used / 1000:g}/{total / 1000:g}"
    if resource in ("memory", "ephemeral-storage"):
        return f"{used / 2**30:.1f}/{total / 2**30:.1f}Gi"
    return f"{used}/{total}"


def text(result: PlanResult, wide: bool = False, *, with_verdict: bool = True) -> str:
    pools = result.inventory.pools()
    pool_of = {n.name: p for p, nodes in pools.items() for n in nodes}
    lines = [f"inventory: {len(result.inventory.nodes)} nodes from {result.inventory.source}"]
    lines += table([["GROUP", "PODS", "GPU/POD", "PLACED", "PENDING", "WHERE"],
                    *([g.group.name, str(len(g.nodes)), str(g.group.gpus), str(g.placed), str(g.pending),
                       _where(g, pool_of, wide)] for g in result.groups)])
    pending = [(g, reason, n) for g in result.groups
               for reason, n in sorted(Counter(r for r, node in zip(g.reasons, g.nodes, strict=True)
                                               if node is None).items())]
    if pending:
        lines.append("pending")
        lines += [f"  {g.group.name}: {n} pod{'s' if n > 1 else ''}: {reason}" for g, reason, n in pending]
    lines.append("requested / allocatable after placement")
    lines += table([["POOL", "NODES", "PODS", "CPU", "MEMORY", "GPU"],
                    *([pool, str(len(nodes)), str(sum(len(n.pods) for n in nodes)),
                       *(_human(r, nodes) for r in ("cpu", "memory", GPU))] for pool, nodes in pools.items())])
    lines += [f"note: {n}" for n in result.notes]
    lines += [verdict(result)] if with_verdict else []
    return "\n".join(lines) + "\n"


def as_json(result: PlanResult) -> dict[str, Any]:
    return {
        "fits": result.fits,
        "startable": result.startable,
        "pods": result.pods,
        "pending": result.pending,
        "inventory": {"source": result.inventory.source, "nodes": len(result.inventory.nodes),
                      "pools": {p: len(n) for p, n in result.inventory.pools().items()}},
        "groups": [{
            "name": g.group.name, "object": g.group.object, "template": g.group.template,
            "namespace": g.group.namespace, "gpusPerPod": g.group.gpus, "gang": g.group.gang,
            "pods": len(g.nodes), "placed": g.placed, "pending": g.pending,
            "nodes": g.nodes, "reasons": g.reasons,
        } for g in result.groups],
        "nodes": [{"name": n.name, "pool": n.pool, "pods": len(n.pods),
                   "requested": {k: format_amount(k, v) for k, v in sorted(n.requested.items()) if v},
                   "allocatable": {k: format_amount(k, v) for k, v in sorted(n.allocatable.items())}}
                  for n in result.inventory.nodes],
        "notes": result.notes,
        "exitCode": result.exit_code,
    }
