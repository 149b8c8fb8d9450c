"""Build, start and stop a real Kubernetes control plane on 127.0.0.1, for tests and for trying the tool.

    controlplane.py build            build (or reuse) every binary, cached by a key of all pins
    controlplane.py up [--name N]    start the stack; prints the KUBECONFIG to use
    controlplane.py down [--name N]  stop it and delete its state
    controlplane.py env [--name N]   print `export KUBECONFIG=...` for a running stack
    controlplane.py status|logs ...  what runs, and a component's log

What runs (all on 127.0.0.1, no containers): etcd, kube-apiserver, kube-controller-manager and
kube-scheduler built from k8s.io/kubernetes, kwok (fake nodes and kubelets), started by kwokctl's
binary runtime; the real KubeRay operator and the real Kueue manager run beside them out of
cluster; rayhead.py stands in for every Ray head's dashboard. Pins and why: README.md here.

Standard library only (and PyYAML, a dependency of the project), so it runs before the venv too.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFESTS = HERE / "manifests"
KEDA_CRDS = REPO / "src/dockyard_k8s/validate/crds/keda-v2.20.2"

# What the build key covers: every file that decides what is built, and how.
KEY_FILES = ("pins.env", "go.mod", "go.sum", "cmd/etcd/main.go", "kuberay/go.mod", "kuberay/go.sum")
BUILD_SCRIPT_VERSION = "1"  # bump when the way binaries are built changes

# Kueue integrations served by the manager (and so webhooks registered). `pod` and `deployment`
# are left out on purpose: their webhooks would intercept every pod and Deployment of the cluster.
KUEUE_FRAMEWORKS = ("batch/job", "ray.io/rayjob", "ray.io/raycluster")
KUEUE_WEBHOOK_PATHS = ("batch-v1-job", "ray-io-v1-rayjob", "ray-io-v1-raycluster", "kueue-x-k8s-io-")
# Kueue's internal certificate is for <webhookServiceName>.<namespace>.svc; the API server runs in a
# mount namespace whose /etc/hosts maps that name to 127.0.0.1 (nothing else on the machine sees it).
WEBHOOK_HOST = "kueue-webhook-service.kueue-system.svc"
KUEUE_CONVERTED = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")

# Namespaces the test session uses; KubeRay watches these when started with --watch-test-namespaces
# (a namespace outside the list is how doctor's "operator does not watch the namespace" is tested).
TEST_NAMESPACES = ("default", "rl-research", *(f"e2e-{i}" for i in range(60)))


def pins() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (HERE / "pins.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.split("#")[0].strip()
    return out


def cache_root() -> Path:
    explicit = os.environ.get("DOCKYARD_CP_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dockyard-k8s" / "controlplane"


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=readonly")
    env["GOTOOLCHAIN"] = env.get("GOTOOLCHAIN", "local")
    return env


def build_key() -> str:
    h = hashlib.sha256()
    for name in KEY_FILES:
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    h.update(BUILD_SCRIPT_VERSION.encode())
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, env=go_env(), check=True)
    h.update(go.stdout.strip().encode())
    return h.hexdigest()[:16]


def say(msg: str) -> None:
    print(f"controlplane: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- build


def bin_dir() -> Path:
    return cache_root() / f"bin-{build_key()}"


def cmd_build() -> Path:
    """Build every binary once per build key; a later build with the same pins reuses them."""
    target = bin_dir()
    if (target / "build.json").exists():
        say(f"reusing {target}")
        return target
    p = pins()
    version = p["KUBERNETES"]
    major, minor = version.lstrip("v").split(".")[:2]
    stamp = " ".join(
        f"-X {pkg}.{var}={val}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var, val in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean"))
    )
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    say(f"building the control plane into {target} (cold: about 8 min on 2 cores; warm: seconds)")
    times: dict[str, float] = {}
    env = go_env()
    started = time.monotonic()
    subprocess.run(["go", "mod", "download"], cwd=HERE, env=env, check=True)
    subprocess.run(["go", "mod", "download"], cwd=HERE / "kuberay", env=env, check=True)
    times["download_s"] = round(time.monotonic() - started, 1)
    t = time.monotonic()
    subprocess.run(["go", "build", "-trimpath", "-ldflags", f"-s -w {stamp}", "-o", f"{tmp}/", "tool", "./cmd/etcd"],
                   cwd=HERE, env=env, check=True)
    times["kubernetes_kwok_kueue_etcd_s"] = round(time.monotonic() - t, 1)
    t = time.monotonic()
    # KubeRay v1.6.2 needs controller-runtime v0.22 (Kueue v0.19 needs v0.24): its own module.
    subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", f"{tmp}/", "tool"],
                   cwd=HERE / "kuberay", env=env, check=True)
    times["kuberay_s"] = round(time.monotonic() - t, 1)
    sources = {
        "kueue": go_module_dir("sigs.k8s.io/kueue", HERE),
        "kuberay": go_module_dir("github.com/ray-project/kuberay/ray-operator", HERE / "kuberay"),
        "prometheus_operator": go_download_dir(f"github.com/prometheus-operator/prometheus-operator@{p['PROMETHEUS_OPERATOR']}"),
    }
    (tmp / "build.json").write_text(json.dumps({"pins": p, "times": times, "sources": sources}, indent=1) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    say(f"built in {time.monotonic() - started:.0f} s: {times}")
    return target


def go_download_dir(module_at_version: str) -> str:
    """A module's source directory, downloaded for its manifests only (nothing of it is built)."""
    out = subprocess.run(["go", "mod", "download", "-json", module_at_version], env={**go_env(), "GOFLAGS": "-mod=mod"},
                         cwd=HERE, capture_output=True, text=True, check=True)
    return str(json.loads(out.stdout)["Dir"])


def go_module_dir(module: str, cwd: Path) -> str:
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", module], cwd=cwd, env=go_env(),
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


# ---------------------------------------------------------------------------------------------- gomod

# The modules each pin names, and the main packages (go.mod `tool` lines) built from them.
MODULES = {"KUBERNETES": "k8s.io/kubernetes", "ETCD": "go.etcd.io/etcd/server/v3", "KWOK": "sigs.k8s.io/kwok",
           "KUEUE": "sigs.k8s.io/kueue"}
TOOLS = ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
         "k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl", "sigs.k8s.io/kwok/cmd/kwok",
         "sigs.k8s.io/kwok/cmd/kwokctl", "sigs.k8s.io/kueue/cmd/kueue")
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"


def go_mod_json(path: Path) -> dict[str, Any]:
    out = subprocess.run(["go", "mod", "edit", "-json", str(path)], env=go_env(), capture_output=True, text=True,
                         check=True)
    return dict(json.loads(out.stdout))


def staging_replaces(version: str) -> dict[str, str]:
    """k8s.io/kubernetes@version replaces each staging module by ./staging/src/...; outside its
    repository the same module is the matching v0.x tag: {module: tag}."""
    info = subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"], cwd=HERE,
                          env={**go_env(), "GOFLAGS": "-mod=mod"}, capture_output=True, text=True, check=True)
    upstream = go_mod_json(Path(json.loads(info.stdout)["GoMod"]))
    tag = "v0." + version.lstrip("v").split(".", 1)[1]
    return {r["Old"]["Path"]: tag for r in upstream.get("Replace") or []
            if r["New"]["Path"].startswith("./staging/")}


def staging_replaces_drift() -> list[str]:
    """How go.mod's replace block differs from what cmd_gomod generates (empty: it does not)."""
    want = staging_replaces(pins()["KUBERNETES"])
    have = {r["Old"]["Path"]: r["New"].get("Version", r["New"]["Path"])
            for r in go_mod_json(HERE / "go.mod").get("Replace") or []}
    return [f"{m}: go.mod has {have.get(m)}, k8s.io/kubernetes {pins()['KUBERNETES']} needs {want.get(m)}"
            for m in sorted(set(want) | set(have)) if want.get(m) != have.get(m)]


def cmd_gomod() -> None:
    """Regenerate both go.mod files from pins.env (then `go mod tidy`): the staging replaces come from
    the pinned k8s.io/kubernetes' own go.mod (`go install k8s.io/kubernetes/...@v` cannot work: a
    dependency's replace directives are ignored)."""
    p = pins()
    env = {**go_env(), "GOFLAGS": "-mod=mod"}
    current = go_mod_json(HERE / "go.mod")
    edits = [f"-dropreplace={r['Old']['Path']}" for r in current.get("Replace") or []]
    edits += [f"-replace={m}={m}@{tag}" for m, tag in sorted(staging_replaces(p["KUBERNETES"]).items())]
    edits += [f"-require={MODULES[k]}@{p[k]}" for k in MODULES]
    edits += [f"-tool={t}" for t in TOOLS]
    subprocess.run(["go", "mod", "edit", *edits], cwd=HERE, env=env, check=True)
    subprocess.run(["go", "mod", "tidy"], cwd=HERE, env=env, check=True)
    subprocess.run(["go", "mod", "edit", f"-require={KUBERAY_MODULE}@{p['KUBERAY']}", f"-tool={KUBERAY_MODULE}"],
                   cwd=HERE / "kuberay", env=env, check=True)
    subprocess.run(["go", "mod", "tidy"], cwd=HERE / "kuberay", env=env, check=True)
    say("go.mod and kuberay/go.mod regenerated from pins.env")


# ------------------------------------------------------------------------------------------------ up


@dataclass(frozen=True)
class Stack:
    """Where one named stack keeps its state."""

    name: str

    @property
    def run(self) -> Path:
        return cache_root() / "run" / self.name

    @property
    def kwok_workdir(self) -> Path:
        return cache_root() / "kwok"

    @property
    def kwok_cluster(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.kwok_cluster / "kubeconfig.yaml"

    @property
    def state_file(self) -> Path:
        return self.run / "stack.json"

    @property
    def egress_socket(self) -> Path:
        """The API server's ``cluster`` egress: HTTP CONNECT over this unix socket, to rayhead.py."""
        return self.run / "egress.sock"

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text()) if self.state_file.exists() else {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kwokctl(stack: Stack, bins: Path, *args: str, check: bool = True,
            hosts: Path | None = None) -> subprocess.CompletedProcess[str]:
    """kwokctl on this stack's cluster; with ``hosts``, in a private mount namespace whose /etc/hosts is
    that file, so the components it starts (the API server) resolve what the file says."""
    env = dict(os.environ, KWOK_WORKDIR=str(stack.kwok_workdir))
    argv = [str(bins / "kwokctl"), "--name", stack.name, *args]
    if hosts is not None:
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        argv = [*unshare, "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts), *argv]
    return subprocess.run(argv, env=env, text=True, capture_output=True, check=check)


def kubectl(stack: Stack, bins: Path, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(bins / "kubectl"), "--kubeconfig", str(stack.kubeconfig), *args], input=stdin,
                          text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"controlplane: kubectl {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def apply(stack: Stack, bins: Path, objects: list[dict[str, Any]]) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    kubectl(stack, bins, "apply", "--server-side", "--force-conflicts", "--field-manager=controlplane", "-f", "-",
            stdin=json.dumps(doc))


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def egress_selector(stack: Stack) -> dict[str, Any]:
    """The API server's egress selector (--egress-selector-config-file): its ``cluster`` connections
    (pods/proxy, services/proxy, node proxy and the kubelet API: logs, exec, port-forward) are
    HTTP CONNECT over a unix socket, where rayhead.py serves a Ray head pod's dashboard itself, relays
    loopback addresses (kwok's kubelet) and refuses anything else: nothing dials kwok's fake pod IPs.
    The UDS transport is a plain unix socket (the TCP one always speaks TLS with a client certificate:
    k8s.io/apiserver pkg/server/egressselector). ``controlplane`` (URL-configured webhooks: Kueue's)
    and ``etcd`` are left out, so they stay direct."""
    path = str(stack.egress_socket)
    if len(path.encode()) >= 104:  # sun_path: 108 bytes on Linux, 104 elsewhere
        raise SystemExit(f"controlplane: the egress socket path {path} is too long for a unix socket: "
                         "set DOCKYARD_CP_CACHE to a shorter directory")
    return {"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
            "egressSelections": [{"name": "cluster", "connection": {
                "proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": path}}}}]}


# The fake fleet: CPU nodes for heads, submitters and sandboxes; GPU nodes shaped like AWS
# p4de.24xlarge (8 x A100 80GB, 4 EFA) and p5.48xlarge (8 x H100, 32 EFA), labelled as EKS and
# the NVIDIA GPU operator label them.
FLEET = (
    *(("cpu", i, "m6i.8xlarge", {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "500Gi"},
       {"node-role": "cpu"}) for i in range(3)),
    *(("p4de", i, "p4de.24xlarge", {"cpu": "96", "memory": "1152Gi", "pods": "110", "ephemeral-storage": "8Ti",
                                    "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"},
       {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a100"}) for i in range(3)),
    *(("p5", i, "p5.48xlarge", {"cpu": "192", "memory": "2048Gi", "pods": "110", "ephemeral-storage": "30Ti",
                                "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
       {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "k8s.amazonaws.com/accelerator": "nvidia-h100"}) for i in range(2)),
)


def node_objects() -> list[dict[str, Any]]:
    out = []
    for pool, i, itype, resources, labels in FLEET:
        name = f"{pool}-{i}"
        out.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": itype,
                                    "topology.kubernetes.io/region": "us-east-1",
                                    "topology.kubernetes.io/zone": f"us-east-1{'abc'[i % 3]}", **labels}},
            "status": {"allocatable": resources, "capacity": resources},
        })
    return out


def crd_objects(sources: dict[str, str]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    kuberay = Path(sources["kuberay"]) / "config/crd/bases"
    for name in ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml"):
        objs += load_yaml(kuberay / name)
    kueue = Path(sources["kueue"]) / "config/components/crd/bases"
    for path in sorted(kueue.glob("*.yaml")):
        objs += load_yaml(path)
    for path in sorted(KEDA_CRDS.glob("*.yaml")):
        objs += load_yaml(path)
    monitoring = Path(sources["prometheus_operator"]) / "example/prometheus-operator-crd"
    for name in ("monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_servicemonitors.yaml"):
        objs += load_yaml(monitoring / name)
    for obj in objs:  # CRDs from kustomize bases carry no namespace/annotations we need; drop status
        obj.pop("status", None)
    return objs


def kueue_webhooks(sources: dict[str, str], port: int) -> list[dict[str, Any]]:
    """Kueue's own webhook configurations, reached at https://WEBHOOK_HOST:PORT (a name the API server's
    hosts file maps to 127.0.0.1; Kueue's cert-controller injects the CA bundle)."""
    out = []
    for cfg in load_yaml(Path(sources["kueue"]) / "config/components/webhook/manifests.yaml"):
        cfg["metadata"] = {"name": "kueue-" + cfg["metadata"]["name"]}
        kept = []
        for hook in cfg.get("webhooks", []):
            path = hook["clientConfig"]["service"]["path"]
            if not any(part in path for part in KUEUE_WEBHOOK_PATHS):
                continue
            hook["clientConfig"] = {"url": f"https://{WEBHOOK_HOST}:{port}{path}"}
            kept.append(hook)
        cfg["webhooks"] = kept
        out.append(cfg)
    return out


def kueue_config(port: int, metrics: int, health: int, certs: Path) -> dict[str, Any]:
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics}"},
        "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": True, "webhookServiceName": "kueue-webhook-service",
                                   "webhookSecretName": "kueue-webhook-server-cert"},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }


def operator_records(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The operators as an in-cluster install shows them (a Deployment each, on a CPU node), so that
    `doctor` and users see what they would on a real cluster. The processes run out of cluster with
    the same arguments; kwok runs these pods."""
    def deployment(ns: str, name: str, labels: dict[str, str], image: str, args: list[str]) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"nodeSelector": {"node-role": "cpu"},
                                           "containers": [{"name": "manager", "image": image, "args": args}]}}},
        }
    kuberay_args = [a for a in state["kuberay_args"] if not a.startswith(("--kubeconfig", "--metrics", "--health"))]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ray-system"}},
        deployment("ray-system", "kuberay-operator",
                   {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator"},
                   f"quay.io/kuberay/operator:{pins()['KUBERAY']}", kuberay_args),
        deployment("kueue-system", "kueue-controller-manager",
                   {"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"},
                   f"registry.k8s.io/kueue/kueue:{pins()['KUEUE']}", ["--config=/controller_manager_config.yaml"]),
    ]


def container_logs(stack: Stack) -> dict[str, Any]:
    """kwok serves every container's log (`kubectl logs`, the launcher's `logs`) from one file."""
    path = stack.run / "container.log"
    stamp = "2026-01-01T00:00:00.000000000Z"
    path.write_text("".join(f"{stamp} stdout F {line}\n" for line in (
        "kwok: this container runs nothing; its log is served by kwok from the test control plane",
        "dockyard-e2e: hello from the fake kubelet")))
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs", "metadata": {"name": "all-containers"},
            "spec": {"selector": {}, "logs": [{"logsFile": str(path), "previousLogsFile": str(path), "follow": False}]}}


# The processes this Python process started: kept so that they are not reported as leaked while
# they run on purpose (and reaped by stop_pid when a test session stops them).
_CHILDREN: list[subprocess.Popen[bytes]] = []


def start(stack: Stack, name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
    log = stack.run / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, start_new_session=True)
    _CHILDREN.append(proc)
    (stack.run / "pids").mkdir(exist_ok=True)
    (stack.run / "pids" / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def wait_for(what: str, check: Any, timeout: float = 120.0, stack: Stack | None = None,
             log: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as e:  # noqa: BLE001 - anything means "not yet"
            last = e
        time.sleep(0.25)
    detail = f" (last error: {last})" if last else ""
    if stack is not None and log:
        path = stack.run / "logs" / f"{log}.log"
        if path.exists():
            detail += "\n--- " + str(path) + " (last 40 lines)\n" + "\n".join(path.read_text().splitlines()[-40:])
    raise SystemExit(f"controlplane: {what} not ready after {timeout:.0f} s{detail}")


def http_ok(url: str) -> bool:
    """GET on a loopback health endpoint answers 200 (the connection closed whatever happens)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=2)
    try:
        conn.request("GET", parts.path)
        return conn.getresponse().status == 200
    finally:
        conn.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def cmd_up(stack: Stack, *, watch_test_namespaces: bool = False, audit_policy: Path | None = None) -> None:
    if stack.state_file.exists():
        state = stack.state()
        if all(pid_alive(p) for p in state.get("pids", {}).values()) and kubectl(
                stack, Path(state["bin"]), "get", "--raw", "/readyz", check=False).returncode == 0:
            say(f"stack {stack.name} is already up")
            print_env(stack)
            return
        say(f"stack {stack.name} is stale: restarting it")
        cmd_down(stack)
    bins = cmd_build()
    build = json.loads((bins / "build.json").read_text())
    sources = build["sources"]
    started = time.monotonic()
    stack.run.mkdir(parents=True, exist_ok=True)
    (stack.run / "logs").mkdir(exist_ok=True)
    egress = stack.run / "egress-selector.yaml"
    egress.write_text(json.dumps(egress_selector(stack), indent=1))

    config = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
        "options": {"bindAddress": "127.0.0.1", "runtime": "binary",
                    "kubeApiserverBinary": str(bins / "kube-apiserver"),
                    "kubeControllerManagerBinary": str(bins / "kube-controller-manager"),
                    "kubeSchedulerBinary": str(bins / "kube-scheduler"),
                    "kwokControllerBinary": str(bins / "kwok"), "etcdBinary": str(bins / "etcd"),
                    "kubeAuthorization": True, "kubeAdmission": True,
                    "enableCRDs": ["Stage", "PortForward", "ClusterPortForward", "Logs", "ClusterLogs"]},
        "componentsPatches": [
            {"name": "etcd", "extraArgs": [{"key": "unsafe-no-fsync", "value": "true"}]},
            # Kueue's CRDs converted by its webhook, and webhooks at https://127.0.0.1 (no Service DNS).
            # The API server's connections to pods and kubelets go through rayhead.py (egress_selector).
            {"name": "kube-apiserver", "extraArgs": [{"key": "max-requests-inflight", "value": "1000"},
                                                     {"key": "max-mutating-requests-inflight", "value": "500"},
                                                     {"key": "egress-selector-config-file", "value": str(egress)}]},
        ],
    }
    if audit_policy is not None:  # the API server's audit log (bench/): kwok_cluster/logs/audit.log
        config["options"]["kubeAuditPolicy"] = str(audit_policy.resolve())  # type: ignore[index]
    (stack.run / "kwokctl.yaml").write_text(json.dumps(config, indent=1))
    say("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (kwokctl, binary runtime)")
    hosts = stack.run / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() + f"\n127.0.0.1 {WEBHOOK_HOST} {WEBHOOK_HOST}.cluster.local\n")
    proc = kwokctl(stack, bins, "create", "cluster", "--config", str(stack.run / "kwokctl.yaml"),
                   "--kubeconfig", "", "--wait", "60s", check=False, hosts=hosts)
    if proc.returncode != 0:
        raise SystemExit(f"controlplane: kwokctl create cluster failed:\n{proc.stdout}\n{proc.stderr}")
    wait_for("kube-apiserver /readyz",
             lambda: kubectl(stack, bins, "get", "--raw", "/readyz", check=False).returncode == 0)

    apply(stack, bins, load_yaml(MANIFESTS / "stages.yaml"))
    apply(stack, bins, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                        for ns in ("kueue-system", *TEST_NAMESPACES) if ns != "default"])
    apply(stack, bins, node_objects())
    apply(stack, bins, crd_objects(sources))
    kubectl(stack, bins, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")

    ports = {k: free_port() for k in ("kueue_webhook", "kueue_metrics", "kueue_health", "kuberay_metrics",
                                      "kuberay_health", "rayhead_proxy", "rayhead_control")}
    certs = stack.run / "kueue-certs"
    certs.mkdir(parents=True, exist_ok=True)
    kueue_cfg = stack.run / "kueue-config.yaml"
    kueue_cfg.write_text(json.dumps(kueue_config(ports["kueue_webhook"], ports["kueue_metrics"],
                                                 ports["kueue_health"], certs), indent=1))
    # Conversion of Kueue's served versions goes through its webhook, as its kustomize install sets up;
    # the webhook configurations exist before Kueue starts, so its cert-controller injects their CA.
    for plural in KUEUE_CONVERTED:
        patch = {"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": f"https://{WEBHOOK_HOST}:{ports['kueue_webhook']}/convert"}}}}}
        kubectl(stack, bins, "patch", "crd", f"{plural}.kueue.x-k8s.io", "--type=merge", "-p", json.dumps(patch))
    apply(stack, bins, [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                         "metadata": {"name": "kueue-webhook-server-cert", "namespace": "kueue-system"}}])
    apply(stack, bins, kueue_webhooks(sources, ports["kueue_webhook"]))

    kubeconfig = str(stack.kubeconfig)
    pids: dict[str, int] = {}
    say("starting the Ray head stand-in, the KubeRay operator and the Kueue manager")
    pids["rayhead"] = start(stack, "rayhead", [
        sys.executable, str(HERE / "rayhead.py"), "--kubeconfig", kubeconfig,
        "--proxy-port", str(ports["rayhead_proxy"]), "--control-port", str(ports["rayhead_control"]),
        "--egress-socket", str(stack.egress_socket)])
    kuberay_args = [
        f"--kubeconfig={kubeconfig}", "--enable-leader-election=false",
        f"--metrics-addr=127.0.0.1:{ports['kuberay_metrics']}",
        f"--health-probe-bind-address=127.0.0.1:{ports['kuberay_health']}",
        "--log-stdout-encoder=console",
    ]
    if watch_test_namespaces:
        kuberay_args.append("--watch-namespace=" + ",".join(TEST_NAMESPACES))
    # The operator reaches each head's dashboard at <cluster>-head-svc.<ns>.svc.cluster.local:8265
    # with Go's default transport: an HTTP proxy (the stand-in) answers for every head, no DNS needed.
    proxy = f"http://127.0.0.1:{ports['rayhead_proxy']}"
    pids["kuberay"] = start(stack, "kuberay", [str(bins / "ray-operator"), *kuberay_args],
                            env={"HTTP_PROXY": proxy, "http_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost",
                                 "no_proxy": "127.0.0.1,localhost"})
    pids["kueue"] = start(stack, "kueue", [
        str(bins / "kueue"), f"--config={kueue_cfg}", f"--kubeconfig={kubeconfig}",
        "--feature-gates=VisibilityOnDemand=false"])
    state = {"name": stack.name, "bin": str(bins), "kubeconfig": kubeconfig, "ports": ports, "pids": pids,
             "kuberay_args": kuberay_args, "watch_namespaces": list(TEST_NAMESPACES) if watch_test_namespaces else [],
             "pins": build["pins"]}
    stack.state_file.write_text(json.dumps(state, indent=1))

    wait_for("Ray head stand-in", lambda: http_ok(f"http://127.0.0.1:{ports['rayhead_control']}/healthz")
             and stack.egress_socket.is_socket(), stack=stack, log="rayhead")
    wait_for("KubeRay operator", lambda: http_ok(f"http://127.0.0.1:{ports['kuberay_health']}/readyz"),
             stack=stack, log="kuberay")
    wait_for("Kueue's webhook certificate", lambda: mount_secret(stack, bins, "kueue-system",
                                                                "kueue-webhook-server-cert", certs),
             stack=stack, log="kueue")
    wait_for("Kueue manager", lambda: http_ok(f"http://127.0.0.1:{ports['kueue_health']}/readyz"),
             stack=stack, log="kueue")
    wait_for("Kueue webhook server", lambda: port_open(ports["kueue_webhook"]), stack=stack, log="kueue")
    apply(stack, bins, operator_records(state))
    apply(stack, bins, [container_logs(stack)])
    wait_for("nodes Ready", lambda: nodes_ready(stack, bins), stack=stack)
    state["startup_s"] = round(time.monotonic() - started, 1)
    stack.state_file.write_text(json.dumps(state, indent=1))
    say(f"stack {stack.name} is up in {state['startup_s']} s")
    print_env(stack)


def mount_secret(stack: Stack, bins: Path, namespace: str, name: str, target: Path) -> bool:
    """What the kubelet's Secret volume does for an in-cluster Kueue: its keys as files in ``target``."""
    proc = kubectl(stack, bins, "-n", namespace, "get", "secret", name, "-o", "json", check=False)
    data = json.loads(proc.stdout).get("data") or {} if proc.returncode == 0 else {}
    if "tls.crt" not in data:
        return False
    for key, value in data.items():
        (target / key).write_bytes(base64.b64decode(value))
    return True


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def nodes_ready(stack: Stack, bins: Path) -> bool:
    out = kubectl(stack, bins, "get", "nodes", "-o", "json").stdout
    nodes = json.loads(out)["items"]
    ready = [n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True"
                                     for c in n.get("status", {}).get("conditions", []))]
    return len(nodes) == len(FLEET) and len(ready) == len(nodes)


def print_env(stack: Stack) -> None:
    state = stack.state()
    print(f"export KUBECONFIG={state['kubeconfig']}")
    print(f"export DOCKYARD_CP_RAYHEAD=http://127.0.0.1:{state['ports']['rayhead_control']}")


# ---------------------------------------------------------------------------------------------- down


def cmd_down(stack: Stack) -> None:
    state = stack.state()
    for name, pid in state.get("pids", {}).items():
        stop_pid(pid, name)
    bins = Path(state["bin"]) if state.get("bin") else None
    if bins is None or not (bins / "kwokctl").exists():
        candidates = sorted(cache_root().glob("bin-*/kwokctl"))
        bins = candidates[-1].parent if candidates else None
    if bins is not None and stack.kwok_cluster.exists():
        proc = kwokctl(stack, bins, "delete", "cluster", check=False)
        if proc.returncode != 0:
            say(f"kwokctl delete cluster: {proc.stderr.strip()}")
    shutil.rmtree(stack.kwok_cluster, ignore_errors=True)
    shutil.rmtree(stack.run, ignore_errors=True)
    say(f"stack {stack.name} is down")


def stop_pid(pid: int, name: str) -> None:
    """Stop a process we started (its own session), and only it: SIGTERM, then SIGKILL."""
    if not pid_alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    if pid_alive(pid):
        say(f"{name} did not stop on SIGTERM: killing it")
        os.killpg(pid, signal.SIGKILL)
    for child in [c for c in _CHILDREN if c.pid == pid]:
        child.wait(timeout=10)
        _CHILDREN.remove(child)


# ---------------------------------------------------------------------------------------- status/logs


def cmd_status(stack: Stack) -> int:
    state = stack.state()
    if not state:
        print(f"stack {stack.name}: not up")
        return 1
    print(f"stack {stack.name}: kubeconfig {state['kubeconfig']}, started in {state.get('startup_s', '?')} s")
    for name, pid in state["pids"].items():
        print(f"  {name:10} pid {pid:<8} {'running' if pid_alive(pid) else 'NOT RUNNING'}")
    proc = kwokctl(stack, Path(state["bin"]), "get", "components", check=False)
    print(proc.stdout.rstrip())
    return 0


def log_paths(stack: Stack) -> dict[str, Path]:
    paths = {p.stem: p for p in (stack.run / "logs").glob("*.log")}
    paths.update({p.stem: p for p in (stack.kwok_cluster / "logs").glob("*.log")})
    return paths


def cmd_logs(stack: Stack, component: str | None, tail: int) -> int:
    paths = log_paths(stack)
    if component is None or component not in paths:
        print("components: " + ", ".join(sorted(paths)))
        return 0 if component is None else 2
    lines = paths[component].read_text(errors="replace").splitlines()
    print("\n".join(lines[-tail:] if tail else lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/controlplane.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build or reuse the binaries; prints their directory")
    sub.add_parser("gomod", help="regenerate go.mod from pins.env (after changing a pin)")
    for name in ("up", "down", "env", "status", "logs"):
        p = sub.add_parser(name)
        p.add_argument("--name", default=os.environ.get("DOCKYARD_CP_NAME", "dockyard"),
                       help="the stack's name (default: dockyard; several may run at once)")
        if name == "up":
            p.add_argument("--watch-test-namespaces", action="store_true",
                           help="KubeRay watches only the test namespaces (default: every namespace)")
            p.add_argument("--audit-policy", type=Path, help="the API server's audit policy file (benchmarks)")
        if name == "logs":
            p.add_argument("component", nargs="?")
            p.add_argument("--tail", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "build":
        print(cmd_build())
        return 0
    if args.command == "gomod":
        cmd_gomod()
        return 0
    stack = Stack(args.name)
    if args.command == "up":
        cmd_up(stack, watch_test_namespaces=args.watch_test_namespaces, audit_policy=args.audit_policy)
    elif args.command == "down":
        cmd_down(stack)
    elif args.command == "env":
        if not stack.state_file.exists():
            print(f"controlplane: stack {stack.name} is not up (scripts/controlplane.sh up)", file=sys.stderr)
            return 1
        print_env(stack)
    elif args.command == "status":
        return cmd_status(stack)
    elif args.command == "logs":
        return cmd_logs(stack, args.component, args.tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
