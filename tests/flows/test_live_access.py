"""Permissions and preflight as a real cluster answers them: 403 on kinds the run does not
render, doctor checking every command's verbs, kustomize installs of the operator, a
cluster without nodes, a namespace that does not exist (issue 13 items 4 and 8)."""

from __future__ import annotations

import json
from typing import Any

from fakekube import FakeKube
from states import NS, RUN

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def test_status_tolerates_403_on_a_kind_the_run_does_not_render(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    fake.deny("list", "rayclusters")  # the RayJob's cluster: read, never rendered
    r = cli("status", *ARGS)
    assert r.code == 0, r.err
    assert "RayJob grpo-swe" in r.out
    assert "not allowed to list rayclusters.ray.io in rl-research (403)" in r.err
    doc = json.loads(cli("status", *ARGS, "-o", "json").out)
    assert any("rayclusters.ray.io" in n for n in doc["notes"])


def test_status_fails_on_403_for_a_kind_the_run_renders(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    fake.deny("list", "rayjobs")
    r = cli("status", *ARGS)
    assert r.code == 1 and "forbidden" in r.err and "rayjobs" in r.err


def test_down_tolerates_403_on_kinds_the_run_does_not_render(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    fake.deny("list", "statefulsets")
    fake.deny("list", "persistentvolumeclaims")
    r = cli("down", *ARGS)
    assert r.code == 0, r.err
    assert "deleted RayJob rl-research/grpo-swe" in r.out
    assert "not allowed to list statefulsets.apps in rl-research (403)" in r.out
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None


def test_run_follows_without_a_kind_it_may_not_watch(cli: Any, fake: FakeKube) -> None:
    fake.deny("watch", "rayclusters")
    r = cli("run", *ARGS, "--timeout", "0.5")
    assert r.code == 1 and "stopped following" in r.out, r.out + r.err
    assert "not allowed to watch rayclusters.ray.io" in r.out


def test_doctor_checks_the_verbs_of_every_command(cli: Any, fake: FakeKube) -> None:
    from test_live_dev_doctor import healthy_cluster

    healthy_cluster(fake)
    fake.deny("delete", "statefulsets")  # only `down` of another shape needs it
    fake.deny("watch", "rayclusters")  # run follows the RayJob's cluster
    r = cli("doctor", *ARGS)
    assert r.code == 1
    essential = next(line for line in r.out.splitlines() if line.startswith("✖ permissions "))
    assert "watch rayclusters.ray.io" in essential and "statefulsets" not in essential
    down = next(line for line in r.out.splitlines() if line.startswith("✖ permissions (down)"))
    assert "delete statefulsets.apps" in down
    reviews = {(json.loads(q.body)["spec"]["resourceAttributes"]["verb"],
                json.loads(q.body)["spec"]["resourceAttributes"]["resource"])
               for q in fake.requests if q.path.endswith("selfsubjectaccessreviews")}
    assert {("list", "statefulsets"), ("delete", "jobs"), ("watch", "rayclusters"), ("get", "pods")} <= reviews


def test_doctor_finds_a_kustomize_install_of_the_operator(cli: Any, fake: FakeKube) -> None:
    from test_live_dev_doctor import healthy_cluster

    healthy_cluster(fake)
    fake.remove("apps/v1", "Deployment", "kuberay-system", "kuberay-operator")
    fake.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "kuberay-operator", "namespace": "default",
        "labels": {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/component": "kuberay-operator"}},
        "status": {"readyReplicas": 1}})
    r = cli("doctor", *ARGS)
    assert "✔ KubeRay operator" in r.out and "default/kuberay-operator ready" in r.out, r.out


def test_doctor_on_a_cluster_without_nodes_exits_1_and_says_so(cli: Any, fake: FakeKube) -> None:
    r = cli("doctor", *ARGS)
    assert r.code == 1, r.out + r.err
    assert "✖ placement" in r.out and "no nodes" in r.out
    assert "Traceback" not in r.err and "kubectl get nodes -o yaml" not in r.err


def test_a_namespace_that_does_not_exist_is_named(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "-n", "no-such-ns", "--detach")
    assert r.code == 1
    # the Ray token Secret, the launch record and the 7 rendered objects: the first is named
    assert "namespace no-such-ns does not exist (nothing was applied; the same for 9 more object(s)" in r.err
    assert r.err.count("does not exist") == 1  # one reason, said once
    assert "kubectl create namespace no-such-ns" in r.err and "KubeRay" not in r.err
