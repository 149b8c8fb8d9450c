"""`doctor` on the real control plane (issue 21 §4, issue 22 item 8): what it says is what the
real API server, its RBAC authorizer and the real KubeRay operator's arguments say.

* an RBAC-limited user: a ServiceAccount bound to a namespaced Role granting only some of the
  verbs the launcher uses, its kubeconfig holding a token from the TokenRequest API
  (``kubectl create token``); doctor must name exactly the denied verbs, and say "cannot tell"
  (never ✔ or ✖) for what the user may not read;
* a Secret the trainer env references, deleted: ✖ naming it, never "the run can work here";
* a namespace outside the operator's ``--watch-namespace`` (the stack starts KubeRay with the
  test namespaces, and shows its Deployment with the same arguments): ✖ KubeRay operator;
* a network plugin that never enforces NetworkPolicy (a flannel DaemonSet): doctor says so and
  ``run`` warns in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import RUN, example_args

pytestmark = pytest.mark.e2e

USER = "doctor-limited"
# What the Role grants: every verb the launcher uses for the example run but `delete rayjobs`,
# `watch events` and `get pods/log` (essential), the PVCs `down` looks for, and `pods/exec`
# (dashboard/job/dev).
RULES = [
    {"apiGroups": [""], "resources": ["services", "configmaps", "serviceaccounts", "secrets", "limitranges",
                                      "resourcequotas"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["create"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "delete"]},
    {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["get", "list", "watch", "create", "patch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["*"], "verbs": ["list", "delete"]},
]


def lines(out: str, prefix: str) -> list[str]:
    return [x for x in out.splitlines() if x.startswith(prefix)]


def detail(out: str, name: str) -> str:
    """The text after the mark and the padded name of check ``name``."""
    (line,) = [x for x in out.splitlines() if x[2:].split("  ")[0].rstrip() == name]
    return line[2:].split("  ", 1)[1].strip()


def limited_kubeconfig(cluster: Any, ns: str, path: Path) -> str:
    """A kubeconfig for ServiceAccount ``USER`` of ``ns``: the stack's server and CA, a token
    from the TokenRequest API."""
    token = cluster.kubectl("-n", ns, "create", "token", USER, "--duration=1h").stdout.strip()
    view = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    server = view["clusters"][0]["cluster"]
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": USER,
           "clusters": [{"name": "stack", "cluster": server}],
           "users": [{"name": USER, "user": {"token": token}}],
           "contexts": [{"name": USER, "context": {"cluster": "stack", "user": USER, "namespace": ns}}]}
    path.write_text(json.dumps(doc))
    return str(path)


def test_doctor_as_an_rbac_limited_user_names_exactly_the_denied_verbs(
        cluster: Any, ns: str, e2e_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": USER, "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": USER, "namespace": ns},
         "rules": RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": USER, "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": USER},
         "subjects": [{"kind": "ServiceAccount", "name": USER, "namespace": ns}]},
    )
    config = limited_kubeconfig(cluster, ns, tmp_path / "limited.kubeconfig")
    # the real authorizer agrees with the Role as written (kubectl auth can-i, as that user)
    sa = f"system:serviceaccount:{ns}:{USER}"
    assert cluster.kubectl("auth", "can-i", "delete", "rayjobs.ray.io", "-n", ns, "--as", sa,
                           check=False).stdout.strip() == "no"
    monkeypatch.setenv("KUBECONFIG", config)
    r = e2e_cli("doctor", *example_args(ns))
    assert r.code == 1, r.out + r.err
    assert "Traceback" not in r.err
    assert detail(r.out, "permissions") == "denied: delete rayjobs.ray.io, get pods/log, watch events"
    assert detail(r.out, "permissions (down)") == \
        "denied: list persistentvolumeclaims, delete persistentvolumeclaims"
    assert detail(r.out, "permissions (dashboard, job, dev)") == "denied: create pods/exec"
    assert len(lines(r.out, "✖ ")) == 3, r.out  # nothing else is called failed
    # what this user may not read is "cannot tell", never a verdict
    for name in ("namespace", "KubeRay CRDs", "KubeRay operator", "GPUs", "placement", "PriorityClass",
                 "NetworkPolicy"):
        assert lines(r.out, f"! {name} "), (name, r.out)
    assert "✔ Secrets" in r.out  # get secrets is granted: both exist, the token Secret `run` creates
    assert r.out.rstrip().splitlines()[-1] == "the run cannot work here as configured (see ✖ above)"


def test_doctor_names_the_missing_secret_the_trainer_env_references(cluster: Any, ns: str, e2e_cli: Any) -> None:
    ok = e2e_cli("doctor", *example_args(ns))
    assert ok.code == 0 and "✔ Secrets" in ok.out, ok.out + ok.err
    assert f"{RUN}-ray-auth (`run` creates it)" in ok.out
    cluster.kubectl("-n", ns, "delete", "secret", "wandb")
    r = e2e_cli("doctor", *example_args(ns))
    assert r.code == 1, r.out
    assert lines(r.out, "✖ ") == [x for x in r.out.splitlines() if x.startswith("✖ Secrets")], r.out
    assert detail(r.out, "Secrets") == "missing: wandb (key api-key (env WANDB_API_KEY))"
    assert f"kubectl -n {ns} create secret generic wandb --from-literal=api-key=..." in r.out
    assert "the run can work here" not in r.out


def test_doctor_fails_in_a_namespace_the_operator_does_not_watch(cluster: Any, e2e_cli: Any) -> None:
    if not cluster.ours:
        pytest.skip("needs the control plane's operator, started with --watch-namespace")
    state = cluster.stack.state()
    assert state["watch_namespaces"], "the session's stack watches the test namespaces"
    ns = f"e2e-unwatched-{os.getpid()}"
    assert ns not in state["watch_namespaces"]
    cluster.kubectl("create", "namespace", ns)
    try:
        cluster.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ghcr-pull", "namespace": ns},
                       "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}},
                      {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb", "namespace": ns},
                       "stringData": {"api-key": "e2e-not-a-key"}})
        r = e2e_cli("doctor", *example_args(ns))
        assert r.code == 1, r.out
        assert lines(r.out, "✖ ") == lines(r.out, "✖ KubeRay operator"), r.out
        watched = state["watch_namespaces"]
        assert detail(r.out, "KubeRay operator") == (
            f"ray-system/kuberay-operator watches only {', '.join(watched[:5])}, … ({len(watched)} in all) "
            f"(--watch-namespace), not {ns}: KubeRay would never act on the run's RayJob or RayCluster")
        watched_ns = e2e_cli("doctor", *example_args(watched[1]))
        assert "✔ KubeRay operator" in watched_ns.out, watched_ns.out
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_doctor_and_run_say_when_networkpolicy_is_not_enforced(cluster: Any, ns: str, e2e_cli: Any) -> None:
    if not cluster.ours:
        pytest.skip("adds a network plugin's DaemonSet: only on the session's own control plane")
    flannel = {"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "kube-flannel-ds", "namespace": "kube-system"},
               "spec": {"selector": {"matchLabels": {"app": "flannel"}}, "template": {
                   "metadata": {"labels": {"app": "flannel"}},
                   "spec": {"nodeSelector": {"e2e/no-such-node": "true"},  # no pod: only its presence counts
                            "containers": [{"name": "kube-flannel", "image": "flannel/flannel:v0.26.0"}]}}}}
    cluster.apply(flannel)
    try:
        r = e2e_cli("doctor", *example_args(ns))
        assert r.code == 0, r.out  # the run works; its sandbox is not isolated
        assert detail(r.out, "NetworkPolicy").startswith(
            "not enforced: kube-system/kube-flannel-ds: flannel never enforces NetworkPolicy")
        assert "can work here" not in r.out.rstrip().splitlines()[-1]
        dry = e2e_cli("run", *example_args(ns, "--dry-run=server"))
        assert dry.code == 0, dry.out + dry.err
        warned = [x for x in (dry.out + dry.err).splitlines() if "NetworkPolicy not enforced" in x]
        assert len(warned) == 1 and warned[0].startswith("warning: "), dry.out + dry.err
    finally:
        cluster.kubectl("-n", "kube-system", "delete", "daemonset", "kube-flannel-ds", check=False)
