"""How the launch record says a RayJob its DeleteSelf rule removed ended (``runs``, ``status RUN``)."""

from __future__ import annotations

from typing import Any

from dockyard_k8s.live.record import SUBMITTED_ANNOTATION, read_record, self_deleted, spec_digest
from dockyard_k8s.yamlfile import dump as dump_yaml

RAYJOB = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "grpo"}}


def record(rules: list[dict[str, Any]], *, mode: str = "rayjob", marked: bool = True) -> dict[str, Any]:
    cm: dict[str, Any] = {"metadata": {"name": "grpo-launch", "creationTimestamp": "2026-12-04T19:00:00Z",
                                       "annotations": {}},
                          "data": {"launch.yaml": dump_yaml({"mode": mode, "objects": [
                                       {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "grpo"}]}),
                                   "infra.yaml": dump_yaml({"launch": {"mode": mode, "deletionRules": rules}}),
                                   "recipe.yaml": "{}\n"}}
    if marked:
        cm["metadata"]["annotations"][SUBMITTED_ANNOTATION] = spec_digest(cm)
    return cm


def rule(policy: str = "DeleteSelf", **condition: str) -> dict[str, Any]:
    return {"policy": policy, "condition": condition}


def test_the_rules_say_how_it_ended() -> None:
    ended = self_deleted(read_record(record([rule(jobStatus="SUCCEEDED")])), [])
    assert ended is not None and (ended.name, ended.state, ended.ok) == ("grpo", "succeeded", True)
    assert ended.state_text == "succeeded (deleted by DeleteSelf)"
    assert ended.summary == "KubeRay deleted it when it ended (deletionRules: DeleteSelf on jobStatus SUCCEEDED)"
    failed = self_deleted(read_record(record([rule(jobDeploymentStatus="Failed")])), [])
    assert failed is not None and failed.state_text == "failed (deleted by DeleteSelf)" and not failed.ok
    both = self_deleted(read_record(record([rule(jobStatus="SUCCEEDED"), rule(jobStatus="FAILED"),
                                            rule("DeleteCluster", jobStatus="STOPPED")])), [])
    assert both is not None and both.state_text == "ended (deleted by DeleteSelf)"
    assert both.summary.endswith("(deletionRules: DeleteSelf on jobStatus SUCCEEDED, jobStatus FAILED)")


def test_nothing_when_the_rayjob_is_there_or_the_record_says_nothing_of_how_it_ended() -> None:
    succeeded = [rule(jobStatus="SUCCEEDED")]
    assert self_deleted(read_record(record(succeeded)), [RAYJOB]) is None  # its own status says
    assert self_deleted(read_record(record(succeeded, marked=False)), []) is None  # never created by `run`
    assert self_deleted(read_record(record([rule("DeleteCluster", jobStatus="SUCCEEDED")])), []) is None
    assert self_deleted(read_record(record(succeeded, mode="attach")), []) is None
    assert self_deleted(None, []) is None
    changed = record(succeeded)
    changed["data"]["recipe.yaml"] = "lr: 1\n"  # rewritten by a re-run that stopped before its RayJob
    assert self_deleted(read_record(changed), []) is None
