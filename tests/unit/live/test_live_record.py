"""The launch record never holds a secret value; runs found by name find their Ray job; AGE."""

from __future__ import annotations

import datetime as dt

import pytest

from dockyard_k8s.credentials import REDACTED, looks_like_credential, redact, redact_assignment
from dockyard_k8s.live.runs import RunRef, age, run_job_id


@pytest.mark.parametrize(("key", "credential"), [
    ("HF_TOKEN", True), ("apiKey", True), ("aws_secret_access_key", True), ("password", True),
    ("WANDB_API_KEY", True), ("github-token", True), ("max_new_tokens", False), ("tokenizer", False),
    ("TOKENIZERS_PARALLELISM", False), ("keyspace", False), ("name", False),
])
def test_credential_names(key: str, credential: bool) -> None:
    assert looks_like_credential(key) is credential


REF = {"secretKeyRef": {"name": "a", "key": "b"}}


def test_redact_env_values_and_credential_keys_keep_the_rest() -> None:
    data = {"kuberay": {"trainer": {"env": {"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_x"}, "replicas": 2}},
            "launch": {"runtimeEnv": {"env_vars": {"A": "1"}}},
            "podEnv": [{"name": "X", "value": "v"}],
            "spec": {"containers": [{"env": [{"name": "S", "value": "s3"}, {"name": "R", "valueFrom": REF}]}]},
            "wandb": {"api_key": "abc", "project": "p"}, "token_budget": 5}
    out = redact(data)
    assert out["kuberay"]["trainer"] == {"env": {"NCCL_DEBUG": REDACTED, "HF_TOKEN": REDACTED}, "replicas": 2}
    assert out["launch"]["runtimeEnv"]["env_vars"] == {"A": REDACTED}
    assert out["spec"]["containers"][0]["env"] == [
        {"name": "S", "value": REDACTED}, {"name": "R", "valueFrom": REF}]
    assert out["wandb"] == {"api_key": REDACTED, "project": "p"}
    assert out["token_budget"] == 5  # about tokens, not a token
    assert data["wandb"]["api_key"] == "abc"  # a copy


HF = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"  # shaped like a Hugging Face token


@pytest.mark.parametrize(("data", "expected"), [
    # a token's shape is enough, whatever the key (a mapping's, a list item's)
    ({"policy": {"hub": HF}}, {"policy": {"hub": REDACTED}}),
    ({"hubs": ["public", f"--token {HF}"]}, {"hubs": ["public", REDACTED]}),
    # under a credential's name: a string, not a boolean, number or null (a setting, not a secret)
    ({"automountServiceAccountToken": False}, {"automountServiceAccountToken": False}),
    ({"sandbox": {"security": {"automountServiceAccountToken": True}}},
     {"sandbox": {"security": {"automountServiceAccountToken": True}}}),
    ({"api_key": None, "auth_token": 0, "password": 1.5}, {"api_key": None, "auth_token": 0, "password": 1.5}),
    ({"wandb_api_key": "abc123"}, {"wandb_api_key": REDACTED}),
    # about tokens, not tokens
    ({"token_budget": 5, "max_tokens": 4096, "num_tokens": 2, "tokenizer": "Qwen/Qwen3-8B",
      "tokens_per_second": 9.5}, None),
])
def test_redact_by_shape_and_by_name_keeps_settings(data: dict, expected: dict | None) -> None:
    assert redact(data) == (data if expected is None else expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("kuberay.trainer.env.NCCL_DEBUG=INFO", "kuberay.trainer.env.NCCL_DEBUG=<redacted>"),
    ("++wandb.api_key=abc", "++wandb.api_key=<redacted>"),
    ("kuberay.trainer.replicas=4", "kuberay.trainer.replicas=4"),
    ("kuberay.trainer.env={HF_TOKEN: x}", "kuberay.trainer.env=<redacted>"),  # a whole environment
    ("kuberay.spec.headGroupSpec.template.spec.containers.0.env.1.value=x",
     "kuberay.spec.headGroupSpec.template.spec.containers.0.env.1.value=<redacted>"),
    ("++env.code.sandbox_urls=null", "++env.code.sandbox_urls=null"),  # a recipe's `env`, deeper: no variable
    (f"+policy.hub={HF}", "+policy.hub=<redacted>"),
    ("~optimizer.token", "~optimizer.token"),
])
def test_redact_assignments(text: str, expected: str) -> None:
    assert redact_assignment(text) == expected


def test_run_job_id() -> None:
    rayjob = {"kind": "RayJob", "metadata": {"name": "r"}, "status": {"jobId": "r-abc"}}
    assert run_job_id(RunRef("ns", "r", [rayjob], None), []) == "r-abc"
    cluster = {"kind": "RayCluster", "metadata": {"name": "r"}}
    jobs = [{"submission_id": "r-1", "start_time": 5}, {"submission_id": "r-2", "start_time": 9},
            {"submission_id": "other-3", "start_time": 20}]
    assert run_job_id(RunRef("ns", "r", [cluster], None), jobs) == "r-2"
    assert run_job_id(RunRef("ns", "r", [cluster], None), []) is None


def test_age() -> None:
    now = dt.datetime(2026, 1, 3, 0, 0, tzinfo=dt.UTC)
    assert [age(t, now) for t in ("2026-01-02T23:59:15Z", "2026-01-02T23:15:00Z", "2026-01-02T18:00:00Z",
                                  "2026-01-01T00:00:00Z", "garbage")] == ["45s", "45m", "6h", "2d", "-"]


def test_the_launch_record_keeps_settings_named_like_a_credential() -> None:
    """The record of the example (rendered, as `run` applies it first): the sandbox's
    automountServiceAccountToken is a boolean setting, kept as written."""
    import os

    import yaml

    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.config.layering import Layers
    from dockyard_k8s.render.record import NO_INVOCATION, launch_record
    from support.paths import REPO

    ex = os.path.join(REPO, "examples")
    bundle = build_bundle(f"{ex}/grpo_swe.yaml", f"{ex}/grpo_swe.infra.yaml", Layers(env={"HOME": "/nonexistent"}))
    record = launch_record(bundle.run, bundle.objects, NO_INVOCATION)
    infra = yaml.safe_load(record["data"]["infra.yaml"])
    assert infra["sandbox"]["security"]["automountServiceAccountToken"] is False
    # the recipe's env.code.sandbox_urls is no pod's environment: its override is recorded as is
    assert REDACTED not in record["data"]["recipe.yaml"] + record["data"]["launch.yaml"]
    assert "++env.code.sandbox_urls=null" in yaml.safe_load(record["data"]["launch.yaml"])["overrides"]
