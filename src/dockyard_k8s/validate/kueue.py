"""The rules Kueue's admission webhooks enforce on a queued job, checked offline.

A job that carries ``kueue.x-k8s.io/queue-name`` is validated by Kueue's webhook when it is
created: a RayJob that keeps its cluster after finishing, a worker group called ``head`` or an
autoscaling RayCluster is refused by the API server, and a topology annotation Kueue cannot
read makes the workload inadmissible. The schema cannot express these. Sources (Kueue v0.19.2):
``pkg/controller/jobs/rayjob/rayjob_webhook.go``, ``pkg/controller/jobs/raycluster/``,
``pkg/controller/jobframework/{validation,tas_validation}.go``. The messages are Kueue's.

Works on any object (ours or a user's manifest) and returns plain ``(json path, message)``
pairs; an object without the queue-name label costs one dict lookup.
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.kube import as_mapping, parse_quantity
from dockyard_k8s.names import (
    DNS1123_SUBDOMAIN_FMT,
    QUALIFIED_NAME_FMT,
    QUALIFIED_NAME_MAX,
    is_dns1123_subdomain,
    match_qualified_name,
)
from dockyard_k8s.plain import Path, dig, format_path

# apimachinery IsDNS1123Subdomain's message, as Kueue returns it for a bad queue name.
DNS1123_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                             "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                             f"'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FMT}')")
ELASTIC_MESSAGE = ("a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
                   "ElasticJobsViaWorkloadSlices feature gate and set the \"kueue.x-k8s.io/elastic-job\": \"true\" "
                   "annotation")
TOPOLOGY_KEYS = f"[{', '.join(repr(k).replace(chr(39), chr(34)) for k in kueue.TOPOLOGY_ANNOTATIONS)}]"


def kueue_problems(obj: dict[str, Any]) -> list[tuple[Path, str]]:
    """Every Kueue webhook (or CEL) rule ``obj`` breaks: a queued job, or a Kueue object."""
    queue = dig(obj, "metadata", "labels", kueue.QUEUE_LABEL)
    if queue is None:
        kind = obj.get("kind")
        if kind in _OBJECT_RULES and str(obj.get("apiVersion", "")).partition("/")[0] == kueue.GROUP:
            return _OBJECT_RULES[kind](as_mapping(obj.get("spec")))
        return []
    out: list[tuple[Path, str]] = []
    at_label: Path = ("metadata", "labels", kueue.QUEUE_LABEL)
    if not isinstance(queue, str) or not is_dns1123_subdomain(queue):
        out.append((at_label, f"Invalid value: {queue!r}: {DNS1123_SUBDOMAIN_MESSAGE}"))
    kind, spec = obj.get("kind"), as_mapping(obj.get("spec"))
    elastic = dig(obj, "metadata", "annotations", kueue.ELASTIC_JOB_ANNOTATION) == "true"
    if kind == "RayJob":
        if not _rayjob(spec, elastic, out):
            return out  # Kueue's webhook stops there (an existing cluster, or no cluster spec)
    elif kind == "RayCluster":
        _raycluster_spec(spec, ("spec",), elastic, out, ELASTIC_MESSAGE)
    _topology(kueue.pod_sets(obj), out)
    return out


def _rayjob(spec: dict[str, Any], elastic: bool, out: list[tuple[Path, str]]) -> bool:
    """The RayJob webhook's rules; False where it stops checking."""
    has_selector = bool(as_mapping(spec.get("clusterSelector")))
    cluster = spec.get("rayClusterSpec")
    if has_selector and cluster is not None:
        out.append((("spec", "clusterSelector"), "Invalid value: a kueue managed job should not use an existing "
                                                 "cluster"))
        return False
    if has_selector:
        return False  # a RayJob on an existing cluster is not managed by Kueue
    if cluster is None:
        out.append((("spec", "rayClusterSpec"), "Required value: rayClusterSpec is required for Kueue-managed jobs "
                                                "that don't use clusterSelector"))
        return False
    if not spec.get("shutdownAfterJobFinishes"):
        out.append((("spec", "shutdownAfterJobFinishes"), "Invalid value: false: a kueue managed job should delete "
                                                          "the cluster after finishing"))
    _raycluster_spec(as_mapping(cluster), ("spec", "rayClusterSpec"), elastic, out,
                     "a kueue managed job should only use autoscaling when workload slicing is enabled")
    pod_sets = len(as_mapping(cluster).get("workerGroupSpecs") or []) + 1
    if (spec.get("submissionMode") or "K8sJobMode") == "K8sJobMode" and pod_sets + 1 > kueue.MAX_POD_SETS \
            and pod_sets <= kueue.MAX_POD_SETS:
        # The webhook counts the RayCluster's pod sets; the Workload adds the submitter and its
        # CRD caps the total, so Kueue cannot create the Workload.
        out.append((("spec", "rayClusterSpec", "workerGroupSpecs", pod_sets - 2),
                    f"Too many: {pod_sets + 1}: must have at most {kueue.MAX_POD_SETS} items (the Workload's "
                    "spec.podSets: head, each worker group and the submitter)"))
    return True


def _raycluster_spec(spec: dict[str, Any], at: Path, elastic: bool, out: list[tuple[Path, str]],
                     autoscaling: str) -> None:
    if spec.get("enableInTreeAutoscaling") is True and not elastic:
        out.append(((*at, "enableInTreeAutoscaling"), f"Invalid value: true: {autoscaling}"))
    groups = spec.get("workerGroupSpecs")
    groups = groups if isinstance(groups, list) else []
    if len(groups) + 1 > kueue.MAX_POD_SETS:  # reported at the first group too many (the head is a pod set)
        out.append(((*at, "workerGroupSpecs", kueue.MAX_POD_SETS - 1), f"Too many: {len(groups) + 1}: must have at "
                                                                       f"most {kueue.MAX_POD_SETS} items"))
    for i, group in enumerate(groups):
        if as_mapping(group).get("groupName") == kueue.HEAD_POD_SET:
            out.append(((*at, "workerGroupSpecs", i, "groupName"), 'Forbidden: "head" is reserved for the head group'))


def _label_name_problem(value: str) -> str | None:
    """apimachinery ValidateLabelName, in short: a qualified name (optional DNS prefix + '/')."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix and not is_dns1123_subdomain(prefix):
        return f"prefix part {DNS1123_SUBDOMAIN_MESSAGE}"
    if not name or len(name) > QUALIFIED_NAME_MAX or match_qualified_name(name) is None:
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                f"validation is '{QUALIFIED_NAME_FMT}')")
    return None


def _topology(pod_sets: list[kueue.PodSet], out: list[tuple[Path, str]]) -> None:
    """jobframework.ValidateTASPodSetRequest per pod set, then ValidatePodSetGroupingTopology."""
    groups: dict[str, list[tuple[kueue.PodSet, tuple[str, str] | None]]] = {}
    for ps in pod_sets:
        annotations = as_mapping(ps.metadata.get("annotations"))
        if not annotations or not ps.path:
            continue
        at: Path = (*ps.path, "metadata", "annotations")
        found = [k for k in kueue.TOPOLOGY_ANNOTATIONS if k in annotations]
        if len(found) > 1:
            out.append((at, f"Invalid value: must not contain more than one topology annotation: {TOPOLOGY_KEYS}"))
        for key in (kueue.REQUIRED_TOPOLOGY, kueue.PREFERRED_TOPOLOGY, kueue.SLICE_REQUIRED_TOPOLOGY):
            value = annotations.get(key)
            if key in annotations and (why := _label_name_problem(str(value))):
                out.append(((*at, key), f"Invalid value: {str(value)!r}: {why}"))
        value = annotations.get(kueue.UNCONSTRAINED_TOPOLOGY)
        if kueue.UNCONSTRAINED_TOPOLOGY in annotations and str(value).lower() not in ("true", "false", "1", "0", "t",
                                                                                       "f"):
            out.append(((*at, kueue.UNCONSTRAINED_TOPOLOGY), f"Invalid value: {str(value)!r}: must be a boolean value"))
        group = annotations.get(kueue.POD_SET_GROUP)
        if kueue.POD_SET_GROUP in annotations:
            where = (*at, kueue.POD_SET_GROUP)
            if str(group).isdigit():
                out.append((where, f"Invalid value: {str(group)!r}: must not be a number"))
            if kueue.REQUIRED_TOPOLOGY not in annotations and kueue.PREFERRED_TOPOLOGY not in annotations:
                out.append((where, f"Forbidden: may not be set when neither '{kueue.PREFERRED_TOPOLOGY}' nor "
                                   f"'{kueue.REQUIRED_TOPOLOGY}' is specified"))
            else:
                groups.setdefault(str(group), []).append((ps, kueue.topology_request(ps.metadata)))
    for name, members in groups.items():
        paths = [(*ps.path, "metadata", "annotations") for ps, _ in members]
        if len(members) != 2:
            for at in paths:
                out.append(((*at, kueue.POD_SET_GROUP), f"Invalid value: {name!r}: can only define groups of exactly "
                                                        f"2 pod sets, got: {len(members)} pod set(s)"))
            continue
        (a, ra), (b, rb) = members
        if a.count != 1 and b.count != 1:
            message = (f"Invalid value: {name!r}: can only define groups where at least one pod set has only 1 "
                       f"replica, got: {a.count} replica(s) and {b.count} replica(s) in the group")
            out += [((*at, kueue.POD_SET_GROUP), message) for at in paths]
        if ra != rb:
            for at, other in ((paths[0], paths[1]), (paths[1], paths[0])):
                out.append((at, f"Invalid value: must specify '{kueue.REQUIRED_TOPOLOGY}' or "
                                f"'{kueue.PREFERRED_TOPOLOGY}' topology consistent with '{format_path(other)}' in "
                                f"group '{name}'"))


# --- Kueue's own objects: the CRDs' CEL rules (which offline schema checks drop) and the webhook's ---


def _resource_groups(spec: dict[str, Any], has_parent: bool, parent: str, *, lend_within_nominal: bool
                     ) -> list[tuple[Path, str]]:
    """pkg/webhooks validateResourceGroups + the CRD's "same number of resources" rule. A lending limit
    above the nominal quota is refused in a ClusterQueue only: a Cohort lends its children's quota too
    (cohort_webhook.go validateCohort: enforceNominalGreaterThanLending false)."""
    out: list[tuple[Path, str]] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    groups = spec.get("resourceGroups")
    for i, rg in enumerate(groups if isinstance(groups, list) else []):
        rg = as_mapping(rg)
        at: Path = ("spec", "resourceGroups", i)
        covered = [str(c) for c in rg.get("coveredResources") or []]
        for j, name in enumerate(covered):
            if name in seen_resources:
                out.append(((*at, "coveredResources", j), f"Duplicate value: {name!r}"))
            seen_resources.add(name)
        flavors = rg.get("flavors")
        for j, flavor in enumerate(flavors if isinstance(flavors, list) else []):
            flavor = as_mapping(flavor)
            fat: Path = (*at, "flavors", j)
            name = str(flavor.get("name", ""))
            if name in seen_flavors:
                out.append(((*fat, "name"), f"Duplicate value: {name!r}"))
            seen_flavors.add(name)
            resources = [as_mapping(r) for r in flavor.get("resources") or []]
            if len(resources) != len(covered):
                out.append((fat, "flavors must have the same number of resources as the coveredResources"))
            for k, quota in enumerate(resources[:len(covered)]):
                rat: Path = (*fat, "resources", k)
                if quota.get("name") != covered[k]:
                    out.append(((*rat, "name"), f"Invalid value: {quota.get('name')!r}: must match the name in "
                                                "coveredResources"))
                for limit in ("borrowingLimit", "lendingLimit"):
                    if quota.get(limit) is not None and not has_parent:
                        out.append(((*rat, limit), f"Invalid value: {str(quota[limit])!r}: must be nil when {parent} "
                                                   "is empty"))
                lending, nominal = parse_quantity(quota.get("lendingLimit")), parse_quantity(quota.get("nominalQuota"))
                if lend_within_nominal and lending is not None and nominal is not None and lending > nominal:
                    out.append(((*rat, "lendingLimit"), f"Invalid value: {str(quota['lendingLimit'])!r}: must be less "
                                                        "than or equal to the nominalQuota"))
    return out


def _cluster_queue(spec: dict[str, Any]) -> list[tuple[Path, str]]:
    out = _resource_groups(spec, bool(spec.get("cohortName") or spec.get("cohort")), "cohort",  # v1beta2, v1beta1
                           lend_within_nominal=True)
    preemption = as_mapping(spec.get("preemption"))
    borrow = as_mapping(preemption.get("borrowWithinCohort")).get("policy", "Never")
    if preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow != "Never":
        out.append((("spec", "preemption"), "Invalid value: reclaimWithinCohort=Never and "
                                            "borrowWithinCohort.Policy!=Never"))
    fungibility = as_mapping(spec.get("flavorFungibility"))
    if fungibility.get("preference") is not None and (
            fungibility.get("whenCanBorrow", "MayStopSearch") != "TryNextFlavor"
            or fungibility.get("whenCanPreempt", "TryNextFlavor") != "TryNextFlavor"):
        out.append((("spec", "flavorFungibility", "preference"),
                    f"Invalid value: {fungibility['preference']!r}: preference {fungibility['preference']!r} "
                    "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor"))
    return out


def _cohort(spec: dict[str, Any]) -> list[tuple[Path, str]]:
    return _resource_groups(spec, bool(spec.get("parentName")), "parent", lend_within_nominal=False)


def _resource_flavor(spec: dict[str, Any]) -> list[tuple[Path, str]]:
    if spec.get("topologyName") and not as_mapping(spec.get("nodeLabels")):
        return [(("spec",), "at least one nodeLabel is required when topology is set")]
    return []


def _topology_object(spec: dict[str, Any]) -> list[tuple[Path, str]]:
    levels = [str(as_mapping(lv).get("nodeLabel", "")) for lv in spec.get("levels") or []]
    out: list[tuple[Path, str]] = []
    if len(set(levels)) != len(levels):
        out.append((("spec", "levels"), "must be unique"))
    if "kubernetes.io/hostname" in levels and levels[-1] != "kubernetes.io/hostname":
        out.append((("spec", "levels"), "the kubernetes.io/hostname label can only be used at the lowest level of "
                                        "topology"))
    return out


_OBJECT_RULES = {"ClusterQueue": _cluster_queue, "Cohort": _cohort, "ResourceFlavor": _resource_flavor,
                 "Topology": _topology_object}
