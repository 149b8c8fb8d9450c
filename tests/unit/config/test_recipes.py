"""Hydra defaults lists in recipes: config groups, _self_, packages, override, optional."""

from __future__ import annotations

import pytest

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.errors import ConfigError

INFRA = "infra:\n  image: reg.example.com/img:1.0\n"


@pytest.fixture
def configs(write):
    write("model/qwen3_32b.yaml", "name: qwen3-32b\nsize: 32\n")
    write("model/qwen3_8b.yaml", "name: qwen3-8b\nsize: 8\n")
    write("base/grpo_common.yaml", "algorithm: grpo\nlr: 1\n")
    write("optim/adam.yaml", "# @package _global_\noptimizer:\n  lr: 3\n")
    return write("i.yaml", INFRA)


def recipe_of(write, clean_env, infra, text):
    return load_run(write("r.yaml", text), infra, Layers(env=clean_env))


def test_config_groups_self_and_packages(write, clean_env, configs):
    run = recipe_of(write, clean_env, configs, "defaults:\n  - model: qwen3_32b\n  - base/grpo_common.yaml\n"
                                               "  - optim/adam\n  - _self_\nlr: 2\nmodel: {size: 33}\n")
    assert run.recipe == {"model": {"name": "qwen3-32b", "size": 33}, "algorithm": "grpo", "lr": 2,
                          "optimizer": {"lr": 3}}


def test_self_first_lets_the_defaults_win(write, clean_env, configs):
    run = recipe_of(write, clean_env, configs, "defaults: [_self_, {model: qwen3_8b}]\nmodel: {size: 99}\n")
    assert run.recipe["model"] == {"name": "qwen3-8b", "size": 8}


def test_a_config_path_goes_under_its_group_as_in_hydra_and_check_says_so(write, clean_env, configs):
    run = recipe_of(write, clean_env, configs, "defaults:\n  - base/grpo_common\n  - model@policy: qwen3_8b\n")
    assert run.recipe == {"base": {"algorithm": "grpo", "lr": 1}, "policy": {"name": "qwen3-8b", "size": 8}}
    assert any("base/grpo_common goes under 'base'" in n for n in run.notes)


def test_override_optional_and_null(write, clean_env, configs):
    write("base/with_model.yaml", "defaults:\n  - /model: qwen3_32b\n")
    run = recipe_of(write, clean_env, configs, "defaults:\n  - base/with_model@_global_\n"
                                               "  - optional model@extra: nope\n  - model@none: null\n"
                                               "  - override /model: qwen3_8b\n")
    assert run.recipe == {"model": {"name": "qwen3-8b", "size": 8}}


@pytest.mark.parametrize(("defaults", "message"), [
    ("[{model: qwen3_70b}]", "defaults[0]: no config model/qwen3_70b.yaml under {root} (options: qwen3_32b, qwen3_8b)"),
    ("[base/grpo_comon]", "defaults[0]: no config base/grpo_comon.yaml under {root} (options: grpo_common)"),
    ("[{hydra/launcher: basic}]", "defaults[0]: hydra/launcher: Hydra's own config groups are not supported"),
    ("[{override model: qwen3_8b}]", "defaults[0]: override model: no config included here chooses a 'model' option"),
    ("[[a]]", "defaults[0]: got ['a'], expected a config name (base/common), a file (base/common.yaml), "
              "GROUP: OPTION or _self_"),
    ("5", "defaults: got 5 (integer), expected a file name or a Hydra defaults list"),
])
def test_defaults_list_problems_are_at_the_entry(write, clean_env, configs, tmp_path, defaults, message):
    with pytest.raises(ConfigError) as e:
        recipe_of(write, clean_env, configs, f"defaults: {defaults}\n")
    found = [str(p) for p in e.value.problems]
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path}/r.yaml:1:") and message.format(root=tmp_path) in found[0]


def test_a_defaults_cycle_through_groups_is_reported(write, clean_env, configs):
    write("loop/a.yaml", "defaults: [/loop/b]\n")
    write("loop/b.yaml", "defaults: [/loop/a]\n")
    with pytest.raises(ConfigError) as e:
        recipe_of(write, clean_env, configs, "defaults: [loop/a]\n")
    assert "defaults cycle" in str(e.value.problems[0])
