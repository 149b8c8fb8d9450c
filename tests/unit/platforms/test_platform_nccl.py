"""The NCCL fabric test: the MPIJob against the real MPI Operator CRD, the output parser on
sample logs, the command's exit codes, and the live path with injected fakes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from platforms_support import CRDS, BundleOf

from dockyard_k8s.cli import main
from dockyard_k8s.render.nccl import nccl_mpijob, parse_all_reduce, run_and_summarize, summary_problems
from support.paths import EXAMPLES

DATA = Path(__file__).parent / "data"
MPIJOB_CRD = CRDS / "mpi-operator" / "kubeflow.org_mpijobs.yaml"
EKS = {"infra": {"platform": "eks", "instanceType": "p5.48xlarge", "image": "r.example.com/u:v1"}}


@pytest.fixture(scope="module")
def mpijob_crd() -> str:
    if not MPIJOB_CRD.exists():
        pytest.skip(f"MPI Operator CRD not found at {MPIJOB_CRD} (the shared/ folder is absent)")
    return str(MPIJOB_CRD)


def problems(mpijob: dict, crd: str) -> list[str]:
    """The project's validator, strict (unknown fields rejected at every level), on the real CRD."""
    from dockyard_k8s.validate.engine import ValidateOptions, validate_objects

    options = ValidateOptions(crd_sources=(crd,), use_bundled=False, use_fetched=False)
    return [f"{'.'.join(map(str, p.path))}: {p.message}" for p in validate_objects([mpijob], options)]


@pytest.mark.parametrize("spec", [EKS, {"infra": {"platform": "kind"}, "ncclTest": {"image": "r.example.com/n:v2"}},
                                  {"ncclTest": {"image": "r.example.com/n:v2", "nodes": 4}}],
                         ids=["eks", "kind", "generic"])
def test_mpijob_validates_against_the_crd_with_unknown_fields_rejected(bundle_of: BundleOf, mpijob_crd: str,
                                                                        spec: dict) -> None:
    assert problems(nccl_mpijob(bundle_of(spec).run.infra), mpijob_crd) == []


def test_the_validator_does_reject_unknown_fields(bundle_of: BundleOf, mpijob_crd: str) -> None:
    mpijob = nccl_mpijob(bundle_of(EKS).run.infra)
    mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["gpus"] = 8
    mpijob["spec"]["slotsPerWorkerr"] = 8
    found = problems(mpijob, mpijob_crd)
    assert len(found) == 2
    assert any("slotsPerWorkerr" in p for p in found) and any("gpus" in p for p in found)


def test_mpijob_uses_the_runs_gpu_nodes_and_platform(bundle_of: BundleOf) -> None:
    mpijob = nccl_mpijob(bundle_of({**EKS, "kuberay": {"trainer": {"replicas": 2}, "inference": {"replicas": 1}}}
                                ).run.infra)
    spec = mpijob["spec"]
    assert mpijob["apiVersion"] == "kubeflow.org/v2beta1" and spec["slotsPerWorker"] == 8
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3  # every GPU pod of the run: 2 trainer + 1 inference nodes
    pod = worker["template"]["spec"]
    c = pod["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert c["resources"]["limits"]["hugepages-2Mi"] == "5120Mi"
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "labelSelector"]["matchExpressions"][0]["values"] == ["nccl-worker"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}} in pod["volumes"]
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    assert cmd[cmd.index("-np") + 1] == "24" and cmd[cmd.index("-N") + 1] == "8"
    assert "FI_PROVIDER" in [cmd[i + 1] for i, w in enumerate(cmd) if w == "-x"]  # ranks start over ssh
    assert {"name": "FI_PROVIDER", "value": "efa"} in launcher["env"]
    assert cmd[cmd.index("/opt/nccl-tests/build/all_reduce_perf"):] == [
        "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1", "-c", "1", "-n", "100"]
    assert spec["runPolicy"]["activeDeadlineSeconds"] == 2400  # 1800 + the cold-pull padding
    assert mpijob["metadata"]["labels"]["dockyard-k8s/run"] == "grpo-swe"


def test_kind_worker_gets_the_nvidia_runtime_class(bundle_of: BundleOf) -> None:
    mpijob = nccl_mpijob(bundle_of({"infra": {"platform": "kind"}, "ncclTest": {"image": "r.example.com/n:v2"}}
                                ).run.infra)
    worker = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 1 and worker["template"]["spec"]["runtimeClassName"] == "nvidia"
    assert "runtimeClassName" not in mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]


def test_p5_log_summary() -> None:
    s = parse_all_reduce((DATA / "nccl_p5_2nodes.log").read_text())
    assert s.ranks == 16 and len(s.rows) == 28
    assert s.rows[0].size == 8 and s.rows[-1].size == 2**30
    assert s.rows[-1].oop_busbw == 435.30 and s.rows[-1].ip_busbw == 435.73
    assert s.avg_busbw == 179.17 and s.out_of_bounds == 0 and s.wrong == 0
    assert s.peak is not None and s.peak.size == 2**30
    assert summary_problems(s) == []
    assert summary_problems(s, min_busbw=400) == []
    assert "below --min-busbw 500" in summary_problems(s, min_busbw=500)[0]


def test_check_off_and_single_rank() -> None:
    s = parse_all_reduce((DATA / "nccl_single_gpu_check_off.log").read_text())
    assert s.ranks == 1 and len(s.rows) == 28
    assert all(r.ip_wrong is None for r in s.rows)
    assert s.wrong == 0 and max(r.ip_busbw for r in s.rows) == 0


def test_wrong_values_fail() -> None:
    s = parse_all_reduce((DATA / "nccl_wrong_values.log").read_text())
    bad = [r for r in s.rows if r.oop_wrong]
    assert [r.size for r in bad] == [2**20]
    assert s.out_of_bounds == 3 and s.wrong == 9
    assert "9 wrong value(s)" in summary_problems(s)[0]


def test_old_table_without_root_column() -> None:
    s = parse_all_reduce((DATA / "nccl_no_root_column.log").read_text())
    assert len(s.rows) == 28 and s.ranks == 8 and s.rows[-1].oop_busbw == pytest.approx(95.13, abs=0.01)


def test_old_float_error_column_and_noise() -> None:
    text = ("garbage line\n  1024  256  float  sum  10.5  0.10  0.10  0e+00  10.4  0.10  0.10  2e-07\n"
            "12 34 not numbers at all x y z w q r s\n")
    s = parse_all_reduce(text)
    assert [(r.size, r.oop_wrong, r.ip_wrong) for r in s.rows] == [(1024, 0, 1)]


def test_empty_log_is_a_failure() -> None:
    s = parse_all_reduce("mpirun: command not found\n")
    assert s.rows == [] and summary_problems(s) == ["no result rows"]


def test_cli_summarize_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nccl-test", "--summarize", str(DATA / "nccl_p5_2nodes.log")]) == 0
    out = capsys.readouterr().out
    assert "1G" in out and "435.73" in out and "✔ fabric OK" in out and "ranks: 16" in out
    assert main(["nccl-test", "--summarize", str(DATA / "nccl_p5_2nodes.log"), "--min-busbw", "500"]) == 1
    assert main(["nccl-test", "--summarize", str(DATA / "nccl_wrong_values.log")]) == 1
    assert "✖ 9 wrong value(s)" in capsys.readouterr().out
    assert main(["nccl-test", "--summarize", "/nonexistent.log"]) == 2
    assert main(["nccl-test"]) == 2


def test_cli_renders_the_eks_example(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DOCKYARD_K8S_DEFAULTS", raising=False)
    code = main(["nccl-test", str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "eks_p5.infra.yaml")])
    assert code == 0
    (obj,) = list(yaml.safe_load_all(capsys.readouterr().out))
    assert obj["kind"] == "MPIJob" and obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3


def test_cli_needs_an_image_off_eks(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DOCKYARD_K8S_DEFAULTS", raising=False)
    code = main(["nccl-test", str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")])
    assert code == 2
    assert "ncclTest.image: is required for nccl-test" in capsys.readouterr().err


def test_run_and_summarize_applies_waits_and_cleans_up() -> None:
    seen: list[str] = []
    job = {"kind": "MPIJob", "metadata": {"name": "r-nccl"}}
    log = (DATA / "nccl_p5_2nodes.log").read_text()
    summary = run_and_summarize(job, apply=lambda o: seen.append("apply"),
                                wait_launcher_logs=lambda o: seen.append("wait") or log,
                                delete=lambda o: seen.append("delete"))
    assert seen == ["apply", "wait", "delete"] and summary.ranks == 16

    def boom(o: dict) -> str:
        raise TimeoutError("launcher never finished")

    seen.clear()
    with pytest.raises(TimeoutError):
        run_and_summarize(job, apply=lambda o: seen.append("apply"), wait_launcher_logs=boom,
                          delete=lambda o: seen.append("delete"))
    assert seen == ["apply", "delete"]
