"""The resolved recipe as a ConfigMap, mounted read-only into every GPU pod."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_k8s.render.meta import metadata, name_of
from dockyard_k8s.yamlfile import dump as dump_yaml

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

RECIPE_KEY = "recipe.yaml"
RECIPE_DIR = "/etc/dockyard-k8s"
RECIPE_PATH = f"{RECIPE_DIR}/{RECIPE_KEY}"


def recipe_configmap(infra: InfraSpec, recipe: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(infra, name_of(infra, "recipe"), "recipe"),
        "data": {RECIPE_KEY: dump_yaml(recipe)},
    }
