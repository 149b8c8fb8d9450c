"""Fixtures of the platforms area."""

from __future__ import annotations

from pathlib import Path

import pytest
from platforms_support import BundleOf, make_bundle_of


@pytest.fixture
def bundle_of(tmp_path: Path) -> BundleOf:
    """bundle_of(infra_dict, *sets, recipe=...) -> the Bundle (built, rendered, checked), with no user
    defaults file in play. Not the render/ tests' ``render`` fixture: that one returns objects."""
    return make_bundle_of(tmp_path)
