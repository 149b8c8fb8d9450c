"""Reachability computed from NetworkPolicies: what may an untrusted pod open connections to?

Used by the ``sandbox-isolation`` lint rule and by ``check``'s reachability lines, on exactly
the objects a run renders (or any manifests). Every CNI-specific or unknown point is taken at
its worst:

* an ``ipBlock`` is assumed to match pods (Calico does) whose IPs lie in private space
  or IPv6 global space (``config.network.POD_CIDRS``: every pod CIDR seen in the wild does) — so a block that
  leaves any private address in matches every pod;
* a ``namespaceSelector`` is evaluated on the one namespace label everyone has
  (``kubernetes.io/metadata.name``); a requirement on any other label is assumed to hold;
* named ports resolve against the destination pod's container ports, as the API defines.

Port sets are per protocol lists of inclusive ranges; address sets are per IP version lists of
integer ranges. Pure functions of plain data.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from dockyard_k8s.config.network import POD_CIDRS
from dockyard_k8s.kube import selector_matches

PROTOCOLS = ("TCP", "UDP", "SCTP")
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
Spans = list[tuple[int, int]]  # sorted, disjoint, inclusive
Ports = dict[str, Spans]  # protocol -> port spans
Addresses = dict[int, Spans]  # IP version -> address spans
FULL_PORTS: Spans = [(1, 65535)]
K = TypeVar("K", str, int)  # a protocol (Ports) or an IP version (Addresses)


@dataclass(frozen=True, slots=True)
class Target:
    """A pod as policies see it."""

    namespace: str
    labels: dict[str, str]
    ports: tuple[tuple[str, int, str], ...] = ()  # (name, number, protocol) of its container ports


@dataclass(frozen=True, slots=True)
class Opening:
    """What a source may reach on one side, and the rules that allow it."""

    ports: Ports  # empty: nothing
    rules: tuple[str, ...]  # "NetworkPolicy ns/name egress[1]", or "not isolated"


# --- spans ------------------------------------------------------------------------------------


def merge(spans: Iterable[tuple[int, int]]) -> Spans:
    out: Spans = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def overlap(a: Spans, b: Spans) -> Spans:
    i = j = 0
    out: Spans = []
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def minus(a: Spans, b: Spans) -> Spans:
    out: Spans = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi < cur or blo > hi:
                continue
            if blo > cur:
                out.append((cur, blo - 1))
            cur = max(cur, bhi + 1)
        if cur <= hi:
            out.append((cur, hi))
    return out


def union(items: Iterable[dict[K, Spans]]) -> dict[K, Spans]:
    """Port sets (or address sets) merged, key by key, keys in the order they first appear."""
    acc: dict[K, Spans] = {}
    for item in items:
        for k, spans in item.items():
            acc[k] = merge(acc.get(k, []) + spans)
    return acc


def ports_and(a: Ports, b: Ports) -> Ports:
    return {p: s for p in PROTOCOLS if (s := overlap(a.get(p, []), b.get(p, [])))}


def show_ports(ports: Ports) -> str:
    """``TCP 6379, 8265; UDP any`` (``any`` = every port)."""
    if all(ports.get(p) == FULL_PORTS for p in PROTOCOLS):
        return "every port"
    parts = []
    for proto, spans in ports.items():
        text = "any" if spans == FULL_PORTS else ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in spans)
        parts.append(f"{proto} {text}")
    return "; ".join(parts)


# --- addresses --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def cidr_spans(cidr: str) -> Addresses:
    """A CIDR as address spans (callers never mutate the result: it is memoized)."""
    net = ipaddress.ip_network(cidr, strict=False)
    return {net.version: [(int(net.network_address), int(net.broadcast_address))]}


def _addr_and(a: Addresses, b: Addresses) -> Addresses:
    return {v: s for v in (4, 6) if (s := overlap(a.get(v, []), b.get(v, [])))}


def _block_spans(block: Any) -> Addresses:
    """The addresses an ipBlock covers (cidr minus except); empty for a malformed block."""
    try:
        return _block_key(str(block["cidr"]), tuple(str(e) for e in block.get("except") or []))
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}


@functools.lru_cache(maxsize=1024)
def _block_key(cidr: str, excepts: tuple[str, ...]) -> Addresses:
    whole = cidr_spans(cidr)
    cut = union(cidr_spans(e) for e in excepts)
    return {v: s for v, spans in whole.items() if (s := minus(spans, cut.get(v, [])))}


POD_SPACE: Addresses = union(cidr_spans(c) for c in POD_CIDRS)


def show_addresses(addrs: Addresses, limit: int = 3) -> str:
    out = []
    for v, spans in sorted(addrs.items()):
        for lo, hi in spans:
            make = ipaddress.IPv4Address if v == 4 else ipaddress.IPv6Address
            out.append(str(make(lo)) if lo == hi else f"{make(lo)}-{make(hi)}")
    return ", ".join(out[:limit]) + (f" (+{len(out) - limit} more)" if len(out) > limit else "")


# --- policies ---------------------------------------------------------------------------------


def policy_types(policy: dict[str, Any]) -> set[str]:
    """policyTypes as the API server defaults them: Ingress always, Egress when egress rules exist."""
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes")
    if isinstance(types, list) and types:
        return {str(t) for t in types}
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


def _ns(policy: dict[str, Any]) -> str:
    return str((policy.get("metadata") or {}).get("namespace") or "")


def _ref(policy: dict[str, Any]) -> str:
    return f"NetworkPolicy {_ns(policy)}/{(policy.get('metadata') or {}).get('name')}"


def _ns_may_match(selector: Any, namespace: str) -> bool:
    """Worst case: only the namespace-name label is known; the requirements on other labels may hold."""
    if not isinstance(selector, dict):
        return False
    labels = {k: v for k, v in (selector.get("matchLabels") or {}).items() if k == NAMESPACE_LABEL}
    exprs = [e for e in selector.get("matchExpressions") or []
             if isinstance(e, dict) and e.get("key") == NAMESPACE_LABEL]
    return selector_matches({"matchLabels": labels, "matchExpressions": exprs}, {NAMESPACE_LABEL: namespace})


def _peer_admits(peer: Any, other: Target | Addresses, policy_ns: str) -> bool | Addresses:
    """Whether a peer admits a pod (bool), or the part of an address set it admits."""
    if not isinstance(peer, dict):
        return {} if isinstance(other, dict) else False
    if "ipBlock" in peer:
        covered = _block_spans(peer["ipBlock"])
        if isinstance(other, dict):
            return _addr_and(covered, other)
        return bool(_addr_and(covered, POD_SPACE))  # worst case: the pod's IP is any private address
    if isinstance(other, dict):
        return {}  # selectors name pods, never addresses outside them
    if "namespaceSelector" in peer:
        if not _ns_may_match(peer["namespaceSelector"], other.namespace):
            return False
    elif other.namespace != policy_ns:
        return False
    pod_sel = peer.get("podSelector")
    return pod_sel is None or selector_matches(pod_sel, other.labels)


def _rule_ports(ports: Any, dst: Target | None) -> Ports:
    """The ports a rule admits towards ``dst`` (None: an address, which has no named ports)."""
    if not ports:
        return {p: list(FULL_PORTS) for p in PROTOCOLS}
    found: list[Ports] = []
    for entry in ports if isinstance(ports, list) else []:
        if not isinstance(entry, dict):
            continue
        proto = str(entry.get("protocol") or "TCP")
        port = entry.get("port")
        if port is None:
            spans = list(FULL_PORTS)
        elif isinstance(port, str) and not port.isdigit():
            spans = [(n, n) for name, n, pr in (dst.ports if dst else ()) if name == port and pr == proto]
        else:
            try:
                lo = int(port)
                hi = int(entry.get("endPort") or lo)
            except (TypeError, ValueError):
                continue
            spans = [(lo, hi)] if lo <= hi else []
        found.append({proto: spans})
    return {p: s for p, s in union(found).items() if s}


class Policies:
    """The NetworkPolicies of an input, asked about pods and address ranges."""

    def __init__(self, policies: Iterable[dict[str, Any]]) -> None:
        self.policies = [p for p in policies if isinstance(p.get("spec"), dict)]

    def selecting(self, pod: Target, direction: str) -> list[dict[str, Any]]:
        return [p for p in self.policies if _ns(p) == pod.namespace and direction in policy_types(p)
                and selector_matches(p["spec"].get("podSelector", {}), pod.labels)]

    def _side(self, pod: Target, direction: str, other: Target, ports_of: Target) -> Opening:
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        selecting = self.selecting(pod, direction)
        if not selecting:
            return Opening({p: list(FULL_PORTS) for p in PROTOCOLS}, (f"no policy restricts its {key}",))
        opened: list[Ports] = []
        rules = []
        for policy in selecting:
            for i, rule in enumerate(policy["spec"].get(key) or []):
                if not isinstance(rule, dict):
                    continue
                peers = rule.get(peers_key)
                if peers and not any(_peer_admits(peer, other, _ns(policy)) is True for peer in peers):
                    continue
                ports = _rule_ports(rule.get("ports"), ports_of)
                if ports:
                    rules.append(f"{_ref(policy)} {key}[{i}]")
                    opened.append(ports)
        return Opening(union(opened), tuple(rules))

    def pod_to_pod(self, src: Target, dst: Target) -> tuple[Ports, Opening, Opening]:
        """Ports on which ``src`` may connect to ``dst``: (ports, src's egress, dst's ingress)."""
        egress = self._side(src, "Egress", dst, dst)
        ingress = self._side(dst, "Ingress", src, dst)
        return ports_and(egress.ports, ingress.ports), egress, ingress

    def ingress_of(self, dst: Target, src: Target) -> Opening:
        """What ``dst``'s ingress admits from ``src`` (one side only)."""
        return self._side(dst, "Ingress", src, dst)

    def egress_of(self, src: Target, dst: Target) -> Opening:
        """What ``src``'s egress admits towards ``dst`` (one side only: a pod the input does not show)."""
        return self._side(src, "Egress", dst, dst)

    def egress_to(self, src: Target, cidr: str) -> list[tuple[Addresses, Ports, str]]:
        """The parts of ``cidr`` ``src``'s egress admits: (addresses, ports, the rule), by rule."""
        want = cidr_spans(cidr)
        selecting = self.selecting(src, "Egress")
        if not selecting:
            return [(want, {p: list(FULL_PORTS) for p in PROTOCOLS}, "no policy restricts its egress")]
        out = []
        for policy in selecting:
            for i, rule in enumerate(policy["spec"].get("egress") or []):
                if not isinstance(rule, dict):
                    continue
                peers = rule.get("to")
                if peers:
                    parts = [_peer_admits(peer, want, _ns(policy)) for peer in peers]
                    addrs = union(p for p in parts if isinstance(p, dict))
                else:
                    addrs = want
                ports = _rule_ports(rule.get("ports"), None)
                if addrs and ports:
                    out.append((addrs, ports, f"{_ref(policy)} egress[{i}]"))
        return out
