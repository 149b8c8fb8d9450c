"""The real kubectl against the fake API server served on 127.0.0.1, and the launcher against
the same server over HTTP: they must work, and see the same state.

Covers the oldest and the newest kubectl this machine image ships (``kubectl.1.27`` and
``kubectl.1.33``, on PATH or beside the ``kubectl`` it links to): ``apply --server-side``
of every rendered example (the golden files), ``get -l``, ``logs``, ``auth can-i``,
``wait``, ``delete -l``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from fake_http import serve, write_kubeconfig
from fakekube import FakeKube, bundled_crds
from flowkit import seed
from states import NS, RUN, owned_by_the_cluster, set_job, start_cluster

from support.cli import run_cli
from support.paths import EXAMPLES, GOLDEN

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
FINALIZER = "ray.io/rayjob-finalizer"  # KubeRay's on every RayJob (rayjob_controller.go)
KINDS = "rayjobs,rayclusters,deployments,services,configmaps,networkpolicies,poddisruptionbudgets,statefulsets,jobs"


def find_kubectl(version: str) -> str | None:
    name = f"kubectl.{version}"
    found = shutil.which(name)
    if found:
        return found
    default = shutil.which("kubectl")
    if default:
        beside = Path(os.path.realpath(default)).parent / name
        if beside.exists():
            return str(beside)
    return None


class Env(NamedTuple):
    fake: FakeKube
    kubeconfig: str

    def kubectl(self, binary: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, "--kubeconfig", self.kubeconfig, *args], capture_output=True, text=True,
                              timeout=timeout)

    def launcher(self, *argv: str) -> tuple[int, str, str]:
        return run_cli(*argv)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    fake = seed(FakeKube(namespaces=("default", NS, "dockyard")))
    for operator in ("kueue", "keda"):  # every kind a golden file holds is served
        fake.install_crds(bundled_crds(operator))
    fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-0"}, "status": {
        "allocatable": {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}]}})
    with serve(fake) as url:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", url, namespace=NS))
        monkeypatch.setenv("KUBECONFIG", kubeconfig)
        monkeypatch.delenv("DOCKYARD_K8S_DEFAULTS", raising=False)
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        yield Env(fake, kubeconfig)
    fake.shutdown()
    assert not fake.errors, "the fake API server failed:\n" + "\n".join(fake.errors)


def names(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(i["kind"], i["metadata"]["name"]) for i in items}


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_kubectl_and_the_launcher_agree(served: Env, version: str) -> None:
    binary = find_kubectl(version)
    if binary is None:
        pytest.skip(f"kubectl.{version} is not installed (this test needs the real kubectl {version})")
    env = served

    # every rendered example applies with the real kubectl's server-side apply
    r = env.kubectl(binary, "apply", "--server-side", "--force-conflicts", "-f", str(GOLDEN))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("serverside-applied") == sum(
        1 for f in GOLDEN.glob("*.yaml") for doc in f.read_text().split("\n---") if "kind:" in doc)

    # the grpo-swe run as the launcher applies it on top of kubectl's: same config, co-owned, no conflict
    r = env.kubectl(binary, "apply", "--server-side", "-f", str(GOLDEN / "grpo_swe.rayjob.yaml"))
    assert r.returncode == 0, r.stderr
    code, out, err = env.launcher("run", *ARGS, "--detach")
    assert code == 0, out + err
    # what KubeRay makes of the RayJob: its finalizer, its cluster and that cluster's pods, running
    job = env.fake.get("ray.io/v1", "RayJob", NS, RUN)
    env.fake.put({**job, "metadata": {**job["metadata"], "finalizers": [FINALIZER]}}, manager="kuberay-operator")
    owned_by_the_cluster(env.fake, start_cluster(env.fake))
    set_job(env.fake, "Running", "RUNNING")
    cluster = f"{RUN}-abcde"
    # kubectl made every rendered object already; the launcher adds only the Ray token Secret (never
    # rendered: it holds the token) and its launch record
    assert [line.split() for line in out.splitlines() if line.startswith("created")] == [
        ["created", "Secret", f"{NS}/{RUN}-ray-auth"], ["created", "ConfigMap", f"{NS}/{RUN}-launch"]]

    # get -l: kubectl and the launcher list the same objects of the run
    r = env.kubectl(binary, "get", KINDS, "-n", NS, "-l", f"dockyard-k8s/run={RUN}", "-o", "json")
    assert r.returncode == 0, r.stderr
    seen_by_kubectl = names(json.loads(r.stdout)["items"])
    code, out, _ = env.launcher("status", *ARGS, "-o", "json")
    seen_by_launcher = {(o["kind"], o["name"]) for o in json.loads(out)["objects"]}
    assert seen_by_launcher <= seen_by_kubectl
    assert ("RayJob", RUN) in seen_by_launcher and ("RayCluster", cluster) in seen_by_kubectl

    # logs: the same lines through both
    head = next(p for p in env.fake.all("v1", "Pod") if p["metadata"]["name"].startswith(f"{cluster}-head-"))
    container = head["spec"]["containers"][0]["name"]
    env.fake.add_log(NS, head["metadata"]["name"], container, ["ray head up", "dashboard on 8265"])
    r = env.kubectl(binary, "logs", "-n", NS, head["metadata"]["name"], "-c", container)
    code, out, err = env.launcher("logs", *ARGS, "--pod", head["metadata"]["name"], "-c", container)
    assert r.returncode == 0 and code == 0, r.stderr + err
    assert r.stdout == out == "ray head up\ndashboard on 8265\n"

    # auth can-i: one RBAC answer for both
    env.fake.deny("delete", "rayjobs", namespace=NS)
    r = env.kubectl(binary, "auth", "can-i", "delete", "rayjobs.ray.io", "-n", NS)
    assert (r.returncode, r.stdout.strip()) == (1, "no"), r.stderr
    assert env.kubectl(binary, "auth", "can-i", "get", "rayjobs.ray.io", "-n", NS).stdout.strip() == "yes"
    code, out, err = env.launcher("doctor", *ARGS, "-o", "json")
    assert out, err
    perms = next(c for c in json.loads(out)["checks"] if c["name"] == "permissions")
    assert perms["ok"] is False and "delete rayjobs.ray.io" in perms["detail"]
    env.fake.denied.clear()

    # wait: kubectl sees the RayJob complete when the launcher does
    waiter = threading.Thread(target=lambda: set_job(env.fake, "Complete", "SUCCEEDED"), daemon=True)
    env.fake.wait_for(lambda: True)
    r_wait: list[subprocess.CompletedProcess[str]] = []
    kubectl_wait = threading.Thread(target=lambda: r_wait.append(env.kubectl(
        binary, "wait", "-n", NS, "--for=jsonpath={.status.jobDeploymentStatus}=Complete", f"rayjob/{RUN}",
        "--timeout=30s")), daemon=True)
    kubectl_wait.start()
    env.fake.wait_watching("rayjobs")
    waiter.start()
    kubectl_wait.join(40)
    waiter.join(5)
    assert r_wait and r_wait[0].returncode == 0, r_wait[0].stderr if r_wait else "kubectl wait hung"
    code, out, _ = env.launcher("status", *ARGS, "-o", "json")
    assert json.loads(out)["main"]["state"] == "succeeded"

    # delete -l with kubectl, which waits for KubeRay's finalizer: the launcher then finds nothing
    def operator() -> None:  # KubeRay stops the Ray job of the RayJob being deleted, then releases it
        env.fake.wait_for(lambda: (env.fake.get("ray.io/v1", "RayJob", NS, RUN) or {}).get("metadata", {}).get(
            "deletionTimestamp"))
        env.fake.remove_finalizer("ray.io/v1", "RayJob", NS, RUN, FINALIZER)

    releaser = threading.Thread(target=operator, daemon=True)
    releaser.start()
    r = env.kubectl(binary, "delete", KINDS, "-n", NS, "-l", f"dockyard-k8s/run={RUN}")
    releaser.join(10)
    assert r.returncode == 0, r.stderr
    assert f'rayjob.ray.io "{RUN}" deleted' in r.stdout
    code, out, _ = env.launcher("status", *ARGS)
    assert code == 1 and "nothing of run grpo-swe" in out
    r = env.kubectl(binary, "get", "pods", "-n", NS, "-l", f"ray.io/cluster={cluster}", "-o", "name")
    assert r.stdout.strip() == ""  # the cluster's pods went with their owner
