"""docs/plan.md carries the catalogue table generated from the code."""

from __future__ import annotations

from pathlib import Path

from dockyard_k8s.plan.catalog import catalog_markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "plan.md"


def test_catalogue_table_is_in_sync():
    text = DOC.read_text()
    start = text.index("<!-- catalog:begin -->\n") + len("<!-- catalog:begin -->\n")
    assert text[start:text.index("<!-- catalog:end -->")] == catalog_markdown()
