"""The live benchmarks' access to the test control plane (e2e/controlplane/): a named stack started
with bench/audit-policy.yaml, its real kubectl, a concurrent writer, and its audit log."""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "e2e" / "controlplane"))

import controlplane as cp  # noqa: E402

POLICY = REPO / "bench" / "audit-policy.yaml"
LAUNCHER = str(REPO / ".venv" / "bin" / "dockyard-k8s")
EXAMPLE = [str(REPO / "examples" / "grpo_swe.yaml"), "--infra", str(REPO / "examples" / "grpo_swe.infra.yaml")]
RUN = "grpo-swe"
SMALL = ("kuberay.trainer.gpus=1", "kuberay.inference.gpus=1", "kuberay.trainer.replicas=1", "sandbox.replicas=1")


class Live:
    """A running stack: ``up`` starts it (with the audit policy) unless it is up already."""

    def __init__(self, name: str) -> None:
        self.stack = cp.Stack(name)
        if not self.stack.state_file.exists():
            cp.cmd_up(self.stack, audit_policy=POLICY)
        state = self.stack.state()
        self.kubeconfig = state["kubeconfig"]
        self.kubectl_bin = str(Path(state["bin"]) / "kubectl")
        self.rayhead = f"http://127.0.0.1:{state['ports']['rayhead_control']}"
        self.audit = self.stack.kwok_cluster / "logs" / "audit.log"
        if not self.audit.exists():
            sys.exit(f"stack {name} has no audit log: down it and let this script start it "
                     f"(scripts/controlplane.sh up --name {name} --audit-policy {POLICY})")
        config = json.loads(self.kubectl("config", "view", "--raw", "-o", "json"))
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        self.server = cluster["server"]
        self.ssl = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self.ssl.load_cert_chain(user["client-certificate"], user["client-key"])
        self._local = threading.local()

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run([self.kubectl_bin, "--kubeconfig", self.kubeconfig, *args], input=stdin, text=True,
                              capture_output=True)
        if check and proc.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def apply(self, *objects: dict[str, Any]) -> None:
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=doc)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        """One request on this thread's kept-alive connection."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            url = urllib.parse.urlsplit(self.server)
            conn = self._local.conn = http.client.HTTPSConnection(url.hostname or "", url.port, context=self.ssl,
                                                                   timeout=60)
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": "application/json"})
        resp = conn.getresponse()
        payload = resp.read()
        if resp.status >= 400 and resp.status != 409:  # 409: it exists already (a re-run)
            raise SystemExit(f"{method} {path}: {resp.status} {payload[:300]!r}")
        return dict(json.loads(payload))

    def create_many(self, path: str, objects: Iterable[dict[str, Any]], workers: int = 16) -> None:
        """POST every object (concurrently; each an ordinary create through the API)."""
        with ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(lambda o: self.request("POST", path, o), objects):
                pass

    def prepare_namespace(self, ns: str) -> None:
        """What the example run needs in ``ns`` (the e2e ``ns`` fixture's objects)."""
        self.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-training"},
             "value": 100000},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ghcr-pull", "namespace": ns},
             "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb", "namespace": ns},
             "stringData": {"api-key": "bench-not-a-key"}},
        )

    def audit_offset(self) -> int:
        return self.audit.stat().st_size

    def audit_since(self, offset: int) -> list[dict[str, Any]]:
        """The audit events written from ``offset`` on (complete lines)."""
        with self.audit.open("rb") as f:
            f.seek(offset)
            data = f.read()
        return [json.loads(line) for line in data.splitlines() if line.strip().endswith(b"}")]


def example_args(ns: str, *extra: str, sets: tuple[str, ...] = SMALL) -> list[str]:
    out = [*EXAMPLE, "-n", ns]
    for s in sets:
        out += ["--set", s]
    return [*out, *extra]


def requests_by(events: list[dict[str, Any]], agent_prefix: str) -> int:
    """Requests of one client (by its user agent) the API server completed."""
    return len({e["auditID"] for e in events if e.get("userAgent", "").startswith(agent_prefix)
                and e["stage"] in ("ResponseComplete", "Panic")})
