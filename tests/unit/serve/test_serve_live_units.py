"""The pure pieces the live serve commands stand on: the Deployment's rollout phase, the
hints of a server pod's problems, the answer check of `serve test`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dockyard_k8s.live.diagnose import event_finding, pod_findings
from dockyard_k8s.live.openai import prepare_completion, read_answer
from dockyard_k8s.live.progress import deployment_phase


def deployment(want: int = 2, generation: int = 3, **status: Any) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": "llama", "generation": generation},
            "spec": {"replicas": want}, "status": status}


def test_ready_only_when_the_rollout_is_complete() -> None:
    done = deployment(observedGeneration=3, replicas=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2)
    ready = deployment_phase(done, [])
    assert (ready.state, ready.summary, ready.terminal, ready.ok) == ("ready", "ready 2/2", True, True)
    # the controller has not seen the new spec yet: the old ready pods do not count
    assert deployment_phase({**done, "metadata": {"generation": 4}}, []).state == "pending"
    # half rolled: an old pod still runs beside the new ones
    rolling = deployment(observedGeneration=3, replicas=3, updatedReplicas=1, readyReplicas=2, availableReplicas=2)
    phase = deployment_phase(rolling, [])
    assert (phase.state, phase.summary, phase.terminal) == ("pending", "ready 2/2, updated 1/2", False)
    assert deployment_phase(deployment(), []).state == "pending"  # no status yet


def test_a_rollout_past_its_progress_deadline_is_a_failure() -> None:
    stuck = deployment(conditions=[{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                    "message": 'ReplicaSet "llama-5d" has timed out progressing.'}])
    phase = deployment_phase(stuck, [])
    assert (phase.state, phase.terminal, phase.ok) == ("failed", True, False)
    assert 'timed out progressing' in phase.summary


def server_pod(state: dict[str, Any], last: dict[str, Any] | None = None, fleet: str = "serve") -> dict[str, Any]:
    cs: dict[str, Any] = {"name": "vllm", "state": state}
    if last:
        cs["lastState"] = last
    return {"metadata": {"name": "llama-5d-x", "labels": {"dockyard-k8s/fleet": fleet}},
            "status": {"phase": "Running", "containerStatuses": [cs]}}


def test_server_pod_hints_name_the_serve_keys() -> None:
    (pull,) = pod_findings(server_pod({"waiting": {"reason": "ImagePullBackOff", "message": "manifest unknown"}}))
    assert "check serve.image" in pull.hint and pull.fatal
    (oom,) = pod_findings(server_pod({"waiting": {"reason": "CrashLoopBackOff"}},
                                     {"terminated": {"reason": "OOMKilled", "exitCode": 137}}))
    assert "raise serve.memoryLimit" in oom.hint
    (crash,) = pod_findings(server_pod({"waiting": {"reason": "CrashLoopBackOff"}},
                                       {"terminated": {"reason": "Error", "exitCode": 1}}))
    assert crash.hint == "read why: `dockyard-k8s serve logs SPEC --pod llama-5d-x --previous`"
    (trainer,) = pod_findings(server_pod({"waiting": {"reason": "CrashLoopBackOff"}},
                                         {"terminated": {"reason": "Error", "exitCode": 1}}, fleet="trainer"))
    assert trainer.hint == "read why: `dockyard-k8s logs RECIPE --pod llama-5d-x --previous`"  # runs unchanged


def event(reason: str, message: str, kind: str = "Pod", name: str = "llama-5d-x") -> dict[str, Any]:
    return {"type": "Warning", "reason": reason, "message": message, "involvedObject": {"kind": kind, "name": name}}


def test_event_hints_for_probes_claims_and_priority_classes() -> None:
    probe = event_finding(event("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"), "serve")
    assert probe is not None and "serve.probes.startupSeconds" in probe.hint and not probe.fatal
    other = event_finding(event("Unhealthy", "Liveness probe failed"), "sandbox")
    assert other is not None and other.hint == "a probe fails: the container is up but not answering"
    claim = event_finding(event("ProvisioningFailed", 'storageclass.storage.k8s.io "fast" not found',
                                "PersistentVolumeClaim", "llama-cache"), "-")
    assert claim is not None and claim.fatal and "serve.cache.storageClass" in claim.hint
    binding = event_finding(event("FailedBinding", "no persistent volumes available for this claim and no storage "
                                                   "class is set", "PersistentVolumeClaim", "llama-cache"), "-")
    assert binding is not None and not binding.fatal
    pc = event_finding(event("FailedCreate", 'pods "llama-5d-" is forbidden: no PriorityClass with name gpu-inference '
                                             "was found", "ReplicaSet", "llama-5d"), "-")
    assert pc is not None and pc.fatal and "serve.priorityClass.create" in pc.hint


def test_the_completion_request_and_the_answer_check() -> None:
    assert prepare_completion("m", "hi", 4) == ("/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4,
                                                                     "temperature": 0})
    good = json.dumps({"model": "m", "choices": [{"text": " yes"}], "usage": {"prompt_tokens": 2,
                                                                                "completion_tokens": 1}})
    answer = read_answer(200, good, 0.5, "m")
    assert answer.ok and answer.text == " yes" and answer.tokens_per_second == 2.0
    assert not read_answer(200, json.dumps({"choices": [{"text": "x"}], "usage": {"completion_tokens": True}}),
                           0.1, "m").ok  # a boolean is not a token count
    assert read_answer(404, "", 0.1, "m").problem == "HTTP 404"


@pytest.mark.parametrize("body", ["", "null", "[]", '{"choices": "x"}', '{"choices": [{"text": 3}]}'])
def test_odd_bodies_are_invalid_answers_never_errors(body: str) -> None:
    assert not read_answer(200, body, 0.1, "m").ok


def test_a_refused_key_says_where_serve_test_reads_it() -> None:
    answer = read_answer(401, json.dumps({"error": "Unauthorized"}), 0.1, "m")
    assert not answer.ok and answer.problem == "HTTP 401"
    assert "serve.apiKeySecret" in answer.hint
