"""The launch record read back from the cluster (``runs``, ``status RUN``, ``down RUN``), and how a
RayJob that deleted itself ended. The record itself is built with the run it is applied with
(``render/record.py``). Pure: reads plain data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.plain import dig
from dockyard_k8s.yamlfile import YamlError, load_data


@dataclass(frozen=True, slots=True)
class Record:
    """A record read back from the cluster."""

    launch: dict[str, Any]
    infra: dict[str, Any]
    created: str  # the ConfigMap's creationTimestamp
    submitted: bool = False  # `run` created the RayJob of this very spec (SUBMITTED_ANNOTATION)

    @property
    def objects(self) -> list[dict[str, Any]]:
        """Skeletons of the applied objects (enough for kinds and names)."""
        return [{"apiVersion": o.get("apiVersion"), "kind": o.get("kind"), "metadata": {"name": o.get("name")}}
                for o in self.launch.get("objects") or [] if isinstance(o, dict)]


def read_record(configmap: dict[str, Any] | None) -> Record | None:
    """The record of a ``<run>-launch`` ConfigMap (None when absent or unreadable)."""
    if not configmap:
        return None
    data = configmap.get("data") or {}
    try:
        launch = load_data(data.get("launch.yaml") or "") or {}
        infra = load_data(data.get("infra.yaml") or "") or {}
    except YamlError:
        return None
    if not isinstance(launch, dict) or not isinstance(infra, dict):
        return None
    meta = configmap.get("metadata") or {}
    marker = (meta.get("annotations") or {}).get(SUBMITTED_ANNOTATION)
    return Record(launch, infra, str(meta.get("creationTimestamp") or ""),
                  submitted=bool(marker) and marker == spec_digest(configmap))


# --- a RayJob that deletes itself when it ends (KubeRay deletionRules, policy DeleteSelf) ------
# The RayJob is gone once it ended, so re-running the unchanged spec would find nothing and start
# the training again. `run` marks the record (this annotation, under a field manager of its own, so
# the next apply of the record neither removes it nor counts as a change) with the digest of the
# spec whose RayJob it created; a re-run whose spec has the same digest, finding no RayJob, says
# it already finished instead of creating it again.
SUBMITTED_ANNOTATION = "dockyard-k8s/submitted"
SUBMITTED_MANAGER = "dockyard-k8s-launch"


def spec_digest(configmap: dict[str, Any]) -> str:
    """What a record says was launched (resolved infra, recipe, overrides), as a short digest:
    the same spec gives the same digest whatever the files were called or the launcher's version."""
    data = configmap.get("data") or {}
    try:
        launch = load_data(data.get("launch.yaml") or "") or {}
    except YamlError:
        launch = {}
    overrides = launch.get("overrides") if isinstance(launch, dict) else None
    text = json.dumps([data.get("infra.yaml") or "", data.get("recipe.yaml") or "", overrides or []])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def delete_self_conditions(rayjob: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions of a RayJob's DeleteSelf deletion rules ([] when it has none)."""
    rules = dig(rayjob, "spec", "deletionStrategy", "deletionRules") or []
    return [dict(r.get("condition") or {}) for r in rules if isinstance(r, dict) and r.get("policy") == "DeleteSelf"]


def ended_as(conditions: list[dict[str, Any]]) -> tuple[str, bool]:
    """(state, ok) of a RayJob that a DeleteSelf rule with one of ``conditions`` removed: KubeRay
    acts on a rule only when its condition matches the job's status (rayjob_controller.go,
    isDeletionRuleMatched), so rules on SUCCEEDED alone mean it succeeded."""
    statuses = {str(c.get("jobStatus") or c.get("jobDeploymentStatus") or "") for c in conditions}
    if statuses <= {"SUCCEEDED"}:
        return "succeeded", True
    if statuses <= {"FAILED", "Failed"}:
        return "failed", False
    return "ended", True


def deleted_text(conditions: list[dict[str, Any]]) -> str:
    """How `run`, `runs` and `status` say a DeleteSelf rule removed the RayJob."""
    on = ", ".join(f"{k} {c[k]}" for c in conditions for k in ("jobStatus", "jobDeploymentStatus") if c.get(k))
    return f"KubeRay deleted it when it ended (deletionRules: DeleteSelf on {on})"


@dataclass(frozen=True, slots=True)
class SelfDeleted:
    """A run's RayJob that its DeleteSelf rule removed, and how it ended (from the rules)."""

    name: str  # the RayJob's
    state: str  # succeeded, failed, ended (ended_as)
    ok: bool
    conditions: list[dict[str, Any]]

    @property
    def state_text(self) -> str:
        """The STATE column of ``runs``."""
        return f"{self.state} (deleted by DeleteSelf)"

    @property
    def summary(self) -> str:
        return deleted_text(self.conditions)

    def as_dict(self) -> dict[str, Any]:
        """As ``status -o json`` gives it (``endedBy``)."""
        return {"policy": "DeleteSelf", "state": self.state, "ok": self.ok, "conditions": self.conditions}


def self_deleted(record: Record | None, live: Sequence[dict[str, Any]]) -> SelfDeleted | None:
    """The record's RayJob, gone from ``live`` (the run's objects on the cluster), when its DeleteSelf
    rules removed it: the record is of the very spec `run` created the RayJob from (a record of
    another spec, or of a launch that stopped before its RayJob, says nothing of how it ended)."""
    if record is None or not record.submitted or record.launch.get("mode") != "rayjob":
        return None
    rules = (record.infra.get("launch") or {}).get("deletionRules") if isinstance(record.infra, dict) else None
    conditions = delete_self_conditions({"spec": {"deletionStrategy": {"deletionRules": rules or []}}})
    name = next((o["metadata"]["name"] for o in record.objects if o.get("kind") == "RayJob"), None)
    if not conditions or not name:
        return None
    if any(o.get("kind") == "RayJob" and (o.get("metadata") or {}).get("name") == name for o in live):
        return None  # still there: its own status says how it is
    state, ok = ended_as(conditions)
    return SelfDeleted(str(name), state, ok, conditions)
