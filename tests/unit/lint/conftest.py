"""Fixtures of the lint tests (builders live in lintkit.py)."""

from __future__ import annotations

import pytest
from lintkit import clean_set


@pytest.fixture
def clean_objects():
    """Objects that pass every rule: a hardened Deployment, a GPU Job and the policies around them."""
    return clean_set()
