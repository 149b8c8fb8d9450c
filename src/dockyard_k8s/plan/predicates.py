"""The default scheduler's filter plugins, as pure functions over one pod and one node.

Order and wording follow kube-scheduler (``pkg/scheduler/framework/plugins``): per node
the first failing plugin's reasons count, in the default profile's order NodeUnschedulable,
TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread,
InterPodAffinity; the FitError message is ``0/N nodes are available: `` followed by the
sorted ``<count> <reason>`` strings (Go string sort), as ``kubectl describe pod`` shows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dockyard_k8s.kube import selector_matches
from dockyard_k8s.plan.inventory import Node, PlacedPod, host_ports, required_anti_affinity

# Reason strings, verbatim from the plugins.
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
NO_NODES = "no nodes available to schedule pods"


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """core/v1 Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool(toleration.get("operator") in (None, "", "Equal")
                and (toleration.get("value") or "") == (taint.get("value") or ""))


def untolerated_taint(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first NoSchedule or NoExecute taint no toleration tolerates (FindMatchingUntoleratedTaint)."""
    return next((taint for taint in taints if taint.get("effect") in ("NoSchedule", "NoExecute")
                 and not any(tolerates(t, taint) for t in tolerations)), None)


def _expression_matches(expr: dict[str, Any], value: str | None) -> bool:
    op, values = expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _term_matches(term: dict[str, Any], node: Node) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node
    return (all(_expression_matches(e, node.labels.get(str(e.get("key")))) for e in exprs)
            and all(_expression_matches(f, node.name if f.get("key") == "metadata.name" else None) for f in fields))


@dataclass(eq=False)
class Requirements:
    """What the filters ask of a pod, compiled once per pod template (mutable: ``check``'s fit
    test drops ``affinity_terms`` it cannot judge)."""

    namespace: str
    labels: dict[str, str]
    requests: dict[str, int]
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity_terms: list[dict[str, Any]] | None = None  # required nodeSelectorTerms (ORed); None = none
    host_ports: set[tuple[str, int]] = field(default_factory=set)
    anti_affinity: list[dict[str, Any]] = field(default_factory=list)  # own required terms
    spread: list[dict[str, Any]] = field(default_factory=list)  # DoNotSchedule constraints

    @classmethod
    def from_pod(cls, spec: dict[str, Any], labels: dict[str, str], namespace: str,
                 requests: dict[str, int]) -> Requirements:
        node_aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        terms = node_aff.get("nodeSelectorTerms") if isinstance(node_aff, dict) else None
        spread = [c for c in spec.get("topologySpreadConstraints") or []
                  if isinstance(c, dict) and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]
        return cls(namespace, labels, requests, [t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
                   {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
                   [t for t in terms if isinstance(t, dict)] if isinstance(terms, list) else None,
                   host_ports(spec), required_anti_affinity(spec), spread)

    def placed(self) -> PlacedPod:
        return PlacedPod(self.namespace, self.labels, self.anti_affinity)


# --- the static filters (node state never changes them) --------------------------------------


def node_affinity_ok(req: Requirements, node: Node) -> bool:
    if any(node.labels.get(k) != v for k, v in req.node_selector.items()):
        return False
    return req.affinity_terms is None or any(_term_matches(t, node) for t in req.affinity_terms)


def static_reason(req: Requirements, node: Node) -> str | None:
    """NodeUnschedulable, TaintToleration, NodeAffinity: the first that fails, or None."""
    if node.unschedulable and not any(
            tolerates(t, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
            for t in req.tolerations):
        return UNSCHEDULABLE
    if (taint := untolerated_taint(node.taints, req.tolerations)) is not None:  # TaintToleration's reason
        return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '') or ''}}}"
    if not node_affinity_ok(req, node):
        return AFFINITY
    return None


# --- the dynamic filters ------------------------------------------------------------------------


def resource_reasons(req: Requirements, node: Node) -> list[str]:
    """NodeResourcesFit: every insufficient resource of the node (empty when the pod fits)."""
    too_many = [TOO_MANY_PODS] if len(node.pods) + 1 > node.allocatable.get("pods", 110) else []
    return too_many + [f"Insufficient {name}" for name, amount in req.requests.items()
                       if amount and amount > node.allocatable.get(name, 0) - node.requested.get(name, 0)]


def _term_selects(term: dict[str, Any], owner_namespace: str, pod: PlacedPod) -> bool:
    namespaces = term.get("namespaces") or []
    if term.get("namespaceSelector") is not None:
        in_scope = True  # namespace labels are unknown offline: a namespaceSelector is taken to match
    else:
        in_scope = pod.namespace in namespaces if namespaces else pod.namespace == owner_namespace
    return in_scope and selector_matches(term.get("labelSelector"), pod.labels)


class Topology:
    """Which nodes share a topology domain, and the pods in each: the state affinity and
    spread rules read. Kept up to date by the scheduler as it places pods."""

    def __init__(self, nodes: list[Node], keys: set[str]) -> None:
        self.keys = keys
        self.pods: dict[tuple[str, str], list[PlacedPod]] = {}
        self.anti: dict[tuple[str, str], list[tuple[dict[str, Any], PlacedPod]]] = {}
        for node in nodes:
            for pod in node.pods:
                self.add(node, pod)

    def add(self, node: Node, pod: PlacedPod) -> None:
        for key in self.keys & node.labels.keys():
            self.pods.setdefault((key, node.labels[key]), []).append(pod)
        for term in pod.anti_affinity:
            key = str(term.get("topologyKey", ""))
            if key in node.labels:
                self.anti.setdefault((key, node.labels[key]), []).append((term, pod))

    def remove(self, node: Node, pod: PlacedPod) -> None:
        """Undo :meth:`add` (node labels never change, so it recorded the pod in these same domains)."""
        for key in self.keys & node.labels.keys():
            self.pods[(key, node.labels[key])].remove(pod)
        for term in pod.anti_affinity:
            key = str(term.get("topologyKey", ""))
            if key in node.labels:
                self.anti[(key, node.labels[key])].remove((term, pod))

    def anti_affinity_reason(self, req: Requirements, node: Node) -> str | None:
        """InterPodAffinity (required anti-affinity only): the pod's own terms, then existing pods' terms
        (the plugin's order, so one-per-node replicas read "didn't match pod anti-affinity rules")."""
        for term in req.anti_affinity:
            key = str(term.get("topologyKey", ""))
            domain = node.labels.get(key)
            if domain is None:
                continue
            if any(_term_selects(term, req.namespace, p) for p in self.pods.get((key, domain), ())):
                return ANTI_AFFINITY
        if self.anti:
            incoming = req.placed()
            for key, value in node.labels.items():
                for term, owner in self.anti.get((key, value), ()):
                    if _term_selects(term, owner.namespace, incoming):
                        return EXISTING_ANTI_AFFINITY
        return None


class Spread:
    """PodTopologySpread (DoNotSchedule constraints) for one pod template: domain counts,
    computed once and updated as the template's own pods are placed."""

    def __init__(self, req: Requirements, nodes: list[Node]) -> None:
        self.req = req
        self.constraints = []
        for c in req.spread:
            key = str(c.get("topologyKey", ""))
            eligible = [n for n in nodes if key in n.labels and node_affinity_ok(req, n)]
            counts: Counter[str] = Counter({n.labels[key]: 0 for n in eligible})
            selector = c.get("labelSelector")
            for n in eligible:
                counts[n.labels[key]] += sum(1 for p in n.pods if p.namespace == req.namespace
                                             and selector_matches(selector, p.labels))
            self_match = 1 if selector_matches(selector, req.labels) else 0
            eligible_names = {n.name for n in eligible}
            self.constraints.append((key, int(c.get("maxSkew", 1)), int(c.get("minDomains") or 1), counts,
                                     self_match, eligible_names))

    def reason(self, node: Node) -> str | None:
        for key, max_skew, min_domains, counts, self_match, _ in self.constraints:
            domain = node.labels.get(key)
            if domain is None:
                return SPREAD_LABEL
            lowest = min(counts.values()) if len(counts) >= min_domains else 0
            if counts.get(domain, 0) + self_match - lowest > max_skew:
                return SPREAD
        return None

    def placed(self, node: Node) -> None:
        for key, _, _, counts, self_match, eligible in self.constraints:
            if self_match and node.name in eligible:
                counts[node.labels[key]] += 1


def fit_error(reasons: Counter[str], nodes: int) -> str:
    """The FitError message: ``0/N nodes are available: <sorted counts>.``"""
    if not nodes:
        return NO_NODES
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{nodes} nodes are available: {', '.join(parts)}."
