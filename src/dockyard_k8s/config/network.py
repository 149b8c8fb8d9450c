"""Address space the untrusted sandbox never reaches, and the rules that keep settings honest.

Facts (``../shared/notes/security.md``): code in the sandbox pool is hostile and scans what it
can reach. Cloud metadata endpoints hand out node credentials; private space holds the pods,
Services and internal systems of the cluster and its network. Whether an ``ipBlock`` matches
pod IPs depends on the CNI (Calico matches them), so both the sandbox's egress and the GPU
pods' ingress refuse on their own; an ``ipBlock`` a user writes into an ingress rule must not
cover private space, where pod IPs live.

Pure data and checks: the loader reports :func:`network_problems` at the file and line the
user wrote, the renderers (``render/network.py``) and ``check`` read the same tables.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec, SandboxNetworkPolicy


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Never reachable from the sandbox, whatever the settings (an allowed range inside one is an error).
METADATA_CIDRS: tuple[str, ...] = (
    "169.254.0.0/16",  # link-local: AWS/GCP/Azure/OCI IMDS 169.254.169.254, ECS 169.254.170.2, EKS Pod Identity .23
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "168.63.129.16/32",  # Azure platform (wireserver: DHCP, health, extension credentials)
    "fd00:ec2::254/128",  # AWS IMDS over IPv6
    "fd00:ec2::23/128",  # EKS Pod Identity agent over IPv6
)
# Closed by default: pod, Service and internal addresses on most clusters and networks. An
# allowed range inside one needs an explicit `private: true`.
PRIVATE_CIDRS: tuple[str, ...] = (
    "10.0.0.0/8",  # RFC 1918 (kind/flannel 10.244/16, k3s 10.42/16, most VPCs)
    "172.16.0.0/12",  # RFC 1918
    "192.168.0.0/16",  # RFC 1918 (Calico's default pod CIDR)
    "100.64.0.0/10",  # RFC 6598 shared space (EKS custom networking, carrier-grade NAT)
    "fc00::/7",  # IPv6 unique local
    "fe80::/10",  # IPv6 link-local
    # Not private by RFC, internal in practice (issue 22 item 25):
    "198.18.0.0/15",  # RFC 2544 benchmarking space, used as internal space (VPNs, some service ranges)
    "240.0.0.0/4",  # reserved ("class E"): GKE and others may put pod and Service ranges there
    "64:ff9b::/96",  # NAT64 well-known prefix (RFC 6052): reaches every IPv4 address, private ones too
    "64:ff9b:1::/48",  # NAT64 local-use prefix (RFC 8215), the same
)
INTERNAL_CIDRS: tuple[str, ...] = PRIVATE_CIDRS + METADATA_CIDRS
# IPv6 global unicast: IPv6 clusters (EKS IPv6, GKE dual-stack) give pods, nodes and Services
# global addresses, so the sandbox reaches none of it unless an allowed range opts in (`private:
# true`). Trusted pods' HTTPS egress (serve, a default-deny run) keeps it: their privateCidrs.
GLOBAL_IPV6: tuple[str, ...] = ("2000::/3",)
# What the sandbox never reaches without an opt-in, and where pod IPs may lie (worst case).
POD_CIDRS: tuple[str, ...] = PRIVATE_CIDRS + GLOBAL_IPV6
# How an error names a closed range an allowed CIDR falls in: cidr -> (what it is, why it is closed).
CLOSED_WHY = {
    "198.18.0.0/15": ("benchmarking space", "which networks use as internal space"),
    "240.0.0.0/4": ("reserved space", "which GKE and others use for pod and Service ranges"),
    "64:ff9b::/96": ("NAT64 space", "which reaches every IPv4 address through a NAT64 gateway, private ones too"),
    "64:ff9b:1::/48": ("NAT64 space", "which reaches every IPv4 address through a NAT64 gateway, private ones too"),
    "2000::/3": ("IPv6 global unicast", "where IPv6 clusters put pod addresses"),
}
DNS_PORT = 53
# The labels KubeRay operator pods carry: the Helm chart's, and the kustomize manifests'.
OPERATOR_NAMES = ("kuberay-operator", "kuberay")
OPERATOR_NAME_LABEL = "app.kubernetes.io/name"
MIN_RAY_TOKEN_AUTH = (2, 52, 0)  # Ray's token authentication (RAY_AUTH_MODE=token)
DEFAULT_RAY_VERSION = "2.52.1"  # kuberay.rayVersion when the image's tag does not say
# Repositories of Ray's images (rayproject/ray, ray-ml, ray-llm; anyscale/ray and mirrors of them):
# their tag starts with the Ray version (2.52.1, 2.52.1-py311-gpu, 2.52.1.a1b2c3-py310).
RAY_REPOSITORIES = ("ray", "ray-ml", "ray-llm")


@dataclass(frozen=True, slots=True)
class AllowedCidr:
    """One entry of ``sandbox.networkPolicy.allowedEgressCidrs``, either form."""

    cidr: str
    ports: list[Any]  # NetworkPolicyPort-like entries; [] = every port
    private: bool  # the explicit opt-in into private space


def allowed_cidr(entry: Any) -> AllowedCidr:
    """``"10.0.0.0/8"`` or ``{cidr, ports, private}`` (schema-checked) as one shape."""
    if isinstance(entry, str):
        return AllowedCidr(entry, [], False)
    return AllowedCidr(str(entry["cidr"]), list(entry.get("ports") or []), bool(entry.get("private", False)))


def network_port(entry: Any) -> dict[str, Any]:
    """An allowedEgressCidrs port (``443`` or ``{port, endPort, protocol}``) as a NetworkPolicyPort."""
    if isinstance(entry, int):
        return {"protocol": "TCP", "port": entry}
    out = {"protocol": entry.get("protocol", "TCP"), "port": entry["port"]}
    if entry.get("endPort") is not None:
        out["endPort"] = entry["endPort"]
    return out


def nets(cidrs: tuple[str, ...] | list[str]) -> list[IPNetwork]:
    return [ipaddress.ip_network(c) for c in cidrs]


def inside(net: IPNetwork, ranges: list[IPNetwork]) -> IPNetwork | None:
    """The range of ``ranges`` that contains ``net`` (CIDRs nest or are disjoint), or None."""
    return next((r for r in ranges if r.version == net.version and net.subnet_of(r)), None)  # type: ignore[arg-type]


def within(net: IPNetwork, ranges: list[IPNetwork]) -> list[IPNetwork]:
    """The ranges of ``ranges`` inside ``net`` (what an ipBlock on ``net`` must except)."""
    return [r for r in ranges if r.version == net.version and r != net and r.subnet_of(net)]  # type: ignore[arg-type]


def parse_version(text: Any) -> tuple[int, ...] | None:
    """``"2.52.1"`` -> (2, 52, 1); a suffix after the numbers (``rc1``, ``.dev0``) is ignored."""
    m = re.match(r"[0-9]+(\.[0-9]+)*", str(text))
    return tuple(int(p) for p in m.group().split(".")) if m else None


def ray_image_version(image: Any) -> tuple[int, ...] | None:
    """The Ray version a Ray image's tag names (``rayproject/ray:2.52.1-py311-gpu`` -> (2, 52, 1)),
    or None: not a Ray image, no tag (a digest alone), or a tag without a version (``nightly``)."""
    ref = str(image or "").split("@", 1)[0]
    repo, _, tag = ref.rpartition(":")
    if not repo or "/" in tag or repo.rsplit("/", 1)[-1] not in RAY_REPOSITORIES:
        return None
    version = parse_version(tag.split("-", 1)[0])
    return version if version is not None and len(version) >= 2 else None


def _padded(version: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """2.52 and 2.52.0 are one version."""
    return (*version, *(0,) * (3 - len(version))) if version is not None else None


def show_version(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


# --- the rules --------------------------------------------------------------------------------


def _uncovered_internal(block: dict[str, Any]) -> IPNetwork | None:
    """An internal range (private, link-local, metadata) an ipBlock still covers after its
    excepts, or None. CIDRs nest or are disjoint, so a range is covered when it is inside the
    block and inside no except, or when the block itself is inside it."""
    try:
        net = ipaddress.ip_network(block["cidr"], strict=False)
        excepts = [ipaddress.ip_network(e, strict=False) for e in block.get("except") or []]
    except (ValueError, TypeError):
        return None  # the schema check of the rendered policy reports a bad CIDR
    internal = nets(POD_CIDRS + METADATA_CIDRS)
    outer = inside(net, internal)
    if outer is not None:
        return outer
    return next((r for r in within(net, internal) if inside(r, excepts) is None), None)


def _peers_problems(peers: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """No ipBlock over private space among user-written sources: where pod IPs live, it may
    match the sandbox pods' own IPs."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for i, peer in enumerate(peers if isinstance(peers, list) else []):
        block = peer.get("ipBlock") if isinstance(peer, dict) else None
        if not isinstance(block, dict) or not isinstance(block.get("cidr"), str):
            continue
        hit = _uncovered_internal(block)
        if hit is not None:
            out.append(((*path, i, "ipBlock", "cidr"),
                        f"got {block['cidr']}, which covers private or link-local space ({hit}): on CNIs that "
                        "match ipBlocks against pod IPs (Calico) it admits the sandbox pods too; name the "
                        "sources with podSelector/namespaceSelector, or use a public range (or except that space)"))
    return out


def _rule_problems(rule: dict[str, Any], path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    if not rule.get("from"):
        return [(path, "an extra ingress rule without `from` admits every pod, the sandbox pods' too; name the "
                       "sources (podSelector, namespaceSelector or a public ipBlock)")]
    return _peers_problems(rule["from"], (*path, "from"))


def _egress_rule_problems(rule: dict[str, Any], path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """A sandbox extraEgress rule names pods by label: no rule to everything, no ipBlock (which
    would skip the private and metadata exceptions allowedEgressCidrs applies)."""
    if not rule.get("to"):
        return [(path, "an extra egress rule without `to` reaches every address, cloud metadata endpoints "
                       "included; name the pods (podSelector, namespaceSelector)")]
    return [((*path, "to", i, "ipBlock"), "an ipBlock here would skip the private and metadata exceptions: put "
                                         "the range in sandbox.networkPolicy.allowedEgressCidrs")
            for i, peer in enumerate(rule["to"] if isinstance(rule["to"], list) else [])
            if isinstance(peer, dict) and "ipBlock" in peer]


def _egress_problems(np: SandboxNetworkPolicy) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    metadata, private = nets(METADATA_CIDRS), nets(POD_CIDRS)
    for i, entry in enumerate(np["allowedEgressCidrs"]):
        item = allowed_cidr(entry)
        at: tuple[Any, ...] = ("sandbox", "networkPolicy", "allowedEgressCidrs", i)
        at_cidr = at if isinstance(entry, str) else (*at, "cidr")
        net = ipaddress.ip_network(item.cidr)
        meta = inside(net, metadata)
        if meta is not None:
            where = "a cloud metadata range" + (f" (inside {meta})" if net != meta else "")
            out.append((at_cidr, f"got {item.cidr}: {where}, where node credentials are served; the sandbox runs "
                                 "untrusted code, so it never reaches it (remove the entry)"))
            continue
        blocked = inside(net, nets(np["blockedEgressCidrs"]))
        if blocked is not None:
            out.append((at_cidr, f"got {item.cidr}, inside blockedEgressCidrs {blocked}: it would never be "
                                 "reached; remove one of the two"))
            continue
        priv = inside(net, private)
        if priv is not None and not item.private:
            what, why = CLOSED_WHY.get(str(priv), ("private address space", "where pods, Services and internal "
                                                                         "systems live on most clusters"))
            where = what + (f" (inside {priv})" if net != priv else "")
            out.append((at_cidr, f"got {item.cidr}: {where}, {why}; the sandbox runs untrusted code, so write "
                                 f"{{cidr: {item.cidr}, private: true}} if it must reach it (`check` lists it)"))
        for j, port in enumerate(item.ports):
            if isinstance(port, dict) and port.get("endPort") is not None and port["endPort"] < port["port"]:
                out.append(((*at, "ports", j, "endPort"), f"got {port['endPort']}, expected a port >= {port['port']} "
                                                          "(the range is port..endPort)"))
        if item.private and priv is None and not within(net, private):
            out.append(((*at, "private"), f"{item.cidr} is not private address space (nor reserved, NAT64 or IPv6 "
                                          "global space): remove `private: true`"))
    return out


def network_problems(infra: InfraSpec) -> list[tuple[tuple[Any, ...], str]]:
    """Rules of the sandbox's and the GPU side's network settings and of Ray auth, as (key path, message)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    sb, kr = infra["sandbox"], infra["kuberay"]
    if sb["enabled"] and sb["networkPolicy"]["enabled"]:
        out += _egress_problems(sb["networkPolicy"])
        out += _peers_problems(sb["networkPolicy"]["ingressFrom"], ("sandbox", "networkPolicy", "ingressFrom"))
        for i, rule in enumerate(sb["networkPolicy"]["extraEgress"]):
            out += _egress_rule_problems(rule, ("sandbox", "networkPolicy", "extraEgress", i))
    if sb["enabled"] and sb["serviceAccountName"] == "default":
        out.append((("sandbox", "serviceAccountName"),
                    "got 'default': the namespace's default ServiceAccount is the one EKS Pod Identity, IRSA and "
                    "workload identity most often hand cloud credentials to (whatever automountServiceAccountToken "
                    "says), and the sandbox runs untrusted code; leave it null (a dedicated, empty ServiceAccount "
                    "is rendered) or name one without a cloud identity"))
    knp = kr["networkPolicy"]
    if knp["enabled"]:
        for i, rule in enumerate(knp["extraIngress"]):
            out += _rule_problems(rule, ("kuberay", "networkPolicy", "extraIngress", i))
    mode = infra["launch"]["mode"]
    tagged = _padded(ray_image_version(infra["infra"]["image"]))
    if mode != "attach" and tagged is not None and _padded(parse_version(kr["rayVersion"])) != tagged:
        out.append((("kuberay", "rayVersion"),
                    f"got {kr['rayVersion']!r}, but infra.image is Ray {show_version(tagged)} (its tag): KubeRay "
                    "takes spec.rayVersion for the image's Ray; remove kuberay.rayVersion (it is read from a Ray "
                    f"image's tag) or set {show_version(tagged)!r}"))
    elif kr["auth"]["mode"] == "token" and mode != "attach" and tagged is not None and tagged < MIN_RAY_TOKEN_AUTH:
        out.append((("infra", "image"),
                    f"is Ray {show_version(tagged)} (its tag): Ray token authentication (kuberay.auth.mode: token, "
                    "the default) needs Ray >= 2.52.0, and older Ray ignores RAY_AUTH_MODE (the cluster would run "
                    "unauthenticated); use an image with Ray >= 2.52.0, or set kuberay.auth.mode: disabled (anyone "
                    "who reaches the Ray ports can then run code on the GPU pods)"))
    elif kr["auth"]["mode"] == "token" and mode != "attach":
        version = _padded(parse_version(kr["rayVersion"]))
        if version is None or version < MIN_RAY_TOKEN_AUTH:
            out.append((("kuberay", "rayVersion"),
                        f"got {kr['rayVersion']!r}: Ray token authentication (kuberay.auth.mode: token, the "
                        "default) needs Ray >= 2.52.0, and older Ray ignores it (the cluster would run "
                        "unauthenticated); use an image with Ray >= 2.52.0 and set rayVersion to its version, or "
                        "set kuberay.auth.mode: disabled (anyone who reaches the Ray ports can then run code on "
                        "the GPU pods)"))
    if kr["automountServiceAccountToken"] is False and kr["spec"].get("enableInTreeAutoscaling") is True:
        out.append((("kuberay", "automountServiceAccountToken"),
                    "got false, but kuberay.spec.enableInTreeAutoscaling needs the head's API token (the autoscaler "
                    "sidecar talks to the API server); set kuberay.automountServiceAccountToken: true"))
    return out
