"""Every shipped example lints clean at error level, and the credential heuristic reads words."""

from __future__ import annotations

import os

import pytest

from dockyard_k8s.cli import main
from dockyard_k8s.credentials import looks_like_credential
from support.paths import REPO

INFRAS = sorted(f for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".infra.yaml"))


def _recipe(infra: str) -> str:
    return "examples/grpo_tiny.yaml" if ("single" in infra or "cpu" in infra) else "examples/grpo_swe.yaml"


@pytest.mark.parametrize("infra", INFRAS)
def test_every_shipped_example_lints_clean_at_error_level(infra, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code = main(["lint", _recipe(infra), "-f", f"examples/{infra}", "--min-severity", "error"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert " 0 errors" in out


@pytest.mark.parametrize(("name", "credential"), [
    ("TOKENIZERS_PARALLELISM", False), ("MAX_NEW_TOKENS", False), ("NUM_TOKENS", False), ("TOKEN_LIMIT", False),
    ("DB_PASSWORD_FILE", False), ("AWS_ACCESS_KEY_ID", False), ("PASSWORDLESS_LOGIN", False),
    ("HF_TOKEN", True), ("GITHUB_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("WANDB_API_KEY", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True), ("apiKey", True), ("accessToken", True),
])
def test_a_credential_is_a_word_of_the_name_not_a_substring(name, credential):
    assert looks_like_credential(name) is credential
