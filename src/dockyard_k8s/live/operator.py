"""``doctor``'s KubeRay operator check: its Deployment is ready and watches the run's namespace.

KubeRay's ``--watch-namespace`` (ray-operator/main.go) is a comma-separated list; empty or absent
means every namespace. The Helm chart passes it as two arguments (``--watch-namespace`` then
``ns1,ns2``, from ``watchNamespace`` or ``singleNamespaceInstall``), other installs as one
(``--watch-namespace=ns1,ns2``); Go's flag package takes ``-watch-namespace`` too. With
``--config FILE`` every flag is ignored and the file's ``watchNamespace`` counts, which doctor
does not read. A RayJob in a namespace no ready operator watches is never reconciled: ``run``
would wait for a status that never comes, so doctor fails on it.
"""

from __future__ import annotations

import re
from typing import Any

from dockyard_k8s.live.checks import Check
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS
from dockyard_k8s.live.netpol import first_names, flag_value
from dockyard_k8s.plain import dig

WATCH_FLAG = "--watch-namespace"
CONFIG_FLAG = "--config"
SHOWN = 5  # namespaces named in a line, then "… N in all"
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # $(VAR) in a container's args

# How the KubeRay operator's Deployment is labelled: the Helm chart, and the kustomize
# manifests (ray-operator/config/default).
OPERATOR_SELECTORS = ("app.kubernetes.io/name=kuberay-operator",
                      "app.kubernetes.io/name=kuberay,app.kubernetes.io/component=kuberay-operator")


def operator_deployments(client: KubeClient) -> list[dict[str, Any]]:
    """The KubeRay operator Deployments of every namespace, however it was installed."""
    found: dict[str, dict[str, Any]] = {}
    for selector in OPERATOR_SELECTORS:
        for d in client.list(KINDS["Deployment"], None, label_selector=selector)[0]:
            found.setdefault(str((d.get("metadata") or {}).get("uid") or id(d)), d)
    return list(found.values())


def _expand(value: str, env: dict[str, str]) -> str | None:
    """``$(VAR)`` in an argument as the kubelet expands it from the container's env; None when
    a variable's value is not known from the spec alone."""
    if any(name not in env for name in _VAR.findall(value)):
        return None
    return _VAR.sub(lambda m: env[m.group(1)], value)


def watch_namespaces(deployment: dict[str, Any]) -> list[str] | None:
    """The namespaces the operator of ``deployment`` watches: [] for every namespace, None when
    the spec does not say (a ``--config`` file, a variable set at run time)."""
    namespace = str((deployment.get("metadata") or {}).get("namespace") or "")
    for c in dig(deployment, "spec", "template", "spec", "containers") or []:
        args = [str(a) for a in [*(c.get("command") or [])[1:], *(c.get("args") or [])]]
        env: dict[str, str] = {}
        for e in c.get("env") or []:
            if "value" in e:
                env[str(e.get("name"))] = str(e["value"])
            elif dig(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace":
                env[str(e.get("name"))] = namespace
        if flag_value(args, CONFIG_FLAG) is not None:
            return None
        value = flag_value(args, WATCH_FLAG)
        if value is None:
            continue
        expanded = _expand(value, env)
        if expanded is None:
            return None
        return [n for n in expanded.split(",") if n]
    return []


def check_operator(deployments: list[dict[str, Any]] | None, needed: bool, namespace: str = "") -> Check:
    """Ready, and watching ``namespace`` (``--watch-namespace``)."""
    if not needed:
        return Check("KubeRay operator", None, "not needed by this launch mode", fatal=False)
    if deployments is None:
        return Check("KubeRay operator", None, "cannot tell (no permission to list Deployments cluster-wide)",
                     fatal=False)
    if not deployments:
        return Check("KubeRay operator", False, "no kuberay-operator Deployment found",
                     "install it (helm install kuberay-operator kuberay/kuberay-operator)")
    ready = [d for d in deployments if int((d.get("status") or {}).get("readyReplicas") or 0) > 0]

    def where(d: dict[str, Any]) -> str:
        return f"{dig(d, 'metadata', 'namespace')}/{dig(d, 'metadata', 'name')}"

    if not ready:
        return Check("KubeRay operator", False, f"{', '.join(where(d) for d in deployments)}: not ready",
                     "kubectl -n <ns> describe deploy kuberay-operator (image pull? crash?)")
    watched = [(d, watch_namespaces(d)) for d in ready]
    if not namespace or any(w == [] or (w is not None and namespace in w) for _, w in watched):
        scope = next((f" (watches {first_names(w, SHOWN)})" for _, w in watched if w), "")
        return Check("KubeRay operator", True, f"{', '.join(where(d) for d in ready)} ready{scope}")
    if any(w is None for _, w in watched):
        return Check("KubeRay operator", None, f"{', '.join(where(d) for d in ready)} ready; whether it watches "
                                               f"{namespace} is in its --config file or a variable (not read)",
                     fatal=False)
    detail = "; ".join(f"{where(d)} watches only {first_names(w or [], SHOWN)}" for d, w in watched)
    return Check("KubeRay operator", False, f"{detail} ({WATCH_FLAG}), not {namespace}: KubeRay would never act "
                                            "on the run's RayJob or RayCluster",
                 f"add {namespace} to the operator's {WATCH_FLAG} (Helm: watchNamespace, with the chart's Role "
                 f"in {namespace}), or run in a watched namespace (-n)")
