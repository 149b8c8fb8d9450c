"""Namespace governance: ResourceQuota and LimitRange (opt-in, render-only).

Rendered first so ``render | kubectl apply`` installs them before the workload; the
live path never applies them (namespace-wide quota is cluster-admin territory, and a
too-tight quota applied mid-run would block the run's own pods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s.render.meta import metadata, name_of, quantity

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec


def governance_objects(infra: InfraSpec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    quota = infra["infra"]["resourceQuota"]
    if quota is not None:
        out.append({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": metadata(infra, name_of(infra, "quota"), "governance"),
            "spec": {"hard": {k: quantity(v) for k, v in quota["hard"].items()}},
        })
    limit_range = infra["infra"]["limitRange"]
    if limit_range is not None:
        out.append({
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": metadata(infra, name_of(infra, "limits"), "governance"),
            "spec": {"limits": limit_range["limits"]},
        })
    return out
