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

    # 401 is Ray's answer to a request without a token (its token middleware: "Unauthorized: Missing
    # authentication token"; 403 is its answer to a wrong token); a 403 with no Status, as a network
    # filter between the API server and the pod gives, is not the head refusing
    assert [refused(s) for s in (401, 200, 204, 403, 404, 407, 500)] == [True, False, False, None, None, None, None]
    assert require_refused("http://ray:8265", transport=httpx2.MockTransport(lambda r: httpx2.Response(403))) == 403


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


@pytest.mark.parametrize(("status", "said", "ends"), [
    (401, "✔ the Ray head exp-abcde-head-x1 refuses a request without the token (GET /api/jobs/: HTTP 401)", False),
    (200, "✖ the Ray head exp-abcde-head-x1 answered a request without the token (GET /api/jobs/: HTTP 200)", True),
    # a network filter's 403 (what the e2e machines' egress filter answered before the control plane
    # routed the API server's pod traffic to the stand-in head) is not the head refusing: no ✔
    (403, "note: could not check that the Ray head exp-abcde-head-x1 refuses a request without the token (HTTP 403 "
          "is not a Ray head's answer to it, 401", False),
])
def test_run_says_what_the_head_s_answer_proves(monkeypatch: pytest.MonkeyPatch, status: int, said: str,
                                                 ends: bool) -> None:
    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.live import launch
    from dockyard_k8s.live.progress import RunView

    bundle = build_bundle("examples/grpo_swe.yaml", "examples/grpo_swe.infra.yaml")
    monkeypatch.setattr(launch, "proxy_status", lambda client, ns, pod: (status, True))
    lines: list[str] = []
    check = launch.head_auth_check(None, bundle, say=lines.append)  # type: ignore[arg-type]
    view = RunView(bundle.run.name, {"head": 1}, "RayJob")
    view.sync("Pod", [pod("exp-abcde-head-x1", "head", True)])
    outcome = check(view)
    assert any(line.startswith(said) for line in lines), lines
    assert (outcome is not None and not outcome.ok) == ends
    assert check(view) is None and len(lines) == 1  # asked once
