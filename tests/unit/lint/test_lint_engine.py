"""Suppressions, ordering, summary and exit codes."""

from __future__ import annotations

from lintkit import clean_set, run_lint

from dockyard_k8s.lint.model import LintConfig, Suppression


def _broken():
    objs = clean_set()
    c = objs[0]["spec"]["template"]["spec"]["containers"][0]
    c["image"] = "nginx:latest"  # image-tag, error
    c["securityContext"]["privileged"] = True  # privileged-container, error
    return objs


def test_error_findings_make_exit_code_1_and_are_counted():
    report = run_lint(_broken())
    assert report.exit_code == 1
    assert (report.count("error"), report.count("warning"), report.count("info")) == (2, 0, 0)
    assert report.summary() == "7 objects: 2 errors, 0 warnings, 0 info"


def test_lint_ignore_suppresses_and_is_reported():
    report = run_lint(_broken(), LintConfig(ignore=("image-tag", "privileged-container")))
    assert report.findings == []
    assert report.exit_code == 0
    assert report.suppressed == [Suppression("privileged-container", "Deployment team/web", "lint.ignore"),
                                 Suppression("image-tag", "Deployment team/web", "lint.ignore")]
    assert report.summary() == ("7 objects: 0 errors, 0 warnings, 0 info; 2 suppressed (image-tag x1 by lint.ignore, "
                                "privileged-container x1 by lint.ignore)")


def test_object_annotation_suppresses_its_findings_only():
    objs = _broken()
    objs[0]["metadata"]["annotations"] = {"dockyard-k8s/lint-ignore": "image-tag, privileged-container"}
    report = run_lint(objs)
    assert report.findings == []
    assert {s.by for s in report.suppressed} == {"annotation on Deployment team/web"}


def test_pod_template_annotation_suppresses_findings_under_the_template():
    objs = _broken()
    objs[0]["spec"]["template"]["metadata"]["annotations"] = {"dockyard-k8s/lint-ignore": "image-tag"}
    report = run_lint(objs)
    assert [f.rule for f in report.findings] == ["privileged-container"]
    assert report.suppressed == [Suppression("image-tag", "Deployment team/web",
                                             "annotation on Deployment team/web (pod template)")]


def test_findings_are_sorted_by_object_then_severity():
    objs = _broken()
    objs[1]["spec"]["template"]["spec"]["containers"][0]["image"] = "trainer"  # image-tag on the Job
    objs[0]["spec"]["template"]["spec"]["containers"][0].pop("livenessProbe")  # info
    report = run_lint(objs)
    assert [(f.object, f.severity, f.rule) for f in report.findings] == [
        ("Deployment team/web", "error", "image-tag"),
        ("Deployment team/web", "error", "privileged-container"),
        ("Deployment team/web", "info", "probes"),
        ("Job team/train", "error", "image-tag"),
    ]


def test_pod_security_levels_are_reported_per_template():
    report = run_lint(_broken())
    assert [(p.object, p.level) for p in report.pod_security] == [
        ("Deployment team/web", "privileged"), ("Job team/train", "restricted")]
