"""The Ray Jobs REST API of a Ray head's dashboard (port 8265), used by ``job`` and by
``run`` in attach mode.

Endpoints (Ray docs, "Ray Jobs REST API"): ``POST /api/jobs/`` submit, ``GET /api/jobs/``
list, ``GET /api/jobs/{id}`` details, ``GET /api/jobs/{id}/logs``, ``POST
/api/jobs/{id}/stop``, ``DELETE /api/jobs/{id}``. ``prepare_*`` are pure; RayJobsClient sends.

With Ray token authentication (Ray >= 2.52) every request carries ``Authorization: Bearer
<token>``; ``GET /api/authentication_mode`` (public) says whether the head requires it. The
token is set once on the HTTP client and never appears in a message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.plain import Record

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
log = logging.getLogger("dockyard_k8s.live")


class RayRequest(Record):
    __slots__ = ("method", "path", "body", "what")

    def __init__(self, method: str, path: str, body: dict[str, Any] | None = None, what: str = "") -> None:
        self.method = method
        self.path = path
        self.body = body
        self.what = what


def submission_id(run: str, entrypoint: str, runtime_env: dict[str, Any] | None) -> str:
    """Deterministic id: submitting the same run twice finds the first job instead of
    starting a duplicate (Ray rejects a reused submission_id)."""
    digest = hashlib.sha256(json.dumps([entrypoint, runtime_env or {}], sort_keys=True).encode()).hexdigest()
    return f"{run}-{digest[:10]}"


def replacement_id(base: str) -> str:
    """The id of a ``--replace`` submission: the run's id and a fresh suffix."""
    import secrets

    return f"{base}-{secrets.token_hex(3)}"


def latest_job(ray: RayJobsClient, base: str) -> dict[str, Any] | None:
    """The newest job of a run's submission id: ``base`` itself or a replacement of it."""
    found = ray.get(base)
    candidates = [j for j in ray.list() if str(j.get("submission_id") or "").startswith(base + "-")]
    if found:
        candidates.append(found)
    return max(candidates, key=lambda j: j.get("start_time") or 0, default=None)


def prepare_submit(entrypoint: str, *, sub_id: str | None = None, runtime_env: dict[str, Any] | None = None,
                   metadata: dict[str, str] | None = None, entrypoint_num_cpus: float | None = None,
                   entrypoint_num_gpus: float | None = None) -> RayRequest:
    body: dict[str, Any] = {"entrypoint": entrypoint}
    if sub_id:
        body["submission_id"] = sub_id
    if runtime_env:
        body["runtime_env"] = runtime_env
    if metadata:
        body["metadata"] = metadata
    if entrypoint_num_cpus is not None:
        body["entrypoint_num_cpus"] = entrypoint_num_cpus
    if entrypoint_num_gpus is not None:
        body["entrypoint_num_gpus"] = entrypoint_num_gpus
    return RayRequest("POST", "/api/jobs/", body, "submit job")


def prepare_list() -> RayRequest:
    return RayRequest("GET", "/api/jobs/", None, "list jobs")


def prepare_get(job: str) -> RayRequest:
    return RayRequest("GET", f"/api/jobs/{job}", None, f"job {job}")


def prepare_logs(job: str) -> RayRequest:
    return RayRequest("GET", f"/api/jobs/{job}/logs", None, f"job {job}")


def prepare_stop(job: str) -> RayRequest:
    return RayRequest("POST", f"/api/jobs/{job}/stop", None, f"job {job}")


def prepare_delete(job: str) -> RayRequest:
    return RayRequest("DELETE", f"/api/jobs/{job}", None, f"job {job}")


AUTH_HINT = {
    401: "the head requires a Ray token: pass RECIPE (its Secret) or --cluster NAME, or export RAY_AUTH_TOKEN",
    403: "the Ray token was refused: the head was started with another one (RAY_AUTH_TOKEN, or the run's Secret "
         "changed after the cluster started)",
}


class RayJobsClient:
    def __init__(self, address: str, *, token: str | None = None, transport: httpx2.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, retries: int = 3) -> None:
        self.address = address.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx2.Client(base_url=self.address, transport=transport, timeout=httpx2.Timeout(30.0),
                                  headers=headers)
        self.sleep = sleep
        self.retries = retries

    def close(self) -> None:
        self.http.close()

    def call(self, req: RayRequest, *, missing_ok: bool = False) -> Any:
        for attempt in range(self.retries + 1):
            try:
                resp = self.http.request(req.method, req.path, json=req.body)
            except httpx2.TransportError as e:
                if attempt < self.retries:
                    self.sleep(0.5 * 2 ** attempt)
                    continue
                raise ClusterError(f"cannot reach the Ray dashboard at {self.address}: {e}", obj=req.what,
                                   hint="is the head running? `dockyard-k8s status` / check --address") from e
            if resp.status_code in (502, 503, 504) and attempt < self.retries:
                self.sleep(0.5 * 2 ** attempt)
                continue
            if resp.status_code == 404 and missing_ok:
                return None
            if resp.status_code >= 400:
                raise ClusterError(f"Ray dashboard answered {resp.status_code}: {resp.text.strip()[:300]}",
                                   obj=req.what, status=resp.status_code, hint=AUTH_HINT.get(resp.status_code, ""))
            try:
                return resp.json()
            except ValueError as e:
                raise ClusterError(f"unexpected answer from the Ray dashboard: {resp.text[:200]}",
                                   obj=req.what) from e
        raise AssertionError("unreachable")

    def auth_mode(self) -> str | None:
        """``token`` or ``disabled`` as the head reports it; None when it cannot say (Ray < 2.52)."""
        found = self.call(RayRequest("GET", "/api/authentication_mode", None, "authentication mode"), missing_ok=True)
        mode = found.get("authentication_mode") if isinstance(found, dict) else None
        return str(mode) if mode else None

    def submit(self, entrypoint: str, **kwargs: Any) -> str:
        return str(self.call(prepare_submit(entrypoint, **kwargs))["submission_id"])

    def list(self) -> list[dict[str, Any]]:
        return list(self.call(prepare_list()))

    def get(self, job: str) -> dict[str, Any] | None:
        found = self.call(prepare_get(job), missing_ok=True)
        return dict(found) if found else None

    def logs(self, job: str) -> str:
        return str(self.call(prepare_logs(job)).get("logs", ""))

    def stop(self, job: str) -> bool:
        return bool(self.call(prepare_stop(job)).get("stopped"))

    def delete(self, job: str) -> bool:
        return bool(self.call(prepare_delete(job)).get("deleted"))

    def wait(self, job: str, *, poll: float = 1.0, timeout: float | None = None,
             clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
        """Until the job is terminal. The Jobs REST API has no watch: this polls."""
        start = clock()
        while True:
            info = self.get(job) or {}
            if info.get("status") in TERMINAL:
                return info
            if timeout is not None and clock() - start > timeout:
                return info
            self.sleep(poll)

    def follow_logs(self, job: str, *, poll: float = 1.0) -> Iterator[str]:
        """The job's log as it grows, each part once, until the job ends: the dashboard's
        ``logs/tail`` WebSocket; where it is not served (a proxy, an old Ray), the whole log
        polled every ``poll`` seconds and only its new part yielded."""
        from dockyard_k8s.live import websocket

        seen = 0
        try:
            for text in websocket.messages(f"{self.address}/api/jobs/{job}/logs/tail", headers=self._ws_headers()):
                seen += len(text)
                yield text
            return
        except (websocket.WebSocketError, OSError) as e:
            log.debug("job %s: logs/tail unavailable (%s); polling the log", job, e)
        while True:
            info = self.get(job) or {}
            text = self.logs(job)
            if len(text) > seen:
                yield text[seen:]
                seen = len(text)
            if info.get("status") in TERMINAL:
                return
            self.sleep(poll)

    def _ws_headers(self) -> dict[str, str]:
        """The client's own headers (credentials among them) for the WebSocket handshake."""
        skip = {"accept", "accept-encoding", "connection", "user-agent", "host", "content-length"}
        return {k: v for k, v in self.http.headers.items() if k.lower() not in skip}


def job_row(info: dict[str, Any]) -> list[str]:
    return [str(info.get("submission_id") or info.get("job_id") or "-"), str(info.get("status", "-")),
            str(info.get("entrypoint", ""))[:60], str(info.get("message") or "")[:60]]
