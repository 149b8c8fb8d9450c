"""An evaluator of Kubernetes NetworkPolicy semantics (networking.k8s.io/v1), for tests only.

Written from the API reference and ``../shared/notes/security.md``, never from the product's
code: a test that asks it "may pod P reach Q on port N?" holds the rendered policies to the
semantics, not to the product's own idea of them. Import it from any test directory::

    from support.netpol import Address, Network, Pod

    net = Network(objects)                       # the rendered objects: policies + pod templates
    sandbox = net.find(**{"dockyard-k8s/fleet": "sandbox"})
    head = net.find(**{"dockyard-k8s/fleet": "head"})
    assert net.refused(sandbox, head)            # no port, on any CNI
    assert net.refused(sandbox, Address("169.254.169.254"), 80)
    assert net.allowed(head, sandbox, 9090)      # on every CNI
    print(net.explain(sandbox, head, 8265))      # each side, rule by rule

What it implements:

* A pod is isolated for a direction when a policy of its namespace selects it
  (``podSelector``) and lists the direction in ``policyTypes``; absent ``policyTypes``
  default as the API server defaults them (Ingress always, Egress when ``egress`` is
  non-empty). Traffic is allowed when *any* rule of *any* selecting policy admits it;
  a non-isolated pod admits everything. Policies only add.
* A connection needs the source's egress **and** the destination's ingress. An
  :class:`Address` (outside every pod: the internet, a metadata endpoint) is subject to no
  policy of its own, and only ``ipBlock`` peers match it.
* Peers: ``podSelector`` alone (pods of the policy's namespace), ``namespaceSelector`` alone
  (every pod of the matching namespaces), both (pods matching in matching namespaces),
  ``ipBlock`` with ``except``. An absent or empty ``from``/``to`` admits every peer.
  Label selectors: ``matchLabels`` and ``matchExpressions`` (In, NotIn, Exists, DoesNotExist);
  ``{}`` selects everything. Every namespace carries ``kubernetes.io/metadata.name``.
* Ports: an absent or empty ``ports`` admits every port; ``protocol`` defaults to TCP; a
  port entry without ``port`` admits every port of its protocol; ``endPort`` makes a range;
  a named port resolves against the *destination* pod's container ports (name and protocol),
  and never matches an :class:`Address`.
* Whether an ``ipBlock`` matches pod IPs is CNI-specific (Calico matches them, others do
  not). :meth:`Network.check` takes the interpretation as an argument; :meth:`Network.refused`
  holds only if the path is refused under both, :meth:`Network.allowed` only if it is
  allowed under both — the worst case for each claim.

Malformed policies (unknown keys, ``ipBlock`` beside a selector, ``endPort`` with a named
port, an ``except`` outside its ``cidr``) raise :class:`PolicyError`: the test fails loudly
instead of evaluating something no API server would accept.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ALL_PORTS", "Address", "Network", "Pod", "PolicyError", "Port", "Verdict", "pods_of"]

ALL_PORTS = ((1, 65535),)
PROTOCOLS = ("TCP", "UDP", "SCTP")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive port ranges


class PolicyError(ValueError):
    """A NetworkPolicy the API server would reject (or this evaluator cannot read)."""


@dataclass(frozen=True, slots=True)
class Port:
    """A container port of a pod (for named ports)."""

    name: str
    number: int
    protocol: str = "TCP"


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod: where policies select it (namespace, labels), its IP, its container ports."""

    name: str
    namespace: str
    labels: Mapping[str, str]
    ip: str
    ports: tuple[Port, ...] = ()

    def replica(self, ip: str, suffix: str = "-2") -> Pod:
        """Another pod of the same template (same labels and ports, another IP)."""
        return dataclasses.replace(self, name=self.name + suffix, ip=ip)


@dataclass(frozen=True, slots=True)
class Address:
    """An IP outside every pod (the internet, a metadata endpoint, a VM in the VPC)."""

    ip: str

    @property
    def name(self) -> str:
        return self.ip


Peer = Pod | Address


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer to a question, with the reasons; true when the claim holds."""

    holds: bool
    why: str

    def __bool__(self) -> bool:
        return self.holds


# --- label selectors -------------------------------------------------------------------------


def selects(selector: Any, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; ``{}`` selects everything."""
    if not isinstance(selector, dict):
        raise PolicyError(f"a label selector must be a mapping, got {selector!r}")
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise PolicyError(f"unknown label selector keys {sorted(unknown)}")
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values  # an absent key is "not in"
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise PolicyError(f"unknown selector operator {op!r}")
        if op in ("In", "NotIn") and not values:
            raise PolicyError(f"operator {op} needs values ({expr!r})")
        if not ok:
            return False
    return True


# --- port ranges -----------------------------------------------------------------------------


def _union(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return _union(out)


def _contains(ranges: Ranges, port: int) -> bool:
    return any(lo <= port <= hi for lo, hi in ranges)


def _port_number(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise PolicyError(f"{what}: got {value!r}, expected a port number 1-65535")
    return value


def _rule_ports(ports: Any, protocol: str, dst: Peer) -> Ranges:
    """The ports of ``protocol`` a rule's ``ports`` admit towards ``dst``."""
    if ports is None or ports == []:
        return ALL_PORTS
    if not isinstance(ports, list):
        raise PolicyError(f"ports must be a list, got {ports!r}")
    out: list[tuple[int, int]] = []
    for entry in ports:
        unknown = set(entry) - {"port", "endPort", "protocol"}
        if unknown:
            raise PolicyError(f"unknown NetworkPolicyPort keys {sorted(unknown)}")
        proto = entry.get("protocol", "TCP")
        if proto not in PROTOCOLS:
            raise PolicyError(f"protocol {proto!r} is not one of {PROTOCOLS}")
        value = entry.get("port")
        if "endPort" in entry and (value is None or isinstance(value, str)):
            raise PolicyError(f"endPort needs a numeric port ({entry!r})")
        if proto != protocol:
            continue
        if value is None:
            out.append((1, 65535))
        elif isinstance(value, str):
            # Named: the destination pod's container port of that name and protocol.
            if isinstance(dst, Pod):
                out += [(p.number, p.number) for p in dst.ports if p.name == value and p.protocol == proto]
        else:
            start = _port_number(value, "port")
            end = _port_number(entry.get("endPort", start), "endPort")
            if end < start:
                raise PolicyError(f"endPort {end} < port {start}")
            out.append((start, end))
    return _union(out)


# --- peers -----------------------------------------------------------------------------------


def _ip_in_block(ip: str, block: Any) -> bool:
    if not isinstance(block, dict) or set(block) - {"cidr", "except"} or "cidr" not in block:
        raise PolicyError(f"an ipBlock is {{cidr, except}}, got {block!r}")
    try:
        net = ipaddress.ip_network(block["cidr"])
        excepts = [ipaddress.ip_network(e) for e in block.get("except") or []]
    except ValueError as e:
        raise PolicyError(f"ipBlock {block!r}: {e}") from e
    for ex in excepts:
        if ex.version != net.version or not ex.subnet_of(net):  # type: ignore[arg-type]
            raise PolicyError(f"ipBlock except {ex} is not inside {net}")
    addr = ipaddress.ip_address(ip)
    if addr.version != net.version or addr not in net:
        return False
    return not any(addr in ex for ex in excepts)


class Network:
    """Policies and pods; answers reachability questions (see the module doc).

    Args:
        objects: rendered objects; NetworkPolicies are read, pods come from every pod template.
        pods: more pods (the KubeRay operator, a pod of another namespace, cluster DNS...).
        namespaces: labels of namespaces, beyond ``kubernetes.io/metadata.name``.
        pod_cidr: where the pods of ``objects`` get their IPs (CNIs differ: 10.244.0.0/16 on
            kind, 10.42.0.0/16 on k3s, 192.168.0.0/16 on Calico, VPC ranges on EKS/GKE).
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), *, pods: Iterable[Pod] = (),
                 namespaces: Mapping[str, Mapping[str, str]] | None = None,
                 pod_cidr: str = "10.244.0.0/16") -> None:
        objects = list(objects)
        self.policies = [o for o in objects if o.get("kind") == "NetworkPolicy"]
        for p in self.policies:
            _check_policy(p)
        self.pods: list[Pod] = [*pods_of(objects, pod_cidr), *pods]
        self.namespace_labels = dict(namespaces or {})

    # --- finding pods ---

    def find(self, namespace: str | None = None, **labels: str) -> Pod:
        """The one pod carrying ``labels`` (keys with '/' or '.': pass them with ``**{...}``)."""
        found = [p for p in self.pods if all(p.labels.get(k) == v for k, v in labels.items())
                 and (namespace is None or p.namespace == namespace)]
        if len(found) != 1:
            names = ", ".join(p.name for p in found) or "none"
            raise LookupError(f"{len(found)} pods with labels {labels} ({names}); pods: "
                              + ", ".join(p.name for p in self.pods))
        return found[0]

    def where(self, **labels: str) -> list[Pod]:
        return [p for p in self.pods if all(p.labels.get(k) == v for k, v in labels.items())]

    # --- the semantics ---

    def _ns_labels(self, name: str) -> dict[str, str]:
        return {**self.namespace_labels.get(name, {}), NAMESPACE_NAME_LABEL: name}

    def _peer_matches(self, peer: Any, other: Peer, policy_ns: str, ipblock_pods: bool) -> bool:
        if not isinstance(peer, dict) or not peer or set(peer) - {"podSelector", "namespaceSelector", "ipBlock"}:
            raise PolicyError(f"a NetworkPolicyPeer has podSelector/namespaceSelector/ipBlock, got {peer!r}")
        if "ipBlock" in peer:
            if len(peer) > 1:
                raise PolicyError(f"ipBlock cannot be combined with selectors in one peer ({peer!r})")
            if isinstance(other, Pod) and not ipblock_pods:
                return False
            return _ip_in_block(other.ip, peer["ipBlock"])
        if not isinstance(other, Pod):
            return False  # selectors name pods; an address outside every pod matches none
        ns_sel = peer.get("namespaceSelector")
        if ns_sel is None:
            if other.namespace != policy_ns:
                return False
        elif not selects(ns_sel, self._ns_labels(other.namespace)):
            return False
        pod_sel = peer.get("podSelector")
        return pod_sel is None or selects(pod_sel, other.labels)

    def _side(self, pod: Pod, direction: str, other: Peer, protocol: str, dst: Peer,
              ipblock_pods: bool) -> tuple[Ranges, list[str]]:
        """Ports ``pod``'s ``direction`` admits for ``other``, and why."""
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        selecting = [p for p in self.policies if _namespace(p) == pod.namespace
                     and selects(p["spec"].get("podSelector", {}), pod.labels) and direction in _policy_types(p)]
        if not selecting:
            return ALL_PORTS, [f"{pod.name}: no policy isolates its {key}"]
        allowed: list[tuple[int, int]] = []
        why = []
        for p in selecting:
            for i, rule in enumerate(p["spec"].get(key) or []):
                peers = rule.get(peers_key)
                if peers and not any(self._peer_matches(peer, other, _namespace(p), ipblock_pods) for peer in peers):
                    continue
                ports = _rule_ports(rule.get("ports"), protocol, dst)
                if ports:
                    allowed += ports
                    why.append(f"{_ref(p)} {key}[{i}] admits {other.name} on {protocol} {_show(ports)}")
        if not allowed:
            names = ", ".join(_ref(p) for p in selecting)
            return (), [f"{pod.name}: {key} isolated by {names}; no rule admits {other.name} on {protocol}"]
        return _union(allowed), why

    def open_ports(self, src: Peer, dst: Peer, protocol: str = "TCP", *,
                   ipblock_matches_pods: bool) -> tuple[Ranges, list[str]]:
        """Ports of ``protocol`` on which ``src`` may connect to ``dst``, and why."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol {protocol!r}")
        ports: Ranges = ALL_PORTS
        why: list[str] = []
        if isinstance(src, Pod):
            egress, reasons = self._side(src, "Egress", dst, protocol, dst, ipblock_matches_pods)
            ports, why = _intersect(ports, egress), why + reasons
        if isinstance(dst, Pod):
            ingress, reasons = self._side(dst, "Ingress", src, protocol, dst, ipblock_matches_pods)
            ports, why = _intersect(ports, ingress), why + reasons
        return ports, why

    def check(self, src: Peer, dst: Peer, port: int | None = None, protocol: str = "TCP", *,
              ipblock_matches_pods: bool) -> Verdict:
        """Whether ``src`` may connect to ``dst`` on ``port`` (None: on some port), for one
        interpretation of ipBlock against pod IPs."""
        ports, why = self.open_ports(src, dst, protocol, ipblock_matches_pods=ipblock_matches_pods)
        ok = bool(ports) if port is None else _contains(ports, port)
        return Verdict(ok, "; ".join(why))

    def allowed(self, src: Peer, dst: Peer, port: int, protocol: str = "TCP") -> Verdict:
        """True when ``src`` may reach ``dst`` on ``port`` on every CNI."""
        return self._both(src, dst, port, protocol, want=True)

    def refused(self, src: Peer, dst: Peer, port: int | None = None, protocol: str = "TCP") -> Verdict:
        """True when ``src`` cannot reach ``dst`` on ``port`` (None: on any port) on any CNI."""
        return self._both(src, dst, port, protocol, want=False)

    def _both(self, src: Peer, dst: Peer, port: int | None, protocol: str, *, want: bool) -> Verdict:
        reasons = []
        holds = True
        for ipblock in (False, True):
            v = self.check(src, dst, port, protocol, ipblock_matches_pods=ipblock)
            if v.holds != want:
                holds = False
            reasons.append(f"[ipBlock {'matches' if ipblock else 'ignores'} pod IPs] "
                           f"{'allowed' if v.holds else 'refused'}: {v.why}")
        what = f"{src.name} -> {dst.name}:{protocol}/{port if port is not None else 'any'}"
        return Verdict(holds, f"{what} {'allowed' if want else 'refused'} everywhere: {holds}\n  "
                              + "\n  ".join(reasons))

    def explain(self, src: Peer, dst: Peer, port: int | None = None, protocol: str = "TCP") -> str:
        return self._both(src, dst, port, protocol, want=True).why


# --- policies --------------------------------------------------------------------------------


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _ref(obj: Mapping[str, Any]) -> str:
    return f"NetworkPolicy {_namespace(obj)}/{(obj.get('metadata') or {}).get('name')}"


def _policy_types(policy: Mapping[str, Any]) -> set[str]:
    spec = policy["spec"]
    types = spec.get("policyTypes")
    if types:
        return set(types)
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


def _check_policy(policy: Mapping[str, Any]) -> None:
    spec = policy.get("spec")
    if not isinstance(spec, dict):
        raise PolicyError(f"{_ref(policy)}: no spec")
    unknown = set(spec) - {"podSelector", "policyTypes", "ingress", "egress"}
    if unknown:
        raise PolicyError(f"{_ref(policy)}: unknown spec keys {sorted(unknown)}")
    if "podSelector" not in spec:
        raise PolicyError(f"{_ref(policy)}: spec.podSelector is required")
    for t in spec.get("policyTypes") or []:
        if t not in ("Ingress", "Egress"):
            raise PolicyError(f"{_ref(policy)}: policyType {t!r}")
    for key, peers_key in (("ingress", "from"), ("egress", "to")):
        for rule in spec.get(key) or []:
            unknown = set(rule) - {peers_key, "ports"}
            if unknown:
                raise PolicyError(f"{_ref(policy)}: unknown {key} rule keys {sorted(unknown)}")
            for entry in rule.get("ports") or []:
                for proto in PROTOCOLS:
                    _rule_ports([entry], proto, Address("0.0.0.0"))  # raises on a malformed entry
            for peer in rule.get(peers_key) or []:
                if not isinstance(peer, dict) or not peer or set(peer) - {"podSelector", "namespaceSelector",
                                                                           "ipBlock"}:
                    raise PolicyError(f"{_ref(policy)}: a peer has podSelector/namespaceSelector/ipBlock, "
                                      f"got {peer!r}")
                if "ipBlock" in peer:
                    if len(peer) > 1:
                        raise PolicyError(f"{_ref(policy)}: ipBlock cannot be combined with selectors ({peer!r})")
                    _ip_in_block("0.0.0.0", peer["ipBlock"])  # raises on a malformed block
                for sel in ("podSelector", "namespaceSelector"):
                    if sel in peer:
                        selects(peer[sel], {})  # raises on a malformed selector


def _show(ports: Ranges) -> str:
    if ports == ALL_PORTS:
        return "every port"
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ports)


# --- pods from pod templates -------------------------------------------------------------------


def _templates(obj: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(suffix, pod template) of every pod template in a workload object."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield "", spec.get("template") or {}
    elif kind == "CronJob":
        yield "", ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    elif kind == "Pod":
        yield "", {"metadata": obj.get("metadata") or {}, "spec": spec}
    elif kind in ("RayCluster", "RayJob"):
        cluster = spec.get("rayClusterSpec") if kind == "RayJob" else spec
        if cluster:
            yield "/head", (cluster.get("headGroupSpec") or {}).get("template") or {}
            for group in cluster.get("workerGroupSpecs") or []:
                yield f"/{group.get('groupName')}", group.get("template") or {}
        if kind == "RayJob" and spec.get("submitterPodTemplate"):
            yield "/submitter", spec["submitterPodTemplate"]


def pods_of(objects: Iterable[Mapping[str, Any]], pod_cidr: str = "10.244.0.0/16") -> list[Pod]:
    """One pod per pod template found in ``objects``, with IPs taken in order from ``pod_cidr``."""
    hosts = ipaddress.ip_network(pod_cidr).hosts()
    next(hosts)  # skip the first address (a gateway on most CNIs)
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        for suffix, template in _templates(obj):
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            ports = tuple(Port(str(p["name"]), int(p["containerPort"]), str(p.get("protocol", "TCP")))
                          for c in (template.get("spec") or {}).get("containers") or []
                          for p in c.get("ports") or [] if p.get("name"))
            out.append(Pod(f"{obj.get('kind')}/{meta.get('name')}{suffix}", str(meta.get("namespace") or "default"),
                           labels, str(next(hosts)), ports))
    return out
