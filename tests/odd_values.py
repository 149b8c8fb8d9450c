"""Valid objects with a few fields replaced by values of the wrong type or shape: the inputs of
the tests that validate's and lint's rules never raise on a malformed manifest."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

ODD = ["", "x", "Bad_Name!", -1, 70000, "abc", "1.5", None, True, {}, [], ["a"], {"a": 1}, 3.5, "ns", "ICMP",
       "a--b", "10.0.0.0/8", "25%", "Exists", "-1", "x" * 70, float("inf"), float("nan")]
RENDERED_RAYJOB_RUN = Path(__file__).resolve().parent / "golden" / "expected" / "grpo_swe.rayjob.yaml"


def rendered() -> list[dict[str, Any]]:
    """The objects of the example's RayJob run, as rendered (the golden file)."""
    return [o for o in yaml.safe_load_all(RENDERED_RAYJOB_RUN.read_text()) if isinstance(o, dict)]


def leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside ``obj`` (leaves and inner nodes), deepest first."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, (*path, i))
    if path:
        yield path


def mutated(bases: Iterable[dict[str, Any]], seed: int, copies: int, most: int,
            odd: list[Any] = ODD) -> list[dict[str, Any]]:
    """``copies`` copies of each base with 1 to ``most`` values replaced by odd ones."""
    rnd = random.Random(seed)
    out = []
    for base in bases:
        paths = list(leaves(base))
        for _ in range(copies):
            obj = copy.deepcopy(base)
            for _ in range(rnd.randint(1, most)):
                node, path = obj, rnd.choice(paths)
                try:
                    for part in path[:-1]:
                        node = node[part]
                    node[path[-1]] = copy.deepcopy(rnd.choice(odd))
                except (KeyError, IndexError, TypeError):
                    pass  # an earlier change replaced a parent of this path
            out.append(obj)
    return out
