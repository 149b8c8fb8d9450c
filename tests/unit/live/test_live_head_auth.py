"""`run`'s check that the Ray head refuses a request without the token (issue 22 item 20): which
pod is the head, and how an answer through the API server's pod proxy is read. The check
against real Ray heads is in tests/flows/test_live_rayauth.py (slow)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.rayhead import head_pod, proxy_status, refused, require_refused


def pod(name: str, fleet: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"dockyard-k8s/fleet": fleet}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def infra(mode: str) -> dict[str, Any]:
    return {"launch": {"mode": mode, "name": "exp"}}


def test_the_head_is_the_ready_pod_of_fleet_head_or_trainer_0_of_a_statefulset_run() -> None:
    pods = [pod("exp-abcde-head-x1", "head", False), pod("exp-abcde-trainer-worker-0", "trainer", True)]
    assert head_pod(infra("rayjob"), pods) is None  # not ready yet
    pods[0] = pod("exp-abcde-head-x1", "head", True)
    assert head_pod(infra("rayjob"), pods) == "exp-abcde-head-x1"
    assert head_pod(infra("statefulset"), [pod("exp-trainer-1", "trainer", True),
                                           pod("exp-trainer-0", "trainer", True)]) == "exp-trainer-0"


def test_an_answer_of_the_api_server_itself_says_nothing_about_the_head(make_client: Any) -> None:
    seen: list[httpx2.Request] = []

    def answer(status: int, body: Any) -> Any:
        def handler(request: httpx2.Request) -> httpx2.Response:
            seen.append(request)
            return httpx2.Response(status, content=json.dumps(body).encode() if not isinstance(body, str) else
                                   body.encode())
        return handler

    forbidden = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "reason": "Forbidden"}
    assert proxy_status(make_client(answer(403, forbidden)), "ns", "h") == (403, False)
    assert seen[-1].url.path == "/api/v1/namespaces/ns/pods/h:8265/proxy/api/jobs/"
    assert proxy_status(make_client(answer(401, "Unauthorized")), "ns", "h") == (401, True)
    assert proxy_status(make_client(answer(200, [])), "ns", "h") == (200, True)
    assert refused(401) and refused(403) and not refused(200)


def test_an_attached_head_is_asked_without_any_credential() -> None:
    headers: list[str | None] = []

    def open_head(request: httpx2.Request) -> httpx2.Response:
        headers.append(request.headers.get("authorization"))
        return httpx2.Response(200, json=[])

    with pytest.raises(ClusterError) as e:
        require_refused("http://ray:8265", transport=httpx2.MockTransport(open_head))
    assert "answered a request without the token (GET /api/jobs/: HTTP 200): Ray token authentication is OFF" \
        in str(e.value) and "nothing was submitted" in str(e.value)
    assert headers == [None]
    assert require_refused("http://ray:8265", transport=httpx2.MockTransport(lambda r: httpx2.Response(401))) == 401
