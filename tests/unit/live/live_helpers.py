"""Helpers shared by the live unit tests (a uniquely named module: never import from conftest)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2


class Recorder:
    """A MockTransport that records requests and answers with ``handler`` (default: echo the body)."""

    def __init__(self, handler: Callable[[httpx2.Request], httpx2.Response] | None = None) -> None:
        self.requests: list[httpx2.Request] = []
        self.handler = handler or self.echo

    @staticmethod
    def echo(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            return httpx2.Response(404, json={"kind": "Status", "code": 404, "reason": "NotFound", "message": "nope"})
        body = json.loads(request.content or b"{}")
        body.setdefault("metadata", {})["resourceVersion"] = "1"
        return httpx2.Response(201, json=body)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        self.requests.append(request)
        return self.handler(request)


def server_config(server: str, namespace: str | None = None) -> Any:
    """lightkube's SingleConfig of a server with no credentials (what KubeClient is made from)."""
    from lightkube import KubeConfig
    from lightkube.config.models import Cluster, User

    return KubeConfig.from_one(cluster=Cluster(server=server), user=User(), namespace=namespace).get()
