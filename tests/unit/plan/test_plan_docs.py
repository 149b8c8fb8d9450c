"""docs/plan.md carries the catalogue table generated from the code."""

from __future__ import annotations

from support.doctables import catalog_markdown
from support.paths import DOCS

DOC = DOCS / "plan.md"


def test_catalogue_table_is_in_sync():
    text = DOC.read_text()
    start = text.index("<!-- catalog:begin -->\n") + len("<!-- catalog:begin -->\n")
    assert text[start:text.index("<!-- catalog:end -->")] == catalog_markdown()
