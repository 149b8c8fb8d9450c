"""Resource amounts as the scheduler compares them: integers.

cpu in millicores (``500m`` -> 500), everything else in its base unit rounded up (bytes
for memory and ephemeral-storage, devices for extended resources): apimachinery's
``MilliValue()`` / ``Value()``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.kube import format_quantity, parse_quantity

BYTES = ("memory", "ephemeral-storage", "storage")


def to_units(resource: str, q: Fraction) -> int:
    """A parsed quantity in scheduler units (rounded up)."""
    return math.ceil(q * 1000 if resource == "cpu" or resource.endswith(".cpu") else q)


def parse_units(resource: str, value: object) -> int | None:
    q = parse_quantity(value)
    return None if q is None else to_units(resource, q)


def amounts(values: Mapping[Any, Any], where: str, problems: list[ConfigProblem]) -> dict[str, int]:
    """``values`` in scheduler units; one that is no quantity is a problem at ``where``, and left out."""
    out = {}
    for k, v in values.items():
        amount = parse_units(str(k), v)
        if amount is None:
            problems.append(ConfigProblem(where, 0, 0, str(k), f"got {v!r}, expected a Kubernetes quantity"))
        else:
            out[str(k)] = amount
    return out


def format_amount(resource: str, amount: int) -> str:
    """Canonical text of an amount in scheduler units (:func:`.kube.format_quantity`): ``90``,
    ``500m``, ``1000Gi``, ``8``; bytes in binary units."""
    if resource == "cpu" or resource.endswith(".cpu"):
        return format_quantity(Fraction(amount, 1000))
    return format_quantity(amount, binary=resource.split(".")[-1] in BYTES)
