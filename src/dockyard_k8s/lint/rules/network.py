"""Network exposure: what untrusted pods can reach, NetworkPolicy coverage, Services, Ray auth.

``sandbox-isolation`` computes reachability from the input's NetworkPolicies (``lint/reach.py``,
worst case on every CNI-specific point), so a ``kuberay.spec`` fragment or an extra rule that
reopens a path is an error, whatever produced it. Whether a Service selects any pod at all,
and whether a workload's selector matches its template, are checked by the validator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dockyard_k8s.config.network import METADATA_CIDRS, PRIVATE_CIDRS
from dockyard_k8s.kube import selector_matches
from dockyard_k8s.lint import reach
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Pod, Rule
from dockyard_k8s.render.meta import FLEET_LABEL

RAY_KINDS = ("RayJob", "RayCluster", "RayService")
RAY_FLEETS = ("head", "trainer", "inference", "submitter")
PRIVATE_EGRESS_ANNOTATION = "dockyard-k8s/private-egress"  # render/network.py: the explicit opt-ins


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


# --- what untrusted pods can reach ------------------------------------------------------------


def _target(pod: Pod) -> reach.Target:
    ports = []
    for _, k in pod.containers():
        for p in k.get("ports") or []:
            if isinstance(p, dict) and p.get("name") and isinstance(p.get("containerPort"), int):
                ports.append((str(p["name"]), int(p["containerPort"]), str(p.get("protocol") or "TCP")))
    return reach.Target(pod.namespace, pod.labels, tuple(ports))


def _gpu_side(o: Obj, pod: Pod) -> bool:
    """A pod of the GPU Ray cluster: in a Ray object, labelled as a Ray fleet, or requesting GPUs."""
    return not pod.untrusted and (o.kind in RAY_KINDS or pod.labels.get(FLEET_LABEL) in RAY_FLEETS or pod.gpus > 0)


def _where(o: Obj, pod: Pod) -> str:
    group = pod.template.group
    return f"{o.ref}" + (f" ({group})" if group else "")


def _opted_in(c: Context, src: reach.Target, policies: reach.Policies) -> reach.Addresses:
    ranges = []
    for np in policies.selecting(src, "Egress"):
        note = ((np.get("metadata") or {}).get("annotations") or {}).get(PRIVATE_EGRESS_ANNOTATION) or ""
        ranges += [r.strip() for r in str(note).split(",") if r.strip()]
    out: reach.Addresses = {}
    for r in ranges:
        try:
            for v, spans in reach.cidr_spans(r).items():
                out[v] = reach.merge(out.get(v, []) + spans)
        except ValueError:
            continue
    return out


def isolation_hits(o: Obj, c: Context) -> Iterator[Hit]:
    """For each untrusted pod of ``o``: GPU pods, other untrusted pods, metadata and private
    addresses it may reach (errors), and GPU pods only its own egress keeps it from (a warning)."""
    untrusted = [p for p in o.pods if p.untrusted]
    if not untrusted:
        return
    policies = reach.Policies(n.data for n in c.of_kind("NetworkPolicy"))
    for pod in untrusted:
        src = _target(pod)
        one_sided = []
        for other, dst_pod in c.pods():
            if not (dst_pod.untrusted or _gpu_side(other, dst_pod)):
                continue
            dst = _target(dst_pod)
            ports, egress, ingress = policies.pod_to_pod(src, dst)
            if dst_pod.untrusted and ports:
                what = "another replica" if dst_pod is pod else f"another untrusted pod ({_where(other, dst_pod)})"
                yield Hit(pod.spec_path, f"an executor may reach {what} on {reach.show_ports(ports)}: its ingress "
                                         f"admits it ({'; '.join(ingress.rules)})", ERROR)
            elif not dst_pod.untrusted and ports:
                yield Hit(pod.spec_path, f"untrusted pods may reach the GPU pod {_where(other, dst_pod)} on "
                                         f"{reach.show_ports(ports)}: their egress ({'; '.join(egress.rules)}) and "
                                         f"its ingress ({'; '.join(ingress.rules)}) both allow it", ERROR)
            elif not dst_pod.untrusted and ingress.ports:
                one_sided.append(f"{_where(other, dst_pod)} ({'; '.join(ingress.rules)})")
        if one_sided:
            yield Hit(pod.spec_path, "only the untrusted pods' own egress keeps them from these GPU pods, whose "
                                     f"ingress admits them: {', '.join(one_sided)}; on a CNI that matches ipBlocks "
                                     "against pod IPs one more rule would open them (enable kuberay.networkPolicy)",
                      WARNING)
        yield from _address_hits(c, pod, src, policies)


def _address_hits(c: Context, pod: Pod, src: reach.Target, policies: reach.Policies) -> Iterator[Hit]:
    if not policies.selecting(src, "Egress"):
        yield Hit(pod.spec_path, "no NetworkPolicy restricts the egress of untrusted pods: they reach the cloud "
                                 "metadata endpoints (node credentials at 169.254.169.254) and every private "
                                 "address (pods, Services, internal systems)", ERROR)
        return
    opted = _opted_in(c, src, policies)
    for kind, cidrs in (("the cloud metadata range", METADATA_CIDRS), ("private address space", PRIVATE_CIDRS)):
        for cidr in cidrs:
            for addrs, ports, rule in policies.egress_to(src, cidr):
                if kind.startswith("private"):
                    addrs = {v: s for v, spans in addrs.items() if (s := reach.minus(spans, opted.get(v, [])))}
                if addrs:
                    yield Hit(pod.spec_path, f"untrusted pods may reach {kind} {cidr} ({reach.show_addresses(addrs)})"
                                             f" on {reach.show_ports(ports)}: {rule}", ERROR)


def runtime_class(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.untrusted and not pod.spec.get("runtimeClassName"):
            yield Hit(pod.at("runtimeClassName"), "pods running untrusted code use the node's default runtime: a "
                                                  "kernel exploit escapes to the node; set a sandboxed RuntimeClass "
                                                  "(gVisor, Kata) with sandbox.runtimeClassName")


def _env_value(container: dict[str, Any], name: str) -> Any:
    for e in container.get("env") or []:
        if isinstance(e, dict) and e.get("name") == name:
            return e.get("value") if "value" in e else e.get("valueFrom")
    return None


def ray_auth(o: Obj, c: Context) -> Iterator[Hit]:
    if o.kind not in RAY_KINDS:
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
         "any command), to another untrusted pod, to a cloud metadata endpoint or to private address space? Each "
         "such path is an error; a GPU pod whose own ingress admits untrusted pods, kept away only by their "
         "egress, is a warning (both sides should refuse). Ranges opted in with `private: true` are not reported. "
         "Fix: keep kuberay.networkPolicy and sandbox.networkPolicy enabled, and name extra sources by label.",
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
