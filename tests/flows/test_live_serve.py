"""`serve up / status / logs / down` against the stateful fake API server: apply in order with
server-side apply, explain what keeps an endpoint from Ready within seconds (a claim that stays
Pending, a readiness probe that never passes, a bad image, an OOM, a missing PriorityClass),
one-screen status, and a down that keeps the weights. The pods, rollout and claim states are
written into the fake (states.py); the real rollout to Ready is tests/e2e/test_serve.py's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakekube import FakeKube, bundled_crds
from flowkit import in_background, seed
from states import EKS_SPEC, KIND_SPEC, bind_claim, rollout, serve_keda, server_pod
from states import ENDPOINT as NAME
from states import SERVE_NS as NS

from support.paths import EXAMPLES as RUN_EXAMPLES

ORDER = ["priorityclasses", "networkpolicies", "networkpolicies", "persistentvolumeclaims", "deployments",
         "services", "poddisruptionbudgets"]
POD = f"{NAME}-7d9f8c6b5-x2k4q"


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    server = seed(FakeKube(namespaces=("default", NS, "inference", "rl-research")))
    yield server
    server.shutdown()


def following(fake: FakeKube) -> None:
    """The CLI applied the endpoint and opened its watches (Deployment, pods, Warning events)."""
    fake.wait_for(lambda: fake.get("apps/v1", "Deployment", NS, NAME))
    for plural in ("deployments", "pods", "events"):
        fake.wait_watching(plural)


def patches(fake: FakeKube) -> list[str]:
    """The applies, in order (apply_objects' server dry run of everything first left out)."""
    return [q.path.split("/")[-2] for q in fake.requests if q.method == "PATCH" and q.params.get("dryRun") != "All"]


# --- up ------------------------------------------------------------------------------------------


def test_up_applies_in_order_with_server_side_apply(cli: Any, fake: FakeKube) -> None:
    """What `serve up` sends; following the rollout to Ready is tested on the real Deployment
    controller (tests/e2e/test_serve.py)."""
    r = cli("serve", "up", KIND_SPEC, "--detach")
    assert r.code == 0, r.out + r.err
    assert patches(fake) == ORDER
    patch = next(q for q in fake.requests if q.method == "PATCH")
    assert patch.headers["content-type"] == "application/apply-patch+yaml"
    assert patch.params["fieldManager"] == "dockyard-k8s"
    assert "endpoint llama-8b in llama: 7 created" in r.out


def test_up_again_unchanged_writes_nothing(cli: Any, fake: FakeKube) -> None:
    assert cli("serve", "up", KIND_SPEC, "--detach").code == 0
    before = fake.rv
    r = cli("serve", "up", KIND_SPEC, "--detach")
    assert r.code == 0, r.err
    assert "7 unchanged" in r.out and fake.rv == before
    assert "dockyard-k8s serve status" in r.out  # how to follow a detached endpoint


def test_a_claim_that_stays_pending_is_explained_within_seconds(cli: Any, fake: FakeKube) -> None:
    def provisioner() -> None:
        following(fake)
        claim = fake.get("v1", "PersistentVolumeClaim", NS, f"{NAME}-cache")
        bind_claim(fake, "Pending")
        fake.add_event(NS, claim, "ProvisioningFailed",
                       'storageclass.storage.k8s.io "standard" not found')
        fake.put(server_pod(scheduled=False, unschedulable="0/1 nodes are available: pod has unbound immediate "
                                                           "PersistentVolumeClaims. preemption: 0/1 nodes are "
                                                           "available: 1 Preemption is not helpful for scheduling."))

    t = in_background(provisioner)
    r = cli("serve", "up", KIND_SPEC, "--timeout", "4")
    t.join(5)
    assert not t.errors, t.errors
    assert r.code == 1
    assert f"✖ PersistentVolumeClaim/{NAME}-cache: ProvisioningFailed: storageclass.storage.k8s.io \"standard\" " \
           "not found" in r.out
    assert "serve.cache.storageClass" in r.out
    assert f"✖ serve/{POD}: FailedScheduling: 0/1 nodes are available: pod has unbound immediate" in r.out
    assert "a PersistentVolumeClaim the pod mounts is missing or unbound" in r.out
    assert "✖ timeout" in r.out and "dockyard-k8s serve down" in r.out
    # status says the same, later, from one LIST per kind
    s = cli("serve", "status", KIND_SPEC)
    assert s.code == 0
    assert f"PersistentVolumeClaim {NAME}-cache: Pending (100Gi ReadWriteOnce, standard)" in s.out
    assert "ProvisioningFailed" in s.out and "FailedScheduling" in s.out


def test_a_readiness_probe_that_never_passes_is_explained(cli: Any, fake: FakeKube) -> None:
    def kubelet() -> None:
        following(fake)
        bind_claim(fake)
        p = fake.put(server_pod(phase="Running", ready=False))
        fake.add_event(NS, p, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
        rollout(fake, ready=0)

    t = in_background(kubelet)
    r = cli("serve", "up", KIND_SPEC, "--timeout", "4")
    t.join(5)
    assert not t.errors, t.errors
    assert r.code == 1
    assert f"✖ serve/{POD}: Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 503" in r.out
    assert "its health path does not answer yet" in r.out and "serve.probes.startupSeconds" in r.out
    assert f"dockyard-k8s serve logs SPEC --pod {POD}" in r.out
    assert "Deployment llama-8b: ready 0/1" in r.out
    assert "✖ timeout: stopped following after 4s; the endpoint keeps starting" in r.out


@pytest.mark.parametrize(("state", "last", "reason", "hint"), [
    ({"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "vllm/vllm-openai:v0.11.0": '
                                                           "manifest unknown"}}, None, "ImagePullBackOff",
     "check serve.image"),
    ({"waiting": {"reason": "CrashLoopBackOff"}}, {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
     "OOMKilled", "raise serve.memoryLimit"),
    ({"waiting": {"reason": "CrashLoopBackOff"}}, {"terminated": {"reason": "Error", "exitCode": 1}},
     "CrashLoopBackOff", f"`dockyard-k8s serve logs SPEC --pod {POD} --previous`"),
    ({"waiting": {"reason": "CreateContainerConfigError", "message": 'secret "hf-token" not found'}}, None,
     "CreateContainerConfigError", "a Secret the pod references is missing"),
])
def test_problems_that_cannot_heal_stop_up_with_fail_fast(cli: Any, fake: FakeKube, state: dict[str, Any],
                                                          last: dict[str, Any] | None, reason: str, hint: str) -> None:
    def kubelet() -> None:
        following(fake)
        fake.put(server_pod(state=state, last_state=last, restarts=3 if last else 0))

    t = in_background(kubelet)
    r = cli("serve", "up", KIND_SPEC, "--fail-fast")
    t.join(5)
    assert not t.errors, t.errors
    assert r.code == 1
    assert f"✖ serve/{POD}: {reason}" in r.out
    assert hint in r.out
    assert "(--fail-fast)" in r.out
    assert fake.get("apps/v1", "Deployment", NS, NAME) is not None  # left as is for status and down


def test_no_free_gpu_is_explained_with_the_serve_keys(cli: Any, fake: FakeKube) -> None:
    def scheduler() -> None:
        following(fake)
        p = fake.put(server_pod(scheduled=False, unschedulable="0/1 nodes are available: 1 Insufficient "
                                                             "nvidia.com/gpu. preemption: 0/1 nodes are available: "
                                                             "1 No preemption victims found for incoming pod."))
        fake.add_event(NS, p, "FailedScheduling", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")

    t = in_background(scheduler)
    r = cli("serve", "up", KIND_SPEC, "--timeout", "3")
    t.join(5)
    assert r.code == 1
    assert f"✖ serve/{POD}: FailedScheduling: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu." in r.out
    assert "lower serve.gpus or serve.replicas" in r.out


def test_a_missing_priority_class_is_named_before_anything_is_applied(cli: Any, fake: FakeKube) -> None:
    # It used to be applied and then followed: the ReplicaSet's FailedCreate ("forbidden: no PriorityClass")
    # repeats until --timeout, since a PriorityClass may still be created
    r = cli("serve", "up", KIND_SPEC, "--set", "serve.priorityClass.create=false")
    assert r.code == 1
    assert "error: endpoint llama-8b refers to 1 object(s) the cluster does not have, so its pods could never " \
           "start; nothing was applied:" in r.err
    assert "  PriorityClass gpu-inference, used as priorityClassName; create: serve.priorityClass.create: true, or " \
           "kubectl create priorityclass gpu-inference --value=1000" in r.err
    assert "`dockyard-k8s serve check` lists what must exist" in r.err  # serve's own check, not the run's
    assert not [q for q in fake.requests if q.method == "PATCH"]


def test_a_claim_class_the_cluster_has_no_storage_class_or_volume_of_is_refused(cli: Any, fake: FakeKube) -> None:
    """A claim of class "standard" with no such StorageClass stays Pending with its pod; a static
    PersistentVolume of that class binds it by class name, so it counts; a user who may not list
    PersistentVolumes gets a note, not a refusal."""
    fake.remove("storage.k8s.io/v1", "StorageClass", "", "standard")
    r = cli("serve", "up", KIND_SPEC, "--detach")
    assert r.code == 1, r.out + r.err
    assert "  StorageClass standard, used as storageClassName of claim llama-8b-cache; create: set " \
           "infra.storage.storageClassName (serve.cache.storageClass) to one of `kubectl get storageclass`" in r.err
    assert not [q for q in fake.requests if q.method == "PATCH"]

    fake.deny("list", "persistentvolumes")
    denied = cli("serve", "up", KIND_SPEC, "--detach")
    assert denied.code == 0, denied.out + denied.err
    assert "note: not checked: the StorageClass the pods name (no permission to get storageclasses or list " \
           "persistentvolumes)" in denied.out + denied.err

    fake.denied.clear()
    fake.put({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "static"},
              "spec": {"storageClassName": "standard", "capacity": {"storage": "100Gi"}}})
    bound = cli("serve", "up", KIND_SPEC, "--detach")
    assert bound.code == 0, bound.out + bound.err


def test_a_claim_of_no_class_needs_a_default_storage_class_or_a_volume_of_no_class(cli: Any, fake: FakeKube) -> None:
    """A claim without storageClassName gets the cluster's default class at creation; with none marked
    default it stays Pending ("no storage class is set", seen on the real control plane), so `serve up`
    refuses before applying, until a class is marked default or a PersistentVolume of no class is there."""
    args = (KIND_SPEC, "--detach", "--set", "serve.cache.storageClass=null")
    r = cli("serve", "up", *args)
    assert r.code == 1, r.out + r.err
    assert "  StorageClass (default), used as claim llama-8b-cache (no storageClassName: the cluster's default " \
           "class); create: set infra.storage.storageClassName (serve.cache.storageClass) to one of `kubectl get " \
           "storageclass`, or make one the default: kubectl annotate storageclass NAME " \
           "storageclass.kubernetes.io/is-default-class=true" in r.err, r.err
    assert not [q for q in fake.requests if q.method == "PATCH"]

    fake.put({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "nfs"},
              "spec": {"capacity": {"storage": "1Ti"}}})  # no class: binds a claim of no class
    assert cli("serve", "up", *args).code == 0
    cli("serve", "down", *args[:1])
    fake.remove("v1", "PersistentVolume", "", "nfs")
    assert cli("serve", "up", *args).code == 1
    fake.put({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "rancher.io/local-path",
              "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}})
    assert cli("serve", "up", *args).code == 0


def test_a_rollout_past_its_deadline_fails(cli: Any, fake: FakeKube) -> None:
    def controller() -> None:
        following(fake)
        rollout(fake, ready=0, conditions=[{"type": "Progressing", "status": "False",
                                            "reason": "ProgressDeadlineExceeded",
                                            "message": 'ReplicaSet "llama-8b-7d9f8c6b5" has timed out progressing.'}])

    t = in_background(controller)
    r = cli("serve", "up", KIND_SPEC)
    t.join(5)
    assert r.code == 1
    assert "✖ failed: rollout stuck: ReplicaSet \"llama-8b-7d9f8c6b5\" has timed out progressing." in r.out


def test_dry_runs(cli: Any, fake: FakeKube) -> None:
    r = cli("serve", "up", KIND_SPEC, "--dry-run=client")
    assert r.code == 0 and fake.requests == [] and r.out.count("would apply") == 7
    r = cli("serve", "up", KIND_SPEC, "--dry-run=server")
    assert r.code == 0, r.err
    assert all(q.params.get("dryRun") == "All" for q in fake.requests if q.method == "PATCH")
    assert fake.get("apps/v1", "Deployment", NS, NAME) is None


def test_keda_endpoint_applies_a_scaled_object_and_no_replica_count(cli: Any, fake: FakeKube) -> None:
    serve_keda(fake)
    fake.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-inference"},
              "value": 1000})  # the eks example names the cluster admin's class
    r = cli("serve", "up", EKS_SPEC, "--detach")
    assert r.code == 0, r.err
    assert patches(fake) == ["networkpolicies", "networkpolicies", "deployments", "services",
                             "poddisruptionbudgets", "podmonitors", "scaledobjects"]
    assert "replicas" not in fake.get("apps/v1", "Deployment", "inference", "llama-70b")["spec"]
    scaled = fake.get("keda.sh/v1alpha1", "ScaledObject", "inference", "llama-70b")
    assert scaled["spec"]["maxReplicaCount"] == 6
    fake.set_status("keda.sh/v1alpha1", "ScaledObject", "inference", "llama-70b", {
        "hpaName": "keda-hpa-llama-70b", "conditions": [{"type": "Ready", "status": "True"},
                                                        {"type": "Active", "status": "False"}]})
    s = cli("serve", "status", EKS_SPEC)
    assert "ScaledObject llama-70b: Ready=True, Active=False; HPA keda-hpa-llama-70b" in s.out


def test_a_keda_endpoint_ready_below_its_minimum_says_so(cli: Any, fake: FakeKube) -> None:
    """The rollout of the replicas there are is complete; KEDA's HPA has not raised them to
    minReplicas (2 in the eks example) yet, or no KEDA operator runs: ✔, with what is not met."""
    serve_keda(fake)
    fake.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-inference"},
              "value": 1000})

    def controller() -> None:
        fake.wait_for(lambda: fake.get("apps/v1", "Deployment", "inference", "llama-70b"))
        for plural in ("deployments", "pods", "events"):
            fake.wait_watching(plural)
        rollout(fake, ready=1, name="llama-70b", namespace="inference")

    t = in_background(controller)
    r = cli("serve", "up", EKS_SPEC, "--timeout", "60")
    t.join(5)
    assert r.code == 0, r.out + r.err
    assert "✔ llama-70b is ready: ready 1/1; 1 of the autoscaler's minimum 2 replicas ready" in r.out, r.out


def test_a_pod_monitor_without_prometheus_operator_applies_nothing(cli: Any, fake: FakeKube) -> None:
    """Issue 22 item 17: KEDA without the PodMonitor CRD would scale on nothing."""
    fake.install_crds(bundled_crds("keda"))
    r = cli("serve", "up", EKS_SPEC, "--detach")
    assert r.code == 1
    assert "error: PodMonitor inference/llama-70b: the cluster does not serve monitoring.coreos.com/v1 PodMonitor: " \
           "prometheus-operator is not installed; nothing was applied" in r.err
    assert "hint: install prometheus-operator (kube-prometheus-stack), or set serve.metrics.scrape: annotations " \
           "for a Prometheus that discovers pods by annotation" in r.err
    assert not [q for q in fake.requests if q.method == "PATCH"]


def test_keda_endpoint_without_keda_installed_applies_nothing(cli: Any, fake: FakeKube) -> None:
    fake.install_crds(bundled_crds("prometheus"))  # the PodMonitor is served, the ScaledObject not
    r = cli("serve", "up", EKS_SPEC, "--detach")
    assert r.code == 1
    assert "error: ScaledObject inference/llama-70b: the cluster does not serve keda.sh/v1alpha1 ScaledObject: " \
           "KEDA is not installed; nothing was applied" in r.err
    assert "hint: install KEDA (its CRDs and operator), or set serve.autoscaling.enabled: false" in r.err
    assert not [q for q in fake.requests if q.method == "PATCH"] and "Traceback" not in r.err


# --- status --------------------------------------------------------------------------------------


def test_status_of_nothing_exits_1_and_says_how_to_start(cli: Any, fake: FakeKube) -> None:
    r = cli("serve", "status", KIND_SPEC)
    assert r.code == 1
    assert "nothing of endpoint llama-8b in namespace llama" in r.out and "dockyard-k8s serve up" in r.out


def test_status_on_one_screen_and_as_json(cli: Any, fake: FakeKube) -> None:
    cli("serve", "up", KIND_SPEC, "--detach")
    bind_claim(fake)
    fake.put(server_pod(phase="Running", ready=True))
    rollout(fake, ready=1)
    before = len(fake.requests)
    r = cli("serve", "status", KIND_SPEC)
    assert r.code == 0, r.err
    assert "endpoint llama-8b in llama (context fake)" in r.out
    assert "Deployment llama-8b: ready 1/1" in r.out
    assert "PersistentVolumeClaim llama-8b-cache: Bound (100Gi ReadWriteOnce, standard)" in r.out
    assert "Service llama-8b: http://llama-8b.llama.svc.cluster.local:8000/v1" in r.out
    assert "serve  1        1     1          1      0" in r.out
    lists = [q for q in fake.requests[before:] if q.method == "GET"]
    assert len(lists) <= 6  # one LIST per kind, whatever the pod count
    doc = json.loads(cli("serve", "status", KIND_SPEC, "-o", "json").out)
    assert doc["endpoint"] == NAME and doc["main"]["state"] == "ready"
    assert doc["claims"] == [{"name": f"{NAME}-cache", "phase": "Bound"}]


def test_status_forgets_a_provisioning_failure_once_the_claim_is_bound(cli: Any, fake: FakeKube) -> None:
    # Seen on the real control plane: ProvisioningFailed (no StorageClass "standard"), then an admin's
    # PersistentVolume bound the claim and the endpoint went Ready, but status still listed the event
    cli("serve", "up", KIND_SPEC, "--detach")
    claim = fake.get("v1", "PersistentVolumeClaim", NS, f"{NAME}-cache")
    fake.add_event(NS, claim, "ProvisioningFailed", 'storageclass.storage.k8s.io "standard" not found')
    assert "ProvisioningFailed" in cli("serve", "status", KIND_SPEC).out  # while it is Pending: the problem
    bind_claim(fake)
    fake.put(server_pod(phase="Running", ready=True))
    rollout(fake, ready=1)
    r = cli("serve", "status", KIND_SPEC)
    assert r.code == 0, r.err
    assert "PersistentVolumeClaim llama-8b-cache: Bound" in r.out
    assert "ProvisioningFailed" not in r.out and "problems" not in r.out


# --- logs / down ---------------------------------------------------------------------------------


def test_logs_of_the_server_pods(cli: Any, fake: FakeKube) -> None:
    cli("serve", "up", KIND_SPEC, "--detach")
    fake.put(server_pod(phase="Running", ready=True))
    fake.put(server_pod(f"{NAME}-7d9f8c6b5-b9m2z", phase="Running", ready=True))
    fake.add_log(NS, POD, "vllm", ["INFO Started server process", "INFO Uvicorn running on http://0.0.0.0:8000"])
    fake.add_log(NS, f"{NAME}-7d9f8c6b5-b9m2z", "vllm", ["INFO Loading weights took 41.2 seconds"])
    r = cli("serve", "logs", KIND_SPEC)
    assert r.code == 0, r.err
    assert f"serve/{POD} INFO Uvicorn running on http://0.0.0.0:8000" in r.out
    assert f"serve/{NAME}-7d9f8c6b5-b9m2z INFO Loading weights took 41.2 seconds" in r.out
    one = cli("serve", "logs", KIND_SPEC, "--pod", POD, "--tail", "1")
    assert one.out == "INFO Uvicorn running on http://0.0.0.0:8000\n"


def test_down_deletes_by_label_keeps_the_weights_and_the_shared_priority_class(cli: Any, fake: FakeKube) -> None:
    cli("serve", "up", KIND_SPEC, "--detach")
    fake.put(server_pod(phase="Running", ready=True))
    r = cli("serve", "down", KIND_SPEC)
    assert r.code == 0, r.err
    deletes = [q.path.split("/")[-2] for q in fake.requests if q.method == "DELETE"]
    assert deletes[-2:] == ["networkpolicies", "networkpolicies"]  # pods never run without their policy
    assert deletes.index("deployments") < deletes.index("networkpolicies")
    assert fake.get("apps/v1", "Deployment", NS, NAME) is None
    assert fake.get("v1", "Service", NS, NAME) is None
    assert fake.get("v1", "PersistentVolumeClaim", NS, f"{NAME}-cache") is not None
    assert fake.get("scheduling.k8s.io/v1", "PriorityClass", "", "gpu-inference") is not None
    assert "kept PersistentVolumeClaim llama/llama-8b-cache (data; --delete-cache deletes it)" in r.out
    assert "kept PriorityClass gpu-inference (cluster-scoped, other endpoints may use it" in r.out
    again = cli("serve", "down", KIND_SPEC)
    assert "nothing left of endpoint llama-8b in llama" in again.out
    gone = cli("serve", "down", KIND_SPEC, "--delete-cache")
    assert gone.code == 0 and "deleted PersistentVolumeClaim llama/llama-8b-cache" in gone.out
    assert fake.get("v1", "PersistentVolumeClaim", NS, f"{NAME}-cache") is None


def test_serve_down_keeps_the_policies_while_a_server_pod_terminates(cli: Any, fake: FakeKube) -> None:
    """`serve down` keeps the NetworkPolicies while a pod runs its grace period, within its own
    --timeout, as a run's `down` does (tests/e2e/test_down.py)."""
    fake.kubelet_terminates = False  # bound pods stay Terminating until the test says the kubelet is done
    assert cli("serve", "up", KIND_SPEC, "--detach").code == 0
    dep = fake.get("apps/v1", "Deployment", NS, NAME)
    pod = server_pod(phase="Running", ready=True)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME,
                                           "uid": dep["metadata"]["uid"]}]  # collected with the Deployment
    pod["spec"]["nodeName"] = "gpu-0"
    fake.put(pod)
    policies = len(fake.all("networking.k8s.io/v1", "NetworkPolicy"))
    assert policies
    r = cli("serve", "down", KIND_SPEC, "--timeout", "0.2")
    assert r.code == 1, r.out + r.err
    assert "kept NetworkPolicy llama-8b-allow, NetworkPolicy llama-8b-default-deny, so that no pod" in r.err, r.err
    assert pod["metadata"]["name"] in r.err
    assert len(fake.all("networking.k8s.io/v1", "NetworkPolicy")) == policies
    fake.finish_pod(NS, pod["metadata"]["name"])
    r = cli("serve", "down", KIND_SPEC)
    assert r.code == 0, r.out + r.err
    assert fake.all("networking.k8s.io/v1", "NetworkPolicy") == []


def test_a_runs_down_never_touches_an_endpoint_beside_it(cli: Any, fake: FakeKube) -> None:
    """Separate labels: the run's `down` and the endpoint's `serve down` each find only their own."""
    spec = str(RUN_EXAMPLES / "grpo_swe_checkpoint.serve.yaml")
    fake.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-inference"},
              "value": 1000})  # the eks example names the cluster admin's class
    assert cli("serve", "up", spec, "--detach").code == 0
    run = [str(RUN_EXAMPLES / "grpo_swe.yaml"), "--infra", str(RUN_EXAMPLES / "eks_p5.infra.yaml")]
    assert cli("run", *run, "--detach").code == 0
    assert cli("down", *run).code == 0
    assert fake.get("apps/v1", "Deployment", "rl-research", "grpo-swe-eval") is not None
    assert cli("run", *run, "--detach").code == 0
    assert cli("serve", "down", spec).code == 0
    assert fake.get("apps/v1", "StatefulSet", "rl-research", "grpo-swe-trainer") is not None
    assert fake.get("apps/v1", "Deployment", "rl-research", "grpo-swe-eval") is None
