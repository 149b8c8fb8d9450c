"""Lint reports as text (grouped by object), JSON, or SARIF 2.1.0 for code-review tools."""

from __future__ import annotations

import dataclasses
import hashlib
from itertools import groupby
from typing import Any

from dockyard_k8s.lint.engine import LintReport
from dockyard_k8s.lint.model import SEVERITY_RANK, Finding, Rule
from dockyard_k8s.lint.registry import FAMILY_OF, RULES
from dockyard_k8s.plain import format_path

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
INFORMATION_URI = "https://github.com/dockyard-rl/dockyard-k8s/blob/main/docs/lint.md"


def text(report: LintReport, min_severity: str = "info") -> str:
    """Findings grouped by object, then the Pod Security levels, then the summary."""
    shown = [f for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK[min_severity]]
    lines: list[str] = []
    for obj, group in groupby(shown, key=lambda f: (f.source.file if f.source else "", f.object)):
        items = list(group)
        first = items[0]
        origin = f"  ({first.source.file})" if first.source else ""
        lines.append(f"{obj[1]}{origin}")
        for f in items:
            at = f"line {f.line}: " if f.line else ""
            lines += [f"  {f.severity:<7}  {f.rule}: {f.message}", f"           {at}{format_path(f.path)}"]
    if report.pod_security:
        lines.append("pod security standards (level each pod template meets)")
        for p in report.pod_security:
            name = f"{p.object}{' ' + p.group if p.group else ''}"
            note = " [runs untrusted code]" if p.untrusted else ""
            lines.append(f"  {p.level:<10}  {name}{note}")
            if p.level != "restricted" and p.untrusted:
                missing = p.restricted if p.level == "baseline" else p.baseline
                lines.append(f"              not {'restricted' if p.level == 'baseline' else 'baseline'}: "
                             + "; ".join(missing))
    hidden = len(report.findings) - len(shown)
    summary = report.summary()
    if hidden:
        summary += f" ({hidden} below {min_severity} not shown; --min-severity info shows them)"
    lines.append(summary)
    return "\n".join(lines) + "\n"


def _finding_json(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"rule": f.rule, "severity": f.severity, "object": f.object, "path": format_path(f.path),
                           "message": f.message}
    if f.source is not None:
        out.update({"file": f.source.file, "document": f.source.document, "line": f.line,
                    "rendered": f.source.rendered})
    return out


def as_json(report: LintReport) -> dict[str, Any]:
    return {
        "summary": {s: report.count(s) for s in ("error", "warning", "info")} | {
            "objects": report.objects, "suppressed": len(report.suppressed), "exitCode": report.exit_code},
        "findings": [_finding_json(f) for f in report.findings],
        "suppressed": [dataclasses.asdict(s) for s in report.suppressed],
        "podSecurity": [{"object": p.object, "path": format_path(p.path), "group": p.group, "level": p.level,
                         "untrusted": p.untrusted, "baselineViolations": p.baseline,
                         "restrictedViolations": p.restricted} for p in report.pod_security],
    }


def _rule_sarif(r: Rule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": "".join(w.capitalize() for w in r.id.split("-")),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.doc},
        "help": {"text": r.doc, "markdown": f"**{r.title}**\n\n{r.doc}\n\nFollows: {', '.join(r.anchors)}"},
        "helpUri": f"{INFORMATION_URI}#{r.id}",
        "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]},
        "properties": {"tags": ["kubernetes", FAMILY_OF[r.id]],
                       "anchors": list(r.anchors)},
    }


def sarif(report: LintReport, version: str, uri_prefix: str = "") -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, every rule described, one result per finding.

    ``uri_prefix`` is prepended to rendered file names (e.g. the directory ``render -o``
    wrote), so results land on the files a repository holds.
    """
    rule_ids = [r.id for r in RULES]
    results = []
    for f in report.findings:
        location: dict[str, Any] = {
            "logicalLocations": [{"name": format_path(f.path) or f.object,
                                  "fullyQualifiedName": f"{f.object}/{format_path(f.path)}", "kind": "object"}],
        }
        if f.source is not None:
            uri = (uri_prefix.rstrip("/") + "/" if uri_prefix and f.source.rendered else "") + f.source.file
            physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
            if f.line:
                physical["region"] = {"startLine": f.line}
            location["physicalLocation"] = physical
        fingerprint = hashlib.sha256(f"{f.rule}|{f.object}|{format_path(f.path)}".encode()).hexdigest()[:32]
        results.append({
            "ruleId": f.rule,
            "ruleIndex": rule_ids.index(f.rule),
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.object}: {f.message}"},
            "locations": [location],
            "partialFingerprints": {"dockyardFinding/v1": fingerprint},
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "dockyard-k8s", "version": version, "informationUri": INFORMATION_URI,
                                "rules": [_rule_sarif(r) for r in RULES]}},
            "results": results,
            "columnKind": "unicodeCodePoints",
            "properties": {"suppressed": [dataclasses.asdict(s) for s in report.suppressed],
                           "podSecurity": [{"object": p.object, "group": p.group, "level": p.level}
                                           for p in report.pod_security]},
        }],
    }
