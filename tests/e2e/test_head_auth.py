"""`run`'s check that the Ray head refuses a request without the token (launch.head_auth_check), on
the real control plane.

Once the head pod is Ready, `run` asks its dashboard for ``GET /api/jobs/`` through the API server's
pod proxy, which drops the caller's credentials: the head sees a request without the token. The API
server dials the pod's IP for that. On the stack its ``cluster`` egress is HTTP CONNECT over the Ray
head stand-in's unix socket (controlplane.egress_selector): the stand-in answers as that head's
dashboard, with the same token check as for every other caller, and nothing connects to kwok's fake
pod IPs.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import RUN, loopback

pytestmark = pytest.mark.e2e

REFUSES = re.compile(r"✔ the Ray head (\S+) refuses a request without the token")
ANSWERS = re.compile(r"✖ the Ray head (\S+) answered a request without the token")


@pytest.fixture
def ours(cluster: Any) -> Any:
    if not cluster.ours:
        pytest.skip("reads what the control plane's Ray head stand-in served through the API server's egress")
    return cluster


def served(cluster: Any, ns: str, pod: str) -> list[str]:
    """The ``<ip>:<port>`` the API server reached head pod ``ns/pod`` at, through the stand-in's socket."""
    return [key.split()[0] for key in cluster.egress()["served"] if key.endswith(f" {ns}/{pod}")]


def test_a_token_run_says_its_head_refuses_a_request_without_the_token(ours: Any, e2e_cli: Any, example: Any,
                                                                      ns: str) -> None:
    started = time.time()
    r = e2e_cli("run", *example("--timeout", "120"))
    assert r.code == 0, r.text
    found = REFUSES.search(r.out)
    assert found, r.text
    pod = found.group(1)
    assert pod.startswith(f"{RUN}-") and "-head-" in pod, pod
    # Ray 2.52 with RAY_AUTH_MODE=token: 401 without a token (403 is a wrong one)
    assert f"✔ the Ray head {pod} refuses a request without the token (GET /api/jobs/: HTTP 401)" in r.out
    assert "could not check" not in r.text and "✔ succeeded" in r.out

    # The answer came from the stand-in, reached through the API server's egress socket with the pod's IP.
    tunnels = served(ours, ns, pod)
    assert tunnels and all(t.endswith(":8265") for t in tunnels), ours.egress()["served"]
    egress = ours.egress()
    assert not [x for x in egress["refused"] if x["target"] in tunnels and x["time"] >= started - 1], egress
    assert all(loopback(a) for a in egress["dialled"]), egress["dialled"]


def test_a_head_answering_without_the_token_ends_the_run_with_exit_1(ours: Any, e2e_cli: Any, example: Any,
                                                                     ns: str) -> None:
    """The head's image runs a Ray older than 2.52, which ignores RAY_AUTH_MODE: the head answers
    the request without the token, and `run` stops following with exit 1, the run left as it is."""
    ours.ray_version(RUN, "2.46.0", namespace=ns)  # the RayJob's RayCluster is named <RayJob>-<suffix>
    r = e2e_cli("run", *example("--timeout", "120"))
    assert r.code == 1, r.text
    found = ANSWERS.search(r.out)
    assert found, r.text
    pod = found.group(1)
    assert (f"✖ the Ray head {pod} answered a request without the token (GET /api/jobs/: HTTP 200): Ray token "
            "authentication is OFF (the image's Ray is older than 2.52") in r.out
    assert ("✖ unauthenticated: the run is left as it is: stop it with `dockyard-k8s down` (the same files), then "
            "use an image with Ray >= 2.52") in r.out
    assert "✔ succeeded" not in r.out and "refuses a request without the token" not in r.out
    assert served(ours, ns, pod)
    assert ours.get("-n", ns, "rayjob", RUN)["metadata"]["name"] == RUN  # left as it is


def test_cluster_up_asks_its_head_before_it_says_ready(ours: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    """A bringup cluster is "ready" as soon as its pods are: `cluster up` ended ✔ ready without
    asking the head, so a cluster that takes anyone's job passed as safe. Now it asks first; a
    head older than Ray 2.52 ends it with exit 1 instead of ✔ ready."""
    r = e2e_cli("cluster", "up", *example("--timeout", "120"))
    assert r.code == 0, r.text
    lines = r.out.splitlines()
    refuses = next(i for i, line in enumerate(lines) if REFUSES.search(line))
    assert refuses < lines.index("✔ ready: ready, workers ready 2/2"), r.out
    assert e2e_cli("cluster", "down", *example("--wait")).code == 0

    ours.ray_version(RUN, "2.46.0", namespace=ns)
    r = e2e_cli("cluster", "up", *example("--timeout", "120"))
    assert r.code == 1, r.text
    assert ANSWERS.search(r.out) and "✖ unauthenticated: the run is left as it is" in r.out, r.text
    assert "✔ ready" not in r.out


def test_the_api_server_drops_the_caller_s_bearer_token_before_the_head(ours: Any, e2e_cli: Any, example: Any,
                                                                       ns: str, tmp_path: Path) -> None:
    """A user the API server authenticates by a bearer token (a ServiceAccount's): its pod proxy
    deletes the ``Authorization`` header once it has authenticated the caller (k8s.io/apiserver
    endpoints/filters/authentication.go), so the head sees no token and answers 401; the caller's
    token reaching it would be a wrong one, 403 (docs/hardware-deferred-validation.md HV-SEC-7)."""
    user, binding = "e2e-token-user", f"e2e-token-user-{ns}"
    ours.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": user, "namespace": ns}},
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": ns}]})
    try:
        token = ours.kubectl("-n", ns, "create", "token", user, "--duration=1h").stdout.strip()
        view = json.loads(ours.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
        config = tmp_path / "token.kubeconfig"
        config.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": user,
            "clusters": [{"name": "stack", "cluster": view["clusters"][0]["cluster"]}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": user, "context": {"cluster": "stack", "user": user, "namespace": ns}}]}))
        r = e2e_cli("run", *example("--timeout", "120", "--kubeconfig", str(config)))
        assert r.code == 0, r.text
        found = REFUSES.search(r.out)
        assert found, r.text
        assert f"✔ the Ray head {found.group(1)} refuses a request without the token (GET /api/jobs/: HTTP 401)" \
            in r.out
        assert served(ours, ns, found.group(1))
    finally:
        ours.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")
