"""A stand-in for the Ray head of every RayCluster on the test control plane.

kwok runs no containers, so no Ray head answers on a head pod. This process answers for all of
them, speaking the Ray Jobs REST API (``/api/jobs/``, ``/api/version``, ``/api/authentication_mode``)
the way a Ray 2.52 dashboard does, including token authentication (``Authorization: Bearer``
checked against the cluster's Secret, as ``RAY_AUTH_MODE=token`` does). It is reached two ways:

- by the KubeRay operator, as an HTTP proxy (``HTTP_PROXY``): the operator asks
  ``http://<cluster>-head-svc.<ns>.svc.cluster.local:8265/...`` and this process answers as that head;
- by ``kubectl port-forward`` (the launcher's way in): for every running head pod it opens a
  listener and creates kwok's ``PortForward`` for that pod, so the API server's port-forward goes
  through kwok to this process;
- by the API server's own connections into the cluster (pods/proxy, services/proxy, and the kubelet
  calls kwok serves: logs, exec, port-forward): the API server's ``cluster`` egress
  (``--egress-selector-config-file``) is HTTP CONNECT over this process's unix socket
  (``--egress-socket``). A CONNECT to ``<ip>:8265`` where ``<ip>`` is a running head pod's IP is
  answered here as that head's dashboard (token auth checked as for every caller); one to a loopback
  address (kwok's kubelet: the nodes' address is ``localhost``) is relayed to it; anything else is
  refused with 502 and logged. Nothing connects to kwok's fake pod IPs (a private range).

Ray jobs follow a script: by default RUNNING for a second, then SUCCEEDED. Tests register scripts
on the control port (``POST /script``) matched by RayJob name or submission id: per attempt, the
status steps, the logs and how many submitter pods fail first. A KubeRay submitter pod (label
``dockyard-k8s/fleet=submitter``) runs ``ray job submit``: its job appears when it runs, and the pod
completes (exit 0, whatever the job's result) when the job ends, as the real submitter does.
A head can be made an old Ray (``POST /heads`` ``{"match", "namespace", "ray_version"}``): below 2.52
it ignores the token (``RAY_AUTH_MODE`` is unknown there) and has no ``/api/authentication_mode``.

Standard library only (and PyYAML, a dependency of the project).
"""

from __future__ import annotations

import argparse
import base64
import ipaddress
import json
import os
import socket
import socketserver
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

RAY_VERSION = "2.52.1"
TOKEN_AUTH_SINCE = (2, 52)  # RAY_AUTH_MODE=token: an older Ray ignores the variable
DASHBOARD_PORT = 8265
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
DEFAULT_STEPS: list[list[Any]] = [["RUNNING", 1.0], ["SUCCEEDED", 0, "Job finished successfully."]]


# ------------------------------------------------------------------------------------- API client


class Kube:
    """Just enough of a Kubernetes client: JSON over HTTPS with the kubeconfig's client certificate."""

    def __init__(self, kubeconfig: str) -> None:
        cfg = yaml.safe_load(open(kubeconfig))
        ctx_name = cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name) if ctx_name else cfg["contexts"][0]["context"]
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        self.server = cluster["server"].rstrip("/")
        self.ssl = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        self.ssl.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))

    @staticmethod
    def _file(section: dict[str, Any], key: str) -> str:
        if section.get(key):
            return str(section[key])
        data = base64.b64decode(section[f"{key}-data"])
        tmp = tempfile.NamedTemporaryFile(delete=False, suffix=".pem")  # noqa: SIM115 - lives with the process
        tmp.write(data)
        tmp.close()
        return tmp.name

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self.ssl, timeout=10) as resp:  # noqa: S310 - loopback API server
            return json.loads(resp.read() or b"null")

    def get(self, path: str) -> Any:
        try:
            return self.call("GET", path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise


# ------------------------------------------------------------------------------------------ model


@dataclass
class Attempt:
    steps: list[list[Any]]
    logs: str = ""
    submitter_failures: int = 0


@dataclass
class Script:
    match: str
    namespace: str | None
    attempts: list[Attempt]
    used: int = 0  # jobs (attempts) started under this script

    def next_attempt(self) -> Attempt:
        attempt = self.attempts[min(self.used, len(self.attempts) - 1)]
        self.used += 1
        return attempt


@dataclass
class Job:
    namespace: str
    cluster: str
    submission_id: str
    entrypoint: str
    attempt: Attempt
    metadata: dict[str, Any] = field(default_factory=dict)
    runtime_env: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.time)
    stopped_at: float | None = None

    def state(self, now: float) -> tuple[str, str, float | None]:
        """(status, message, end time) the script says at ``now``."""
        if self.stopped_at is not None:
            return "STOPPED", "Job was intentionally stopped.", self.stopped_at
        t = self.created
        for step in self.attempt.steps:
            status, seconds = step[0], float(step[1]) if len(step) > 1 else 0.0
            message = step[2] if len(step) > 2 else ""
            if status in TERMINAL:
                return status, message, t
            if now < t + seconds:
                return status, message, None
            t += seconds
        last = self.attempt.steps[-1]
        return last[0], last[2] if len(last) > 2 else "", None

    def details(self, now: float) -> dict[str, Any]:
        status, message, end = self.state(now)
        return {
            "type": "SUBMISSION", "job_id": None, "submission_id": self.submission_id, "driver_info": None,
            "status": status, "entrypoint": self.entrypoint, "message": message,
            "error_type": "JOB_SUPERVISOR_ACTOR_DIED" if status == "FAILED" else None,
            "start_time": int(self.created * 1000), "end_time": int(end * 1000) if end else None,
            "metadata": self.metadata, "runtime_env": self.runtime_env,
            "driver_agent_http_address": None, "driver_node_id": None, "driver_exit_code": None,
        }

    def logs(self) -> str:
        return self.attempt.logs or f"submitted: {self.entrypoint}\n"


class Egress:
    """What came through the API server's ``cluster`` egress socket: the heads served, the loopback
    addresses dialled for it (the only addresses this process ever dials for the API server) and
    the CONNECTs refused (a pod IP that is no head's dashboard, any other address)."""

    MAX_REFUSED = 1000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.served: dict[str, int] = {}  # "<ip>:8265 ns/pod" -> requests answered as that head
        self.dialled: dict[str, int] = {}  # "127.0.0.1:<port>" -> tunnels
        self.refused: list[dict[str, Any]] = []

    def count(self, table: dict[str, int], key: str) -> None:
        with self.lock:
            table[key] = table.get(key, 0) + 1

    def refuse(self, target: str, why: str) -> None:
        print(f"rayhead: egress: refused CONNECT {target} ({why}): nothing dialled", file=sys.stderr, flush=True)
        with self.lock:
            self.refused.append({"target": target, "why": why, "time": time.time()})
            del self.refused[:-self.MAX_REFUSED]

    def report(self) -> dict[str, Any]:
        with self.lock:
            return {"served": dict(self.served), "dialled": dict(self.dialled), "refused": list(self.refused)}


class Heads:
    """Every Ray head of the cluster: their jobs, scripts and auth, shared by all listeners."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.lock = threading.RLock()
        self.jobs: dict[tuple[str, str, str], Job] = {}
        self.scripts: list[Script] = []
        self.submitter_failed: dict[str, int] = {}  # RayJob ns/name -> submitter pods failed on purpose
        self._auth_cache: dict[tuple[str, str], tuple[float, str | None]] = {}
        self.versions: list[tuple[str, str | None, str]] = []  # (match, namespace, Ray version): POST /heads
        self.egress = Egress()

    # --- which Ray a head runs (POST /heads: an old image)
    def ray_version(self, namespace: str, cluster: str) -> str:
        with self.lock:
            for match, ns, version in reversed(self.versions):
                if ns in (None, namespace) and (cluster == match or cluster.startswith(match)):
                    return version
        return RAY_VERSION

    def knows_token_auth(self, namespace: str, cluster: str) -> bool:
        try:
            version = tuple(int(p) for p in self.ray_version(namespace, cluster).split(".")[:2])
        except ValueError:
            return True
        return version >= TOKEN_AUTH_SINCE

    def head_at(self, ip: str) -> tuple[str, str, str] | None:
        """(namespace, cluster, pod) of the running Ray head pod whose IP is ``ip``, asked of the API
        server now (a pod's IP is reused once it is gone: never from a cache)."""
        query = urllib.parse.urlencode({"labelSelector": "ray.io/node-type=head",
                                        "fieldSelector": f"status.podIP={ip}"})
        for pod in (self.kube.get(f"/api/v1/pods?{query}") or {"items": []})["items"]:
            meta = pod["metadata"]
            if (pod.get("status") or {}).get("phase") == "Running" and not meta.get("deletionTimestamp"):
                return meta["namespace"], (meta.get("labels") or {}).get("ray.io/cluster", ""), meta["name"]
        return None

    # --- scripts
    def script_for(self, namespace: str, names: list[str]) -> Script | None:
        for script in reversed(self.scripts):
            if script.namespace not in (None, namespace):
                continue
            if any(n == script.match or n.startswith(script.match) for n in names if n):
                return script
        return None

    def new_job(self, namespace: str, cluster: str, submission_id: str, entrypoint: str, rayjob: str = "",
                metadata: dict[str, Any] | None = None, runtime_env: dict[str, Any] | None = None) -> Job:
        with self.lock:
            script = self.script_for(namespace, [rayjob, submission_id, cluster])
            attempt = script.next_attempt() if script else Attempt(DEFAULT_STEPS)
            job = Job(namespace, cluster, submission_id, entrypoint, attempt, metadata or {}, runtime_env or {})
            self.jobs[(namespace, cluster, submission_id)] = job
            return job

    # --- auth: what RAY_AUTH_MODE=token on this cluster's head would accept
    def token(self, namespace: str, cluster: str) -> str | None:
        key = (namespace, cluster)
        if not self.knows_token_auth(namespace, cluster):
            return None  # Ray < 2.52 answers everyone, whatever the cluster's authOptions say
        now = time.monotonic()
        cached = self._auth_cache.get(key)
        if cached and now - cached[0] < 2:
            return cached[1]
        token = None
        rc = self.kube.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{cluster}")
        auth = ((rc or {}).get("spec") or {}).get("authOptions") or {}
        if auth.get("mode") == "token":
            secret = self.kube.get(f"/api/v1/namespaces/{namespace}/secrets/{auth.get('secretName') or cluster}")
            data = ((secret or {}).get("data") or {}).get("auth_token")
            token = base64.b64decode(data).decode() if data else "\0no-secret"  # nothing can match
        self._auth_cache[key] = (now, token)
        return token

    @staticmethod
    def labelled_submitter(rayjob: dict[str, Any]) -> bool:
        """The RayJob's submitter pods carry dockyard-k8s/fleet=submitter (PodWatcher plays them)."""
        template = (rayjob.get("spec") or {}).get("submitterPodTemplate") or {}
        return ((template.get("metadata") or {}).get("labels") or {}).get("dockyard-k8s/fleet") == "submitter"

    def rayjob_with_job_id(self, namespace: str, job_id: str) -> dict[str, Any] | None:
        found = self.kube.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayjobs") or {"items": []}
        return next((j for j in found["items"] if (j.get("status") or {}).get("jobId") == job_id), None)


# ------------------------------------------------------------------------------------ HTTP: Ray API


class RayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    heads: Heads
    target: tuple[str, str] | None = None  # (namespace, cluster) of a port-forward listener
    tunnel: str | None = None  # the pod IP an egress CONNECT opened this connection to (EgressHandler)

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = (json.dumps(body) if content_type == "application/json" else str(body)).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _which(self) -> tuple[str, str, str] | None:
        """(namespace, cluster, path) of the request: the listener's cluster, the head pod the API
        server's CONNECT named, or the proxied host."""
        if self.target is not None:
            return self.target[0], self.target[1], urllib.parse.urlsplit(self.path).path
        if self.tunnel is not None:
            head = self.heads.head_at(self.tunnel)
            if head is None:
                return None
            # per request: the API server keeps a tunnel open and reuses it for the next pod with that IP
            self.heads.egress.count(self.heads.egress.served, f"{self.tunnel}:{DASHBOARD_PORT} {head[0]}/{head[2]}")
            return head[0], head[1], urllib.parse.urlsplit(self.path).path
        url = urllib.parse.urlsplit(self.path)
        host = url.hostname or ""
        parts = host.split(".")
        if len(parts) < 3 or parts[2] != "svc":
            return None
        service, namespace = parts[0], parts[1]
        svc = self.heads.kube.get(f"/api/v1/namespaces/{namespace}/services/{service}")
        cluster = ((svc or {}).get("metadata", {}).get("labels") or {}).get("ray.io/cluster")
        if not cluster:
            return None
        return namespace, cluster, url.path

    def _authorized(self, namespace: str, cluster: str, path: str) -> bool:
        if path.rstrip("/") in ("/api/authentication_mode", "/api/version"):
            return True
        token = self.heads.token(namespace, cluster)
        if token is None:
            return True
        # Ray reads `Authorization: Bearer <token>`, else `X-Ray-Authorization: Bearer <token>` (which
        # the KubeRay operator sends).
        header = self.headers.get("Authorization") or self.headers.get("X-Ray-Authorization") or ""
        given = header[len("Bearer "):] if header.startswith("Bearer ") else ""
        if not given:
            self._send(401, {"error": "Unauthorized: missing authentication token"})
            return False
        if given != token:
            self._send(403, {"error": "Forbidden: invalid authentication token"})
            return False
        return True

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}") if length else {}

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def _route(self, method: str) -> None:
        try:
            which = self._which()
            if which is None and self.tunnel is not None:
                # The head pod went while the API server kept this tunnel open: its connection is reset.
                self.close_connection = True
                return
            if which is None:
                self._send(502, {"error": f"no Ray head answers for {self.path}"})
                return
            namespace, cluster, path = which
            body = self._body() if method == "POST" else None
            if not self._authorized(namespace, cluster, path):
                return
            self._ray_api(method, namespace, cluster, path.rstrip("/") or "/", body)
        except Exception as e:  # noqa: BLE001 - a stand-in must answer, and say why
            self._send(500, {"error": f"{type(e).__name__}: {e}"})

    def _ray_api(self, method: str, namespace: str, cluster: str, path: str, body: Any) -> None:
        heads, now = self.heads, time.time()
        if path == "/api/version":
            self._send(200, {"version": "4", "ray_version": heads.ray_version(namespace, cluster),
                             "ray_commit": "stand-in"})
            return
        if path == "/api/authentication_mode" and not heads.knows_token_auth(namespace, cluster):
            self._send(404, "404: Not Found", content_type="text/plain")  # no such route before Ray 2.52
            return
        if path == "/api/authentication_mode":
            self._send(200, {"authentication_mode": "token" if heads.token(namespace, cluster) else "disabled"})
            return
        if path == "/api/jobs" and method == "GET":
            with heads.lock:
                jobs = [j.details(now) for (ns, c, _), j in heads.jobs.items() if (ns, c) == (namespace, cluster)]
            self._send(200, jobs)
            return
        if path == "/api/jobs" and method == "POST":
            sid = body.get("submission_id") or f"raysubmit_{int(now * 1000) % 10**12}"
            with heads.lock:
                if (namespace, cluster, sid) in heads.jobs:
                    self._send(400, {"error": f"Job with submission_id {sid} already exists. "
                                              "Please use a different submission_id."})
                    return
                heads.new_job(namespace, cluster, sid, body.get("entrypoint", ""), metadata=body.get("metadata"),
                              runtime_env=body.get("runtime_env"))
            self._send(200, {"job_id": sid, "submission_id": sid})
            return
        parts = path.split("/")  # ['', 'api', 'jobs', ID, ...]
        if len(parts) >= 4 and parts[:3] == ["", "api", "jobs"]:
            sid, rest = parts[3], "/".join(parts[4:])
            with heads.lock:
                job = heads.jobs.get((namespace, cluster, sid))
            if job is None and method == "GET" and not rest:
                # A RayJob whose submitter already ran `ray job submit` (an unlabelled default submitter).
                # A labelled submitter submits when its pod runs (PodWatcher), not when the operator
                # first asks: asked before, a real head has no such job yet (404), and a script's
                # submitter_failures must get the chance to fail that pod first.
                rayjob = heads.rayjob_with_job_id(namespace, sid)
                if rayjob is not None and (rayjob.get("status") or {}).get("rayClusterName") == cluster \
                        and not heads.labelled_submitter(rayjob):
                    job = heads.new_job(namespace, cluster, sid, rayjob["spec"].get("entrypoint", ""),
                                        rayjob=rayjob["metadata"]["name"])
            if job is None:
                self._send(404, {"error": f"Job {sid} does not exist"})
                return
            if method == "GET" and not rest:
                self._send(200, job.details(now))
            elif method == "GET" and rest == "logs":
                self._send(200, {"logs": job.logs()})
            elif method == "POST" and rest == "stop":
                status, _, _ = job.state(now)
                stopped = status not in TERMINAL
                if stopped:
                    job.stopped_at = now
                self._send(200, {"stopped": stopped})
            elif method == "DELETE" and not rest:
                status, _, _ = job.state(now)
                if status not in TERMINAL:
                    self._send(400, {"error": f"Job {sid} is not in a terminal state"})
                    return
                with heads.lock:
                    heads.jobs.pop((namespace, cluster, sid), None)
                self._send(200, {"deleted": True})
            else:
                self._send(404, {"error": f"no route {method} {path}"})
            return
        self._send(404, {"error": f"no route {method} {path}"})


# ------------------------------------------------------------------- the API server's cluster egress


def loopback(host: str) -> str | None:
    """The address to dial for a CONNECT to ``host``: a loopback IP as given, ``localhost`` as
    127.0.0.1 (the nodes' address: kwok serves their kubelet API on 127.0.0.1); None for anything
    else (no name is resolved)."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return str(ip) if ip.is_loopback else None


class EgressHandler(RayHandler):
    """One connection of the API server's ``cluster`` egress: ``proxyProtocol: HTTPConnect`` over a
    unix socket (k8s.io/apiserver pkg/server/egressselector: it writes ``CONNECT host:port HTTP/1.1``,
    expects 200, then speaks through the tunnel). A running head pod's dashboard is served here with
    RayHandler (the tunnel's requests are then this class's next requests); a loopback address is
    relayed; anything else is refused, never dialled."""

    def address_string(self) -> str:
        return "egress"

    def do_CONNECT(self) -> None:
        target = self.path
        if self.tunnel is not None:
            self._refuse(target, "a CONNECT inside a tunnel")
            return
        host, _, port_text = target.rpartition(":")
        port = int(port_text) if port_text.isdigit() else -1
        try:
            ip = str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            ip = ""
        try:
            head = self.heads.head_at(ip) if ip and port == DASHBOARD_PORT else None
        except Exception as e:  # the API server restarting: a head cannot be told from a pod
            self._refuse(target, f"cannot ask the API server which pod has this IP: {type(e).__name__}: {e}")
            return
        if head is not None:
            self._established()
            self.tunnel = ip  # the connection's next requests go to that head (RayHandler._which)
            return
        dial = loopback(host)
        if dial is None or not 0 < port < 65536:
            self._refuse(target, "not a running Ray head pod's dashboard, nor a loopback address")
            return
        self._relay(dial, port)

    def _established(self) -> None:
        self.send_response_only(200, "Connection established")
        self.end_headers()

    def _refuse(self, target: str, why: str) -> None:
        self.heads.egress.refuse(target, why)
        self.close_connection = True
        self._send(502, f"rayhead: CONNECT {target} refused: {why}\n", content_type="text/plain")

    def _relay(self, host: str, port: int) -> None:
        """The bytes both ways between the API server and ``host:port`` (kwok's kubelet API: TLS, logs,
        exec and port-forward streams), until either side closes."""
        self.close_connection = True
        try:
            upstream = socket.create_connection((host, port), timeout=10)
        except OSError as e:
            self.heads.egress.refuse(f"{host}:{port}", f"cannot connect: {e}")
            self._send(502, f"rayhead: cannot connect to {host}:{port}: {e}\n", content_type="text/plain")
            return
        self.heads.egress.count(self.heads.egress.dialled, f"{host}:{port}")
        upstream.settimeout(None)
        self._established()

        def to_upstream() -> None:
            try:
                while data := self.rfile.read1(65536):  # what the API server sent, buffered bytes first
                    upstream.sendall(data)
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                upstream.close()

        pump = threading.Thread(target=to_upstream, daemon=True)
        pump.start()
        try:
            while data := upstream.recv(65536):
                self.connection.sendall(data)
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        pump.join(timeout=30)
        upstream.close()


class EgressServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, heads: Heads) -> None:
        if os.path.exists(path):
            os.unlink(path)  # a previous stand-in's socket
        super().__init__(path, type("StackEgressHandler", (EgressHandler,), {"heads": heads}))


# ---------------------------------------------------------------------------------- HTTP: control


class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    heads: Heads

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, {"ok": True})
        elif self.path == "/egress":
            self._send(200, self.heads.egress.report())
        elif self.path == "/jobs":
            now = time.time()
            with self.heads.lock:
                jobs = [{"namespace": ns, "cluster": c, **j.details(now)} for (ns, c, _), j in self.heads.jobs.items()]
            self._send(200, jobs)
        else:
            self._send(404, {"error": self.path})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/script":
            attempts = [Attempt(a.get("steps") or DEFAULT_STEPS, a.get("logs", ""), int(a.get("submitter_failures", 0)))
                        for a in body.get("attempts") or [{}]]
            with self.heads.lock:
                self.heads.scripts.append(Script(body["match"], body.get("namespace"), attempts))
            self._send(200, {"ok": True})
        elif self.path == "/heads":  # {"match": cluster or RayJob name, "namespace": .., "ray_version": "2.46.0"}
            with self.heads.lock:
                self.heads.versions.append((body["match"], body.get("namespace"), str(body["ray_version"])))
                self.heads._auth_cache.clear()
            self._send(200, {"ok": True})
        elif self.path == "/reset":
            with self.heads.lock:
                self.heads.scripts.clear()
                self.heads.jobs.clear()
                self.heads.versions.clear()
                self.heads._auth_cache.clear()
            self._send(200, {"ok": True})
        else:
            self._send(404, {"error": self.path})


# ------------------------------------------------------------------------------ pods: the kubelet side


class PodWatcher:
    """Head pods get a listener and a kwok PortForward; submitter pods submit and end with their job."""

    def __init__(self, heads: Heads) -> None:
        self.heads = heads
        self.kube = heads.kube
        self.listeners: dict[tuple[str, str], tuple[ThreadingHTTPServer, str]] = {}  # (ns, pod) -> server, uid

    def loop(self) -> None:
        while True:
            try:
                self.heads_once()
                self.submitters_once()
            except Exception as e:  # noqa: BLE001 - the API server may restart under us
                print(f"rayhead: reconcile: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            time.sleep(0.3)

    def heads_once(self) -> None:
        pods = self.kube.get("/api/v1/pods?labelSelector=" + urllib.parse.quote("ray.io/node-type=head"))["items"]
        seen = set()
        for pod in pods:
            meta = pod["metadata"]
            key = (meta["namespace"], meta["name"])
            if (pod.get("status") or {}).get("phase") != "Running" or meta.get("deletionTimestamp"):
                continue
            seen.add(key)
            if key in self.listeners and self.listeners[key][1] == meta["uid"]:
                continue
            cluster = meta["labels"].get("ray.io/cluster", "")
            handler = type("PodRayHandler", (RayHandler,), {"heads": self.heads, "target": (key[0], cluster)})
            server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
            port = server.server_address[1]
            forward = {
                "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
                "metadata": {"name": key[1], "namespace": key[0],
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": key[1],
                                                  "uid": meta["uid"]}]},
                "spec": {"forwards": [{"target": {"address": "127.0.0.1", "port": port}}]},
            }
            path = f"/apis/kwok.x-k8s.io/v1alpha1/namespaces/{key[0]}/portforwards/{key[1]}"
            self.kube.call("PATCH", path + "?fieldManager=rayhead&force=true", forward,
                           content_type="application/apply-patch+yaml")
            old = self.listeners.pop(key, None)
            if old:
                old[0].shutdown()
            self.listeners[key] = (server, meta["uid"])
        for key in list(self.listeners):
            if key not in seen:
                self.listeners.pop(key)[0].shutdown()

    def submitters_once(self) -> None:
        selector = urllib.parse.quote("dockyard-k8s/fleet=submitter")
        pods = self.kube.get(f"/api/v1/pods?labelSelector={selector}")["items"]
        for pod in pods:
            status = pod.get("status") or {}
            meta = pod["metadata"]
            if status.get("phase") != "Running" or meta.get("deletionTimestamp"):
                continue
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])):
                continue
            ns = meta["namespace"]
            rayjob_name = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name") or ""
            rayjob = self.kube.get(f"/apis/ray.io/v1/namespaces/{ns}/rayjobs/{rayjob_name}") if rayjob_name else None
            if rayjob is None:
                continue
            rstatus = rayjob.get("status") or {}
            sid, cluster = rstatus.get("jobId"), rstatus.get("rayClusterName")
            if not sid or not cluster:
                continue
            key = (ns, cluster, sid)
            with self.heads.lock:
                job = self.heads.jobs.get(key)
                if job is None:
                    script = self.heads.script_for(ns, [rayjob_name, sid, cluster])
                    failures = script.attempts[min(script.used, len(script.attempts) - 1)].submitter_failures if script else 0
                    done = self.heads.submitter_failed.get(f"{ns}/{sid}", 0)
                    if done < failures:  # this submitter pod fails before it submits (a network blip)
                        self.heads.submitter_failed[f"{ns}/{sid}"] = done + 1
                        self.end_pod(pod, 1, "Error")
                        continue
                    job = self.heads.new_job(ns, cluster, sid, rayjob["spec"].get("entrypoint", ""), rayjob=rayjob_name)
            state, _, _ = job.state(time.time())
            if state in TERMINAL:
                # KubeRay's submitter runs `ray job submit --no-wait ...; ray job logs --follow ID`
                # (ray-operator/controllers/ray/common/job.go), and `ray job logs --follow` returns
                # when the job ends without an exit code of its own (ray dashboard/modules/job/cli.py):
                # the pod completes whatever the job's result.
                self.end_pod(pod, 0, "Completed")

    def end_pod(self, pod: dict[str, Any], code: int, reason: str) -> None:
        """What the kubelet reports when the submitter's `ray job submit` exits."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        containers = [{"name": c["name"], "image": c["image"], "ready": False, "restartCount": 0, "started": False,
                       "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now}}}
                      for c in pod["spec"]["containers"]]
        patch = {"status": {"phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": containers,
                            "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted",
                                            "lastTransitionTime": now},
                                           {"type": "ContainersReady", "status": "False", "reason": "PodCompleted",
                                            "lastTransitionTime": now}]}}
        meta = pod["metadata"]
        self.kube.call("PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status", patch,
                       content_type="application/strategic-merge-patch+json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--proxy-port", type=int, required=True)
    parser.add_argument("--control-port", type=int, required=True)
    parser.add_argument("--egress-socket", help="the unix socket the API server's cluster egress CONNECTs through")
    args = parser.parse_args()
    heads = Heads(Kube(args.kubeconfig))
    proxy = ThreadingHTTPServer(("127.0.0.1", args.proxy_port), type("ProxyRayHandler", (RayHandler,), {"heads": heads}))
    control = ThreadingHTTPServer(("127.0.0.1", args.control_port),
                                  type("Control", (ControlHandler,), {"heads": heads}))
    servers: list[socketserver.BaseServer] = [proxy, control]
    for server in (proxy, control):
        server.daemon_threads = True
    if args.egress_socket:
        servers.append(EgressServer(args.egress_socket, heads))
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"rayhead: proxy on 127.0.0.1:{args.proxy_port}, control on 127.0.0.1:{args.control_port}"
          + (f", the API server's cluster egress on {args.egress_socket}" if args.egress_socket else ""), flush=True)
    PodWatcher(heads).loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
