"""`serve up/status/down` on the real control plane (issue 21 §4): the real Deployment and
ReplicaSet controllers roll the endpoint out on kwok's GPU nodes, the real PersistentVolume
controller binds its cache claim, the API server validates the KEDA ScaledObject and the
PodMonitor against their real CRDs.

The bundled kind example is used as written but for its namespace; what a cluster admin creates
before the first `serve up` (the hub token Secret, the nvidia RuntimeClass, a volume for the cache
claim: the stack has no provisioner) is created by the test, after `serve up` has refused without it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.paths import EXAMPLES

pytestmark = pytest.mark.e2e

KIND_SPEC = str(EXAMPLES / "llama3_8b_kind.serve.yaml")
EKS_SPEC = str(EXAMPLES / "llama3_70b_eks_keda.serve.yaml")
NAME = "llama-8b"


def endpoint_objects(cluster: Any, ns: str, name: str = NAME) -> dict[str, str]:
    """kind/name -> resourceVersion of what carries the endpoint label, read by kubectl."""
    items = cluster.get("-n", ns, "deployments,services,networkpolicies,poddisruptionbudgets,"
                        "persistentvolumeclaims,scaledobjects,podmonitors", "-l",
                        f"dockyard-k8s/endpoint={name}")["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in items}


def admin_prerequisites(cluster: Any, ns: str) -> None:
    cluster.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": ns},
         "stringData": {"token": "e2e-not-a-token"}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"},
        # a volume for the cache claim (the kind profile's StorageClass "standard" has no provisioner here)
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-llama-cache"},
         "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                  "hostPath": {"path": f"/tmp/{ns}-llama-cache"},
                  "claimRef": {"namespace": ns, "name": f"{NAME}-cache"}}},
    )


def eks_prerequisites(cluster: Any, ns: str) -> None:
    """What the eks example refers to and does not create: the hub token Secret, the shared FSx claim
    (bound to a volume made for it: the stack has no FSx driver) and the PriorityClass."""
    cluster.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": ns},
         "stringData": {"token": "e2e-not-a-token"}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-fsx"},
         "spec": {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadWriteMany"], "storageClassName": "fsx",
                  "hostPath": {"path": f"/tmp/{ns}-fsx"}, "claimRef": {"namespace": ns, "name": "fsx-claim"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "fsx-claim", "namespace": ns},
         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "fsx", "resources": {"requests": {
             "storage": "1Ti"}}}},
    )
    if cluster.kubectl("get", "priorityclass", "gpu-inference", check=False).returncode:  # the kind test may make it
        cluster.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "gpu-inference"}, "value": 1000})


def test_serve_up_refuses_before_applying_then_rolls_out_and_down_keeps_the_weights(cluster: Any, e2e_cli: Any,
                                                                                    ns: str) -> None:
    args = [KIND_SPEC, "-n", ns]
    refused = e2e_cli("serve", "up", *args, "--timeout", "30")
    assert refused.code == 1, refused.out + refused.err
    assert f"error: endpoint {NAME} refers to" in refused.err and "nothing was applied" in refused.err
    assert f"  Secret {ns}/hf-token, used as key token (env HF_TOKEN); create: kubectl -n {ns} create secret " \
           "generic hf-token --from-literal=token=..." in refused.err
    # no StorageClass "standard" here and no PersistentVolume of that class yet: the claim would stay Pending
    assert "  StorageClass standard, used as storageClassName of claim llama-8b-cache; create: set " \
           "infra.storage.storageClassName" in refused.err, refused.err
    assert endpoint_objects(cluster, ns) == {}  # the cluster agrees: nothing half-applied

    admin_prerequisites(cluster, ns)
    up = e2e_cli("serve", "up", *args, "--timeout", "180")
    assert up.code == 0, up.out + up.err
    assert f"created    Deployment {ns}/{NAME}" in up.out
    assert f"Deployment {NAME}: ready 1/1" in up.out and f"✔ {NAME} is ready" in up.out, up.out  # followed to Ready
    assert f"http://{NAME}.{ns}.svc.cluster.local:8000/v1" in up.out
    deploy = cluster.get("-n", ns, "deployment", NAME)
    assert deploy["status"].get("readyReplicas") == 1  # the real rollout, read back by kubectl
    claim = cluster.get("-n", ns, "pvc", f"{NAME}-cache")
    assert claim["status"]["phase"] == "Bound"

    status = e2e_cli("serve", "status", *args, "-o", "json")
    assert status.code == 0, status.out + status.err
    doc = json.loads(status.out)
    assert doc["main"]["state"] == "ready"
    assert doc["claims"] == [{"name": f"{NAME}-cache", "phase": "Bound"}]
    text = e2e_cli("serve", "status", *args).out
    assert f"Deployment {NAME}: ready 1/1" in text and "problems" not in text, text

    before = endpoint_objects(cluster, ns)
    again = e2e_cli("serve", "up", *args, "--detach")
    assert again.code == 0 and "7 unchanged" in again.out, again.out + again.err
    assert endpoint_objects(cluster, ns) == before  # an unchanged spec writes nothing

    down = e2e_cli("serve", "down", *args)
    assert down.code == 0, down.out + down.err
    left = endpoint_objects(cluster, ns)
    assert left == {f"PersistentVolumeClaim/{NAME}-cache": before[f"PersistentVolumeClaim/{NAME}-cache"]}, left
    assert not cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/endpoint={NAME}")["items"]
    assert cluster.get("priorityclass", "gpu-inference")["metadata"]["name"] == "gpu-inference"  # shared: kept


def test_the_keda_endpoint_s_scaled_object_and_pod_monitor_pass_the_real_crds(cluster: Any, e2e_cli: Any,
                                                                               ns: str) -> None:
    """The eks example as rendered: the API server validates the ScaledObject and the PodMonitor
    against the KEDA v2.20.2 and prometheus-operator CRDs (a server dry run persists nothing)."""
    eks_prerequisites(cluster, ns)
    r = e2e_cli("serve", "up", EKS_SPEC, "-n", ns, "--dry-run=server")
    assert r.code == 0, r.out + r.err
    assert f"ScaledObject {ns}/llama-70b" in r.out and f"PodMonitor {ns}/llama-70b" in r.out
    assert endpoint_objects(cluster, ns, "llama-70b") == {}
    bad = e2e_cli("serve", "up", EKS_SPEC, "-n", ns, "--dry-run=server", "--set", "serve.autoscaling.maxReplicas=1")
    assert bad.code == 2 and "Traceback" not in bad.err, bad.out + bad.err  # minReplicas 2 > 1: refused offline


def test_the_keda_endpoint_is_persisted_with_its_scaled_object_and_pod_monitor_and_down_removes_them(
        cluster: Any, e2e_cli: Any, ns: str) -> None:
    """`serve up` of the eks KEDA example for real: the ScaledObject and the PodMonitor are persisted
    (read back with the real kubectl), the Deployment is rolled out by the real controller-manager
    on kwok's p5 nodes, and `serve down` removes all of it but the claim, the Secret and the
    PriorityClass it never made.

    The KEDA operator is not running on the stack (only its CRDs are installed): nothing makes the
    ScaledObject's HPA, so the Deployment keeps the one replica the API server defaults a
    Deployment without ``spec.replicas`` to (with KEDA, its HPA scales it to minReplicas 2 long
    before a real server is ready), and the ScaledObject gets no status. What is checked is what
    the launcher writes and says, and that it leaves ``spec.replicas`` to the autoscaler."""
    name = "llama-70b"
    eks_prerequisites(cluster, ns)
    cluster.wait("the FSx claim bound", lambda: cluster.get("-n", ns, "pvc", "fsx-claim").get("status", {}).get(
        "phase") == "Bound")
    up = e2e_cli("serve", "up", EKS_SPEC, "-n", ns, "--timeout", "180")
    assert up.code == 0, up.out + up.err
    for kind in ("Deployment", "ScaledObject", "PodMonitor", "Service"):
        assert f"created    {kind} {ns}/{name}" in up.out, up.out
    # the rollout of the Deployment as it is (1 replica: no HPA), the pods counted against minReplicas
    assert f"Deployment {name}: ready 1/1" in up.out and "serve: 1/2 scheduled, 1/2 ready" in up.out, up.out
    # ready, and true about what is not: the autoscaler's minimum is not met (no KEDA operator here)
    assert f"✔ {name} is ready: ready 1/1; 1 of the autoscaler's minimum 2 replicas ready: KEDA's HPA raises the " \
           "count" in up.out, up.out

    scaled = cluster.get("-n", ns, "scaledobject", name)
    assert scaled["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (2, 6)
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metadata"]["threshold"] == "8"
    assert f'namespace="{ns}"' in trigger["metadata"]["query"], trigger  # the endpoint's namespace, not the spec's
    assert not scaled.get("status", {}).get("conditions")  # no KEDA operator here
    monitor = cluster.get("-n", ns, "podmonitor", name)
    assert monitor["spec"]["selector"]["matchLabels"] == {"dockyard-k8s/fleet": "serve",
                                                          "dockyard-k8s/endpoint": name}
    assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics"}]
    deploy = json.loads(cluster.kubectl("-n", ns, "get", "deployment", name, "-o", "json",
                                        "--show-managed-fields").stdout)
    ours = [m for m in deploy["metadata"]["managedFields"] if m["manager"] == "dockyard-k8s"]
    assert ours and all("f:replicas" not in m.get("fieldsV1", {}).get("f:spec", {}) for m in ours)  # KEDA's field
    assert (deploy["spec"]["replicas"], deploy["status"].get("readyReplicas")) == (1, 1)  # the API server's default
    pods = cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/endpoint={name}")["items"]
    assert len(pods) == 1 and pods[0]["spec"]["nodeName"].startswith("p5-")

    text = e2e_cli("serve", "status", EKS_SPEC, "-n", ns)
    assert text.code == 0, text.out + text.err
    assert f"ScaledObject {name}: no status yet; HPA -" in text.out, text.out
    assert f"Deployment {name}: ready 1/1" in text.out, text.out
    doc = json.loads(e2e_cli("serve", "status", EKS_SPEC, "-n", ns, "-o", "json").out)
    assert doc["autoscaler"] == [{"name": name, "status": {}}]
    assert {(o["kind"], o["name"]) for o in doc["objects"]} >= {("Deployment", name)}

    before = endpoint_objects(cluster, ns, name)
    assert {k.split("/")[0] for k in before} == {"Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget",
                                                 "ScaledObject", "PodMonitor"}, before
    again = e2e_cli("serve", "up", EKS_SPEC, "-n", ns, "--detach")
    assert again.code == 0 and f"unchanged  ScaledObject {ns}/{name}" in again.out, again.out + again.err
    assert "created" not in again.out and "configured" not in again.out, again.out
    assert endpoint_objects(cluster, ns, name) == before  # an unchanged spec writes nothing

    down = e2e_cli("serve", "down", EKS_SPEC, "-n", ns)
    assert down.code == 0, down.out + down.err
    lines = down.out.splitlines()
    assert lines.index(f"deleted ScaledObject {ns}/{name}") < lines.index(f"deleted Deployment {ns}/{name}"), down.out
    assert f"deleted PodMonitor {ns}/{name}" in lines, down.out
    assert endpoint_objects(cluster, ns, name) == {}
    assert not cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/endpoint={name}")["items"]
    # what it did not make stays: the shared claim (still bound), the token Secret, the PriorityClass
    assert cluster.get("-n", ns, "pvc", "fsx-claim")["status"]["phase"] == "Bound"
    assert cluster.get("-n", ns, "secret", "hf-token")["metadata"]["name"] == "hf-token"
    assert cluster.get("priorityclass", "gpu-inference")["metadata"]["name"] == "gpu-inference"
    gone = e2e_cli("serve", "status", EKS_SPEC, "-n", ns)
    assert gone.code == 1 and f"nothing of endpoint {name} in namespace {ns}" in gone.out, gone.out + gone.err
