"""Reading manifest files for lint and plan: documents, Lists, directories, line numbers, errors."""

from __future__ import annotations

import pytest

from dockyard_k8s.errors import ConfigError, UsageError
from dockyard_k8s.manifests import line_numbers, looks_like_manifests, objects_from_bundle, read_objects

TWO = """\
apiVersion: v1
kind: Service
metadata:
  name: a
spec:
  ports:
  - port: 80
---
# comment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx
"""


def test_documents_keep_file_index_and_lines(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(TWO)
    objs = read_objects([str(f)])
    assert [(o.data["kind"], o.data["metadata"]["name"], o.source.document) for o in objs] == [
        ("Service", "a", 0), ("Deployment", "b", 1)]
    assert objs[1].line(("spec", "template", "spec", "containers", 0, "image")) == 19
    assert objs[1].line(("spec", "template", "spec", "containers", 0, "securityContext", "x")) == 18
    assert objs[0].line(("spec", "ports", 0, "port")) == 7


def test_the_lines_of_a_file_are_found_in_one_pass(tmp_path, monkeypatch):
    """Many findings in one file: one locator call, not one per finding (that was quadratic)."""
    from dockyard_k8s import manifests

    f = tmp_path / "m.yaml"
    f.write_text("---\n".join([TWO] * 3))
    objs = read_objects([str(f)])
    calls = []
    real = manifests.locate
    monkeypatch.setattr(manifests, "locate", lambda *a: calls.append(a) or real(*a))
    wanted = [(o, ("metadata", "name")) for o in objs] + [(objs[5], ("spec", "template", "spec", "containers", 0))]
    assert line_numbers(wanted) == [4, 13, 24, 33, 44, 53, 58]
    assert len(calls) == 1


def test_lists_and_directories(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text("kind: List\napiVersion: v1\nitems:\n- kind: ConfigMap\n  metadata:\n"
                                            "    name: x\n- kind: Secret\n  metadata:\n    name: why\n")
    (tmp_path / "a.json").write_text('{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "n"}}')
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    (tmp_path / "notes.txt").write_text("ignored")
    objs = read_objects([str(tmp_path)])
    assert [(o.data["kind"], o.data["metadata"]["name"]) for o in objs] == [("Namespace", "n"), ("ConfigMap", "x"),
                                                                 ("Secret", "why")]
    assert objs[2].line(("metadata", "name")) == 9


def test_bad_yaml_is_a_located_config_error(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("kind: Pod\nmetadata: {name: [\n")
    with pytest.raises(ConfigError) as e:
        read_objects([str(f)])
    assert str(e.value.problems[0]).startswith(f"{f}:3:1: invalid YAML")


def test_a_document_without_kind_is_reported(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("kind: Pod\n---\nfoo: bar\n")
    with pytest.raises(ConfigError) as e:
        read_objects([str(f)])
    assert [str(p) for p in e.value.problems] == [f"{f}:3:1: document 1 is not a Kubernetes object (no kind)"]


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(UsageError) as e:
        read_objects([str(tmp_path / "nope.yaml")])
    assert str(e.value) == f"{tmp_path / 'nope.yaml'}: no such file or directory"


def test_manifest_detection(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("policy: {model: x}\n")
    manifest = tmp_path / "m.yaml"
    manifest.write_text(TWO)
    assert looks_like_manifests(str(manifest)) is True
    assert looks_like_manifests(str(recipe)) is False
    assert looks_like_manifests(str(tmp_path)) is True
    assert looks_like_manifests("-") is True


def test_rendered_objects_are_named_like_render_output():
    objs = objects_from_bundle([{"kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}]}}])
    assert objs[0].source.file == "00-service-s.yaml"
    assert objs[0].source.rendered is True
    assert objs[0].line(("spec", "ports", 0, "port")) == 6
