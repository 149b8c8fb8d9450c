"""Ray token authentication of the GPU cluster (``kuberay.auth``; Ray >= 2.52).

Without it the Ray dashboard (8265: the Jobs API runs any command), GCS (6379) and the client
port (10001) answer anyone who reaches them. With ``mode: token``:

* every Ray container of the run (head, workers, the submitter, the operator-free shapes'
  pods) gets ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` from the Secret the launcher
  names (``<run>-ray-auth``, key ``auth_token``). Ray reads them on any operator version, so
  a KubeRay too old for ``authOptions`` cannot leave the cluster unauthenticated;
* the RayCluster spec also carries ``authOptions: {mode: token, secretName}`` (KubeRay >=
  1.6.0: v1.5.1 added ``authOptions`` with ``mode`` only, v1.6.0 ``secretName``), so the
  operator authenticates its own dashboard calls (RayJob status) with the same Secret and
  does not create one of its own. An older operator's CRD has no such field: with strict field
  validation (kubectl's default, and ``run``'s) the apply fails and says so;
  with pruning, Ray stays authenticated and the operator's job polling fails loudly.

The operator only adds ``RAY_AUTH_*`` variables a container does not have yet, so ours are
never duplicated. The token itself is never rendered (``render``'s output is deterministic and
ends up in files and git): ``run``/``cluster up`` create the Secret (:func:`token_secret`) with a
random token when it is missing and never rewrite it (``live/rayhead.py``); for ``render | kubectl apply``,
``render`` and ``check`` print :func:`create_command`, the generator of the same Secret (its
name, key and run label), to run once before the first apply (docs/security.md).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.render.meta import RUN_LABEL, labels, name_of, run_name, secret_env

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

TOKEN_KEY = "auth_token"  # the key KubeRay reads (utils.RAY_AUTH_TOKEN_SECRET_KEY)
MODE_VAR = "RAY_AUTH_MODE"
TOKEN_VAR = "RAY_AUTH_TOKEN"


def enabled(infra: InfraSpec) -> bool:
    return bool(infra["kuberay"]["auth"]["mode"] == "token")


def secret_name(infra: InfraSpec) -> str:
    """The Secret holding the token: ``kuberay.auth.secretName`` or ``<run>-ray-auth``."""
    return str(infra["kuberay"]["auth"]["secretName"] or name_of(infra, "ray-auth"))


def token_secret(infra: InfraSpec, token: str) -> dict[str, Any]:
    """The run's token Secret, as ``run`` creates it when it is missing (the token is passed in)."""
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name(infra), "namespace": infra["infra"]["namespace"],
                     "labels": labels(infra, "ray-auth")},
        "type": "Opaque",
        "data": {TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def force_auth_env(infra: InfraSpec, container: dict[str, Any]) -> None:
    """Set the auth env on a Ray container, replacing entries of the same names (no fragment can
    turn authentication off or point it at another Secret); nothing when auth is disabled."""
    if not enabled(infra):
        return
    ours = (MODE_VAR, TOKEN_VAR)
    env = [e for e in container.get("env") or [] if not (isinstance(e, dict) and e.get("name") in ours)]
    container["env"] = [*env, {"name": MODE_VAR, "value": "token"},
                        secret_env(TOKEN_VAR, secret_name(infra), TOKEN_KEY)]


def create_command(namespace: str, name: str, run: str | None = None) -> str:
    """The shell command that creates a token Secret with a random token (``kubectl create``: it
    fails when the Secret exists, so it never rewrites one); with ``run``, labelled as ``run``
    labels its own, so ``down`` deletes it with the run."""
    cmd = (f"kubectl -n {namespace} create secret generic {name} "
           f'--from-literal={TOKEN_KEY}="$(openssl rand -base64 32)"')
    return cmd + (f" && kubectl -n {namespace} label secret {name} {RUN_LABEL}={run}" if run else "")


@dataclass(frozen=True, slots=True)
class TokenSecret:
    """The run's token Secret, which the rendered pods read and ``render`` never emits."""

    ref: str  # Secret ns/name
    what: str  # what it is, for the lists of what must exist
    command: str  # the command that creates it with a random token
    own: bool  # the launcher's default Secret, which `run` creates when missing (else it must exist)


def token_prerequisite(infra: InfraSpec) -> TokenSecret | None:
    """The run's token Secret; None without token auth or in attach mode (the attached cluster
    holds its own)."""
    if not enabled(infra) or infra["launch"]["mode"] == "attach":
        return None
    ns, name = str(infra["infra"]["namespace"]), secret_name(infra)
    own = not infra["kuberay"]["auth"]["secretName"]
    what = ("the Ray token (key auth_token): `run` creates it with a random token; by hand" if own else
            "the Ray token (key auth_token, kuberay.auth.secretName): create it")
    return TokenSecret(f"Secret {ns}/{name}", what, create_command(ns, name, run_name(infra) if own else None), own)
