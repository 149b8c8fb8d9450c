"""Fixtures of the plan tests (builders live in plankit.py)."""

from __future__ import annotations

import pytest
from plankit import cpu_nodes, gpu_nodes

from dockyard_k8s.plan import from_objects


@pytest.fixture
def small_cluster():
    """Three tainted 8-GPU nodes and one CPU node."""
    return from_objects([*gpu_nodes(3), *cpu_nodes(1)])
