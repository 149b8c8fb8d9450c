"""Operator-free launch shapes: the Job and the headless Service + StatefulSets."""

from __future__ import annotations

import json

import pytest
from platforms_support import BundleOf, env_of, find, kinds, pods_by_fleet

from dockyard_k8s.errors import ConfigError
from dockyard_k8s.kube import add_quantities
from dockyard_k8s.render.shapes import bootstrap_script

JOB = {"launch": {"mode": "job"}, "kuberay": {"trainer": {"replicas": 1, "gpus": 4},
                                              "inference": {"replicas": 1, "gpus": 4}}}
STS = {"launch": {"mode": "statefulset"}}


def test_job_is_a_single_node_batch_job(bundle_of: BundleOf) -> None:
    objects = bundle_of(JOB).objects
    job = find(objects, "Job")
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 0)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert kinds(objects)[-2:] == ["ConfigMap", "Job"]  # the bootstrap script first
    assert "RayJob" not in kinds(objects) and "RayCluster" not in kinds(objects)


def test_job_pod_hosts_the_head_and_every_fleet(bundle_of: BundleOf) -> None:
    pod = find(bundle_of(JOB).objects, "Job")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"  # 4 trainer + 4 inference
    assert c["resources"]["requests"]["cpu"] == "72"  # head 8 + 2 x 32
    assert c["resources"]["requests"]["memory"] == "544Gi"  # head 32Gi + 2 x 256Gi
    env = env_of(c)
    assert json.loads(env["DOCKYARD_RAY_RESOURCES"]) == {"dockyard_fleet_inference": 4, "dockyard_fleet_trainer": 4}
    assert env["DOCKYARD_NUM_NODES"] == "1" and env["DOCKYARD_HEAD_POD"] == ""
    assert env["DOCKYARD_AFTER_FINISH"] == "exit"
    assert env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
    assert env["DOCKYARD_SANDBOX_URLS"] == "http://grpo-swe-sandbox.default.svc.cluster.local:9090"
    assert env["DOCKYARD_ENTRYPOINT"].endswith("--config /etc/dockyard-k8s/recipe.yaml ++env.code.sandbox_urls=null")
    assert c["command"] == ["/bin/bash", "/opt/dockyard/ray-bootstrap.sh"]


def test_job_follows_launch_settings(bundle_of: BundleOf) -> None:
    job = find(bundle_of({**JOB, "launch": {"mode": "job", "activeDeadlineSeconds": 100, "suspend": True,
                                         "backoffLimit": 2}}).objects, "Job")
    assert job["spec"]["activeDeadlineSeconds"] == 100
    assert job["spec"]["suspend"] is True and job["spec"]["backoffLimit"] == 2
    assert job["spec"]["ttlSecondsAfterFinished"] == 600


def test_statefulset_shape_order_and_service(bundle_of: BundleOf) -> None:
    objects = bundle_of(STS).objects
    assert [o["kind"] for o in objects[-4:]] == ["ConfigMap", "Service", "StatefulSet", "StatefulSet"]
    svc = objects[-3]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert sorted(p["port"] for p in svc["spec"]["ports"]) == [6379, 8265, 10001]
    for sts in objects[-2:]:
        spec = sts["spec"]
        assert spec["podManagementPolicy"] == "Parallel"
        assert spec["serviceName"] == svc["metadata"]["name"]
        labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= labels.items()
        assert svc["spec"]["selector"].items() <= labels.items()  # DNS names for every Ray pod


def test_statefulset_head_is_trainer_0_and_fleets_keep_their_tags(bundle_of: BundleOf) -> None:
    objects = bundle_of({**STS, "kuberay": {"trainer": {"replicas": 2}, "inference": {"replicas": 3}}}).objects
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "StatefulSet"}
    assert set(by_name) == {"grpo-swe-trainer", "grpo-swe-inference"}
    for role, sts in (("trainer", by_name["grpo-swe-trainer"]), ("inference", by_name["grpo-swe-inference"])):
        c = sts["spec"]["template"]["spec"]["containers"][0]
        env = env_of(c)
        assert env["DOCKYARD_HEAD_POD"] == "grpo-swe-trainer-0"
        assert env["DOCKYARD_HEAD_SERVICE"] == "grpo-swe-ray"
        assert env["DOCKYARD_NUM_NODES"] == "5"
        assert env["DOCKYARD_FLEET_ROLE"] == role
        assert json.loads(env["DOCKYARD_RAY_RESOURCES"]) == {f"dockyard_fleet_{role}": 8}
        assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
        assert env["DOCKYARD_AFTER_FINISH"] == "hold"  # a StatefulSet pod would restart and train again
        assert sts["spec"]["template"]["metadata"]["labels"]["dockyard-k8s/fleet"] == role
        probe = c["livenessProbe"]
        assert probe["exec"]["command"][-1] == "probe" and probe["initialDelaySeconds"] == 120


def test_bootstrap_is_a_configmap_mounted_script_not_inline_bash(bundle_of: BundleOf) -> None:
    objects = bundle_of(STS).objects
    cm = find(objects, "ConfigMap", "grpo-swe-bootstrap")
    assert cm["data"] == {"ray-bootstrap.sh": bootstrap_script()}
    for fleet, pod in pods_by_fleet(objects):
        if fleet in ("trainer", "inference"):
            c = pod["containers"][0]
            assert not any("\n" in word for word in c["command"])
            vol = next(v for v in pod["volumes"] if v["name"] == "bootstrap")
            assert vol["configMap"] == {"name": "grpo-swe-bootstrap", "defaultMode": 0o755}


def test_kuberay_spec_fragments_reach_the_matching_pods(bundle_of: BundleOf) -> None:
    secret = {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    uv = {"name": "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "value": "1"}
    spec = {"workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {
        "containers": [{"name": "ray-worker", "env": [secret, uv]}],
    }}}]}
    objects = bundle_of({**STS, "kuberay": {"spec": spec}}).objects
    pods = dict(pods_by_fleet(objects))
    trainer = pods["trainer"]["containers"]
    assert len(trainer) == 1
    assert secret in trainer[0]["env"]
    assert env_of(trainer[0])["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"  # invariants win
    assert secret not in pods["inference"]["containers"][0]["env"]
    job_pod = find(bundle_of({**JOB, "kuberay": {**JOB["kuberay"], "spec": spec}}).objects, "Job")
    (c,) = job_pod["spec"]["template"]["spec"]["containers"]  # renamed onto the single container
    assert secret in c["env"]


def test_gpu_pdb_covers_statefulset_pods(bundle_of: BundleOf) -> None:
    objects = bundle_of({**STS, "kuberay": {"pdb": {"enabled": True}}}).objects
    pdb = find(objects, "PodDisruptionBudget", "grpo-swe-gpu")
    assert pdb["spec"]["selector"]["matchLabels"] == {"dockyard-k8s/run": "grpo-swe"}


def test_sandbox_and_governance_apply_to_the_shapes(bundle_of: BundleOf) -> None:
    for shape in (JOB, STS):
        objects = bundle_of({**shape, "infra": {"resourceQuota": {"hard": {"requests.nvidia.com/gpu": 16}}}}).objects
        assert kinds(objects)[0] == "ResourceQuota"
        assert "Deployment" in kinds(objects) and find(objects, "Service", "grpo-swe-sandbox")
        for o in objects:
            assert o["metadata"]["labels"]["dockyard-k8s/run"] == "grpo-swe"
            assert o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dockyard-k8s"


def test_statefulset_needs_a_trainer_and_a_short_name(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({**STS, "kuberay": {"trainer": {"replicas": 0}}})
    assert "statefulset mode runs the Ray head on trainer pod 0" in e.value.render()
    with pytest.raises(ConfigError) as e:
        bundle_of({"launch": {"mode": "statefulset", "name": "a" * 45}})
    assert "at most 52 fit" in e.value.render()


def test_job_on_an_instance_type_fits_one_node(bundle_of: BundleOf) -> None:
    # One pod sized from one node's budget (the preset), not head + trainer + inference pods.
    objs = bundle_of({"infra": {"platform": "eks", "instanceType": "p4de.24xlarge"}, "launch": {"mode": "job"}}).objects
    job = next(o for o in objs if o["kind"] == "Job")
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "90", "memory": "1000Gi", "nvidia.com/gpu": "8",
                                     "vpc.amazonaws.com/efa": "4"}
    assert resources["limits"]["cpu"] == "96"
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"platform": "eks", "instanceType": "p4de.24xlarge"}, "launch": {"mode": "job"},
                "kuberay": {"inference": {"replicas": 1}}})
    assert [p.path for p in e.value.problems] == ["kuberay.inference.gpus"]  # said: golden run-rules.txt
    assert "p4de.24xlarge node (8 GPUs)" in e.value.problems[0].message
    assert "the fleets ask 16" in e.value.problems[0].message


@pytest.mark.parametrize(("values", "total"), [
    (["16Gi", "3Gi"], "19Gi"), (["500m", "4"], "4500m"), (["90", "96"], "186"), (["1Gi", "512Mi"], "1536Mi"),
    ([0, "32"], "32"), (["1.5", "1.5"], "3"), (["1G", "1Gi"], "2073741824"),
])
def test_add_quantities(values: list, total: str) -> None:
    assert add_quantities(values) == total
