"""infra.kueue rendered onto the run's objects (render/kueue.py)."""

from __future__ import annotations

import pytest
from kueuekit import by_kind

from dockyard_k8s import kueue
from dockyard_k8s.kube import pod_templates

QUEUED = "  kueue:\n    queueName: team-q\n"


def labels(obj):
    return obj["metadata"]["labels"]


@pytest.mark.parametrize(("mode", "kinds"), [("rayjob", ["RayJob"]), ("bringup", ["RayCluster"]), ("job", ["Job"]),
                                             ("statefulset", ["StatefulSet", "StatefulSet"])])
def test_the_queue_label_goes_on_the_workload_kueue_admits(kueue_run, mode, kinds):
    objects = kueue_run(QUEUED + "    priorityClass: research-high\n", [f"launch.mode={mode}"])
    queued = [o for o in objects if kueue.QUEUE_LABEL in labels(o)]
    assert [o["kind"] for o in queued] == kinds
    for o in queued:
        assert labels(o)[kueue.QUEUE_LABEL] == "team-q"
        assert labels(o)[kueue.PRIORITY_LABEL] == "research-high"
        assert list(labels(o)) == sorted(labels(o))
        assert "suspend" not in o["spec"]  # Kueue's webhook suspends it; its controller owns the field
    sandbox = by_kind(objects, "Deployment")[0]
    assert kueue.QUEUE_LABEL not in labels(sandbox)  # the pool runs beside the queue by default


def test_nothing_is_labelled_when_the_run_is_not_queued(kueue_run):
    for o in kueue_run():
        assert not any(k.startswith("kueue.x-k8s.io/") for k in labels(o))
        for t in pod_templates(o):
            assert not (t.metadata.get("annotations") or {})


def test_the_sandbox_is_queued_on_request(kueue_run):
    sandbox = by_kind(kueue_run(QUEUED + "    sandbox: true\n"), "Deployment")[0]
    assert labels(sandbox)[kueue.QUEUE_LABEL] == "team-q"


def test_topology_annotations_on_the_gpu_pod_sets_and_per_fleet_overrides(kueue_run):
    objects = kueue_run(QUEUED + "    topology: {mode: required, level: cloud.google.com/gce-topology-block}\n"
                                 "    fleets:\n      inference: {mode: preferred, level: kubernetes.io/hostname}\n"
                                 "      head: {mode: preferred, level: kubernetes.io/hostname}\n")
    rayjob = by_kind(objects, "RayJob")[0]
    found = {ps.name: (ps.metadata.get("annotations") or {}) for ps in kueue.pod_sets(rayjob)}
    assert found == {
        "head": {kueue.PREFERRED_TOPOLOGY: "kubernetes.io/hostname"},
        "trainer": {kueue.REQUIRED_TOPOLOGY: "cloud.google.com/gce-topology-block"},
        "inference": {kueue.PREFERRED_TOPOLOGY: "kubernetes.io/hostname"},
        "submitter": {},
    }


def test_together_groups_trainer_and_inference(kueue_run):
    objects = kueue_run(QUEUED + "    topology: {mode: preferred, level: topology.k8s.aws/network-node-layer-2, "
                                 "together: true}\n", ["kuberay.trainer.replicas=3"])
    rayjob = by_kind(objects, "RayJob")[0]
    groups = {ps.name: (ps.metadata.get("annotations") or {}).get(kueue.POD_SET_GROUP) for ps in kueue.pod_sets(rayjob)}
    assert groups == {"head": None, "trainer": "gpu", "inference": "gpu", "submitter": None}


def test_statefulset_pod_sets_get_their_fleets_topology(kueue_run):
    objects = kueue_run(QUEUED + "    topology: {mode: preferred, level: topology.k8s.aws/network-node-layer-2, "
                                 "together: true}\n", ["launch.mode=statefulset"])
    for sts in by_kind(objects, "StatefulSet"):
        annotations = sts["spec"]["template"]["metadata"]["annotations"]
        # one Workload per StatefulSet: no podset group across two Workloads
        assert annotations == {kueue.PREFERRED_TOPOLOGY: "topology.k8s.aws/network-node-layer-2"}


def test_eks_offers_the_layer_2_network_node_as_the_topology_level(kueue_run):
    eks = ("  platform: eks\n  instanceType: p5.48xlarge\n"
           "  kueue:\n    queueName: team-q\n    topology: {mode: preferred}\n")
    objects = kueue_run(eks)
    sts = by_kind(objects, "RayJob")[0]
    trainer = next(ps for ps in kueue.pod_sets(sts) if ps.name == "trainer")
    assert trainer.metadata["annotations"] == {kueue.PREFERRED_TOPOLOGY: "topology.k8s.aws/network-node-layer-2"}


def test_queue_objects_are_sized_from_the_run_first_and_without_the_run_label(kueue_run):
    objects = kueue_run(QUEUED + "    topology: {mode: preferred, level: topology.k8s.aws/network-node-layer-2}\n"
                                 "    queueObjects: {render: true, cohort: research, runs: 2}\n"
                                 "kuberay:\n  head: {nodeSelector: {node-role: cpu}}\n"
                                 "  trainer: {replicas: 2, nodeSelector: {node.kubernetes.io/instance-type: "
                                 "p5.48xlarge}, extendedResources: {vpc.amazonaws.com/efa: 32}}\n"
                                 "  inference: {nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}}\n",
                        ["launch.mode=bringup"])
    kinds = [o["kind"] for o in objects[:5]]
    assert kinds == ["ResourceFlavor", "ResourceFlavor", "Topology", "ClusterQueue", "LocalQueue"]
    for o in objects[:5]:
        assert "dockyard-k8s/run" not in labels(o)
    cpu_flavor, gpu_flavor, topology, cq, lq = objects[:5]
    assert cpu_flavor["metadata"]["name"] == "default-flavor"
    assert cpu_flavor["spec"] == {"nodeLabels": {"node-role": "cpu"}}
    assert gpu_flavor["metadata"]["name"] == "p5.48xlarge"
    assert gpu_flavor["spec"] == {"nodeLabels": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
                                  "topologyName": "default"}
    assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    group = cq["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    # head 8 cpu / 32Gi (x 2 runs); 3 GPU pods of 8 GPUs, 32 cpu, 256Gi, 32 EFA (trainer only) x 2 runs
    assert quota == {"default-flavor": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "0",
                                        "vpc.amazonaws.com/efa": "0"},
                     "p5.48xlarge": {"cpu": "192", "memory": "1536Gi", "nvidia.com/gpu": "48",
                                     "vpc.amazonaws.com/efa": "128"}}
    assert cq["spec"]["cohortName"] == "research"
    assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team"}}
    assert lq["metadata"] == {"name": "team-q", "namespace": "team", "labels": labels(lq)}
    assert lq["spec"] == {"clusterQueue": "team-q"}


def test_a_queued_sandbox_pool_is_sized_into_the_cpu_flavor(kueue_run):
    def quota(extra):
        cq = by_kind(kueue_run(QUEUED + extra + "    queueObjects: {render: true}\n"), "ClusterQueue")[0]
        group = cq["spec"]["resourceGroups"][0]
        return group["coveredResources"], {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
                                           for f in group["flavors"]}
    covered, without = quota("")
    covered_sbx, with_sbx = quota("    sandbox: true\n")
    assert "ephemeral-storage" not in covered
    assert "ephemeral-storage" in covered_sbx  # the pool's scratch space must be covered, or Kueue never admits it
    assert with_sbx["default-flavor"]["ephemeral-storage"] != "0"
    assert with_sbx["default-flavor"]["cpu"] != without["default-flavor"]["cpu"]
    assert {r: q for r, q in with_sbx["gpu"].items() if r != "ephemeral-storage"} == without["gpu"]


def test_no_queue_objects_unless_asked(kueue_run):
    assert not by_kind(kueue_run(QUEUED), "ClusterQueue")


def test_check_summary_says_what_is_queued(kueue_run):
    from dockyard_k8s.render.kueue import kueue_summary

    infra = {"infra": {"kueue": {"queueName": "q", "priorityClass": None, "sandbox": False,
                                 "topology": {"mode": "none", "level": None, "together": False},
                                 "fleets": {"head": None, "trainer": None, "inference": None, "submitter": None}},
                       }, "launch": {"mode": "attach"}, "sandbox": {"enabled": True}}
    summary = kueue_summary(infra, [])  # said whole: tests/golden/messages/check-report.txt
    assert summary is not None and summary.startswith("LocalQueue q: nothing queued (launch.mode attach")
    infra["infra"]["kueue"]["queueName"] = None
    assert kueue_summary(infra, []) is None


# --- WorkloadPriorityClass and MultiKueue, when asked (issue 22 item 16) --------------------------------

ADMIN = ("    priorityClass: research-high\n"
         "    queueObjects:\n      render: true\n      priorityValue: 1000\n"
         "      multiKueue:\n        clusters:\n        - {name: worker-east}\n"
         "        - {name: worker-west, kubeConfigSecret: west-admin}\n")


def team_objects_of(objects):
    return [o for o in objects if o["apiVersion"].startswith("kueue.x-k8s.io/")]


def test_the_priority_class_and_multikueue_are_rendered_with_the_queue_objects(kueue_run):
    team = team_objects_of(kueue_run(QUEUED + ADMIN))
    assert [o["kind"] for o in team] == ["ResourceFlavor", "ResourceFlavor", "WorkloadPriorityClass",
                                         "MultiKueueCluster", "MultiKueueCluster", "MultiKueueConfig",
                                         "AdmissionCheck", "ClusterQueue", "LocalQueue"]
    for o in team:
        assert "dockyard-k8s/run" not in labels(o)  # the team's: `down` never deletes them
    wpc, east, west, config, check, cq = team[2:8]
    assert (wpc["metadata"]["name"], wpc["value"]) == ("research-high", 1000)
    assert east["metadata"]["name"] == "worker-east"
    assert east["spec"] == {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                             "location": "worker-east-kubeconfig"}}}
    assert west["spec"]["clusterSource"]["kubeConfig"]["location"] == "west-admin"
    assert (config["metadata"]["name"], config["spec"]) == ("multikueue", {"clusters": ["worker-east", "worker-west"]})
    assert (check["metadata"]["name"], check["spec"]) == ("multikueue", {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"}})
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}


def test_the_rendered_admin_objects_are_valid_kueue_v0_19_objects(kueue_run):
    """Against the real CRDs (the bundled copies of ../shared/crds/kueue, equal byte for byte)."""
    from dockyard_k8s.validate.engine import validate_report

    team = team_objects_of(kueue_run(QUEUED + ADMIN))
    report = validate_report(team)
    assert report.problems == [] and report.missing == []
    assert {report.sources[f"kueue.x-k8s.io/v1beta2/{k}"] for k in
            ("WorkloadPriorityClass", "MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck")} == {
        "Kueue v0.19.2 CRD (bundled)"}


def test_run_applies_none_of_them_and_plan_reads_them(kueue_run):
    from dockyard_k8s.live.orchestrate import split_apply
    from dockyard_k8s.plan.kueue_model import snapshot_from_objects
    from dockyard_k8s.plan.kueue_plan import team_objects

    objects = kueue_run(QUEUED + ADMIN)
    applied, skipped = split_apply(objects)
    assert team_objects_of(objects) == skipped and not team_objects_of(applied)
    snap = snapshot_from_objects(team_objects(objects))
    assert snap.workload_priorities == {"research-high": 1000}
    assert snap.admission_checks == {"multikueue": "kueue.x-k8s.io/multikueue"}


def test_no_priority_class_or_multikueue_unless_asked(kueue_run):
    kinds = {o["kind"] for o in kueue_run(QUEUED + "    priorityClass: research-high\n"
                                                   "    queueObjects: {render: true}\n")}
    assert not kinds & {"WorkloadPriorityClass", "MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"}
