"""Network exposure: what untrusted pods can reach, NetworkPolicy coverage, Services, Ray auth.

``sandbox-isolation`` computes reachability from the input's NetworkPolicies (``lint/isolation.py``
over ``lint/reach.py``, worst case on every CNI-specific point), so a ``kuberay.spec`` fragment or an extra rule that
reopens a path is an error, whatever produced it. Whether a Service selects any pod at all,
and whether a workload's selector matches its template, are checked by the validator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.kube import selector_matches
from dockyard_k8s.lint import entries, isolation, reach
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Pod, Rule
from dockyard_k8s.render.meta import FLEET_LABEL


def coverage(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        covered: set[str] = set()
        for np in c.selecting("NetworkPolicy", pod, lambda n: n.get("spec", "podSelector")):
            covered |= reach.policy_types(np.data)
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
    named = {str(p["name"]) for _, pod in selected for _, k in pod.containers() for p in k.get("ports") or []
             if isinstance(p, dict) and p.get("name")}
    ports: Any = o.get("spec", "ports")
    for i, p in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(p, dict):
            continue
        tp = p.get("targetPort")
        if isinstance(tp, str) and not tp.isdigit() and tp not in named:
            yield Hit(("spec", "ports", i, "targetPort"),
                      f"targetPort {tp!r} names no container port of the selected pods "
                      f"({', '.join(sorted(named)) or 'they name none'}): traffic to port {p.get('port')} goes nowhere")


# --- what untrusted pods can reach ------------------------------------------------------------


def isolation_hits(o: Obj, c: Context) -> Iterator[Hit]:
    """``lint/isolation.py``'s exposures of the untrusted pods of ``o``, as findings at their pod spec."""
    if not any(p.untrusted for p in o.pods):
        return
    for f in isolation.exposures([x.data for x in c.objects], of=o.data):
        yield Hit(f.template.spec_path, f.message, f.severity)


def runtime_class(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.untrusted and not pod.spec.get("runtimeClassName"):
            yield Hit(pod.at("runtimeClassName"), "pods running untrusted code use the node's default runtime: a "
                                                  "kernel exploit escapes to the node; set a sandboxed RuntimeClass "
                                                  "(gVisor, Kata) with sandbox.runtimeClassName")


def _env_value(container: dict[str, Any], name: str) -> Any:
    for e in reversed(container.get("env") or []):  # the last of a name wins, as in the container
        if isinstance(e, dict) and e.get("name") == name:
            return e.get("value") if "value" in e else e.get("valueFrom")
    return None


def ray_auth(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind not in entries.RAY_KINDS:
        return
    for pod in o.pods:
        if pod.labels.get(FLEET_LABEL) == "submitter" or pod.template.group == "submitter":
            continue
        for path, k in pod.containers():
            if path[-1] != 0 or path[-2] != "containers":
                continue  # the Ray container is the first one
            if _env_value(k, "RAY_AUTH_MODE") != "token" or not _env_value(k, "RAY_AUTH_TOKEN"):
                yield Hit((*path, "env"), f"Ray container {k.get('name', '?')!r} runs without token authentication "
                                          "(RAY_AUTH_MODE=token and RAY_AUTH_TOKEN): whoever reaches ports 8265, "
                                          "6379 or 10001 can run code on the cluster")


RULES = (
    Rule("sandbox-isolation", ERROR, "Untrusted pods must not reach GPU pods, each other, metadata or private space",
         "Computed from the NetworkPolicies of the input, worst case on what depends on the CNI (an ipBlock may "
         "match pod IPs, which lie in private space) or on labels the input does not show (namespace labels): "
         "may a pod running untrusted code open a connection to a pod of the GPU Ray cluster (its dashboard runs "
         "any command), to another untrusted pod, to a cloud metadata endpoint or to private address space "
         "(reserved, NAT64 and IPv6 global unicast space included)? And, among pods the input does not show, to a "
         "pod of any RayCluster (an attached cluster's pods carry KubeRay's ray.io/cluster label, no fleet label) or "
         "to every pod of their namespace or of any namespace (a selector that names them all: pods live in private "
         "space)? And, out to a public address and back in, to a GPU pod behind a LoadBalancer or NodePort Service "
         "(KubeRay's headGroupSpec.serviceType too) or an Ingress (enableIngress too) whose controller its ingress "
         "admits? Each such path is an error; every pod of another named namespace, and a GPU pod whose own ingress "
         "admits untrusted pods, kept away only by their egress, and an Ingress to a GPU pod that admits no "
         "controller, are warnings (both sides should refuse). Ranges "
         "opted in with `private: true` are not reported. Fix: keep kuberay.networkPolicy and "
         "sandbox.networkPolicy enabled, and name extra sources and destinations by label.",
         ("dockyard-k8s threat model (docs/security.md)", "kubernetes-sigs/agent-sandbox default policy"),
         isolation_hits),
    Rule("sandbox-runtime-class", WARNING, "Pods running untrusted code should use a sandboxed runtime",
         "Namespaces, seccomp and dropped capabilities do not stop a kernel exploit: untrusted code that gets one "
         "owns the node and every pod on it. A sandboxed runtime (gVisor, Kata Containers) puts another kernel "
         "between them. Fix: install one and set sandbox.runtimeClassName (the RuntimeClass must exist).",
         ("kubernetes-sigs/agent-sandbox (gvisor)", "NSA/CISA Kubernetes Hardening Guide"), runtime_class),
    Rule("ray-token-auth", WARNING, "Ray clusters should require token authentication",
         "Without token authentication (Ray >= 2.52: RAY_AUTH_MODE=token with RAY_AUTH_TOKEN), the Ray dashboard "
         "(8265, the Jobs API), GCS (6379) and client port (10001) run code for anyone who reaches them. Fix: "
         "kuberay.auth.mode: token (the default), or set both variables on every Ray container.",
         ("Ray security docs (token authentication)", "Ray 2.52 advisory"), ray_auth),

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
