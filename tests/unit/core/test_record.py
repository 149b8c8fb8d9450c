"""plain.Record (what only live/client.py keeps until issue 23 §4 rewrites it), and what
validate's workers rely on of the frozen dataclasses that replaced it elsewhere."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import Record


class Point(Record):
    __slots__ = ("x", "y", "tags")

    def __init__(self, x: int, y: int, tags: tuple[str, ...] = ()) -> None:
        self.x = x
        self.y = y
        self.tags = tags


class Other(Record):
    __slots__ = ("x", "y", "tags")

    def __init__(self, x: int, y: int, tags: tuple[str, ...] = ()) -> None:
        self.x, self.y, self.tags = x, y, tags


def test_equal_and_hashed_by_fields_within_one_class() -> None:
    assert Point(1, 2) == Point(1, 2, ())
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2) != Other(1, 2)  # same fields, another class: not equal
    assert Point(1, 2) != (1, 2, ())  # not a tuple
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2


def test_repr_names_every_field_in_order() -> None:
    assert repr(Point(1, 2, ("a",))) == "Point(x=1, y=2, tags=('a',))"


def test_replace_copies_with_changes_and_refuses_unknown_fields() -> None:
    p = Point(1, 2, ("a",))
    q = p.replace(y=5)
    assert (q.x, q.y, q.tags) == (1, 5, ("a",)) and (p.x, p.y) == (1, 2)
    assert type(q) is Point
    with pytest.raises(TypeError, match="Point has no field z"):
        p.replace(z=1)


def test_no_instance_dict_and_pickles_as_validate_workers_send_them() -> None:
    p = ConfigProblem("f.yaml", 3, 1, "a.b", "bad")
    assert not hasattr(p, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.line = 4  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(p)) == p
    assert sorted({p, dataclasses.replace(p, line=1)}, key=lambda c: c.line)[0].line == 1
