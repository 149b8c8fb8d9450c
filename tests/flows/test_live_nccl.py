"""`nccl-test --run` against the fake API server: apply the MPIJob, wait for the launcher pod
(played here by a thread standing in for the MPI Operator), parse its log, clean up."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fakekube import FakeKube

from support.paths import EXAMPLES, REPO

LOG = REPO / "tests" / "unit" / "platforms" / "data" / "nccl_p5_2nodes.log"
ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "eks_p5.infra.yaml")]
# A bound that only ends a broken test, never decides a passing one (the launcher appears as
# soon as the MPIJob does, however loaded the machine is).
BOUND = 600


class MpiOperator:
    """When the MPIJob appears, create its launcher pod with a log and the given final phase.

    It waits on the fake's events for as long as the command runs (``stop`` ends it), never on
    a wall clock of its own: under load the command may take long to apply the MPIJob."""

    def __init__(self, fake: FakeKube, phase: str) -> None:
        self.fake, self.phase = fake, phase
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.play, daemon=True)
        self.thread.start()

    def job(self) -> Any:
        return next(iter(self.fake.all("kubeflow.org/v2beta1", "MPIJob")), None)

    def play(self) -> None:
        fake = self.fake
        if fake.wait_for(lambda: self.done.is_set() or self.job(), timeout=BOUND) is True:
            return  # the command ended without applying an MPIJob: its assertions say why
        job = self.job()
        ns, labels = job["metadata"]["namespace"], job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"][
            "metadata"]["labels"]
        name = f"{job['metadata']['name']}-launcher"
        fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
                  "spec": {"containers": [{"name": "launcher"}]}, "status": {"phase": "Running"}})
        fake.add_log(ns, name, "launcher", LOG.read_text().splitlines())
        fake.end_logs(ns, name, "launcher")
        fake.set_status("v1", "Pod", ns, name, {"phase": self.phase})

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def test_nccl_test_run_applies_waits_summarizes_and_cleans_up(cli: Any, fake: FakeKube) -> None:
    for ns in ("rl-research",):
        fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    operator = MpiOperator(fake, "Succeeded")
    r = cli("nccl-test", *ARGS, "--run", "--timeout", str(BOUND))
    operator.stop()
    assert r.code == 0, r.out + r.err
    assert "applying MPIJob" in r.out and "GB/s" in r.out
    assert fake.all("kubeflow.org/v2beta1", "MPIJob") == []  # deleted afterwards (no --keep)


def test_nccl_test_run_keep_and_low_bandwidth_fails(cli: Any, fake: FakeKube) -> None:
    operator = MpiOperator(fake, "Succeeded")
    r = cli("nccl-test", *ARGS, "--run", "--keep", "--timeout", str(BOUND), "--min-busbw", "100000")
    operator.stop()
    assert r.code == 1, r.out + r.err
    assert len(fake.all("kubeflow.org/v2beta1", "MPIJob")) == 1


def test_waiting_for_the_launcher_times_out_even_when_no_event_arrives(client: Any, fake: FakeKube) -> None:
    from dockyard_k8s.errors import ClusterError
    from dockyard_k8s.live.nccl import wait_launcher_logs

    job = {"metadata": {"name": "x-nccl", "namespace": "default",
                        "labels": {"dockyard-k8s/run": "x", "dockyard-k8s/fleet": "nccl-launcher"}}}
    with pytest.raises(ClusterError) as e:
        wait_launcher_logs(client, job, timeout=1)
    assert str(e.value) == "the NCCL launcher did not finish within 1s"


def test_nccl_test_run_uses_the_context_s_namespace_as_run_does(cli: Any, fake: FakeKube, tmp_path: Any) -> None:
    """An infra file that names no namespace: the MPIJob goes where `run` would put the run (the
    kubeconfig context's namespace, rl-research here), not to default."""
    bare = tmp_path / "bare.infra.yaml"
    bare.write_text("infra:\n  image: ghcr.io/acme/trainer:1.0\nncclTest:\n  image: ghcr.io/acme/nccl:1.0\n")
    fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rl-research"}})
    operator = MpiOperator(fake, "Succeeded")
    r = cli("nccl-test", ARGS[0], "--infra", str(bare), "--run", "--keep", "--timeout", str(BOUND))
    operator.stop()
    assert "applying MPIJob rl-research/" in r.out, r.out + r.err
