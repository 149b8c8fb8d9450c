"""Every lint rule, in ``--list-rules`` order, and the table docs/lint.md is built from."""

from __future__ import annotations

from dockyard_k8s.lint.model import WARNING, Rule
from dockyard_k8s.lint.rules import env, gpu, images, network, resources, security, workloads

# Reported by the engine itself when a suppression annotation names an unknown rule.
INVALID_SUPPRESSION = Rule(
    "invalid-suppression", WARNING, "Suppression annotations must name existing rules",
    "The dockyard-k8s/lint-ignore annotation takes a comma-separated list of rule ids; an id that is not a rule "
    "(a typo, a renamed rule) suppresses nothing. Fix: use the ids `dockyard-k8s lint --list-rules` prints.",
    ("dockyard-k8s",), lambda o, c: ())

# (family, its rules), in --list-rules order. The family is also the SARIF tag.
FAMILIES: tuple[tuple[str, tuple[Rule, ...]], ...] = (
    ("security", security.RULES),
    ("network", network.RULES),
    ("environment", env.RULES),
    ("resources", resources.RULES),
    ("images", images.RULES),
    ("workloads", workloads.RULES),
    ("gpu", gpu.RULES),
    ("lint", (INVALID_SUPPRESSION,)),
)
RULES: tuple[Rule, ...] = tuple(r for _, rules in FAMILIES for r in rules)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
FAMILY_OF: dict[str, str] = {r.id: family for family, rules in FAMILIES for r in rules}
assert len(BY_ID) == len(RULES), "duplicate rule id"


def _severity(r: Rule) -> str:
    return r.severity + (f"; {r.untrusted_severity} for pods running untrusted code" if r.untrusted_severity else "")


def explain(rule_id: str) -> str:
    """The text of ``--explain RULE``."""
    r = BY_ID[rule_id]
    return f"{r.id} ({_severity(r)})\n{r.title}\n\n{r.doc}\n\nfollows: {', '.join(r.anchors)}\n"
