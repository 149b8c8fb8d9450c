import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run, run_name_from
from dockyard_k8s.errors import ConfigError

INFRA = "infra:\n  image: reg/img:1.0\n"


def problems_of(fn, recipe, infra, **layers):
    with pytest.raises(ConfigError) as e:
        fn(recipe, infra, Layers(**layers))
    return [str(p) for p in e.value.problems]


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


def test_defaults_cycle_is_reported(recipe, write, clean_env):
    a = write("a.yaml", "defaults: b.yaml\n" + INFRA)
    b = write("b.yaml", "defaults: a.yaml\n")
    problems = problems_of(load_run, recipe, a, env=clean_env)
    assert len(problems) == 1
    assert problems[0].startswith(f"{b}:1:11: defaults: defaults cycle: ")
    assert problems[0].endswith("a.yaml -> " + b + " -> " + a)


def test_missing_parent_is_reported_at_the_defaults_key(recipe, write, clean_env):
    child = write("c.yaml", "defaults: nope.yaml\n" + INFRA)
    assert problems_of(load_run, recipe, child, env=clean_env) == [
        f"{child}:1:11: defaults: parent file {child.rsplit('/', 1)[0]}/nope.yaml does not exist"]


def test_recipe_defaults_chain(write, clean_env):
    write("common.yaml", "optimizer:\n  lr: 1\n  wd: 0.1\n")
    recipe = write("r.yaml", "defaults: common.yaml\noptimizer:\n  lr: 2\n")
    run = load_run(recipe, write("i.yaml", INFRA), Layers(env=clean_env))
    assert run.recipe["optimizer"] == {"lr": 2, "wd": 0.1}
    assert "defaults" not in run.recipe


def test_unknown_key_with_suggestion_at_key_location(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "kuberay:\n  trainer:\n    replica: 2\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:5:5: kuberay.trainer.replica: unknown key 'replica' (expected one of: replicas, gpus, cpu, memory, "
        "cpuLimit, memoryLimit, extendedResources, shmSize, nodeSelector, tolerations, env, rayStartParams); "
        "did you mean 'replicas'?"]


def test_every_type_problem_at_once(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "kuberay:\n  trainer:\n    replicas: two\n    cpu: 4 cores\n"
                                    "launch:\n  mode: rayjobs\nsandbox:\n  networkPolicy:\n"
                                    "    allowedEgressCidrs: [10.0.0.1/8]\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:5:15: kuberay.trainer.replicas: got 'two' (string), expected an integer",
        f"{infra}:6:10: kuberay.trainer.cpu: got '4 cores' (string), expected a Kubernetes quantity like 4, "
        "500m or 16Gi",
        f"{infra}:8:9: launch.mode: got 'rayjobs' (string), expected one of: rayjob, bringup, attach, job, statefulset",
        f"{infra}:11:26: sandbox.networkPolicy.allowedEgressCidrs[0]: got '10.0.0.1/8' (string), expected a CIDR "
        "block like 10.0.0.0/8 (host bits zero)",
    ]


def test_minimum_is_enforced(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "sandbox:\n  replicas: -1\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:4:13: sandbox.replicas: got -1, expected a number >= 0"]


def test_yaml_1_1_boolean_in_node_selector_is_caught(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "kuberay:\n  trainer:\n    nodeSelector:\n      gpu: yes\n")
    problems = problems_of(load_run, recipe, infra, env=clean_env)
    assert problems == [f"{infra}:6:12: kuberay.trainer.nodeSelector.gpu: unquoted 'yes' is a boolean in YAML 1.1 "
                        "(PyYAML, kubectl) but a string in YAML 1.2; write true/false, or quote it"]


def test_image_is_required(recipe, write, clean_env):
    infra = write("i.yaml", "infra:\n  namespace: x\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:1:1: infra.image: is required (got nothing, expected an image like "
        "registry.example.com/ubuntu-swe:vllm-1.4.2)"]


def test_attach_mode_needs_a_target(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "launch:\n  mode: attach\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:3:1: launch.attach: attach mode needs launch.attach.cluster or launch.attach.address (got neither)"]


def test_an_attach_target_outside_attach_mode_is_refused_not_ignored(recipe, write, clean_env):
    # a forgotten `mode: attach`: rayjob mode would start a new GPU cluster beside the one named
    infra = write("i.yaml", INFRA + "launch:\n  attach: {cluster: shared}\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:4:21: launch.attach.cluster: launch.attach.cluster is read only in launch.mode attach (got "
        "launch.mode rayjob, which starts GPU pods of its own): set launch.mode: attach to submit to shared, or "
        "remove launch.attach.cluster"]


def test_set_errors_name_the_flag(recipe, write, clean_env):
    infra = write("i.yaml", INFRA)
    assert problems_of(load_run, recipe, infra, sets=["sandbox.replicas=many", "nokey"], env=clean_env) == [
        "--set nokey: got 'nokey', expected KEY=VALUE with KEY a dotted path like a.b.c",
        "--set sandbox.replicas=many: sandbox.replicas: got 'many' (string), expected an integer",
    ]


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


def test_hydra_override_of_a_missing_key_suggests_the_right_one(recipe, write, clean_env):
    assert problems_of(load_run, recipe, write("i.yaml", INFRA), env=clean_env, overrides=["lr=1", "+model=x"]) == [
        "override +model=x: model: model already exists in the recipe (use model=... or ++model=... to change it)",
        "override lr=1: lr: no key lr in the recipe; did you mean optimizer.lr? (use +lr=... to add it, "
        "++lr=... to add or change)",
    ]


def test_no_sandbox_url_override_when_injection_is_off(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA + "sandbox:\n  injectUrls: false\n"), Layers(env=clean_env))
    assert run.job_args == [] and run.recipe["env"]["code"]["sandbox_urls"] == ["x"]


def test_sibling_infra_file_is_the_default(write, clean_env):
    recipe = write("exp.yaml", "a: 1\n")
    write("exp.infra.yaml", INFRA + "  namespace: sibling\n")
    assert load_run(recipe, layers=Layers(env=clean_env)).infra["infra"]["namespace"] == "sibling"


def test_unreadable_files_are_problems_not_tracebacks(write, clean_env):
    problems = problems_of(load_run, "/nonexistent/r.yaml", write("i.yaml", INFRA), env=clean_env)
    assert problems == ["/nonexistent/r.yaml: cannot read file: No such file or directory"]


def test_top_level_must_be_a_mapping(recipe, write, clean_env):
    infra = write("i.yaml", "- a\n- b\n")
    assert problems_of(load_run, recipe, infra, env=clean_env) == [
        f"{infra}:1:1: got a list, expected a mapping at the top level"]


@pytest.mark.parametrize(("file", "name"), [("grpo_swe.yaml", "grpo-swe"), ("My_Recipe.v2.yml", "my-recipe-v2"),
                                            ("42-run.yaml", "run"), ("___.yaml", "run")])
def test_run_name_from_recipe_file(file, name):
    assert run_name_from(f"/x/{file}") == name


def test_kuberay_rules_are_reported_at_the_config_key(write, clean_env):
    recipe = write("r.yaml", "a: 1\n")
    long_name = "a" * 48
    infra = write("i.yaml", INFRA + f"launch:\n  name: {long_name}\n  suspend: true\n"
                                    "  shutdownAfterJobFinishes: false\n")
    assert problems_of(build_bundle, recipe, infra, env=clean_env) == [
        f"{infra}:4:9: launch.name: RayJob metadata.name: RayJob name '{long_name}' has 48 characters, KubeRay "
        "allows at most 47",
        f"{infra}:5:12: launch.suspend: RayJob spec.suspend: suspend requires shutdownAfterJobFinishes: true",
    ]


def test_derived_run_name_problem_points_at_the_recipe(write, clean_env):
    recipe = write("a-very-long-recipe-name-that-makes-the-rayjob-name-too-long.yaml", "a: 1\n")
    problems = problems_of(build_bundle, recipe, write("i.yaml", INFRA), env=clean_env)
    assert problems[0].startswith(f"{recipe}: launch.name: RayJob metadata.name:")
    assert problems[0].endswith("(the run name defaults to the recipe file name; set launch.name)")


def test_a_typo_in_an_override_suggests_the_close_existing_key_first(write, clean_env):
    recipe = write("job.yaml", "trainer:\n  lr: 1.0e-6\n  warmup: 10\noptimizer:\n  beta: 0.9\n")
    problems = problems_of(load_run, recipe, write("i.yaml", INFRA), env=clean_env,
                           overrides=["trainer.lrr=3", "optimzer.beta=1", "~trainer.warmpu"])
    assert sorted(problems) == [
        "override optimzer.beta=1: optimzer.beta: no key optimzer.beta in the recipe; did you mean "
        "optimizer.beta? (use +optimzer.beta=... to add it, ++optimzer.beta=... to add or change)",
        "override trainer.lrr=3: trainer.lrr: no key trainer.lrr in the recipe; did you mean trainer.lr? "
        "(use +trainer.lrr=... to add it, ++trainer.lrr=... to add or change)",
        "override ~trainer.warmpu: trainer.warmpu: no key trainer.warmpu in the recipe to delete; did you mean "
        "trainer.warmup?",
    ]


def test_a_key_that_moved_says_where_it_went_at_its_line(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "  networkPolicy:\n    operatorPodLabels: {app: kuberay}\n    extraIngress: []\n")
    found = problems_of(load_run, recipe, infra, env=clean_env)
    assert len(found) == 2
    assert found[0].startswith(f"{infra}:4:5: infra.networkPolicy.operatorPodLabels: unknown key 'operatorPodLabels': "
                               "it moved to kuberay.networkPolicy.operator.podSelector, a label selector")
    assert found[1].startswith(f"{infra}:5:5: infra.networkPolicy.extraIngress: unknown key 'extraIngress': it moved "
                               "to kuberay.networkPolicy.extraIngress (each rule needs `from`")  # not "extraEgress?"
    found = problems_of(load_run, recipe, write("j.yaml", INFRA), env=clean_env,
                        sets=["infra.networkPolicy.extraIngress=[]"])
    assert found == [found[0]] and "it moved to kuberay.networkPolicy.extraIngress" in found[0]


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


def test_an_infra_spec_given_as_the_recipe_is_said_once_at_its_first_key(write, clean_env):
    """`check x.infra.yaml` (the recipe forgotten): not "no x.infra.infra.yaml beside it", and with
    `-f` too, not a ✔ that mounts the infra spec as the job's recipe."""
    infra = write("x.infra.yaml", "# team infra\ninfra:\n  image: r/i:1\nkuberay:\n  trainer: {gpus: 1}\n")
    for files in (None, infra):
        with pytest.raises(ConfigError) as e:
            load_run(infra, files, Layers(env=clean_env))
        (p,) = e.value.problems
        assert (p.file, p.line, p.col) == (infra, 2, 1)
        assert p.message.startswith("this is an infra spec, not a training recipe (its top-level keys infra, kuberay")
        assert f"-f {infra}" in p.message


def test_a_recipe_whose_keys_are_not_all_infra_sections_is_a_recipe(write, clean_env):
    """Only a file of infra sections with infra: or kuberay: is taken for an infra spec: a
    recipe may have its own sandbox: or plan: section."""
    infra = write("i.yaml", "infra:\n  image: r/i:1\n")
    for text, data in (("trainer: {lr: 1}\nlaunch_notes: x\n", {"trainer": {"lr": 1}, "launch_notes": "x"}),
                       ("sandbox: {urls: [x]}\n", {"sandbox": {"urls": ["x"]}}),
                       ("infra: {gpus: 1}\nmodel: m\n", {"infra": {"gpus": 1}, "model": "m"})):
        assert load_run(write("r.yaml", text), infra, Layers(env=clean_env)).recipe == data
