"""Shared test setup: no test may read the developer's real defaults file or cache."""

from __future__ import annotations

import threading
import time

import pytest


@pytest.fixture(scope="session")
def validator_cache(tmp_path_factory):
    """One validator cache for the whole session: each schema compiles once (seconds), not per test."""
    return str(tmp_path_factory.mktemp("dockyard-cache"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch, validator_cache):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", validator_cache)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("DOCKYARD_K8S_DEFAULTS", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    yield


@pytest.fixture
def write(tmp_path):
    """write("name.yaml", text) -> path; files land in a per-test directory."""

    def _write(name: str, text: str) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    return _write


@pytest.fixture
def clean_env(tmp_path):
    """An environment for load_run/build_bundle that reads no user defaults."""
    return {"HOME": str(tmp_path / "nohome")}


@pytest.fixture
def chdir_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path



@pytest.fixture(autouse=True)
def _no_stream_thread_left():
    """A live command's watch and log threads end with it: one left running holds a stream open
    (and keeps this process from forking validate's workers)."""
    yield
    deadline = time.monotonic() + 5
    while left := [t.name for t in threading.enumerate() if t.name.startswith(("watch-", "logs-"))]:
        if time.monotonic() > deadline:
            pytest.fail(f"threads still running after the test: {', '.join(sorted(left))}")
        time.sleep(0.05)
