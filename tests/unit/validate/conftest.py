"""Fixtures of the validation tests (the session-wide validator cache is in tests/conftest.py):
the real KubeRay and Kueue CRDs from ../shared (skipped with a reason when that folder is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.paths import shared_crds

SHARED_CRDS = shared_crds()


@pytest.fixture(scope="session")
def kuberay_crds() -> Path:
    folder = SHARED_CRDS / "kuberay"
    if not folder.is_dir():
        pytest.skip(f"real KubeRay CRDs not found at {folder} (the shared/ folder is absent)")
    return folder


@pytest.fixture(scope="session")
def kueue_crds() -> Path:
    folder = SHARED_CRDS / "kueue"
    if not folder.is_dir():
        pytest.skip(f"real Kueue CRDs not found at {folder} (the shared/ folder is absent)")
    return folder


def objects_file(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


__all__ = ["SHARED_CRDS", "objects_file", "os"]
