"""A run's bundle: resolve the config, render the objects, check them, fail closed.

Every command that needs the objects of a run (check, render, lint, plan, run...) goes
through :func:`build_bundle`, so what ``render`` prints is exactly what ``run`` applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from dockyard_k8s.config.loader import RunConfig, Setting, load_run
from dockyard_k8s.config.yamlio import Path, format_path
from dockyard_k8s.errors import ConfigError, ManifestError
from dockyard_k8s.render import render_run
from dockyard_k8s.validate.kuberay import kuberay_problems

# Which infra key produced a field of the rendered RayJob / RayCluster, so a KubeRay rule
# broken by the config is reported at the line the user wrote. Longest prefix wins.
_ORIGIN: dict[Path, Path] = {
    ("metadata", "name"): ("launch", "name"),
    ("spec", "submissionMode"): ("launch", "submissionMode"),
    ("spec", "suspend"): ("launch", "suspend"),
    ("spec", "backoffLimit"): ("launch", "backoffLimit"),
    ("spec", "ttlSecondsAfterFinished"): ("launch", "ttlSecondsAfterFinished"),
    ("spec", "activeDeadlineSeconds"): ("launch", "activeDeadlineSeconds"),
    ("spec", "preRunningDeadlineSeconds"): ("launch", "preRunningDeadlineSeconds"),
    ("spec", "deletionStrategy"): ("launch", "deletionRules"),
    ("spec", "runtimeEnvYAML"): ("launch", "runtimeEnv"),
    ("spec", "submitterPodTemplate"): ("launch", "submissionMode"),
    ("spec", "rayClusterSpec"): ("kuberay", "spec"),
    ("spec",): ("kuberay", "spec"),  # a bare RayCluster's spec
}


class Bundle(NamedTuple):
    run: RunConfig
    objects: list[dict[str, Any]]
    validation: Any = None  # validate.Report: what the rendered objects were checked against


def origin_of(json_path: Path) -> Path:
    for end in range(len(json_path), 0, -1):
        if json_path[:end] in _ORIGIN:
            return _ORIGIN[json_path[:end]]
    return ("kuberay", "spec")


def build_bundle(
    recipe_file: str,
    infra_file: str | None = None,
    *,
    sets: Sequence[str] = (),
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    values: Sequence[Setting] = (),
) -> Bundle:
    """Load, render and check a run.

    Raises:
        ConfigError: bad input, including config that KubeRay would reject.
        ManifestError: a rendered object fails offline validation (fail closed: a renderer bug).
    """
    run = load_run(recipe_file, infra_file, sets=sets, overrides=overrides, env=env, values=values)
    objects = render_run(run)
    problems = [
        run.locate(origin_of(json_path), f"{obj['kind']} {format_path(json_path)}: {message}")
        for obj in objects
        for json_path, message in kuberay_problems(obj)
    ]
    if problems:
        raise ConfigError(problems)
    from dockyard_k8s.validate.engine import validate_report

    report = validate_report(objects, ignore_missing_schemas=True)  # no CRD schema: rules still run
    if report.problems:
        raise ManifestError([str(p) for p in report.problems])
    return Bundle(run, objects, report)
