"""The sandbox pool: GPU-free executors of untrusted agent code behind a ClusterIP.

Order: NetworkPolicy first, so executor pods never run a moment without their policy;
then its ServiceAccount, the Deployment, its Service (``POST /task/submit`` on port 9090) and
the PDB.

Hardening beyond the spec's baseline, because the pool runs untrusted code:
* no service-account token is mounted (the code gets no Kubernetes credentials), and the pods
  run as a dedicated, empty ServiceAccount (``<run>-sandbox``), never the namespace's default
  one: EKS Pod Identity, IRSA and workload identity inject cloud credentials by ServiceAccount,
  whatever ``automountServiceAccountToken`` says;
* ``enableServiceLinks: false`` (no env vars advertising every Service in the namespace);
* ``NVIDIA_VISIBLE_DEVICES=void`` so a node whose default runtime is nvidia exposes no GPU;
* ``sandbox.runtimeClassName`` (gVisor, Kata) and ``sandbox.hostUsers: false`` (a user
  namespace) when set;
* its NetworkPolicy (``render/network.py``): ingress only from the run's Ray pods, egress
  to cluster DNS and the public internet, never to private or metadata space.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dockyard_k8s.plain import clone
from dockyard_k8s.render import meta
from dockyard_k8s.render.meta import metadata, name_of, placement, pod_common, pod_labels, quantity, selector
from dockyard_k8s.render.network import sandbox_policy

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec, SandboxResources


def sandbox_env(infra: InfraSpec) -> dict[str, str]:
    """``DOCKYARD_SANDBOX_URLS``, the cluster DNS URL of the sandbox Service, when the run injects it."""
    sb, ns, domain = infra["sandbox"], infra["infra"]["namespace"], infra["infra"]["clusterDomain"]
    if not (sb["enabled"] and sb["injectUrls"]):
        return {}
    return {"DOCKYARD_SANDBOX_URLS": f"http://{name_of(infra, 'sandbox')}.{ns}.svc.{domain}:{sb['port']}"}


def sandbox_objects(infra: InfraSpec) -> list[dict[str, Any]]:
    sb = infra["sandbox"]
    if not sb["enabled"]:
        return []
    out = []
    if sb["networkPolicy"]["enabled"]:
        out.append(sandbox_policy(infra))
    if sb["serviceAccountName"] is None:
        # empty on purpose: no token, no image pull secrets, no cloud identity annotation
        out.append({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": metadata(infra, name_of(infra, "sandbox"), "sandbox"),
                    "automountServiceAccountToken": False})
    out.append(_deployment(infra))
    out.append(meta.http_service(metadata(infra, name_of(infra, "sandbox"), "sandbox"), selector(infra, "sandbox"),
                                 sb["port"]))
    if sb["pdb"]["enabled"]:
        out.append(meta.pdb(metadata(infra, name_of(infra, "sandbox"), "sandbox"), sb["pdb"]["maxUnavailable"],
                            {"matchLabels": selector(infra, "sandbox")}))
    return out


def _resources(res: SandboxResources) -> dict[str, Any]:
    requests = {"cpu": res["cpu"], "memory": res["memory"], "ephemeral-storage": res["ephemeralStorage"]}
    limits = {
        "cpu": res["cpuLimit"] or res["cpu"],
        "memory": res["memoryLimit"] or res["memory"],
        "ephemeral-storage": res["ephemeralStorageLimit"] or res["ephemeralStorage"],
    }
    return {"requests": {k: quantity(v) for k, v in requests.items()},
            "limits": {k: quantity(v) for k, v in limits.items()}}


def container_security(sec: Mapping[str, Any]) -> dict[str, Any]:
    """The hardening baseline: no escalation, no capabilities, RuntimeDefault seccomp; opt-ins."""
    ctx: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if sec["runAsNonRoot"]:
        ctx["runAsNonRoot"] = True
    if sec["runAsUser"] is not None:
        ctx["runAsUser"] = sec["runAsUser"]
    if sec["readOnlyRootFilesystem"]:
        ctx["readOnlyRootFilesystem"] = True
    return ctx


def _deployment(infra: InfraSpec) -> dict[str, Any]:
    sb = infra["sandbox"]
    sec = sb["security"]
    container: dict[str, Any] = {"name": "executor", "image": sb["image"], "imagePullPolicy": sb["imagePullPolicy"]}
    if sb["command"] is not None:
        container["command"] = clone(sb["command"])
    if sb["args"] is not None:
        container["args"] = sb["args"]
    container["ports"] = [{"name": "http", "containerPort": sb["port"], "protocol": "TCP"}]
    container["env"] = meta.env_list({"NVIDIA_VISIBLE_DEVICES": "void", **sb["env"]})
    container["resources"] = _resources(sb["resources"])
    if sb["probes"]:
        container["readinessProbe"] = {"tcpSocket": {"port": "http"}, "periodSeconds": 10}
        container["livenessProbe"] = {"tcpSocket": {"port": "http"}, "initialDelaySeconds": 30,
                                      "periodSeconds": 20, "failureThreshold": 6}
    volumes = []
    if sec["enabled"]:
        container["securityContext"] = container_security(sec)
        if sec["readOnlyRootFilesystem"]:
            mounts = [(f"scratch-{i}", path) for i, path in enumerate(sec["writablePaths"])]
            container["volumeMounts"] = [{"name": n, "mountPath": p} for n, p in mounts]
            volumes = [{"name": n, "emptyDir": {}} for n, _ in mounts]

    pod: dict[str, Any] = {"serviceAccountName": sb["serviceAccountName"] or name_of(infra, "sandbox"),
                           "automountServiceAccountToken": sec["automountServiceAccountToken"],
                           "enableServiceLinks": False, **pod_common(infra)}
    if sb["runtimeClassName"]:
        pod["runtimeClassName"] = sb["runtimeClassName"]
    if sb["hostUsers"] is not None:
        pod["hostUsers"] = sb["hostUsers"]
    if sec["enabled"]:
        pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"},
                                  **({"runAsNonRoot": True} if sec["runAsNonRoot"] else {})}
    pod.update(placement(sb))
    if sb["topologySpreadConstraints"]:
        pod["topologySpreadConstraints"] = [
            {**c, "labelSelector": c.get("labelSelector") or {"matchLabels": selector(infra, "sandbox")}}
            for c in sb["topologySpreadConstraints"]
        ]
    pod["containers"] = [container]
    if volumes:
        pod["volumes"] = volumes
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(infra, name_of(infra, "sandbox"), "sandbox"),
        "spec": {
            "replicas": sb["replicas"],
            "selector": {"matchLabels": selector(infra, "sandbox")},
            "template": {"metadata": {"labels": pod_labels(infra, "sandbox")}, "spec": pod},
        },
    }
