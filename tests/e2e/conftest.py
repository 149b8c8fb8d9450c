"""Real-cluster tests: run only when DOCKYARD_E2E_KUBECONFIG points at a cluster with KubeRay.

GPU requests are rewritten away (``E2E_SETS``) so a CPU-only kind cluster runs the flows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from support.cli import run_cli

KUBECONFIG = os.environ.get("DOCKYARD_E2E_KUBECONFIG", "")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if KUBECONFIG:
        return
    skip = pytest.mark.skip(reason="set DOCKYARD_E2E_KUBECONFIG to run the real-cluster tests")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def e2e_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("KUBECONFIG", KUBECONFIG)
    yield run_cli
