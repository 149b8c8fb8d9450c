"""A run's bundle: resolve the config, render the objects, check them, fail closed; what ``check``
reports of a valid run (:class:`Findings`) is found here too, so commands only format it.

Every command that needs the objects of a run (check, render, lint, plan, run...) goes
through :func:`build_bundle`, so what ``render`` prints is exactly what ``run`` applies.

A problem found in the rendered objects is the user's when an infra value produced the
field (``render/provenance.py`` knows which): it is reported at that key, with the file,
line, column and layer it was written in (exit 2). A problem no infra value explains is a
renderer bug, and nothing is printed or applied (exit 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.loader import Layers, resolve_run
from dockyard_k8s.config.model import GPU_FLEETS, RunConfig
from dockyard_k8s.config.overrides import lookup
from dockyard_k8s.config.platforms import INSTANCE_TYPE_LABEL
from dockyard_k8s.errors import ConfigError, ConfigProblem, ManifestError
from dockyard_k8s.kube import GPU, missing_references, parse_quantity, pod_templates
from dockyard_k8s.lint.isolation import Exposure, exposures
from dockyard_k8s.plain import Path, dig, format_path
from dockyard_k8s.plan.fit import Unchecked, misfits, most_gpus, unchecked
from dockyard_k8s.render import provenance, render_run
from dockyard_k8s.render.meta import FLEET_LABEL
from dockyard_k8s.render.rayauth import TokenSecret, token_prerequisite
from dockyard_k8s.validate.engine import ValidateOptions, validate_report
from dockyard_k8s.validate.problem import RULE_KUBERAY, RULE_KUEUE

if TYPE_CHECKING:
    from dockyard_k8s.config.model import Group
    from dockyard_k8s.validate.problem import Report


@dataclass(frozen=True, slots=True)
class Findings:
    """What ``check`` reports of a valid run besides its objects, found once as it is built."""

    unchecked: list[Unchecked]  # GPU pods the one-node fit test cannot judge (no known instance type)
    most_gpus: tuple[int, list[str]]  # the most GPUs one node of a known instance type has, and those types
    exposures: list[Exposure]  # ways out of the sandbox the NetworkPolicies leave open (lint.isolation)
    prerequisites: list[tuple[str, str]]  # (Kind ns/name, how the pods use it): must exist before an apply
    token: TokenSecret | None  # the Ray token Secret, never rendered, and its generator


@dataclass(frozen=True, slots=True)
class Bundle:
    run: RunConfig
    objects: list[dict[str, Any]]
    validation: Report  # what the rendered objects were checked against
    findings: Findings


@dataclass(frozen=True, slots=True)
class RenderedProblem:
    """A problem of rendered object ``index`` at ``path`` (before it is blamed on a key)."""

    object_index: int
    path: Path
    message: str
    line: str  # how it reads when no infra key explains it (a renderer bug)
    key: Path | None = None  # the infra key, when the check knows it better than provenance does


def build_bundle(recipe_file: str, infra_file: str | Sequence[str] | None = None, layers: Layers = Layers(), *,
                 fit: bool = True) -> Bundle:
    """Load, render and check a run (see :func:`~dockyard_k8s.config.loader.load_run`). ``fit``:
    refuse pods that cannot run on one node of the instance type they select (off for ``plan``
    and ``lint``, which report on the run as it is).

    Raises:
        ConfigError: bad input, including config that KubeRay or the API server would reject.
        ManifestError: a rendered object fails offline validation for no reason in the input
            (fail closed: a renderer bug).
    """
    run, problems = resolve_run(recipe_file, infra_file, layers)
    if run is None:
        raise ConfigError(problems)
    # The recipe's own problems (an override, its defaults list) leave the infra spec whole: the
    # objects are rendered and checked, and everything is reported together.
    objects = render_run(run)

    report = validate_report(objects, ValidateOptions(ignore_missing_schemas=True))  # no CRD schema: rules still run
    # What KubeRay or Kueue would refuse is said in their words; a schema problem of the same field
    # is left out (it says the same, less clearly).
    rules = [p for p in report.problems if p.rule in (RULE_KUBERAY, RULE_KUEUE)]
    ruled = {(p.doc_index, p.path) for p in rules}
    rendered = [RenderedProblem(p.doc_index, p.path, f"{p.kind} {format_path(p.path)}: {p.message}"
                                + (" (Kueue's webhook would refuse it)" if p.rule == RULE_KUEUE else ""), "")
                for p in rules]
    rendered += [RenderedProblem(p.doc_index, p.path, p.message, str(p)) for p in report.problems
                 if p.rule not in (RULE_KUBERAY, RULE_KUEUE) and (p.doc_index, p.path) not in ruled]
    rendered += fit_problems(run, objects) if fit else []
    if rendered:
        raise_blamed(run, rendered, problems)
    if problems:
        raise ConfigError(problems)
    plan = run.infra["plan"]
    return Bundle(run, objects, report, Findings(unchecked(objects, plan), most_gpus(plan), exposures(objects),
                                                 missing_references(objects), token_prerequisite(run.infra)))


def fit_problems(run: RunConfig, objects: list[dict[str, Any]]) -> list[RenderedProblem]:
    """Pods that cannot run on one node of the instance type they select (``plan``'s filters)."""
    if not any(INSTANCE_TYPE_LABEL in str(o.get("spec")) for o in objects):  # nothing declares a type
        return []

    out = []
    for m in misfits(objects, run.infra["plan"]):
        obj = objects[m.object_index]
        message = m.message
        key = None
        if run.infra["launch"]["mode"] == "job" and obj["kind"] == "Job":
            key = _job_culprit(run, m.path)
            message += ("; launch.mode job runs the head in this one GPU pod: drop kuberay.head.nodeSelector, or "
                        "use rayjob/statefulset for a head of its own" if "nodeSelector" in m.path else
                        "; launch.mode job runs the head and every fleet in this one pod, so their sizing adds "
                        "up (kuberay.head + kuberay.trainer + kuberay.inference)")
        elif _fleet_of(obj, m.path) == "sandbox" and "requests" in m.path:  # sized by sandbox.resources
            key = ("sandbox", "resources", _SANDBOX_RESOURCES.get(str(m.path[-1]), str(m.path[-1])))
        out.append(RenderedProblem(m.object_index, m.path, message, f"object {m.object_index}: {message}", key))
    return out


_SANDBOX_RESOURCES = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "ephemeralStorage"}


def _fleet_of(obj: dict[str, Any], path: Path) -> str | None:
    """The fleet label of the pod template ``path`` is in."""
    return next((dig(t.metadata, "labels", FLEET_LABEL) for t in pod_templates(obj)
                 if path[:len(t.path)] == t.path), None)


def _job_culprit(run: RunConfig, path: Path) -> Path | None:
    """The job pod sums the head's and the fleets' sizing: blame the largest amount the user
    wrote (a preset's or a default's amount is not theirs to change first), else the largest."""
    if "requests" not in path:
        return None
    resource = str(path[-1])
    kr = run.infra["kuberay"]
    field = {"cpu": ("cpu",), "memory": ("memory",), GPU: ("gpus",)}.get(resource, ("extendedResources", resource))
    groups: list[Group] = ["head", *(g for g in GPU_FLEETS if kr[g]["replicas"] > 0)]
    found = []
    for g in groups:
        value = lookup(kr[g], field)[1]
        amount = parse_quantity(value) if value is not None else None
        if amount:
            found.append((run.written_by_user(("kuberay", g, *field)), amount, ("kuberay", g, *field)))
    return max(found)[2] if found else None


def raise_blamed(run: RunConfig, problems: list[RenderedProblem], inputs: Sequence[ConfigProblem] = ()) -> None:
    """Raise for ``problems``: a ConfigError at the infra keys behind them (with ``inputs``, the
    problems found in the inputs beside them), or a ManifestError when no infra value explains
    any of them and the inputs have none (every problem is listed either way)."""
    with provenance.tracing(run.infra) as trace:
        traced = render_run(run)  # the same objects (renderers are deterministic), noted
    where = [trace.paths(obj) for obj in traced]
    blamed: dict[Path, list[str]] = {}
    unexplained: list[str] = []
    for p in problems:
        key = p.key or where[p.object_index].infra_key(p.path)
        if key is None:
            unexplained.append(p.line or f"object {p.object_index}: {p.message}")
        elif p.message not in blamed.setdefault(key, []):
            blamed[key].append(p.message)
    if not blamed and not inputs:
        raise ManifestError(unexplained)
    found = [*inputs]
    found += [run.locate(key, message, at_key=message.startswith("unknown field"))
             for key, messages in blamed.items() for message in _one_per_key(messages)]
    found += [ConfigProblem(line, 0, 0, "", "(not explained by the configuration: a dockyard-k8s bug?)")
              for line in unexplained]
    raise ConfigError(found)


def _one_per_key(messages: list[str]) -> list[str]:
    """Several checks can say the same thing about one value (the schema's pattern and the
    semantic rule for a quantity): keep the messages written for people."""
    readable = [m for m in messages if "expected a value matching ^" not in m]
    return readable or messages[:1]
