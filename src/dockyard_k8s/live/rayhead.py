"""Ray head access: where a run's Ray dashboard is, the Ray token, and the Ray Jobs REST client on it.

**Where** (:func:`dashboard_url`, :func:`ray_jobs`: ``job``, ``cluster dashboard``, attach-mode ``run``),
first match wins: ``--address``, ``launch.attach.address``, a RayCluster named by ``--cluster``, or the
run's own cluster (``launch.attach.cluster``, the bringup cluster, or the RayJob's
``status.rayClusterName``), reached through ``kubectl port-forward`` to ``<cluster>-head-svc:8265``.

**The Jobs API** (Ray docs, "Ray Jobs REST API"): ``POST /api/jobs/`` submit, ``GET /api/jobs/``
list, ``GET /api/jobs/{id}`` details, ``GET /api/jobs/{id}/logs``, ``POST /api/jobs/{id}/stop``,
``DELETE /api/jobs/{id}``: :class:`RayJobsClient` (a submission's body: :func:`prepare_submit`, pure).

**The token** (Ray >= 2.52: ``Authorization: Bearer <token>`` on every request;
``GET /api/authentication_mode``, public, says whether the head requires it): its Secret
(:func:`launch_secret`), where a dashboard's token comes from (:func:`token_source`) and the check
that the head refuses a request without it (:func:`require_refused`, :func:`proxy_status`) are
docs/security.md's "Ray token authentication".

The token is only ever in a request header (set once on the HTTP client) or the Secret's body:
never printed, logged or put into an error message.
"""
from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2

from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.kube import format_ref, pod_templates, true_conditions
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS, RAYCLUSTER, RAYJOB
from dockyard_k8s.live.portforward import port_forward
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import FLEET_LABEL
from dockyard_k8s.render.rayauth import TOKEN_KEY, TOKEN_VAR, create_command, enabled, secret_name
from dockyard_k8s.render.shapes import head_pod_name

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle
    from dockyard_k8s.config.infra_types import InfraSpec

DASHBOARD_PORT = 8265
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
ANONYMOUS_PATH = "/api/jobs/"  # the Jobs API's list: what an intruder asks first; needs the token with auth on
log = logging.getLogger("dockyard_k8s.live")


# --- the Ray Jobs REST API ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RayRequest:
    method: str
    path: str
    body: dict[str, Any] | None = None
    what: str = ""


def submission_id(run: str, entrypoint: str, runtime_env: dict[str, Any] | None) -> str:
    """Deterministic id: submitting the same run twice finds the first job instead of
    starting a duplicate (Ray rejects a reused submission_id)."""
    digest = hashlib.sha256(json.dumps([entrypoint, runtime_env or {}], sort_keys=True).encode()).hexdigest()
    return f"{run}-{digest[:10]}"


def replacement_id(base: str) -> str:
    """The id of a ``--replace`` submission: the run's id and a fresh suffix."""
    return f"{base}-{secrets.token_hex(3)}"


def latest_job(ray: RayJobsClient, base: str) -> dict[str, Any] | None:
    """The newest job of a run's submission id: ``base`` itself or a replacement of it."""
    found = ray.get(base)
    candidates = [j for j in ray.list() if str(j.get("submission_id") or "").startswith(base + "-")]
    if found:
        candidates.append(found)
    return max(candidates, key=lambda j: j.get("start_time") or 0, default=None)


def prepare_submit(entrypoint: str, *, sub_id: str | None = None, runtime_env: dict[str, Any] | None = None,
                   metadata: dict[str, str] | None = None) -> RayRequest:
    body = {"entrypoint": entrypoint, "submission_id": sub_id, "runtime_env": runtime_env, "metadata": metadata}
    return RayRequest("POST", "/api/jobs/", {k: v for k, v in body.items() if v}, "submit job")


AUTH_HINT = {
    401: "the head requires a Ray token: pass RECIPE (its Secret) or --cluster NAME, or export RAY_AUTH_TOKEN",
    403: "the Ray token was refused: the head was started with another one (RAY_AUTH_TOKEN, or the run's Secret "
         "changed after the cluster started)",
}


class RayJobsClient:
    def __init__(self, address: str, *, token: str | None = None, transport: httpx2.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, retries: int = 3) -> None:
        self.address = address.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx2.Client(base_url=self.address, transport=transport, timeout=httpx2.Timeout(30.0),
                                  headers=headers)
        self.sleep = sleep
        self.retries = retries

    def close(self) -> None:
        self.http.close()

    def call(self, req: RayRequest, *, missing_ok: bool = False) -> Any:
        for attempt in range(self.retries + 1):
            try:
                resp = self.http.request(req.method, req.path, json=req.body)
            except httpx2.TransportError as e:
                if attempt < self.retries:
                    self.sleep(0.5 * 2 ** attempt)
                    continue
                raise ClusterError(f"cannot reach the Ray dashboard at {self.address}: {e}", obj=req.what,
                                   hint="is the head running? `dockyard-k8s status` / check --address") from e
            if resp.status_code in (502, 503, 504) and attempt < self.retries:
                self.sleep(0.5 * 2 ** attempt)
                continue
            if resp.status_code == 404 and missing_ok:
                return None
            if resp.status_code >= 400:
                raise ClusterError(f"Ray dashboard answered {resp.status_code}: {resp.text.strip()[:300]}",
                                   obj=req.what, status=resp.status_code, hint=AUTH_HINT.get(resp.status_code, ""))
            try:
                return resp.json()
            except ValueError as e:
                raise ClusterError(f"unexpected answer from the Ray dashboard: {resp.text[:200]}",
                                   obj=req.what) from e
        raise AssertionError("unreachable")

    def auth_mode(self) -> str | None:
        """``token`` or ``disabled`` as the head reports it; None when it cannot say (Ray < 2.52)."""
        found = self.call(RayRequest("GET", "/api/authentication_mode", None, "authentication mode"), missing_ok=True)
        mode = found.get("authentication_mode") if isinstance(found, dict) else None
        return str(mode) if mode else None

    def submit(self, entrypoint: str, **kwargs: Any) -> str:
        return str(self.call(prepare_submit(entrypoint, **kwargs))["submission_id"])

    def list(self) -> list[dict[str, Any]]:
        return list(self.call(RayRequest("GET", "/api/jobs/", None, "list jobs")))

    def _job(self, method: str, job: str, action: str = "", *, missing_ok: bool = False) -> Any:
        return self.call(RayRequest(method, f"/api/jobs/{job}{action and '/' + action}", None, f"job {job}"),
                         missing_ok=missing_ok)

    def get(self, job: str) -> dict[str, Any] | None:
        found = self._job("GET", job, missing_ok=True)
        return dict(found) if found else None

    def logs(self, job: str) -> str:
        return str(self._job("GET", job, "logs").get("logs", ""))

    def stop(self, job: str) -> bool:
        return bool(self._job("POST", job, "stop").get("stopped"))

    def delete(self, job: str) -> bool:
        return bool(self._job("DELETE", job).get("deleted"))

    def wait(self, job: str, *, poll: float = 1.0) -> None:
        """Until the job is terminal. The Jobs REST API has no watch: this polls."""
        while (self.get(job) or {}).get("status") not in TERMINAL:
            self.sleep(poll)

    def follow_logs(self, job: str, *, poll: float = 1.0) -> Iterator[str]:
        """The job's log as it grows, each part once, until the job ends: the whole log
        (``GET /api/jobs/{id}/logs``) read every ``poll`` seconds, only its new part yielded. The
        status is read first, so the log read after a terminal one is complete."""
        seen = 0
        while True:
            info = self.get(job) or {}
            text = self.logs(job)
            if len(text) > seen:
                yield text[seen:]
                seen = len(text)
            if info.get("status") in TERMINAL:
                return
            self.sleep(poll)


def job_row(info: dict[str, Any]) -> list[str]:
    return [str(info.get("submission_id") or info.get("job_id") or "-"), str(info.get("status", "-")),
            str(info.get("entrypoint", ""))[:60], str(info.get("message") or "")[:60]]


# --- the Ray token: its Secret, and where a dashboard's token comes from -------------------------


def launch_secret(client: KubeClient, infra: InfraSpec) -> tuple[str | None, str | None]:
    """What ``run`` does about the token Secret: (a random token for the Secret it applies with the
    run, ``render.record.launch_objects``) when it is missing; (None, its ref) when it exists and
    stays as it is; (None, None) when the run needs none (auth disabled, attach mode).

    Raises:
        ClusterError: a Secret named by ``kuberay.auth.secretName`` is missing, or a Secret has no
            ``auth_token`` key (nothing is applied then).
    """
    if not enabled(infra) or infra["launch"]["mode"] == "attach":
        return None, None
    ns, name = infra["infra"]["namespace"], secret_name(infra)
    what = format_ref("Secret", ns, name)
    have = client.get(KINDS["Secret"], ns, name)
    if have is not None:
        if TOKEN_KEY not in (have.get("data") or {}):
            raise ClusterError(f"has no key {TOKEN_KEY!r}, which every Ray container reads its token from",
                               obj=what, hint=f"delete it and let `run` create it, or: {create_command(ns, name)}")
        return None, what
    if infra["kuberay"]["auth"]["secretName"]:
        raise ClusterError("does not exist (kuberay.auth.secretName names it; the launcher only creates its own "
                           f"default Secret {infra['launch']['name']}-ray-auth)", obj=what, status=404,
                           hint=create_command(ns, name))
    return secrets.token_urlsafe(32), None


def read_token(client: KubeClient, namespace: str, name: str, key: str = TOKEN_KEY, *, what: str = "the Ray token",
               hint: str = "") -> str:
    """The token stored in Secret ``namespace/name`` (``what`` names it in errors: the Ray token,
    or another credential such as an endpoint's API key, with its own ``hint``).

    Raises:
        ClusterError: the Secret or its key is missing, or the value is not base64.
    """
    obj = format_ref("Secret", namespace, name)
    secret = client.get(KINDS["Secret"], namespace, name)
    if secret is None:
        raise ClusterError(f"does not exist, so {what} cannot be read", obj=obj, status=404,
                           hint=hint or f"`dockyard-k8s run` creates it; or {create_command(namespace, name)}")
    value = (secret.get("data") or {}).get(key)
    if not value:
        raise ClusterError(f"has no key {key!r} ({what})", obj=obj, hint=hint or create_command(namespace, name))
    try:
        return base64.b64decode(value, validate=True).decode().strip()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise ClusterError(f"key {key!r} is not base64-encoded text", obj=obj) from e


def reads_token(obj: dict[str, Any]) -> bool:
    """Whether a rendered object's Ray containers read their token from a Secret (``run`` then
    reads or creates it: doctor checks those verbs)."""
    return any(isinstance(e, dict) and e.get("name") == TOKEN_VAR and "valueFrom" in e
               for t in pod_templates(obj) for c in t.spec.get("containers") or []
               for e in ((c.get("env") or []) if isinstance(c, dict) else []))


def cluster_secret(rc: dict[str, Any]) -> tuple[str, str] | None:
    """(Secret, key) a RayCluster's Ray containers read their token from, or None (no token auth):
    ``spec.authOptions`` (KubeRay >= 1.5.1, secretName >= 1.6.0; without secretName the operator's Secret is named
    after the cluster), else the head container's ``RAY_AUTH_TOKEN`` reference."""
    spec = rc.get("spec") or {}
    options = spec.get("authOptions") or {}
    if options.get("mode") == "token" and not options.get("enableK8sTokenAuth"):
        return str(options.get("secretName") or (rc.get("metadata") or {}).get("name")), TOKEN_KEY
    for e in dig(spec, "headGroupSpec", "template", "spec", "containers", 0, "env") or []:
        ref_ = dig(e, "valueFrom", "secretKeyRef") or {}
        if e.get("name") == TOKEN_VAR and ref_.get("name"):
            return str(ref_["name"]), str(ref_.get("key") or TOKEN_KEY)
    return None


@dataclass(frozen=True, slots=True)
class TokenSource:
    """Where a dashboard's token comes from: the environment, or a Secret key."""

    env: bool = False
    namespace: str = ""
    secret: str = ""
    key: str = TOKEN_KEY

    def how_to_read(self) -> str:
        """A command that prints the token (for the web dashboard's login), never the token."""
        if self.env:
            return f"it is ${TOKEN_VAR}"
        return (f"kubectl -n {self.namespace} get secret {self.secret} -o jsonpath='{{.data.{self.key}}}' "
                "| base64 -d")


def _of_cluster(client: KubeClient | None, namespace: str, cluster: str) -> TokenSource | None:
    rc = client.get(RAYCLUSTER, namespace, cluster) if client is not None else None
    found = cluster_secret(rc) if rc else None
    return TokenSource(False, namespace, *found) if found else None


def token_source(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
                 env: Mapping[str, str] | None = None) -> TokenSource | None:
    """Where the target's token is, first match wins: ``$RAY_AUTH_TOKEN`` (Ray's own CLI reads it); ``--cluster``'s
    Secret; the run's Secret (attach mode: ``kuberay.auth.secretName``, else the attached
    RayCluster's); None when nothing says (``--address`` alone, auth disabled)."""
    env = os.environ if env is None else env
    if env.get(TOKEN_VAR):
        return TokenSource(env=True)
    if target.address and bundle is None:
        return None
    if target.cluster:
        ns = target.namespace or (client.default_namespace if client else "default")
        return _of_cluster(client, ns, target.cluster)
    if bundle is None:
        return None
    infra = bundle.run.infra
    ns = infra["infra"]["namespace"]
    if infra["launch"]["mode"] != "attach":
        return TokenSource(False, ns, secret_name(infra)) if enabled(infra) else None
    if infra["kuberay"]["auth"]["secretName"]:
        return TokenSource(False, ns, infra["kuberay"]["auth"]["secretName"])
    cluster = infra["launch"]["attach"]["cluster"]
    return _of_cluster(client, ns, cluster) if cluster else None


def dashboard_token(target: RayTarget, bundle: Bundle | None, client: KubeClient | None) -> str | None:
    """The token for the target's Ray dashboard, or None when none is known (see :func:`token_source`)."""
    source = token_source(target, bundle, client)
    if source is None:
        return None
    if source.env:
        return os.environ[TOKEN_VAR].strip()
    if client is None:
        return None
    return read_token(client, source.namespace, source.secret, source.key)


def check_head(ray: RayJobsClient, token: str | None, *, note: Callable[[str], None] | None = None) -> None:
    """Ask the head whether it requires a token (``/api/authentication_mode``, public).

    Raises:
        ClusterError: it requires one and none is known (instead of a 401 on the first call).
    """
    mode = ray.auth_mode()
    if mode == "token" and not token:
        raise ClusterError(f"the Ray head at {ray.address} requires a token and none was found", obj="Ray dashboard",
                           status=401, hint=f"pass RECIPE (the run's Secret) or --cluster NAME, or export {TOKEN_VAR}")
    if mode != "token" and note is not None:
        why = "Ray < 2.52 or RAY_AUTH_MODE unset on the head" if mode is None else f"authentication_mode: {mode}"
        note(f"warning: the Ray head at {ray.address} does not require a token ({why}): whoever reaches its "
             "dashboard can run code on the cluster")


# --- does the head refuse a request without the token? ------------------------------------------


def refused(status: int) -> bool | None:
    """What the status of ``GET /api/jobs/`` sent without any credential says of the head: True
    refused (401: Ray's token middleware answers a request without a token so; 403 is its answer to
    a wrong token, never to none), False answered (token auth is off), None not Ray's answer (a
    proxy or filter between us and the head: cannot tell)."""
    return True if status == 401 else False if 200 <= status < 300 else None


def unauthenticated(where: str, status: int) -> str:
    """What an answer to a request without the token means."""
    return (f"{where} answered a request without the token (GET {ANONYMOUS_PATH}: HTTP {status}): Ray token "
            "authentication is OFF (the image's Ray is older than 2.52, which ignores RAY_AUTH_MODE, or the "
            "variable did not reach the head), so whoever reaches port 8265 can run code on the cluster")


def require_refused(address: str, *, transport: httpx2.BaseTransport | None = None) -> int:
    """attach mode, before anything is submitted: the head refuses a request without the token
    (the HTTP status of ``GET /api/jobs/`` sent without any credential).

    Raises:
        ClusterError: it answered (token auth is off on the attached cluster), or cannot be reached.
        Any other status (not Ray's refusal, 401) is returned: the caller says it could not tell.
    """
    try:
        with httpx2.Client(base_url=address, timeout=30.0, transport=transport) as http:
            status = http.get(ANONYMOUS_PATH).status_code
    except httpx2.TransportError as e:
        raise ClusterError(f"cannot reach the Ray dashboard at {address}: {e}", obj="Ray dashboard") from e
    if refused(status) is False:
        raise ClusterError(unauthenticated(f"the Ray head at {address}", status) + "; nothing was submitted",
                           obj="Ray dashboard", hint="give the attached cluster an image with Ray >= 2.52 and "
                                                     "RAY_AUTH_MODE=token on its pods, or set kuberay.auth.mode: "
                                                     "disabled to submit to it anyway")
    return status


def head_pod(infra: InfraSpec, pods: Iterable[dict[str, Any]]) -> str | None:
    """The name of the run's Ready head pod, whose dashboard serves the Jobs API: the pod of fleet
    ``head`` (KubeRay's head, the job shape's one pod), or trainer pod 0 of the statefulset shape."""
    named = head_pod_name(infra) if infra["launch"]["mode"] == "statefulset" else None
    for pod in pods:
        meta = pod.get("metadata") or {}
        head = meta.get("name") == named or (meta.get("labels") or {}).get(FLEET_LABEL) == "head"
        if head and "Ready" in true_conditions(pod):
            return str(meta.get("name"))
    return None


def proxy_status(client: KubeClient, namespace: str, pod: str) -> tuple[int, bool]:
    """(HTTP status, whether the head answered it) of ``GET /api/jobs/`` sent to the head pod's
    dashboard through the API server's pod proxy: kube-apiserver drops the caller's credentials
    once it has authenticated them, so the head sees a request without any token. An answer
    that is the API server's own (a ``Status``: no right to ``pods/proxy``, the pod not
    serving yet) says nothing about the head."""
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}:{DASHBOARD_PORT}/proxy{ANONYMOUS_PATH}"
    try:
        resp = client.http.get(path, timeout=30.0)
    except httpx2.TransportError as e:
        raise ClusterError(f"cannot reach the API server at {client.server}: {e}", obj=f"Pod {namespace}/{pod}") from e
    try:
        doc = json.loads(resp.content) if resp.content else None
    except ValueError:
        doc = None
    own = isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("apiVersion") == "v1"
    return resp.status_code, not own


# --- where a run's Ray dashboard is, and a Jobs client on it ---------------------------------------


@dataclass(frozen=True, slots=True)
class RayTarget:
    """What the user named on the command line (all optional)."""

    address: str | None = None  # a dashboard URL: no port-forward
    cluster: str | None = None  # a RayCluster by name
    namespace: str | None = None  # the namespace of ``cluster`` (default: the context's)
    context: str | None = None  # kubeconfig context and file, for kubectl port-forward
    kubeconfig: str | None = None


def ray_cluster_of(main: dict[str, Any] | None, attach: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(RayCluster, dashboard address) a run's Ray jobs go to, from its main object as the cluster
    has it: the RayJob's ``status.rayClusterName``, the bringup RayCluster, or what attach mode names."""
    if main is not None and main.get("kind") == "RayJob":
        return (main.get("status") or {}).get("rayClusterName"), None
    if main is not None and main.get("kind") == "RayCluster":
        return str(main["metadata"]["name"]), None
    return attach.get("cluster"), attach.get("address")


def ray_cluster_name(client: KubeClient | None, bundle: Bundle) -> str:
    """The RayCluster a run's Ray jobs go to: attach.cluster, the bringup cluster, or the RayJob's."""
    launch = bundle.run.infra["launch"]
    ns, run = bundle.run.namespace, bundle.run.name
    if launch["mode"] == "attach":
        if launch["attach"]["cluster"]:
            return str(launch["attach"]["cluster"])
        raise UsageError("launch.attach names no cluster: pass --address or set launch.attach.cluster")
    if launch["mode"] == "rayjob" and client is not None:
        job = client.get(RAYJOB, ns, run)
        if job is None:
            up = client.get(RAYCLUSTER, ns, run) is not None  # `cluster up` of the same recipe: bringup mode
            raise ClusterError(f"no RayJob {ns}/{run} (the recipe's launch.mode is rayjob)", obj=f"RayJob {ns}/{run}",
                               hint=f"RayCluster {run} is up (bringup mode, `cluster up`): add --set "
                                    "launch.mode=bringup" if up else "`dockyard-k8s run RECIPE` starts it; "
                                    "`dockyard-k8s cluster up RECIPE` brings up a cluster for `job submit`")
        cluster, _ = ray_cluster_of(job, {})
        if not cluster:
            raise ClusterError("the RayJob has no RayCluster (yet)", obj=f"RayJob {ns}/{run}",
                               hint="`dockyard-k8s status` shows where it is")
        return str(cluster)
    return run


@contextlib.contextmanager
def dashboard_url(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
                  on_forward: Callable[[str], None] | None = None) -> Iterator[str]:
    """A Ray dashboard URL for ``target``; a port-forward, when needed, lives as long as the block.
    ``on_forward`` hears about the tunnel (the CLI prints it to stderr)."""
    if target.address:
        yield target.address
        return
    launch = bundle.run.infra["launch"] if bundle is not None else None
    if launch is not None and launch["mode"] == "attach" and launch["attach"]["address"]:
        yield str(launch["attach"]["address"])
        return
    if target.cluster:
        cluster = target.cluster
        ns = target.namespace or (client.default_namespace if client else "default")
    elif bundle is not None:
        cluster = ray_cluster_name(client, bundle)
        ns = bundle.run.namespace
    else:
        raise UsageError("say which Ray cluster: RECIPE, --cluster NAME or --address URL")
    service = f"svc/{cluster}-head-svc"
    if client is not None and client.get(KINDS["Service"], ns, f"{cluster}-head-svc") is None:
        # asked first through the launcher's client: an unreachable API server or a wrong name is
        # said plainly, not through kubectl's retries and memcache.go lines
        raise ClusterError(f"no Service {cluster}-head-svc in namespace {ns}: no RayCluster {cluster} there, or "
                           "KubeRay has not made its head Service yet", obj=f"RayCluster {ns}/{cluster}",
                           hint=f"`dockyard-k8s cluster list -n {ns}` lists the RayClusters")
    with port_forward(ns, service, DASHBOARD_PORT, context=target.context, kubeconfig=target.kubeconfig,
                      checked=client is not None) as url:
        if on_forward:
            on_forward(f"port-forward: {url} -> {ns}/{service}:{DASHBOARD_PORT}")
        yield url


@contextlib.contextmanager
def ray_jobs(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
             on_forward: Callable[[str], None] | None = None) -> Iterator[RayJobsClient]:
    """A Ray Jobs REST client on the target's dashboard, closed (and its tunnel ended) after the block.
    It carries the Ray token (:func:`dashboard_token`); ``on_forward`` also hears a head that asks for none."""
    with dashboard_url(target, bundle, client, on_forward=on_forward) as url:  # no cluster: said first
        token = dashboard_token(target, bundle, client)
        with contextlib.closing(RayJobsClient(url, token=token)) as ray:
            check_head(ray, token, note=on_forward)
            yield ray
