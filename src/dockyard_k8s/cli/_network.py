"""``check``'s reachability lines: who may reach the executors, what they may reach, who may
reach the Ray ports; and what the rendered policies actually allow (the ``sandbox-isolation``
lint rule, computed from the objects, so a fragment that reopens a path shows here too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.network import allowed_cidr
from dockyard_k8s.render.network import DNS_POD_LABELS

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec


def _ports(ports: list[Any]) -> str:
    if not ports:
        return "every port"
    words = []
    for p in ports:
        if isinstance(p, int):
            words.append(f"TCP {p}")
        else:
            end = f"-{p['endPort']}" if p.get("endPort") else ""
            words.append(f"{p.get('protocol', 'TCP')} {p['port']}{end}")
    return ", ".join(words)


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
        egress.append("public internet (every port but 53)")
    for entry in np["allowedEgressCidrs"]:
        item = allowed_cidr(entry)
        egress.append(f"{item.cidr} ({_ports(item.ports)}" + (", private: opted in)" if item.private else ")"))
    never = "private space, cloud metadata endpoints"
    if np["blockedEgressCidrs"]:
        never += ", " + ", ".join(np["blockedEgressCidrs"])
    return [["ingress", ingress], ["egress", "; ".join(egress) + f"; never {never}"]]


def ray_ports_line(infra: InfraSpec) -> str:
    """Who may reach the GPU pods' Ray ports, and whether Ray asks for a token."""
    from dockyard_k8s.render.rayauth import enabled, secret_name

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
    auth = f"token auth (Secret {secret_name(infra)}, key auth_token)" if enabled(infra) else \
        "NO token auth (kuberay.auth.mode: disabled)"
    return f"Ray ports {who}; {auth}"


def isolation_findings(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(severity, message) of the ``sandbox-isolation`` analysis over the rendered objects."""
    from dockyard_k8s.lint.isolation import findings

    return [(f.severity, f"{f.template.obj}: {f.message}") for f in findings(objects)]
