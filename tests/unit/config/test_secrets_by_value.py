"""Secrets by value never pass `check` (issue 22 item 27): a credential written as a literal in an
infra env (any layer: a file, --set) or in a recipe override (which the job receives on its command
line, the entrypoint of the RayJob) is refused at the place it came from, with the fix, exit 2, and
the value is never echoed (tests/golden/messages/{layering,overrides}.txt: every kind, as printed).
One detector for all of it: dockyard_k8s.credentials, which lint's secret-in-env, the launch
record's redaction and serve's env check share."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.credentials import looks_like_credential, secret_by_value
from dockyard_k8s.errors import ConfigError
from support.cli import run_cli
from support.paths import REPO

EX = os.path.join(REPO, "examples")
RECIPE, INFRA = f"{EX}/grpo_swe.yaml", f"{EX}/grpo_swe.infra.yaml"
HF = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"  # shaped like a Hugging Face token
WANDB = "0123456789abcdef0123456789abcdef01234567"  # a W&B API key is 40 hex digits


def test_a_credential_named_env_is_refused_in_a_file_too(write):
    infra = write("i.yaml", "defaults: " + INFRA + "\nkuberay:\n  head:\n    env:\n      WANDB_API_KEY: abc123\n")
    with pytest.raises(ConfigError) as e:
        build_bundle(RECIPE, infra, Layers(env={"HOME": "/nonexistent"}))
    (found,) = [str(p) for p in e.value.problems]
    assert found.startswith(f"{infra}:5:22: kuberay.head.env.WANDB_API_KEY: a credential by value") and \
        "abc123" not in found


# A name announces a credential when its head, the last word (digits aside), is a credential word or
# pair: a setting *about* tokens (a budget, a count, the tokenizer) is not one.
@pytest.mark.parametrize(("name", "credential"), [
    ("HF_TOKEN", True), ("hf_token", True), ("auth_token", True), ("access_token", True), ("token", True),
    ("GITHUB_TOKEN", True), ("AWS_SESSION_TOKEN", True), ("HF_TOKEN_2", True), ("githubToken", True),
    ("api_key", True), ("apiKey", True), ("apikey", True), ("WANDB_API_KEY", True), ("OPENAI_API_KEY", True),
    ("aws_secret_access_key", True), ("secretKey", True), ("private_key", True), ("signing-key", True),
    ("password", True), ("DB_PASSWORD", True), ("passphrase", True), ("secret", True), ("client_secret", True),
    ("credentials", True),
    ("token_budget", False), ("max_tokens", False), ("num_tokens", False), ("tokenizer", False),
    ("tokens_per_second", False), ("max_new_tokens", False), ("TOKENIZERS_PARALLELISM", False),
    ("token_limit", False), ("token_count", False), ("token_type", False), ("tokenBudget", False),
    ("HF_TOKEN_PATH", False), ("password_file", False), ("secret_name", False), ("secretName", False),
    ("api_key_id", False), ("accessKeyId", False), ("keyspace", False), ("key", False), ("name", False),
])
def test_which_names_announce_a_credential(name: str, credential: bool) -> None:
    assert looks_like_credential(name) is credential


@pytest.mark.parametrize("ok", [
    ["logging.wandb_project=swe"],  # a credential's neighbour, not a credential
    ["++trainer.max_new_tokens=4096"],
    ["+tokenizer.token_budget=5", "+rollout.max_tokens=512", "+stats.tokens_per_second=10"],  # about tokens
    ["++logging.wandb_api_key=null"],  # nothing by value
])
def test_what_is_not_a_secret_still_passes(ok):
    build_bundle(RECIPE, INFRA, Layers(env={"HOME": "/nonexistent"}, overrides=ok))


def test_a_credential_s_name_given_a_file_path_is_where_it_is_not_what_it_is():
    """GOOGLE_APPLICATION_CREDENTIALS names the key file (mounted from a Secret), as Google documents it."""
    build_bundle(RECIPE, INFRA, Layers(env={"HOME": "/nonexistent"}, sets=[
        "kuberay.trainer.env.GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/google/key.json",
        "kuberay.trainer.env.HF_TOKEN=~/.cache/huggingface/token"]))
    assert secret_by_value("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json") is None
    assert secret_by_value("DB_PASSWORD", "/hunter2") is None  # a path's shape: the same rule
    assert secret_by_value("DB_PASSWORD", "hunter2/x") == "a credential"
    assert secret_by_value("HF_TOKEN", "/x/hf_abcdefghijklmnopqrstuvwxyz0123456789") == "a Hugging Face token"


def test_the_cli_exits_2_and_never_prints_the_value():
    result = run_cli("check", RECIPE, "--infra", INFRA, f"--set=kuberay.trainer.env.HF_TOKEN={HF}",
                     f"+logging.wandb_api_key={WANDB}")
    assert result.code == 2, result.text
    assert HF not in result.text and WANDB not in result.text


def test_a_credential_in_a_list_a_set_replaces_is_reported_at_that_set():
    """A --set of a list replaces the file's list: what it holds was written by the --set, not at
    the file's line of the list it replaced (examples/grpo_swe.infra.yaml's env, with a valueFrom)."""
    groups = ("kuberay.spec.workerGroupSpecs=[{groupName: trainer, template: {spec: {containers: [{name: "
              "ray-worker, env: [{name: WANDB_API_KEY, value: abc123}]}]}}}]")
    with pytest.raises(ConfigError) as e:
        build_bundle(RECIPE, INFRA, Layers(env={"HOME": "/nonexistent"}, sets=[groups]))
    (found,) = e.value.problems
    assert (found.file, found.line) == ("--set kuberay.spec.workerGroupSpecs=<redacted>", 0)
    assert found.path == "kuberay.spec.workerGroupSpecs[0].template.spec.containers[0].env[0].value"
    assert "a credential by value" in found.message and "abc123" not in str(found)


# --- a credential written in the recipe file (item 27.1): the recipe ConfigMap would hold it ---------

def _problems(recipe: str, *overrides: str) -> list:
    with pytest.raises(ConfigError) as e:
        build_bundle(recipe, INFRA, Layers(env={"HOME": "/nonexistent"}, overrides=list(overrides)))
    return e.value.problems


def test_a_credential_in_the_recipe_file_is_refused_at_its_line(write):
    recipe = write("r.yaml", f"trainer:\n  lr: 1\nlogging:\n  wandb_api_key: abc123def\n  hf: {HF}\n")
    found = {p.path: p for p in _problems(recipe)}
    assert set(found) == {"logging.wandb_api_key", "logging.hf"}
    key, hub = found["logging.wandb_api_key"], found["logging.hf"]
    assert (key.file, key.line, key.col) == (recipe, 4, 18) and (hub.file, hub.line, hub.col) == (recipe, 5, 7)
    assert key.message.startswith("a credential by value would be stored in the recipe ConfigMap")
    assert hub.message.startswith("a Hugging Face token by value would be stored in the recipe ConfigMap")
    # the fix names the exact keys: the variable the trainer reads, from a Secret, and the recipe key to drop
    # (the whole fix: tests/golden/messages/overrides.txt)
    assert "{name: WANDB_API_KEY, valueFrom: {" in key.message
    assert "{name: HF_TOKEN, valueFrom: {" in hub.message
    assert "remove logging.wandb_api_key from the recipe" in key.message
    assert "abc123def" not in str(key) and HF not in str(hub)


def test_a_credential_in_a_composed_config_is_refused_at_that_file(write):
    base = write("base/common.yaml", "logging:\n  project: swe\n  api_key: abc123def\n")
    recipe = write("r.yaml", "defaults:\n  - base/common.yaml\n  - _self_\ntrainer:\n  lr: 1\n")
    (found,) = _problems(recipe)
    assert (found.file, found.line, found.path) == (base, 3, "logging.api_key")


def test_a_recipe_credential_set_to_null_by_an_override_is_gone_from_the_configmap(write):
    recipe = write("r.yaml", "trainer:\n  lr: 1\nlogging:\n  wandb_api_key: abc123def\n")
    build_bundle(recipe, INFRA, Layers(env={"HOME": "/nonexistent"}, overrides=["++logging.wandb_api_key=null"]))
    # a deletion is the job's: the mounted recipe keeps the key, and its value
    (found,) = _problems(recipe, "~logging.wandb_api_key")
    assert found.path == "logging.wandb_api_key" and found.line == 4


@pytest.mark.parametrize("text", [
    "wandb_api_key: null", "wandb_api_key: ''", "use_auth_token: true", "hf_token: ~",
    "api_key: $${oc.env:WANDB_API_KEY}",  # an OmegaConf reference, resolved in the pod
    "tokenizer: Qwen/Qwen3-32B", "max_tokens: 4096", "token_budget: 5", "password_file: /var/run/secrets/pw",
])
def test_what_a_recipe_may_hold(write, text):
    recipe = write("r.yaml", f"trainer:\n  lr: 1\nlogging:\n  {text}\n")
    build_bundle(recipe, INFRA, Layers(env={"HOME": "/nonexistent"}))


def test_the_cli_refuses_a_recipe_credential_with_exit_2(write):
    recipe = write("r.yaml", f"trainer:\n  lr: 1\nlogging:\n  hub: {HF}\n")
    result = run_cli("check", recipe, "--infra", INFRA)
    assert result.code == 2, result.text
    assert f"{recipe}:4:8: logging.hub: a Hugging Face token by value" in result.text and HF not in result.text
    assert run_cli("render", recipe, "--infra", INFRA).code == 2


def test_a_recipe_variable_is_substituted_here_so_its_value_is_refused_and_the_reference_named(write):
    recipe = write("r.yaml", "trainer:\n  lr: 1\nlogging:\n  wandb_api_key: ${MY_KEY}\n")
    with pytest.raises(ConfigError) as e:
        build_bundle(recipe, INFRA, Layers(env={"HOME": "/nonexistent", "MY_KEY": "abc123def"}))
    (found,) = e.value.problems
    assert found.line == 4 and "$${oc.env:VAR} leaves the reading to the trainer's OmegaConf" in found.message
    assert "abc123def" not in str(found)


# --- the entrypoint (item 27.2): a credential-named flag or assignment with a literal value ------------

def _entrypoint_problems(entrypoint: str) -> list:
    try:
        build_bundle(RECIPE, INFRA, Layers(env={"HOME": "/nonexistent"}, sets=[f"launch.entrypoint={entrypoint}"]))
    except ConfigError as e:
        return [p for p in e.problems if p.path == "launch.entrypoint"]
    return []


@pytest.mark.parametrize(("entrypoint", "named", "variable"), [
    ("python -m x --wandb-api-key=abc123xyz {recipe}", "--wandb-api-key", "WANDB_API_KEY"),
    ("python -m x --config {recipe} logging.wandb_api_key=abc123", "logging.wandb_api_key", "WANDB_API_KEY"),
    ("python -m x --config {recipe} ++logging.wandb_api_key=abc123", "++logging.wandb_api_key", "WANDB_API_KEY"),
    ("WANDB_API_KEY=abc123 python -m x {recipe}", "WANDB_API_KEY", "WANDB_API_KEY"),
    ("env HF_TOKEN=abc123 python -m x {recipe}", "HF_TOKEN", "HF_TOKEN"),
    ("python -m x --hf-token abc123 {recipe}", "--hf-token", "HF_TOKEN"),
    ("python -m x --password 'p@ss w0rd' {recipe}", "--password", "PASSWORD"),
    ("bash -c 'export GITHUB_TOKEN=abc123; python -m x {recipe}'", "GITHUB_TOKEN", "GITHUB_TOKEN"),
    (f"python -m x --hf-token {HF} {{recipe}}", "--hf-token", "HF_TOKEN"),  # both: said once
    (f"python -m x --hub {HF} {{recipe}}", "", "HF_TOKEN"),  # a token's shape, under no credential's name
])
def test_a_credential_by_value_in_the_entrypoint_is_refused(entrypoint, named, variable):
    (found,) = _entrypoint_problems(entrypoint)
    assert found.file == "--set launch.entrypoint=<redacted>"
    if named:
        assert f"({named})" in found.message
    assert f"{{name: {variable}, valueFrom: {{secretKeyRef: {{name: SECRET, key: KEY}}}}}}" in found.message
    assert f'the command reading "${variable}"' in found.message
    assert "abc123" not in str(found) and HF not in str(found) and "w0rd" not in str(found)


@pytest.mark.parametrize("entrypoint", [
    "python -m x --wandb-api-key=$WANDB_API_KEY {recipe}",  # read from the environment: the fix
    'python -m x --wandb-api-key="${WANDB_API_KEY}" {recipe}',
    "python -m x --config {recipe} logging.wandb_api_key=$WANDB_API_KEY",
    "python -m x --config {recipe} '+logging.wandb_api_key=${oc.env:WANDB_API_KEY}'",
    "python -m x --hf-token $(cat /var/run/secrets/hf/token) {recipe}",
    "python -m x --max-tokens 4096 --tokenizer Qwen/Qwen3-32B --token-budget 5 {recipe}",
    "python -m x --use-auth-token {recipe}",  # a switch before the placeholder
    "python -m x --use-auth-token --config {recipe}",  # a switch before another flag
    "python -m x --hf-token-file /var/run/hf {recipe}",
    "python -m x --api-key= {recipe}",
    "python -m x 'unbalanced {recipe}",  # not shell words: nothing to say about it here
])
def test_what_the_entrypoint_may_say(entrypoint):
    assert _entrypoint_problems(entrypoint) == []


# --- a token's shape anywhere else in the infra spec: it is rendered into the objects ------------------

GHP = "ghp_" + "x1Y2z3" * 6  # shaped like a GitHub token


@pytest.mark.parametrize(("extra", "path", "where"), [
    (f"launch:\n  runtimeEnv:\n    pip: ['git+https://{GHP}@github.com/org/lib']\n",
     "launch.runtimeEnv.pip[0]", (4, 11)),
    ("kuberay:\n  spec:\n    headGroupSpec:\n      template:\n        spec:\n          containers:\n"
     f"            - name: ray-head\n              args: [--hf-token, {HF}]\n",
     "kuberay.spec.headGroupSpec.template.spec.containers[0].args[1]", (9, 34)),
])
def test_a_token_anywhere_in_the_infra_spec_is_refused(write, extra, path, where):
    infra = write("i.yaml", f"defaults: {INFRA}\n{extra}")
    with pytest.raises(ConfigError) as e:
        build_bundle(RECIPE, infra, Layers(env={"HOME": "/nonexistent"}))
    (found,) = e.value.problems
    assert (found.file, (found.line, found.col), found.path) == (infra, where, path)
    assert "token by value would be stored in the rendered objects" in found.message
    assert GHP not in str(found) and HF not in str(found)
