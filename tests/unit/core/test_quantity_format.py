"""Quantities have one parse (kube.parse_quantity) and one format (kube.format_quantity):
apimachinery's canonical text (``Quantity.String()``), which plan, Kueue's messages, serve's
derived /dev/shm and lint's messages all print through."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dockyard_k8s.kube import format_quantity, parse_quantity
from dockyard_k8s.plan.kueue_model import kueue_amount
from dockyard_k8s.plan.units import format_amount


@pytest.mark.parametrize(("value", "binary", "text"), [
    # apimachinery's own examples: "1.5 will be serialized as 1500m, 1.5Gi as 1536Mi"
    (Fraction(3, 2), False, "1500m"), (Fraction(3, 2) * 2**30, True, "1536Mi"),
    (0, False, "0"), (8, False, "8"), (Fraction(17, 2), False, "8500m"), (1000, False, "1k"),
    (Fraction(1, 10**9), False, "1n"), (-Fraction(1, 2), False, "-500m"), (64 * 2**30, True, "64Gi"),
    (1024, True, "1Ki"), (1536000, True, "1500Ki"),
    # BinarySI below 1024 is written as DecimalSI; not a multiple of 1024, as digits
    (1000, True, "1k"), (1023, True, "1023"), (10**9, True, "1000000000"),
])
def test_format_is_apimachinery_canonical_text(value: Fraction | int, binary: bool, text: str) -> None:
    assert format_quantity(value, binary=binary) == text
    assert parse_quantity(text) == value


def test_kueue_amounts_are_what_kueue_prints() -> None:
    """Kueue's ResourceQuantity + String(): kueue_amount wrote 1e9 bytes of memory as "1G"
    (BinarySI prints digits) and 1000 cores or 1000 pods as "1000" (DecimalSI prints "1k")."""
    assert kueue_amount("memory", 10**9) == "1000000000"
    assert kueue_amount("memory", 64 * 2**30) == "64Gi"
    assert kueue_amount("cpu", 1_000_000) == "1k"
    assert kueue_amount("cpu", 8500) == "8500m"
    assert kueue_amount("pods", 1000) == "1k"


def test_plan_amounts_are_canonical() -> None:
    """format_amount wrote 1000 bytes as "1000"; apimachinery writes it "1k"."""
    assert format_amount("memory", 1000) == "1k"
    assert [format_amount(r, a) for r, a in (("cpu", 90_000), ("cpu", 500), ("memory", 1000 * 2**30),
                                              ("nvidia.com/gpu", 8))] == ["90", "500m", "1000Gi", "8"]

