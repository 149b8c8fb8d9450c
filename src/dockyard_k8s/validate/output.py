"""Report formats for ``dockyard-k8s validate``: text, json, junit, tap (as kubeconform offers)."""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

from dockyard_k8s.plain import format_path
from dockyard_k8s.validate.problem import Problem, Report, object_key

FORMATS = ("text", "json", "junit", "tap")


def render(report: Report, fmt: str, *, files: int, summary: bool) -> str:
    """The whole report in ``fmt`` (text ends with the summary when asked)."""
    if fmt == "json":
        problems = [{"file": p.file, "document": p.doc_index, "line": p.line, "kind": p.kind, "namespace": p.namespace,
                     "name": p.name, "path": format_path(p.path), "json_path": list(p.path), "rule": p.rule,
                     "message": p.message} for p in report.problems]
        counts = {"objects": report.objects, "files": files, "valid": report.valid, "invalid": report.invalid,
                  "skipped": report.skipped, "problems": len(report.problems)}
        doc = {"problems": problems, "missing_schemas": report.missing, "schemas": report.sources, "summary": counts}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "junit":
        return _junit(report, files)
    if fmt == "tap":
        return _tap(report)
    lines = [str(p) for p in report.problems]
    if summary:
        lines.append(f"Summary: {report.objects} object(s) in {files} file(s): {report.valid} valid, "
                     f"{report.invalid} invalid, {report.skipped} skipped, {len(report.problems)} problem(s)")
    return "\n".join(lines) + ("\n" if lines else "")


def _grouped(report: Report) -> dict[tuple[str, int, tuple[Any, ...]], list[Problem]]:
    groups: dict[tuple[str, int, tuple[Any, ...]], list[Problem]] = {}
    for p in report.problems:
        groups.setdefault(object_key(p), []).append(p)
    return groups


def _junit(report: Report, files: int) -> str:
    groups = _grouped(report)
    suites = ET.Element("testsuites", name="dockyard-k8s validate", tests=str(report.objects),
                        failures=str(len(groups)))
    by_file: dict[str, list[list[Problem]]] = {}
    for (file, _, _), problems in groups.items():
        by_file.setdefault(file or "<objects>", []).append(problems)
    ET.SubElement(suites, "testsuite", name="valid objects", tests=str(report.valid), failures="0",
                  skipped=str(report.skipped))
    for file, objects in sorted(by_file.items()):
        suite = ET.SubElement(suites, "testsuite", name=file, tests=str(len(objects)), failures=str(len(objects)))
        for problems in objects:
            first = problems[0]
            case = ET.SubElement(suite, "testcase", classname=first.kind or "document",
                                 name=f"{first.object_ref} (document {first.doc_index})")
            failure = ET.SubElement(case, "failure", message=f"{len(problems)} problem(s)", type="ValidationError")
            failure.text = "\n".join(str(p) for p in problems)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _tap(report: Report) -> str:
    groups = list(_grouped(report).values())
    lines = ["TAP version 13", f"1..{len(groups) + 1}"]
    for i, problems in enumerate(groups, 1):
        first = problems[0]
        lines += [f"not ok {i} - {first.where} {first.object_ref}", "  ---", "  problems:"]
        lines += [f"    - {format_path(p.path) or '.'}: {p.message}".replace("\n", " ") for p in problems]
        lines.append("  ...")
    lines.append(f"ok {len(groups) + 1} - {report.valid} valid object(s), {report.skipped} skipped")
    return "\n".join(lines) + "\n"
