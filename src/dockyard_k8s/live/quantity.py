"""Kubernetes resource quantities (``500m``, ``64Gi``, ``1e3``) as exact numbers. Pure."""

from __future__ import annotations

import re
from fractions import Fraction

# suffix -> multiplier (k8s.io/apimachinery/pkg/api/resource: binary SI and decimal SI)
SUFFIXES: dict[str, int | Fraction] = {
    "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
    "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": 1,
    "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")


def parse_quantity(value: object) -> Fraction:
    """Raises ValueError for text that is not a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Fraction(value)
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * SUFFIXES[m.group(3) or ""]


def format_quantity(value: Fraction, resource: str = "") -> str:
    """Short human form: cpu in cores (``2.5``), memory in Gi, counts as integers."""
    if resource.endswith("memory") or resource.endswith("storage"):
        return f"{float(value / 2 ** 30):g}Gi"
    return f"{float(value):g}"
