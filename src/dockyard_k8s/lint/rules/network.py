"""Network exposure: NetworkPolicy coverage and the policy view of Services.

Whether a Service selects any pod at all, and whether a workload's selector matches its
template, are checked by the validator (``validate``); these rules judge exposure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.kube import selector_matches
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Pod, Rule


def _policy_types(np: Obj) -> set[str]:
    """policyTypes as the API server defaults them: Ingress always, Egress when egress rules exist."""
    types = np.get("spec", "policyTypes")
    if isinstance(types, list) and types:
        return {str(t) for t in types}
    return {"Ingress", "Egress"} if np.get("spec", "egress") else {"Ingress"}


def coverage(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        covered: set[str] = set()
        for np in c.selecting("NetworkPolicy", pod, lambda n: n.get("spec", "podSelector")):
            covered |= _policy_types(np)
        missing = [d for d in ("Ingress", "Egress") if d not in covered]
        if missing:
            what = " and ".join(d.lower() for d in missing)
            yield Hit(pod.spec_path, f"no NetworkPolicy restricts the {what} of these pods"
                                     + (" (they run untrusted code)" if pod.untrusted else ""),
                      ERROR if pod.untrusted else INFO)


def _selected(c: Context, svc: Obj) -> list[tuple[Obj, Pod]]:
    selector = svc.get("spec", "selector")
    if not isinstance(selector, dict) or not selector:
        return []
    return [(o, p) for o, p in c.pods()
            if o.namespace == svc.namespace and selector_matches({"matchLabels": selector}, p.labels)]


def exposure(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind != "Service":
        return
    kind = o.get("spec", "type") or "ClusterIP"
    if kind not in ("NodePort", "LoadBalancer"):
        return
    untrusted = [f"{w.ref}" for w, p in _selected(c, o) if p.untrusted]
    if untrusted:
        yield Hit(("spec", "type"), f"{kind} Service exposes pods that run untrusted code ({untrusted[0]}) "
                                    "outside the cluster", ERROR)
    else:
        yield Hit(("spec", "type"), f"{kind} Service is reachable from outside the cluster", WARNING)


def target_port(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind != "Service":
        return
    selected = _selected(c, o)
    if not selected:
        return  # nothing selected in this input: the validator reports Services that select nothing
    named: set[str] = set()
    for _, pod in selected:
        for _, k in pod.containers():
            for p in k.get("ports") or []:
                if isinstance(p, dict) and p.get("name"):
                    named.add(str(p["name"]))
    ports: Any = o.get("spec", "ports")
    for i, p in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(p, dict):
            continue
        tp = p.get("targetPort")
        if isinstance(tp, str) and not tp.isdigit() and tp not in named:
            yield Hit(("spec", "ports", i, "targetPort"),
                      f"targetPort {tp!r} names no container port of the selected pods "
                      f"({', '.join(sorted(named)) or 'they name none'}): traffic to port {p.get('port')} goes nowhere")


RULES = (
    Rule("network-policy-coverage", INFO, "Pods should be covered by a NetworkPolicy for ingress and egress",
         "Without a NetworkPolicy selecting it, a pod accepts traffic from and sends traffic to anywhere the CNI "
         "routes. For untrusted code that is an error: it could reach the cloud metadata endpoint, the API server "
         "or other tenants. Fix: a NetworkPolicy with policyTypes [Ingress, Egress] selecting the pods "
         "(sandbox.networkPolicy does this for the pool); needs a CNI that enforces NetworkPolicy.",
         ("kube-linter non-isolated-pod", "Polaris missingNetworkPolicy", "kube-score pod-networkpolicy", "Checkov"),
         coverage, untrusted_severity=ERROR),
    Rule("service-exposure", WARNING, "Internal pools must not be exposed with NodePort or LoadBalancer",
         "A NodePort or LoadBalancer Service opens the pods to traffic from outside the cluster. The sandbox pool "
         "and the Ray head are internal: the GPU pods reach the sandbox through its ClusterIP, users reach the "
         "dashboard with port-forward. Fix: type ClusterIP.",
         ("kube-linter exposed-services", "kube-score service-type"), exposure, untrusted_severity=ERROR),
    Rule("service-target-port", ERROR, "A Service's named targetPort must name a container port",
         "A named targetPort is resolved against the container ports of each selected pod; a name no container "
         "declares leaves the Service without endpoints for that port. Fix: name the container port (ports[].name) "
         "or use the number.",
         ("kube-linter dangling-service", "kube-score service-targets-pod"), target_port),
)
