"""The Ray token on the live side: its Secret, and the credentials of every Ray Jobs request.

* ``run``/``cluster up`` call :func:`launch_secret` before applying anything: the run's
  Secret (``kuberay.auth.secretName`` or ``<run>-ray-auth``, key ``auth_token``) is created
  with a random token when it is missing, and never rewritten when it exists (a running
  cluster keeps its token). A Secret the user named must exist already. ``down`` deletes
  the launcher's Secret with the run (it carries the run label).
* ``run`` checks, in every launch mode, that the head refuses a request without the token
  (``GET /api/jobs/``: 401 or 403): attach mode before submitting (:func:`require_refused`),
  the other modes once the head pod is Ready, through the API server's pod proxy, which drops
  the caller's credentials (:func:`proxy_status`). An answer is a run with token auth OFF —
  an image with Ray < 2.52 ignores ``RAY_AUTH_MODE`` — and ends ``run`` with exit 1.
* ``job``, ``cluster dashboard`` and attach-mode ``run`` get the token from
  :func:`dashboard_token`: ``$RAY_AUTH_TOKEN`` if set, else the Secret of the run, of the
  attached cluster or of ``--cluster`` (its ``spec.authOptions``, or the ``RAY_AUTH_TOKEN``
  reference of its head container); :func:`check_head` asks the head whether it requires a
  token, so a head without authentication is reported, never silently used.

The token is only ever in a request header or the Secret's body: never printed, logged or
put into an error message.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.kinds import KINDS, RAYCLUSTER, ref
from dockyard_k8s.plain import Record
from dockyard_k8s.render.meta import labels
from dockyard_k8s.render.rayauth import TOKEN_KEY, TOKEN_VAR, create_command, enabled, secret_name

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle
    from dockyard_k8s.config.infra_types import InfraSpec
    from dockyard_k8s.live.client import KubeClient
    from dockyard_k8s.live.dashboard import RayTarget
    from dockyard_k8s.live.rayjobs import RayJobsClient

SECRET = KINDS["Secret"]
ENV_TOKEN = TOKEN_VAR  # the variable Ray's own CLI reads: an explicit token wins
ANONYMOUS_PATH = "/api/jobs/"  # the Jobs API's list: what an intruder asks first; needs the token with auth on
DASHBOARD_PORT = 8265


def create_hint(namespace: str, name: str) -> str:
    """How to create a token Secret by hand (render/rayauth.py's generator)."""
    return create_command(namespace, name)


def token_secret(infra: InfraSpec, token: str) -> dict[str, Any]:
    """The run's token Secret (pure: the token is passed in)."""
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name(infra), "namespace": infra["infra"]["namespace"],
                     "labels": labels(infra, "ray-auth")},
        "type": "Opaque",
        "data": {TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def new_token() -> str:
    return secrets.token_urlsafe(32)


def launch_secret(client: KubeClient, infra: InfraSpec, *,
                  make_token: Callable[[], str] = new_token) -> tuple[dict[str, Any] | None, str | None]:
    """What ``run`` does about the token Secret: (the Secret to apply with the run, with a random
    token) when it is missing; (None, its ref) when it exists and stays as it is; (None, None)
    when the run needs none (auth disabled, attach mode).

    Raises:
        ClusterError: a Secret named by ``kuberay.auth.secretName`` is missing, or a Secret has no
            ``auth_token`` key (nothing is applied then).
    """
    if not enabled(infra) or infra["launch"]["mode"] == "attach":
        return None, None
    ns, name = infra["infra"]["namespace"], secret_name(infra)
    what = ref("Secret", ns, name)
    have = client.get(SECRET, ns, name)
    if have is not None:
        if TOKEN_KEY not in (have.get("data") or {}):
            raise ClusterError(f"has no key {TOKEN_KEY!r}, which every Ray container reads its token from",
                               obj=what, hint=f"delete it and let `run` create it, or: {create_hint(ns, name)}")
        return None, what
    if infra["kuberay"]["auth"]["secretName"]:
        raise ClusterError("does not exist (kuberay.auth.secretName names it; the launcher only creates its own "
                           f"default Secret {infra['launch']['name']}-ray-auth)", obj=what, status=404,
                           hint=create_hint(ns, name))
    return token_secret(infra, make_token()), None


def read_token(client: KubeClient, namespace: str, name: str, key: str = TOKEN_KEY, *, what: str = "the Ray token",
               hint: str = "") -> str:
    """The token stored in Secret ``namespace/name`` (``what`` names it in errors: the Ray token,
    or another credential such as an endpoint's API key, with its own ``hint``).

    Raises:
        ClusterError: the Secret or its key is missing, or the value is not base64.
    """
    obj = ref("Secret", namespace, name)
    secret = client.get(SECRET, namespace, name)
    if secret is None:
        raise ClusterError(f"does not exist, so {what} cannot be read", obj=obj, status=404,
                           hint=hint or f"`dockyard-k8s run` creates it; or {create_hint(namespace, name)}")
    value = (secret.get("data") or {}).get(key)
    if not value:
        raise ClusterError(f"has no key {key!r} ({what})", obj=obj, hint=hint or create_hint(namespace, name))
    try:
        return base64.b64decode(value, validate=True).decode().strip()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise ClusterError(f"key {key!r} is not base64-encoded text", obj=obj) from e


def reads_token(obj: dict[str, Any]) -> bool:
    """Whether a rendered object's Ray containers read their token from a Secret (``run`` then
    reads or creates it: doctor checks those verbs)."""
    from dockyard_k8s.kube import pod_templates

    for t in pod_templates(obj):
        for c in (t.spec.get("containers") or []):
            for e in (c.get("env") or []) if isinstance(c, dict) else []:
                if isinstance(e, dict) and e.get("name") == TOKEN_VAR and "valueFrom" in e:
                    return True
    return False


def cluster_secret(rc: dict[str, Any]) -> tuple[str, str] | None:
    """(Secret, key) a RayCluster's Ray containers read their token from, or None (no token auth):
    ``spec.authOptions`` (KubeRay >= 1.5.1, secretName >= 1.6.0; without secretName the operator's Secret is named
    after the cluster), else the head container's ``RAY_AUTH_TOKEN`` reference."""
    spec = rc.get("spec") or {}
    options = spec.get("authOptions") or {}
    if options.get("mode") == "token" and not options.get("enableK8sTokenAuth"):
        return str(options.get("secretName") or (rc.get("metadata") or {}).get("name")), TOKEN_KEY
    head = (((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
    for e in head[0].get("env") or []:
        ref_ = ((e.get("valueFrom") or {}).get("secretKeyRef") or {}) if e.get("name") == TOKEN_VAR else {}
        if ref_.get("name"):
            return str(ref_["name"]), str(ref_.get("key") or TOKEN_KEY)
    return None


class TokenSource(Record):
    """Where a dashboard's token comes from: the environment, or a Secret key."""

    __slots__ = ("env", "namespace", "secret", "key")

    def __init__(self, env: bool = False, namespace: str = "", secret: str = "", key: str = TOKEN_KEY) -> None:
        self.env = env
        self.namespace = namespace
        self.secret = secret
        self.key = key

    def how_to_read(self) -> str:
        """A command that prints the token (for the web dashboard's login), never the token."""
        if self.env:
            return f"it is ${ENV_TOKEN}"
        return (f"kubectl -n {self.namespace} get secret {self.secret} -o jsonpath='{{.data.{self.key}}}' "
                "| base64 -d")


def _of_cluster(client: KubeClient | None, namespace: str, cluster: str) -> TokenSource | None:
    rc = client.get(RAYCLUSTER, namespace, cluster) if client is not None else None
    found = cluster_secret(rc) if rc else None
    return TokenSource(False, namespace, *found) if found else None


def token_source(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
                 env: Mapping[str, str] | None = None) -> TokenSource | None:
    """Where the target's token is, first match wins: ``$RAY_AUTH_TOKEN``; ``--cluster``'s
    Secret; the run's Secret (attach mode: ``kuberay.auth.secretName``, else the attached
    RayCluster's); None when nothing says (``--address`` alone, auth disabled)."""
    env = os.environ if env is None else env
    if env.get(ENV_TOKEN):
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


def dashboard_token(target: RayTarget, bundle: Bundle | None, client: KubeClient | None, *,
                    env: Mapping[str, str] | None = None) -> str | None:
    """The token for the target's Ray dashboard, or None when none is known (see :func:`token_source`)."""
    env = os.environ if env is None else env
    source = token_source(target, bundle, client, env=env)
    if source is None:
        return None
    if source.env:
        return env[ENV_TOKEN].strip()
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
                           status=401, hint=f"pass RECIPE (the run's Secret) or --cluster NAME, or export {ENV_TOKEN}")
    if mode != "token" and note is not None:
        why = "Ray < 2.52 or RAY_AUTH_MODE unset on the head" if mode is None else f"authentication_mode: {mode}"
        note(f"warning: the Ray head at {ray.address} does not require a token ({why}): whoever reaches its "
             "dashboard can run code on the cluster")


# --- does the head refuse a request without the token? ------------------------------------------


def refused(status: int) -> bool:
    return status in (401, 403)


def unauthenticated(where: str, status: int) -> str:
    """What an answer to a request without the token means."""
    return (f"{where} answered a request without the token (GET {ANONYMOUS_PATH}: HTTP {status}): Ray token "
            "authentication is OFF (the image's Ray is older than 2.52, which ignores RAY_AUTH_MODE, or the "
            "variable did not reach the head), so whoever reaches port 8265 can run code on the cluster")


def anonymous_status(address: str, *, transport: httpx2.BaseTransport | None = None) -> int:
    """The HTTP status of ``GET /api/jobs/`` sent to a dashboard without any credential.

    Raises:
        ClusterError: the dashboard cannot be reached.
    """
    try:
        with httpx2.Client(base_url=address, timeout=30.0, transport=transport) as http:
            return http.get(ANONYMOUS_PATH).status_code
    except httpx2.TransportError as e:
        raise ClusterError(f"cannot reach the Ray dashboard at {address}: {e}", obj="Ray dashboard") from e


def require_refused(address: str, *, transport: httpx2.BaseTransport | None = None) -> int:
    """attach mode, before anything is submitted: the head refuses a request without the token.

    Raises:
        ClusterError: it answered (token auth is off on the attached cluster).
    """
    status = anonymous_status(address, transport=transport)
    if not refused(status):
        raise ClusterError(unauthenticated(f"the Ray head at {address}", status) + "; nothing was submitted",
                           obj="Ray dashboard", hint="give the attached cluster an image with Ray >= 2.52 and "
                                                     "RAY_AUTH_MODE=token on its pods, or set kuberay.auth.mode: "
                                                     "disabled to submit to it anyway")
    return status


def head_pod(infra: InfraSpec, pods: Iterable[dict[str, Any]]) -> str | None:
    """The name of the run's Ready head pod, whose dashboard serves the Jobs API: the pod of fleet
    ``head`` (KubeRay's head, the job shape's one pod), or trainer pod 0 of the statefulset shape."""
    from dockyard_k8s.render.meta import FLEET_LABEL
    from dockyard_k8s.render.shapes import head_pod_name

    named = head_pod_name(infra) if infra["launch"]["mode"] == "statefulset" else None
    for pod in pods:
        meta = pod.get("metadata") or {}
        if not (meta.get("name") == named or (meta.get("labels") or {}).get(FLEET_LABEL) == "head"):
            continue
        if any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or []):
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
