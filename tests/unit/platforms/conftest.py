"""Fixtures of the platforms area."""

from __future__ import annotations

from pathlib import Path

import pytest
from platforms_support import Render, make_render


@pytest.fixture
def render(tmp_path: Path) -> Render:
    """render(infra_dict, *sets, recipe=...) -> Bundle, with no user defaults file in play."""
    return make_render(tmp_path)
