"""Builders for lint tests: objects that pass every rule, to break one thing at a time.

(A plain module, not conftest.py: tests import these builders by name.)
"""

from __future__ import annotations

import copy
from typing import Any

from dockyard_k8s.lint.engine import lint_objects
from dockyard_k8s.lint.model import LintConfig, Obj

DIGEST = "sha256:" + "a" * 64
IMAGE = f"registry.example.com/app:1.0@{DIGEST}"
POD = ("spec", "template", "spec")
# A CPU pod kept off GPU nodes (lint's cpu-pod-on-gpu-nodes).
OFF_GPU_NODES = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]}]}]}}}
C0 = (*POD, "containers", 0)


def hardened_container(name: str = "app") -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080}],
        "env": [{"name": "MODE", "value": "fast"}],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                      "limits": {"memory": "1Gi", "ephemeral-storage": "1Gi"}},
        "readinessProbe": {"tcpSocket": {"port": "http"}},
        "livenessProbe": {"tcpSocket": {"port": "http"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True, "runAsNonRoot": True, "runAsUser": 1000,
                            "seccompProfile": {"type": "RuntimeDefault"}},
    }


def deployment(untrusted: bool = False) -> dict[str, Any]:
    labels = {"app": "web"} | ({"dockyard-k8s/fleet": "sandbox"} if untrusted else {})
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"automountServiceAccountToken": False,
                                       **({"runtimeClassName": "gvisor", "serviceAccountName": "web"}
                                          if untrusted else {}),
                                       "containers": [hardened_container()],
                                       "affinity": OFF_GPU_NODES}}},
    }


def gpu_job() -> dict[str, Any]:
    c = hardened_container("trainer")
    c.pop("readinessProbe")
    c.pop("livenessProbe")
    c.pop("ports")
    c["resources"] = {"requests": {"cpu": "8", "memory": "64Gi"},
                      "limits": {"memory": "64Gi", "nvidia.com/gpu": 1}}
    c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "team"},
        "spec": {"ttlSecondsAfterFinished": 600, "activeDeadlineSeconds": 7200,
                 "template": {"metadata": {"labels": {"app": "train"}},
                              "spec": {"restartPolicy": "Never", "priorityClassName": "gpu",
                                       "automountServiceAccountToken": False,
                                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                        "effect": "NoSchedule"}],
                                       "containers": [c],
                                       "volumes": [{"name": "dshm",
                                                    "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]}}},
    }


def policy_objects() -> list[dict[str, Any]]:
    """NetworkPolicy, PDB, Service, quota and LimitRange that make the workloads above clean."""
    return [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "all", "namespace": "team"},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "team"},
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"},
         "spec": {"type": "ClusterIP", "selector": {"app": "web"},
                  "ports": [{"port": 80, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "team"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "16"}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team"},
         "spec": {"limits": [{"type": "Container", "default": {"memory": "1Gi"}}]}},
    ]


def clean_set(untrusted: bool = False) -> list[dict[str, Any]]:
    return [deployment(untrusted), gpu_job(), *policy_objects()]


def run_lint(objects: list[dict[str, Any]], config: LintConfig | None = None):
    return lint_objects([Obj(copy.deepcopy(o)) for o in objects], config)

