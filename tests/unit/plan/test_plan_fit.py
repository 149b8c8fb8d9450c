"""`check`'s node-fit test (plan/fit.py): which part of the pod a refusal is blamed on."""

from __future__ import annotations

from typing import Any

from dockyard_k8s.plan.fit import misfits

TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
POOLS = {"nodePools": [{"name": "gpu", "instanceType": "g5.xlarge", "count": 1, "taints": [TAINT],
                        "labels": {"zone": "a"}}]}


def job(**spec: Any) -> dict[str, Any]:
    pod = {"nodeSelector": {"node.kubernetes.io/instance-type": "g5.xlarge"},
           "containers": [{"name": "c", "image": "i:1", "resources": {"requests": {"cpu": "1"}}}], **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"template": {"spec": pod}}}


ZONE_B = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}


def test_a_tolerated_taint_is_not_blamed_for_a_node_affinity_refusal() -> None:
    tolerated = misfits([job(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}], affinity=ZONE_B)], POOLS)
    assert [m.path[-1] for m in tolerated] == ["affinity"]
    assert "no g5.xlarge node matches the pod's node affinity" in tolerated[0].message
    assert "tolerate" not in tolerated[0].message


def test_an_untolerated_taint_is_blamed() -> None:
    refused = misfits([job()], POOLS)
    assert [m.path[-1] for m in refused] == ["tolerations"]
    assert "does not tolerate the taint nvidia.com/gpu=true:NoSchedule" in refused[0].message
