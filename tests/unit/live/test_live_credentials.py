"""Kubeconfig credentials (issue 22 item 10): an exec plugin that fails, is missing, hangs or
prints no ExecCredential, a tokenFile that cannot be read, a server without a scheme and a
-data field that is not base64 are one located line naming the user (and the plugin, with its
stderr), exit 2 in every live command; never a traceback. Fake plugins are scripts in tmp_path;
what kubectl does in each case was checked against the real kubectl (docs/live.md)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import httpx2
import pytest

from dockyard_k8s.errors import EXIT_BAD_INPUT
from dockyard_k8s.live import client as client_mod
from dockyard_k8s.live import credentials
from dockyard_k8s.live.kubeconfig import KubeconfigError
from support.cli import run_cli
from support.paths import EXAMPLES

V1BETA1 = "client.authentication.k8s.io/v1beta1"


def plugin(tmp_path: Path, body: str, name: str = "get-token") -> str:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


def kubeconfig(tmp_path: Path, user: str, server: str = "https://k8s.test:6443") -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        current-context: here
        contexts:
        - name: here
          context: {cluster: c, user: alice}
        clusters:
        - name: c
          cluster:
            server: SERVER
            insecure-skip-tls-verify: true
        users:
        - name: alice
          user:
        """).replace("SERVER", server) + textwrap.indent(textwrap.dedent(user), "    "))
    return str(path)


def exec_user(command: str, version: str = V1BETA1, extra: str = "") -> str:
    return f"exec:\n  apiVersion: {version}\n  command: {command}\n  args: [eks, get-token]\n{extra}"


def credential(token: str = "tok-1", version: str = V1BETA1, expires: str = "") -> str:
    status = {"token": token, **({"expirationTimestamp": expires} if expires else {})}
    return json.dumps({"apiVersion": version, "kind": "ExecCredential", "status": status})


class Server:
    def __init__(self, deny: int = 0) -> None:
        self.seen: list[httpx2.Request] = []
        self.auth: list[str] = []  # each request's Authorization as sent (a retry reuses the request)
        self.deny = deny  # answer 401 to the first N requests

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        self.auth.append(request.headers.get("Authorization", ""))
        if self.deny:
            self.deny -= 1
            return httpx2.Response(401, json={"kind": "Status", "reason": "Unauthorized", "code": 401})
        return httpx2.Response(200, json={"major": "1", "minor": "31"})


def failing(path: str, server: Server | None = None) -> KubeconfigError:
    with pytest.raises(KubeconfigError) as e:
        client_mod.connect(kubeconfig=path, transport=httpx2.MockTransport(server or Server())).version()
    return e.value


def test_a_plugin_that_fails_is_named_with_its_stderr(tmp_path: Path) -> None:
    cmd = plugin(tmp_path, """\
        print("An error occurred (ExpiredToken) when calling the GetCallerIdentity operation", file=sys.stderr)
        sys.exit(254)
        """)
    path = kubeconfig(tmp_path, exec_user(cmd))
    text = failing(path).render()
    first = text.splitlines()[0]
    assert first.startswith(f"{path}:") and "users.alice.exec" in first, text
    assert f"`{cmd} eks get-token` failed" in first  # the whole message: tests/golden/messages/kubeconfig.txt
    assert "exit code 254: An error occurred (ExpiredToken)" in first  # with the plugin's stderr, to its end
    assert first.endswith("the GetCallerIdentity operation")


def test_a_missing_plugin_says_so_with_its_install_hint(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, exec_user("aws-not-installed", extra="  installHint: brew install awscli\n"))
    err = failing(path)
    assert ": users.alice.exec.command: exec plugin aws-not-installed " in err.render()  # golden kubeconfig.txt
    assert "is not installed" in err.render()
    assert err.render().endswith("hint: brew install awscli")


def test_a_plugin_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials, "EXEC_TIMEOUT", 0.3)
    cmd = plugin(tmp_path, """\
        print("waiting for the SSO portal", file=sys.stderr, flush=True)
        time.sleep(600)
        """)
    text = failing(kubeconfig(tmp_path, exec_user(cmd))).render()
    assert "gave no credential within 0.3 s: waiting for the SSO portal" in text, text


@pytest.mark.parametrize(("output", "said"), [
    ("hello", "printed no ExecCredential JSON: 'hello'"),
    ("", "printed no ExecCredential JSON: nothing"),
    (json.dumps({"status": {"token": "x"}}), "not an ExecCredential"),
    (credential(version="client.authentication.k8s.io/v1"), "returned apiVersion client.authentication.k8s.io/v1, "
                                                             "but the kubeconfig configures " + V1BETA1),
    (json.dumps({"apiVersion": V1BETA1, "kind": "ExecCredential", "status": {}}), "returned no status.token"),
])
def test_what_a_plugin_prints_must_be_an_exec_credential(tmp_path: Path, output: str, said: str) -> None:
    cmd = plugin(tmp_path, f"sys.stdout.write({output!r})\n")
    assert said in failing(kubeconfig(tmp_path, exec_user(cmd))).render()


@pytest.mark.parametrize(("version", "extra", "said"), [
    ("client.authentication.k8s.io/v1alpha1", "", "invalid apiVersion"),
    ("client.authentication.k8s.io/v1", "", "interactiveMode must be specified for alice"),
    (V1BETA1, "  interactiveMode: Sometimes\n", "invalid interactiveMode 'Sometimes'"),
])
def test_what_client_go_refuses_before_running_the_plugin(tmp_path: Path, version: str, extra: str,
                                                          said: str) -> None:
    cmd = plugin(tmp_path, "open(os.environ['RAN'], 'w').close()\n")
    with pytest.raises(KubeconfigError) as e:
        client_mod.connect(kubeconfig=kubeconfig(tmp_path, exec_user(cmd, version, extra)),
                           transport=httpx2.MockTransport(Server()))
    assert said in e.value.render()


def test_the_token_is_kept_until_it_expires_and_asked_again_on_401(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cmd = plugin(tmp_path, f"""\
        n = len(open({str(runs)!r}).read()) if os.path.exists({str(runs)!r}) else 0
        open({str(runs)!r}, "a").write("x")
        info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
        assert info["spec"] == {{"interactive": False}} and info["apiVersion"] == {V1BETA1!r}, info
        assert os.environ["AWS_PROFILE"] == "prod"
        print({credential()!r}.replace("tok-1", f"tok-{{n + 1}}"))
        """)
    user = exec_user(cmd, extra="  env: [{name: AWS_PROFILE, value: prod}]\n")
    server = Server()
    client = client_mod.connect(kubeconfig=kubeconfig(tmp_path, user), transport=httpx2.MockTransport(server))
    client.version()
    client.version()
    assert server.auth == ["Bearer tok-1", "Bearer tok-1"]
    server.deny = 1  # revoked: the plugin runs again, the request is sent again
    client.version()
    assert server.auth[2:] == ["Bearer tok-1", "Bearer tok-2"]
    assert runs.read_text() == "xx"


def test_an_expired_token_runs_the_plugin_again(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cmd = plugin(tmp_path, f"""\
        open({str(runs)!r}, "a").write("x")
        print({credential(expires="2001-01-01T00:00:00Z")!r})
        """)
    client = client_mod.connect(kubeconfig=kubeconfig(tmp_path, exec_user(cmd)),
                                transport=httpx2.MockTransport(Server()))
    client.version()
    client.version()
    assert runs.read_text() == "xx"


def test_a_token_file_that_cannot_be_read_is_located(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, f"tokenFile: {tmp_path / 'gone.token'}\n")
    with pytest.raises(KubeconfigError) as e:
        client_mod.connect(kubeconfig=path, transport=httpx2.MockTransport(Server()))
    assert e.value.render().startswith(f"{path}:15:")
    assert "users.alice.tokenFile: cannot read the token file" in e.value.render()
    (tmp_path / "t").write_text("file-token\n")
    server = Server()
    client_mod.connect(kubeconfig=kubeconfig(tmp_path, f"tokenFile: {tmp_path / 't'}\n"),
                       transport=httpx2.MockTransport(server)).version()
    assert server.seen[0].headers["Authorization"] == "Bearer file-token"


def test_a_server_without_a_scheme_is_plain_http_without_credentials_as_kubectl_reads_it(tmp_path: Path) -> None:
    server = Server()
    path = kubeconfig(tmp_path, "token: secret\n", server="127.0.0.1:6443")
    client_mod.connect(kubeconfig=path, transport=httpx2.MockTransport(server)).version()
    assert str(server.seen[0].url) == "http://127.0.0.1:6443/version"
    assert "Authorization" not in server.seen[0].headers


def test_an_https_server_answering_plain_http_says_to_write_https(tmp_path: Path) -> None:
    def https_only(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, text="Client sent an HTTP request to an HTTPS server.\n")

    client = client_mod.connect(kubeconfig=kubeconfig(tmp_path, "token: t\n", server="127.0.0.1:6443"),
                                transport=httpx2.MockTransport(https_only))
    with pytest.raises(client_mod.ClusterError) as e:
        client.version()
    assert "write https://HOST:PORT" in e.value.hint


def test_certificate_data_that_is_not_base64_is_located(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    text = Path(kubeconfig(tmp_path, "token: t\n")).read_text()
    path.write_text(text.replace("insecure-skip-tls-verify: true", "certificate-authority-data: not!base64"))
    with pytest.raises(KubeconfigError) as e:
        client_mod.connect(kubeconfig=str(path), transport=httpx2.MockTransport(Server()))
    assert e.value.render().startswith(f"{path}:11:")
    assert "clusters.c.certificate-authority-data: not base64" in e.value.render()


def test_every_live_command_says_it_in_one_line_exit_2(tmp_path: Path) -> None:
    cmd = plugin(tmp_path, "print('token expired', file=sys.stderr); sys.exit(1)\n")
    path = kubeconfig(tmp_path, exec_user(cmd))
    for argv in (["runs", "-n", "team"], ["cluster", "list", "-n", "team"]):
        r = run_cli(*argv, "--kubeconfig", path)
        assert r.code == EXIT_BAD_INPUT, r.err
        assert "Traceback" not in r.err and "failed with exit code 1: token expired" in r.err.splitlines()[0], r.err


def test_serve_test_checks_the_kubeconfig_before_kubectl_port_forward(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve test` handed the kubeconfig straight to kubectl: its failure came as kubectl's text."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ran = tmp_path / "kubectl-ran"
    (bindir / "kubectl").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (bindir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    cmd = plugin(tmp_path, "print('token expired', file=sys.stderr); sys.exit(1)\n")
    spec = str(EXAMPLES / "llama3_8b_kind.serve.yaml")
    r = run_cli("serve", "test", spec, "--kubeconfig", kubeconfig(tmp_path, exec_user(cmd)))
    assert r.code == EXIT_BAD_INPUT and "failed with exit code 1: token expired" in r.err, r.err
    assert not ran.exists()
