"""The typed model: generated from the one schema, current, and true of every loaded spec."""

from __future__ import annotations

import glob
import os
import types
import typing

import pytest

from dockyard_k8s.config import infra_types
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.config.typegen import generate
from support.paths import REPO

EXAMPLES = os.path.join(REPO, "examples")
TYPES_FILE = os.path.join(REPO, "src", "dockyard_k8s", "config", "infra_types.py")


def test_generated_types_are_current():
    with open(TYPES_FILE, encoding="utf-8") as f:
        assert f.read() == generate(INFRA), (
            "infra_types.py is stale: .venv/bin/python -m dockyard_k8s.config.typegen > "
            "src/dockyard_k8s/config/infra_types.py")


def test_a_schema_change_changes_the_types():
    changed = {**INFRA, "properties": {**INFRA["properties"], "extra": {"type": "integer", "default": 1}}}
    assert "    extra: int\n" in generate(changed)
    assert "    extra: int\n" not in generate(INFRA)


def test_every_section_of_the_schema_is_a_typed_dict():
    def walk(schema, cls, path):
        hints = typing.get_type_hints(cls)
        assert list(hints) == list(schema["properties"]), path
        for key, sub in schema["properties"].items():
            if "properties" in sub:
                inner = [a for a in typing.get_args(hints[key]) if a is not type(None)] or [hints[key]]
                walk(sub, inner[0], f"{path}.{key}")

    walk(INFRA, infra_types.InfraSpec, "")


def _conforms(value, hint, path, out):
    """Record in ``out`` every place where ``value`` is not of type ``hint``."""
    origin = typing.get_origin(hint)
    if hint is typing.Any:
        return
    if origin in (typing.Union, types.UnionType):
        errors: list[str] = []
        for option in typing.get_args(hint):
            trial: list[str] = []
            _conforms(value, option, path, trial)
            if not trial:
                return
            errors += trial
        out.append(f"{path}: {value!r} is none of {hint}")
        return
    if hint is type(None):
        if value is not None:
            out.append(f"{path}: {value!r} is not None")
        return
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            out.append(f"{path}: {value!r} not in {hint}")
        return
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            out.append(f"{path}: not a mapping")
            return
        hints = typing.get_type_hints(hint)
        if set(value) != set(hints):
            out.append(f"{path}: keys {sorted(set(value) ^ set(hints))} differ")
        for key, sub in hints.items():
            if key in value:
                _conforms(value[key], sub, f"{path}.{key}", out)
        return
    if origin is dict:
        if not isinstance(value, dict):
            out.append(f"{path}: not a dict")
            return
        for key, item in value.items():
            _conforms(item, typing.get_args(hint)[1], f"{path}.{key}", out)
        return
    if origin is list:
        if not isinstance(value, list):
            out.append(f"{path}: not a list")
            return
        for i, item in enumerate(value):
            _conforms(item, typing.get_args(hint)[0], f"{path}[{i}]", out)
        return
    ok = isinstance(value, hint) and not (hint in (int, float) and isinstance(value, bool))
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        out.append(f"{path}: {value!r} is not {hint}")


INFRAS = sorted(glob.glob(os.path.join(EXAMPLES, "*.infra.yaml")))


@pytest.mark.parametrize("infra_file", INFRAS, ids=os.path.basename)
def test_every_loaded_example_has_the_generated_types(infra_file, clean_env):
    recipe = os.path.join(EXAMPLES, "grpo_tiny.yaml" if "single" in infra_file or "cpu" in infra_file
                          else "grpo_swe.yaml")
    run = load_run(recipe, infra_file, Layers(env={**clean_env, "TAG": "1"}))
    problems: list[str] = []
    _conforms(run.infra, infra_types.InfraSpec, "", problems)
    assert problems == []


def test_the_checker_above_can_fail():
    problems: list[str] = []
    _conforms({"mode": "rayjobb"}, typing.get_type_hints(infra_types.Launch)["mode"], "launch.mode", problems)
    assert problems


@pytest.mark.slow
def test_mypy_catches_a_misspelt_infra_key(tmp_path):
    from mypy import api

    src = tmp_path / "use.py"
    src.write_text("from dockyard_k8s.config.infra_types import InfraSpec\n\n\n"
                   "def mode(infra: InfraSpec) -> str:\n    return infra['launch']['mdoe']\n")
    out, _, status = api.run([str(src), "--no-incremental", "--follow-imports=silent"])
    assert status == 1
    assert '"mdoe"' in out and "TypedDict" in out
