"""Ways into pods from outside the cluster, which NetworkPolicies between pods never see.

An untrusted pod allowed out to public addresses can come back in through any of them: its
packets leave the cluster, reach a public load balancer, and arrive at the pod behind it from a
node or a client address, not as the untrusted pod (issue 22 item 23). Found in plain objects:

* a Service of type ``LoadBalancer`` or ``NodePort`` selecting the pods (its ports);
* a Ray object's head Service, typed by ``headGroupSpec.serviceType`` or
  ``headGroupSpec.headService.spec.type`` (the head container's ports);
* KubeRay's dashboard Ingress (``headGroupSpec.enableIngress``), and an ``Ingress`` whose backend
  is a Service of the input selecting the pods, or a Ray cluster's ``<name>-head-svc``: reached on
  80 and 443 of the ingress controller's load balancer, and only if the pods' ingress admits the
  controller (a rule for its namespace), which :func:`controller_rules` looks for.

Pure functions of plain data; ``lint/isolation.py`` weighs them against the untrusted pods' egress.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.config.network import METADATA_CIDRS, POD_CIDRS
from dockyard_k8s.kube import as_mapping, object_ref, pod_templates, selector_matches
from dockyard_k8s.lint import reach
from dockyard_k8s.plain import Path, dig

PUBLIC_TYPES = ("LoadBalancer", "NodePort")
NODE_PORTS = (30000, 32767)  # the API server's default --service-node-port-range
RAY_HEAD_PORTS = (6379, 8265, 10001)  # GCS, dashboard, client: KubeRay's head Service without declared ports
INGRESS_PORTS: reach.Ports = {"TCP": [(80, 80), (443, 443)]}
RAY_KINDS = {"RayCluster": ("spec",), "RayJob": ("spec", "rayClusterSpec"), "RayService": ("spec", "rayClusterConfig")}
INTERNAL: reach.Addresses = reach.union(reach.cidr_spans(c) for c in (*POD_CIDRS, *METADATA_CIDRS))


@dataclass(frozen=True, slots=True)
class Entry:
    """A public way into the pods of one template."""

    obj: str  # "Kind namespace/name" of the object whose pods it reaches
    spec_path: Path  # the pod template's spec inside it
    how: str  # in words, for the finding
    ports: reach.Ports  # the ports on the public side
    via_controller: bool  # through an ingress controller (its pods must be admitted by the target's ingress)


def _tcp(numbers: Iterable[Any]) -> reach.Ports:
    spans = reach.merge((int(n), int(n)) for n in numbers if isinstance(n, int) and not isinstance(n, bool))
    return {"TCP": spans} if spans else {}


def _service_ports(svc: dict[str, Any], kind: str) -> reach.Ports:
    ports = dig(svc, "spec", "ports")
    entries = [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []
    if kind == "NodePort":
        given = [p.get("nodePort") for p in entries if p.get("nodePort")]
        return _tcp(given) if given else {"TCP": [NODE_PORTS]}
    return _tcp(p.get("port") for p in entries)


def _head(obj: dict[str, Any]) -> tuple[dict[str, Any], Path] | None:
    """(headGroupSpec, the head template's spec path) of a Ray object."""
    at = RAY_KINDS.get(str(obj.get("kind")))
    head = dig(obj, *at, "headGroupSpec") if at else None
    return (head, (*at, "headGroupSpec", "template", "spec")) if isinstance(head, dict) and at else None


def _head_ports(head: dict[str, Any]) -> reach.Ports:
    containers = dig(head, "template", "spec", "containers")
    first = containers[0] if isinstance(containers, list) and containers and isinstance(containers[0], dict) else {}
    declared = [p.get("containerPort") for p in first.get("ports") or [] if isinstance(p, dict)]
    return _tcp(declared) or _tcp(RAY_HEAD_PORTS)


def _selected(objects: list[dict[str, Any]], namespace: str, selector: Any) -> Iterator[tuple[str, Path]]:
    """(object, pod spec path) of the templates a Service selector selects."""
    if not isinstance(selector, dict) or not selector:
        return
    for obj in objects:
        if str(dig(obj, "metadata", "namespace") or "") != namespace:
            continue
        for t in pod_templates(obj):
            labels = {str(k): str(v) for k, v in as_mapping(t.metadata.get("labels")).items()}
            if selector_matches({"matchLabels": selector}, labels):
                yield object_ref(obj), (*t.path, "spec")


def _ingress_backends(ing: dict[str, Any]) -> list[str]:
    names = [dig(ing, "spec", "defaultBackend", "service", "name")]
    for rule in dig(ing, "spec", "rules") or []:
        for path in dig(rule, "http", "paths") or []:
            names.append(dig(path, "backend", "service", "name"))
    return [str(n) for n in names if n]


def public_entries(objects: Iterable[dict[str, Any]]) -> list[Entry]:
    """Every public way into a pod template of ``objects`` (see the module doc)."""
    objects = [o for o in objects if isinstance(o, dict)]
    out: list[Entry] = []
    services: dict[tuple[str, str], dict[str, Any]] = {}
    heads: dict[tuple[str, str], tuple[str, Path]] = {}  # (ns, <cluster>-head-svc) -> (object, head spec path)
    for obj in objects:
        ns = str(dig(obj, "metadata", "namespace") or "")
        if obj.get("kind") == "Service":
            services[ns, str(dig(obj, "metadata", "name"))] = obj
            kind = str(dig(obj, "spec", "type") or "ClusterIP")
            if kind in PUBLIC_TYPES:
                for ref, path in _selected(objects, ns, dig(obj, "spec", "selector")):
                    out.append(Entry(ref, path, f"Service {ns}/{dig(obj, 'metadata', 'name')} is type {kind}, a "
                                                "public address", _service_ports(obj, kind), False))
        found = _head(obj)
        if found is None:
            continue
        head, path = found
        heads[ns, f"{dig(obj, 'metadata', 'name')}-head-svc"] = (object_ref(obj), path)
        for where, typ in (("headGroupSpec.serviceType", head.get("serviceType")),
                           ("headGroupSpec.headService.spec.type", dig(head, "headService", "spec", "type"))):
            if typ in PUBLIC_TYPES:
                ports = _head_ports(head) if typ == "LoadBalancer" else {"TCP": [NODE_PORTS]}
                out.append(Entry(object_ref(obj), path, f"its head Service is type {typ} ({where}), a public address",
                                 ports, False))
        if head.get("enableIngress") is True:
            out.append(Entry(object_ref(obj), path, "KubeRay's dashboard Ingress (headGroupSpec.enableIngress)",
                             INGRESS_PORTS, True))
    for ing in (o for o in objects if o.get("kind") == "Ingress"):
        ns = str(dig(ing, "metadata", "namespace") or "")
        for name in dict.fromkeys(_ingress_backends(ing)):
            how = f"Ingress {ns}/{dig(ing, 'metadata', 'name')} (backend Service {name})"
            if (ns, name) in heads:
                ref, path = heads[ns, name]
                out.append(Entry(ref, path, how, INGRESS_PORTS, True))
            elif (ns, name) in services:
                for ref, path in _selected(objects, ns, dig(services[ns, name], "spec", "selector")):
                    out.append(Entry(ref, path, how, INGRESS_PORTS, True))
    return out


def public_egress(src: reach.Target, policies: reach.Policies) -> tuple[reach.Ports, list[str]]:
    """The ports on which ``src`` may open connections to public addresses, and the rules."""
    opened = [(ports, rule) for cidr in ("0.0.0.0/0", "::/0") for addrs, ports, rule in policies.egress_to(src, cidr)
              if any(reach.minus(spans, INTERNAL.get(v, [])) for v, spans in addrs.items())]
    return reach.union(p for p, _ in opened), list(dict.fromkeys(r for _, r in opened))


def controller_rules(dst: reach.Target, policies: reach.Policies) -> list[str]:
    """The ingress rules of ``dst`` that admit pods of another namespace (an ingress controller's),
    tried with each namespace-selecting peer the rules name; every rule when none isolates it."""
    selecting = policies.selecting(dst, "Ingress")
    if not selecting:
        return ["no policy restricts its ingress"]
    found: list[str] = []
    for policy in selecting:
        for rule in (policy.get("spec") or {}).get("ingress") or []:
            for peer in (rule.get("from") or []) if isinstance(rule, dict) else []:
                sel = peer.get("namespaceSelector") if isinstance(peer, dict) else None
                if not isinstance(sel, dict):
                    continue
                ns = (sel.get("matchLabels") or {}).get(reach.NAMESPACE_LABEL) or "<any namespace>"
                labels = dig(peer, "podSelector", "matchLabels")
                probe = reach.Target(str(ns), {str(k): str(v) for k, v in (labels or {}).items()})
                if probe.namespace != dst.namespace:
                    found += policies.ingress_of(dst, probe).rules
    return list(dict.fromkeys(found))
