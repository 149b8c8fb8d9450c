"""`serve check` / `serve render` as a user runs them: exit codes, messages, files, start-up cost."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml
from serve_support import write_spec

from dockyard_k8s.cli import main
from support.cli import summary_line
from support.paths import REPO

EXAMPLES = REPO / "examples"


def test_check_prints_the_summary_and_the_apply_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "check", str(EXAMPLES / "llama3_8b_kind.serve.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("✔ llama-8b: endpoint valid, 7 objects rendered")
    for line in ("platform   kind", "rollout    Recreate", "url        http://llama-8b.llama.svc.cluster.local:8000/v1",
                 "1  PriorityClass gpu-inference", "7  PodDisruptionBudget llama/llama-8b",
                 "priority gpu-inference (created)", "runtimeClass nvidia"):
        assert line in out, line
    assert "✔ validated" in out


def test_check_of_a_bad_spec_exits_2_with_located_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, {"replicas": 2})
    assert main(["serve", "check", spec]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:6:13: serve.replicas: got 2 replicas sharing the cache claim" in err
    assert "1 problem(s); nothing was rendered or applied." in err
    assert "Traceback" not in err


def test_set_and_namespace_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    assert main(["serve", "render", spec, "-n", "other", "--set", "serve.replicas=1", "--set", "serve.gpus=2"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["metadata"]["namespace"] == "other"
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"


def test_render_to_a_directory_writes_a_kustomization_in_apply_order(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["serve", "render", str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml"), "--output-dir", str(out)]) == 0
    kust = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kust["sortOptions"] == {"order": "fifo"}
    assert kust["resources"][-2:] == ["05-podmonitor-llama-70b.yaml", "06-scaledobject-llama-70b.yaml"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*kust["resources"], "kustomization.yaml"])


def test_render_json_is_a_v1_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "render", write_spec(tmp_path), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "List" and [i["kind"] for i in doc["items"]][-3:] == ["Deployment", "Service",
                                                                                 "PodDisruptionBudget"]


def test_check_writes_the_resolved_config(tmp_path: Path) -> None:
    target = tmp_path / "resolved.json"
    assert main(["serve", "check", write_spec(tmp_path), "--output-file", str(target)]) == 0
    doc = json.loads(target.read_text())
    assert doc["config"]["serve"]["image"] == "vllm/vllm-openai:v0.11.0" and len(doc["objects"]) == 6


def test_a_missing_subcommand_or_stray_argument_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["serve", "check", write_spec(tmp_path), "extra=1"])
    assert info.value.code == 2


@pytest.mark.parametrize(("folder_name", "project", "tag"), [
    ("keda-v2.20.2", "kedacore/keda", "v2.20.2"),
    ("prometheus-v0.93.0", "prometheus-operator/prometheus-operator", "v0.93.0"),  # the PodMonitor (item 17)
])
def test_bundled_serve_crds_match_their_provenance(folder_name: str, project: str, tag: str) -> None:
    from dockyard_k8s.validate.crd import BUNDLED_DIR

    folder = os.path.join(BUNDLED_DIR, folder_name)
    with open(os.path.join(folder, "PROVENANCE.json")) as f:
        provenance = json.load(f)
    assert provenance["project"] == project and provenance["tag"] == tag
    assert sorted(provenance["files"]) == sorted(n for n in os.listdir(folder) if n.endswith(".yaml"))
    for name, info in provenance["files"].items():
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert (blob, len(data)) == (info["git_blob_sha1"], info["size"])


def test_check_says_which_scrape_mechanism_it_assumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """KEDA scales only on what Prometheus scrapes."""
    assert main(["serve", "check", str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")]) == 0
    out = capsys.readouterr().out  # the lines whole: tests/golden/messages/check-report.txt
    metrics = summary_line(out, "metrics")
    assert metrics.startswith("  metrics    PodMonitor llama-70b (prometheus-operator")
    assert "release=kube-prometheus-stack" in metrics and metrics.endswith("port http /metrics")
    scaling = summary_line(out, "scaling")
    assert "after 3 failed queries KEDA holds" in scaling and scaling.endswith("(at least 2)")
    assert main(["serve", "check", str(EXAMPLES / "llama3_8b_kind.serve.yaml")]) == 0
    metrics = summary_line(capsys.readouterr().out, "metrics")
    assert metrics.startswith("  metrics    prometheus.io/scrape annotations (")
    assert "serve.metrics.scrape: podMonitor" in metrics


def test_check_says_how_replicas_spread_and_what_default_deny_covers(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "check", str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml"),
                 "--set", "serve.network.scope=namespace"]) == 0
    out = capsys.readouterr().out  # the lines whole: tests/golden/messages/check-report.txt
    assert "(kubernetes.io/hostname, maxSkew 1, ScheduleAnyway)" in summary_line(out, "spread")
    network = summary_line(out, "network")
    assert "default-deny (every pod of namespace inference)" in network and "port 8000 from" in network


def test_check_says_who_may_use_the_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keyed = write_spec(tmp_path, {"apiKeySecret": {"name": "llama-keys"}})
    # the lines whole: tests/golden/messages/check-report.txt
    assert main(["serve", "check", keyed]) == 0
    auth = summary_line(capsys.readouterr().out, "auth")
    assert auth.startswith("  auth       API key from Secret llama-keys/api-key (")
    assert "/health and /metrics stay open" in auth and "admin" not in auth
    open_sglang = write_spec(tmp_path, {"backend": "sglang"}, name="sg.serve.yaml")
    assert main(["serve", "check", open_sglang]) == 0
    auth = summary_line(capsys.readouterr().out, "auth")
    assert auth.startswith("  auth       none: every caller") and "SGLang's admin endpoints" in auth
    sglang = write_spec(tmp_path, {"backend": "sglang", "apiKeySecret": {"name": "k"}}, name="sk.serve.yaml")
    assert main(["serve", "check", sglang]) == 0
    auth = summary_line(capsys.readouterr().out, "auth")
    assert auth.startswith("  auth       API key from Secret k/api-key (")
    assert "the admin key (Secret k/admin-api-key)" in auth and auth.endswith("which callers never get")


def test_serve_check_lists_what_must_already_exist(capsys: pytest.CaptureFixture[str]) -> None:
    """The same section as `check`, from the same reading of the objects."""
    assert main(["serve", "check", str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")]) == 0
    out = capsys.readouterr().out
    section = out.split("\nmust exist before `serve render | kubectl apply`", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in section.splitlines()[1:]]
    assert lines[0] == "Namespace inference"
    assert any(line.startswith("PriorityClass gpu-inference") for line in lines)
    assert any(line.startswith("Secret inference/hf-token") and "key token" in line for line in lines)
    assert any(line.startswith("PersistentVolumeClaim inference/fsx-claim") for line in lines)
