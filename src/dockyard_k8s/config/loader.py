"""Files -> one resolved run configuration, or every problem at once.

Layering of the infra spec, last wins (``layering.py`` has the one merge rule)::

    shipped defaults (infra_schema) < platform profile < what the command knows (``under``: the
      kubeconfig context's namespace) < user defaults file < -f/--infra FILE ... < --set
      < --set-string < --set-file < what the command sets (-n ...)

The user defaults file is ``$DOCKYARD_K8S_DEFAULTS`` or
``$XDG_CONFIG_HOME/dockyard-k8s/defaults.yaml`` (``~/.config/...``). Infra files may name
parents with ``defaults:`` (merged parent-first, relative to the child). The recipe is an
opaque mapping composed from its Hydra defaults list (``recipes.py``); Hydra-style
overrides after it apply to it. Run-level rules live in ``rules.py``.

Everything here is pure except reading the files named; the environment is passed in.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config import overrides as ov
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.layering import (
    LayerReader,
    Layers,
    Setting,
    settings_layer,
    settings_of,
    stack,
)
from dockyard_k8s.config.model import SHIPPED, RunConfig
from dockyard_k8s.config.network import DEFAULT_RAY_VERSION, ray_image_version, show_version
from dockyard_k8s.config.platforms import profile_layer
from dockyard_k8s.config.recipes import RecipeComposer
from dockyard_k8s.config.rules import override_secret_message, recipe_secret_message, run_rules
from dockyard_k8s.config.schema import check, fill_defaults
from dockyard_k8s.config.yamlio import Document, Mark, Path, format_path
from dockyard_k8s.credentials import redact_assignment, secret_assignment, secret_values
from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.plain import clone
from dockyard_k8s.plan.inventory import pool_problems

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

__all__ = ["Layers", "Setting", "default_infra_file", "load_infra_doc", "load_run", "resolve_run", "run_name_from",
           "user_defaults_file"]

# The infra spec's sections: a recipe override that starts with one of them is an infra key.
INFRA_SECTIONS = tuple(k for k in INFRA["properties"] if k != "defaults")


def user_defaults_file(env: Mapping[str, str]) -> str | None:
    """The user defaults file if one exists: $DOCKYARD_K8S_DEFAULTS or the XDG config path."""
    if env.get("DOCKYARD_K8S_DEFAULTS"):
        return env["DOCKYARD_K8S_DEFAULTS"]
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")
    path = os.path.join(os.path.expanduser(base), "dockyard-k8s", "defaults.yaml")
    return path if os.path.exists(path) else None


def default_infra_file(recipe_file: str) -> str | None:
    """``foo.yaml`` -> ``foo.infra.yaml`` beside it, if it exists."""
    return next((f for f in _sibling_names(recipe_file) if os.path.exists(f)), None)


def _sibling_names(recipe_file: str) -> tuple[str, str]:
    stem = re.sub(r"\.ya?ml$", "", recipe_file)
    return stem + ".infra.yaml", stem + ".infra.yml"


def run_name_from(recipe_file: str) -> str:
    """A DNS-1035 run name from the recipe file name: ``GRPO_swe.v2.yaml`` -> ``grpo-swe-v2``."""
    stem = re.sub(r"\.ya?ml$", "", os.path.basename(recipe_file)).lower()
    name = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")
    name = re.sub(r"^[^a-z]+", "", name)
    return name or "run"


def _files(infra_file: str | Sequence[str] | None) -> list[str]:
    if infra_file is None:
        return []
    return [infra_file] if isinstance(infra_file, str) else list(infra_file)


def load_run(recipe_file: str, infra_file: str | Sequence[str] | None = None,
             layers: Layers = Layers()) -> RunConfig:
    """Resolve a recipe + infra files (+ ``layers``) into a :class:`RunConfig`.

    ``infra_file`` is one file or several (``-f a.yaml -f b.yaml``: later files win); without
    any, ``RECIPE.infra.yaml`` beside the recipe is used if it exists.

    Raises:
        ConfigError: with every problem found, each located by file, line, column and key.
    """
    run, problems = resolve_run(recipe_file, infra_file, layers)
    if problems or run is None:
        raise ConfigError(problems)
    return run


def resolve_run(recipe_file: str, infra_file: str | Sequence[str] | None = None,
                layers: Layers = Layers()) -> tuple[RunConfig | None, list[ConfigProblem]]:
    """:func:`load_run` without raising: the run and every problem found.

    The problems of independent inputs come together: the recipe overrides, the recipe's
    composition, the infra layers' schema, and the run rules (on what the schema accepted, see
    :func:`_rules_despite`). The run is None when the infra spec has a problem (nothing can be
    rendered from it); with problems of the recipe alone (its defaults list, an override) it is
    returned beside them, so that the objects are rendered and checked too.
    """
    env = layers.environ()
    reader = LayerReader(env, INFRA)
    files = _files(infra_file) or [f for f in (default_infra_file(recipe_file),) if f]
    composer = RecipeComposer(LayerReader(env), recipe_file)  # its own problems: the infra files come first
    composed = composer.compose(recipe_file)
    if not files and not os.path.exists(recipe_file):  # a mistyped recipe: its infra is not there either
        return None, composer.reader.problems
    if {"infra", "kuberay"} & set(composed.data) and set(composed.data) <= set(INFRA_SECTIONS):  # `check x.infra.yaml`
        return None, [_infra_as_recipe(recipe_file, composed)]
    infra, sources, broken = _infra_layers(reader, files, layers, recipe=(recipe_file, composed.data))
    recipe_problems = [*composer.reader.problems, *_empty_recipe(recipe_file, composed, composer)]
    recipe, user_args, override_problems = _recipe_overrides(composer, composed.data, layers.overrides)
    recipe_problems += override_problems + _recipe_secrets(recipe, composed)
    if reader.problems:
        repairable = len(reader.problems) == len(broken)  # each a schema problem at a key: rules can still run
        guessed = _rules_despite(infra, broken, sources, recipe_file, files, reader.empty) if repairable else []
        return None, [*reader.problems, *guessed, *recipe_problems]
    fill_defaults(INFRA, infra.data)
    _fill_derived(infra.data, recipe_file)
    added = _unset_sandbox_urls(recipe, infra.data)
    deleted = [f"{arg}: deleted by the job (its Hydra applies the overrides to the mounted recipe, which keeps "
               f"the key: Hydra cannot delete a key that is not there)" for arg in user_args if arg.startswith("~")]
    run = RunConfig(infra.data, recipe, recipe_file, [*user_args, *added], sources,
                    infra.marks, infra.key_marks, added_args=tuple(added), infra_files=tuple(files),
                    notes=(*composer.notes, *deleted))
    problems, notes = run_rules(run, missing_infra=missing_infra_hint(recipe_file, files, reader.empty))
    if problems:
        return None, [*problems, *recipe_problems]
    return dataclasses.replace(run, notes=(*run.notes, *notes)), recipe_problems


def _empty_recipe(recipe_file: str, composed: Document, composer: RecipeComposer) -> list[ConfigProblem]:
    if composed.data or composer.reader.problems:
        return []
    return [ConfigProblem(recipe_file, 0, 0, "", "the recipe is empty: expected the training config the job runs "
                                                 "(a mapping, mounted at /etc/dockyard-k8s/recipe.yaml)")]


def _recipe_overrides(composer: RecipeComposer, recipe: dict[str, Any],
                      overrides: Sequence[str]) -> tuple[dict[str, Any], list[str], list[ConfigProblem]]:
    """The Hydra-style overrides on the composed ``recipe`` (changed in place): (the recipe the job
    starts from, the job's arguments, the problems).

    Each override is checked as Hydra would apply it, in order, to the composed recipe. The job gets
    every one (in the form :func:`overrides.job_arg` says); its starting recipe has every change
    applied, and keeps what a deletion deletes, which the job's Hydra then deletes."""
    final = clone(recipe)  # every override applied in order, as Hydra applies them: what problems are about
    problems: list[ConfigProblem] = []
    args: list[str] = []
    for text in overrides:
        item, error = ov.parse_override(text)
        secrets = secret_values(item.value, item.path) if item is not None else []
        shown = redact_assignment(text, always=True) if secrets or secret_assignment(text) else text
        if error or item is None:
            problems.append(ConfigProblem(f"override {shown}", 0, 0, "", error))
            continue
        for path, what in secrets:  # the job would get it on its command line
            problems.append(ConfigProblem(f"override {shown}", 0, 0, format_path(path),
                                          override_secret_message(str(path[-1]), what)))
        key = text.lstrip("+~").partition("=")[0]
        group = composer.group_of(key) if len(item.path) == 1 else None
        if group is not None:
            problems.append(ConfigProblem(f"override {shown}", 0, 0, key, _group_choice(item, key, group, composer)))
            continue
        error = ov.apply_override(final, item)
        head = item.path[0] if item.path else ""
        if error and head in INFRA_SECTIONS and head not in final:
            value = item.text.partition("=")[2]
            error = (f"{key} is an infra key, not a recipe key: use --set {key}={value}" if item.op != "~" else
                     f"{key} is an infra key, not a recipe key: use --set {key}=null to unset it")
        if error:
            problems.append(ConfigProblem(f"override {shown}", 0, 0, key, error))
        elif not secrets:
            if item.op != "~":
                ov.set_path(recipe, item.path, item.value)
            args.append(ov.job_arg(item))
    return recipe, args, problems


def _recipe_secrets(recipe: dict[str, Any], composed: Document) -> list[ConfigProblem]:
    """Every credential by value the recipe's files wrote that the mounted recipe still holds (an
    override may have set it to null; a deletion is the job's: the mounted recipe keeps the key),
    at its file:line. What an override wrote is the override's (``_recipe_overrides``)."""
    out = []
    for path, what in secret_values(recipe, ()):
        mark = composed.marks.get(path)
        if mark is not None:
            message = recipe_secret_message(path, what, substituted=_substituted(mark))
            out.append(ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message))
    return out


def _substituted(mark: Mark) -> bool:
    """Whether the value written at ``mark`` was a ``${VAR}`` (its line, from its column)."""
    try:
        with open(mark.file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    return 0 < mark.line <= len(lines) and "${" in lines[mark.line - 1][max(mark.col - 1, 0):]


def _group_choice(item: ov.Override, key: str, group: str, composer: RecipeComposer) -> str:
    """Why ``model=big`` is refused: Hydra reads it as the choice of an option of the config group."""
    option = "null" if item.op == "~" else str(item.value)
    options = composer.options(group)
    known = f" (options: {', '.join(options)})" if options else ""
    what = "deletes the choice of" if item.op == "~" else "chooses an option of"
    return (f"{item.text.partition('=')[0] if item.op == '~' else item.text} {what} the config group {group} "
            f"(Hydra's group override), which dockyard-k8s does not take on the command line{known}: write "
            f"`- {key}: {option}` in the recipe's defaults list, or use {group.replace('/', '.')}.x=... to change "
            "one key")


def _unset_sandbox_urls(recipe: dict[str, Any], infra: InfraSpec) -> list[str]:
    """The injected DOCKYARD_SANDBOX_URLS must win over the recipe's localhost default: the key set
    to null in the recipe, and passed to the job so (``launch.sandboxUrlsKey``), when URLs are injected."""
    text, sandbox = infra["launch"]["sandboxUrlsKey"], infra["sandbox"]
    key = ov.parse_key(text) if text and sandbox["enabled"] and sandbox["injectUrls"] else None
    if key is None or not ov.lookup(recipe, key)[0]:
        return []
    unset = ov.Override("++", key, None, f"++{format_path(key)}=null")
    ov.apply_override(recipe, unset)
    return [unset.text]


def _rules_despite(infra: Document, broken: Sequence[Path], sources: list[str], recipe_file: str,
                   files: Sequence[str], empty: Sequence[str]) -> list[ConfigProblem]:
    """The run rules' problems of an infra spec the schema refused at ``broken`` keys, where they
    do not depend on them: each broken section (``kuberay.trainer``) goes back to its shipped
    defaults, the rules run, and what they say about a broken section (at its keys, or naming
    them) is dropped, since it would be about a default the user did not write."""
    data = clone(infra.data)
    for path in broken:
        _drop(data, path[:2])
    fill_defaults(INFRA, data)
    if check(INFRA, data):
        return []  # still not what the rules expect: nothing to say without guessing
    _fill_derived(data, recipe_file)
    run = RunConfig(data, {}, recipe_file, [], sources, infra.marks, infra.key_marks, infra_files=tuple(files))
    found, _ = run_rules(run, missing_infra=missing_infra_hint(recipe_file, files, empty))
    sections = {format_path(p[:2]) for p in broken}
    return [p for p in found if not any(_names(p, s) for s in sections)]


def _drop(data: Any, path: Path) -> None:
    """Delete ``path`` from ``data``, or its deepest ancestor that is not a mapping."""
    node = data
    for i, part in enumerate(path):
        if not isinstance(node, dict) or part not in node:
            return
        if i == len(path) - 1 or not isinstance(node[part], dict):
            del node[part]
            return
        node = node[part]


def _names(problem: ConfigProblem, section: str) -> bool:
    """Whether ``problem`` is at a key of ``section`` or names one."""
    if problem.path == section or problem.path.startswith((section + ".", section + "[")):
        return True
    return re.search(rf"(?<![\w.-]){re.escape(section)}(?![\w-])", problem.message) is not None


def _infra_layers(reader: LayerReader, files: Sequence[str], layers: Layers, *,
                  recipe: tuple[str, dict[str, Any]] | None = None) -> tuple[Document, list[str], list[Path]]:
    """Every infra layer stacked and schema-checked (problems go to ``reader``): the merged
    document, the names of its sources, lowest first, and the keys the schema check refused.
    ``layers.under``: values below the user's files (not a source: the user did not write them)."""
    settings, problems = settings_of(layers)
    reader.problems += problems
    user = user_defaults_file(reader.env)
    docs = [reader.load_chain(f) for f in ([user] if user else []) + list(files)]
    if layers.under:
        below, problems = settings_layer(INFRA, layers.under)
        reader.problems.extend(problems)
        docs.insert(0, below)
    sources = [SHIPPED, *reader.files]
    # The platform profile sits between the shipped defaults and the user defaults, and is
    # chosen from the merged layers: stack once without it to read infra.platform.
    infra, set_problems = stack(INFRA, docs, settings)
    profile = _profile_doc(infra.data)
    if profile is not None:
        infra, set_problems = stack(INFRA, [profile, *docs], settings)
        sources.insert(1, _profile_name(infra.data))
    reader.problems.extend(set_problems)
    found = check(INFRA, infra.data)
    for path, message in found:
        origin = infra.marks.get(path, Mark("", 0, 0)).file
        if message.startswith("unknown key") and len(path) == 1 and origin.startswith("--set"):
            written = origin.split(" ", 1)[-1]
            if recipe is not None and path[0] in recipe[1]:
                message = (f"{path[0]} is a key of the recipe {recipe[0]}, not of the infra spec: write "
                           f"{written} after the recipe, without --set")
            else:
                message += "; a recipe override goes after RECIPE, without --set"
        reader.problem(infra, path, message, at_key=message.startswith(("unknown key", "got key")))
    broken = [path for path, _ in found]
    plan = infra.data.get("plan")
    if isinstance(plan, dict) and (plan.get("nodePools") or plan.get("instanceTypes")) and \
            not any(path[:1] == ("plan",) for path, _ in found):
        for path, message in pool_problems(plan):
            reader.problem(infra, ("plan", *path), message)
            broken.append(("plan", *path))
    return infra, sources, broken


def _infra_as_recipe(recipe_file: str, recipe: Document) -> ConfigProblem:
    """The problem of an infra spec given where the recipe goes: said once, at its first key,
    instead of rendering the infra spec as the job's recipe (or asking for its own infra file)."""
    keys = list(recipe.data)
    mark = recipe.key_marks.get((keys[0],)) or Mark(recipe_file, 0, 0)
    return ConfigProblem(mark.file, mark.line, mark.col, "",
                         f"this is an infra spec, not a training recipe (its top-level keys {', '.join(keys)} are "
                         f"infra sections): give the recipe first and this file with -f, e.g. "
                         f"`dockyard-k8s check RECIPE.yaml -f {recipe_file}`")


def load_infra_doc(infra_file: str | Sequence[str] | None, layers: Layers = Layers()) -> tuple[Document, list[str]]:
    """The infra spec alone, layered and checked like :func:`load_run` does (every default
    filled in, each value's marks), and its layers, lowest first, for commands that read it
    without a recipe (``serve``; ``lint``/``plan`` on manifest files). No run-level rules (an
    image is not required here).

    Raises:
        ConfigError: every problem, located.
    """
    reader = LayerReader(layers.environ(), INFRA)
    infra, sources, _ = _infra_layers(reader, _files(infra_file), layers)
    if reader.problems:
        raise ConfigError(reader.problems)
    fill_defaults(INFRA, infra.data)
    return infra, sources


def _profile_name(data: dict[str, Any]) -> str:
    section = data["infra"]
    typ = section.get("instanceType")  # any type: a wrong one is reported by the schema check, not here
    return f"<{section['platform']} profile{' ' + str(typ) if typ else ''}>"


def _profile_doc(data: dict[str, Any]) -> Document | None:
    """The platform profile layer of the merged ``data`` as a Document, or None (generic/invalid)."""
    section = data.get("infra")
    if not isinstance(section, dict):
        return None
    launch = data.get("launch")
    layer = profile_layer(section.get("platform"), section.get("instanceType"),
                          launch.get("mode") if isinstance(launch, dict) else None)
    if not layer:
        return None
    marks = dict.fromkeys(ov.key_paths(layer), Mark(_profile_name(data), 0, 0))
    return Document(layer, marks, dict(marks))


def _fill_derived(infra: InfraSpec, recipe_file: str) -> None:
    """Defaults that depend on other values (documented on each field)."""
    launch, sandbox = infra["launch"], infra["sandbox"]
    if launch["name"] is None:
        launch["name"] = run_name_from(recipe_file)
    if sandbox["image"] is None:
        sandbox["image"] = infra["infra"]["image"]
    if sandbox["imagePullPolicy"] is None:
        sandbox["imagePullPolicy"] = infra["infra"]["imagePullPolicy"]
    if launch["submitter"]["image"] is None:
        launch["submitter"]["image"] = infra["infra"]["image"]
    if infra["kuberay"]["rayVersion"] is None:  # a Ray image's tag says it (issue 22 item 20)
        tagged = ray_image_version(infra["infra"]["image"])
        infra["kuberay"]["rayVersion"] = show_version(tagged) if tagged else DEFAULT_RAY_VERSION


def missing_infra_hint(recipe_file: str, files: Sequence[str], empty: Sequence[str]) -> str:
    """Why nothing set a required key: an empty infra file, or none given or found."""
    if files and all(f in empty for f in files):
        return f" ({', '.join(files)} {'is' if len(files) == 1 else 'are'} empty)"
    if not files:
        return (f" (no {os.path.basename(_sibling_names(recipe_file)[0])} beside {recipe_file}; "
                "pass --infra FILE)")
    return ""
