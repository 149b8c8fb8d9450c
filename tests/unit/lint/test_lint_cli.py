"""``dockyard-k8s lint`` on the command line: inputs, formats, exit codes."""

from __future__ import annotations

import json

import yaml
from lintkit import clean_set

from dockyard_k8s.cli import main
from support.paths import EXAMPLES

RECIPE = str(EXAMPLES / "grpo_swe.yaml")
INFRA = str(EXAMPLES / "grpo_swe.infra.yaml")


def _write(tmp_path, objs, name="m.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump_all(objs))
    return str(f)


def test_example_run_has_no_errors(capsys):
    assert main(["lint", RECIPE, "--infra", INFRA]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Deployment rl-research/grpo-swe-sandbox  (04-deployment-grpo-swe-sandbox.yaml)"
    assert "0 errors, 3 warnings, 31 info" in out
    assert "sandbox-isolation" not in out and "ray-token-auth" not in out


def test_set_feeds_the_lint_section(capsys):
    rc = main(["lint", RECIPE, "--infra", INFRA, "--set", "lint.ignore=[run-as-root,read-only-root-filesystem]",
               "--min-severity", "warning"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "0 errors, 1 warning, 23 info; 10 suppressed (read-only-root-filesystem x5 by lint.ignore, " \
           "run-as-root x5 by lint.ignore)" in out


def test_clean_manifests_exit_0_and_json(tmp_path, capsys):
    assert main(["lint", _write(tmp_path, clean_set()), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["exitCode"] == 0
    assert doc["findings"] == []


def test_infra_file_supplies_the_lint_section_for_manifests(tmp_path, capsys):
    objs = clean_set()
    objs[0]["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx"
    infra = tmp_path / "infra.yaml"
    infra.write_text("lint:\n  ignore: [image-tag]\n")
    assert main(["lint", _write(tmp_path, objs), "--infra", str(infra)]) == 0
    assert "1 suppressed (image-tag x1 by lint.ignore)" in capsys.readouterr().out


def test_sarif_to_a_file(tmp_path, capsys):
    target = tmp_path / "out.sarif"
    assert main(["lint", RECIPE, "--infra", INFRA, "-o", "sarif", "--output-file", str(target)]) == 0
    log = json.loads(target.read_text())
    assert log["version"] == "2.1.0"
    assert "0 errors" in capsys.readouterr().err


def test_an_output_file_that_is_a_directory_is_bad_input(tmp_path, capsys):
    assert main(["lint", RECIPE, "--infra", INFRA, "--output-file", str(tmp_path)]) == 2
    assert f"--output-file {tmp_path}: is a directory (expected a file name)" in capsys.readouterr().err


def test_explain_and_list_rules(capsys):
    assert main(["lint", "--explain", "gpu-shm"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("gpu-shm (warning)\nGPU pods need a memory-backed /dev/shm of a useful size\n")
    assert "follows: EKS RL manifests: /dev/shm Sizing" in text
    assert main(["lint", "--list-rules"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:3] == ["privileged-container", "error", "security"]


def test_bad_recipe_input_exits_2(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("a: 1\n")
    infra = tmp_path / "r.infra.yaml"
    infra.write_text("infra: {nope: 1}\n")
    assert main(["lint", str(recipe)]) == 2
    assert "infra.nope: unknown key" in capsys.readouterr().err


def test_rendered_directory_and_recipe_give_the_same_findings_and_lines(tmp_path, capsys):
    out_dir = tmp_path / "run"
    assert main(["render", RECIPE, "--infra", INFRA, "--output-dir", str(out_dir)]) == 0
    capsys.readouterr()
    main(["lint", str(out_dir), "-o", "json"])
    from_dir = json.loads(capsys.readouterr().out)["findings"]
    main(["lint", RECIPE, "--infra", INFRA, "-o", "json"])
    from_recipe = json.loads(capsys.readouterr().out)["findings"]

    def key(findings, strip):
        return [(f["rule"], f["path"], f["line"], f["file"].removeprefix(strip)) for f in findings]

    assert key(from_dir, f"{out_dir}/") == key(from_recipe, "")
    assert len(from_dir) == 34
