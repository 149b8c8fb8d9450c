"""Short human forms of quantities for doctor's messages (parsing is ``kube.parse_quantity``). Pure."""

from __future__ import annotations

from fractions import Fraction


def format_quantity(value: Fraction, resource: str = "") -> str:
    """Short human form: cpu in cores (``2.5``), memory in Gi, counts as integers."""
    if resource.endswith("memory") or resource.endswith("storage"):
        return f"{float(value / 2 ** 30):g}Gi"
    return f"{float(value):g}"
