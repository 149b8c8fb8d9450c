"""Recipe overrides read as Hydra reads them (issue 22 item 29): hydra-core's override grammar
(hydra/grammar/OverrideLexer.g4, OverrideParser.g4) and its config loader
(hydra/_internal/config_loader_impl.py) are the reference, so what the job's Hydra would refuse or
read differently is refused here, at the override, with the fix (tests/golden/messages/overrides.txt:
how); and one `check` reports every independent problem of the overrides, the infra files and the
recipe at once."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.errors import ConfigError
from support.cli import run_cli
from support.paths import REPO

EX = os.path.join(REPO, "examples")
INFRA = "infra:\n  image: reg.example.com/img:1.0\n"


def problems(recipe, infra, **layers) -> list[str]:
    with pytest.raises(ConfigError) as e:
        build_bundle(recipe, infra, Layers(**layers))
    return [str(p) for p in e.value.problems]


@pytest.fixture
def grouped(write):
    """A recipe choosing the option `small` of its config group `model` (Hydra's GROUP_DEFAULT)."""
    write("model/small.yaml", "size: 1\nlayers: 2\n")
    write("model/big.yaml", "size: 9\n")
    return write("r.yaml", "defaults:\n  - model: small\n  - _self_\ntrainer:\n  lr: 1\n")


# --- a group choice on the command line -----------------------------------------------------------


def test_a_group_is_also_a_directory_beside_the_recipe(write, clean_env):
    write("optim/adam.yaml", "lr: 1\n")
    recipe = write("r.yaml", "optim:\n  lr: 2\n")  # the group exists (Hydra: group_exists), unused here
    found = problems(recipe, write("i.yaml", INFRA), env=clean_env, overrides=["optim=adam"])
    assert len(found) == 1 and "config group optim" in found[0] and "(options: adam)" in found[0]


def test_a_key_inside_the_group_is_an_ordinary_override(grouped, write, clean_env):
    run = load_run(grouped, write("i.yaml", INFRA), Layers(env=clean_env, overrides=["model.size=4"]))
    assert run.recipe["model"] == {"size": 4, "layers": 2}
    assert run.job_args == ["++model.size=4"]


# --- Hydra's grammar -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("override", "value"), [
    ("a='b=c'", "b=c"),  # quoted: Hydra's QUOTED_VALUE
    ("trainer.lr='1,2'", "1,2"),
    ("trainer.lr=[1,2]", [1, 2]),
    (r"a=b\=c", "b=c"),  # Hydra's ESC
])
def test_quoted_and_escaped_values_pass(write, clean_env, override, value):
    recipe = write("r.yaml", "a: 1\ntrainer:\n  lr: 1\n")
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env, overrides=[override]))
    key = override.partition("=")[0]
    node = run.recipe
    for part in key.split("."):
        node = node[part]
    assert node == value


def test_a_list_item_is_written_as_hydra_writes_it(write, clean_env):
    recipe = write("r.yaml", "stages:\n  - {steps: 1}\n  - {steps: 2}\n")
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env, overrides=["stages.1.steps=5"]))
    assert run.recipe["stages"] == [{"steps": 1}, {"steps": 5}]
    assert run.job_args == ["++stages.1.steps=5"]


# --- ~key reaches the job ----------------------------------------------------------------------------------


def test_a_deletion_is_passed_to_the_job_which_deletes_it(write, clean_env):
    """The job's Hydra applies the overrides to the mounted recipe: it receives `~key` and deletes
    the key, so the mounted recipe keeps it (Hydra cannot delete a key that is not there:
    "Could not delete from config")."""
    recipe = write("r.yaml", "optimizer:\n  lr: 1\n  beta: 2\n")
    run = load_run(recipe, write("i.yaml", INFRA),
                   Layers(env=clean_env, overrides=["optimizer.lr=3", "~optimizer.beta", "+optimizer.gamma=1"]))
    assert run.job_args == ["++optimizer.lr=3", "~optimizer.beta", "++optimizer.gamma=1"]
    assert run.recipe["optimizer"] == {"lr": 3, "beta": 2, "gamma": 1}  # what the job starts from


def test_a_deletion_with_a_value_deletes_only_that_value(write, clean_env):
    recipe = write("r.yaml", "optimizer:\n  lr: 1\n")
    assert load_run(recipe, write("i.yaml", INFRA),
                    Layers(env=clean_env, overrides=["~optimizer.lr=1"])).job_args == ["~optimizer.lr=1"]
    (found,) = problems(recipe, write("i.yaml", INFRA), env=clean_env, overrides=["~optimizer.lr=2"])
    assert "the value of optimizer.lr is 1, not 2" in found


def test_check_says_what_the_job_deletes(write, clean_env):
    recipe = write("r.yaml", "optimizer:\n  lr: 1\n  beta: 2\n")
    result = run_cli("check", recipe, "-f", write("i.yaml", INFRA), "~optimizer.beta")
    assert result.code == 0, result.text
    assert "(+1 override(s) passed to the job)" in result.out
    assert "~optimizer.beta: deleted by the job" in result.out


# --- attach, an empty recipe ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "{}\n", "defaults: []\n"])
def test_an_empty_recipe_is_refused(write, clean_env, text):
    recipe = write("r.yaml", text)
    (found,) = problems(recipe, write("i.yaml", INFRA), env=clean_env)
    assert found.startswith(f"{recipe}: the recipe is empty")


# --- every independent problem at once -------------------------------------------------------------------


def test_one_check_reports_overrides_infra_and_recipe_problems_together(grouped, write, clean_env):
    infra = write("i.yaml", "infra:\n  namespace: ns\nkuberay:\n  trainer:\n    replicas: lots\n"
                            "launch:\n  mode: attach\n  attach: {cluster: a, address: 'http://x:8265'}\n")
    found = problems(grouped, infra, env=clean_env, overrides=["model=big", "trainer.lrr=2"])
    text = "\n".join(found)
    assert "override model=big: model: " in text  # the override stage
    assert "override trainer.lrr=2: trainer.lrr: no key trainer.lrr" in text
    assert f"{infra}:5:15: kuberay.trainer.replicas: got 'lots'" in text  # the schema stage
    assert "infra.image: is required" in text  # the run rules, on what the schema accepted
    assert "launch.attach.address: got both" in text
    assert len(found) == 5, found


def test_the_cli_prints_every_problem_of_a_secret_and_a_missing_key_together():
    """(with item 27) the --set and the override are both named, redacted, in one run."""
    hf = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
    result = run_cli("check", f"{EX}/grpo_swe.yaml", "--infra", f"{EX}/grpo_swe.infra.yaml",
                     f"--set=kuberay.trainer.env.HF_TOKEN={hf}", "+logging.wandb_api_key=0123456789abcdef")
    assert result.code == 2 and "2 problem(s)" in result.err, result.text
    assert hf not in result.text
