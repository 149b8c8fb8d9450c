"""`job` commands and attach-mode `run` against a real local Ray head (slow: starts Ray)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from fakekube import FakeKube

from support.paths import EXAMPLES

pytestmark = pytest.mark.slow

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


@pytest.fixture
def kubectl_forwarding_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_head: str) -> Path:
    """A `kubectl` whose port-forward "forwards" to the local Ray head and records its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "kubectl.args"
    port = urlparse(ray_head).port
    script = bindir / "kubectl"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {record}\n"
                      f"echo 'Forwarding from 127.0.0.1:{port} -> 8265'\nexec sleep 300\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_submit_wait_list_logs_and_idempotence(cli: Any, ray_head: str) -> None:
    r = cli("job", "submit", "--address", ray_head, "--entrypoint", "echo hello-from-ray", "--wait")
    assert r.code == 0, r.out + r.err
    assert "hello-from-ray" in r.out and "SUCCEEDED" in r.out
    job_id = r.out.split("submitted job ")[1].split()[0]
    again = cli("job", "submit", "--address", ray_head, "--entrypoint", "echo hello-from-ray")
    assert f"job {job_id} already submitted (SUCCEEDED)" in again.out
    # `ray job submit`'s form: the command after -- is the same entrypoint, so the same job
    dashed = cli("job", "submit", "--address", ray_head, "--", "echo", "hello-from-ray")
    assert f"job {job_id} already submitted (SUCCEEDED)" in dashed.out, dashed.out + dashed.err
    both = cli("job", "submit", "--address", ray_head, "--entrypoint", "echo", "--", "echo", "x")
    assert both.code == 2 and "give the command once: --entrypoint or after --, not both" in both.err
    listed = cli("job", "list", "--address", ray_head)
    as_json = cli("job", "list", "--address", ray_head, "-o", "json")
    assert job_id in {j["submission_id"] for j in __import__("json").loads(as_json.out)}
    assert job_id in listed.out and "SUCCEEDED" in listed.out
    logs = cli("job", "logs", "--address", ray_head, "--job", job_id)
    assert "hello-from-ray" in logs.out


def test_failed_job_exits_1_and_stop(cli: Any, ray_head: str) -> None:
    r = cli("job", "submit", "--address", ray_head, "--entrypoint", "sh -c 'echo bad; exit 3'", "--wait")
    assert r.code == 1 and "FAILED" in r.out
    started = cli("job", "submit", "--address", ray_head, "--entrypoint", "sleep 120")
    job_id = started.out.split("submitted job ")[1].split()[0]
    # without --wait it says how to follow the job, with the same target
    assert f"  logs: dockyard-k8s job logs --address {ray_head} --job {job_id} --follow" in started.out
    stopped = cli("job", "stop", "--address", ray_head, "--job", job_id)
    assert stopped.code == 0 and "stop requested" in stopped.out


def test_port_forward_via_kubectl_and_attach_mode_run(cli: Any, fake: FakeKube, ray_head: str,
                                                      kubectl_forwarding_to: Path) -> None:
    fake.put({"apiVersion": "v1", "kind": "Service",  # what KubeRay makes for the cluster's head
              "metadata": {"name": "my-cluster-head-svc", "namespace": "rl-research"}})
    r = cli("job", "list", "--cluster", "my-cluster", "-n", "rl-research")
    assert r.code == 0, r.err
    args = kubectl_forwarding_to.read_text().splitlines()
    assert args[:3] == ["port-forward", "-n", "rl-research"]
    assert "svc/my-cluster-head-svc" in args and ":8265" in args
    # attach mode: `run` applies the sandbox + recipe and submits the entrypoint through the Jobs API
    # the head runs without token auth: the run must say it does not ask for it (issue 22 item 20)
    no_auth = ["--set", "kuberay.auth.mode=disabled"]
    run = cli("run", *ARGS, *no_auth, "--set", "launch.mode=attach", "--set", "launch.attach.cluster=my-cluster",
              "--set", "launch.entrypoint=echo training with {recipe}")
    assert run.code == 0, run.out + run.err
    # the attached cluster has no recipe ConfigMap: the job writes the recipe its runtime_env carries
    assert "training with /tmp/dockyard-k8s/grpo-swe/recipe.yaml" in run.out and "SUCCEEDED" in run.out
    rerun = cli("run", *ARGS, *no_auth, "--set", "launch.mode=attach", "--set", "launch.attach.cluster=my-cluster",
                "--set", "launch.entrypoint=echo training with {recipe}", "--detach")
    assert "already submitted" in rerun.out


def test_attach_mode_replace_submits_under_a_fresh_id(cli: Any, fake: FakeKube, ray_head: str,
                                                      kubectl_forwarding_to: Path) -> None:
    """An immediate resubmission under the same id can meet the old job's supervisor actor
    dying on a real head; --replace submits a new id, and the run's commands follow it."""
    fake.put({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "my-cluster-head-svc",
                                                                  "namespace": "rl-research"}})
    sets = ["--set", "launch.mode=attach", "--set", "launch.attach.cluster=my-cluster",
            "--set", "launch.entrypoint=echo replaced-run {recipe}",
            "--set", "kuberay.auth.mode=disabled"]  # the head runs without token auth (issue 22 item 20)
    first = cli("run", *ARGS, *sets)
    assert first.code == 0, first.out + first.err
    first_id = first.out.split("submitted job ")[1].split()[0]
    again = cli("run", *ARGS, *sets, "--replace")
    assert again.code == 0, again.out + again.err
    second_id = again.out.split("submitted job ")[1].split()[0]
    assert second_id != first_id and second_id.startswith(first_id + "-")
    assert "replaced-run /tmp/dockyard-k8s/grpo-swe/recipe.yaml" in again.out
    rerun = cli("run", *ARGS, *sets, "--detach")
    assert f"job {second_id} already submitted" in rerun.out  # the newest submission is the run's job
    logs = cli("job", "logs", *ARGS, *sets)
    assert logs.code == 0 and "replaced-run" in logs.out
