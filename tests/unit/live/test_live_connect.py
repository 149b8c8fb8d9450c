"""An unreachable API server fails fast and says where and why (URL, reason), in every
command and in doctor; kubectl's klog lines never reach the user; TLS files that cannot be
loaded are located in the kubeconfig."""

from __future__ import annotations

import socket
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dockyard_k8s.errors import EXIT_BAD_INPUT, ClusterError
from dockyard_k8s.live import client as client_mod
from dockyard_k8s.live.answers import unreachable_reason
from dockyard_k8s.live.kinds import KINDS
from dockyard_k8s.live.kubeconfig import KubeconfigError
from dockyard_k8s.live.portforward import kubectl_error
from support.paths import EXAMPLES

RUN = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def kubeconfig_for(tmp_path: Path, server: str, cluster_extra: str = "") -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        current-context: here
        contexts:
        - name: here
          context: {{cluster: c, user: u}}
        clusters:
        - name: c
          cluster:
            server: {server}
        {cluster_extra}
        users:
        - name: u
          user: {{token: t}}
        """))
    return str(path)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[tuple[int, list[socket.socket]]]:
    """A loopback port that accepts connections and never answers (a TLS handshake hangs)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield int(srv.getsockname()[1]), accepted
    stop.set()
    t.join(timeout=2)
    for c in accepted:
        c.close()
    srv.close()


def test_refused_fails_at_once_with_url_and_reason(tmp_path: Path) -> None:
    """No retries for a server never reached (the old client slept ~6 s in backoff first)."""
    port = closed_port()
    sleeps: list[float] = []
    client = client_mod.connect(kubeconfig=kubeconfig_for(tmp_path, f"https://127.0.0.1:{port}"), sleep=sleeps.append)
    with pytest.raises(ClusterError) as e:
        client.list(KINDS["Pod"], "default")
    assert sleeps == []
    assert str(e.value) == f"cannot reach the API server at https://127.0.0.1:{port}: connection refused " \
                           "(nothing listens there)"
    assert "context here" in e.value.hint


def test_silent_server_hits_the_connect_timeout(tmp_path: Path, silent_server: tuple[int, list[socket.socket]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    port, accepted = silent_server
    monkeypatch.setattr(client_mod, "TIMEOUT", httpx2.Timeout(30.0, connect=0.3))
    client = client_mod.connect(kubeconfig=kubeconfig_for(tmp_path, f"https://127.0.0.1:{port}"), sleep=lambda s: None)
    with pytest.raises(ClusterError, match=r"no answer within 0.3 s \(connect timeout\)"):
        client.version()
    assert len(accepted) == 1  # one attempt, not max_retries + 1


def test_connect_timeout_is_a_few_seconds(make_client: Any) -> None:
    """Every request connects within seconds; a watch's read is bounded (a dead connection ends
    it), a followed log's is not (a job may print nothing for hours)."""
    seen: list[httpx2.Request] = []
    stop = threading.Event()

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.url.params.get("watch"):
            stop.set()
        return httpx2.Response(200, json={"items": [], "metadata": {}})

    client = make_client(handler)
    list(client.watch(KINDS["Pod"], "ns", stop=stop))
    list(client.follow_log("ns", "p"))
    timeouts = [r.extensions["timeout"] for r in seen]
    assert all(t["connect"] == client_mod.CONNECT_TIMEOUT <= 10 for t in timeouts)
    assert [t["read"] for t in timeouts] == [60.0, client_mod.WATCH_TIMEOUT_SECONDS + 30, None]


def test_a_server_that_answered_before_is_retried(make_client: Any) -> None:
    """Once the server answered, a refused connection is a blip (an API server restart): retried."""
    answers: list[Any] = [httpx2.Response(200, json={"major": "1"}), httpx2.ConnectError("refused"),
                          httpx2.Response(200, json={"major": "1", "minor": "31"})]

    def handler(request: httpx2.Request) -> httpx2.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    sleeps: list[float] = []
    client = make_client(handler, sleeps)
    client.version()
    assert client.version()["minor"] == "31" and len(sleeps) == 1


@pytest.mark.parametrize(("error", "words"), [
    (httpx2.ConnectError("[Errno -2] Name or service not known"), "does not resolve"),
    (httpx2.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"), "not trusted"),
    (httpx2.ConnectError("[Errno 101] Network is unreachable"), "no route"),
    (httpx2.ConnectTimeout("timed out"), "connect timeout"),
    (httpx2.ConnectError("something new"), "something new"),
])
def test_unreachable_reasons(error: Exception, words: str) -> None:
    assert words in unreachable_reason(error, 5.0)


def test_cli_status_and_doctor_say_url_and_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from dockyard_k8s.cli import main

    port = closed_port()
    monkeypatch.setenv("KUBECONFIG", kubeconfig_for(tmp_path, f"https://127.0.0.1:{port}"))
    assert main(["status", *RUN]) == 1
    err = capsys.readouterr().err
    assert f"cannot reach the API server at https://127.0.0.1:{port}: connection refused" in err
    assert main(["doctor", *RUN]) == 1
    out = capsys.readouterr().out
    assert f"✖ API server  cannot reach the API server at https://127.0.0.1:{port}: connection refused" in out
    assert "fix: is the cluster up" in out


def test_job_list_on_an_unreachable_server_leaks_no_kubectl_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`job list --cluster X` asks the API server itself before `kubectl port-forward`, so the
    user reads one line with the URL and the reason, not kubectl's memcache.go retries."""
    from dockyard_k8s.cli import main

    port = closed_port()
    monkeypatch.setenv("KUBECONFIG", kubeconfig_for(tmp_path, f"https://127.0.0.1:{port}"))
    assert main(["job", "list", "--cluster", "my-cluster", "-n", "rl"]) == 1
    err = capsys.readouterr().err
    assert f"cannot reach the API server at https://127.0.0.1:{port}" in err
    assert "memcache" not in err and "E1201" not in err


def test_kubectl_error_drops_klog_lines() -> None:
    stderr = (
        'E1201 19:13:48.592993   14823 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API '
        'group list: Get \\"https://127.0.0.1:1/api?timeout=32s\\": dial tcp 127.0.0.1:1: connect: connection '
        'refused"\n'
        * 4 + "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n")
    assert kubectl_error(stderr) == ("The connection to the server 127.0.0.1:1 was refused - did you specify the "
                                     "right host or port?")
    only_klog = "E0101 00:00:00.000000       1 portforward.go:413] an error occurred forwarding 8265 -> 8265\n"
    assert kubectl_error(only_klog) == "an error occurred forwarding 8265 -> 8265"
    assert kubectl_error('error: services "x-head-svc" not found\n') == 'error: services "x-head-svc" not found'


def test_tls_files_that_cannot_be_loaded_are_located(tmp_path: Path) -> None:
    missing = kubeconfig_for(tmp_path, "https://127.0.0.1:6443", "    certificate-authority: ca.crt")
    with pytest.raises(KubeconfigError) as e:
        client_mod.connect(kubeconfig=missing)
    text = e.value.render()  # the whole messages: tests/golden/messages/kubeconfig.txt
    assert f"{missing}:11:28: clusters.c.certificate-authority: " in text and "cannot load the TLS file: " in text
    assert f"{tmp_path / 'ca.crt'}: No such file" in text
    assert e.value.exit_code == EXIT_BAD_INPUT
    (tmp_path / "ca.crt").write_text("not a certificate\n")
    with pytest.raises(KubeconfigError, match="1 problem") as e:
        client_mod.connect(kubeconfig=missing)
    assert f"{missing}:11:28: clusters.c.certificate-authority: " in e.value.render()
    assert ": not a PEM certificate" in e.value.render()
