"""Fixtures of the live unit tests: requests are asserted through httpx2.MockTransport."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from live_helpers import Recorder, server_config


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_client() -> Callable[..., Any]:
    from dockyard_k8s.live.client import KubeClient

    def make(handler: Callable[[httpx2.Request], httpx2.Response] | Recorder, sleeps: list[float] | None = None,
             **kwargs: Any) -> KubeClient:
        return KubeClient(server_config("https://k8s.test"), transport=httpx2.MockTransport(handler),
                          sleep=(sleeps.append if sleeps is not None else (lambda s: None)), **kwargs)

    return make
