"""Does the cluster's network plugin enforce NetworkPolicy? Read from what it runs.

The API server accepts a NetworkPolicy whatever the plugin; only the plugin's node agent makes
it do anything. So the answer comes from the plugin's DaemonSets (of every namespace: the Tigera
operator puts ``calico-node`` in ``calico-system``, flannel's manifest in ``kube-flannel``), the
flags of those that can run either way, and k3s's node annotation:

* enforcing by name: Calico (``calico-node``, also under the Tigera operator), Cilium, Antrea,
  Weave, kube-router, Canal (Calico's policy on flannel), Romana, kind's ``kube-network-policies``
  (kind >= v0.24), GKE Dataplane V2's ``anetd`` (policy always on);
* ``aws-node`` (the EKS VPC CNI): its node agent container (image ``aws-network-policy-agent``,
  VPC CNI >= v1.14) enforces only with ``--enable-network-policy=true``; the manifest and the
  EKS add-on ship ``false``, so on a default EKS cluster a NetworkPolicy is inert;
* flannel alone never enforces;
* k3s runs kube-router's policy controller inside its own binary (no DaemonSet) unless its
  servers were started with ``--disable-network-policy``: the ``k3s.io/node-args`` annotation
  of its server nodes says which.

:func:`enforcement` is pure (``doctor`` passes what it read); :func:`read_enforcement` lists for
``run``, which warns in one line before applying a sandbox policy that would be inert.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.client import KubeClient, allowed
from dockyard_k8s.live.kinds import KINDS
from dockyard_k8s.plain import dig

ENFORCING = ("calico", "cilium", "antrea", "weave", "kube-router", "canal", "romana", "kube-network-policies")
GKE_DATAPLANE_V2 = "anetd"
AWS_NODE = "aws-node"
AWS_AGENT_IMAGE = "aws-network-policy-agent"  # the aws-node container that enforces (aws-eks-nodeagent)
AWS_FLAG = "--enable-network-policy"
K3S_ARGS = "k3s.io/node-args"
K3S_OFF = "--disable-network-policy"
K3S_SERVERS = "node-role.kubernetes.io/control-plane"  # the nodes that carry the servers' args
# Where the plugins' DaemonSets are when the caller may not list every namespace's.
PLUGIN_NAMESPACES = ("kube-system", "calico-system", "kube-flannel")
AWS_HINT = ("turn on the VPC CNI's network policy agent: aws eks update-addon --cluster-name CLUSTER "
            "--addon-name vpc-cni --configuration-values '{\"enableNetworkPolicy\": \"true\"}' (self-managed: "
            f"{AWS_FLAG}=true on aws-node's node agent and enable-network-policy-controller: \"true\" in the "
            "amazon-vpc-cni ConfigMap), or install Calico or Cilium")


@dataclass(frozen=True, slots=True)
class Enforcement:
    enforced: bool | None  # None: no plugin recognised (or nothing readable)
    detail: str
    hint: str = ""


def first_names(names: list[str], shown: int) -> str:
    """The first ``shown`` names, then how many in all: ``a, b, … (9 in all)``."""
    text = ", ".join(names[:shown])
    return text if len(names) <= shown else f"{text}, … ({len(names)} in all)"


def _where(ds: dict[str, Any]) -> str:
    meta = ds.get("metadata") or {}
    return f"{meta.get('namespace') or 'kube-system'}/{meta.get('name')}"


def flag_value(args: list[str], flag: str) -> str | None:
    """The value of a Go-style flag in ``args`` (``--f=v``, ``-f=v``, ``--f v``; a bare boolean
    ``--f`` is ``true``; the last one given wins, as in Go's flag package), or None when absent."""
    names = (flag, flag[1:]) if flag.startswith("--") else (flag,)
    found = None
    for i, arg in enumerate(args):
        name, eq, value = str(arg).partition("=")
        if name not in names:
            continue
        nxt = str(args[i + 1]) if i + 1 < len(args) else ""
        found = value if eq else nxt if nxt and not nxt.startswith("-") else "true"
    return found


def _aws_agent(ds: dict[str, Any]) -> bool | None:
    """aws-node's node agent: True with --enable-network-policy=true, False without (None: no agent)."""
    for c in dig(ds, "spec", "template", "spec", "containers") or []:
        if AWS_AGENT_IMAGE in str(c.get("image", "")) or c.get("name") == "aws-eks-nodeagent":
            value = flag_value([*(c.get("command") or []), *(c.get("args") or [])], AWS_FLAG)
            return (value or "false").lower() == "true"
    return None


def _k3s(nodes: list[dict[str, Any]] | None, version: dict[str, Any] | None) -> tuple[bool, list[str] | None]:
    """(is k3s, the args of a server node, None when no node says them)."""
    is_k3s = "+k3s" in str((version or {}).get("gitVersion", ""))
    server_args: list[str] | None = None
    for n in nodes or []:
        raw = dig(n, "metadata", "annotations", K3S_ARGS)
        if raw is None:
            continue
        is_k3s = True
        try:
            args = [str(a) for a in json.loads(raw)]
        except (ValueError, TypeError):
            continue
        if args[:1] == ["server"]:
            server_args = args
    return is_k3s, server_args


def enforcement(daemonsets: list[dict[str, Any]] | None, nodes: list[dict[str, Any]] | None = None,
                version: dict[str, Any] | None = None) -> Enforcement:
    """Whether NetworkPolicy is enforced, from the DaemonSets (None: not readable), the nodes
    and ``/version``."""
    enforcing: list[str] = []
    inert: list[tuple[str, str]] = []  # (what, why it does not enforce)
    names: list[str] = []
    for ds in daemonsets or []:
        name = str((ds.get("metadata") or {}).get("name", ""))
        names.append(_where(ds))
        if name == GKE_DATAPLANE_V2:
            enforcing.append(f"{_where(ds)} (GKE Dataplane V2)")
        elif name == AWS_NODE:
            agent = _aws_agent(ds)
            if agent:
                enforcing.append(f"{_where(ds)} (network policy agent, {AWS_FLAG}=true)")
            else:
                inert.append((_where(ds), f"its network policy agent runs without {AWS_FLAG}=true (the EKS default)"
                              if agent is False else "no network policy agent container (VPC CNI < v1.14)"))
        elif any(c in name for c in ENFORCING):
            enforcing.append(_where(ds))
        elif "flannel" in name:
            inert.append((_where(ds), "flannel never enforces NetworkPolicy"))
    is_k3s, server_args = _k3s(nodes, version)
    if is_k3s:
        off = server_args is not None and (flag_value(server_args, K3S_OFF) or "false").lower() != "false"
        if off:
            inert.append(("k3s", f"its servers run with {K3S_OFF}"))
        else:
            enforcing.append("k3s (its embedded kube-router policy controller" +
                             ("" if server_args is not None else f"; {K3S_ARGS} not readable, default assumed") + ")")
    if enforcing:
        also = f" ({'; '.join(f'{w}: {why}' for w, why in inert)})" if inert else ""
        return Enforcement(True, f"enforced by {', '.join(enforcing)}{also}")
    if inert:
        hint = next((AWS_HINT for w, _ in inert if w.endswith("/" + AWS_NODE)),
                    "restart the k3s servers without --disable-network-policy, or install Calico or Cilium"
                    if inert[0][0] == "k3s" else "install a policy engine (Calico: canal on flannel; or Cilium)")
        return Enforcement(False, "not enforced: " + "; ".join(f"{w}: {why}" for w, why in inert), hint)
    if daemonsets is None:
        return Enforcement(None, "cannot list DaemonSets to recognise the network plugin")
    return Enforcement(None, f"no network plugin recognised among the DaemonSets ({first_names(names, 6) or 'none'}): "
                             "NetworkPolicy enforcement unknown",
                       "check that your network plugin enforces NetworkPolicy (Calico, Cilium, Antrea, kube-router "
                       "and GKE Dataplane V2 do; flannel alone does not): otherwise the sandbox policy is inert")


def list_daemonsets(client: KubeClient) -> list[dict[str, Any]] | None:
    """Every namespace's DaemonSets, else (403) those of :data:`PLUGIN_NAMESPACES` that may be
    listed; None when none may."""
    every = allowed(lambda: client.list(KINDS["DaemonSet"], None)[0])
    if every is not None:
        return every
    found: list[dict[str, Any]] | None = None
    for ns in PLUGIN_NAMESPACES:
        try:
            items = client.list(KINDS["DaemonSet"], ns)[0]
        except ClusterError as e:
            if e.status not in (401, 403, 404):
                raise
            continue
        found = [*(found or []), *items]
    return found


def read_enforcement(client: KubeClient) -> Enforcement:
    """:func:`enforcement` of the live cluster, for ``run`` (k3s's server nodes read only on k3s)."""
    version = client.version()
    nodes = None
    if "+k3s" in str(version.get("gitVersion", "")):
        nodes = allowed(lambda: client.list(KINDS["Node"], None, label_selector=K3S_SERVERS)[0])
    return enforcement(list_daemonsets(client), nodes, version)


def inert_warning(client: KubeClient) -> str:
    """``run``'s one line when the sandbox's NetworkPolicy will not be enforced ("" otherwise,
    and when the API does not let us tell)."""
    try:
        found = read_enforcement(client)
    except ClusterError:
        return ""
    if found.enforced is not False:
        return ""
    return (f"warning: NetworkPolicy {found.detail}: the sandbox's NetworkPolicy will be inert, its pods not isolated "
            "(`dockyard-k8s doctor` says how to turn enforcement on)")
