"""Real-cluster tests: run only when DOCKYARD_E2E_KUBECONFIG points at a cluster with KubeRay.

GPU requests are rewritten away (``E2E_SETS``) so a CPU-only kind cluster runs the flows.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, NamedTuple

import pytest

KUBECONFIG = os.environ.get("DOCKYARD_E2E_KUBECONFIG", "")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if KUBECONFIG:
        return
    skip = pytest.mark.skip(reason="set DOCKYARD_E2E_KUBECONFIG to run the real-cluster tests")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


class Result(NamedTuple):
    code: int
    out: str
    err: str


@pytest.fixture
def e2e_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from dockyard_k8s.cli import main

    monkeypatch.setenv("KUBECONFIG", KUBECONFIG)

    def run(*argv: str) -> Result:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
        return Result(code, out.getvalue(), err.getvalue())

    yield run
