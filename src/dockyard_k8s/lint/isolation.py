"""What the untrusted pods of a set of objects may reach, from their NetworkPolicies.

One analysis behind the ``sandbox-isolation`` lint rule and ``check``'s warnings, over plain
objects (``check`` pays for no lint machinery). For each pod template that runs untrusted
code (the sandbox fleet label, or the ``dockyard-k8s/untrusted`` annotation):

* error: a path to a pod of the GPU Ray cluster (a Ray object's pod, a Ray fleet label, or a
  GPU request), to another untrusted pod, to a cloud metadata range, or to private space not
  opted in (the ``dockyard-k8s/private-egress`` annotation ``render/network.py`` writes);
* error: a pod the input does not show, named by a selector of their egress: any pod of a
  RayCluster (KubeRay's ``ray.io/cluster`` label: an attached cluster's pods carry no fleet
  label), or every pod of their namespace or of any namespace (pods live in private space);
* error: a GPU pod behind a public way in (a LoadBalancer or NodePort Service, KubeRay's head
  serviceType, an Ingress whose controller its ingress admits: ``lint/entries.py``) on a port
  their egress to public addresses allows;
* warning: a GPU pod whose own ingress admits them, kept away only by their egress; every pod
  of another namespace their egress names; an Ingress to a GPU pod whose ingress admits no
  controller (one rule away from a path).

The reachability itself, worst case on every CNI-specific point, is ``lint/reach.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.config.network import GLOBAL_IPV6, METADATA_CIDRS, PRIVATE_CIDRS
from dockyard_k8s.kube import GPU_RESOURCES, as_mapping, containers, object_ref, pod_requests, pod_templates
from dockyard_k8s.lint import entries, reach
from dockyard_k8s.plain import Path
from dockyard_k8s.render.meta import FLEET_LABEL, UNTRUSTED_ANNOTATION
from dockyard_k8s.render.network import RAY_CLUSTER_LABEL

ERROR = "error"
WARNING = "warning"
RAY_FLEETS = ("head", "trainer", "inference", "submitter")
ANY_NAMESPACE = "<any namespace>"  # not a valid name: no selector names it, so only selectors of every namespace match
PRIVATE_EGRESS_ANNOTATION = "dockyard-k8s/private-egress"  # render/network.py: the explicit opt-ins


@dataclass(frozen=True, slots=True)
class Template:
    """A pod template of an object, as the analysis sees it."""

    obj: str  # "Kind namespace/name"
    group: str  # head, a worker group, submitter; "" for single-template objects
    spec_path: Path  # JSON path of the pod spec inside the object
    target: reach.Target
    untrusted: bool
    gpu_side: bool

    @property
    def where(self) -> str:
        return self.obj + (f" ({self.group})" if self.group else "")


@dataclass(frozen=True, slots=True)
class Exposure:
    """A way out of the sandbox the policies leave open (an error), or hold shut by one side only."""

    template: Template  # the untrusted pod template it is about
    severity: str
    message: str


def str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def runs_untrusted(labels: dict[str, str], annotations: dict[str, str], object_annotations: dict[str, str]) -> bool:
    """Our sandbox fleet's label, or the untrusted annotation on the pod template or on its object."""
    return labels.get(FLEET_LABEL) == "sandbox" or "true" in (annotations.get(UNTRUSTED_ANNOTATION),
                                                              object_annotations.get(UNTRUSTED_ANNOTATION))


def templates(objects: Iterable[dict[str, Any]]) -> list[Template]:
    out = []
    for obj in objects:
        meta = as_mapping(obj.get("metadata"))
        ns, kind, ref = str(meta.get("namespace") or ""), str(obj.get("kind", "")), object_ref(obj)
        obj_notes = str_map(meta.get("annotations"))
        for t in pod_templates(obj):
            labels = str_map(t.metadata.get("labels"))
            untrusted = runs_untrusted(labels, str_map(t.metadata.get("annotations")), obj_notes)
            requests = pod_requests(t.spec)
            gpus = any(requests.get(r, 0) > 0 for r in GPU_RESOURCES)
            ports = [(str(p["name"]), int(p["containerPort"]), str(p.get("protocol") or "TCP"))
                     for field, c in containers(t.spec) if field == "containers" and isinstance(c.get("ports"), list)
                     for p in c["ports"] if isinstance(p, dict) and p.get("name")
                     and isinstance(p.get("containerPort"), int)]
            gpu_side = not untrusted and (kind in entries.RAY_KINDS or labels.get(FLEET_LABEL) in RAY_FLEETS or gpus)
            out.append(Template(ref, t.group, (*t.path, "spec"), reach.Target(ns, labels, tuple(ports)),
                                untrusted, gpu_side))
    return out


def _opted_in(src: reach.Target, policies: reach.Policies) -> reach.Addresses:
    found = []
    for np in policies.selecting(src, "Egress"):
        note = ((np.get("metadata") or {}).get("annotations") or {}).get(PRIVATE_EGRESS_ANNOTATION) or ""
        for r in (x.strip() for x in str(note).split(",") if x.strip()):
            with contextlib.suppress(ValueError):
                found.append(reach.cidr_spans(r))
    return reach.union(found)


def exposures(objects: Iterable[dict[str, Any]], of: dict[str, Any] | None = None) -> list[Exposure]:
    """Every path the untrusted pods of ``objects`` (of the one object ``of`` only, when given)
    may open that they must not (see the module doc)."""
    objects = [o for o in objects if isinstance(o, dict)]
    sources = [t for t in templates([of] if of is not None else objects) if t.untrusted]
    if not sources:
        return []
    all_templates = templates(objects)
    policies = reach.Policies(o for o in objects if o.get("kind") == "NetworkPolicy")
    gpu_side = {(t.obj, t.spec_path): t for t in all_templates if t.gpu_side}
    ways_in = [(e, gpu_side[e.obj, e.spec_path]) for e in entries.public_entries(objects)
               if (e.obj, e.spec_path) in gpu_side]
    out: list[Exposure] = []
    for src in sources:
        one_sided = []
        for dst in all_templates:
            if not (dst.untrusted or dst.gpu_side):
                continue
            ports, egress, ingress = policies.pod_to_pod(src.target, dst.target)
            if dst.untrusted and ports:
                same = (dst.obj, dst.spec_path) == (src.obj, src.spec_path)
                what = "another replica" if same else f"another untrusted pod ({dst.where})"
                out.append(Exposure(src, ERROR, f"an executor may reach {what} on {reach.show_ports(ports)}: its "
                                               f"ingress admits it ({'; '.join(ingress.rules)})"))
            elif not dst.untrusted and ports:
                out.append(Exposure(src, ERROR, f"untrusted pods may reach the GPU pod {dst.where} on "
                                               f"{reach.show_ports(ports)}: their egress ({'; '.join(egress.rules)}) "
                                               f"and its ingress ({'; '.join(ingress.rules)}) both allow it"))
            elif not dst.untrusted and ingress.ports:
                one_sided.append(f"{dst.where} ({'; '.join(ingress.rules)})")
        if one_sided:
            out.append(Exposure(src, WARNING, "only the untrusted pods' own egress keeps them from these GPU pods, "
                                             f"whose ingress admits them: {', '.join(one_sided)}; on a CNI that "
                                             "matches ipBlocks against pod IPs one more rule would open them "
                                             "(enable kuberay.networkPolicy)"))
        out += _address_exposures(src, policies)
        out += _unseen_pod_exposures(src, policies)
        out += _public_exposures(src, ways_in, policies)
    return out


def _public_exposures(src: Template, ways_in: list[tuple[entries.Entry, Template]],
                      policies: reach.Policies) -> list[Exposure]:
    """The untrusted pods out to a public address, and back in through a public way to a GPU pod."""
    if not ways_in:
        return []
    egress, rules = entries.public_egress(src.target, policies)
    out = []
    for entry, dst in ways_in:
        ports = reach.ports_and(entry.ports, egress)
        if not ports:
            continue
        why = f"their egress admits public addresses on them ({'; '.join(rules)})"
        if not entry.via_controller:
            out.append(Exposure(src, ERROR, f"untrusted pods may reach the GPU pod {dst.where} from outside the "
                                            f"cluster: {entry.how} on {reach.show_ports(ports)}, and {why}; reach it "
                                            "with port-forward instead, or lock the sandbox's egress down "
                                            "(sandbox.networkPolicy.allowEgress: false)"))
            continue
        admits = entries.controller_rules(dst.target, policies)
        if admits:
            out.append(Exposure(src, ERROR, f"untrusted pods may reach the GPU pod {dst.where} from outside the "
                                            f"cluster: {entry.how} on {reach.show_ports(ports)} of the ingress "
                                            f"controller's public load balancer, which its ingress admits "
                                            f"({'; '.join(admits)}), and {why}; reach it with port-forward instead"))
        else:
            out.append(Exposure(src, WARNING, f"{entry.how} routes the ingress controller's public load balancer "
                                              f"to the GPU pod {dst.where}, which only its own ingress keeps closed "
                                              "(no rule admits an ingress controller; one would open a path from "
                                              f"the untrusted pods, whose egress reaches {reach.show_ports(ports)})"))
    return out


def _without_ip_blocks(policy: dict[str, Any]) -> dict[str, Any]:
    """The egress of ``policy`` as its selectors alone admit it (a rule naming only ipBlocks is
    dropped: an empty ``to`` would admit everything). ipBlocks are ``_address_exposures``' part."""
    rules = []
    for rule in (policy.get("spec") or {}).get("egress") or []:
        if isinstance(rule, dict) and isinstance(rule.get("to"), list) and rule["to"]:
            peers = [p for p in rule["to"] if not (isinstance(p, dict) and "ipBlock" in p)]
            if not peers:
                continue
            rule = {**rule, "to": peers}
        rules.append(rule)
    return {**policy, "spec": {**policy["spec"], "egress": rules}}


def _named_namespaces(policies: list[dict[str, Any]]) -> list[str]:
    """Namespaces the egress rules name by ``kubernetes.io/metadata.name``."""
    names: set[str] = set()
    for policy in policies:
        for rule in (policy.get("spec") or {}).get("egress") or []:
            for peer in (rule.get("to") or []) if isinstance(rule, dict) else []:
                sel = peer.get("namespaceSelector") if isinstance(peer, dict) else None
                if not isinstance(sel, dict):
                    continue
                value = (sel.get("matchLabels") or {}).get(reach.NAMESPACE_LABEL)
                names.update([str(value)] if value else [])
                for expr in sel.get("matchExpressions") or []:
                    if isinstance(expr, dict) and expr.get("key") == reach.NAMESPACE_LABEL and \
                            expr.get("operator") == "In":
                        names.update(str(v) for v in expr.get("values") or [])
    return sorted(names)


def _unseen_pod_exposures(src: Template, policies: reach.Policies) -> list[Exposure]:
    """Pods the input does not show that a selector of the untrusted pods' egress names: a Ray
    pod without a fleet label (an attached cluster's), every pod of a namespace. Each group says
    its widest hit only."""
    selecting = [_without_ip_blocks(p) for p in policies.selecting(src.target, "Egress")]
    if not selecting:
        return []  # no egress policy at all: _address_exposures says so
    view = reach.Policies(selecting)
    ns = src.target.namespace
    ray_pod = {RAY_CLUSTER_LABEL: "attached", "ray.io/node-type": "head"}
    unseen = f"the pods of RayClusters this input does not render (an attached cluster's: label {RAY_CLUSTER_LABEL}, " \
             "no fleet label)"
    plain = "(every pod without a dockyard-k8s fleet label)"
    groups = [
        [(ERROR, reach.Target(ANY_NAMESPACE, ray_pod), f"{unseen} in any namespace"),
         (ERROR, reach.Target(ns, ray_pod), f"{unseen} in namespace {ns}")],
        [(ERROR, reach.Target(ANY_NAMESPACE, {}), f"every pod of any namespace {plain}"),
         (ERROR, reach.Target(ns, {}), f"every pod of namespace {ns} {plain}"),
         *[(WARNING, reach.Target(n, {}), f"every pod of namespace {n} {plain}")
           for n in _named_namespaces(selecting) if n != ns]],
    ]
    out = []
    for group in groups:
        for severity, pod, what in group:
            opening = view.egress_of(src.target, pod)
            if opening.ports:
                out.append(Exposure(src, severity, f"untrusted pods may reach {what} on "
                                                   f"{reach.show_ports(opening.ports)}: {'; '.join(opening.rules)}; "
                                                   "pods live in private space: name the ones they call (a "
                                                   "podSelector with matchLabels)"))
                if severity == ERROR:
                    break
    return out


def _address_exposures(src: Template, policies: reach.Policies) -> list[Exposure]:
    if not policies.selecting(src.target, "Egress"):
        return [Exposure(src, ERROR, "no NetworkPolicy restricts the egress of untrusted pods: they reach the cloud "
                                    "metadata endpoints (node credentials at 169.254.169.254) and every private "
                                    "address (pods, Services, internal systems)")]
    out = []
    opted = _opted_in(src.target, policies)
    for kind, cidrs in (("the cloud metadata range", METADATA_CIDRS), ("private address space", PRIVATE_CIDRS),
                        ("IPv6 global unicast space", GLOBAL_IPV6)):
        for cidr in cidrs:
            for addrs, ports, rule in policies.egress_to(src.target, cidr):
                if cidrs is not METADATA_CIDRS:
                    addrs = {v: s for v, spans in addrs.items() if (s := reach.minus(spans, opted.get(v, [])))}
                if addrs:
                    out.append(Exposure(src, ERROR, f"untrusted pods may reach {kind} {cidr} "
                                                   f"({reach.show_addresses(addrs)}) on {reach.show_ports(ports)}: "
                                                   f"{rule}"))
    return out
