"""What users type without thinking: shell completion (bash, zsh, fish) generated from the
parser, --version, and "did you mean" for a mistyped command, action or flag."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from dockyard_k8s import __version__
from dockyard_k8s.cli import COMMANDS, main


def script(capsys: pytest.CaptureFixture[str], shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _bash_completer(text: str, cwd: Path, env: dict[str, str] | None = None) -> Callable[..., list[str]]:
    """What bash offers after ``dockyard-k8s WORDS...`` with this completion script sourced."""
    path = cwd / "dockyard-k8s.bash"
    path.write_text(text)

    def complete(*words: str) -> list[str]:
        line = " ".join(["dockyard-k8s", *words])
        probe = (f"source {path}; COMP_WORDS=(dockyard-k8s {' '.join(repr(w) for w in words)}); "
                 f"COMP_CWORD={len(words)}; COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; "
                 f"_shtab_dockyard_k8s dockyard-k8s {words[-1]!r} {words[-2] if len(words) > 1 else 'dockyard-k8s'!r}; "
                 "printf '%s\\n' \"${COMPREPLY[@]}\"")
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=60,
                              check=True, env=env)
        return done.stdout.split()

    return complete


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_bash_completes_commands_actions_choices_and_files(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    complete = _bash_completer(script(capsys, "bash"), tmp_path)
    (tmp_path / "recipe.yaml").write_text("a: 1\n")

    assert complete("sta") == ["status"]
    assert set(complete("")) >= set(COMMANDS)
    assert complete("job", "l") == ["list", "logs"]
    assert complete("logs", "x", "--fleet", "") == ["head", "trainer", "inference", "sandbox", "submitter"]
    assert "--follow" in complete("logs", "x", "--fo")
    assert "recipe.yaml" in complete("status", "rec")


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_bash_completes_the_output_formats_of_every_command(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    """-o FORMAT takes a format list that is no argparse choices (a path gets the --output-file hint):
    check, render, lint and plan once completed nothing after -o."""
    complete = _bash_completer(script(capsys, "bash"), tmp_path)
    assert complete("check", "x", "-o", "") == ["text", "json", "yaml"]
    assert complete("render", "x", "--output", "") == ["yaml", "json"]
    assert complete("lint", "x", "-o", "") == ["text", "json", "sarif"]
    assert complete("plan", "x", "-o", "") == ["text", "json"]
    assert complete("nccl-test", "x", "-o", "j") == ["json"]
    assert complete("serve", "render", "x", "-o", "") == ["yaml", "json"]
    assert complete("runs", "-o", "") == ["text", "wide", "name", "json", "yaml"]  # a choices list: as before


def _fake_runs(tmp_path: Path) -> dict[str, str]:
    """A ``dockyard-k8s`` on PATH that answers ``runs -o name`` as a cluster would: grpo-swe and
    grpo-tiny in the context's namespace, grpo-b in team-b (``-n team-b``, ``--namespace team-b``,
    ``--namespace=team-b``)."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dockyard-k8s"
    fake.write_text("#!/bin/sh\ncase \"$*\" in\n"
                    "  'runs -o name') printf 'grpo-swe\\ngrpo-tiny\\n' ;;\n"
                    "  'runs -o name -n team-b'|'runs -o name --namespace team-b'|'runs -o name --namespace=team-b')"
                    " printf 'grpo-b\\n' ;;\n"
                    "  *) exit 1 ;;\nesac\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_bash_completes_run_names_and_files_where_a_run_may_go(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    complete = _bash_completer(script(capsys, "bash"), tmp_path, _fake_runs(tmp_path))
    (tmp_path / "grpo.yaml").write_text("a: 1\n")
    for command in ("status", "logs", "down"):
        assert sorted(complete(command, "grpo")) == ["grpo-swe", "grpo-tiny", "grpo.yaml"]
    assert complete("job", "logs", "grpo-s") == ["grpo-swe"]
    assert complete("check", "grpo") == ["grpo.yaml"]  # check takes a recipe, never a run
    # the namespace the line names, as kubectl completes
    assert sorted(complete("status", "-n", "team-b", "grpo")) == ["grpo-b", "grpo.yaml"]
    assert sorted(complete("logs", "--namespace", "team-b", "grpo")) == ["grpo-b", "grpo.yaml"]


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed (apt-get install fish)")
def test_fish_completes_run_names_where_a_run_may_go(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "dockyard-k8s.fish"
    path.write_text(script(capsys, "fish"))
    (tmp_path / "grpo.yaml").write_text("a: 1\n")
    env = _fake_runs(tmp_path)

    def complete(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C {line!r}"],
                              capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path, env=env)
        return sorted(row.split("\t")[0] for row in done.stdout.splitlines())

    assert complete("dockyard-k8s status grpo") == ["grpo-swe", "grpo-tiny", "grpo.yaml"]
    assert complete("dockyard-k8s down -n team-b grpo") == ["grpo-b", "grpo.yaml"]
    assert complete("dockyard-k8s logs --namespace=team-b grpo") == ["grpo-b", "grpo.yaml"]


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed (apt-get install zsh)")
def test_zsh_completes_run_names_with_files(capsys: pytest.CaptureFixture[str]) -> None:
    text = script(capsys, "zsh")
    status = text.split("_shtab_dockyard_k8s_status_options=(", 1)[1].split("\n)", 1)[0]
    assert "the name of a run on the cluster:_dockyard_k8s_recipe_or_run" in status
    body = text.split("_dockyard_k8s_recipe_or_run() {", 1)[1].split("\n}", 1)[0]
    assert "_files" in body and "args=(runs -o name)" in body and "dockyard-k8s $args" in body
    assert "-n|--namespace|--context|--kubeconfig) args+=($words[i] $words[i+1])" in body
    assert "compadd -a runs" in body


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed (apt-get install zsh)")
def test_zsh_script_is_valid_and_knows_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = script(capsys, "zsh")
    path = tmp_path / "_dockyard-k8s"
    path.write_text(text)
    assert text.startswith("#compdef dockyard-k8s")
    subprocess.run(["zsh", "-n", str(path)], check=True, timeout=60)
    for name in COMMANDS:
        assert f"    {name}:" in text and f"_shtab_dockyard_k8s_{name.replace('-', '_')}_options" in text


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed (apt-get install fish)")
def test_fish_completes_commands_and_choices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "dockyard-k8s.fish"
    path.write_text(script(capsys, "fish"))

    def complete(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C {line!r}"],
                              capture_output=True, text=True, timeout=60, check=True)
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert complete("dockyard-k8s sta") == ["status"]
    assert complete("dockyard-k8s runs -o ") == ["text", "wide", "name", "json", "yaml"]
    assert "--all-namespaces" in complete("dockyard-k8s runs --all")


def test_completion_rejects_other_shells(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["completion", "csh"])
    assert e.value.code == 2 and "invalid choice: 'csh'" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"dockyard-k8s {__version__}\n"


@pytest.mark.parametrize(("argv", "said"), [
    (["stauts", "x"], "unknown command 'stauts'; did you mean 'status'?"),
    (["lgos"], "unknown command 'lgos'; did you mean 'logs'?"),
    (["zzz"], "unknown command 'zzz' (dockyard-k8s --help lists the commands)"),
    (["job", "lsit"], "invalid choice: 'lsit' (choose from 'submit', 'list', 'logs', 'stop'); did you mean 'list'?"),
    (["logs", "grpo-swe", "--follwo"], "unrecognized arguments: --follwo; did you mean '--follow'?"),
    (["runs", "--all-namepsaces"], "did you mean '--all-namespaces'?"),
    (["status"], "required: RECIPE|RUN (`dockyard-k8s runs` lists the runs of the namespace, `runs -A` of every"),
])
def test_did_you_mean(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    assert code == 2
    assert said in capsys.readouterr().err
