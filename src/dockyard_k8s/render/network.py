"""Every NetworkPolicy of a run; each is applied before the pods it covers.

    <run>-default-deny, <run>-allow   infra.networkPolicy.defaultDeny: deny all, then the run's allows (opt-in)
    <run>-gpu-ingress                 kuberay.networkPolicy: ingress of the GPU pods (head, workers,
                                      submitter) in every mode with GPU pods (on by default)
    <run>-sandbox                     sandbox.networkPolicy: the pool's ingress and egress (on by default)

What holds whatever the settings (the threat model is docs/security.md):

* no policy admits a pod labelled ``dockyard-k8s/fleet=sandbox`` into a GPU pod: the GPU pods'
  sources are the run's pods *except* the sandbox's, and every source a user writes
  (``extraIngress``, the operator's selector) is narrowed the same way;
* the sandbox's egress never covers a metadata range, nor private space unless an allowed
  range opts in with ``private: true``; DNS goes to the cluster DNS pods only;
* the sandbox admits only the run's Ray pods (and named extra sources, narrowed), never
  another executor.

Whether an ``ipBlock`` matches pod IPs is CNI-specific, so each side refuses on its own: the
sandbox's egress excepts private space (where pod IPs live), and the GPU pods' ingress names
its sources by label.

:func:`sandbox_rows` and :func:`ray_ports_line` say the same in words, for ``check``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.config.network import (
    DNS_PORT,
    INTERNAL_CIDRS,
    METADATA_CIDRS,
    OPERATOR_NAME_LABEL,
    OPERATOR_NAMES,
    POD_CIDRS,
    allowed_cidr,
    inside,
    nets,
    network_port,
    ray_image_version,
    within,
)
from dockyard_k8s.plain import clone
from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL, fleets_selector, metadata, name_of, run_name, selector
from dockyard_k8s.render.rayauth import enabled, secret_name

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

RAY_DASHBOARD_PORT = 8265
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server
RAY_CLUSTER_LABEL = "ray.io/cluster"  # KubeRay labels every pod of a RayCluster with its name
SANDBOX = "sandbox"
DNS_POD_LABELS = {"k8s-app": "kube-dns"}  # kube-dns and CoreDNS on kubeadm, kind, k3s, EKS, GKE
OPEN_EGRESS = ("0.0.0.0/0", "::/0")
# The KubeRay operator's pods: app.kubernetes.io/name is kuberay-operator (Helm) or kuberay (kustomize).
OPERATOR_PODS = {"matchExpressions": [{"key": OPERATOR_NAME_LABEL, "operator": "In", "values": list(OPERATOR_NAMES)}]}
NOT_SANDBOX = {"key": FLEET_LABEL, "operator": "NotIn", "values": [SANDBOX]}
# Every port but DNS (53), TCP and UDP: the public-internet rule of the sandbox, so that name
# lookups go to the cluster DNS pods only.
NOT_DNS_PORTS = [{"protocol": proto, "port": lo, "endPort": hi}
                 for proto in ("TCP", "UDP") for lo, hi in ((1, DNS_PORT - 1), (DNS_PORT + 1, 65535))]
DNS_PORTS = [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]
# On the sandbox's policy: the ranges inside private space it may reach because the infra spec
# opted in (``private: true``), so lint and check report them as a choice, not as a hole.
PRIVATE_EGRESS_ANNOTATION = "dockyard-k8s/private-egress"


def _policy(infra: InfraSpec, suffix: str, component: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": metadata(infra, name_of(infra, suffix), component), "spec": spec}


# --- peers --------------------------------------------------------------------------------------


def not_sandbox(pod_selector: Any = None, refused: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``pod_selector`` (default: every pod) narrowed by the ``refused`` expressions (default:
    pods that are not sandbox executors)."""
    sel = clone(pod_selector) if isinstance(pod_selector, dict) else {}
    exprs = sel.get("matchExpressions")
    sel["matchExpressions"] = [*(exprs if isinstance(exprs, list) else []), *(refused or [clone(NOT_SANDBOX)])]
    return sel


def narrowed(peer: Any, refused: list[dict[str, Any]] | None = None) -> Any:
    """A user-written NetworkPolicyPeer that can no longer name a sandbox pod (or what ``refused``
    says). An ipBlock is kept as written (the loader refuses one over private space, where pod IPs live)."""
    if not isinstance(peer, dict) or "ipBlock" in peer:
        return clone(peer)
    return {**clone(peer), "podSelector": not_sandbox(peer.get("podSelector"), refused)}


def narrowed_egress(peer: Any, fleets: list[str]) -> Any:
    """A user-written egress peer of the sandbox that names no Ray pod and no executor of any
    dockyard-k8s run (their fleets), nor any pod of any RayCluster (KubeRay labels every pod of a
    cluster ``ray.io/cluster``; an attached cluster's pods carry no fleet label), so the
    sandbox's egress refuses them on its own."""
    return narrowed(peer, [{"key": FLEET_LABEL, "operator": "NotIn", "values": [*fleets, "submitter", SANDBOX]},
                           {"key": RAY_CLUSTER_LABEL, "operator": "DoesNotExist"}])


def run_pods_but_sandbox(infra: InfraSpec) -> dict[str, Any]:
    """Selector of the run's pods other than the sandbox's (head, workers, submitter...)."""
    return {"matchLabels": {RUN_LABEL: run_name(infra)}, "matchExpressions": [clone(NOT_SANDBOX)]}


def dns_peer(infra: InfraSpec | None = None) -> dict[str, Any]:
    """The cluster DNS pods as a peer: ``infra.clusterDns``, or its defaults (kube-system,
    :data:`DNS_POD_LABELS`) for a spec without that setting (serve)."""
    dns = infra["infra"]["clusterDns"] if infra is not None else {"namespace": "kube-system", "podLabels": None}
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: dns["namespace"]}},
            "podSelector": {"matchLabels": dict(dns["podLabels"] or DNS_POD_LABELS)}}


def _outermost(cidrs: list[Any]) -> list[str]:
    """The ranges not inside another of the list (an except inside an except is redundant)."""
    return [str(c) for c in dict.fromkeys(cidrs)
            if not any(o != c and o.version == c.version and c.subnet_of(o) for o in cidrs)]


def egress_blocks(allowed: list[str], excluded: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """ipBlock peers for ``allowed`` CIDRs, each excepting the ``excluded`` ranges inside it; a
    CIDR inside an excluded range gives no peer (an empty list: the caller drops the rule, since
    a rule with no peers would admit every address)."""
    peers = []
    bad = nets(list(excluded))
    for cidr in allowed:
        (net,) = nets([cidr])
        if inside(net, bad) is not None:
            continue
        block: dict[str, Any] = {"cidr": cidr}
        excepts = _outermost(within(net, bad))
        if excepts:
            block["except"] = excepts
        peers.append({"ipBlock": block})
    return peers


# --- the GPU side -------------------------------------------------------------------------------


def gpu_ingress_rules(infra: InfraSpec) -> list[dict[str, Any]]:
    """Who may open connections to the GPU pods: the run's other pods (any port: Ray uses many),
    the KubeRay operator on the dashboard port, and ``extraIngress`` (narrowed)."""
    knp = infra["kuberay"]["networkPolicy"]
    op = knp["operator"]
    rules: list[dict[str, Any]] = [{"from": [{"podSelector": run_pods_but_sandbox(infra)}]}]
    # The operator submits and polls jobs through the head's dashboard (RayJob, RayService).
    rules.append({"from": [{"namespaceSelector": clone(op["namespaceSelector"]),
                            "podSelector": not_sandbox(op["podSelector"] if op["podSelector"] is not None
                                                       else OPERATOR_PODS)}],
                  "ports": [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}]})
    for rule in knp["extraIngress"]:
        rule = clone(rule)
        if isinstance(rule, dict) and isinstance(rule.get("from"), list):
            rule["from"] = [narrowed(p) for p in rule["from"]]
        rules.append(rule)
    return rules


def gpu_ingress_policy(infra: InfraSpec) -> dict[str, Any] | None:
    """Ingress of every pod of the run but the sandbox's: the GPU side refuses the sandbox by itself."""
    if infra["launch"]["mode"] == "attach" or not infra["kuberay"]["networkPolicy"]["enabled"]:
        return None
    return _policy(infra, "gpu-ingress", "network-policy", {
        "podSelector": run_pods_but_sandbox(infra),
        "policyTypes": ["Ingress"],
        "ingress": gpu_ingress_rules(infra),
    })


def default_deny_policies(infra: InfraSpec) -> list[dict[str, Any]]:
    """Deny all (the run's pods, or the namespace), then allow what a run needs.

    The allow policy selects the run's pods except the sandbox pool, which keeps its own,
    stricter policy (policies add up: selecting the sandbox here would widen its egress).
    """
    np = infra["infra"]["networkPolicy"]
    if not np["defaultDeny"]:
        return []
    deny = _policy(infra, "default-deny", "network-policy", {
        "podSelector": {"matchLabels": {RUN_LABEL: run_name(infra)}} if np["scope"] == "run" else {},
        "policyTypes": ["Ingress", "Egress"]})
    egress: list[dict[str, Any]] = [
        # the GPU pods send tasks to the sandbox
        {"to": [{"podSelector": {"matchLabels": {RUN_LABEL: run_name(infra)}}}]},
        {"to": [dns_peer(infra)], "ports": clone(DNS_PORTS)},
    ]
    https = egress_blocks(list(OPEN_EGRESS), np["privateCidrs"]) if np["httpsEgress"] else []
    if https:
        egress.append({"to": https, "ports": [{"protocol": "TCP", "port": 443}]})
    egress += clone(np["extraEgress"])
    allow = _policy(infra, "allow", "network-policy", {
        "podSelector": run_pods_but_sandbox(infra),
        "policyTypes": ["Ingress", "Egress"],
        "ingress": gpu_ingress_rules(infra),
        "egress": egress,
    })
    return [deny, allow]


def network_policies(infra: InfraSpec) -> list[dict[str, Any]]:
    """The run-wide policies, in apply order (the sandbox's comes with the pool)."""
    gpu = gpu_ingress_policy(infra)
    return default_deny_policies(infra) + ([gpu] if gpu else [])


# --- the sandbox --------------------------------------------------------------------------------


def ray_fleets(infra: InfraSpec) -> list[str]:
    """Fleet labels of the run's Ray pods: head, trainer, inference and any worker group a
    ``kuberay.spec`` fragment adds (KubeRay modes label those by groupName)."""
    fleets = ["head", *GPU_FLEETS]
    if infra["launch"]["mode"] in ("rayjob", "bringup"):
        for g in (infra["kuberay"]["spec"] or {}).get("workerGroupSpecs") or []:
            name = g.get("groupName") if isinstance(g, dict) else None
            if isinstance(name, str) and name and name not in (*fleets, SANDBOX):
                fleets.append(name)
    return fleets


def sandbox_sources(infra: InfraSpec) -> list[dict[str, Any]]:
    """The pods that send tasks to the executors: the run's Ray pods, or in attach mode the
    attached RayCluster's pods (none known when only an address is given)."""
    launch = infra["launch"]
    if launch["mode"] == "attach":
        cluster = launch["attach"]["cluster"]
        return [{"podSelector": not_sandbox({"matchLabels": {RAY_CLUSTER_LABEL: cluster}})}] if cluster else []
    return [{"podSelector": fleets_selector(infra, ray_fleets(infra))}]


def sandbox_egress(infra: InfraSpec) -> list[dict[str, Any]]:
    """Cluster DNS; the public internet but port 53 (allowEgress); each allowed range; extraEgress
    to pods named by label (narrowed). Metadata and blocked ranges are excepted from every range,
    private space unless a range opts in."""
    np = infra["sandbox"]["networkPolicy"]
    blocked = [*METADATA_CIDRS, *np["blockedEgressCidrs"]]
    rules: list[dict[str, Any]] = [{"to": [dns_peer(infra)], "ports": clone(DNS_PORTS)}]
    # IPv4 only: IPv6 global unicast is where IPv6 clusters put pods, and the rest of IPv6 is
    # internal (ULA, link-local, NAT64) or unassigned, so IPv6 is reached only through an opt-in.
    public = egress_blocks(["0.0.0.0/0"], [*INTERNAL_CIDRS, *np["blockedEgressCidrs"]])
    if np["allowEgress"] and public:
        rules.append({"to": public, "ports": clone(NOT_DNS_PORTS)})
    for entry in np["allowedEgressCidrs"]:
        item = allowed_cidr(entry)
        peers = egress_blocks([item.cidr], blocked if item.private else [*POD_CIDRS, *blocked])
        if not peers:
            continue  # inside a blocked range (the loader reports it)
        rule: dict[str, Any] = {"to": peers}
        if item.ports:
            rule["ports"] = [network_port(p) for p in item.ports]
        rules.append(rule)
    fleets = ray_fleets(infra)
    for extra in np["extraEgress"]:
        extra = clone(extra)
        if isinstance(extra, dict) and isinstance(extra.get("to"), list):
            extra["to"] = [narrowed_egress(p, fleets) for p in extra["to"]]
        rules.append(extra)
    return rules


def sandbox_policy(infra: InfraSpec) -> dict[str, Any]:
    """The pool's policy: ingress from the run's Ray pods (and ingressFrom) to the executor port."""
    np = infra["sandbox"]["networkPolicy"]
    sources = sandbox_sources(infra) + [narrowed(p) for p in np["ingressFrom"]]
    ingress = [{"from": sources, "ports": [{"protocol": "TCP", "port": infra["sandbox"]["port"]}]}] if sources else []
    out = _policy(infra, SANDBOX, SANDBOX, {
        "podSelector": {"matchLabels": selector(infra, SANDBOX)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": ingress,
        "egress": sandbox_egress(infra),
    })
    opted = [allowed_cidr(e).cidr for e in np["allowedEgressCidrs"] if allowed_cidr(e).private]
    if opted:
        out["metadata"]["annotations"] = {PRIVATE_EGRESS_ANNOTATION: ",".join(opted)}
    return out


# --- in words: `check`'s reachability lines -------------------------------------------------


def _ports(ports: list[Any]) -> str:
    return ", ".join(f"TCP {p}" if isinstance(p, int) else
                     f"{p.get('protocol', 'TCP')} {p['port']}" + (f"-{p['endPort']}" if p.get("endPort") else "")
                     for p in ports) or "every port"


def sandbox_rows(infra: InfraSpec) -> list[list[str]]:
    """The ``ingress`` and ``egress`` rows of the sandbox table."""
    sb = infra["sandbox"]
    np = sb["networkPolicy"]
    if not np["enabled"]:
        return [["network", "NetworkPolicy OFF: any pod may send tasks to the executors, and they reach every "
                            "address, cloud metadata endpoints included"]]
    launch = infra["launch"]
    if launch["mode"] != "attach":
        sources = "the run's Ray pods (head, trainer, inference)"
    elif launch["attach"]["cluster"]:
        sources = f"the pods of RayCluster {launch['attach']['cluster']}"
    else:
        sources = "no GPU pods (attach by address: name the senders in sandbox.networkPolicy.ingressFrom)"
    extra = len(np["ingressFrom"])
    ingress = f":{sb['port']} ← {sources}" + (f" + {extra} more source(s)" if extra else "")
    ingress += "; other executors and pods refused"
    dns = infra["infra"]["clusterDns"]
    labels = ",".join(f"{k}={v}" for k, v in (dns["podLabels"] or DNS_POD_LABELS).items())
    egress = [f"cluster DNS ({dns['namespace']} {labels})"]
    if np["allowEgress"]:
        egress.append("public IPv4 internet (every port but 53)")
    for entry in np["allowedEgressCidrs"]:
        item = allowed_cidr(entry)
        egress.append(f"{item.cidr} ({_ports(item.ports)}" + (", private: opted in)" if item.private else ")"))
    space = "private or reserved space (NAT64, class E, IPv6 global unicast too)"
    never = f"never {space}, cloud metadata endpoints"
    if np["extraEgress"]:  # pods live in private space: those rules name some (lint says which reach too far)
        n = len(np["extraEgress"])
        egress.append(f"pods extraEgress names ({n} rule{'s' if n > 1 else ''})")
        never = f"no other {space}, never cloud metadata endpoints"
    blocked = "".join(", " + c for c in np["blockedEgressCidrs"])
    return [["ingress", ingress], ["egress", "; ".join(egress) + f"; {never}{blocked}"]]


def ray_ports_line(infra: InfraSpec) -> str:
    """Who may reach the GPU pods' Ray ports, and whether Ray asks for a token."""
    kr = infra["kuberay"]
    if infra["launch"]["mode"] == "attach":
        return ("Ray ports: the attached cluster is not covered by this run: give its pods a NetworkPolicy that "
                "refuses pods labelled dockyard-k8s/fleet=sandbox, and Ray token auth (docs/security.md)")
    knp = kr["networkPolicy"]
    if knp["enabled"]:
        who = "← the run's pods but the sandbox (any port), the KubeRay operator (8265)"
        if knp["extraIngress"]:
            who += f" + {len(knp['extraIngress'])} extra rule(s)"
        who += "; sandbox refused"
    else:
        who = "← anyone the CNI routes (kuberay.networkPolicy off: only the sandbox's egress refuses the sandbox)"
    if enabled(infra):
        version = f"Ray {kr['rayVersion']} from the image tag" if ray_image_version(infra["infra"]["image"]) else (
            f"Ray {kr['rayVersion']} per kuberay.rayVersion (the image tag does not say: `run` checks that the head "
            "refuses a request without the token)")
        auth = f"token auth (Secret {secret_name(infra)}, key auth_token), {version}"
    else:
        auth = "NO token auth (kuberay.auth.mode: disabled)"
    return f"Ray ports {who}; {auth}"
