"""Loading a run: shipped defaults, layers last-wins, parents, overrides; what each layer leaves.

The messages of bad input are tests/golden/messages/*.txt."""

import pytest

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run, run_name_from

INFRA = "infra:\n  image: reg/img:1.0\n"


@pytest.fixture
def recipe(write):
    return write("job.yaml", "model: m\noptimizer:\n  lr: 1.0e-6\nenv:\n  code:\n    sandbox_urls: [x]\n")


def test_shipped_defaults_fill_every_section(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env))
    assert run.infra["sandbox"]["resources"]["cpu"] == "1"
    assert run.infra["sandbox"]["resources"]["memory"] == "2Gi"
    assert run.infra["sandbox"]["pdb"] == {"enabled": True, "maxUnavailable": 1}
    assert run.infra["infra"]["security"]["enabled"] is False
    assert run.infra["kuberay"]["pdb"]["enabled"] is False
    assert run.infra["launch"]["mode"] == "rayjob"
    assert run.sources == ["<shipped defaults>", write("i.yaml", INFRA)]


def test_layering_last_wins(recipe, write, tmp_path):
    user = write("user-defaults.yaml", "infra:\n  namespace: from-user\n  imagePullSecrets: [u]\n"
                                      "sandbox:\n  replicas: 7\n")
    infra = write("i.yaml", INFRA + "  namespace: from-infra\n")
    env = {"DOCKYARD_K8S_DEFAULTS": user, "HOME": str(tmp_path)}
    run = load_run(recipe, infra, Layers(sets=["sandbox.replicas=9"], env=env))
    assert run.infra["infra"]["namespace"] == "from-infra"
    assert run.infra["infra"]["imagePullSecrets"] == ["u"]
    assert run.infra["sandbox"]["replicas"] == 9
    assert run.sources == ["<shipped defaults>", user, infra]


def test_user_defaults_found_in_xdg_config_home(recipe, write, tmp_path):
    write("cfg/dockyard-k8s/defaults.yaml", "infra:\n  namespace: xdg\n")
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")}))
    assert run.infra["infra"]["namespace"] == "xdg"


def test_infra_defaults_chain_parent_first(recipe, write, clean_env):
    write("base/grand.yaml", "infra:\n  namespace: grand\n  image: reg/g:1\nsandbox:\n  replicas: 1\n")
    write("base/parent.yaml", "defaults: grand.yaml\ninfra:\n  namespace: parent\n")
    child = write("child.yaml", "defaults: base/parent.yaml\nsandbox:\n  replicas: 3\n")
    run = load_run(recipe, child, Layers(env=clean_env))
    assert (run.infra["infra"]["namespace"], run.infra["infra"]["image"], run.infra["sandbox"]["replicas"]) == \
        ("parent", "reg/g:1", 3)


def test_recipe_defaults_chain(write, clean_env):
    write("common.yaml", "optimizer:\n  lr: 1\n  wd: 0.1\n")
    recipe = write("r.yaml", "defaults: common.yaml\noptimizer:\n  lr: 2\n")
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env))
    assert run.recipe["optimizer"] == {"lr": 2, "wd": 0.1}
    assert "defaults" not in run.recipe


def test_set_escaped_dots_and_lists(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env, sets=[
        r"kuberay.trainer.nodeSelector.node\.kubernetes\.io/instance-type=p5.48xlarge",
        "infra.imagePullSecrets=[a, b]",
    ]))
    assert run.infra["kuberay"]["trainer"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    assert run.infra["infra"]["imagePullSecrets"] == ["a", "b"]


def test_env_interpolation_in_infra_and_recipe(write, tmp_path):
    recipe = write("r.yaml", "run: ${RUN_ID}\n")
    infra = write("i.yaml", "infra:\n  image: reg/img:${TAG:-1.0}\n")
    run = load_run(recipe, infra, Layers(env={"RUN_ID": "abc", "HOME": str(tmp_path)}))
    assert run.recipe == {"run": "abc"}  # no env.code.sandbox_urls in the recipe: nothing appended
    assert run.infra["infra"]["image"] == "reg/img:1.0"


def test_hydra_overrides_apply_and_reach_the_job(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA),
                   Layers(env=clean_env,
                          overrides=["optimizer.lr=3e-6", "+optimizer.beta=0.9", "++model=n", "~optimizer.lr"]))
    # the job starts from the changes applied and deletes what ~ names (its Hydra replays every argument)
    assert run.recipe["optimizer"] == {"lr": 3e-6, "beta": 0.9}
    assert run.recipe["model"] == "n"
    assert run.recipe["env"]["code"]["sandbox_urls"] is None
    assert run.job_args == ["++optimizer.lr=3e-06", "++optimizer.beta=0.9", "++model=n", "~optimizer.lr",
                            "++env.code.sandbox_urls=null"]


def test_no_sandbox_url_override_when_injection_is_off(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA + "sandbox:\n  injectUrls: false\n"), Layers(env=clean_env))
    assert run.job_args == [] and run.recipe["env"]["code"]["sandbox_urls"] == ["x"]


def test_sibling_infra_file_is_the_default(write, clean_env):
    recipe = write("exp.yaml", "a: 1\n")
    write("exp.infra.yaml", INFRA + "  namespace: sibling\n")
    assert load_run(recipe, layers=Layers(env=clean_env)).infra["infra"]["namespace"] == "sibling"


@pytest.mark.parametrize(("file", "name"), [("grpo_swe.yaml", "grpo-swe"), ("My_Recipe.v2.yml", "my-recipe-v2"),
                                            ("42-run.yaml", "run"), ("___.yaml", "run")])
def test_run_name_from_recipe_file(file, name):
    assert run_name_from(f"/x/{file}") == name


def test_every_moved_key_points_at_a_key_of_the_schema():
    from dockyard_k8s.config.infra_schema import INFRA as SCHEMA

    def walk(schema):
        yield from schema.get("x-moved", {}).values()
        for sub in schema.get("properties", {}).values():
            yield from walk(sub)

    targets = list(walk(SCHEMA))
    assert targets
    for target in targets:
        node = SCHEMA
        for part in target.split()[0].rstrip(",").split("."):
            node = node["properties"][part]


def test_a_recipe_whose_keys_are_not_all_infra_sections_is_a_recipe(write, clean_env):
    """Only a file of infra sections with infra: or kuberay: is taken for an infra spec: a
    recipe may have its own sandbox: or plan: section."""
    infra = write("i.yaml", "infra:\n  image: r/i:1\n")
    for text, data in (("trainer: {lr: 1}\nlaunch_notes: x\n", {"trainer": {"lr": 1}, "launch_notes": "x"}),
                       ("sandbox: {urls: [x]}\n", {"sandbox": {"urls": ["x"]}}),
                       ("infra: {gpus: 1}\nmodel: m\n", {"infra": {"gpus": 1}, "model": "m"})):
        assert load_run(write("r.yaml", text), infra, Layers(env=clean_env)).recipe == data
