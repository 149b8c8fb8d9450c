"""Fixtures of the live flow tests: the fake API server, a kubeconfig, clients and a CLI runner."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fakekube import FakeKube
from flowkit import seed

from support.cli import run_cli


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeKube]:
    """The fake API server with the KubeRay CRDs of ``request.param`` (default v1.7.0):
    ``@pytest.mark.parametrize("fake", ["1.4.2"], indirect=True)`` for an older operator."""
    server = seed(FakeKube(namespaces=("default", "rl-research"), kuberay=getattr(request, "param", "1.7.0")))
    yield server
    server.shutdown()
    assert not server.errors, "the fake API server failed:\n" + "\n".join(server.errors)


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


@pytest.fixture
def cli(fake: FakeKube, kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run the CLI in process against the fake (``connect`` gets the fake transport)."""
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

    return run_cli


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def ray_head() -> Iterator[str]:
    """A real local Ray head (``ray start --head --block``) on free ports; yields the dashboard URL."""
    yield from _ray_head({"RAY_AUTH_MODE": "disabled"})


RAY_TOKEN = "dkr-test-token-" + "x" * 20  # a test value only, for the token-auth head below


@pytest.fixture(scope="session")
def ray_head_token() -> Iterator[str]:
    """A real local Ray head started with token authentication (Ray >= 2.52: RAY_AUTH_MODE=token,
    the token in RAY_AUTH_TOKEN, as every Ray container of a run gets them); yields its URL."""
    yield from _ray_head({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": RAY_TOKEN})


def _ray_head(extra_env: dict[str, str]) -> Iterator[str]:
    """Started in its own process group and ended by that group only (never `ray stop`, which
    would stop every Ray on the machine)."""
    import shutil
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if not ray:
        pytest.skip("ray is not installed (pip install 'ray[default]')")
    temp = tempfile.mkdtemp(prefix="dkr-", dir="/tmp")  # short: Ray's unix sockets live under it
    dash = _free_port()
    cmd = [ray, "start", "--head", "--block", f"--port={_free_port()}", f"--dashboard-port={dash}",
           "--dashboard-host=127.0.0.1", "--include-dashboard=true", "--num-cpus=1", "--num-gpus=0",
           f"--temp-dir={temp}", "--disable-usage-stats", f"--dashboard-agent-listen-port={_free_port()}",
           f"--ray-client-server-port={_free_port()}", f"--metrics-export-port={_free_port()}"]
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}  # a test's own are not the head's
    env = {**inherited, "RAY_USAGE_STATS_ENABLED": "0", "PATH": f"{os.path.dirname(sys.executable)}:"
                                                                   f"{os.environ.get('PATH', '')}", **extra_env}
    log = open(os.path.join(temp, "head.log"), "w")  # noqa: SIM115 (closed at teardown)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{dash}"
    headers = {"Authorization": f"Bearer {extra_env['RAY_AUTH_TOKEN']}"} if "RAY_AUTH_TOKEN" in extra_env else {}
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.flush()
                pytest.fail(f"ray head exited: {Path(temp, 'head.log').read_text()[-2000:]}")
            try:
                if httpx2.get(f"{url}/api/jobs/", headers=headers, timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("ray dashboard did not answer within 180 s")
            time.sleep(1)
        yield url
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)  # `ray start --block` ends in ~2 s on SIGINT, ~34 s on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
