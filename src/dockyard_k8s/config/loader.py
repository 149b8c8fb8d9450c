"""Files -> one resolved run configuration, or every problem at once.

Layering of the infra spec, last wins::

    shipped defaults (infra_schema)  <  user defaults file  <  infra file  <  --set

The user defaults file is ``$DOCKYARD_K8S_DEFAULTS`` or
``$XDG_CONFIG_HOME/dockyard-k8s/defaults.yaml`` (``~/.config/...``). The recipe is an
opaque mapping; Hydra-style overrides after it apply to it. Both kinds of file may
name parents with ``defaults:`` (merged parent-first, relative to the child).

Everything here is pure except reading the files named; the environment is passed in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from dockyard_k8s.config import overrides as ov
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.kueue import kueue_config_problems
from dockyard_k8s.config.model import SHIPPED, RunConfig, locate
from dockyard_k8s.config.platforms import platform_problems, profile_layer
from dockyard_k8s.config.schema import check, defaults_of, fill_defaults
from dockyard_k8s.config.yamlio import Doc, Mark, Path, format_path, parse_yaml
from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.plain import clone

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec


class Setting(NamedTuple):
    """A typed value a command puts on top of the ``--set`` layer (``cluster up`` forces
    ``launch.mode: bringup``; ``-n`` sets ``infra.namespace``): no string to re-parse.
    ``origin`` names it in problems (``--pre-running-deadline``)."""

    path: Path
    value: Any
    origin: str


class _Layers:
    """Accumulates merged data + the location of every value, and problems."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[ConfigProblem] = []
        self.files: list[str] = []  # every file read, parents before children

    def problem(self, doc: Doc, path: Path, message: str, *, at_key: bool = False) -> None:
        mark = locate(doc.key_marks if at_key else doc.marks, doc.key_marks, path)
        self.problems.append(ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message))

    def load_chain(self, file: str, stack: tuple[str, ...] = ()) -> Doc:
        """A file merged over its ``defaults:`` parents."""
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            self.problems.append(ConfigProblem(file, 0, 0, "", f"cannot read file: {e.strerror or e}"))
            return Doc({}, {}, {})
        doc, problems = parse_yaml(text, file, self.env)
        self.problems.extend(problems)
        if not isinstance(doc.data, dict):
            self.problems.append(ConfigProblem(file, 1, 1, "", f"got a {type(doc.data).__name__}, "
                                                               "expected a mapping at the top level"))
            return Doc({}, {}, {})
        parents = doc.data.pop("defaults", None)
        if parents is None:
            self.files.append(file)
            return doc
        names = [parents] if isinstance(parents, str) else parents
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.problem(doc, ("defaults",), f"got {parents!r}, expected a file name or a list of names")
            return doc
        merged = Doc({}, {}, {})
        real = os.path.realpath(file)
        for name in names:
            parent = os.path.normpath(os.path.join(os.path.dirname(file), name))
            if os.path.realpath(parent) in (*stack, real):
                chain = " -> ".join([*stack, real, os.path.realpath(parent)])
                self.problem(doc, ("defaults",), f"defaults cycle: {chain}")
                continue
            if not os.path.exists(parent):
                self.problem(doc, ("defaults",), f"parent file {parent} does not exist")
                continue
            merged = merge_docs(merged, self.load_chain(parent, (*stack, real)))
        self.files.append(file)
        return merge_docs(merged, doc)


def merge(base: Any, over: Any) -> Any:
    """Deep merge of plain data: mappings merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    return over


def merge_docs(base: Doc, over: Doc) -> Doc:
    # Marks of values the overlay replaced linger under their paths, but every path the
    # overlay wrote has its own mark, so lookups of existing paths always find the right one.
    return Doc(merge(base.data, over.data), {**base.marks, **over.marks}, {**base.key_marks, **over.key_marks})


def user_defaults_file(env: Mapping[str, str]) -> str | None:
    """The user defaults file if one exists: $DOCKYARD_K8S_DEFAULTS or the XDG config path."""
    if env.get("DOCKYARD_K8S_DEFAULTS"):
        return env["DOCKYARD_K8S_DEFAULTS"]
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")
    path = os.path.join(os.path.expanduser(base), "dockyard-k8s", "defaults.yaml")
    return path if os.path.exists(path) else None


def default_infra_file(recipe_file: str) -> str | None:
    """``foo.yaml`` -> ``foo.infra.yaml`` beside it, if it exists."""
    stem = re.sub(r"\.ya?ml$", "", recipe_file)
    for candidate in (stem + ".infra.yaml", stem + ".infra.yml"):
        if os.path.exists(candidate):
            return candidate
    return None


def run_name_from(recipe_file: str) -> str:
    """A DNS-1035 run name from the recipe file name: ``GRPO_swe.v2.yaml`` -> ``grpo-swe-v2``."""
    stem = re.sub(r"\.ya?ml$", "", os.path.basename(recipe_file)).lower()
    name = re.sub(r"[^a-z0-9]+", "-", stem).strip("-")
    name = re.sub(r"^[^a-z]+", "", name)
    return name or "run"


def load_run(
    recipe_file: str,
    infra_file: str | None = None,
    *,
    sets: Sequence[str] = (),
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    values: Sequence[Setting] = (),
) -> RunConfig:
    """Resolve a recipe + infra spec into a :class:`RunConfig`.

    Raises:
        ConfigError: with every problem found, each located by file, line, column and key.
    """
    env = dict(os.environ) if env is None else env
    layers = _Layers(env)
    if infra_file is None:
        infra_file = default_infra_file(recipe_file)
    infra, sources = _infra_layers(layers, infra_file, sets, values)

    recipe_doc = layers.load_chain(recipe_file)
    recipe = recipe_doc.data
    job_args: list[str] = []
    parsed = []
    for text in overrides:
        item, error = ov.parse_override(text)
        if error or item is None:
            layers.problems.append(ConfigProblem(f"override {text}", 0, 0, "", error))
        else:
            parsed.append(item)
    if not layers.problems and infra.data["sandbox"]["enabled"] and infra.data["sandbox"]["injectUrls"]:
        # The injected DOCKYARD_SANDBOX_URLS must win over the recipe's localhost default.
        parsed.append(ov.Override("++", ("env", "code", "sandbox_urls"), None, "++env.code.sandbox_urls=null"))
    for item in parsed:
        error = ov.apply_override(recipe, item)
        if error:
            layers.problems.append(ConfigProblem(f"override {item.text}", 0, 0, format_path(item.path), error))
        elif (arg := ov.job_arg(item)) is not None:
            job_args.append(arg)

    if not layers.problems:
        fill_defaults(INFRA, infra.data)
        _fill_derived(infra.data, recipe_file)
        layers.problems.extend(_cross_field_problems(infra))
    if layers.problems:
        raise ConfigError(layers.problems)
    return RunConfig(cast("InfraSpec", infra.data), recipe, recipe_file, job_args, sources, infra.marks,
                     infra.key_marks)


def _infra_layers(layers: _Layers, infra_file: str | None, sets: Sequence[str],
                  values: Sequence[Setting] = ()) -> tuple[Doc, list[str]]:
    """Every infra layer stacked and schema-checked (problems go to ``layers``): the merged
    document and the names of its sources, lowest first."""
    user = user_defaults_file(layers.env)
    docs = [layers.load_chain(f) for f in (user, infra_file) if f]
    sources = [SHIPPED, *layers.files]
    # The platform profile sits between the shipped defaults and the user defaults, and is
    # chosen from the merged layers: stack once without it to read infra.platform.
    infra, set_problems = _stack(None, docs, sets, values)
    profile = _profile_doc(infra.data)
    if profile is not None:
        infra, set_problems = _stack(profile, docs, sets, values)
        sources.insert(1, _profile_name(infra.data))
    layers.problems.extend(set_problems)
    for path, message in check(INFRA, infra.data):
        layers.problem(infra, path, message, at_key=message.startswith("unknown key"))
    return infra, sources


class InfraDoc(NamedTuple):
    """The infra spec alone, layered and schema-checked, with where each value was written."""

    data: InfraSpec  # every default filled in
    sources: list[str]  # layers merged, lowest first
    marks: dict[Path, Mark]
    key_marks: dict[Path, Mark]

    def locate(self, path: Path, message: str) -> ConfigProblem:
        """A problem about infra key ``path``, at the place the user wrote it."""
        mark = locate(self.marks, self.key_marks, path)
        return ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message)


def load_infra_doc(infra_file: str | None, *, sets: Sequence[str] = (), env: Mapping[str, str] | None = None,
                   values: Sequence[Setting] = ()) -> InfraDoc:
    """The infra spec alone, layered and checked like :func:`load_run` does, for commands
    that read it without a recipe (``serve``; ``lint``/``plan`` on manifest files). No
    run-level rules (an image is not required here).

    Raises:
        ConfigError: every problem, located.
    """
    layers = _Layers(dict(os.environ) if env is None else env)
    infra, sources = _infra_layers(layers, infra_file, sets, values)
    if layers.problems:
        raise ConfigError(layers.problems)
    fill_defaults(INFRA, infra.data)
    return InfraDoc(cast("InfraSpec", infra.data), sources, infra.marks, infra.key_marks)


def load_infra(infra_file: str | None, *, sets: Sequence[str] = (),
               env: Mapping[str, str] | None = None) -> InfraSpec:
    """:func:`load_infra_doc`'s data (``lint``/``plan`` read the lint and plan sections)."""
    return load_infra_doc(infra_file, sets=sets, env=env).data


def _profile_name(data: dict[str, Any]) -> str:
    section = data["infra"]
    typ = section.get("instanceType")
    return f"<{section['platform']} profile{' ' + typ if typ else ''}>"


def _profile_doc(data: Any) -> Doc | None:
    """The platform profile layer of the merged ``data`` as a Doc, or None (generic/invalid)."""
    section = data.get("infra") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return None
    layer = profile_layer(section.get("platform"), section.get("instanceType"))
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


def _stack(profile: Doc | None, docs: list[Doc], sets: Sequence[str],
           values: Sequence[Setting] = ()) -> tuple[Doc, list[ConfigProblem]]:
    """shipped < profile < user defaults < infra file < --set < typed values, as one fresh Doc
    (inputs untouched)."""
    infra = Doc(defaults_of(INFRA), {}, {})
    for doc in ([profile] if profile else []) + docs:
        infra = merge_docs(infra, doc)
    infra = Doc(clone(infra.data), dict(infra.marks), dict(infra.key_marks))
    problems: list[ConfigProblem] = []
    for text in sets:
        path, value, error = ov.parse_set(text)
        mark = Mark(f"--set {text}", 0, 0)
        if error:
            problems.append(ConfigProblem(mark.file, 0, 0, "", error))
            continue
        assert path is not None
        error = ov.set_path(infra.data, path, value)
        if error:
            problems.append(ConfigProblem(mark.file, 0, 0, format_path(path), error))
        infra.marks[path] = mark
        infra.key_marks[path] = mark
    for setting in values:
        mark = Mark(setting.origin, 0, 0)
        error = ov.set_path(infra.data, setting.path, setting.value)
        if error:
            problems.append(ConfigProblem(mark.file, 0, 0, format_path(setting.path), error))
        infra.marks[setting.path] = mark
        infra.key_marks[setting.path] = mark
    return infra, problems


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


def _cross_field_problems(doc: Doc) -> list[ConfigProblem]:
    """Rules that involve several fields (KubeRay's own rules live in validate/kuberay.py)."""
    infra = doc.data
    found: list[tuple[Path, str]] = []
    if not infra["infra"]["image"]:
        found.append((("infra", "image"), "is required (got nothing, expected an image like "
                                          "registry.example.com/ubuntu-swe:vllm-1.4.2)"))
    launch = infra["launch"]
    if launch["mode"] == "attach" and not (launch["attach"]["cluster"] or launch["attach"]["address"]):
        found.append((("launch", "attach"), "attach mode needs launch.attach.cluster or launch.attach.address "
                                            "(got neither)"))
    found += platform_problems(infra)
    found += kueue_config_problems(infra)
    out = []
    for path, message in found:
        mark = locate(doc.marks, doc.key_marks, path)
        out.append(ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message))
    return out
