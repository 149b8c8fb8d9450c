"""`cluster up/list/down` and a namespace being deleted, on the real control plane (issue 21 §4,
issue 22 item 9).

KubeRay sets a RayCluster's ``status.state: ready`` once every pod first runs and never clears it
(raycluster_controller.go calculateStatus); its ``HeadPodReady`` condition follows the head pod.
kwok leaves a Running pod's status alone (its pod-ready stage acts on Pending pods), so a test can
make the head pod not Ready by writing its status, as a failing readiness probe would. A pod
KubeRay cannot create (a ResourceQuota) is its ``ReplicaFailure`` condition, which it clears
once a later reconcile creates the pod.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest
from e2e_helpers import RUN, example_args

from support.cli import printed

pytestmark = pytest.mark.e2e


def head_ready_condition(cluster: Any, ns: str, name: str) -> str:
    rc = cluster.get("-n", ns, "raycluster", name)
    return next((c["status"] for c in rc.get("status", {}).get("conditions", []) if c["type"] == "HeadPodReady"), "")


def test_cluster_up_scales_list_says_not_ready_while_the_head_pod_is_not_ready_and_down_deletes_it(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    # a ResourceQuota with room for the sandbox and the head only: KubeRay cannot create the workers
    # (its ReplicaFailure condition), then retries once the quota is gone
    cluster.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods", "namespace": ns},
                   "spec": {"hard": {"pods": "2"}}})
    # in force once the quota controller has written its status: pods created before that pass
    # (a fresh clone's run did, as the stack's first test: up ended ✔ before the quota bit)
    cluster.wait("the quota in force", lambda: cluster.get("-n", ns, "resourcequota", "pods").get(
        "status", {}).get("hard"))

    ended = threading.Event()

    def lift_quota() -> None:
        try:  # until `up` says it, or ends without it (the assertions below then say what happened)
            cluster.wait("`cluster up` saying KubeRay could not create a pod",
                         lambda: "ReplicaFailure" in printed() or ended.is_set(), timeout=150)
        finally:
            cluster.kubectl("-n", ns, "delete", "resourcequota", "pods")

    lifter = threading.Thread(target=lift_quota, daemon=True)
    lifter.start()
    up = e2e_cli("cluster", "up", *example("--timeout", "120"))
    ended.set()
    lifter.join(10)
    assert up.code == 0, up.out + up.err
    assert f"✖ RayCluster/{RUN}: ReplicaFailure: FailedCreateWorkerPod" in up.out and "exceeded quota: pods" in up.out
    assert "✔ ready: ready, workers ready 2/2" in up.out  # a finding, not the end
    rc = cluster.get("-n", ns, "raycluster", RUN)
    assert "ReplicaFailure" not in {c["type"] for c in rc["status"]["conditions"]}  # KubeRay cleared it
    listed = e2e_cli("cluster", "list", "-n", ns)
    assert [line.split()[3] for line in listed.out.splitlines()[1:] if line.startswith(ns)] == ["ready"]

    # a changed spec: `cluster up` waits for KubeRay to have seen it (observedGeneration), then its pods
    scaled = e2e_cli("cluster", "up", *example("--set", "kuberay.trainer.replicas=2", "--timeout", "120"))
    assert scaled.code == 0, scaled.out + scaled.err
    assert f"configured RayCluster {ns}/{RUN}" in scaled.out
    assert [x for x in scaled.out.splitlines() if x.startswith("✔ ready")] == ["✔ ready: ready, workers ready 3/3"]
    rc = cluster.get("-n", ns, "raycluster", RUN)
    assert rc["status"]["observedGeneration"] == rc["metadata"]["generation"] == 2
    assert rc["status"]["readyWorkerReplicas"] == 3

    head = cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN},ray.io/node-type=head")["items"][0]
    cluster.kubectl("-n", ns, "patch", "pod", head["metadata"]["name"], "--subresource=status", "-p", json.dumps(
        {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                    "message": "containers with unready status: [ray-head]"}]}}))
    cluster.wait("KubeRay's HeadPodReady condition False", lambda: head_ready_condition(cluster, ns, RUN) == "False")
    assert cluster.get("-n", ns, "raycluster", RUN)["status"]["state"] == "ready"  # KubeRay's: never cleared

    listed = e2e_cli("cluster", "list", "-n", ns)
    assert listed.code == 0, listed.err
    row = next(line for line in listed.out.splitlines() if line.startswith(ns))
    assert row.split()[3:5] == ["not", "ready"], listed.out
    assert f"{ns}/{RUN}: provisioning: head pod not ready" in listed.out
    again = e2e_cli("cluster", "up", *example("--set", "kuberay.trainer.replicas=2", "--timeout", "2"))
    assert again.code == 1, again.out + again.err
    assert "✔ ready" not in again.out and "✖ timeout" in again.out

    down = e2e_cli("cluster", "down", *example("--set", "kuberay.trainer.replicas=2", "--wait", "--timeout", "60"))
    assert down.code == 0, down.out + down.err
    assert f"deleted RayCluster {ns}/{RUN}" in down.out
    assert cluster.kubectl("-n", ns, "get", "raycluster", RUN, check=False).returncode != 0
    assert cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN}")["items"] == []
    assert [line for line in e2e_cli("cluster", "list", "-n", ns).out.splitlines() if line.startswith(ns)] == []


def test_a_run_into_a_namespace_being_deleted_says_so_not_rbac(cluster: Any, e2e_cli: Any) -> None:
    name = f"e2e-terminating-{os.getpid()}"
    cluster.kubectl("create", "namespace", name)
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "hold", "namespace": name, "finalizers": ["e2e.dockyard-k8s.dev/hold"]}})
    cluster.kubectl("delete", "namespace", name, "--wait=false")
    try:
        cluster.wait("the namespace Terminating",
                     lambda: cluster.get("namespace", name).get("status", {}).get("phase") == "Terminating")
        r = e2e_cli("run", *example_args(name, "--detach"))
        assert r.code == 1, r.out + r.err
        assert f"unable to create new content in namespace {name} because it is being terminated" in r.err
        assert f"namespace {name} is being deleted" in r.err
        assert "RBAC" not in r.err and "doctor" not in r.err
        assert "nothing was applied" in r.err
    finally:
        cluster.kubectl("-n", name, "patch", "configmap", "hold", "--type=merge", "-p",
                        '{"metadata":{"finalizers":null}}', check=False)
