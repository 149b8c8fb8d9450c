"""Text, JSON and SARIF forms of a lint report."""

from __future__ import annotations

import json

from lintkit import clean_set, run_lint
from sarif_kit.validate import validation_errors

from dockyard_k8s.lint import output as out
from dockyard_k8s.lint.engine import lint_objects
from dockyard_k8s.lint.registry import RULES
from dockyard_k8s.manifests import objects_from_bundle, read_objects


def _report():
    objs = clean_set()
    c = objs[0]["spec"]["template"]["spec"]["containers"][0]
    c["image"] = "nginx:latest"
    c.pop("livenessProbe")
    return run_lint(objs)


def test_text_groups_by_object_and_hides_info_by_default():
    text = out.text(_report(), "warning")
    assert text.splitlines()[:3] == [
        "Deployment team/web",
        "  error    image-tag: container 'app': image nginx:latest uses the moving :latest tag",
        "           spec.template.spec.containers[0].image",
    ]
    assert text.splitlines()[-1] == ("7 objects: 1 error, 0 warnings, 1 info (1 below warning not shown; "
                                     "--min-severity info shows them)")
    assert "probes" not in text
    assert "probes: container 'app' has no livenessProbe" in out.text(_report(), "info")


def test_text_shows_rendered_file_and_line():
    objs = objects_from_bundle([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}}])
    text = out.text(lint_objects(objs), "error")
    assert text.splitlines()[:3] == ["Pod n/p  (00-pod-p.yaml)",
                                     "  error    image-tag: container 'c': image x has no tag (means :latest)",
                                     "           line 9: spec.containers[0].image"]


def test_json_report():
    doc = out.as_json(_report())
    assert doc["summary"] == {"error": 1, "warning": 0, "info": 1, "objects": 7, "suppressed": 0, "exitCode": 1}
    assert doc["findings"][0] == {"rule": "image-tag", "severity": "error", "object": "Deployment team/web",
                                  "path": "spec.template.spec.containers[0].image",
                                  "message": "container 'app': image nginx:latest uses the moving :latest tag"}
    assert [p["level"] for p in doc["podSecurity"]] == ["restricted", "restricted"]
    json.dumps(doc)


def _sarif_of_rendered():
    objs = objects_from_bundle([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
                                 "spec": {"containers": [{"name": "c", "image": "x",
                                                          "securityContext": {"privileged": True}}]}}])
    return out.sarif(lint_objects(objs), "0.1.0", "build/run")


def test_sarif_is_valid_against_the_oasis_schema():
    log = _sarif_of_rendered()
    assert validation_errors(json.loads(json.dumps(log))) == []


def test_sarif_has_what_code_scanning_needs():
    log = _sarif_of_rendered()
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert run["tool"]["driver"]["name"] == "dockyard-k8s"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.id for r in RULES]
    results = {r["ruleId"]: r for r in run["results"]}
    priv = results["privileged-container"]
    assert priv["level"] == "error"
    assert run["tool"]["driver"]["rules"][priv["ruleIndex"]]["id"] == "privileged-container"
    assert priv["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "build/run/00-pod-p.yaml"},
                                                        "region": {"startLine": 11}}
    assert priv["message"]["text"].startswith("Pod n/p: container 'c' runs privileged")
    assert len(priv["partialFingerprints"]["dockyardFinding/v1"]) == 32
    info = [r for r in run["results"] if r["level"] == "note"]
    assert info, "info findings map to SARIF 'note'"


def test_sarif_of_files_keeps_their_paths(tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\nspec:\n  containers:\n"
                 "  - {name: c, image: x}\n")
    log = out.sarif(lint_objects(read_objects([str(f)])), "0.1.0", "ignored/for/files")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {str(f)}
    assert validation_errors(log) == []
