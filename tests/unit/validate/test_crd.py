"""CRD schemas: conversion (kubeconform's rules, stricter), the real KubeRay CRDs, the cache."""

import os
import time

import pytest

from dockyard_k8s.validate.crd_convert import convert_version_schema
from dockyard_k8s.validate.engine import ValidateOptions, validate_objects, validate_report

WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              port: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true}
              mode: {type: string, enum: [fast, slow]}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}
              note: {type: string, nullable: true}
"""


def widget(**spec):
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1, **spec}}


@pytest.fixture
def crd_file(tmp_path):
    path = tmp_path / "widget.yaml"
    path.write_text(WIDGET_CRD)
    return str(path)


def test_conversion_adds_additional_properties_false_including_the_root():
    schema = convert_version_schema({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string"}}}}}, "g.io", "v1", "K")
    assert schema["additionalProperties"] is False
    assert schema["properties"]["spec"]["additionalProperties"] is False
    assert schema["properties"]["apiVersion"] == {"type": "string", "enum": ["g.io/v1"]}


def test_crd_objects_are_validated_strictly(crd_file):
    options = ValidateOptions(crd_sources=(crd_file,))
    assert validate_objects([widget(port="http", note=None, free={"anything": [1]})], options) == []
    bad = widget(size=0, port=1.5, mode="medium", extra=1)
    bad["status2"] = {}
    bad["metadata"]["bogus"] = 1
    problems = {(p.path, p.message) for p in validate_objects([bad], ValidateOptions(crd_sources=(crd_file,)))}
    assert problems == {
        (("status2",), 'unknown field "status2"'),
        (("spec", "extra"), 'unknown field "extra"'),
        (("spec", "size"), "got 0, expected a number >= 1"),
        (("spec", "port"), "got 1.5 (number), expected integer or string"),
        (("spec", "mode"), "got 'medium', expected one of: 'fast', 'slow'"),
        (("metadata", "bogus"), 'unknown field "bogus"'),
    }


def test_crd_directory_and_source_label(crd_file, tmp_path):
    report = validate_report([widget()], ValidateOptions(crd_sources=(str(tmp_path),)))
    assert report.problems == [] and report.sources == {"example.com/v1/Widget": f"CRD {crd_file} (--crd)"}


def test_a_crd_directory_in_kubebuilder_s_layout_is_read_as_validate_reads_manifests(crd_file, tmp_path):
    """config/crd: a kustomization.yaml that lists the CRD files (it was refused: "no
    CustomResourceDefinition in the file"), and a dot-directory (a fetch's staging folder) left out."""
    (tmp_path / "kustomization.yaml").write_text("resources:\n- widget.yaml\n")
    (tmp_path / ".fetch-1").mkdir()
    (tmp_path / ".fetch-1" / "half.yaml").write_text("kind: ConfigMap\n")
    report = validate_report([widget()], ValidateOptions(crd_sources=(str(tmp_path),)))
    assert report.problems == [] and report.sources == {"example.com/v1/Widget": f"CRD {crd_file} (--crd)"}


def test_a_changed_crd_file_invalidates_the_cached_schema(crd_file):
    assert validate_objects([widget(size=5)], ValidateOptions(crd_sources=(crd_file,))) == []
    with open(crd_file, "w") as f:
        f.write(WIDGET_CRD.replace("minimum: 1", "minimum: 10"))
    later = time.time() + 5
    os.utime(crd_file, (later, later))  # a new mtime even on coarse-timestamp file systems
    assert [p.message for p in validate_objects([widget(size=5)], ValidateOptions(crd_sources=(crd_file,)))] == [
        "got 5, expected a number >= 10"]


def test_not_a_crd_file_is_a_usage_error(tmp_path):
    from dockyard_k8s.errors import UsageError

    path = tmp_path / "x.yaml"
    path.write_text("kind: ConfigMap\n")
    with pytest.raises(UsageError, match="no CustomResourceDefinition"):
        validate_objects([widget()], ValidateOptions(crd_sources=(str(path),)))
    with pytest.raises(UsageError, match="no such file"):
        validate_objects([widget()], ValidateOptions(crd_sources=(str(tmp_path / "missing.yaml"),)))


def test_bundled_kuberay_crds_match_their_provenance():
    import hashlib
    import json

    from dockyard_k8s.validate.crd import BUNDLED_DIR

    folder = os.path.join(BUNDLED_DIR, "kuberay-v1.7.0")
    with open(os.path.join(folder, "PROVENANCE.json")) as f:
        provenance = json.load(f)
    for name, info in provenance["files"].items():
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert (blob, len(data)) == (info["git_blob_sha1"], info["size"])


def test_bundled_and_real_crds_agree_on_a_rayjob(kuberay_crds):
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
              "spec": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True, "bogus": 1,
                       "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                           "containers": [{"name": "head", "image": "ray:2", "bogus2": 1}]}}}}}}
    expected = {(("spec", "bogus"), 'unknown field "bogus"'),
                (("spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "containers", 0, "bogus2"),
                 'unknown field "bogus2"')}
    bundled = validate_report([rayjob])
    real = validate_report([rayjob], ValidateOptions(crd_sources=(str(kuberay_crds),), use_bundled=False))
    assert {(p.path, p.message) for p in bundled.problems if p.rule == "schema"} == expected
    assert {(p.path, p.message) for p in real.problems if p.rule == "schema"} == expected
    assert bundled.sources["ray.io/v1/RayJob"] == "KubeRay v1.7.0 CRD (bundled)"


def test_kuberay_rules_run_even_without_a_crd_schema():
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
              "spec": {"entrypoint": "x", "submissionMode": "Bogus", "clusterSelector": {"ray.io/cluster": "c"}}}
    report = validate_report([rayjob], ValidateOptions(use_bundled=False, use_fetched=False,
                                                      ignore_missing_schemas=True))
    assert report.missing == ["ray.io/v1/RayJob"]
    assert [(p.rule, p.path) for p in report.problems] == [("kuberay", ("spec", "submissionMode"))]
    assert "no schema for RayJob: checked with the semantic and KubeRay rules only" in report.coverage()


def test_removed_scheduler_label_is_found_wherever_kuberay_reads_labels():
    from dockyard_k8s.validate.kuberay import kuberay_problems

    gone = {"ray.io/scheduler-name": "volcano"}
    template = {"metadata": {"labels": dict(gone)}, "spec": {"containers": [{"name": "w", "image": "i"}]}}
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "labels": dict(gone)},
              "spec": {"entrypoint": "x", "rayClusterSpec": {
                  "headGroupSpec": {"rayStartParams": {}, "template": template},
                  "workerGroupSpecs": [{"groupName": "w", "labels": dict(gone), "template": template}]}}}
    at = ("spec", "rayClusterSpec")
    assert [p for p, m in kuberay_problems(rayjob) if "scheduler-name" in m] == [
        ("metadata", "labels", "ray.io/scheduler-name"),
        (*at, "workerGroupSpecs", 0, "labels", "ray.io/scheduler-name"),
        (*at, "headGroupSpec", "template", "metadata", "labels", "ray.io/scheduler-name"),
        (*at, "workerGroupSpecs", 0, "template", "metadata", "labels", "ray.io/scheduler-name"),
    ]
    assert "removed in KubeRay v1.6" in kuberay_problems(rayjob)[0][1]


def test_a_bundled_crd_is_registered_by_its_directory_alone(tmp_path, monkeypatch):
    """What adding a bundled CRD takes: its files under validate/crds/<project>-<version>/."""
    from dockyard_k8s.validate import crd

    bundled = tmp_path / "crds"
    (bundled / "widgets-v1.2.3").mkdir(parents=True)
    (bundled / "widgets-v1.2.3" / "widget.yaml").write_text(WIDGET_CRD)
    monkeypatch.setattr(crd, "BUNDLED_DIR", str(bundled))
    report = validate_report([widget()])
    assert report.problems == [] and report.sources == {"example.com/v1/Widget": "widgets v1.2.3 CRD (bundled)"}
    monkeypatch.setitem(crd.PROJECTS, "widgets", "Widgets")
    assert validate_report([widget()]).sources == {"example.com/v1/Widget": "Widgets v1.2.3 CRD (bundled)"}
    assert [p.message for p in validate_objects([widget(size=0)])] == ["got 0, expected a number >= 1"]


def test_a_first_run_reads_only_the_crd_files_up_to_the_kind_and_converts_only_that_kind(tmp_path, monkeypatch):
    """An empty cache: a RayJob costs the files before and of the RayJob CRD, parsed, and one
    conversion; Kueue's 1.4 MB Workload CRD is never read."""
    from dockyard_k8s.validate import crd_convert

    read, converted = [], []
    real_read, real_convert = crd_convert.served_versions, crd_convert.convert_version_schema
    monkeypatch.setattr(crd_convert, "served_versions", lambda text, origin: read.append(os.path.basename(origin))
                        or real_read(text, origin))
    monkeypatch.setattr(crd_convert, "convert_version_schema", lambda *a: converted.append(a[1:]) or real_convert(*a))
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}, "spec": {"bogus": 1}}
    options = ValidateOptions(cache_dir=str(tmp_path / "cache"))
    first = validate_objects([rayjob], options)
    assert [p.message for p in first if p.rule == "schema"] == ['unknown field "bogus"']
    assert read == ["keda.sh_scaledobjects.yaml", "keda.sh_triggerauthentications.yaml", "ray.io_rayclusters.yaml",
                    "ray.io_rayjobs.yaml"]
    assert converted == [("ray.io", "v1", "RayJob")]
    from dockyard_k8s.validate import compiled

    monkeypatch.setattr(compiled, "_BUILT", {})  # as in a new process: only the disk cache is left
    monkeypatch.setattr(compiled, "_LOADED", {})
    read.clear(), converted.clear()
    assert validate_objects([rayjob], options) == first  # the next run: nothing read, nothing converted
    assert (read, converted) == ([], [])


def test_every_crd_file_given_is_read_even_when_an_earlier_one_defines_the_kind(crd_file, tmp_path):
    from dockyard_k8s.errors import UsageError

    broken = tmp_path / "z-broken.yaml"
    broken.write_text("kind: CustomResourceDefinition\nspec: [a\n")
    with pytest.raises(UsageError, match=r"--crd .*z-broken.yaml:3: invalid YAML"):
        validate_objects([widget()], ValidateOptions(crd_sources=(crd_file, str(broken))))


def test_crd_files_are_read_as_kubectl_reads_them(tmp_path):
    """go-yaml's scalars (1e3 is a number), and a duplicate key is an error at its line."""
    (tmp_path / "widget.yaml").write_text(WIDGET_CRD.replace("minimum: 1}", "minimum: 1e3}"))
    problems = validate_objects([widget(size=5)], ValidateOptions(crd_sources=(str(tmp_path / "widget.yaml"),)))
    assert [p.message for p in problems] == ["got 5, expected a number >= 1000.0"]
    (tmp_path / "dup.yaml").write_text(WIDGET_CRD.replace("  scope: Namespaced\n", "  scope: Namespaced\n  scope: x\n"))
    from dockyard_k8s.errors import UsageError

    with pytest.raises(UsageError, match=r"dup.yaml:8: duplicate key 'scope' \(first defined on line 7\)"):
        validate_objects([widget()], ValidateOptions(crd_sources=(str(tmp_path / "dup.yaml"),)))


def test_every_repeated_sub_schema_of_the_rayjob_crd_is_one_definition():
    """The RayJob CRD repeats the pod template three times and, inside it, containers, probes,
    resources...: each repeat is hoisted into ``definitions`` (one validator function each), so
    the cached validator is less than half the size it would be (bench/README.md, "hoisting")."""
    import json

    from dockyard_k8s.validate import crd_convert
    from dockyard_k8s.validate.crd import BUNDLED_DIR

    path = os.path.join(BUNDLED_DIR, "kuberay-v1.7.0", "ray.io_rayjobs.yaml")
    with open(path, encoding="utf-8") as f:
        schema = crd_convert.served_versions(f.read(), path)["ray.io/v1/RayJob"]
    converted = convert_version_schema(*schema)
    seen: dict[str, int] = {}

    def walk(node):
        if isinstance(node, dict):
            text = json.dumps(node, sort_keys=True, separators=(",", ":"))  # as _hoist measures
            if len(text) >= crd_convert._HOIST_MIN:
                seen[text] = seen.get(text, 0) + 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk({k: v for k, v in converted.items() if k != "definitions"})
    for definition in converted["definitions"].values():
        walk(definition)
    assert len(converted["definitions"]) > 50
    assert [n for n in seen.values() if n > 1] == []
