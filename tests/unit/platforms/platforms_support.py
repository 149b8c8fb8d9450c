"""Helpers of the platforms tests (a uniquely named module: test files import it by name)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from dockyard_k8s import kube
from dockyard_k8s.bundle import Bundle, build_bundle
from dockyard_k8s.config.layering import Layers
from support.paths import REPO, shared_crds

EXAMPLES = REPO / "examples"
CRDS = shared_crds()

RECIPE = str(EXAMPLES / "grpo_swe.yaml")
IMAGE = "registry.example.com/ubuntu-swe:vllm-1.4.2"

BundleOf = Callable[..., Bundle]


def make_bundle_of(tmp_path: Path) -> BundleOf:
    """bundle_of(infra_dict, *sets, recipe=...) -> the Bundle (built, rendered, checked), with no user
    defaults file in play. Not the render/ tests' ``render`` fixture: that one returns objects."""

    def _render(infra: dict[str, Any] | None = None, *sets: str, recipe: str = RECIPE) -> Bundle:
        doc = {"infra": {"image": IMAGE}}
        for key, value in (infra or {}).items():
            doc[key] = {**doc.get(key, {}), **copy.deepcopy(value)}
        path = tmp_path / "infra.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return build_bundle(recipe, str(path), Layers(sets=list(sets), env={"HOME": str(tmp_path)}))

    return _render


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
    return found[0]


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objects]


def pods_by_fleet(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(fleet label, pod spec) of every pod template of every object."""
    for obj in objects:
        for t in kube.pod_templates(obj):
            yield t.metadata["labels"].get("dockyard-k8s/fleet", ""), t.spec


def pods_with_replicas(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(fleet, pod spec, how many such pods run) for every pod template of every object."""
    for obj in objects:
        for t in kube.pod_templates(obj):
            fleet = (t.metadata.get("labels") or {}).get("dockyard-k8s/fleet", "")
            yield fleet, t.spec, 1 if t.replicas is None else t.replicas


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}
