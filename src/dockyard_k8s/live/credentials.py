"""The kubeconfig user's credentials as kubectl (client-go) obtains them: an ``exec`` plugin
(``aws eks get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``) or a ``tokenFile``.

Every way these fail is one located :class:`~dockyard_k8s.live.kubeconfig.KubeconfigError`
(exit 2) naming the user and the plugin, with what the plugin printed on stderr, never a
Python traceback:

* the plugin is not installed (its ``installHint`` is said when the kubeconfig has one);
* it exits non-zero (its stderr, last lines, is in the message);
* it runs longer than :data:`EXEC_TIMEOUT` seconds (client-go waits forever: a plugin that
  waits on a network that never answers would hang every command). A plugin that may ask
  the user something (``interactiveMode`` not ``Never`` and stdin a terminal: kubelogin's
  browser login) gets :data:`INTERACTIVE_EXEC_TIMEOUT`, and the terminal;
* it prints something that is not an ``ExecCredential`` of the configured apiVersion, or no
  ``status.token``;
* a ``tokenFile`` cannot be read.

As client-go: ``apiVersion`` must be ``client.authentication.k8s.io/v1`` or ``v1beta1``
(v1alpha1 was removed in Kubernetes 1.24), ``v1`` requires ``interactiveMode``, the plugin gets
``KUBERNETES_EXEC_INFO``, its token is kept until its ``expirationTimestamp`` and the plugin is
run again when the server answers 401. A token file is re-read on 401 (a rotated token).

:func:`single_config` turns the selected context into lightkube's ``SingleConfig`` with the same
kind of errors: a field of the wrong type, a ``*-data`` field that is not base64, and (at
connect, :func:`tls_problem`) a certificate or key file that cannot be loaded.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import os
import shlex
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import httpx2
import msgspec
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import Cluster, Context, User

from dockyard_k8s.live import kubeconfig as kc

# Seconds a credential plugin may take. `aws eks get-token` answers in about a second; the
# bound is for one that waits on an unreachable endpoint (an SSO portal behind a VPN).
EXEC_TIMEOUT = 60.0
# A plugin given the terminal (a browser or device-code login) may wait for the user.
INTERACTIVE_EXEC_TIMEOUT = 300.0
API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
PLUGIN_DOCS = "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"


@dataclass(frozen=True, slots=True)
class Located:
    """Where the user entry and its fields are, for the errors."""

    config: kc.Kubeconfig | None
    user: str

    def error(self, field: str, message: str, hint: str = "") -> kc.KubeconfigError:
        config = self.config if self.config is not None else kc.Kubeconfig({}, [], {})
        at = config.locate("users", self.user, field, field.split(".")[0])
        err = kc.KubeconfigError([kc.problem(at, f"users.{self.user}.{field}", message)])
        err.hint = hint
        return err


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(kept[-lines:])


class ExecAuth(httpx2.Auth):
    """Bearer tokens from an exec credential plugin (client-go's exec authenticator)."""

    def __init__(self, spec: dict[str, Any], where: Located, *, cluster: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.where = where
        self.cluster = cluster or {}
        self._token = ""
        self._expires: datetime.datetime | None = None
        self._lock = threading.Lock()
        self.validate()

    @property
    def command_line(self) -> str:
        return shlex.join([str(self.spec.get("command")), *[str(a) for a in self.spec.get("args") or []]])

    def validate(self) -> None:
        """What client-go refuses before running anything."""
        version = self.spec.get("apiVersion")
        if version not in API_VERSIONS:
            raise self.where.error("exec.apiVersion", f"exec plugin: invalid apiVersion {json.dumps(version)} "
                                                      f"(expected one of {', '.join(API_VERSIONS)})",
                                   "client.authentication.k8s.io/v1alpha1 was removed in Kubernetes 1.24: "
                                   "regenerate the entry (e.g. `aws eks update-kubeconfig`)")
        if not isinstance(self.spec.get("command"), str) or not self.spec["command"]:
            raise self.where.error("exec.command", "exec plugin: command is missing")
        mode = self.spec.get("interactiveMode")
        if mode is None and version == API_VERSIONS[0]:
            raise self.where.error("exec.interactiveMode", f"interactiveMode must be specified for {self.where.user} "
                                                           "to use exec authentication plugin (Never, IfAvailable "
                                                           "or Always)")
        if mode is not None and mode not in INTERACTIVE_MODES:
            raise self.where.error("exec.interactiveMode", f"exec plugin: invalid interactiveMode {mode!r} "
                                                           f"(expected {', '.join(INTERACTIVE_MODES)})")

    def _interactive(self) -> bool:
        mode = self.spec.get("interactiveMode") or "IfAvailable"
        tty = bool(sys.stdin) and sys.stdin.isatty()
        if mode == "Always" and not tty:
            raise self.where.error("exec.interactiveMode", f"exec plugin {self.spec['command']}: interactiveMode "
                                                           "Always, but standard input is not a terminal")
        return mode != "Never" and tty

    def _env(self, interactive: bool) -> dict[str, str]:
        env = dict(os.environ)
        for item in self.spec.get("env") or []:
            if isinstance(item, dict) and item.get("name"):
                env[str(item["name"])] = str(item.get("value") or "")
        info: dict[str, Any] = {"kind": "ExecCredential", "apiVersion": self.spec["apiVersion"],
                                "spec": {"interactive": interactive}}
        if self.spec.get("provideClusterInfo"):
            fields = ("server", "certificate-authority-data", "insecure-skip-tls-verify", "tls-server-name")
            info["spec"]["cluster"] = {k: self.cluster[k] for k in fields if self.cluster.get(k)}
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        return env

    def run(self) -> str:
        """Run the plugin; its token (and keep its expiry)."""
        interactive = self._interactive()
        command = [str(self.spec["command"]), *[str(a) for a in self.spec.get("args") or []]]
        limit = INTERACTIVE_EXEC_TIMEOUT if interactive else EXEC_TIMEOUT
        try:
            proc = subprocess.Popen(command, env=self._env(interactive), stdout=subprocess.PIPE,
                                    stderr=None if interactive else subprocess.PIPE,
                                    stdin=None if interactive else subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError:
            hint = str(self.spec.get("installHint") or "").strip() or (
                f"install it, or fix the kubeconfig entry (client-go credential plugins: {PLUGIN_DOCS})")
            raise self.where.error("exec.command", f"exec plugin {command[0]} is not installed (not found on "
                                                   "PATH)", hint) from None
        except OSError as e:
            raise self.where.error("exec.command", f"exec plugin {command[0]} cannot be run: {e.strerror or e}") \
                from None
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the plugin and what it started (its own session)
            out, err = proc.communicate()
            raise self.where.error("exec", f"exec plugin `{self.command_line}` gave no credential within {limit:g} s"
                                           + (f": {_tail(err.decode(errors='replace'))}" if err else ""),
                                   f"run `{self.command_line}` by hand: it should print an ExecCredential at once "
                                   "(a VPN or SSO login missing?)") from None
        stderr = _tail((err or b"").decode(errors="replace"))
        if proc.returncode != 0:
            raise self.where.error("exec", f"exec plugin `{self.command_line}` failed with exit code "
                                           f"{proc.returncode}" + (f": {stderr}" if stderr else ""),
                                   f"run `{self.command_line}` by hand; refresh your login (e.g. `aws sso login`)")
        return self._token_of(out)

    def _token_of(self, out: bytes) -> str:
        def bad(what: str) -> kc.KubeconfigError:
            return self.where.error("exec", f"exec plugin `{self.command_line}` {what}",
                                    f"run `{self.command_line}` by hand: it must print an ExecCredential "
                                    f"({PLUGIN_DOCS})")

        try:
            doc = json.loads(out)
        except ValueError:
            text = out.decode(errors="replace").strip()
            raise bad("printed no ExecCredential JSON: " + (repr(text[:120]) if text else "nothing")) from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise bad("printed JSON that is not an ExecCredential (kind)")
        if doc.get("apiVersion") != self.spec["apiVersion"]:
            raise bad(f"returned apiVersion {doc.get('apiVersion')}, but the kubeconfig configures "
                      f"{self.spec['apiVersion']}")
        raw = doc.get("status")
        status: dict[str, Any] = raw if isinstance(raw, dict) else {}
        token = status.get("token")
        if not token:
            if status.get("clientCertificateData"):
                raise bad("returned a client certificate (status.clientCertificateData): dockyard-k8s supports "
                          "token-issuing plugins only")
            raise bad("returned no status.token")
        self._expires = None
        stamp = status.get("expirationTimestamp")
        if isinstance(stamp, str) and stamp:
            try:
                self._expires = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            except ValueError:
                raise bad(f"returned expirationTimestamp {stamp!r}, not an RFC 3339 time") from None
        return str(token)

    def token(self) -> str:
        with self._lock:
            now = datetime.datetime.now(datetime.UTC)
            if not self._token or (self._expires is not None and now >= self._expires):
                self._token = self.run()
            return self._token

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        used = self.token()
        request.headers["Authorization"] = f"Bearer {used}"
        response = yield request
        if response.status_code == 401:  # revoked or rotated before its expiry: ask the plugin again
            with self._lock:
                if self._token == used:
                    self._token = ""
            response.read()
            request.headers["Authorization"] = f"Bearer {self.token()}"
            yield request


class TokenFileAuth(httpx2.Auth):
    """A bearer token read from ``tokenFile`` (read at connect, re-read on 401)."""

    def __init__(self, path: str, where: Located) -> None:
        self.path = path
        self.where = where
        self._token = self.read()

    def read(self) -> str:
        try:
            with open(self.path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise self.where.error("tokenFile", f"cannot read the token file {self.path}: {e.strerror or e}") \
                from None
        if not token:
            raise self.where.error("tokenFile", f"the token file {self.path} is empty")
        return token

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        response = yield request
        if response.status_code == 401:
            response.read()
            self._token = self.read()
            request.headers["Authorization"] = f"Bearer {self._token}"
            yield request


def user_auth(config: kc.Kubeconfig | None, user_name: str, user: dict[str, Any],
              cluster: dict[str, Any]) -> httpx2.Auth | None:
    """Our auth for the users lightkube would run a plugin or read a file for (None: keep
    lightkube's, a static token, basic auth or a client certificate)."""
    where = Located(config, user_name)
    if user.get("token"):
        return None
    if user.get("tokenFile"):
        return TokenFileAuth(str(user["tokenFile"]), where)
    if isinstance(user.get("exec"), dict):
        return ExecAuth(dict(user["exec"]), where, cluster=cluster)
    return None


def single_config(config: kc.Kubeconfig, selected: kc.Selected) -> SingleConfig:
    """lightkube's SingleConfig of the selected context; a field of the wrong type is a
    located KubeconfigError (lightkube would raise msgspec's ValidationError)."""

    def convert(value: dict[str, Any], model: type, section: str, name: str) -> Any:
        try:
            return msgspec.convert(value, model)
        except msgspec.ValidationError as e:
            text = str(e)
            field = text.rpartition("at `$.")[2].rstrip("`").split(".")[0].split("[")[0] if "at `$." in text else ""
            at = config.locate(section, name, field)
            path = f"{section}.{name}" + (f".{field}" if field else "")
            raise kc.KubeconfigError([kc.problem(at, path, text.partition(" - at ")[0])]) from None

    cluster_name, user_name = str(selected.context["cluster"]), str(selected.context.get("user"))
    for section, name, body, fields in (("clusters", cluster_name, selected.cluster, ("certificate-authority-data",)),
                                        ("users", user_name, selected.user or {},
                                         ("client-certificate-data", "client-key-data"))):
        for field in fields:
            _check_base64(config, section, name, field, body.get(field))
    context = convert(selected.context, Context, "contexts", selected.name)
    cluster = convert({**selected.cluster, "server": server_url(str(selected.cluster["server"]))}, Cluster,
                      "clusters", cluster_name)
    user = convert(selected.user, User, "users", user_name) if selected.user is not None else User()
    if not cluster.server.startswith("https://"):
        user = User()  # kubectl sends no credentials over plain HTTP (client-go's IsConfigTransportTLS)
    return SingleConfig(context_name=selected.name, context=context, cluster=cluster, user=user,
                        fname=None)


def server_url(server: str) -> str:
    """The server as kubectl reads it: one without a scheme (``127.0.0.1:6443``) is plain
    HTTP (client-go's DefaultServerURL before any TLS setting is considered), so kubectl then
    sends no credentials either."""
    return server if "://" in server else f"http://{server}"


def _check_base64(config: kc.Kubeconfig, section: str, name: str, field: str, value: Any) -> None:
    """A ``*-data`` field is base64 (kubectl: "illegal base64 data at input byte N"), located."""
    if value is None:
        return
    at = config.locate(section, name, field)
    try:
        base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as e:
        raise kc.KubeconfigError([kc.problem(at, f"{section}.{name}.{field}", f"not base64 ({e}): expected the PEM "
                                             "file's base64 (`base64 -w0 FILE`)")]) from None


def tls_problem(config: kc.Kubeconfig, selected: kc.Selected, e: OSError) -> kc.KubeconfigError:
    """A TLS file of the context that cannot be loaded, at the kubeconfig line naming it."""
    fields = [("clusters", str(selected.context["cluster"]), selected.cluster, "certificate-authority"),
              ("users", str(selected.context.get("user")), selected.user or {}, "client-certificate"),
              ("users", str(selected.context.get("user")), selected.user or {}, "client-key")]
    named = [(sec, name, field, body[field]) for sec, name, body, field in fields if body.get(field)]
    if isinstance(e, ssl.SSLError):  # a file or a -data field: not PEM
        named = [(sec, name, field + suffix, body[field + suffix]) for sec, name, body, field in fields
                 for suffix in ("", "-data") if body.get(field + suffix)]
        why = f"not a PEM certificate/key ({getattr(e, 'reason', None) or e})"
    else:
        named = [n for n in named if n[3] == e.filename] or named
        missing = [n for n in named if not os.path.exists(str(n[3]))]
        named = missing or named
        why = f"{named[0][3] if len(named) == 1 else e.filename or 'a file'}: {e.strerror or e}"
    sec, name, field = named[0][:3] if named else ("contexts", selected.name, "")
    at = config.locate(sec, name, field)
    what = field if len(named) <= 1 else "/".join(n[2] for n in named)
    return kc.KubeconfigError([kc.problem(at, f"{sec}.{name}.{what}".rstrip("."), f"cannot load the TLS file: {why}")])
