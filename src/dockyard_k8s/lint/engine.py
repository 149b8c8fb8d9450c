"""Run the rules over a set of objects, apply suppressions, evaluate Pod Security levels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import MALFORMED_DATA
from dockyard_k8s.lint.model import (
    ERROR,
    IGNORE_ANNOTATION,
    SEVERITIES,
    Context,
    Finding,
    LintConfig,
    Obj,
    Path,
    Rule,
    Suppression,
)
from dockyard_k8s.lint.pss import evaluate
from dockyard_k8s.lint.registry import BY_ID, INVALID_SUPPRESSION, RULES
from dockyard_k8s.manifests import Manifest, line_numbers


@dataclass(frozen=True, slots=True)
class PodSecurity:
    """The Pod Security Standards level one pod template meets."""

    object: str
    path: Path
    group: str
    level: str
    baseline: list[str]  # violations keeping it from baseline
    restricted: list[str]  # violations keeping it from restricted
    untrusted: bool


@dataclass(frozen=True, slots=True)
class LintReport:
    findings: list[Finding]
    suppressed: list[Suppression]
    pod_security: list[PodSecurity]
    objects: int

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def exit_code(self) -> int:
        """1 when an error-severity finding remains, else 0."""
        return 1 if self.count(ERROR) else 0

    def summary(self) -> str:
        parts = [f"{self.count(s)} {s}{'s' if self.count(s) != 1 and s != 'info' else ''}" for s in SEVERITIES]
        line = f"{self.objects} objects: " + ", ".join(parts)
        if self.suppressed:
            counts = Counter((s.rule, s.by) for s in self.suppressed)
            line += f"; {len(self.suppressed)} suppressed (" + ", ".join(
                f"{rule} x{n} by {by}" for (rule, by), n in sorted(counts.items())) + ")"
        return line


def unknown_rules(ids: list[str] | tuple[str, ...]) -> list[str]:
    return [i for i in ids if i not in BY_ID]


def lint_objects(inputs: Sequence[Obj | Manifest | dict[str, Any]], config: LintConfig | None = None) -> LintReport:
    """Every finding for ``inputs`` (sorted), what was suppressed, and each pod's PSS level; a
    :class:`~dockyard_k8s.manifests.Manifest`'s findings get the lines of their paths (plain
    objects have none).

    Raises:
        KeyError: never for bad manifests; unknown ids in ``config.ignore`` are the caller's
        to reject (see :func:`unknown_rules`).
    """
    config = config or LintConfig()
    objects = [o if isinstance(o, Obj) else Obj(o) if isinstance(o, dict) else Obj(o.data, o.source) for o in inputs]
    written = {id(o): m for o, m in zip(objects, inputs, strict=True) if isinstance(m, Manifest)}
    ctx = Context(objects, config)
    ignored = set(config.ignore)
    found: list[tuple[Obj, Rule, Path, str, str | None]] = []
    suppressed: list[Suppression] = []
    for o in objects:
        # Annotation suppressions: on the object (all its findings) or on a pod template (findings under it).
        scopes: list[tuple[Path, set[str], str]] = []
        raw: list[tuple[Rule, Path, str, str | None]] = []
        for prefix, notes, where in [((), o.annotations, o.ref)] + [
                (p.template.path, p.annotations, f"{o.ref} ({p.template.group or 'pod template'})") for p in o.pods]:
            value = notes.get(IGNORE_ANNOTATION)
            if value is None:
                continue
            ids = [x.strip() for x in value.split(",") if x.strip()]
            scopes.append((prefix, set(ids), f"annotation on {where}"))
            at = (*prefix, "metadata", "annotations", IGNORE_ANNOTATION)
            raw += [(INVALID_SUPPRESSION, at, f"{IGNORE_ANNOTATION} names unknown rule {i!r}", None)
                    for i in ids if i not in BY_ID]
        for rule in RULES:
            try:
                raw += [(rule, hit.path, hit.message, hit.severity) for hit in rule.check(o, ctx)]
            except MALFORMED_DATA as e:
                # a field of an unexpected type (the rules read schema-valid objects): say so, go on
                raw.append((rule, (), f"could not be checked: a field this rule reads has an unexpected type or "
                                      f"value ({type(e).__name__}); `dockyard-k8s validate` says which", ERROR))
        for rule, path, message, severity in raw:
            by = "lint.ignore" if rule.id in ignored else next(
                (how for prefix, ids, how in scopes if path[:len(prefix)] == prefix and rule.id in ids), None)
            if by is not None:
                suppressed.append(Suppression(rule.id, o.ref, by))
            else:
                found.append((o, rule, path, message, severity))
    located = [(written[id(o)], path) for o, _, path, _, _ in found if id(o) in written]
    lines = iter(line_numbers(located))
    findings = [Finding(rule.id, severity or rule.severity, o.ref, path, message, o.source,
                        next(lines) if id(o) in written else 0) for o, rule, path, message, severity in found]
    findings.sort(key=Finding.sort_key)
    pod_security = []
    for o in objects:
        for p in o.pods:
            r = evaluate(p.template.metadata, p.spec)
            pod_security.append(PodSecurity(o.ref, p.template.path, p.template.group, r.level,
                                            [str(v) for v in r.baseline], [str(v) for v in r.restricted],
                                            p.untrusted))
    return LintReport(findings, suppressed, pod_security, len(objects))
