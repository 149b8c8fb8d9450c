"""live/scaling: an autoscaled RayCluster is applied with the replicas its autoscaler set; a
RayJob or RayCluster with what KubeRay and Kueue wrote into its worker groups."""

from __future__ import annotations

from typing import Any

import pytest

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.orchestrate import apply_one
from dockyard_k8s.live.scaling import explain_conflict, keep_added, keep_autoscaled


def cluster(autoscaling: bool | None, *groups: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"workerGroupSpecs": list(groups)}
    if autoscaling is not None:
        spec["enableInTreeAutoscaling"] = autoscaling
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}, "spec": spec}


def test_live_replicas_and_scale_strategy_are_kept_within_the_new_bounds() -> None:
    rendered = cluster(True, {"groupName": "a", "replicas": 2, "minReplicas": 1, "maxReplicas": 4},
                       {"groupName": "b", "replicas": 1, "minReplicas": 3, "maxReplicas": 6},
                       {"groupName": "new", "replicas": 1})
    live = cluster(True, {"groupName": "a", "replicas": 9, "scaleStrategy": {"workersToDelete": ["p"]}},
                   {"groupName": "b", "replicas": 1})
    out, kept = keep_autoscaled(rendered, live)
    a, b, new = out["spec"]["workerGroupSpecs"]
    assert (a["replicas"], a["scaleStrategy"]) == (4, {"workersToDelete": ["p"]})  # clamped to maxReplicas
    assert b["replicas"] == 3 and "scaleStrategy" not in b  # raised to the new minReplicas
    assert new["replicas"] == 1  # not live yet: as rendered
    assert kept == {"a": 4, "b": 3}
    assert rendered["spec"]["workerGroupSpecs"][0]["replicas"] == 2  # the rendered object is not changed


def test_without_the_autoscaler_or_a_live_cluster_the_rendered_replicas_stand() -> None:
    live = cluster(True, {"groupName": "a", "replicas": 9})
    for autoscaling in (None, False):
        rendered = cluster(autoscaling, {"groupName": "a", "replicas": 2})
        assert keep_autoscaled(rendered, live) == (rendered, {})
    rendered = cluster(True, {"groupName": "a", "replicas": 2})
    assert keep_autoscaled(rendered, None) == (rendered, {})
    job = {"kind": "RayJob", "spec": {"enableInTreeAutoscaling": True}}
    assert keep_autoscaled(job, live) == (job, {})


def test_a_worker_group_conflict_names_its_last_writer() -> None:
    e = ClusterError('Apply failed with 1 conflict: conflict with "kubectl-edit" using ray.io/v1: '
                     ".spec.workerGroupSpecs", obj="RayCluster ns/c", status=409, hint="generic")
    out = explain_conflict(e, cluster(None))
    assert 'last written by "kubectl-edit"' in out.hint and "--force-conflicts" in out.hint
    assert "autoscaler set are kept" not in out.hint
    assert "autoscaler set are kept" in explain_conflict(e, cluster(True)).hint
    other = ClusterError("conflict with \"x\": .spec.replicas", status=409, hint="generic")
    assert explain_conflict(other, cluster(True)) is other
    job = ClusterError('Apply failed with 1 conflict: conflict with "kueue" using ray.io/v1: '
                       ".spec.rayClusterSpec.workerGroupSpecs", obj="RayJob ns/j", status=409, hint="generic")
    said = explain_conflict(job, {"kind": "RayJob"}).hint
    assert 'last written by "kueue"' in said and "--replace" in said
    assert explain_conflict(job, {"kind": "Deployment"}) is job


def rayjob(groups: list[dict[str, Any]], owners: tuple[str, ...] = ()) -> dict[str, Any]:
    managed = [{"manager": m, "fieldsV1": {"f:spec": {"f:rayClusterSpec": {"f:workerGroupSpecs": {}}}}}
               for m in owners]
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "managedFields": managed},
            "spec": {"entrypoint": "x", "rayClusterSpec": {"workerGroupSpecs": groups}}}


# What Kueue v0.19 wrote into a RayJob it admitted, and KubeRay's round trip (found on the control plane).
ADMITTED = {"groupName": "trainer", "replicas": 1, "numOfHosts": 1, "scaleStrategy": {},
            "template": {"metadata": {"labels": {"dockyard-k8s/run": "r", "kueue.x-k8s.io/podset": "trainer"},
                                      "annotations": {"kueue.x-k8s.io/workload": "rayjob-r-1"}},
                         "spec": {"containers": [{"name": "ray-worker", "image": "i"}]}}}
RENDERED = {"groupName": "trainer", "replicas": 1, "scaleStrategy": {},
            "template": {"metadata": {"labels": {"dockyard-k8s/run": "r"}},
                         "spec": {"containers": [{"name": "ray-worker", "image": "i"}]}}}


def test_what_kueue_and_kuberay_added_to_the_worker_groups_is_applied_back() -> None:
    out = keep_added(rayjob([RENDERED]), rayjob([ADMITTED], owners=("kueue",)))
    assert out["spec"]["rayClusterSpec"]["workerGroupSpecs"] == [ADMITTED]
    assert out["spec"]["entrypoint"] == "x"  # nothing else of the rendered object changes


def test_a_changed_or_own_worker_group_list_is_applied_as_rendered() -> None:
    changed = {**RENDERED, "replicas": 2}
    assert keep_added(rayjob([changed]), rayjob([ADMITTED], owners=("kueue",)))["spec"]["rayClusterSpec"][
        "workerGroupSpecs"] == [changed]  # a change is the user's (a conflict, explained)
    fewer = rayjob([RENDERED])
    assert keep_added(fewer, rayjob([ADMITTED, ADMITTED], owners=("kueue",))) is fewer
    # the launcher wrote the list last: what the render no longer has must go
    ours = rayjob([RENDERED])
    assert keep_added(ours, rayjob([ADMITTED], owners=("dockyard-k8s", "kueue"))) is ours
    assert keep_added(ours, None) is ours
    deployment = {"kind": "Deployment", "spec": {}}
    assert keep_added(deployment, deployment) is deployment


class _Racing:
    """A cluster where Kueue admits the RayJob between the launcher's read and its write: the
    first apply conflicts with "kueue" on the worker groups (seen on the real control plane)."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    def apply(self, obj: dict[str, Any], **_: Any) -> str:
        self.applied.append(obj)
        if obj["spec"]["rayClusterSpec"]["workerGroupSpecs"] != [ADMITTED]:
            raise ClusterError('Apply failed with 1 conflict: conflict with "kueue" using ray.io/v1: '
                               ".spec.rayClusterSpec.workerGroupSpecs", obj="RayJob ns/j", status=409)
        return "unchanged"

    def get(self, *_: Any) -> dict[str, Any]:
        return rayjob([ADMITTED], owners=("kueue",))


def test_worker_groups_kueue_wrote_after_they_were_read_are_applied_back_on_the_conflict() -> None:
    racing = _Racing()
    assert apply_one(racing, rayjob([RENDERED])) == "unchanged"  # type: ignore[arg-type,comparison-overlap]
    assert [o["spec"]["rayClusterSpec"]["workerGroupSpecs"] for o in racing.applied] == [[RENDERED], [ADMITTED]]
    changed = rayjob([{**RENDERED, "replicas": 2}])  # the user's change: the conflict is said, not retried
    with pytest.raises(ClusterError) as e:
        apply_one(racing, changed)  # type: ignore[arg-type]
    assert e.value.status == 409 and "--replace" in e.value.hint
    assert racing.applied[-1] is changed
