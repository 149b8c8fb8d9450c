"""Kueue's webhook rules: at the infra key for a run (exit 2), on any manifest for `validate`."""

from __future__ import annotations

import pytest

from dockyard_k8s.cli import main
from dockyard_k8s.validate.kueue import kueue_problems

QUEUED = "  kueue:\n    queueName: team-q\n"


def test_a_queued_rayjob_must_delete_its_cluster_after_finishing(kueue_problems_of):
    problems = kueue_problems_of(QUEUED + "launch:\n  shutdownAfterJobFinishes: false\n  ttlSecondsAfterFinished: 0\n")
    assert len(problems) == 1
    assert problems[0].endswith(":7:29: launch.shutdownAfterJobFinishes: RayJob spec.shutdownAfterJobFinishes: "
                                "Invalid value: false: a kueue managed job should delete the cluster after finishing "
                                "(Kueue's webhook would refuse it)")


def test_autoscaling_a_head_worker_group_and_too_many_pod_sets_at_kuberay_spec(kueue_problems_of):
    template = "        template: {spec: {containers: [{name: w, image: x}]}}\n"
    groups = "".join(f"      - groupName: extra{i}\n{template}" for i in range(16))
    extra = ", ".join(["head", *(f"extra{i}" for i in range(16))])  # worker groups beside trainer and inference
    problems = kueue_problems_of(QUEUED + f"kuberay:\n  extraGroups: [{extra}]\n"
                                          "  spec:\n    enableInTreeAutoscaling: true\n"
                                          "    workerGroupSpecs:\n      - groupName: head\n"
                                          "        template: {spec: {containers: [{name: w, image: x}]}}\n" + groups)
    text = "\n".join(problems)
    assert "kuberay.spec.enableInTreeAutoscaling: RayJob spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: " \
           "true: a kueue managed job should only use autoscaling when workload slicing is enabled" in text
    assert 'kuberay.spec.workerGroupSpecs[0].groupName: RayJob spec.rayClusterSpec.workerGroupSpecs[2].groupName: ' \
           'Forbidden: "head" is reserved for the head group' in text
    assert "kuberay.spec.workerGroupSpecs[15]: RayJob spec.rayClusterSpec.workerGroupSpecs[17]: Too many: 20: must " \
           "have at most 18 items" in text


def test_a_raycluster_may_autoscale_only_as_an_elastic_job(kueue_problems_of):
    problems = kueue_problems_of(QUEUED + "launch:\n  mode: bringup\nkuberay:\n  spec:\n    enableInTreeAutoscaling: "
                                          "true\n")
    assert 'kuberay.spec.enableInTreeAutoscaling: RayCluster spec.enableInTreeAutoscaling: Invalid value: true: a ' \
           'kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ' \
           'ElasticJobsViaWorkloadSlices feature gate and set the "kueue.x-k8s.io/elastic-job": "true" annotation' \
           in problems[0]


def test_a_queue_name_kueue_cannot_read(kueue_problems_of):
    problems = kueue_problems_of("  kueue:\n    queueName: Team_A\n")
    assert ":5:16: infra.kueue.queueName: RayJob metadata.labels[\"kueue.x-k8s.io/queue-name\"]: Invalid value: " \
           "'Team_A': a lowercase RFC 1123 subdomain" in problems[0]


def test_topology_level_that_is_not_a_label_name(kueue_problems_of):
    problems = kueue_problems_of(QUEUED + "    topology: {mode: required, level: 'block id'}\n")
    assert all("infra.kueue.topology: RayJob spec.rayClusterSpec.workerGroupSpecs[" in p for p in problems)
    assert len(problems) == 2 and "Invalid value: 'block id': name part must consist of alphanumeric" in problems[0]


@pytest.mark.parametrize(("extra", "where", "expected"), [
    ("    priorityClass: high\n", "infra.kueue.priorityClass", "has no effect: the run is not queued"),
    ("    sandbox: true\n", "infra.kueue.sandbox", "has no effect: the run is not queued"),
    ("    topology: {mode: preferred, level: x}\n", "infra.kueue.topology", "has no effect: topology requests"),
    ("    queueObjects: {render: true}\n", "infra.kueue.queueObjects.render", "has no effect"),
])
def test_kueue_keys_without_a_queue_do_nothing_and_say_so(kueue_problems_of, extra, where, expected):
    problems = kueue_problems_of("  kueue:\n" + extra)
    assert len(problems) == 1 and f": {where}: {expected}" in problems[0]


@pytest.mark.parametrize(("extra", "sets", "where", "expected"), [
    ("launch:\n  suspend: true\n", [], "launch.suspend", "must be false when the run is queued"),
    ("", ["infra.kueue.topology.mode=required"], "infra.kueue.topology.level", "is required with mode required"),
    ("", ["launch.mode=bringup", "infra.kueue.fleets.submitter.mode=preferred",
          "infra.kueue.fleets.submitter.level=kubernetes.io/hostname"],
     "infra.kueue.fleets.submitter", "launch.mode bringup has no submitter pod set"),
    ("", ["launch.submissionMode=HTTPMode", "infra.kueue.fleets.submitter.mode=preferred",
          "infra.kueue.fleets.submitter.level=kubernetes.io/hostname"],
     "infra.kueue.fleets.submitter", "submissionMode HTTPMode has no submitter pod set"),
    ("", ["infra.kueue.topology.mode=preferred", "infra.kueue.topology.level=x", "infra.kueue.topology.together=true",
          "kuberay.trainer.replicas=2", "kuberay.inference.replicas=2"],
     "infra.kueue.topology.together", "kueue: can only define groups where at least one pod set has only 1 replica, "
                                      "got: 2 replica(s) and 2 replica(s) in the group"),
    ("", ["infra.kueue.fleets.trainer.mode=preferred", "infra.kueue.fleets.trainer.level=a",
          "infra.kueue.topology.mode=preferred", "infra.kueue.topology.level=b", "infra.kueue.topology.together=true"],
     "infra.kueue.topology.together", "consistent with the other pod set in the group (got trainer: preferred a, "
                                      "inference: preferred b)"),
    ("", ["infra.kueue.sandbox=true", "sandbox.enabled=false"], "infra.kueue.sandbox", "sandbox.enabled is false"),
    # issue 22 item 16: what renders the admin's WorkloadPriorityClass and MultiKueue objects
    ("", ["infra.kueue.queueObjects.render=true", "infra.kueue.queueObjects.priorityValue=100"],
     "infra.kueue.queueObjects.priorityValue", "names no WorkloadPriorityClass: set infra.kueue.priorityClass"),
    ("", ["infra.kueue.priorityClass=high", "infra.kueue.queueObjects.priorityValue=100"],
     "infra.kueue.queueObjects.priorityValue", "has no effect without infra.kueue.queueObjects.render"),
    ("", ["infra.kueue.queueObjects.multiKueue.clusters=[{name: a}]"],
     "infra.kueue.queueObjects.multiKueue.clusters", "has no effect without infra.kueue.queueObjects.render"),
    ("", ["infra.kueue.queueObjects.render=true",
          "infra.kueue.queueObjects.multiKueue.clusters=[{name: a}, {name: a}]"],
     "infra.kueue.queueObjects.multiKueue.clusters[1].name", "Duplicate value: 'a' (MultiKueueConfig spec.clusters "
                                                            "must be unique)"),
    ("", ["infra.kueue.queueObjects.render=true",
          "infra.kueue.queueObjects.multiKueue.clusters=[" + ", ".join(f"{{name: w{i}}}" for i in range(21)) + "]"],
     "infra.kueue.queueObjects.multiKueue.clusters", "Too many: 21: must have at most 20 items"),
])
def test_combinations_that_cannot_work(kueue_problems_of, extra, sets, where, expected):
    problems = kueue_problems_of(QUEUED + extra, sets)
    assert [p for p in problems if f": {where}: " in p and expected in p], problems


def test_an_attach_run_with_a_queue_is_no_error(kueue_run):
    objects = kueue_run(QUEUED, ["launch.mode=attach", "launch.attach.cluster=shared"])
    assert not [o for o in objects if "kueue.x-k8s.io/queue-name" in o["metadata"]["labels"]]


# --- any manifest (validate) -----------------------------------------------------------------------

RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: j
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  entrypoint: python x.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template: {spec: {containers: [{name: head, image: "ray:2"}]}}
    workerGroupSpecs:
    - groupName: a
      replicas: 2
      rayStartParams: {}
      template:
        metadata:
          annotations:
            kueue.x-k8s.io/podset-group-name: g
            kueue.x-k8s.io/podset-required-topology: block
            kueue.x-k8s.io/podset-preferred-topology: block
        spec: {containers: [{name: w, image: "ray:2"}]}
    - groupName: b
      replicas: 2
      rayStartParams: {}
      template:
        metadata:
          annotations:
            kueue.x-k8s.io/podset-group-name: "7"
        spec: {containers: [{name: w, image: "ray:2"}]}
"""


def test_validate_reports_kueue_rules_on_a_users_rayjob(tmp_path, capsys):
    path = tmp_path / "j.yaml"
    path.write_text(RAYJOB)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    at = "RayJob j: spec.rayClusterSpec.workerGroupSpecs"
    assert f"{at}[0].template.metadata.annotations: Invalid value: must not contain more than one topology " \
           'annotation: ["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", ' \
           '"kueue.x-k8s.io/podset-unconstrained-topology"]' in out
    assert f"{at}[1].template.metadata.annotations[\"kueue.x-k8s.io/podset-group-name\"]: Invalid value: '7': must " \
           "not be a number" in out
    assert f"{at}[1].template.metadata.annotations[\"kueue.x-k8s.io/podset-group-name\"]: Forbidden: may not be set " \
           "when neither" in out
    assert f"{at}[0].template.metadata.annotations[\"kueue.x-k8s.io/podset-group-name\"]: Invalid value: 'g': can " \
           "only define groups of exactly 2 pod sets, got: 1 pod set(s)" in out


def test_an_unqueued_rayjob_is_not_judged_by_kueue():
    import yaml

    job = yaml.safe_load(RAYJOB)
    del job["metadata"]["labels"]
    assert kueue_problems(job) == []


def test_a_rayjob_on_an_existing_cluster_is_not_managed_but_both_is_refused():
    import yaml

    job = yaml.safe_load(RAYJOB)
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "c"}
    assert kueue_problems(job) == [(("spec", "clusterSelector"), "Invalid value: a kueue managed job should not use "
                                                                  "an existing cluster")]
    del job["spec"]["rayClusterSpec"]
    assert kueue_problems(job) == []
    del job["spec"]["clusterSelector"]
    assert kueue_problems(job) == [(("spec", "rayClusterSpec"), "Required value: rayClusterSpec is required for "
                                                                "Kueue-managed jobs that don't use clusterSelector")]


def test_a_group_of_two_pod_sets_with_many_replicas_and_different_topologies():
    pod_sets = [
        ("a", 2, {"kueue.x-k8s.io/podset-group-name": "g", "kueue.x-k8s.io/podset-required-topology": "block"}),
        ("b", 3, {"kueue.x-k8s.io/podset-group-name": "g", "kueue.x-k8s.io/podset-preferred-topology": "block"}),
    ]
    job = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c", "labels": {
        "kueue.x-k8s.io/queue-name": "q"}}, "spec": {"headGroupSpec": {"template": {"spec": {}}}, "workerGroupSpecs": [
            {"groupName": n, "replicas": r, "template": {"metadata": {"annotations": a}, "spec": {}}}
            for n, r, a in pod_sets]}}
    messages = [m for _, m in kueue_problems(job)]
    assert messages.count("Invalid value: 'g': can only define groups where at least one pod set has only 1 replica, "
                          "got: 2 replica(s) and 3 replica(s) in the group") == 2
    assert ("Invalid value: must specify 'kueue.x-k8s.io/podset-required-topology' or "
            "'kueue.x-k8s.io/podset-preferred-topology' topology consistent with "
            "'spec.workerGroupSpecs[1].template.metadata.annotations' in group 'g'") in messages


@pytest.mark.parametrize(("obj", "expected"), [
    ({"kind": "ClusterQueue", "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "2"}]}]}]}},
     [(("spec", "resourceGroups", 0, "flavors", 0), "flavors must have the same number of resources as the "
                                                     "coveredResources"),
      (("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "borrowingLimit"),
       "Invalid value: '2': must be nil when cohort is empty")]),
    ({"kind": "ClusterQueue", "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "memory", "nominalQuota": "4", "lendingLimit": "8"}]}]}]}},
     [(("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "name"),
       "Invalid value: 'memory': must match the name in coveredResources"),
      (("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "lendingLimit"),
       "Invalid value: '8': must be less than or equal to the nominalQuota")]),
    ({"kind": "ClusterQueue", "spec": {"preemption": {"reclaimWithinCohort": "Never",
                                                      "borrowWithinCohort": {"policy": "LowerPriority"}}}},
     [(("spec", "preemption"), "Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")]),
    ({"kind": "ResourceFlavor", "spec": {"topologyName": "t"}},
     [(("spec",), "at least one nodeLabel is required when topology is set")]),
    ({"kind": "Topology", "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "block"}]}},
     [(("spec", "levels"), "the kubernetes.io/hostname label can only be used at the lowest level of topology")]),
    ({"kind": "Cohort", "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4", "lendingLimit": "1"}]}]}]}},
     [(("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "lendingLimit"),
       "Invalid value: '1': must be nil when parent is empty")]),
    # a Cohort may lend more than its own nominal quota (its children's quota passes through it):
    # cohort_webhook.go validateCohort sets enforceNominalGreaterThanLending: false (issue 22 item 14)
    ({"kind": "Cohort", "spec": {"parentName": "org", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "0", "lendingLimit": "8"}]}]}]}}, []),
])
def test_kueue_objects_get_the_crds_cel_rules_and_the_webhooks(obj, expected):
    assert kueue_problems({"apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": {"name": "x"}, **obj}) == expected


def test_judged_is_what_kueues_webhooks_see() -> None:
    """The engine loads Kueue's rules only for these: a missed kind would go unchecked."""
    from dockyard_k8s import kueue as names
    from dockyard_k8s.validate.kueue import kueue_problems

    queued = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"labels": {names.QUEUE_LABEL: "q"}}}
    null_queue = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": {names.QUEUE_LABEL: None}}}
    queue_object = {"apiVersion": names.API_VERSION, "kind": "ClusterQueue",
                    "spec": {"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Any"}}}}
    plain_job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": {"app": "x"}}}
    assert [names.judged(o) for o in (queued, null_queue, queue_object, plain_job, {})] == [
        True, True, True, False, False]
    # and what is not judged has no Kueue problem to miss
    assert kueue_problems(plain_job) == [] and kueue_problems({}) == []
    assert kueue_problems(queue_object) != []
