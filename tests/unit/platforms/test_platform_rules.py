"""Each EKS and single-node rule, asserted on the rendered objects, for every launch shape."""

from __future__ import annotations

import ipaddress

import pytest
from platforms_support import BundleOf, env_of, find, kinds, pods_by_fleet, pods_with_replicas

from dockyard_k8s.config.platforms import EKS_GPU_ENV
from dockyard_k8s.errors import ConfigError

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
SHAPES = ["rayjob", "bringup", "job", "statefulset"]
EKS = {"infra": {"platform": "eks", "instanceType": "p5.48xlarge"}}
KIND = {"infra": {"platform": "kind"}}


def gpu_pods(objects: list[dict]) -> list[tuple[str, dict]]:
    return [(fleet, pod) for fleet, pod in pods_by_fleet(objects)
            if any(GPU in (c.get("resources") or {}).get("limits", {}) for c in pod["containers"])]


def with_mode(spec: dict, mode: str) -> dict:
    """``spec`` in launch mode ``mode``; the job shape is one node, so one GPU fleet there."""
    out = {**spec, "launch": {"mode": mode}}
    if mode == "job":
        out["kuberay"] = {"inference": {"replicas": 0}}
    return out


# --- eks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", SHAPES)
def test_eks_gpu_pods_request_efa_with_the_libfabric_environment(bundle_of: BundleOf, mode: str) -> None:
    pods = gpu_pods(bundle_of(with_mode(EKS, mode)).objects)
    assert pods
    for _, pod in pods:
        c = pod["containers"][0]
        assert c["resources"]["requests"][EFA] == c["resources"]["limits"][EFA]
        assert c["resources"]["limits"][EFA] == "32"  # p5.48xlarge
        env = env_of(c)
        for name in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "NCCL_DEBUG",
                     "TORCH_NCCL_AVOID_RECORD_STREAMS"):
            assert env[name] == EKS_GPU_ENV[name]
        assert env["FI_PROVIDER"] == "efa"


@pytest.mark.parametrize("mode", ["rayjob", "bringup", "statefulset"])
def test_eks_one_gpu_pod_per_node_and_layer2_spread(bundle_of: BundleOf, mode: str) -> None:
    pods = gpu_pods(bundle_of(with_mode(EKS, mode)).objects)
    assert {f for f, _ in pods} == {"trainer", "inference"}
    for _, pod in pods:
        (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchExpressions"][0]["values"] == ["trainer", "inference"]
        (spread,) = pod["topologySpreadConstraints"]
        assert spread["topologyKey"] == "topology.k8s.aws/network-node-layer-2"
        assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
        assert spread["labelSelector"] == term["labelSelector"]


def test_user_affinity_in_kuberay_spec_wins_over_the_profile(bundle_of: BundleOf) -> None:
    mine = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    spec = {**EKS, "kuberay": {"spec": {"workerGroupSpecs": [
        {"groupName": "trainer", "template": {"spec": {"affinity": mine}}}]}}}
    pods = dict(gpu_pods(bundle_of(spec).objects))
    assert pods["trainer"]["affinity"] == mine
    assert "requiredDuringSchedulingIgnoredDuringExecution" in pods["inference"]["affinity"]["podAntiAffinity"]


@pytest.mark.parametrize("mode", SHAPES)
def test_eks_gpu_taint_tolerated_shm_64gi_and_fsx_mounted(bundle_of: BundleOf, mode: str) -> None:
    for _, pod in gpu_pods(bundle_of(with_mode(EKS, mode)).objects):
        assert {"key": GPU, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
        assert volumes["dockyard-storage"]["persistentVolumeClaim"] == {"claimName": "fsx-claim"}
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert mounts["dshm"] == "/dev/shm" and mounts["dockyard-storage"] == "/fsx"


def test_eks_does_not_create_the_fsx_claim(bundle_of: BundleOf) -> None:
    assert "PersistentVolumeClaim" not in kinds(bundle_of(EKS).objects)


def test_eks_rejects_a_small_shm_for_multi_gpu_pods(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({**EKS, "kuberay": {"inference": {"shmSize": "16Gi"}}})
    assert "kuberay.inference.shmSize: got '16Gi', expected at least 64Gi" in e.value.render()
    with pytest.raises(ConfigError):
        bundle_of({**EKS, "kuberay": {"trainer": {"shmSize": None}}})


@pytest.mark.parametrize("image", ["registry.example.com/ubuntu-swe", "registry.example.com/ubuntu-swe:latest",
                                   "localhost:5000/ubuntu-swe"])
def test_eks_requires_pinned_images(bundle_of: BundleOf, image: str) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"platform": "eks", "image": image}})
    assert "infra.image: got" in e.value.render() and "pinned tag or @sha256: digest" in e.value.render()


def test_an_unpinned_image_elsewhere_is_a_note_not_a_silent_pass(bundle_of: BundleOf) -> None:
    """Without requirePinned (not eks) an untagged image runs, so check says so rather than ✔ alone;
    lint's image-tag calls it an error."""
    notes = bundle_of({"infra": {"image": "registry.example.com/ubuntu-swe"},
                       "sandbox": {"image": "registry.example.com/exec:latest"}}).run.notes
    assert [n.split(" got ")[0] for n in notes] == ["infra.image", "sandbox.image"]
    assert notes[0] == ("infra.image got 'registry.example.com/ubuntu-swe' (no tag: Kubernetes pulls :latest), "
                        "expected a pinned tag or @sha256: digest; it runs, but a node may pull another build of it "
                        "later (infra.imagePull.requirePinned: true refuses it)")
    assert bundle_of({"infra": {"image": "registry.example.com/ubuntu-swe:v1"}}).run.notes == ()


def test_pinned_tags_and_digests_pass(bundle_of: BundleOf) -> None:
    bundle_of({"infra": {"platform": "eks", "image": "localhost:5000/ubuntu-swe:v1"}})
    bundle_of({"infra": {"platform": "eks", "image": "r.example.com/u@sha256:" + "a" * 64}})


def test_eks_pins_only_differing_images_once(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({**EKS, "sandbox": {"image": "busybox"}})
    assert [line.split(": ")[1] for line in e.value.render().splitlines()[:-1]] == ["sandbox.image"]


@pytest.mark.parametrize("mode", ["rayjob", "job"])
def test_eks_pads_the_deadline_for_a_cold_pull(bundle_of: BundleOf, mode: str) -> None:
    objects = bundle_of({**EKS, "launch": {"mode": mode, "activeDeadlineSeconds": 3600},
                      "kuberay": {"inference": {"replicas": 0}}}).objects
    job = next(o for o in objects if o["kind"] in ("RayJob", "Job"))
    assert job["spec"]["activeDeadlineSeconds"] == 4200  # the EKS text's example: 1 h test -> 4200


def test_generic_does_not_pad(bundle_of: BundleOf) -> None:
    objects = bundle_of({"launch": {"activeDeadlineSeconds": 3600}}).objects
    assert find(objects, "RayJob")["spec"]["activeDeadlineSeconds"] == 3600


@pytest.mark.parametrize("mode", SHAPES)
def test_images_if_not_present(bundle_of: BundleOf, mode: str) -> None:
    for _, pod in pods_by_fleet(bundle_of(with_mode(EKS, mode)).objects):
        for c in pod["containers"] + pod.get("initContainers", []):
            assert c["imagePullPolicy"] == "IfNotPresent"


def test_prepull_daemonset_targets_the_gpu_nodes_before_the_workload(bundle_of: BundleOf) -> None:
    objects = bundle_of({"infra": {**EKS["infra"], "imagePull": {"prePull": True}}}).objects
    ds = find(objects, "DaemonSet")
    assert kinds(objects).index("DaemonSet") < kinds(objects).index("RayJob")
    pod = ds["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["image"] == "registry.example.com/ubuntu-swe:vllm-1.4.2"
    assert "nvidia.com/gpu" not in pod["initContainers"][0]["resources"]["limits"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                            "values": ["p5.48xlarge"]}]}]
    assert {"key": GPU, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()


def test_prepull_pods_carry_the_runs_priority_class(bundle_of: BundleOf) -> None:
    named = bundle_of({"infra": {**EKS["infra"], "priorityClassName": "gpu-high", "imagePull": {"prePull": True}}})
    assert find(named.objects, "DaemonSet")["spec"]["template"]["spec"]["priorityClassName"] == "gpu-high"
    created = bundle_of({"infra": {**EKS["infra"], "priorityClass": {"create": True}, "imagePull": {"prePull": True}}})
    assert find(created.objects, "DaemonSet")["spec"]["template"]["spec"]["priorityClassName"] == \
        find(created.objects, "PriorityClass")["metadata"]["name"]


def test_no_prepull_by_default(bundle_of: BundleOf) -> None:
    assert "DaemonSet" not in kinds(bundle_of(EKS).objects)


# --- kind / k3s ---------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["kind", "k3s"])
@pytest.mark.parametrize("mode", SHAPES)
def test_single_node_runtime_class_on_every_gpu_pod_only(bundle_of: BundleOf, platform: str, mode: str) -> None:
    objects = bundle_of({"infra": {"platform": platform}, "launch": {"mode": mode}}).objects
    pods = list(pods_by_fleet(objects))
    gpu = [pod for _, pod in gpu_pods(objects)]
    assert gpu
    for _, pod in pods:
        assert (pod.get("runtimeClassName") == "nvidia") == (pod in gpu)


def test_single_node_model_cache_claim_is_local_path_rwo(bundle_of: BundleOf) -> None:
    objects = bundle_of({"infra": {"platform": "k3s"}}).objects
    pvc = find(objects, "PersistentVolumeClaim")
    assert pvc["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}},
                           "storageClassName": "local-path"}
    assert pvc["metadata"]["annotations"] == {"dockyard-k8s/keep-on-down": "true"}
    assert kinds(objects).index("PersistentVolumeClaim") < kinds(objects).index("RayJob")
    for fleet, pod in pods_by_fleet(objects):
        mounted = {m["mountPath"] for m in pod["containers"][0].get("volumeMounts", [])}
        assert ("/root/.cache/huggingface" in mounted) == (fleet in ("head", "trainer", "inference"))


@pytest.mark.parametrize("mode", SHAPES)
def test_single_node_sizing_fits_one_24gb_gpu_and_32gb_host(bundle_of: BundleOf, mode: str) -> None:
    from dockyard_k8s.kube import parse_quantity

    objects = bundle_of(with_mode(KIND, mode)).objects
    gpus = memory = 0.0
    for fleet, pod, replicas in pods_with_replicas(objects):
        for c in pod["containers"]:
            limits = (c.get("resources") or {}).get("limits", {})
            gpus += float(limits.get(GPU, 0)) * replicas
            if fleet != "submitter":  # KubeRay's submitter only runs `ray job submit`, next to the gang
                memory += (parse_quantity(limits.get("memory", 0)) or 0) * replicas
    assert gpus == 1
    assert memory <= 29 * 2**30  # the single-node text: ~2-3 GB of a 32 GB host go to the control plane


def test_priority_class_only_when_asked_and_on_the_gpu_gang_only(bundle_of: BundleOf) -> None:
    assert "PriorityClass" not in kinds(bundle_of(KIND).objects)
    objects = bundle_of({"infra": {"platform": "kind", "priorityClass": {"create": True}}}).objects
    pc = find(objects, "PriorityClass")
    assert kinds(objects)[0] == "PriorityClass" and "namespace" not in pc["metadata"]
    assert pc["value"] == 1000000 and pc["globalDefault"] is False
    for fleet, pod in pods_by_fleet(objects):
        expected = pc["metadata"]["name"] if fleet in ("head", "trainer", "inference") else None
        assert pod.get("priorityClassName") == expected, fleet


def test_priority_class_keeps_a_fleets_own_class(bundle_of: BundleOf) -> None:
    spec = {"infra": {"priorityClass": {"create": True, "name": "gpu-runs"}},
            "kuberay": {"spec": {"workerGroupSpecs": [
                {"groupName": "inference", "template": {"spec": {"priorityClassName": "serving"}}}]}}}
    pods = dict(pods_by_fleet(bundle_of(spec).objects))
    assert pods["trainer"]["priorityClassName"] == "gpu-runs"
    assert pods["inference"]["priorityClassName"] == "serving"


@pytest.mark.parametrize("scope", ["run", "namespace"])
def test_default_deny_for_the_whole_run(bundle_of: BundleOf, scope: str) -> None:
    objects = bundle_of({"infra": {"platform": "k3s", "networkPolicy": {"defaultDeny": True, "scope": scope}}}).objects
    deny = find(objects, "NetworkPolicy", "grpo-swe-default-deny")
    allow = find(objects, "NetworkPolicy", "grpo-swe-allow")
    assert kinds(objects)[:2] == ["NetworkPolicy", "NetworkPolicy"]  # before every pod
    assert deny["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in deny["spec"]
    assert deny["spec"]["podSelector"] == ({} if scope == "namespace" else
                                           {"matchLabels": {"dockyard-k8s/run": "grpo-swe"}})
    spec = allow["spec"]
    assert spec["podSelector"]["matchExpressions"] == [
        {"key": "dockyard-k8s/fleet", "operator": "NotIn", "values": ["sandbox"]}]
    egress = spec["egress"]
    assert egress[0] == {"to": [{"podSelector": {"matchLabels": {"dockyard-k8s/run": "grpo-swe"}}}]}
    assert {"protocol": "UDP", "port": 53} in egress[1]["ports"]
    https = egress[2]
    assert https["ports"] == [{"protocol": "TCP", "port": 443}]
    blocks = [p["ipBlock"] for p in https["to"]]
    assert [b["cidr"] for b in blocks] == ["0.0.0.0/0", "::/0"]
    for private in ("10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254"):
        addr = ipaddress.ip_address(private)
        assert any(addr in ipaddress.ip_network(c) for c in blocks[0]["except"]), private
    assert not any(ipaddress.ip_address("8.8.8.8") in ipaddress.ip_network(c) for c in blocks[0]["except"])
    operator = spec["ingress"][1]
    assert operator["ports"] == [{"protocol": "TCP", "port": 8265}]
    assert operator["from"][0]["podSelector"]["matchExpressions"][0] == {
        "key": "app.kubernetes.io/name", "operator": "In", "values": ["kuberay-operator", "kuberay"]}
    # the run's own pods are admitted, never the sandbox's
    assert spec["ingress"][0] == {"from": [{"podSelector": spec["podSelector"]}]}


def test_default_deny_needs_the_sandbox_policy(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"networkPolicy": {"defaultDeny": True}}, "sandbox": {"networkPolicy": {"enabled": False}}})
    assert [p.path for p in e.value.problems] == ["infra.networkPolicy.defaultDeny"]  # said: golden run-rules.txt
    assert "would cut the sandbox pool off" in e.value.problems[0].message


def test_rwo_storage_cannot_span_nodes(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({**EKS, "infra": {**EKS["infra"], "storage": {"create": True, "accessMode": "ReadWriteOnce"}}})
    assert "ReadWriteOnce attaches to one node" in e.value.render()
    bundle_of({"infra": {"platform": "kind"}})  # one node: RWO is fine


def test_storage_needs_a_claim_name_when_not_created(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"storage": {"enabled": True}}})
    assert "infra.storage.claimName: is required when storage.create is false" in e.value.render()
