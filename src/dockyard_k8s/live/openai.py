"""One OpenAI-style completion against a model endpoint (``serve test``).

``POST /v1/completions`` with ``{model, prompt, max_tokens, temperature: 0}``, as vLLM and
SGLang serve it (OpenAI "Completions" API). :func:`prepare_completion` and
:func:`read_answer` are pure; :func:`complete` sends. An answer is valid when it is HTTP 200
JSON with ``choices[0].text`` a non-empty string and ``usage.completion_tokens`` at least 1.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx2


@dataclass(frozen=True, slots=True)
class Completion:
    """What came back, checked."""

    ok: bool
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # request sent -> answer read
    model: str
    problem: str  # why it is not a valid answer ("" when ok)
    hint: str

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0


def prepare_completion(model: str, prompt: str, max_tokens: int) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) of the request."""
    return "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}


def read_answer(status: int, body: str, seconds: float, model: str) -> Completion:
    """Check an HTTP answer to :func:`prepare_completion`'s request."""
    def bad(problem: str, hint: str) -> Completion:
        return Completion(False, "", 0, 0, seconds, model, problem, hint)

    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    if status != 200:
        detail = ""
        if isinstance(doc, dict):
            inner = doc.get("error")
            err: dict[str, Any] = inner if isinstance(inner, dict) else doc
            detail = str(err.get("message") or err.get("detail") or "")[:300]
        if status in (401, 403):
            hint = ("the server wants an API key, or another one: serve.apiKeySecret names the Secret `serve test` "
                    "reads it from (the server's --api-key)")
        elif status == 404:
            hint = (f"the server does not serve model {model!r} (GET /v1/models lists what it serves; "
                    "serve.model.servedName sets the name)")
        else:
            hint = "the server refused the request: read its logs (`dockyard-k8s serve logs SPEC`)"
        return bad(f"HTTP {status}{': ' + detail if detail else ''}", hint)
    if not isinstance(doc, dict):
        return bad("the answer is not a JSON object", "is this an OpenAI-compatible server? (vllm, sglang)")
    choices = doc.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    text = first.get("text") if isinstance(first, dict) else None
    if not isinstance(text, str) or not text:
        return bad("the answer has no choices[0].text", "the server answered without a completion")
    raw_usage = doc.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(completion_tokens, int) or isinstance(completion_tokens, bool) or completion_tokens < 1:
        return bad(f"usage.completion_tokens is {completion_tokens!r}, expected at least 1",
                   "the server reported no generated tokens")
    tokens_in = prompt_tokens if isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool) else 0
    return Completion(True, text, tokens_in, completion_tokens, seconds, str(doc.get("model") or model), "", "")


def complete(base_url: str, model: str, prompt: str, max_tokens: int, *, timeout: float = 120.0,
             api_key: str | None = None, transport: httpx2.BaseTransport | None = None) -> Completion:
    """Send the request to ``base_url`` (``http://127.0.0.1:PORT``) and check the answer; with
    ``api_key``, as a bearer token (set once on the client, never in a message)."""
    path, body = prepare_completion(model, prompt, max_tokens)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    start = time.monotonic()
    try:
        with httpx2.Client(base_url=base_url, timeout=timeout, transport=transport, headers=headers) as http:
            response = http.post(path, json=body)
            return read_answer(response.status_code, response.text, time.monotonic() - start, model)
    except httpx2.TimeoutException:
        problem, hint = (f"no answer within {timeout:g}s",
                         "the server is busy or still loading: `dockyard-k8s serve status SPEC`; raise --timeout")
    except httpx2.TransportError as e:
        problem, hint = f"cannot reach {base_url}: {e}", "is the endpoint Ready? `dockyard-k8s serve status SPEC`"
    return Completion(False, "", 0, 0, time.monotonic() - start, model, problem, hint)
