"""Does each pod fit one node of the instance type it declares? ``plan``'s filters, for ``check``.

A pod template that selects ``node.kubernetes.io/instance-type: T`` can only run on a node of
type ``T``; if one empty node of that type cannot take it (too much cpu, memory or GPUs, a
node selector those nodes do not carry, a taint of the pool it does not tolerate), the run
will never start, whatever the cluster's size. ``check`` reports that before anything is
applied, with the same node model ``plan`` uses: the catalogue (or ``plan.instanceTypes``)
for the allocatable, and the labels, taints and root volume of a ``plan.nodePools`` pool of
that type when one is declared (without one, other labels and the disk are not judged). How
many nodes there are is ``plan``'s question, not this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dockyard_k8s.kube import as_mapping, container_requests, pod_requests, pod_templates
from dockyard_k8s.plain import Path
from dockyard_k8s.plan import catalog
from dockyard_k8s.plan.inventory import INSTANCE_TYPE, Node, from_pools, known_type, pod_units
from dockyard_k8s.plan.predicates import Requirements, resource_reasons, static_reason, untolerated_taint
from dockyard_k8s.plan.units import format_amount, parse_units, to_units
from dockyard_k8s.render.meta import FLEET_LABEL as FLEET


@dataclass(frozen=True, slots=True)
class Misfit:
    """A pod template of object ``index`` that no node of its instance type can take."""

    object_index: int
    path: Path  # the field to blame (a container's request, a node selector key, the tolerations)
    message: str


def _nodes(itype: str, plan: Mapping[str, Any], req: Requirements) -> list[Node]:
    """One empty node per ``plan.nodePools`` pool of this type (its labels, taints and root
    volume), else one node of the catalogue: it carries the labels every node of the type has
    (instance type, os, arch, hostname) and, since nothing says otherwise, any other label the
    pod selects, and as much ephemeral-storage as it asks (that depends on the root volume
    each node group chooses); ``req`` then drops the node affinity it cannot judge."""
    pools = [{**p, "count": 1} for p in plan.get("nodePools") or [] if p.get("instanceType") == itype]
    nodes = from_pools({"nodePools": pools or [{"name": "fit", "instanceType": itype, "count": 1}],
                        "instanceTypes": plan.get("instanceTypes") or {}}).nodes
    if pools:
        return nodes
    req.affinity_terms = None  # labels of the type's nodes beyond the catalogue's are unknown
    node = nodes[0]
    node.labels = {**{k: v for k, v in req.node_selector.items() if k not in node.labels}, **node.labels}
    node.allocatable["ephemeral-storage"] = max(node.allocatable.get("ephemeral-storage", 0),
                                                req.requests.get("ephemeral-storage", 0))
    return [node]


def misfits(objects: list[dict[str, Any]], plan: Mapping[str, Any]) -> list[Misfit]:
    """Every pod template (with replicas) that cannot run on one node of its declared type."""
    out: list[Misfit] = []
    for index, obj in enumerate(objects):
        for t in pod_templates(obj):
            itype = str(as_mapping(t.spec.get("nodeSelector")).get(INSTANCE_TYPE) or "")
            if t.replicas is None or not itype or not known_type(itype, plan):
                continue
            ns = str((obj.get("metadata") or {}).get("namespace") or "default")
            labels = {str(k): str(v) for k, v in (t.metadata.get("labels") or {}).items()}
            req = Requirements.from_pod(t.spec, labels, ns, pod_units(t.spec))
            nodes = _nodes(itype, plan, req)
            verdicts = [(node, static_reason(req, node), resource_reasons(req, node)) for node in nodes]
            if any(reason is None and not short for _, reason, short in verdicts):
                continue
            node, reason, short = verdicts[0]
            said = "`plan` would say: 0/1 nodes are available: "
            if reason is not None:
                out.append(_blame_node(index, t.path, req, node, itype, f"{said}1 {reason}"))
            # each resource that does not fit, at the request that asks for it
            out += [_blame_request(index, t.path, t.spec, req, node, itype, one, said + ", ".join(short))
                    for one in short]
    return out


def _blame_node(index: int, at: Path, req: Requirements, node: Node, itype: str, said: str) -> Misfit:
    """The misfit of a pod the node's labels or taints refuse."""
    for key, value in req.node_selector.items():
        if node.labels.get(key) != value:
            # (the catalogue's node carries every label the pod selects: a missing one is a pool's)
            where = f"a {itype} node has {key}={node.labels[key]}" if key in node.labels else \
                f"the {itype} pool {node.pool} of plan.nodePools does not carry this label (add it to the " \
                f"pool's labels if its nodes have it)"
            return Misfit(index, (*at, "spec", "nodeSelector", key),
                          f"{key}={value}: {where}, so the pod never schedules ({said})")
    if (taint := untolerated_taint(node.taints, req.tolerations)) is not None:  # as TaintToleration reports it
        return Misfit(index, (*at, "spec", "tolerations"),
                      f"the pod does not tolerate the taint {taint.get('key')}={taint.get('value', '')}:"
                      f"{taint.get('effect')} of the {itype} pool ({said})")
    return Misfit(index, (*at, "spec", "affinity"), f"no {itype} node matches the pod's node affinity ({said})")


def _blame_request(index: int, at: Path, spec: dict[str, Any], req: Requirements, node: Node, itype: str,
                   short: str, said: str) -> Misfit:
    """The misfit of a pod one of whose requests (``short``: NodeResourcesFit's reason) one node cannot hold."""
    resource = short.removeprefix("Insufficient ") if short.startswith("Insufficient ") else "pods"
    wanted = req.requests.get(resource, 0)
    have = node.allocatable.get(resource, 0)
    containers = spec.get("containers") or []
    amounts = [to_units(resource, container_requests(c).get(resource, Fraction(0))) if isinstance(c, dict) else 0
               for c in containers]
    j = max(range(len(amounts)), key=amounts.__getitem__) if amounts else 0
    return Misfit(index, (*at, "spec", "containers", j, "resources", "requests", resource),
                  f"the pod requests {resource} {format_amount(resource, wanted)}, but one {itype} node has "
                  f"{format_amount(resource, have)} allocatable, so it never schedules ({said})")


@dataclass(frozen=True, slots=True)
class Unchecked:
    """A GPU pod template the one-node fit test cannot judge: it selects no instance type the
    catalogue or ``plan.instanceTypes`` knows."""

    object_index: int
    group: str  # the fleet label (head, trainer...), or "job" for launch.mode job's one pod
    gpus: int  # GPUs one pod asks for (every */gpu resource)
    instance_type: str  # what it selects ("" for none)


def unchecked(objects: list[dict[str, Any]], plan: Mapping[str, Any]) -> list[Unchecked]:
    """Every GPU pod template (with replicas) that :func:`misfits` cannot test: without a known
    instance type, which node the pod needs is the cluster's to say."""
    out: list[Unchecked] = []
    for index, obj in enumerate(objects):
        for t in pod_templates(obj):
            itype = str(as_mapping(t.spec.get("nodeSelector")).get(INSTANCE_TYPE) or "")
            if not t.replicas or (itype and known_type(itype, plan)):
                continue
            gpus = sum(v for k, v in pod_requests(t.spec).items() if k.endswith("/gpu"))
            if gpus <= 0:
                continue
            labels = t.metadata.get("labels") or {}
            group = "job" if obj.get("kind") == "Job" else str(labels.get(FLEET) or t.group or obj.get("kind"))
            out.append(Unchecked(index, group, int(gpus), itype))
    return out


def most_gpus(plan: Mapping[str, Any]) -> tuple[int, list[str]]:
    """The most ``nvidia.com/gpu`` one node of a known instance type has, and those types."""
    counts = {name: cap.gpus for name, cap in catalog.AWS.items()}
    counts |= {name: int(alloc.get(catalog.GPU, 0) or 0) for name, alloc in catalog.EXPLICIT.items()}
    counts |= {name: parse_units(catalog.GPU, ((spec or {}).get("allocatable") or {}).get(catalog.GPU, 0)) or 0
               for name, spec in (plan.get("instanceTypes") or {}).items()}
    most = max(counts.values(), default=0)
    return most, [name for name, n in counts.items() if n == most]
