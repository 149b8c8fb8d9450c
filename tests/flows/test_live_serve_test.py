"""`serve test`: one OpenAI completion against a local HTTP server speaking the completions API,
directly (--address) and through `kubectl port-forward` (a stand-in kubectl that "forwards" to
it). Exit 0 only on a valid answer; latency and tokens printed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from states import KIND_SPEC

pytestmark = pytest.mark.slow  # starts an HTTP server


class OpenAI:
    """What the server answers: a behaviour name, and every request body it received."""

    def __init__(self) -> None:
        self.behaviour = "ok"
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []  # the Authorization header of each request


@pytest.fixture
def server() -> Iterator[tuple[str, OpenAI]]:
    state = OpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: Any, raw: bool = False) -> None:
            data = body.encode() if raw else json.dumps(body).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def do_POST(self) -> None:
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, **req})
            state.authorization.append(self.headers.get("Authorization"))
            b = state.behaviour
            if self.path != "/v1/completions":
                return self._send(404, {"detail": "Not Found"})
            if b == "slow":
                time.sleep(3)
            if b == "wrong-model" or req.get("model") != "meta-llama/Meta-Llama-3-8B-Instruct":
                return self._send(404, {"object": "error", "message": f"The model `{req.get('model')}` does not "
                                                                      "exist.", "type": "NotFoundError", "code": 404})
            if b == "500":
                return self._send(500, {"object": "error", "message": "CUDA out of memory", "code": 500})
            if b == "html":
                return self._send(200, "<html>gateway</html>", raw=True)
            text = "" if b == "empty" else " Paris. It is known for the Eiffel Tower."
            tokens = 0 if b == "no-tokens" else 9
            return self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": req["model"],
                                    "choices": [] if b == "no-choices" else [
                                        {"index": 0, "text": text, "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 6, "completion_tokens": tokens,
                                              "total_tokens": 6 + tokens}})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    httpd.shutdown()
    httpd.server_close()


def test_a_valid_answer_exits_0_with_latency_and_tokens(cli: Any, server: tuple[str, OpenAI]) -> None:
    url, state = server
    r = cli("serve", "test", KIND_SPEC, "--address", url, "--max-tokens", "9")
    assert r.code == 0, r.out + r.err
    assert "✔ llama-8b answered in " in r.out and " ms: 6 prompt + 9 completion tokens (" in r.out
    assert "tokens/s), model 'meta-llama/Meta-Llama-3-8B-Instruct'" in r.out
    assert "'The capital of France is' -> ' Paris. It is known for the Eiffel Tower.'" in r.out
    assert state.requests == [{"path": "/v1/completions", "model": "meta-llama/Meta-Llama-3-8B-Instruct",
                               "prompt": "The capital of France is", "max_tokens": 9, "temperature": 0}]


@pytest.mark.parametrize(("behaviour", "problem", "hint"), [
    ("wrong-model", "HTTP 404: The model `meta-llama/Meta-Llama-3-8B-Instruct` does not exist.",
     "GET /v1/models lists what it serves"),
    ("500", "HTTP 500: CUDA out of memory", "serve logs SPEC"),
    ("html", "the answer is not a JSON object", "OpenAI-compatible"),
    ("no-choices", "the answer has no choices[0].text", "without a completion"),
    ("empty", "the answer has no choices[0].text", "without a completion"),
    ("no-tokens", "usage.completion_tokens is 0, expected at least 1", "no generated tokens"),
])
def test_anything_but_a_valid_answer_exits_1(cli: Any, server: tuple[str, OpenAI], behaviour: str, problem: str,
                                             hint: str) -> None:
    url, state = server
    state.behaviour = behaviour
    r = cli("serve", "test", KIND_SPEC, "--address", url)
    assert r.code == 1
    assert f"✖ llama-8b ({url}): {problem}" in r.out
    assert hint in r.out and "Traceback" not in r.out + r.err


def test_no_answer_in_time_and_no_server(cli: Any, server: tuple[str, OpenAI]) -> None:
    url, state = server
    state.behaviour = "slow"
    r = cli("serve", "test", KIND_SPEC, "--address", url, "--timeout", "0.5")
    assert r.code == 1 and "no answer within 0.5s" in r.out
    r = cli("serve", "test", KIND_SPEC, "--address", "http://127.0.0.1:9")
    assert r.code == 1 and "cannot reach http://127.0.0.1:9" in r.out and "serve status" in r.out


def test_bad_flags_are_bad_input(cli: Any) -> None:
    assert cli("serve", "test", KIND_SPEC, "--max-tokens", "0").code == 2


def _kubectl_forwarding_to(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in kubectl on PATH that "forwards" to ``url``; the file its arguments are written to."""
    port = url.rsplit(":", 1)[1]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "kubectl.args"
    kubectl = bindir / "kubectl"
    kubectl.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {record}\n"
                       f"echo 'Forwarding from 127.0.0.1:{port} -> 8000'\nexec sleep 300\n")
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return record


def test_through_a_port_forward_to_the_service(cli: Any, server: tuple[str, OpenAI], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = server
    port = url.rsplit(":", 1)[1]
    record = _kubectl_forwarding_to(url, tmp_path, monkeypatch)
    r = cli("serve", "test", KIND_SPEC, "--context", "fake")
    assert r.code == 0, r.out + r.err
    assert f"port-forward: http://127.0.0.1:{port} -> llama/svc/llama-8b:8000" in r.err
    assert "✔ llama-8b answered" in r.out
    args = record.read_text().splitlines()
    assert args[:2] == ["--context", "fake"]
    assert args[2:] == ["port-forward", "-n", "llama", "--address", "127.0.0.1", "svc/llama-8b", ":8000"]


def test_an_endpoint_with_an_api_key_is_called_with_the_key_from_its_secret(cli: Any, fake: Any,
                                                                            server: tuple[str, OpenAI]) -> None:
    """Issue 22 item 23: the key is read from the Secret the spec names, sent as a bearer token,
    never printed."""
    import base64

    url, state = server
    key = "sk-test-" + "q" * 24
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "llama-keys", "namespace": "llama"},
              "data": {"api-key": base64.b64encode(key.encode()).decode()}})
    r = cli("serve", "test", KIND_SPEC, "--address", url, "--set", "serve.apiKeySecret.name=llama-keys")
    assert r.code == 0, r.out + r.err
    assert state.authorization == [f"Bearer {key}"] and key not in r.out + r.err
    r = cli("serve", "test", KIND_SPEC, "--address", url, "--set", "serve.apiKeySecret.name=missing-keys")
    assert r.code == 1 and "Secret llama/missing-keys: does not exist, so the endpoint's API key cannot be read" \
        in r.err
    assert len(state.authorization) == 1  # nothing sent without the key


def test_a_key_and_a_port_forward_connect_once(cli: Any, fake: Any, server: tuple[str, OpenAI], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the API key checks the kubeconfig: the port-forward does not connect again."""
    import base64

    from dockyard_k8s.live import client as client_mod

    url, state = server
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "llama-keys", "namespace": "llama"},
              "data": {"api-key": base64.b64encode(b"sk-test-" + b"q" * 24).decode()}})
    _kubectl_forwarding_to(url, tmp_path, monkeypatch)
    connects = []
    patched = client_mod.connect
    monkeypatch.setattr(client_mod, "connect", lambda **kw: connects.append(kw) or patched(**kw))
    r = cli("serve", "test", KIND_SPEC, "--set", "serve.apiKeySecret.name=llama-keys")
    assert r.code == 0, r.out + r.err
    assert len(connects) == 1 and state.authorization == [f"Bearer sk-test-{'q' * 24}"]
