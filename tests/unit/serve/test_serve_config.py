"""The serve section: layering, derived defaults, and every cross-key rule at the key the user wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_support import load, write_spec

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.serve import endpoint_name_from, load_serve
from dockyard_k8s.errors import ConfigError


def problems(tmp: Path, serve: dict, *, sets: tuple[str, ...] = (), **sections: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(tmp, serve, sets=sets, **sections)
    return [str(p) for p in info.value.problems]


def one_problem(tmp: Path, serve: dict, **kw: object) -> str:
    found = problems(tmp, serve, **kw)  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


# --- derived defaults ------------------------------------------------------------------------------


def test_endpoint_name_comes_from_the_file_name() -> None:
    assert endpoint_name_from("examples/Llama_3.serve.yaml") == "llama-3"
    assert endpoint_name_from("eval.yaml") == "eval"
    assert endpoint_name_from("my.serve.yml") == "my"
    assert endpoint_name_from("grpo_swe.infra.yaml") == "grpo-swe"


def test_backend_facts_fill_image_port_metric_and_query(tmp_path: Path) -> None:
    vllm = load(tmp_path).serve
    assert (vllm["image"], vllm["port"], vllm["autoscaling"]["metric"]) == (
        "vllm/vllm-openai:v0.11.0", 8000, "vllm:num_requests_waiting")
    assert vllm["autoscaling"]["query"] == \
        'sum(vllm:num_requests_waiting{namespace="llama",model_name="meta-llama/Meta-Llama-3-8B-Instruct"})'
    sglang = load(tmp_path, {"backend": "sglang"}).serve
    assert (sglang["port"], sglang["autoscaling"]["metric"]) == (30000, "sglang:num_queue_reqs")
    assert sglang["image"].startswith("lmsysorg/sglang:v")


def test_the_seeds_single_gpu_sizing_is_the_default(tmp_path: Path) -> None:
    s = load(tmp_path).serve
    assert (s["gpus"], s["cpu"], s["memory"], s["memoryLimit"]) == (1, "4", "16Gi", "32Gi")
    assert (s["cache"]["size"], s["cache"]["mountPath"]) == ("100Gi", "/root/.cache/huggingface")
    assert (s["priorityClass"]["name"], s["priorityClass"]["value"]) == ("gpu-inference", 1000000)
    assert s["engine"]["tensorParallelSize"] == 1 and s["shmSize"] == "8Gi"


def test_shm_and_tensor_parallelism_follow_the_gpus(tmp_path: Path) -> None:
    s = load(tmp_path, {"gpus": 4}).serve
    assert (s["engine"]["tensorParallelSize"], s["shmSize"]) == (4, "32Gi")
    assert load(tmp_path, {"gpus": 0}).serve["shmSize"] == "1Gi"


def test_serve_derived_shm_is_exact(tmp_path: Path) -> None:
    """serve.shmSize from lint.shmPerGpu x gpus was cut down to whole MiB ("1.5G" -> 1430Mi, less
    than asked); it is now the exact amount."""
    s = load(tmp_path, {"gpus": 1}, lint={"shmPerGpu": "1.5G"}).serve
    assert s["shmSize"] == "1500000000"
    assert load(tmp_path, {"gpus": 2}, lint={"shmPerGpu": "768Mi"}).serve["shmSize"] == "1536Mi"


def test_a_path_model_uses_the_runs_storage_claim_and_no_cache(tmp_path: Path) -> None:
    s = load(tmp_path, {"model": {"path": "/fsx/ckpt/step-10"}},
             infra={"namespace": "rl",
                    "storage": {"enabled": True, "claimName": "fsx-claim", "mountPath": "/fsx"}}).serve
    assert (s["model"]["claimName"], s["model"]["mountPath"]) == ("fsx-claim", "/fsx")
    assert s["cache"]["enabled"] is False
    assert s["model"]["servedName"] == "llama"  # the endpoint name (file llama.serve.yaml)


def test_the_kind_profile_sets_the_local_path_class_and_creates_the_priority_class(tmp_path: Path) -> None:
    kind = load(tmp_path, infra={"platform": "kind"})
    assert kind.serve["cache"]["storageClass"] == "standard"
    assert kind.serve["priorityClass"]["create"] is True
    assert kind.infra["infra"]["runtimeClassName"] == "nvidia"
    assert kind.sources[1] == "<kind profile>"
    assert load(tmp_path, infra={"platform": "k3s"}).serve["cache"]["storageClass"] == "local-path"
    assert load(tmp_path).serve["priorityClass"]["create"] is False  # generic: the class must exist


def test_layers_set_variables_user_defaults_and_parents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "defaults.yaml"
    user.write_text("serve:\n  image: registry.example.com/vllm:0.11.0\n  cpu: '8'\n")
    parent = tmp_path / "base.infra.yaml"
    parent.write_text("infra:\n  namespace: from-parent\nserve:\n  cpu: '6'\n  gpus: 2\n")
    spec = tmp_path / "e.serve.yaml"
    spec.write_text("defaults: base.infra.yaml\nserve:\n  model:\n    id: ${MODEL_ID}\n  gpus: 1\n")
    cfg = load_serve(str(spec),
                     Layers(sets=("serve.replicas=3", "serve.cache.accessMode=ReadWriteMany"),
                            env={"DOCKYARD_K8S_DEFAULTS": str(user), "MODEL_ID": "Qwen/Qwen2.5-7B-Instruct"}))
    s = cfg.serve
    assert s["model"]["id"] == "Qwen/Qwen2.5-7B-Instruct"
    assert (s["image"], s["cpu"], s["gpus"], s["replicas"]) == ("registry.example.com/vllm:0.11.0", "6", 1, 3)
    assert cfg.namespace == "from-parent"
    assert cfg.sources == ["<shipped defaults>", str(user), str(parent), str(spec)]


# --- rules at the key ------------------------------------------------------------------------------


def test_unknown_keys_and_wrong_types_are_reported_with_file_line_and_a_suggestion(tmp_path: Path) -> None:
    spec = tmp_path / "x.serve.yaml"
    spec.write_text("serve:\n  modle:\n    id: a/b\n  gpus: two\n  backend: tgi\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(spec), Layers(env={}))
    text = info.value.render()
    assert f"{spec}:2:3: serve.modle: unknown key 'modle'" in text and "did you mean 'model'?" in text
    assert f"{spec}:4:9: serve.gpus: got 'two' (string), expected an integer" in text
    assert f"{spec}:5:12: serve.backend: got 'tgi' (string)" in text  # the choices: golden serve.txt


def test_a_model_is_required_and_only_one_kind_of_it(tmp_path: Path) -> None:
    assert "serve.model: is required" in one_problem(tmp_path, {"model": {}})
    both = one_problem(tmp_path, {"model": {"id": "a/b", "path": "/models/x", "claimName": "c"}})
    assert "serve.model.path: got both id 'a/b' and path '/models/x'" in both


def test_a_path_given_as_a_hub_id_says_where_paths_go(tmp_path: Path) -> None:
    path = "/fsx/checkpoints/step-100"
    text = one_problem(tmp_path, {"model": {"id": path}})  # the whole message: tests/golden/messages/serve.txt
    assert f":5:9: serve.model.id: got '{path}' (string)" in text and "expected a model hub id" in text
    assert "serve.model.path" in text


def test_a_model_string_is_short_for_its_hub_id_in_files_and_set_alike(tmp_path: Path) -> None:
    parent = tmp_path / "base.serve.yaml"
    parent.write_text("serve:\n  model:\n    id: meta-llama/Meta-Llama-3-8B-Instruct\n    hubTokenSecret: {name: hf}\n")
    spec = tmp_path / "q.serve.yaml"
    spec.write_text("defaults: base.serve.yaml\nserve:\n  model: Qwen/Qwen2.5-7B\n")
    model = load_serve(str(spec), Layers(env={})).serve["model"]
    # merged as {id: Qwen/Qwen2.5-7B} would be: the parent's token stays
    assert (model["id"], model["hubTokenSecret"]["name"], model["servedName"]) == \
        ("Qwen/Qwen2.5-7B", "hf", "Qwen/Qwen2.5-7B")
    model = load_serve(str(parent), Layers(sets=("serve.model=Qwen/Qwen2.5-7B",), env={})).serve["model"]
    assert (model["id"], model["hubTokenSecret"]["name"]) == ("Qwen/Qwen2.5-7B", "hf")
    # a directory is not a hub id: said at the string, with where directories go
    spec.write_text("serve:\n  model: /fsx/checkpoints/step-100\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(spec), Layers(env={}))
    (problem,) = [str(p) for p in info.value.problems]  # the whole messages: tests/golden/messages/serve.txt
    assert problem.startswith(f"{spec}:2:10: serve.model.id: got '/fsx/checkpoints/step-100' (string)")
    assert problem.endswith("(a directory goes in serve.model.path)")
    spec.write_text("serve:\n  model: 7\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(spec), Layers(env={}))
    (problem,) = [str(p) for p in info.value.problems]
    assert problem.startswith(f"{spec}:2:10: serve.model: got 7 (integer)")
    assert "expected a mapping or a model hub id" in problem


@pytest.mark.parametrize(("path", "expected"), [
    ("checkpoints/step-100", "expected an absolute directory inside the claim (mounted at /models)"),
    ("/models/../etc", "expected a normalized path (no '..', '.' or '//'): /etc"),
    ("/fsx/step-100", "outside /models where claim 'ckpt' is mounted"),
])
def test_bad_model_paths(tmp_path: Path, path: str, expected: str) -> None:
    text = one_problem(tmp_path, {"model": {"path": path, "claimName": "ckpt"}})
    assert "serve.model.path: got" in text and expected in text


def test_a_path_without_any_claim(tmp_path: Path) -> None:
    assert "serve.model.claimName: is required for a path" in one_problem(tmp_path, {"model": {"path": "/models/a"}})


def test_two_replicas_on_a_read_write_once_cache_is_an_error_at_the_replica_count(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"replicas": 2})
    assert ":6:13: serve.replicas: got 2 replicas sharing" in text  # whole: tests/golden/messages/serve.txt
    assert "'llama-cache', which is ReadWriteOnce" in text
    assert "ReadWriteMany" in text and "perReplica" in text
    # the three ways out are accepted
    load(tmp_path, {"replicas": 2, "cache": {"accessMode": "ReadWriteMany"}})
    load(tmp_path, {"replicas": 2, "cache": {"perReplica": True}})
    load(tmp_path, {"replicas": 2, "cache": {"enabled": False}})


def test_autoscaling_to_several_replicas_counts_as_several(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"autoscaling": {"enabled": True, "maxReplicas": 3},
                                  "network": {"ingress": [{"namespace": "monitoring"}]}})
    assert "serve.autoscaling.maxReplicas: got 3 replicas sharing the cache claim" in text


def test_read_write_once_pod_admits_one_pod(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"replicas": 2, "cache": {"accessMode": "ReadWriteOncePod"}})
    assert "admits a single pod" in text


def test_a_runs_read_write_once_storage_cannot_hold_the_model_of_several_replicas(tmp_path: Path) -> None:
    storage = {"enabled": True, "claimName": "cache", "accessMode": "ReadWriteOnce", "mountPath": "/data"}
    text = one_problem(tmp_path, {"model": {"path": "/data/ckpt"}, "replicas": 2},
                       infra={"namespace": "rl", "storage": storage})
    assert ": serve.replicas: 2 replicas mount" in text  # whole: tests/golden/messages/serve.txt
    assert "the model claim 'cache', which is ReadWriteOnce" in text


def test_a_surge_on_a_single_gpu_node_is_refused(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"replicas": 2, "cache": {"perReplica": True}, "rollout": {"maxSurge": 1}},
                       infra={"namespace": "llama", "platform": "k3s"})
    assert "serve.rollout.maxSurge: got 1 on k3s (one GPU node)" in text


def test_a_surge_with_a_shared_read_write_once_claim_is_refused(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"rollout": {"strategy": "RollingUpdate", "maxSurge": 1}})
    assert ": serve.rollout.maxSurge: got 1: " in text  # whole: tests/golden/messages/serve.txt
    assert "a surge pod shares a ReadWriteOnce(Pod)" in text


def test_a_surge_needs_a_rolling_update_and_a_rolling_update_needs_room(tmp_path: Path) -> None:
    assert "the rollout is Recreate" in one_problem(tmp_path, {"rollout": {"maxSurge": 1}})
    text = one_problem(tmp_path, {"rollout": {"strategy": "RollingUpdate", "maxUnavailable": 0}})
    assert "serve.rollout.maxUnavailable: got 0 with maxSurge 0" in text


def test_tokens_are_references_never_values(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"env": {"HF_TOKEN": "hf_" + "a" * 34}})
    assert "serve.env.HF_TOKEN: a hub token by value" in text and "hubTokenSecret" in text
    assert "hf_aaaa" not in text  # the value is never echoed
    text = one_problem(tmp_path, {"env": {"WANDB_API_KEY": "abc123"}})  # the detector check and lint share
    assert "serve.env.WANDB_API_KEY: a credential by value" in text and "serve.secretEnv: {WANDB_API_KEY:" in text
    assert "abc123" not in text
    text = one_problem(tmp_path, {"env": {"HF_HOME": "/x"}})
    assert "serve.env.HF_HOME: is set by dockyard-k8s from serve.cache.mountPath" in text
    text = one_problem(tmp_path, {"env": {"WANDB_API_KEY_FILE": "/x"},
                                  "secretEnv": {"WANDB_API_KEY_FILE": {"secret": "w"}}})
    assert "serve.secretEnv.WANDB_API_KEY_FILE: is also in serve.env" in text


def test_tensor_parallelism_spans_the_pods_gpus(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"gpus": 4, "engine": {"tensorParallelSize": 2}})
    assert "serve.engine.tensorParallelSize: got 2 with serve.gpus 4" in text


def test_extra_args_cannot_set_what_a_key_sets(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"backend": "sglang", "engine": {"extraArgs": ["--tp-size", "2"]}})
    assert ": serve.engine.extraArgs[0]: got '--tp-size': " in text  # whole: tests/golden/messages/serve.txt
    assert "is set from serve.engine.tensorParallelSize" in text


def test_limits_below_requests_are_reported_at_the_key_written(tmp_path: Path) -> None:
    memory = one_problem(tmp_path, {"memory": "40Gi"})
    assert ":6:11: serve.memory: serve.memoryLimit 32Gi is below the request" in memory
    cpu = one_problem(tmp_path, {"cpuLimit": "2"})
    assert "serve.cpuLimit: serve.cpuLimit 2 is below the request serve.cpu 4" in cpu


def test_autoscaling_rules(tmp_path: Path) -> None:
    rwx = {"accessMode": "ReadWriteMany"}
    scrape = {"ingress": [{"namespace": "monitoring"}]}
    text = one_problem(tmp_path, {"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 2},
                                  "cache": rwx, "network": scrape})
    assert ": serve.autoscaling.maxReplicas: got 2, " in text and "at least minReplicas (3)" in text
    text = one_problem(tmp_path, {"autoscaling": {"enabled": True}, "cache": rwx})
    assert "serve.autoscaling.enabled: KEDA scales on a metric Prometheus scrapes" in text
    text = one_problem(tmp_path, {"autoscaling": {"enabled": True}, "replicas": 3, "cache": rwx, "network": scrape})
    assert "serve.replicas: got 3 with autoscaling on" in text


def test_pinned_images_on_eks(tmp_path: Path) -> None:
    text = one_problem(tmp_path, {"image": "vllm/vllm-openai:latest"}, infra={"namespace": "x", "platform": "eks"})
    assert "serve.image: got 'vllm/vllm-openai:latest'" in text and "requirePinned" in text


def test_a_name_too_long_for_a_service_is_reported_at_the_file_when_derived(tmp_path: Path) -> None:
    path = write_spec(tmp_path, name=("a" * 64) + ".serve.yaml")
    with pytest.raises(ConfigError) as info:
        load_serve(path, Layers(env={}))
    (problem,) = info.value.problems
    assert problem.file == path and problem.line == 0
    assert "has 64 characters; at most 63" in problem.message and "set serve.name" in problem.message


def test_a_file_without_a_serve_section_says_so(tmp_path: Path) -> None:
    run_infra = tmp_path / "run.infra.yaml"
    run_infra.write_text("infra:\n  namespace: rl\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(run_infra), Layers(env={}))
    (problem,) = info.value.problems
    assert problem.path == "serve" and "this file has no serve: section" in problem.message
    assert load_serve(str(run_infra), Layers(sets=("serve.model.id=a/b",), env={})).serve["model"]["id"] == "a/b"


def test_a_training_recipe_given_as_the_spec_is_said_once(tmp_path: Path) -> None:
    recipe = tmp_path / "grpo.yaml"
    recipe.write_text("experiment: {name: x}\ntrainer: {lr: 1}\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(recipe), Layers(env={}))
    (problem,) = [str(p) for p in info.value.problems]  # the whole message: tests/golden/messages/serve.txt
    assert problem.startswith(f"{recipe}: not a serve spec: ") and "keys (experiment, trainer)" in problem
    assert "is it a training recipe?" in problem
    typo = tmp_path / "s.serve.yaml"  # a serve spec with one stray key keeps its own message at its line
    typo.write_text("serve:\n  model: {id: org/m}\nfoo: 1\n")
    with pytest.raises(ConfigError) as info:
        load_serve(str(typo), Layers(env={}))
    assert [p.path for p in info.value.problems] == ["foo"]


def test_cooldown_period_says_where_the_scale_in_delay_went(tmp_path: Path) -> None:
    found = one_problem(tmp_path, {"autoscaling": {"enabled": True, "cooldownPeriod": 600}})
    assert ": serve.autoscaling.cooldownPeriod: unknown key 'cooldownPeriod'" in found  # whole: golden serve.txt
    assert "moved to serve.autoscaling.scaleDownStabilizationSeconds" in found
    assert "KEDA uses cooldownPeriod only when scaling to zero" in found


def test_a_sandbox_admitted_to_the_endpoint_needs_an_api_key(tmp_path: Path) -> None:
    """Agents' code reaching an endpoint without a key may use all of it."""
    found = one_problem(tmp_path, {"network": {"runs": [{"name": "grpo-swe", "sandbox": True}]}})
    assert ": serve.network.runs[0].sandbox: admits the run's sandbox" in found  # whole: golden serve.txt
    assert "to an endpoint without an API key" in found
    assert "expected serve.apiKeySecret: {name: SECRET}" in found
    cfg = load(tmp_path, {"network": {"runs": [{"name": "grpo-swe", "sandbox": True}]},
                          "apiKeySecret": {"name": "llama-keys"}})
    assert cfg.serve["apiKeySecret"] == {"name": "llama-keys", "key": "api-key", "adminKey": "admin-api-key"}


def test_the_key_flags_and_variables_are_the_launchers(tmp_path: Path) -> None:
    found = problems(tmp_path, {"apiKeySecret": {"name": "k"}, "engine": {"extraArgs": ["--api-key=abc"]},
                                "env": {"DOCKYARD_API_KEY": "abc"}})
    said = {p.split(": ")[1]: p.split(": ", 2)[2] for p in found}  # key -> message (whole: golden serve.txt)
    assert said["serve.engine.extraArgs[0]"].startswith("got '--api-key=abc': ")
    assert "--api-key is set from serve.apiKeySecret" in said["serve.engine.extraArgs[0]"]
    assert said["serve.env.DOCKYARD_API_KEY"].startswith("is set by dockyard-k8s from")
    assert "serve.apiKeySecret" in said["serve.env.DOCKYARD_API_KEY"]
