"""The rules the KubeRay operator enforces at reconcile time, checked offline.

The CRD schemas cannot express these (``submissionMode`` has no enum; name lengths,
cross-field rules), so a bad RayJob passes ``kubectl apply`` and only fails later in
the operator's events. Source: ``ray-operator/controllers/ray/utils/validation.go``
(KubeRay v1.7.0) and ``../shared/notes/kuberay.md``.

Works on any RayJob / RayCluster object (ours or a user's manifest) and returns plain
``(json path, message)`` pairs.
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.kube import PodTemplate, as_int, as_mapping, pod_templates
from dockyard_k8s.names import match_dns1035_label
from dockyard_k8s.plain import Path, dig
from dockyard_k8s.yamlfile import YamlError, load_data

MAX_RAYJOB_NAME = 47  # KubeRay appends a 5-character suffix for the RayCluster it creates
MAX_RAYCLUSTER_NAME = 53
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
REMOVED_LABELS = {"ray.io/scheduler-name": "removed in KubeRay v1.6; the batch scheduler is chosen operator-wide"}
_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")


def kuberay_problems(obj: dict[str, Any], templates: list[PodTemplate] | None = None) -> list[tuple[Path, str]]:
    """Every KubeRay rule ``obj`` breaks; [] for other kinds. ``templates``: its
    :func:`.kube.pod_templates`, when the caller has them."""
    kind = obj.get("kind")
    if kind not in ("RayJob", "RayCluster") or str(obj.get("apiVersion", "")).partition("/")[0] != "ray.io":
        return []
    out: list[tuple[Path, str]] = []
    meta = as_mapping(obj.get("metadata"))
    limit = MAX_RAYJOB_NAME if kind == "RayJob" else MAX_RAYCLUSTER_NAME
    name = str(meta.get("name", ""))
    if len(name) > limit:
        out.append((("metadata", "name"), f"{kind} name {name!r} has {len(name)} characters, "
                                          f"KubeRay allows at most {limit}"))
    if name and match_dns1035_label(name) is None:
        out.append((("metadata", "name"), f"{kind} name {name!r} is not a DNS-1035 label "
                                          "(lowercase letters, digits, '-', starting with a letter)"))
    _removed_labels(obj, pod_templates(obj) if templates is None else templates, out)
    spec = as_mapping(obj.get("spec"))
    if kind == "RayJob":
        _rayjob(spec, out)
    else:
        _cluster_spec(spec, ("spec",), out)
    return out


def _removed_labels(obj: dict[str, Any], templates: list[PodTemplate], out: list[tuple[Path, str]]) -> None:
    """Where labels go on a RayJob/RayCluster: its metadata, each group's ``labels`` field and
    each pod template's metadata (not a walk of the whole object: this runs on every RayJob
    of a large input)."""
    spec = as_mapping(obj.get("spec"))
    cluster = spec.get("rayClusterSpec") if obj.get("kind") == "RayJob" else spec
    at: Path = ("spec", "rayClusterSpec") if obj.get("kind") == "RayJob" else ("spec",)
    places: list[tuple[Any, Path]] = [(dig(obj, "metadata", "labels"), ("metadata",)),
                                      (dig(cluster, "headGroupSpec", "labels"), (*at, "headGroupSpec"))]
    groups = dig(cluster, "workerGroupSpecs")
    places += [(dig(group, "labels"), (*at, "workerGroupSpecs", i))
               for i, group in enumerate(groups if isinstance(groups, list) else [])]
    places += [(t.metadata.get("labels"), (*t.path, "metadata")) for t in templates]
    for labels, path in places:
        if labels.__class__ is dict and labels:
            for label, why in REMOVED_LABELS.items():
                if label in labels:
                    out.append(((*path, "labels", label), f"label {label} is {why}"))


def _rayjob(spec: dict[str, Any], out: list[tuple[Path, str]]) -> None:
    mode = spec.get("submissionMode", "K8sJobMode")
    if mode not in SUBMISSION_MODES:
        out.append((("spec", "submissionMode"), f"got {mode!r}, expected one of: {', '.join(SUBMISSION_MODES)}"))
    selector = as_mapping(spec.get("clusterSelector"))
    has_cluster = spec.get("rayClusterSpec") is not None
    if has_cluster == bool(selector):
        out.append((("spec",), "exactly one of rayClusterSpec and clusterSelector must be set"))
    shutdown = bool(spec.get("shutdownAfterJobFinishes", False))
    backoff = as_int(spec.get("backoffLimit"))
    if spec.get("suspend") and not shutdown:
        out.append((("spec", "suspend"), "suspend requires shutdownAfterJobFinishes: true"))
    if not shutdown and as_int(spec.get("ttlSecondsAfterFinished")) > 0:
        out.append((("spec", "ttlSecondsAfterFinished"), "ttlSecondsAfterFinished requires "
                                                         "shutdownAfterJobFinishes: true"))
    if selector:
        if not selector.get("ray.io/cluster"):
            out.append((("spec", "clusterSelector"), "clusterSelector needs the key ray.io/cluster"))
        if spec.get("suspend"):
            out.append((("spec", "suspend"), "clusterSelector does not support suspend"))
        if backoff > 0:
            out.append((("spec", "backoffLimit"), "clusterSelector does not support backoffLimit > 0"))
        if mode == "SidecarMode":
            out.append((("spec", "submissionMode"), "clusterSelector is not supported in SidecarMode"))
    if mode == "InteractiveMode" and backoff > 0:
        out.append((("spec", "backoffLimit"), "InteractiveMode does not support backoffLimit > 0"))
    if mode == "SidecarMode":
        out += [(("spec", key), f"SidecarMode does not support {key}")
                for key in ("submitterPodTemplate", "submitterConfig") if spec.get(key) is not None]
        policy = dig(spec, "rayClusterSpec", "headGroupSpec", "template", "spec", "restartPolicy")
        if policy not in (None, "", "Never"):
            out.append((("spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "restartPolicy"),
                        f"got {policy!r}: SidecarMode needs the head restartPolicy Never or unset"))
    rules = as_mapping(spec.get("deletionStrategy")).get("deletionRules") or []
    if rules and shutdown:
        out.append((("spec", "deletionStrategy", "deletionRules"),
                    "deletionRules cannot be combined with shutdownAfterJobFinishes: true"))
    for key, low in (("activeDeadlineSeconds", 1), ("preRunningDeadlineSeconds", 1), ("backoffLimit", 0),
                     ("ttlSecondsAfterFinished", 0)):
        value = spec.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < low:
            out.append((("spec", key), f"got {value}, expected a number >= {low}"))
    runtime_env = spec.get("runtimeEnvYAML")
    if isinstance(runtime_env, str) and runtime_env.strip():
        try:
            load_data(runtime_env)
        except YamlError as e:
            out.append((("spec", "runtimeEnvYAML"), f"is not valid YAML: {str(e).splitlines()[0]}"))
    if has_cluster:
        _cluster_spec(as_mapping(spec["rayClusterSpec"]), ("spec", "rayClusterSpec"), out)


def _cluster_spec(spec: dict[str, Any], at: Path, out: list[tuple[Path, str]]) -> None:
    head = as_mapping(spec.get("headGroupSpec"))
    groups = [("headGroupSpec", head, (*at, "headGroupSpec"))]
    seen: set[str] = set()
    workers = spec.get("workerGroupSpecs")
    for i, raw in enumerate(workers if isinstance(workers, list) else []):
        path = (*at, "workerGroupSpecs", i)
        group = as_mapping(raw)
        name = group.get("groupName", "")
        if isinstance(name, str):
            if name in seen:
                out.append(((*path, "groupName"), f"duplicate worker group {name!r}"))
            seen.add(name)
        groups.append((name, group, path))
        lo, hi, n = group.get("minReplicas"), group.get("maxReplicas"), group.get("replicas")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            out.append(((*path, "minReplicas"), f"minReplicas {lo} is greater than maxReplicas {hi}"))
        if isinstance(n, int) and isinstance(lo, int) and isinstance(hi, int) and not lo <= n <= hi:
            out.append(((*path, "replicas"), f"replicas {n} is outside [minReplicas {lo}, maxReplicas {hi}]"))
    for name, group, path in groups:
        containers = dig(group, "template", "spec", "containers") or []
        if not containers:
            out.append(((*path, "template", "spec", "containers"), f"{name} group needs at least one container"))
        params = as_mapping(group.get("rayStartParams"))
        if group.get("resources") and any(params.get(p) for p in _RESOURCE_PARAMS):
            out.append(((*path, "resources"), f"{name} group sets resources both in rayStartParams and in "
                                              "resources; KubeRay accepts only one"))
        if "labels" in params:
            out.append(((*path, "rayStartParams", "labels"), "rayStartParams.labels is not supported; "
                                                             "use the group's top-level labels field"))
