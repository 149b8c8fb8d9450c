"""One meaning per flag across commands: -o is the output format everywhere, files go to
--output-file/--output-dir, -f is an infra file (helm's -f) and never follow. The old forms
(`--format`, `-o PATH`, `-f` meaning follow) are gone (issue 23 §6: no released users had them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.cli import run_cli
from support.paths import EXAMPLES

RECIPE = str(EXAMPLES / "grpo_swe.yaml")
INFRA = str(EXAMPLES / "grpo_swe.infra.yaml")
NOTE = "note: "


def test_o_is_the_output_format_of_check_render_lint_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli("check", RECIPE, "-f", INFRA, "-o", "json")
    assert code == 0 and err == ""
    assert json.loads(out)["config"]["infra"]["namespace"] == "rl-research"
    code, out, _ = run_cli("check", RECIPE, "-f", INFRA, "-o", "yaml")
    assert yaml.safe_load(out)["objects"][-1]["kind"] == "RayJob"
    code, out, err = run_cli("render", RECIPE, "-f", INFRA, "-o", "json")
    assert code == 0 and json.loads(out)["kind"] == "List"
    assert [line.split(" (")[0] for line in err.splitlines()] == [  # the token Secret's generator only
        "note: Secret rl-research/grpo-swe-ray-auth"]
    code, out, err = run_cli("lint", RECIPE, "-f", INFRA, "-o", "json")
    assert "summary" in json.loads(out) and NOTE not in err
    code, out, err = run_cli("nccl-test", RECIPE, "-f", str(EXAMPLES / "eks_p5.infra.yaml"), "-o", "json")
    assert code == 0 and json.loads(out)["kind"] == "MPIJob"


def test_files_go_to_output_file_and_output_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.json"
    code, out, err = run_cli("check", RECIPE, "-f", INFRA, "--output-file", str(bundle))
    assert code == 0 and f"wrote {bundle}" in out and json.loads(bundle.read_text())["objects"]
    one = tmp_path / "run.yaml"
    code, out, _ = run_cli("render", RECIPE, "-f", INFRA, "--output-file", str(one))
    assert code == 0 and len(list(yaml.safe_load_all(one.read_text()))) > 3
    code, out, _ = run_cli("render", RECIPE, "-f", INFRA, "--output-dir", str(tmp_path / "dir"))
    assert code == 0 and (tmp_path / "dir" / "kustomization.yaml").exists()
    report = tmp_path / "lint.sarif"
    code, out, err = run_cli("lint", RECIPE, "-f", INFRA, "-o", "sarif", "--output-file", str(report))
    assert json.loads(report.read_text())["version"] == "2.1.0" and NOTE not in err


@pytest.mark.parametrize("argv", [
    ["render", RECIPE, "-f", INFRA, "--format", "json"],
    ["lint", RECIPE, "-f", INFRA, "--format", "json"],
    ["plan", "--list-instance-types", "--format", "json"],
])
def test_the_old_format_flag_is_refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert "unrecognized arguments: --format" in err


def test_a_mistyped_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli("render", RECIPE, "-f", INFRA, "-o", "jsn")
    assert code == 2
    assert "invalid choice: 'jsn' (choose from 'yaml', 'json'); did you mean 'json'?" in err


def test_f_is_the_infra_file_of_every_run_shaped_command() -> None:
    """logs and job logs take -f FILE as the others do."""
    from dockyard_k8s.cli import build_parser

    for argv in (["status", RECIPE, "-f", INFRA], ["logs", RECIPE, "-f", INFRA], ["down", RECIPE, "-f", INFRA],
                 ["job", "logs", RECIPE, "-f", INFRA], ["job", "submit", RECIPE, "-f", INFRA],
                 ["doctor", RECIPE, "-f", INFRA], ["run", RECIPE, "-f", INFRA]):
        args, _ = build_parser(argv[0]).parse_known_args(argv)
        assert args.infra == [INFRA], argv  # repeatable: a list (later files win)
        assert not getattr(args, "follow", False), argv


@pytest.mark.parametrize(("argv", "moved"), [
    (["--context", "prod", "status", "r"], ["status", "r", "--context", "prod"]),
    (["-n", "ml", "--kubeconfig=/k", "runs"], ["runs", "-n", "ml", "--kubeconfig=/k"]),
    (["--namespace=ml", "job", "submit", "r", "--", "python", "-n", "x"],
     ["job", "submit", "r", "--namespace=ml", "--", "python", "-n", "x"]),  # the job's own -n stays its own
    (["status", "r", "-n", "ml"], ["status", "r", "-n", "ml"]),  # already after: untouched
])
def test_cluster_flags_before_the_command_are_taken_as_kubectl_takes_them(argv: list[str], moved: list[str]) -> None:
    """`kubectl --context prod get pods` works; so does `dockyard-k8s --context prod status RUN`."""
    from dockyard_k8s.cli import _cluster_flags_after_command

    assert _cluster_flags_after_command(argv) == moved


def test_a_cluster_flag_before_a_command_without_it_is_unrecognized() -> None:
    r = run_cli("--context", "prod", "check", str(EXAMPLES / "grpo_swe.yaml"))
    assert r.code == 2 and "unrecognized arguments: --context" in r.err and "invalid choice" not in r.err
    ok = run_cli("-n", "elsewhere", "check", str(EXAMPLES / "grpo_swe.yaml"))
    assert ok.code == 0 and "namespace  elsewhere" in ok.out, ok.out + ok.err
