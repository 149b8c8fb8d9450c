"""Fixtures of the Kueue tests: a run rendered from a small infra file (``kueue_run``)."""

from __future__ import annotations

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ConfigError

BASE = """\
infra:
  namespace: team
  image: reg.example.com/ubuntu-swe:vllm-1.0
"""


@pytest.fixture
def kueue_run(write, clean_env):
    """kueue_run(extra, sets) -> the rendered objects of a run whose infra file is BASE + extra."""

    def _run(extra: str = "", sets=()):
        recipe = write("exp.yaml", "model: m\n")
        infra = write("exp.infra.yaml", BASE + extra)
        return build_bundle(recipe, infra, Layers(sets=list(sets), env=clean_env)).objects

    return _run


@pytest.fixture
def kueue_problems_of(write, clean_env):
    """kueue_problems_of(extra, sets) -> the ConfigError lines (``file:line:col: key: message``)."""

    def _problems(extra: str = "", sets=()):
        recipe = write("exp.yaml", "model: m\n")
        infra = write("exp.infra.yaml", BASE + extra)
        with pytest.raises(ConfigError) as e:
            build_bundle(recipe, infra, Layers(sets=list(sets), env=clean_env))
        return [str(p) for p in e.value.problems]

    return _problems
