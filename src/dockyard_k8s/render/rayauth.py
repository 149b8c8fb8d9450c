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
never duplicated. The token itself is never rendered: ``run``/``cluster up`` create the
Secret when it is missing (``live/rayauth.py``); ``render | kubectl apply`` users create it
first (docs/security.md).
"""

from __future__ import annotations

from dockyard_k8s.render.meta import name_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

    from dockyard_k8s.config.infra_types import InfraSpec

TOKEN_KEY = "auth_token"  # the key KubeRay reads (utils.RAY_AUTH_TOKEN_SECRET_KEY)
MODE_VAR = "RAY_AUTH_MODE"
TOKEN_VAR = "RAY_AUTH_TOKEN"


def enabled(infra: InfraSpec) -> bool:
    return bool(infra["kuberay"]["auth"]["mode"] == "token")


def secret_name(infra: InfraSpec) -> str:
    """The Secret holding the token: ``kuberay.auth.secretName`` or ``<run>-ray-auth``."""
    return str(infra["kuberay"]["auth"]["secretName"] or name_of(infra, "ray-auth"))


def auth_env(infra: InfraSpec) -> list[dict[str, Any]]:
    """The env entries of a Ray container (none when auth is disabled)."""
    if not enabled(infra):
        return []
    return [{"name": MODE_VAR, "value": "token"},
            {"name": TOKEN_VAR, "valueFrom": {"secretKeyRef": {"name": secret_name(infra), "key": TOKEN_KEY}}}]


def force_auth_env(infra: InfraSpec, container: dict[str, Any]) -> None:
    """Set the auth env on a container, replacing entries of the same names (no fragment can
    turn authentication off or point it at another Secret)."""
    wanted = auth_env(infra)
    if not wanted:
        return
    names = {e["name"] for e in wanted}
    env = [e for e in container.get("env") or [] if not (isinstance(e, dict) and e.get("name") in names)]
    container["env"] = env + wanted


def auth_options(infra: InfraSpec) -> dict[str, Any] | None:
    """RayCluster ``spec.authOptions`` (``secretName``: KubeRay >= 1.6.0), or None when auth is disabled."""
    return {"mode": "token", "secretName": secret_name(infra)} if enabled(infra) else None
