"""`dockyard-k8s validate` and `schemas`: exit codes, output formats parsed back, fetch over HTTP."""

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import xml.etree.ElementTree as ET

import pytest

from dockyard_k8s.cli import main
from support.paths import REPO

BAD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: ok}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: x:1
        bogus: 1
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
"""


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    return str(path)


def test_the_summary_counts_add_up_with_unreadable_documents_and_list_items(tmp_path, capsys):
    # A document YAML cannot read is an invalid object: objects = valid + invalid + skipped.
    path = tmp_path / "mixed.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
                    "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"
                    "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {x: 1}}\n---\n"
                    ": bad: yaml: [\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {x: 1}\n")
    assert main(["validate", "--summary", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == \
        "Summary: 5 object(s) in 1 file(s): 2 valid, 3 invalid, 0 skipped, 3 problem(s)"
    assert main(["validate", "-o", "json", str(path)]) == 1
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert (summary["objects"], summary["valid"], summary["invalid"]) == (5, 2, 3)
    assert main(["validate", "-o", "junit", str(path)]) == 1
    root = ET.fromstring(capsys.readouterr().out)
    assert (root.get("tests"), root.get("failures")) == ("5", "3")
    assert root.find("testsuite[@name='valid objects']").get("tests") == "2"


def test_text_output_with_lines_and_summary(bad_file, capsys):
    assert main(["validate", "--summary", bad_file]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert out[0] == f'{bad_file}:16: Deployment web: spec.template.spec.containers[0].bogus: unknown field "bogus"'
    # the hint's wording: tests/golden/messages/validate.txt
    assert out[1].startswith(f"{bad_file}:19: Widget w: kind: no schema for example.com/v1/Widget (")
    assert "--crd" in out[1] and "--ignore-missing-schemas" in out[1]
    assert out[2] == "Summary: 3 object(s) in 1 file(s): 1 valid, 2 invalid, 0 skipped, 2 problem(s)"


def test_ignore_missing_schemas_and_skip(bad_file, capsys):
    assert main(["validate", "--ignore-missing-schemas", "--skip", "Deployment", bad_file]) == 0
    assert capsys.readouterr().out == ""


def test_json_output_parses(bad_file, capsys):
    main(["validate", "-o", "json", bad_file])
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"objects": 3, "files": 1, "valid": 1, "invalid": 2, "skipped": 0, "problems": 2}
    assert doc["problems"][0]["json_path"] == ["spec", "template", "spec", "containers", 0, "bogus"]
    assert doc["problems"][0]["line"] == 16 and doc["problems"][0]["rule"] == "schema"


def test_junit_output_is_valid_xml(bad_file, capsys):
    main(["validate", "-o", "junit", bad_file])
    root = ET.fromstring(capsys.readouterr().out.split("?>", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "2"
    failures = root.findall(".//failure")
    assert len(failures) == 2 and 'unknown field "bogus"' in (failures[0].text or "")


def test_tap_output(bad_file, capsys):
    main(["validate", "-o", "tap", bad_file])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["TAP version 13", "1..3"]
    assert [line.split(" - ")[0] for line in lines if line.startswith(("ok", "not ok"))] == [
        "not ok 1", "not ok 2", "ok 3"]


def test_exit_on_error_reports_only_the_first_invalid_object(bad_file, capsys):
    assert main(["validate", "--exit-on-error", bad_file]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["validate", "--kubernetes-version", "x", str(tmp_path)]) == 2


def test_valid_directory_exits_0(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
    assert main(["validate", str(tmp_path)]) == 0


def test_check_prints_what_was_validated(capsys):
    assert main(["check", str(REPO / "examples" / "grpo_swe.yaml")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("✔ validated Deployment, NetworkPolicy, PodDisruptionBudget, ConfigMap, Service, "
                           "ServiceAccount against "
                           "Kubernetes 1.29 strict schemas")
    assert last.endswith("RayJob against KubeRay v1.7.0 CRD (bundled)")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def crd_server(kuberay_crds):
    handler = functools.partial(_Quiet, directory=str(kuberay_crds))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_schemas_fetch_from_a_local_server_then_used(crd_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["schemas", "fetch", "--kuberay", "1.7.0", "--from", crd_server]) == 0
    out = capsys.readouterr().out
    assert "ray.io/v1/RayCluster" in out and "ray.io/v1/RayJob" in out and "ray.io/v1/RayService" in out
    fetched = tmp_path / "cache" / "dockyard-k8s" / "crds" / "kuberay"
    assert (fetched / "VERSION").read_text() == "KubeRay v1.7.0\n"
    assert main(["schemas", "list"]) == 0
    listing = capsys.readouterr().out
    rows = {tuple(line.split(None, 1)) for line in listing.splitlines() if line.startswith("  ray.io/")}
    assert ("ray.io/v1/RayService", "KubeRay v1.7.0 CRD (fetched)") in rows
    assert ("ray.io/v1/RayJob", "KubeRay v1.7.0 CRD (fetched)") in rows  # fetched wins over bundled


def test_schemas_fetch_unknown_release_and_bad_version(crd_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["schemas", "fetch", "--kuberay", "v1.7.0", "--from", crd_server + "/nope"]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["schemas", "fetch", "--kuberay", "latest", "--from", crd_server]) == 2
    assert not (tmp_path / "cache" / "dockyard-k8s" / "crds" / "kuberay").exists()


def test_schemas_fetch_offline_is_a_clear_failure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["schemas", "fetch", "--kuberay", "v1.7.0", "--from", "http://127.0.0.1:9/x"]) == 1
    assert "download failed" in capsys.readouterr().err


SCRIPT = str(REPO / "scripts" / "validate-manifests.sh")


def _script_env(tmp_path, validator):
    env = {k: v for k, v in os.environ.items() if k != "DOCKYARD"}
    env["VALIDATOR"] = validator
    env["DOCKYARD"] = str(REPO / ".venv" / "bin" / "dockyard-k8s")
    return env


@pytest.mark.slow
def test_validate_manifests_script_builtin_path(tmp_path):
    result = subprocess.run(["bash", SCRIPT], env=_script_env(tmp_path, "builtin"), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validating with builtin" in result.stdout
    assert "0 invalid" in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubeconform") is None, reason="kubeconform is not on PATH")
def test_validate_manifests_script_kubeconform_path(tmp_path):
    result = subprocess.run(["bash", SCRIPT], env=_script_env(tmp_path, "kubeconform"), capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validating with kubeconform" in result.stdout
