"""The cases where `check` said ✔ (or printed a traceback) and the cluster or the trainer would
fail later: each one refused at the key that causes it (tests/golden/messages/*.txt: what is
said), or made to work."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.cli import main
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from support.paths import REPO

EX = os.path.join(REPO, "examples")
INFRA = "infra:\n  image: reg.example.com/img:1.0\n"
RECIPE_WITH_URLS = "model: m\nenv:\n  code:\n    sandbox_urls: [http://localhost:9090]\n"


@pytest.fixture
def recipe(write):
    return write("r.yaml", RECIPE_WITH_URLS)


# --- ++env.code.sandbox_urls=null only when it applies --------------------------------------


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
    job_gets = [line for line in out.splitlines() if line.startswith("  job gets ")]  # said: golden check-report.txt
    assert len(job_gets) == 1 and "++env.code.sandbox_urls=null (appended" in job_gets[0]
    off = load_run(recipe, infra, Layers(sets=["launch.sandboxUrlsKey=null"], env=clean_env))
    assert off.job_args == [] and off.recipe["env"]["code"]["sandbox_urls"] == ["http://localhost:9090"]
    other = write("o.yaml", "sandbox:\n  urls: [x]\n")
    assert load_run(other, infra, Layers(sets=["launch.sandboxUrlsKey=sandbox.urls"], env=clean_env)).job_args == \
        ["++sandbox.urls=null"]


# --- attach mode gets the recipe and the URLs ------------------------------------------------


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


# --- a profile's limit below the user's request ----------------------------------------------


def test_a_profile_limit_follows_the_users_request(clean_env):
    run = load_run(f"{EX}/grpo_tiny.yaml", f"{EX}/kind_single_gpu.infra.yaml",
                   Layers(sets=["kuberay.trainer.memory=30Gi"], env=clean_env))
    assert run.infra["kuberay"]["trainer"]["memoryLimit"] == "30Gi"
    (note,) = run.notes  # said: golden check-report.txt
    assert note.startswith("kuberay.trainer.memoryLimit follows") and "kuberay.trainer.memory: 30Gi" in note
    assert "the 24Gi of the kind profile" in note


# --- output paths ----------------------------------------------------------------------------


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
    errors = [line.split(": ", 2)[1:] for line in err.splitlines() if line.startswith("error: ")]
    said = dict(errors)  # the flag and its path -> what is wrong with it (whole: golden config.txt)
    assert len(errors) == len(said) == 5
    assert said[f"--output-dir {out / 'x'}"].startswith("cannot create the directory")
    assert said[f"--output-dir {out}"].startswith("exists and is not a directory")
    assert said[f"--output-file {tmp_path}"].startswith("is a directory")
    assert said["--output-file /nonexistent/dir/run.yaml"].startswith("the directory /nonexistent/dir does")
    assert said["--output-file /nonexistent/a.yaml"].startswith("the directory /nonexistent does")


# --- helm-style layering ------------------------------------------------------------------------


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
    assert main(["check", recipe, "-f", job]) == 0  # what is said: tests/golden/messages/check-report.txt
    out = capsys.readouterr().out
    assert "  node fit: not checked for the Job's one pod (" in out
    warning = [line for line in out.splitlines() if line.startswith("! the Job's one pod asks for 16 GPUs")]
    assert len(warning) == 1 and "has more than 8 (p4d.24xlarge" in warning[0]
    # a fleet on an instance type check does not know
    rayjob = write("rj.yaml", INFRA + "kuberay:\n  trainer:\n    gpus: 4\n    nodeSelector: "
                                      "{node.kubernetes.io/instance-type: dgx2}\n")
    assert main(["check", recipe, "-f", rayjob]) == 0
    out = capsys.readouterr().out
    fit = [line for line in out.splitlines() if line.startswith("  node fit: not checked for the trainer, inference")]
    assert len(fit) == 1 and "dgx2 is neither in the catalogue" in fit[0] and "asks for" not in out
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
