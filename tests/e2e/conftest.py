"""The live commands against a real control plane.

By default the session starts its own (``scripts/controlplane.sh up``: a real kube-apiserver, etcd,
controller-manager and scheduler, kwok's fake GPU nodes, the real KubeRay operator and Kueue
manager; e2e/controlplane/README.md) and stops it at the end, printing every component's log
tail when a test failed. ``DOCKYARD_E2E_KUBECONFIG=PATH`` runs the same tests on a cluster you
give instead (kind + KubeRay: the tests that need the stack's Ray head stand-in or fake fleet
skip there). ``DOCKYARD_E2E=0`` skips the tier (a quick local run); ``DOCKYARD_CP_KEEP=1`` keeps
the stack up after the session, and a later session reuses it.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.cli import Result, run_cli
from support.paths import REPO

sys.path.insert(0, str(REPO / "e2e" / "controlplane"))
import controlplane as cp
import readiness
from e2e_helpers import SMALL, example_args

EXTERNAL = os.environ.get("DOCKYARD_E2E_KUBECONFIG", "")
ENABLED = os.environ.get("DOCKYARD_E2E", "1") != "0"
# Resolved at import, before the per-test fixtures point HOME at a temporary directory.
CACHE = str(cp.cache_root())
STACK_NAME = os.environ.get("DOCKYARD_CP_NAME", "pytest" if os.environ.get("DOCKYARD_CP_KEEP") else
                            f"pytest-{os.getpid()}")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if ENABLED:
        return
    skip = pytest.mark.skip(reason="DOCKYARD_E2E=0: the real control plane tier is off")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@dataclass
class Cluster:
    """The cluster the e2e tests run on, and what they may do to it besides the launcher."""

    kubeconfig: str
    stack: cp.Stack | None = None  # None: a cluster given by DOCKYARD_E2E_KUBECONFIG
    ready: list[str] = field(default_factory=list)  # the readiness checks passed (readiness.gate)
    rayhead: str = ""  # the Ray head stand-in's control URL
    _namespaces: Iterator[str] = field(default_factory=lambda: iter(cp.TEST_NAMESPACES[2:]))

    @property
    def ours(self) -> bool:
        return self.stack is not None

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                kubeconfig: str | None = None) -> subprocess.CompletedProcess[str]:
        """The real kubectl (the one built with the stack when ours, else the one on PATH)."""
        exe = str(Path(self.stack.state()["bin"]) / "kubectl") if self.stack else "kubectl"
        proc = subprocess.run([exe, "--kubeconfig", kubeconfig or self.kubeconfig, *args], input=stdin, text=True,
                              capture_output=True, timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply(self, *objects: dict[str, Any]) -> None:
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=e2e-test", "-f", "-", stdin=doc)

    def namespace(self) -> str:
        """A namespace no other test of the session used (KubeRay watches it)."""
        ns = next(self._namespaces)
        if not self.ours:
            self.kubectl("create", "namespace", ns, check=False)
        return ns

    def script(self, match: str, *attempts: dict[str, Any], namespace: str | None = None) -> None:
        """What the Ray job of RayJob/submission ``match`` does, attempt by attempt (rayhead.py)."""
        if not self.rayhead:
            pytest.skip("needs the control plane's Ray head stand-in")
        body = json.dumps({"match": match, "namespace": namespace, "attempts": list(attempts) or [{}]}).encode()
        req = urllib.request.Request(f"{self.rayhead}/script", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5):
            pass

    def ray_jobs(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.rayhead}/jobs", timeout=5) as resp:
            return list(json.loads(resp.read()))

    def ray_version(self, match: str, version: str, namespace: str | None = None) -> None:
        """The Ray the heads of RayCluster (or RayJob) ``match`` run: below 2.52 a head ignores the
        token, as an old image ignores RAY_AUTH_MODE (rayhead.py)."""
        if not self.rayhead:
            pytest.skip("needs the control plane's Ray head stand-in")
        body = json.dumps({"match": match, "namespace": namespace, "ray_version": version}).encode()
        req = urllib.request.Request(f"{self.rayhead}/heads", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5):
            pass

    def egress(self) -> dict[str, Any]:
        """What came through the API server's cluster egress (rayhead.py ``Egress``): the heads it
        served, the addresses it dialled, the CONNECTs it refused."""
        with urllib.request.urlopen(f"{self.rayhead}/egress", timeout=5) as resp:
            return dict(json.loads(resp.read()))

    def wait(self, what: str, check: Callable[[], Any], timeout: float = 90.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.3)
        raise AssertionError(f"{what}: not within {timeout:.0f} s")


def _start() -> Cluster:
    if EXTERNAL:
        return Cluster(EXTERNAL)
    os.environ["DOCKYARD_CP_CACHE"] = CACHE
    stack = cp.Stack(STACK_NAME)
    try:
        cp.cmd_up(stack, watch_test_namespaces=True)
    except BaseException:
        cp.cmd_down(stack)  # nothing left running behind a session that could not start
        raise
    state = stack.state()
    found = Cluster(state["kubeconfig"], stack, rayhead=f"http://127.0.0.1:{state['ports']['rayhead_control']}")
    try:
        found.ready = readiness.gate(found)
    except BaseException:  # every e2e test errors with the check's message; the logs say why
        _keep_logs(stack)
        cp.cmd_down(stack)
        raise
    return found


_FAILED_LOGS: dict[str, list[str]] = {}


def _keep_logs(stack: cp.Stack) -> None:
    for name, path in sorted(cp.log_paths(stack).items()):
        _FAILED_LOGS[f"{name}: {path}"] = path.read_text(errors="replace").splitlines()[-30:]


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    found = _start()
    yield found
    if found.stack is None:
        return
    if request.session.testsfailed:  # kept for the summary: the stack's files go with it
        _keep_logs(found.stack)
    if not os.environ.get("DOCKYARD_CP_KEEP"):
        cp.cmd_down(found.stack)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int) -> None:
    """On a failed session, every component's last log lines: what the cluster did, beside what we said."""
    if not _FAILED_LOGS:
        return
    terminalreporter.section("control plane logs (last 30 lines each)")
    for name, lines in _FAILED_LOGS.items():
        terminalreporter.write_line(f"--- {name}")
        for line in lines:
            terminalreporter.write_line(line[:400])


@pytest.fixture
def e2e_cli(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """The launcher in process, its KUBECONFIG the cluster's."""
    monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig)
    return run_cli


_ids = itertools.count()


@pytest.fixture
def ns(cluster: Cluster) -> str:
    """A fresh namespace holding what the example run names and must find there: its image pull
    Secret and the W&B Secret its trainer env references (the PriorityClass is cluster-wide)."""
    name = cluster.namespace()
    cluster.apply(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-training"},
         "value": 100000, "description": "e2e: the example's priority class"},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ghcr-pull", "namespace": name},
         "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb", "namespace": name},
         "stringData": {"api-key": "e2e-not-a-key"}},
    )
    return name


@pytest.fixture
def example(cluster: Cluster, ns: str, e2e_cli: Callable[..., Result]) -> Iterator[Callable[..., list[str]]]:
    """``example(*extra, sets=SMALL)``: the example run's arguments in the test's namespace. At
    the end every run of the namespace is taken down (its pods go within seconds: the next test
    finds the fleet free)."""
    yield lambda *extra, sets=SMALL: example_args(ns, *extra, sets=sets)
    for name in e2e_cli("runs", "-n", ns, "-o", "name").out.split():
        e2e_cli("down", name, "-n", ns)
