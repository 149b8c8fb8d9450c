"""Failure surfacing is pure: every pod state and event reason -> fleet, pod, reason, hint."""

from __future__ import annotations

from typing import Any

import pytest

from dockyard_k8s.live.diagnose import Diagnosis, event_finding, pod_findings


def pod(fleet: str = "trainer", *, statuses: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p-0", "labels": {"dockyard-k8s/fleet": fleet}},
            "status": {"phase": "Pending", **status, "containerStatuses": statuses or []}}


def waiting(reason: str, message: str = "") -> list[dict[str, Any]]:
    return [{"name": "ray-worker", "state": {"waiting": {"reason": reason, "message": message}}}]


def only(findings: list[Diagnosis]) -> Diagnosis:
    assert len(findings) == 1, findings
    return findings[0]


@pytest.mark.parametrize(("message", "fatal", "hint_part"), [
    ('Back-off pulling image "x:1": manifest unknown', True, "does not exist: check infra.image"),
    ("rpc error: ... not found", True, "does not exist"),
    ("pull access denied, repository does not exist or may require authorization: unauthorized", True, None),
    ("failed to authorize: 403 Forbidden", True, "imagePullSecrets"),
    ("toomanyrequests: You have reached your pull rate limit", False, "rate-limiting"),
    ("dial tcp: lookup ghcr.io: no such host", False, "cannot reach the registry"),
    ("something else entirely", False, "cannot be pulled"),
])
@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff"])
def test_image_pull_states(reason: str, message: str, fatal: bool, hint_part: str | None) -> None:
    f = only(pod_findings(pod(statuses=waiting(reason, message))))
    assert (f.fleet, f.pod, f.reason, f.fatal) == ("trainer", "p-0", reason, fatal)
    if hint_part:
        assert hint_part in f.hint


@pytest.mark.parametrize(("fleet", "key"), [("sandbox", "sandbox.image"), ("submitter", "launch.submitter.image"),
                                            ("head", "infra.image")])
def test_image_hint_names_the_fleets_image_key(fleet: str, key: str) -> None:
    assert key in only(pod_findings(pod(fleet, statuses=waiting("ErrImagePull", "manifest unknown")))).hint


def test_invalid_image_name_and_never_pull() -> None:
    assert only(pod_findings(pod(statuses=waiting("InvalidImageName", "bad ref")))).fatal
    f = only(pod_findings(pod(statuses=waiting("ErrImageNeverPull"))))
    assert "imagePullPolicy" in f.hint


def test_crash_loop_points_at_previous_logs() -> None:
    statuses = [{"name": "ray-worker", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}}]
    f = only(pod_findings(pod(statuses=statuses)))
    assert f.reason == "CrashLoopBackOff" and "exit code 2" in f.message
    assert "--pod p-0 --previous" in f.hint and f.fatal


@pytest.mark.parametrize(("fleet", "key"), [("trainer", "kuberay.trainer.memory"),
                                            ("sandbox", "sandbox.resources.memoryLimit"),
                                            ("head", "kuberay.head.memory")])
def test_oom_killed_in_crash_loop_or_last_state(fleet: str, key: str) -> None:
    looping = [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]
    restarted = [{"name": "c", "state": {"running": {}}, "lastState": {"terminated": {"reason": "OOMKilled"}}}]
    ended = [{"name": "c", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]
    for statuses in (looping, restarted, ended):
        f = only(pod_findings(pod(fleet, statuses=statuses)))
        assert f.reason == "OOMKilled" and key in f.hint


@pytest.mark.parametrize(("message", "hint_part"), [
    ('secret "wandb" not found', "Secret"),
    ("couldn't find key api-key in Secret rl/wandb", "Secret"),
    ('configmap "grpo-swe-recipe" not found', "ConfigMap"),
    ("failed to generate spec", "cannot be satisfied"),
])
def test_create_container_config_error(message: str, hint_part: str) -> None:
    f = only(pod_findings(pod(statuses=waiting("CreateContainerConfigError", message))))
    assert hint_part in f.hint and f.fatal


def test_nonzero_exit_is_an_error_finding_and_zero_is_not() -> None:
    failed = [{"name": "c", "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": "boom"}}}]
    f = only(pod_findings(pod("submitter", statuses=failed)))
    assert (f.reason, f.fleet) == ("Error", "submitter") and "exited with code 1: boom" in f.message
    ok = [{"name": "c", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]
    assert pod_findings(pod(statuses=ok)) == []


def test_healthy_and_creating_pods_have_no_findings() -> None:
    assert pod_findings(pod(statuses=waiting("ContainerCreating"))) == []
    assert pod_findings(pod(statuses=[{"name": "c", "state": {"running": {}}}])) == []


@pytest.mark.parametrize(("message", "hint_part"), [
    ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "kuberay.trainer.gpus"),
    ("0/8 nodes are available: 3 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. "
     "preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.", "even with every other pod"),
    ("0/8 nodes are available: 3 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. "
     "preemption: 0/8 nodes are available: 3 No preemption victims found for incoming pod, 5 Preemption is not "
     "helpful for scheduling.", "free GPUs"),
    ("0/8 nodes are available: 3 Insufficient cpu, 3 Insufficient memory, 8 Insufficient nvidia.com/gpu. no new "
     "claims to deallocate, preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.",
     "has that much nvidia.com/gpu even with every other pod gone (the scheduler: preemption is not helpful): lower "
     "kuberay.trainer.gpus, or it waits for a larger node"),  # kube-scheduler v1.36.3's words, on the e2e stack
    ("0/4 nodes are available: 4 Insufficient memory. preemption: 0/4 nodes are available: 4 Preemption is not "
     "helpful for scheduling.", "that much memory even with every other pod gone (the scheduler: preemption is not "
     "helpful): lower kuberay.trainer.memory"),
    ("0/4 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.", "kuberay.trainer.cpu"),
    ("0/4 nodes are available: 4 Insufficient memory.", "kuberay.trainer.memory"),
    ("0/4 nodes are available: 4 Insufficient vpc.amazonaws.com/efa.", "extendedResources"),
    ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", "kuberay.trainer.nodeSelector"),
    ("0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: }.", "kuberay.trainer.tolerations"),
    ("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.", "PersistentVolumeClaim"),
    ("0/1 nodes are available: 1 Too many pods.", "pod limit"),
    ("something new the scheduler says", "doctor"),
])
def test_unschedulable_condition(message: str, hint_part: str) -> None:
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
    f = only(pod_findings(pod(conditions=cond)))
    assert f.reason == "FailedScheduling" and hint_part in f.hint and not f.fatal


def test_sandbox_hints_use_sandbox_keys() -> None:
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/2 nodes are available: 2 Insufficient ephemeral-storage."}]
    assert "sandbox.resources.ephemeralStorage" in only(pod_findings(pod("sandbox", conditions=cond))).hint


@pytest.mark.parametrize(("message", "hint_part"), [
    ("The node was low on resource: ephemeral-storage.", "sandbox.resources.ephemeralStorage"),
    ("The node was low on resource: memory.", "sandbox.resources.memory"),
    ("Pod was terminated", "pressure"),
])
def test_evicted(message: str, hint_part: str) -> None:
    f = only(pod_findings(pod("sandbox", phase="Failed", reason="Evicted", message=message)))
    assert f.reason == "Evicted" and hint_part in f.hint


def event(reason: str, message: str, etype: str = "Warning") -> dict[str, Any]:
    return {"type": etype, "reason": reason, "message": message, "involvedObject": {"kind": "Pod", "name": "p-0"}}


@pytest.mark.parametrize(("reason", "message", "want_reason", "fatal", "hint_part"), [
    ("FailedScheduling", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "FailedScheduling", False,
     "gpus"),
    ("FailedMount", 'MountVolume.SetUp failed for volume "x" : secret "wandb" not found', "FailedMount", True,
     "Secret"),
    ("FailedMount", 'MountVolume.SetUp failed for volume "recipe" : configmap "r" not found', "FailedMount", True,
     "ConfigMap"),
    ("FailedMount", "Unable to attach or mount volumes: timed out waiting for the condition", "FailedMount", False,
     "volume"),
    ("FailedAttachVolume", "AttachVolume.Attach failed for pvc-1", "FailedAttachVolume", False, "PersistentVolume"),
    ("Failed", 'Failed to pull image "x:1": manifest unknown', "ErrImagePull", True, "does not exist"),
    ("BackOff", 'Back-off pulling image "x:1"', "ImagePullBackOff", False, "cannot be pulled"),
    ("BackOff", "Back-off restarting failed container ray-worker", "CrashLoopBackOff", True, "--previous"),
    ("Evicted", "The node was low on resource: memory.", "Evicted", False, "pressure"),
    ("OOMKilling", "Memory cgroup out of memory: Killed process 1234 (python)", "OOMKilled", True, "memory"),
    ("FailedCreate", 'pods "x" is forbidden: exceeded quota: team, requested: requests.nvidia.com/gpu=8',
     "ExceededQuota", True, "quota"),
    ("FailedCreate", "some controller error", "FailedCreate", False, "controller"),
    ("FailedCreatePodSandBox", 'failed to get sandbox runtime: no runtime for "nvidia" is configured',
     "FailedCreatePodSandBox", True, "NVIDIA container toolkit"),
    ("FailedCreatePodSandBox", "network plugin not ready", "FailedCreatePodSandBox", False, "CNI"),
    ("Unhealthy", "Readiness probe failed: dial tcp 10.0.0.1:9090: connect: connection refused", "Unhealthy", False,
     "probe"),
    ("FailedToCreateWorkerPod", "exceeded quota", "ExceededQuota", True, "quota"),
])
def test_event_reasons(reason: str, message: str, want_reason: str, fatal: bool, hint_part: str) -> None:
    f = event_finding(event(reason, message), "trainer")
    assert f is not None
    assert (f.fleet, f.pod, f.reason, f.fatal) == ("trainer", "p-0", want_reason, fatal)
    assert hint_part in f.hint


def test_uninteresting_events_are_ignored() -> None:
    assert event_finding(event("Pulled", "Successfully pulled image", "Normal"), "trainer") is None
    assert event_finding(event("SomethingElse", "whatever"), "trainer") is None


def test_kuberay_creating_what_already_exists_is_no_problem() -> None:
    """KubeRay reads from its informer cache: a reconcile that does not see the RayCluster it
    created a moment ago creates it again, is told AlreadyExists, emits FailedToCreateRayCluster
    and finds it on the next reconcile (getOrCreateRayClusterInstance, rayjob_controller.go). Seen
    on most runs of the real control plane; as a fatal finding it ended healthy --fail-fast runs."""
    benign = event("FailedToCreateRayCluster", 'Failed to create RayCluster ns/r-x: rayclusters.ray.io "r-x" '
                                               "already exists")
    assert event_finding(benign, "-") is None
    refused = event_finding(event("FailedToCreateRayCluster", 'Failed to create RayCluster ns/r-x: admission '
                                                              'webhook "x" denied the request'), "-")
    assert refused is not None and refused.fatal


def test_finding_line_is_one_line() -> None:
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/4 nodes\n are available:   4 Insufficient cpu." + "x" * 500}]
    f = only(pod_findings(pod(conditions=cond)))
    assert "\n" not in f.line() and len(f.message) <= 240


# A long image reference: the kubelet's verdict ("not found") comes after the reference, past the
# 240 characters shown; cut before classifying, a missing tag read as "cannot be pulled" (recoverable)
LONG_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/rl-research/" + "a" * 120 + "/trainer:2026-12-03-missing"
LONG_PULL = (f'failed to pull and unpack image "{LONG_IMAGE}": failed to resolve reference "{LONG_IMAGE}": '
             f"{LONG_IMAGE}: not found")


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff"])
def test_a_missing_tag_of_a_long_image_reference_is_fatal(reason: str) -> None:
    assert LONG_PULL.index("not found") > 240
    f = only(pod_findings(pod(statuses=waiting(reason, LONG_PULL))))
    assert f.fatal and "does not exist" in f.hint
    assert len(f.message) == 240 and f.message.endswith("…")  # shown cut, classified whole


def test_a_pull_event_of_a_long_image_reference_is_classified_whole() -> None:
    event = {"type": "Warning", "reason": "Failed", "message": f"Failed to pull image {LONG_IMAGE!r}: {LONG_PULL}",
             "involvedObject": {"kind": "Pod", "name": "p-0"}}
    f = event_finding(event, "trainer")
    assert f is not None and f.reason == "ErrImagePull" and f.fatal and len(f.message) == 240


def test_a_long_scheduling_message_is_classified_whole() -> None:
    message = "0/300 nodes are available: " + "; ".join(f"1 node(s) had volume node affinity conflict {i}"
                                                         for i in range(8)) + ", 3 Insufficient nvidia.com/gpu."
    f = only(pod_findings(pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                           "message": message}])))
    assert "free GPUs" in f.hint
