"""docs/lint.md carries the rule list generated from the registry."""

from __future__ import annotations

from dockyard_k8s.lint.registry import RULES
from support.doctables import rules_markdown
from support.paths import DOCS

DOC = DOCS / "lint.md"


def test_rule_list_is_in_sync():
    text = DOC.read_text()
    start = text.index("<!-- rules:begin -->\n") + len("<!-- rules:begin -->\n")
    assert text[start:text.index("<!-- rules:end -->")] == rules_markdown(), (
        "regenerate the rules section of docs/lint.md from tests/support/doctables.py's rules_markdown()")


def test_every_rule_is_documented_with_its_explanation():
    text = DOC.read_text()
    for r in RULES:
        assert f"### {r.id}\n" in text
        assert r.doc in text
