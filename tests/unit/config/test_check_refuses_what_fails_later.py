"""The cases where `check` said ✔ (or printed a traceback) and the cluster or the trainer would
fail later: each one refused at the key that causes it, or made to work."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.cli import main
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.errors import ConfigError
from support.paths import REPO

EX = os.path.join(REPO, "examples")
INFRA = "infra:\n  image: reg.example.com/img:1.0\n"
RECIPE_WITH_URLS = "model: m\nenv:\n  code:\n    sandbox_urls: [http://localhost:9090]\n"


def problems(recipe, infra=None, **layers) -> list[str]:
    with pytest.raises(ConfigError) as e:
        build_bundle(recipe, infra, Layers(**layers))
    return [str(p) for p in e.value.problems]


@pytest.fixture
def recipe(write):
    return write("r.yaml", RECIPE_WITH_URLS)


# --- 1. launch.mode job: one pod on one node ---------------------------------------------------


def test_job_mode_refuses_what_cannot_be_one_pod_on_one_node(clean_env):
    found = problems(f"{EX}/grpo_swe.yaml", f"{EX}/grpo_swe.infra.yaml", sets=["launch.mode=job"], env=clean_env)
    text = "\n".join(found)
    assert "grpo_swe.infra.yaml:30:15: kuberay.trainer.replicas: got 2: launch.mode job runs one pod on one " \
           "node" in text
    assert ("kuberay.inference.gpus: launch.mode job runs on one p4de.24xlarge node (8 GPUs), but the fleets ask 16 "
            "(kuberay.trainer.gpus 8 + kuberay.inference.gpus 8)") in text
    assert "kuberay.head.nodeSelector.node-role: node-role: 'cpu' selects a node for the head alone" in text


def test_job_mode_runs_the_fit_test_plan_runs(clean_env):
    found = problems(f"{EX}/grpo_swe.yaml", f"{EX}/eks_p5.infra.yaml",
                     sets=["launch.mode=job", "infra.instanceType=p4de.24xlarge", "kuberay.trainer.replicas=1",
                           "kuberay.inference.replicas=0", "kuberay.head.cpu=8"], env=clean_env)
    assert found == ["--set kuberay.head.cpu=8: kuberay.head.cpu: the pod requests cpu 98, but one p4de.24xlarge node "
                     "has 95690m allocatable, so it never schedules (`plan` would say: 0/1 nodes are available: "
                     "Insufficient cpu); launch.mode job runs the head and every fleet in this one pod, so their "
                     "sizing adds up (kuberay.head + kuberay.trainer + kuberay.inference)"]


def test_job_mode_refuses_one_node_label_with_two_values(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "launch: {mode: job}\nkuberay:\n  inference: {replicas: 0}\n  head:\n"
                                    "    nodeSelector: {pool: a}\n  trainer:\n    nodeSelector: {pool: b}\n")
    assert problems(recipe, infra, env=clean_env) == [
        f"{infra}:9:26: kuberay.trainer.nodeSelector.pool: got 'b', but kuberay.head.nodeSelector has pool: 'a': "
        "launch.mode job puts the head and every fleet in one pod, which cannot be on both kinds of node"]


def test_every_pod_must_fit_one_node_of_its_declared_instance_type(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "kuberay:\n  trainer:\n    gpus: 16\n    nodeSelector:\n"
                                    "      node.kubernetes.io/instance-type: p5.48xlarge\n")
    assert problems(recipe, infra, env=clean_env) == [
        f"{infra}:5:11: kuberay.trainer.gpus: the pod requests nvidia.com/gpu 16, but one p5.48xlarge node has 8 "
        "allocatable, so it never schedules (`plan` would say: 0/1 nodes are available: Insufficient nvidia.com/gpu)"]


def test_a_selected_label_the_node_lacks_says_what_the_node_has(recipe, write, clean_env):
    itype = "      node.kubernetes.io/instance-type: p5.48xlarge\n"
    arm = write("a.yaml", INFRA + "kuberay:\n  trainer:\n    nodeSelector:\n" + itype +
                "      kubernetes.io/arch: arm64\n")
    assert problems(recipe, arm, env=clean_env) == [
        f"{arm}:7:27: kuberay.trainer.nodeSelector[\"kubernetes.io/arch\"]: kubernetes.io/arch=arm64: a p5.48xlarge "
        "node has kubernetes.io/arch=amd64, so the pod never schedules (`plan` would say: 0/1 nodes are available: "
        "1 node(s) didn't match Pod's node affinity/selector)"]
    pools = write("p.yaml", INFRA + "kuberay:\n  trainer:\n    nodeSelector:\n" + itype + "      team: rl\n"
                  "plan:\n  nodePools: [{name: gpu, instanceType: p5.48xlarge, count: 2}]\n")
    assert problems(recipe, pools, env=clean_env) == [
        f"{pools}:7:13: kuberay.trainer.nodeSelector.team: team=rl: the p5.48xlarge pool gpu of plan.nodePools does "
        "not carry this label (add it to the pool's labels if its nodes have it), so the pod never schedules "
        "(`plan` would say: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector)"]


# --- 2. ++env.code.sandbox_urls=null only when it applies --------------------------------------


def test_no_sandbox_urls_override_for_a_recipe_without_that_key(write, clean_env, capsys, monkeypatch):
    plain = write("train.yaml", "lr: 1\n")
    infra = write("i.yaml", INFRA + "launch:\n  entrypoint: python train.py\n")
    run = load_run(plain, infra, Layers(env=clean_env))
    assert run.job_args == [] and run.added_args == ()
    monkeypatch.chdir(os.path.dirname(plain))
    assert main(["check", plain, "-f", infra]) == 0
    out = capsys.readouterr().out
    assert "override(s)" not in out and "job gets" not in out


def test_sandbox_urls_override_is_said_and_switchable(recipe, write, clean_env, capsys):
    infra = write("i.yaml", INFRA)
    run = load_run(recipe, infra, Layers(env=clean_env))
    assert run.job_args == ["++env.code.sandbox_urls=null"] and run.recipe["env"]["code"]["sandbox_urls"] is None
    assert main(["check", recipe, "-f", infra]) == 0
    out = capsys.readouterr().out
    assert "(+" not in out.split("\n")[1]  # the user passed no override
    assert "job gets   ++env.code.sandbox_urls=null (appended: the recipe has env.code.sandbox_urls" in out
    off = load_run(recipe, infra, Layers(sets=["launch.sandboxUrlsKey=null"], env=clean_env))
    assert off.job_args == [] and off.recipe["env"]["code"]["sandbox_urls"] == ["http://localhost:9090"]
    other = write("o.yaml", "sandbox:\n  urls: [x]\n")
    assert load_run(other, infra, Layers(sets=["launch.sandboxUrlsKey=sandbox.urls"], env=clean_env)).job_args == \
        ["++sandbox.urls=null"]


# --- 3. attach mode gets the recipe and the URLs ------------------------------------------------


def test_attach_mode_sends_the_recipe_and_sandbox_urls_with_the_job(recipe, write, clean_env, capsys):
    infra = write("i.yaml", INFRA + "launch:\n  mode: attach\n  attach: {cluster: shared}\n"
                                    "  runtimeEnv: {env_vars: {A: b}}\n  entrypoint: python t.py --config {recipe}\n")
    from dockyard_k8s.render.submission import submission

    run = load_run(recipe, infra, Layers(env=clean_env))
    job = submission(run.infra, run.recipe, run.job_args)
    command, env = job.entrypoint, job.runtime_env
    assert env is not None
    assert env["env_vars"]["A"] == "b"
    assert env["env_vars"]["DOCKYARD_SANDBOX_URLS"] == "http://r-sandbox.default.svc.cluster.local:9090"
    assert env["env_vars"]["DOCKYARD_RECIPE"] == "/tmp/dockyard-k8s/r/recipe.yaml"
    assert "sandbox_urls: null" in env["env_vars"]["DOCKYARD_RECIPE_YAML"]
    assert command.endswith(" && python t.py --config /tmp/dockyard-k8s/r/recipe.yaml ++env.code.sandbox_urls=null")
    assert main(["check", recipe, "-f", infra]) == 0
    out = capsys.readouterr().out
    assert "passed to the attached cluster's Ray job as DOCKYARD_SANDBOX_URLS" in out
    assert "injected into GPU pods" not in out


# --- 5. the API server's own limits, at the infra key -------------------------------------------


@pytest.mark.parametrize(("setting", "expected"), [
    ("kuberay.trainer.replicas=3000000000", "kuberay.trainer.replicas: got 3000000000, expected a number <= "
                                            "2147483647 (the API server stores it as a 32-bit integer)"),
    ("sandbox.replicas=1000000000000000000000000000000", "sandbox.replicas: got 1000000000000000000000000000000, "
                                                         "expected a number <= 2147483647"),
    ("kuberay.trainer.env.1BAD=x", "kuberay.trainer.env.1BAD: got key '1BAD', expected an environment variable name"),
    ("infra.labels.Bad Label=rl", "infra.labels[\"Bad Label\"]: got key 'Bad Label', expected a label key"),
    ("infra.labels.team=not ok", "infra.labels.team: got 'not ok' (string), expected a label value"),
    ("kuberay.trainer.nodeSelector.pool=a b", "got 'a b' (string), expected a label value"),
    ("infra.imagePullSecrets=[Bad_Secret]", "infra.imagePullSecrets[0]: got 'Bad_Secret' (string), expected a DNS-1123 "
                                            "subdomain"),
])
def test_api_server_limits_are_checked_once_at_the_key(recipe, write, clean_env, setting, expected):
    found = problems(recipe, write("i.yaml", INFRA), sets=[setting], env=clean_env)
    assert len(found) == 1, found
    assert found[0].startswith(f"--set {setting}: ") and expected in found[0]


# --- 6. image references and ${ ----------------------------------------------------------------


def test_unterminated_variable_and_empty_tag(recipe, write, clean_env):
    a = write("a.yaml", "infra:\n  image: ghcr.io/x/y:${TAG\n")
    assert problems(recipe, a, env=clean_env) == [
        f"{a}:2:10: infra.image: got '${{TAG': an unterminated or malformed variable reference (expected ${{NAME}}, "
        "${NAME:-default} or ${NAME-default}; $${ is a literal ${)"]
    b = write("b.yaml", "infra:\n  image: ghcr.io/x/y:${TAG-}\n")
    assert problems(recipe, b, env=clean_env) == [
        f"{b}:2:10: infra.image: got 'ghcr.io/x/y:': empty tag after ':' (an unset variable with an empty default?)"]


@pytest.mark.parametrize("image", ["ghcr.io/x/Y:1", "x y:1", "reg/img:", "reg/img@sha256:abc", "-bad/img:1"])
def test_invalid_image_references_are_refused(recipe, write, clean_env, image):
    found = problems(recipe, write("i.yaml", INFRA), set_strings=[f"sandbox.image={image}"], env=clean_env)
    assert found[0].startswith(f"--set-string sandbox.image={image}: sandbox.image: got {image!r}")


# --- 7. a profile's limit below the user's request ----------------------------------------------


def test_a_profile_limit_follows_the_users_request(clean_env):
    run = load_run(f"{EX}/grpo_tiny.yaml", f"{EX}/kind_single_gpu.infra.yaml",
                   Layers(sets=["kuberay.trainer.memory=30Gi"], env=clean_env))
    assert run.infra["kuberay"]["trainer"]["memoryLimit"] == "30Gi"
    assert run.notes == ("kuberay.trainer.memoryLimit follows kuberay.trainer.memory: 30Gi (the 24Gi of the kind "
                         "profile is below the request you set)",)


def test_a_limit_below_a_request_names_both_keys_and_layers(write, clean_env):
    found = problems(f"{EX}/grpo_tiny.yaml", f"{EX}/kind_single_gpu.infra.yaml",
                     sets=["kuberay.trainer.memory=30Gi", "kuberay.trainer.memoryLimit=24Gi"], env=clean_env)
    assert found == ["--set kuberay.trainer.memoryLimit=24Gi: kuberay.trainer.memoryLimit: kuberay.trainer.memoryLimit "
                     "24Gi (`--set kuberay.trainer.memoryLimit=24Gi`) is below kuberay.trainer.memory 30Gi (`--set "
                     "kuberay.trainer.memory=30Gi`): the API server rejects a limit below its request; raise the limit "
                     "or set kuberay.trainer.memoryLimit: null (= the request)"]


# --- 8. files that are not UTF-8, empty, or missing ---------------------------------------------


@pytest.mark.parametrize("which", ["infra", "recipe", "parent", "user defaults"])
def test_non_utf8_files_are_exit_2_at_the_byte(write, tmp_path, which):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"infra:\n  image: caf\xe9\n")
    recipe = write("r.yaml", "a: 1\n") if which != "recipe" else str(bad)
    infra = {"infra": str(bad), "parent": write("c.yaml", "defaults: bad.yaml\n")}.get(which, write("i.yaml", INFRA))
    env = {"HOME": str(tmp_path), **({"DOCKYARD_K8S_DEFAULTS": str(bad)} if which == "user defaults" else {})}
    found = problems(recipe, infra, env=env)
    assert found == [f"{bad}:2:13: not UTF-8 text (invalid continuation byte at byte 19: 0xe9); save it as UTF-8"]


def test_lint_of_a_non_utf8_file_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "cm.yaml"
    bad.write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\xff}\n")
    assert main(["lint", str(bad)]) == 2
    assert "not UTF-8 text (invalid start byte at byte 49: 0xff)" in capsys.readouterr().err


def test_an_empty_infra_file_is_named(write, clean_env):
    empty = write("e.infra.yaml", "")
    assert problems(write("r.yaml", "a: 1\n"), empty, env=clean_env) == [
        f"{empty}: infra.image: is required (got nothing, expected an image like "
        f"registry.example.com/ubuntu-swe:vllm-1.4.2) ({empty} is empty)"]


def test_no_infra_file_beside_the_recipe_is_said(write, clean_env):
    tiny = write("tiny.yaml", "a: 1\n")
    assert problems(tiny, env=clean_env)[0].endswith(f"(no tiny.infra.yaml beside {tiny}; pass --infra FILE)")


# --- 9. kuberay.spec fragments ----------------------------------------------------------------------


def test_a_fragment_field_is_blamed_at_the_fragment_with_a_suggestion(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "kuberay:\n  spec:\n    workerGroupSpecs:\n      - groupName: trainer\n"
                                    "        template:\n          spec:\n            containers:\n"
                                    "              - name: ray-worker\n                volumeMount: []\n")
    assert problems(recipe, infra, env=clean_env) == [
        f"{infra}:11:17: kuberay.spec.workerGroupSpecs[0].template.spec.containers[0].volumeMount: unknown field "
        '"volumeMount"; did you mean "volumeMounts"?']


def test_a_group_name_that_matches_no_fleet_is_refused_unless_listed(recipe, write, clean_env):
    fragment = "  spec:\n    workerGroupSpecs:\n      - groupName: trainr\n        replicas: 1\n"
    infra = write("i.yaml", INFRA + "kuberay:\n" + fragment)
    assert problems(recipe, infra, env=clean_env) == [
        f"{infra}:6:20: kuberay.spec.workerGroupSpecs[0].groupName: got 'trainr', expected trainer or inference (the "
        "fleet this fragment merges into); did you mean 'trainer'? To add a worker group of your own, list it in "
        "kuberay.extraGroups: [trainr]"]
    listed = write("l.yaml", INFRA + "kuberay:\n  extraGroups: [trainr]\n" + fragment)
    assert any("workerGroupSpecs[0].minReplicas: missing required field" in p
               for p in problems(recipe, listed, env=clean_env))


# --- 10. recipe and infra overrides -----------------------------------------------------------


def test_an_infra_key_after_the_recipe_is_advised_to_use_set(recipe, write, clean_env):
    assert problems(recipe, write("i.yaml", INFRA), overrides=["kuberay.trainer.replicas=4"], env=clean_env) == [
        "override kuberay.trainer.replicas=4: kuberay.trainer.replicas: kuberay.trainer.replicas is an infra key, not "
        "a recipe key: use --set kuberay.trainer.replicas=4"]


def test_a_recipe_key_in_set_names_the_recipe(write, clean_env):
    recipe = write("r.yaml", "optimizer:\n  lr: 1\n")
    assert problems(recipe, write("i.yaml", INFRA), sets=["optimizer.lr=1e-5"], env=clean_env) == [
        f"--set optimizer.lr=1e-5: optimizer: optimizer is a key of the recipe {recipe}, not of the infra spec: write "
        "optimizer.lr=1e-5 after the recipe, without --set"]


# --- 12. output paths ----------------------------------------------------------------------------


def test_render_to_one_file_and_clear_output_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "run.yaml"
    assert main(["render", "examples/grpo_swe.yaml", "--output-file", str(out)]) == 0
    text = out.read_text()  # what must exist first (comments), then the launch record and the eight objects
    assert out.is_file() and text.count("\n---\n") == 9 and text.startswith("# Before the first `kubectl apply`")
    assert main(["render", "examples/grpo_swe.yaml", "-o", "json", "--output-file", str(tmp_path / "run.json")]) == 0
    assert '"kind": "List"' in (tmp_path / "run.json").read_text()
    assert main(["render", "examples/grpo_swe.yaml", "--output-dir", str(out / "x")]) == 2
    assert main(["render", "examples/grpo_swe.yaml", "--output-dir", str(out)]) == 2
    assert main(["render", "examples/grpo_swe.yaml", "--output-file", str(tmp_path)]) == 2
    assert main(["render", "examples/grpo_swe.yaml", "--output-file", "/nonexistent/dir/run.yaml"]) == 2
    assert main(["check", "examples/grpo_swe.yaml", "--output-file", "/nonexistent/a.yaml"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"--output-dir {out / 'x'}: cannot create the directory: Not a directory" in err
    assert f"--output-dir {out}: exists and is not a directory" in err
    assert f"--output-file {tmp_path}: is a directory" in err
    assert "--output-file /nonexistent/dir/run.yaml: the directory /nonexistent/dir does not exist" in err
    assert "--output-file /nonexistent/a.yaml: the directory /nonexistent does not exist" in err


# --- 14. helm-style layering ------------------------------------------------------------------------


def test_repeatable_infra_files_later_wins_each_with_its_own_parents(recipe, write, clean_env):
    write("base/p.yaml", "sandbox:\n  replicas: 3\n  env: {A: '1'}\n")
    a = write("a.yaml", "defaults: base/p\n" + INFRA)
    b = write("b.yaml", "sandbox:\n  env: {B: '2'}\n  replicas: 5\n")
    run = load_run(recipe, [a, b], Layers(env=clean_env))
    assert run.infra["sandbox"]["replicas"] == 5 and run.infra["sandbox"]["env"] == {"A": "1", "B": "2"}
    assert run.sources[1:] == [write("base/p.yaml", "sandbox:\n  replicas: 3\n  env: {A: '1'}\n"), a, b]


def test_set_string_and_set_file(recipe, write, clean_env):
    cmd = write("cmd.txt", "python train.py --config {recipe}")
    run = load_run(recipe, write("i.yaml", INFRA),
                   Layers(set_strings=["infra.labels.build=0755"], set_files=[f"launch.entrypoint={cmd}"],
                          env=clean_env))
    assert run.infra["infra"]["labels"]["build"] == "0755"
    assert run.infra["launch"]["entrypoint"] == "python train.py --config {recipe}"
    assert problems(recipe, write("j.yaml", INFRA), set_files=["launch.entrypoint=/nonexistent"], env=clean_env) == [
        "--set-file launch.entrypoint=/nonexistent: cannot read file: No such file or directory (/nonexistent)"]


def test_null_unsets_in_files_and_set_alike_and_maps_merge(recipe, write, clean_env):
    parent = write("p.yaml", INFRA + "kuberay:\n  trainer:\n    nodeSelector: {pool: gpu}\n    memoryLimit: 300Gi\n"
                                     "    env: {A: '1', B: '2'}\n")
    child = write("c.yaml", "defaults: p.yaml\nkuberay:\n  trainer:\n    nodeSelector: null\n    memoryLimit: null\n"
                            "    env: {A: null}\n")
    run = load_run(recipe, child, Layers(env=clean_env))
    trainer = run.infra["kuberay"]["trainer"]
    assert trainer["nodeSelector"] == {}  # not nullable: back to the shipped default
    assert trainer["memoryLimit"] is None  # nullable: null (= the request)
    assert trainer["env"] == {"B": "2"}  # an entry of a free map: deleted
    by_set = load_run(recipe, parent,
                      Layers(sets=["kuberay.trainer.nodeSelector=null", "kuberay.trainer.env.A=null"], env=clean_env))
    assert by_set.infra["kuberay"]["trainer"]["nodeSelector"] == {}
    assert by_set.infra["kuberay"]["trainer"]["env"] == {"B": "2"}
    kept = load_run(recipe, parent, Layers(sets=["kuberay.trainer.nodeSelector={}"], env=clean_env))
    assert kept.infra["kuberay"]["trainer"]["nodeSelector"] == {"pool": "gpu"}  # {} merges, in --set as in files
    shm = load_run(recipe, parent, Layers(sets=["kuberay.trainer.shmSize=null"], env=clean_env))
    assert shm.infra["kuberay"]["trainer"]["shmSize"] is None  # documented: null drops the volume


# --- more of the same kind: values that pass check and fail later ---------------------------------


@pytest.mark.parametrize(("setting", "expected"), [
    ("launch.attach.address=ray-head:8265", "expected an http(s) URL like http://ray-head.team.svc:8265"),
    ("infra.storage.mountPath=data", "expected an absolute path like /data"),
    ("ncclTest.maxBytes=1GB", "expected a size in bytes like 8, 128M or 1G"),
    ("infra.imagePull.pauseImage=Registry.k8s.io/Pause", "infra.imagePull.pauseImage: got"),
    ("launch.submitter.memoryLimit=100Mi", "launch.submitter.memoryLimit 100Mi"),
])
def test_more_values_that_would_fail_on_the_cluster(recipe, write, clean_env, setting, expected):
    found = problems(recipe, write("i.yaml", INFRA), sets=[setting], env=clean_env)
    assert len(found) == 1 and expected in found[0], found


def test_plan_and_lint_report_on_a_run_check_refuses(recipe, write, monkeypatch, capsys):
    infra = write("i.yaml", INFRA + "kuberay:\n  trainer:\n    gpus: 16\n    nodeSelector:\n"
                                    "      node.kubernetes.io/instance-type: p5.48xlarge\n"
                                    "plan:\n  nodePools: [{name: gpu, instanceType: p5.48xlarge, count: 2}]\n")
    monkeypatch.setenv("HOME", os.path.dirname(infra))
    assert main(["check", recipe, "-f", infra]) == 2
    assert main(["plan", recipe, "-f", infra]) == 1  # plan's own report: pending, with the scheduler's reason
    assert "Insufficient nvidia.com/gpu" in capsys.readouterr().out
    assert main(["lint", recipe, "-f", infra]) in (0, 1)


def test_check_says_when_the_node_fit_was_not_checked(recipe, write, monkeypatch, capsys):
    # No instance type declared: a Job of 16 GPUs in one pod cannot be judged; check says so and
    # warns that no node it knows has that many, instead of a silent ✔.
    job = write("job.yaml", INFRA + "launch:\n  mode: job\nkuberay:\n  trainer: {replicas: 1, gpus: 16}\n"
                                    "  inference: {replicas: 0}\n")
    monkeypatch.setenv("HOME", os.path.dirname(job))
    assert main(["check", recipe, "-f", job]) == 0
    out = capsys.readouterr().out
    assert "  node fit: not checked for the Job's one pod (no instance type declared). With " \
           "node.kubernetes.io/instance-type in a fleet's nodeSelector (eks: infra.instanceType), check tests each " \
           "pod against one node of that type" in out
    assert "the Job's one pod asks for 16 GPUs: no instance type dockyard-k8s knows has more than 8 " \
           "(p4d.24xlarge, p4de.24xlarge, p5.48xlarge, ...), so it runs only on a node with 16" in out
    # a fleet on an instance type check does not know
    rayjob = write("rj.yaml", INFRA + "kuberay:\n  trainer:\n    gpus: 4\n    nodeSelector: "
                                      "{node.kubernetes.io/instance-type: dgx2}\n")
    assert main(["check", recipe, "-f", rayjob]) == 0
    out = capsys.readouterr().out
    assert "node fit: not checked for the trainer, inference pods (no instance type declared; dgx2 is neither in " \
           "the catalogue nor under plan.instanceTypes)" in out and "asks for" not in out
    # declared under plan.instanceTypes: checked, so nothing is said
    known = write("known.yaml", INFRA + "kuberay:\n  trainer:\n    gpus: 4\n    nodeSelector: "
                                        "{node.kubernetes.io/instance-type: dgx2}\n  inference:\n    gpus: 4\n"
                                        "    nodeSelector: {node.kubernetes.io/instance-type: dgx2}\n"
                                        "plan:\n  instanceTypes:\n    dgx2:\n      allocatable: {cpu: '90', "
                                        "memory: 1400Gi, nvidia.com/gpu: 16, pods: 110}\n")
    assert main(["check", recipe, "-f", known]) == 0
    assert "node fit" not in capsys.readouterr().out
    assert main(["check", os.path.join(EX, "grpo_swe.yaml")]) == 0  # the example's fleets declare p4de
    assert "node fit" not in capsys.readouterr().out
