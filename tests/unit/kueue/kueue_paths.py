"""Paths the Kueue tests share."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
