"""Fixtures of the live flow tests: the fake API server, a kubeconfig, clients and a CLI runner."""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, NamedTuple

import httpx2
import pytest
from fakekube import FakeKube
from kuberay_sim import EXAMPLES  # noqa: F401  (re-exported for fixtures)


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    server = FakeKube(namespaces=("default", "rl-research"))
    yield server
    server.shutdown()


@pytest.fixture
def http(fake: FakeKube) -> Iterator[httpx2.Client]:
    """A raw HTTP client on the fake: tests of the fake itself use no launcher code."""
    with httpx2.Client(transport=fake, base_url="https://fake.invalid") as client:
        yield client


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        current-context: fake
        contexts:
        - name: fake
          context: {cluster: fake, user: me, namespace: rl-research}
        - name: other
          context: {cluster: fake, user: me}
        clusters:
        - name: fake
          cluster: {server: "https://fake.invalid:6443", insecure-skip-tls-verify: true}
        users:
        - name: me
          user: {token: s3cr3t-token}
        """))
    return str(path)


@pytest.fixture
def client(fake: FakeKube, kubeconfig: str) -> Iterator[Any]:
    from dockyard_k8s.live.client import connect

    kube = connect(kubeconfig=kubeconfig, transport=fake, sleep=lambda s: None)
    yield kube
    kube.close()


class Result(NamedTuple):
    code: int
    out: str
    err: str


@pytest.fixture
def cli(fake: FakeKube, kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run the CLI in process against the fake (``connect`` gets the fake transport)."""
    from dockyard_k8s.cli import main
    from dockyard_k8s.live import client as client_mod

    real_connect = client_mod.connect

    def fake_connect(**kwargs: Any) -> Any:
        kwargs["transport"] = fake
        kwargs["sleep"] = lambda s: None
        return real_connect(**kwargs)

    monkeypatch.setattr(client_mod, "connect", fake_connect)
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    monkeypatch.delenv("DOCKYARD_K8S_DEFAULTS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", os.path.join(os.path.dirname(kubeconfig), "xdg"))

    def run(*argv: str) -> Result:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
        return Result(code, out.getvalue(), err.getvalue())

    return run
