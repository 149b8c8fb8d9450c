"""What validate's workers rely on of the frozen dataclasses every value class is."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from dockyard_k8s.errors import ConfigProblem


def test_no_instance_dict_and_pickles_as_validate_workers_send_them() -> None:
    p = ConfigProblem("f.yaml", 3, 1, "a.b", "bad")
    assert not hasattr(p, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.line = 4  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(p)) == p
    assert sorted({p, dataclasses.replace(p, line=1)}, key=lambda c: c.line)[0].line == 1
