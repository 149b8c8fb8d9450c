"""The launch record: what a run was launched with, kept on the cluster beside the run.

``run`` and ``cluster up`` apply one more ConfigMap, ``<run>-launch``, labelled like every
object of the run (so ``down`` deletes it), with:

* ``launch.yaml``: the launcher version, the recipe file and infra files as given, the
  ``--set`` layers and recipe overrides, the launch mode, and every object applied
  (apiVersion, kind, name) — what ``status RUN``/``down RUN`` work from without the files;
* ``infra.yaml`` / ``recipe.yaml``: the resolved infra spec and recipe.

**Never a secret value**: every value of an environment map (``env``, ``env_vars``: names
are kept, values are ``<redacted>`` unless they are ``valueFrom`` references), every value
under a key that names a credential (``token``, ``password``, ``apiKey``, ``secretKey``...),
and ``--set``/override values of such keys are redacted before anything is written.
Pure: builds and reads plain data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s import __version__
from dockyard_k8s.credentials import ENV_KEYS, REDACTED, looks_like_credential
from dockyard_k8s.credentials import redact_assignment as redact_assignment  # re-exported
from dockyard_k8s.yamlfile import YamlError, load_data

if TYPE_CHECKING:
    from dockyard_k8s.bundle import Bundle

RECORD_COMPONENT = "launch-record"
RECORD_SUFFIX = "launch"
COMPONENT_LABEL = "app.kubernetes.io/component"
VERSION_ANNOTATION = "dockyard-k8s/launcher-version"
MODE_ANNOTATION = "dockyard-k8s/mode"
GPUS_ANNOTATION = "dockyard-k8s/gpus"


def record_name(run: str) -> str:
    return f"{run}-{RECORD_SUFFIX}"


def names_credential(key: str) -> bool:
    """A key that names a credential (HF_TOKEN, apiKey, aws_secret_access_key, password; not
    max_new_tokens or tokenizer): ``dockyard_k8s.credentials``, the one home of it."""
    return looks_like_credential(key)


def redact(value: Any, *, env: bool = False) -> Any:
    """A copy of plain data with every secret-bearing value replaced by ``<redacted>``."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if env and not isinstance(v, (dict, list)):
                out[key] = REDACTED if v is not None else None
            elif names_credential(key) and not isinstance(v, (dict, list)) and v is not None:
                out[key] = REDACTED
            else:
                out[key] = redact(v, env=key in ENV_KEYS)
        return out
    if isinstance(value, list):
        if env:  # [{name, value}] as Kubernetes writes env
            return [{**item, "value": REDACTED} if isinstance(item, dict) and "value" in item else redact(item)
                    for item in value]
        return [redact(v) for v in value]
    return value


def total_gpus(objects: Sequence[dict[str, Any]]) -> int:
    """GPUs the run's pod templates request (nvidia.com/gpu x replicas)."""
    from dockyard_k8s.kube import pod_requests, pod_templates

    total = 0
    for obj in objects:
        for template in pod_templates(obj):
            if template.replicas is not None:  # not a DaemonSet's pods
                total += int(pod_requests(template.spec).get("nvidia.com/gpu", 0)) * template.replicas
    return total


@dataclass(frozen=True, slots=True)
class Invocation:
    """What the command line said (files as given), for the record."""

    infra_files: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()  # --set (and --set-string) as typed
    set_files: tuple[str, ...] = ()  # --set-file KEY=PATH: the path is recorded, never the content


NO_INVOCATION = Invocation()


def launch_record(bundle: Bundle, applied: Sequence[dict[str, Any]], invocation: Invocation = NO_INVOCATION,
                  ) -> dict[str, Any]:
    """The record ConfigMap of a run about to be applied (``applied``: the objects, in order)."""
    from dockyard_k8s.render.meta import metadata
    from dockyard_k8s.render.serialize import dump_yaml

    run = bundle.run
    infra = run.infra
    launch = {
        "launcherVersion": __version__,
        "recipeFile": run.recipe_file,
        "infraFiles": list(invocation.infra_files),
        "sets": [redact_assignment(s) for s in invocation.sets],
        "setFiles": list(invocation.set_files),
        "overrides": [redact_assignment(a) for a in run.job_args],
        "sources": list(run.sources),
        "mode": infra["launch"]["mode"],
        "objects": [{"apiVersion": o.get("apiVersion"), "kind": o.get("kind"),
                     "name": (o.get("metadata") or {}).get("name")} for o in applied],
    }
    meta = metadata(infra, record_name(run.name), RECORD_COMPONENT)
    meta["annotations"] = {VERSION_ANNOTATION: __version__, MODE_ANNOTATION: str(infra["launch"]["mode"]),
                           GPUS_ANNOTATION: str(total_gpus(applied))}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {
            "launch.yaml": dump_yaml(launch),
            "infra.yaml": dump_yaml(redact(dict(infra))),
            "recipe.yaml": dump_yaml(redact(run.recipe)),
        },
    }


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
    rules = ((rayjob.get("spec") or {}).get("deletionStrategy") or {}).get("deletionRules") or []
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


def condition_text(conditions: list[dict[str, Any]]) -> str:
    return ", ".join(f"{k} {c[k]}" for c in conditions for k in ("jobStatus", "jobDeploymentStatus") if c.get(k))


def deleted_text(conditions: list[dict[str, Any]]) -> str:
    """How `run`, `runs` and `status` say a DeleteSelf rule removed the RayJob."""
    return f"KubeRay deleted it when it ended (deletionRules: DeleteSelf on {condition_text(conditions)})"


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
