"""Kueue's admission of one workload, behaviour by behaviour (plan/kueue_assign.py, kueue_model.py)."""

from __future__ import annotations

import pytest
from kueuekit import GPU, admitted, cq, flavor, lq, rayjob, standard

from dockyard_k8s.errors import ConfigError
from dockyard_k8s.plan.kueue_assign import assign, workload_requests
from dockyard_k8s.plan.kueue_model import snapshot_from_objects


def verdict_of(queue_objects, job):
    snap = snapshot_from_objects(queue_objects)
    (wl,), _ = workload_requests(snap, [job])
    return assign(snap, wl)


def flavors(v):
    return {ps.name: sorted(set(ps.flavors.values())) for ps in v.pod_sets}


def test_pod_sets_take_flavors_in_the_queues_order_and_gpu_pod_sets_pass_the_cpu_flavor_by():
    v = verdict_of(standard(), rayjob())
    assert (v.state, v.reason, v.message) == ("admitted", "QuotaReserved", "Quota reserved in ClusterQueue team-a")
    assert flavors(v) == {"head": ["cpu"], "trainer": ["h100"], "inference": ["h100"], "submitter": ["cpu"]}
    assert [ps.name for ps in v.pod_sets] == ["head", "trainer", "inference", "submitter"]
    assert not v.borrowing


def test_a_request_above_what_the_queue_could_ever_have_is_exceeds_max_quota():
    v = verdict_of(standard(gpus=16), rayjob())
    assert (v.state, v.reason) == ("never", "ExceedsMaxQuota")
    assert v.message == (
        "couldn't assign flavors to pod set inference: insufficient quota for nvidia.com/gpu in flavor cpu, "
        "previously considered podsets requests (0) + current podset request (8) > maximum capacity (0), "
        "insufficient quota for nvidia.com/gpu in flavor h100, previously considered podsets requests (16) + "
        "current podset request (8) > maximum capacity (16)")


def test_quota_in_use_makes_it_wait_with_kueues_more_needed():
    objects = [*standard(), admitted("big", "team-a", {GPU: ("h100", 16), "cpu": ("h100", 100)})]
    v = verdict_of(objects, rayjob())
    assert (v.state, v.reason) == ("waiting", "WaitingForQuota")
    trainer, inference = v.message.split("; ")
    assert trainer.startswith("couldn't assign flavors to pod set trainer: insufficient quota for cpu in flavor cpu, "
                              "previously considered podsets requests (8) + current podset request (64) > maximum "
                              "capacity (64), ")
    assert trainer.endswith("insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed")
    assert inference.endswith("insufficient unused quota for nvidia.com/gpu in flavor h100, 16 more needed")
    assert flavors(v)["trainer"] == ["h100"]  # its best flavor, kept for the next pod sets' arithmetic


def test_the_trainer_alone_waits_when_even_it_does_not_fit():
    objects = [*standard(), admitted("big", "team-a", {GPU: ("h100", 20)})]
    v = verdict_of(objects, rayjob())
    assert v.state == "waiting"
    assert v.message.split("; ")[0].endswith(
        "insufficient quota for nvidia.com/gpu in flavor cpu, previously considered podsets requests (0) + current "
        "podset request (16) > maximum capacity (0), insufficient unused quota for nvidia.com/gpu in flavor h100, "
        "12 more needed")


def test_borrowing_from_the_cohort_admits_and_is_reported():
    objects = [*standard(gpus=16, cohort="research"),
               cq("team-b", {"h100": {"cpu": 0, "memory": 0, GPU: 16}}, cohort="research")]
    v = verdict_of(objects, rayjob())
    assert v.state == "admitted" and v.borrowing
    assert [ps.name for ps in v.pod_sets if ps.borrows] == ["inference"]


@pytest.mark.parametrize(("limits", "state", "needed"), [
    ({"borrowing": 4}, "never", "maximum capacity (20)"),  # team-a may borrow at most 4 of the 8 it needs
    ({"lending": 4}, "never", "maximum capacity (20)"),  # team-b lends at most 4
    ({}, "admitted", None),
])
def test_borrowing_and_lending_limits_cap_what_the_cohort_gives(limits, state, needed):
    a_gpu = (16, limits.get("borrowing"), None)
    b_gpu = (16, None, limits.get("lending"))
    objects = [flavor("cpu"), flavor("h100"),
               cq("team-a", {"cpu": {"cpu": 64, "memory": "512Gi", GPU: 0},
                             "h100": {"cpu": 600, "memory": "4Ti", GPU: a_gpu}}, cohort="research"),
               cq("team-b", {"h100": {"cpu": 0, "memory": 0, GPU: b_gpu}}, cohort="research"), lq("q", "team-a")]
    v = verdict_of(objects, rayjob())
    assert v.state == state
    if needed:
        assert needed in v.message


def test_a_borrowing_neighbour_waits_for_its_reclaim_or_is_preempted():
    neighbour = admitted("borrower", "team-b", {GPU: ("h100", 24)}, priority=5)
    objects = [*standard(gpus=16, cohort="research"),
               cq("team-b", {"h100": {"cpu": 0, "memory": 0, GPU: 8}}, cohort="research"), neighbour]
    v = verdict_of(objects, rayjob(trainer=1))
    assert (v.state, v.reason) == ("waiting", "WaitingForQuota")  # reclaimWithinCohort defaults to Never
    objects[2]["spec"]["preemption"] = {"reclaimWithinCohort": "Any"}
    v = verdict_of(objects, rayjob(trainer=1))  # 16 GPUs: team-a's own nominal quota
    assert v.state == "preempt" and [(t.workload.name, t.reason) for t in v.targets] == [
        ("borrower", "InCohortReclamation")]
    assert v.message.endswith(". Pending the preemption of 1 workload(s)")
    # 24 GPUs would borrow 8 once admitted: Kueue reclaims only for a queue within its nominal quota
    # (without borrowWithinCohort), so the run waits for the borrower to finish
    v = verdict_of(objects, rayjob())
    assert (v.state, v.reason, v.targets) == ("waiting", "WaitingForQuota", [])


def test_lower_priority_workloads_of_the_same_queue_are_preempted_when_the_policy_says_so():
    low = admitted("low", "team-a", {GPU: ("h100", 16)}, priority=10)
    high = admitted("high", "team-a", {GPU: ("h100", 8)}, priority=1000)
    objects = [*standard(gpus=32, preemption={"withinClusterQueue": "LowerPriority"}), low, high,
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": "normal"}, "value": 100}]
    job = rayjob(labels={"kueue.x-k8s.io/priority-class": "normal"})
    v = verdict_of(objects, job)
    assert v.state == "preempt" and [t.workload.name for t in v.targets] == ["low"]
    assert v.workload.priority == 100 and v.workload.priority_source == "WorkloadPriorityClass normal"
    never = [*standard(gpus=32), low, high, objects[-1]]  # withinClusterQueue: Never (the default)
    assert verdict_of(never, job).state == "waiting"


def test_usage_from_the_cluster_queue_status_when_no_workload_is_given():
    objects = standard()
    objects[2]["status"] = {"flavorsReservation": [{"name": "h100", "resources": [
        {"name": GPU, "total": "20"}, {"name": "cpu", "total": "0"}]}]}
    snap = snapshot_from_objects(objects)
    assert snap.usage_source == "status.flavorsReservation of 1 ClusterQueue(s)"
    (wl,), _ = workload_requests(snap, [rayjob()])
    assert assign(snap, wl).state == "waiting"


@pytest.mark.parametrize(("objects", "state", "reason", "message"), [
    ([flavor("cpu")], "misconfigured", "Misconfigured", "LocalQueue q doesn't exist"),
    ([lq("q", "nope")], "misconfigured", "Misconfigured", "ClusterQueue nope doesn't exist"),
    ([*standard(stopPolicy="Hold")], "inactive", "Suspended", "ClusterQueue team-a is inactive"),
    ([standard()[0], *standard()[2:]], "inactive", "Suspended", "ClusterQueue team-a is inactive"),
    ([*standard()[:2], cq("team-a", {"cpu": {"cpu": 1}}, selector={"matchLabels": {"team": "x"}}), lq("q", "team-a")],
     "misconfigured", "Misconfigured", "workload namespace doesn't match ClusterQueue selector"),
])
def test_queue_problems_in_kueues_words(objects, state, reason, message):
    v = verdict_of(objects, rayjob())
    assert (v.state, v.reason, v.message) == (state, reason, message)


def test_a_cluster_queue_without_namespace_selector_admits_no_namespace():
    objects = standard()
    del objects[2]["spec"]["namespaceSelector"]
    v = verdict_of(objects, rayjob())
    assert v.message == "workload namespace doesn't match ClusterQueue selector"
    assert "has no namespaceSelector, which admits no namespace" in v.notes[0]


def test_the_missing_flavor_is_named():
    v = verdict_of([standard()[0], *standard()[2:]], rayjob())
    assert v.notes == ["ResourceFlavor h100 not found (FlavorNotFound)"]


def test_a_resource_the_queue_does_not_cover_makes_the_workload_inadmissible():
    v = verdict_of(standard(), rayjob(**{"vpc.amazonaws.com/efa": "32"}))
    assert (v.state, v.reason) == ("never", "NoMatchingFlavor")
    assert "couldn't assign flavors to pod set trainer: resource vpc.amazonaws.com/efa unavailable in ClusterQueue" \
        in v.message


def test_flavor_node_labels_and_taints_are_matched_against_the_pods():
    objects = [flavor("cpu", {"node-role": "cpu"}), flavor("h100", {"node.kubernetes.io/instance-type": "p5"}),
               *standard()[2:]]
    v = verdict_of(objects, rayjob(gpu_selector={"node.kubernetes.io/instance-type": "p4de"},
                                   head_selector={"node-role": "cpu"}))
    # no flavor fits: h100 does not match, the cpu flavor has no GPU quota (the least severe blocker counts)
    assert (v.state, v.reason) == ("never", "ExceedsMaxQuota")
    assert v.message.startswith("couldn't assign flavors to pod set trainer: flavor h100 doesn't match node affinity, "
                                "insufficient quota for cpu in flavor cpu")
    taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    objects[1] = flavor("h100", {"node.kubernetes.io/instance-type": "p5"}, [taint])
    v = verdict_of(objects, rayjob(gpu_selector={"node.kubernetes.io/instance-type": "p5"}))
    assert "untolerated taint dedicated=ml:NoSchedule in flavor h100" in v.message
    only = [flavor("h100", {"node.kubernetes.io/instance-type": "p5"}), cq("team-a", {"h100": {
        "cpu": 600, "memory": "4Ti", GPU: 24}}), lq("q", "team-a")]
    v = verdict_of(only, rayjob(gpu_selector={"node.kubernetes.io/instance-type": "p4de"}))
    assert (v.state, v.reason) == ("never", "NoMatchingFlavor")


def test_topology_requests_need_a_flavor_that_supports_them():
    tas = {"trainer": {"kueue.x-k8s.io/podset-required-topology": "block"}}
    v = verdict_of(standard(), rayjob(annotations=tas))
    assert v.state == "never" and 'Flavor "h100" does not support TopologyAwareScheduling' in v.message
    objects = [flavor("cpu"), flavor("h100", {"x": "y"}, topology="t"), *standard()[2:],
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
                "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}]
    v = verdict_of(objects, rayjob(annotations=tas))
    assert 'Flavor "h100" does not contain the requested level' in v.message
    v = verdict_of(objects, rayjob())
    assert 'Flavor "h100" supports only TopologyAwareScheduling' in v.message


def test_cohort_objects_form_a_tree_with_their_own_quota():
    objects = [*standard(gpus=16, cohort="research"),
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "research"},
                "spec": {"parentName": "org"}},
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "org"},
                "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
                    {"name": "h100", "resources": [{"name": GPU, "nominalQuota": 8}]}]}]}}]
    v = verdict_of(objects, rayjob())
    assert v.state == "admitted" and v.borrowing  # 16 own + 8 from the organisation's cohort


def test_a_cohort_cycle_and_a_bad_quantity_are_bad_input():
    loop = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": a},
             "spec": {"parentName": b}} for a, b in (("x", "y"), ("y", "x"))]
    with pytest.raises(ConfigError) as e:
        snapshot_from_objects(loop)
    assert "--kueue: Cohort x: the cohort tree has a cycle" in e.value.render()
    bad = standard()
    bad[2]["spec"]["resourceGroups"][0]["flavors"][1]["resources"][2]["nominalQuota"] = "lots"
    with pytest.raises(ConfigError) as e:
        snapshot_from_objects(bad)
    assert "--kueue: ClusterQueue team-a flavor h100: nvidia.com/gpu: got 'lots'" in e.value.render()  # golden plan


def test_pods_are_counted_when_the_queue_covers_them():
    objects = standard()
    objects[2] = cq("team-a", {"cpu": {"cpu": 64, "memory": "512Gi", GPU: 0, "pods": 2},
                               "h100": {"cpu": 600, "memory": "4Ti", GPU: 24, "pods": 2}})
    v = verdict_of(objects, rayjob())
    assert v.state == "never" and "insufficient quota for pods in flavor h100" in v.message
