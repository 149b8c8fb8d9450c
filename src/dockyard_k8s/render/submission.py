"""What a run submits to the Ray Jobs API (attach mode, ``job submit``): entrypoint + runtime_env.

In ``rayjob``/``bringup``/``job``/``statefulset`` the GPU pods are ours: the recipe ConfigMap is
mounted at ``/etc/dockyard-k8s/recipe.yaml`` and ``DOCKYARD_SANDBOX_URLS`` is in their env. An
attached cluster (``launch.mode: attach``) is someone else's: its pods have neither, so both
travel with the job, in its ``runtime_env``:

* ``env_vars``: ``DOCKYARD_SANDBOX_URLS`` (when ``sandbox.injectUrls``), ``DOCKYARD_RECIPE`` (the
  recipe's path for the job), ``DOCKYARD_RECIPE_YAML`` (its text) and
  ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``, over the user's ``launch.runtimeEnv.env_vars``;
* the entrypoint first writes ``$DOCKYARD_RECIPE_YAML`` to that path, then runs
  ``launch.entrypoint`` with ``{recipe}`` pointing at it (and the overrides appended).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.render.meta import run_name
from dockyard_k8s.render.ray import entrypoint
from dockyard_k8s.render.sandbox import sandbox_env
from dockyard_k8s.yamlfile import dump as dump_yaml

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

ATTACH_RECIPE_DIR = "/tmp/dockyard-k8s"  # on the attached cluster's head, one directory per run


@dataclass(frozen=True, slots=True)
class Submission:
    entrypoint: str
    runtime_env: dict[str, Any] | None


def attach_recipe_path(infra: InfraSpec) -> str:
    return f"{ATTACH_RECIPE_DIR}/{run_name(infra)}/recipe.yaml"


def submission(infra: InfraSpec, recipe: dict[str, Any], job_args: list[str], *,
               command: str | None = None) -> Submission:
    """The entrypoint and runtime_env the run's Ray job is submitted with; ``command`` replaces
    ``launch.entrypoint`` as typed (``job submit --entrypoint``: no overrides appended)."""
    user_env = dict(infra["launch"]["runtimeEnv"])
    if infra["launch"]["mode"] != "attach":
        return Submission(command or entrypoint(infra, job_args), user_env or None)

    path = attach_recipe_path(infra)
    env_vars = {**(user_env.get("env_vars") or {}), "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
                "DOCKYARD_RECIPE": path, "DOCKYARD_RECIPE_YAML": dump_yaml(recipe), **sandbox_env(infra)}
    directory = shlex.quote(path.rsplit("/", 1)[0])
    write = f'mkdir -p {directory} && printf %s "$DOCKYARD_RECIPE_YAML" > {shlex.quote(path)}'
    command = command.replace("{recipe}", path) if command else entrypoint(infra, job_args, recipe_path=path)
    return Submission(f"{write} && {command}", {**user_env, "env_vars": env_vars})
