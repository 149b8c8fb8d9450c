"""Files -> one resolved run configuration, or every problem at once.

Layering of the infra spec, last wins (``layering.py`` has the one merge rule)::

    shipped defaults (infra_schema) < platform profile < user defaults file
      < -f/--infra FILE ... < --set < --set-string < --set-file < what the command sets (-n ...)

The user defaults file is ``$DOCKYARD_K8S_DEFAULTS`` or
``$XDG_CONFIG_HOME/dockyard-k8s/defaults.yaml`` (``~/.config/...``). Infra files may name
parents with ``defaults:`` (merged parent-first, relative to the child). The recipe is an
opaque mapping composed from its Hydra defaults list (``recipes.py``); Hydra-style
overrides after it apply to it. Run-level rules live in ``rules.py``.

Everything here is pure except reading the files named; the environment is passed in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from dockyard_k8s.config import overrides as ov
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.layering import Layers, Setting, merge, merge_docs, settings_from_args, stack
from dockyard_k8s.config.model import SHIPPED, RunConfig, locate
from dockyard_k8s.config.network import DEFAULT_RAY_VERSION, ray_image_version, show_version
from dockyard_k8s.config.platforms import profile_layer
from dockyard_k8s.config.recipes import RecipeComposer
from dockyard_k8s.config.schema import check, fill_defaults
from dockyard_k8s.config.yamlio import Doc, Mark, Path, format_path
from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.plain import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

    from dockyard_k8s.config.infra_types import InfraSpec

__all__ = ["InfraDoc", "Setting", "default_infra_file", "load_infra", "load_infra_doc", "load_run", "merge",
           "merge_docs", "run_name_from", "user_defaults_file"]

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
    for candidate in _sibling_names(recipe_file):
        if os.path.exists(candidate):
            return candidate
    return None


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


def load_run(
    recipe_file: str,
    infra_file: str | Sequence[str] | None = None,
    *,
    sets: Sequence[str] = (),
    set_strings: Sequence[str] = (),
    set_files: Sequence[str] = (),
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    values: Sequence[Setting] = (),
) -> RunConfig:
    """Resolve a recipe + infra files into a :class:`RunConfig`.

    ``infra_file`` is one file or several (``-f a.yaml -f b.yaml``: later files win); without
    any, ``RECIPE.infra.yaml`` beside the recipe is used if it exists.

    Raises:
        ConfigError: with every problem found, each located by file, line, column and key.
    """
    from dockyard_k8s.config.rules import run_rules

    env = dict(os.environ) if env is None else env
    layers = Layers(env, INFRA)
    files = _files(infra_file) or [f for f in (default_infra_file(recipe_file),) if f]
    settings, problems = settings_from_args(sets, set_strings, set_files)
    layers.problems += problems
    composer = RecipeComposer(Layers(env), recipe_file)  # its own problems: the infra files come first
    composed = composer.compose(recipe_file)
    recipe = composed.data
    if {"infra", "kuberay"} & set(recipe) and set(recipe) <= set(INFRA_SECTIONS):  # `check x.infra.yaml`
        raise ConfigError([_infra_as_recipe(recipe_file, composed)])
    infra, sources = _infra_layers(layers, files, [*settings, *values], recipe=(recipe_file, recipe))
    layers.problems += composer.layers.problems
    user_args, added = _recipe_overrides(layers, recipe, infra, overrides)

    if layers.problems:
        raise ConfigError(layers.problems)
    fill_defaults(INFRA, infra.data)
    _fill_derived(infra.data, recipe_file)
    run = RunConfig(infra.data, recipe, recipe_file, [*user_args, *added], sources,
                    infra.marks, infra.key_marks, added_args=tuple(added), infra_files=tuple(files),
                    notes=tuple(composer.notes))
    problems, notes = run_rules(run, empty=layers.empty)
    if problems:
        raise ConfigError(problems)
    return run.replace(notes=(*run.notes, *notes))


def _recipe_overrides(layers: Layers, recipe: dict[str, Any], infra: Doc,
                      overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """Apply the Hydra-style overrides to ``recipe``; (the user's job args, the launcher's)."""
    parsed: list[ov.Override] = []
    for text in overrides:
        item, error = ov.parse_override(text)
        if error or item is None:
            layers.problems.append(ConfigProblem(f"override {text}", 0, 0, "", error))
        else:
            parsed.append(item)
    user_args: list[str] = []
    for item in parsed:
        error = ov.apply_override(recipe, item)
        head = item.path[0] if item.path else ""
        if error and head in INFRA_SECTIONS and head not in recipe:
            value = item.text.partition("=")[2]
            error = (f"{format_path(item.path)} is an infra key, not a recipe key: use --set "
                     f"{format_path(item.path)}={value}" if item.op != "~" else
                     f"{format_path(item.path)} is an infra key, not a recipe key: use --set "
                     f"{format_path(item.path)}=null to unset it")
        if error:
            layers.problems.append(ConfigProblem(f"override {item.text}", 0, 0, format_path(item.path), error))
        elif (arg := ov.job_arg(item)) is not None:
            user_args.append(arg)
    added: list[str] = []
    key = None if layers.problems else _sandbox_urls_key(infra.data)  # the data is only sure without problems
    if key is not None and ov.lookup(recipe, key)[0]:
        # The injected DOCKYARD_SANDBOX_URLS must win over the recipe's localhost default.
        unset = ov.Override("++", key, None, f"++{format_path(key)}=null")
        ov.apply_override(recipe, unset)
        added.append(unset.text)
    return user_args, added


def _sandbox_urls_key(data: Any) -> Path | None:
    """The recipe key set to null so the injected sandbox URLs win, when URLs are injected."""
    sandbox, launch = data.get("sandbox") or {}, data.get("launch") or {}
    text = launch.get("sandboxUrlsKey", "env.code.sandbox_urls")
    if not (sandbox.get("enabled", True) and sandbox.get("injectUrls", True)) or not isinstance(text, str):
        return None
    return ov.parse_key(text)


def _infra_layers(layers: Layers, files: Sequence[str], settings: Sequence[Setting], *,
                  recipe: tuple[str, dict[str, Any]] | None = None) -> tuple[Doc, list[str]]:
    """Every infra layer stacked and schema-checked (problems go to ``layers``): the merged
    document and the names of its sources, lowest first."""
    user = user_defaults_file(layers.env)
    docs = [layers.load_chain(f) for f in ([user] if user else []) + list(files)]
    sources = [SHIPPED, *layers.files]
    # The platform profile sits between the shipped defaults and the user defaults, and is
    # chosen from the merged layers: stack once without it to read infra.platform.
    infra, set_problems = stack(INFRA, docs, settings)
    profile = _profile_doc(infra.data)
    if profile is not None:
        infra, set_problems = stack(INFRA, [profile, *docs], settings)
        sources.insert(1, _profile_name(infra.data))
    layers.problems.extend(set_problems)
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
        layers.problem(infra, path, message, at_key=message.startswith(("unknown key", "got key")))
    plan = infra.data.get("plan") if isinstance(infra.data, dict) else None
    if isinstance(plan, dict) and (plan.get("nodePools") or plan.get("instanceTypes")) and \
            not any(path[:1] == ("plan",) for path, _ in found):
        from dockyard_k8s.plan.inventory import pool_problems  # only a spec that declares nodes

        for path, message in pool_problems(plan):
            layers.problem(infra, ("plan", *path), message)
    return infra, sources


class InfraDoc(Record):
    """The infra spec alone, layered and schema-checked, with where each value was written."""

    __slots__ = ("data", "sources", "marks", "key_marks")

    def __init__(self, data: InfraSpec, sources: list[str], marks: dict[Path, Mark],
                 key_marks: dict[Path, Mark]) -> None:
        self.data = data  # every default filled in
        self.sources = sources  # layers merged, lowest first
        self.marks = marks
        self.key_marks = key_marks

    def locate(self, path: Path, message: str) -> ConfigProblem:
        """A problem about infra key ``path``, at the place the user wrote it."""
        mark = locate(self.marks, self.key_marks, path)
        return ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message)


def _infra_as_recipe(recipe_file: str, recipe: Doc) -> ConfigProblem:
    """The problem of an infra spec given where the recipe goes: said once, at its first key,
    instead of rendering the infra spec as the job's recipe (or asking for its own infra file)."""
    keys = list(recipe.data)
    mark = recipe.key_marks.get((keys[0],)) or Mark(recipe_file, 0, 0)
    return ConfigProblem(mark.file, mark.line, mark.col, "",
                         f"this is an infra spec, not a training recipe (its top-level keys {', '.join(keys)} are "
                         f"infra sections): give the recipe first and this file with -f, e.g. "
                         f"`dockyard-k8s check RECIPE.yaml -f {recipe_file}`")


def load_infra_doc(infra_file: str | Sequence[str] | None, *, sets: Sequence[str] = (),
                   set_strings: Sequence[str] = (), set_files: Sequence[str] = (),
                   env: Mapping[str, str] | None = None, values: Sequence[Setting] = ()) -> InfraDoc:
    """The infra spec alone, layered and checked like :func:`load_run` does, for commands
    that read it without a recipe (``serve``; ``lint``/``plan`` on manifest files). No
    run-level rules (an image is not required here).

    Raises:
        ConfigError: every problem, located.
    """
    layers = Layers(dict(os.environ) if env is None else env, INFRA)
    settings, problems = settings_from_args(sets, set_strings, set_files)
    layers.problems += problems
    infra, sources = _infra_layers(layers, _files(infra_file), [*settings, *values])
    if layers.problems:
        raise ConfigError(layers.problems)
    fill_defaults(INFRA, infra.data)
    return InfraDoc(infra.data, sources, infra.marks, infra.key_marks)


def load_infra(infra_file: str | Sequence[str] | None, *, sets: Sequence[str] = (),
               set_strings: Sequence[str] = (), set_files: Sequence[str] = (),
               env: Mapping[str, str] | None = None) -> InfraSpec:
    """:func:`load_infra_doc`'s data (``lint``/``plan`` read the lint and plan sections)."""
    return load_infra_doc(infra_file, sets=sets, set_strings=set_strings, set_files=set_files, env=env).data


def _profile_name(data: dict[str, Any]) -> str:
    section = data["infra"]
    typ = section.get("instanceType")  # any type: a wrong one is reported by the schema check, not here
    return f"<{section['platform']} profile{' ' + str(typ) if typ else ''}>"


def _profile_doc(data: Any) -> Doc | None:
    """The platform profile layer of the merged ``data`` as a Doc, or None (generic/invalid)."""
    section = data.get("infra") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return None
    launch = data.get("launch")
    layer = profile_layer(section.get("platform"), section.get("instanceType"),
                          launch.get("mode") if isinstance(launch, dict) else None)
    if not layer:
        return None
    name = _profile_name(data)
    marks: dict[Path, Mark] = {}

    def walk(node: Any, path: Path) -> None:
        marks[path] = Mark(name, 0, 0)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))

    for key, value in layer.items():
        walk(value, (key,))
    return Doc(layer, marks, dict(marks))


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
