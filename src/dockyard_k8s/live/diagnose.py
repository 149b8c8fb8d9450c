"""Why a pod of the run is not running: pod/container states and Warning events ->
fleet + pod + reason + one-line hint. Pure functions over API objects.

Sources of the reasons (Kubernetes docs "Debug Pods", kubelet ``images`` and
``kuberuntime`` packages, scheduler framework messages):
* container ``state.waiting.reason``: ErrImagePull, ImagePullBackOff, InvalidImageName,
  ErrImageNeverPull, CrashLoopBackOff, CreateContainerConfigError, CreateContainerError,
  RunContainerError;
* ``state.terminated.reason`` / ``lastState.terminated.reason``: OOMKilled, Error;
* pod ``status.reason: Evicted`` (kubelet node-pressure eviction);
* the ``PodScheduled=False, reason=Unschedulable`` condition (message like
  ``0/4 nodes are available: 4 Insufficient nvidia.com/gpu.``);
* events: FailedScheduling, FailedMount, FailedAttachVolume, Failed (image pulls),
  BackOff, Evicted, OOMKilling, FailedCreate (quota), FailedCreatePodSandBox
  (missing runtime handler), Unhealthy (probes), ProvisioningFailed / FailedBinding (a
  PersistentVolumeClaim that stays Pending).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.kube import conditions, true_conditions
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import FLEET_LABEL

# Where a fleet's settings live in the infra spec, for hints.
FLEET_KEYS = {
    "head": "kuberay.head",
    "trainer": "kuberay.trainer",
    "inference": "kuberay.inference",
    "sandbox": "sandbox",
    "submitter": "launch.submitter",
    "serve": "serve",  # a model endpoint's server pods (dockyard-k8s serve)
}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What is wrong with a pod or an object of the run, and what to do (``fleet/pod: reason — hint``)."""

    fleet: str  # head | trainer | inference | sandbox | submitter, or the kind of an object that is not a pod
    pod: str  # pod (or object) name
    reason: str  # the Kubernetes reason: ImagePullBackOff, FailedScheduling, OOMKilled...
    message: str  # what Kubernetes said, one line
    hint: str  # what to do, one line
    fatal: bool  # will not heal by waiting (bad image, missing secret, crash loop)

    @property
    def key(self) -> tuple[str, str]:
        return (self.pod, self.reason)

    def line(self) -> str:
        return f"{self.fleet}/{self.pod}: {self.reason}: {self.message}"


def _key(fleet: str, field: str) -> str:
    base = FLEET_KEYS.get(fleet, "")
    if not base:
        return field
    if fleet == "sandbox" and field in ("cpu", "memory", "ephemeralStorage", "memoryLimit", "cpuLimit",
                                         "ephemeralStorageLimit"):
        return f"sandbox.resources.{field}"
    return f"{base}.{field}"


def _logs_hint(fleet: str, pod: str, *, previous: bool = True) -> str:
    """The command that shows why a container of ``pod`` stopped."""
    command = "serve logs SPEC" if fleet == "serve" else "logs RECIPE"
    return f"read why: `dockyard-k8s {command} --pod {pod}{' --previous' if previous else ''}`"


def _flat(text: str) -> str:
    """The whole message on one line: what is classified (a long image reference puts the
    kubelet's "not found" past any display limit)."""
    return " ".join(str(text).split())


def _one_line(text: str, limit: int = 240) -> str:
    """The message as shown: one line, cut at ``limit`` — after it was classified."""
    flat = _flat(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fleet_of(obj: dict[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(FLEET_LABEL, "-"))


# --- hints ---------------------------------------------------------------------------------

_FIELD_OF = {"nvidia.com/gpu": "gpus", "cpu": "cpu", "memory": "memory", "ephemeral-storage": "ephemeralStorage"}
_INSUFFICIENT = re.compile(r"Insufficient ([\w./-]*\w)")  # not the sentence's full stop
_INSUFFICIENT_ON = re.compile(r"(\d+) Insufficient ([\w./-]*\w)")  # (on how many nodes, resource)
_NOT_HELPFUL = re.compile(r"preemption: 0/(?P<all>\d+) nodes are available: (?P<none>\d+) preemption is not helpful")


def _short_of(finding: Diagnosis) -> set[str]:
    """The resources a FailedScheduling finding says nodes are short of (none for other reasons)."""
    return set(_INSUFFICIENT.findall(finding.message)) if finding.reason == "FailedScheduling" else set()


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def scheduling_hint(fleet: str, message: str) -> tuple[str, bool]:
    """Hint for a FailedScheduling / Unschedulable message; (hint, fatal)."""
    m = message.lower()
    nowhere = _NOT_HELPFUL.search(m)
    counts = {r: n for n, r in _INSUFFICIENT_ON.findall(message.split("preemption:")[0])}
    short = [r for r, n in counts.items() if nowhere and n == nowhere["all"]] or list(counts)
    if short and nowhere and nowhere["all"] == nowhere["none"]:
        # kube-scheduler: a node is "not helpful" for preemption when the pod cannot fit even with
        # every other pod gone (a request over its allocatable, a selector, a taint), on all of them;
        # the resources short on every node are the ones no eviction frees
        fields = " or ".join(sorted({_key(fleet, _FIELD_OF.get(r, "extendedResources")) for r in short}))
        return (f"no node that {_a(fleet)} pod may use has that much {', '.join(sorted(set(short)))} even with "
                f"every other pod gone (the scheduler: preemption is not helpful): lower {fields}, or it waits "
                "for a larger node (a node autoscaler)", False)
    if "insufficient nvidia.com/gpu" in m:
        return (f"no node has enough free GPUs for {_a(fleet)} pod: lower {_key(fleet, 'gpus')} or "
                f"{_key(fleet, 'replicas')}, or free GPUs (`dockyard-k8s doctor` shows allocatable GPUs)", False)
    for res, field in list(_FIELD_OF.items())[1:]:
        if f"insufficient {res}" in m:
            return (f"no node has {res} left for {_a(fleet)} pod: lower {_key(fleet, field)} or add nodes", False)
    if "insufficient " in m:
        return (f"an extended resource the {fleet} pod requests is exhausted or absent on every node: "
                f"check {_key(fleet, 'extendedResources')}", False)
    if "node affinity/selector" in m or "didn't match node selector" in m:
        return (f"no node carries the labels of {_key(fleet, 'nodeSelector')}: compare with "
                "`kubectl get nodes --show-labels`", False)
    if "taint" in m:  # untolerated taint, had taint
        return (f"the matching nodes are tainted: add the taint to {_key(fleet, 'tolerations')}", False)
    if "persistentvolumeclaim" in m:
        return ("a PersistentVolumeClaim the pod mounts is missing or unbound: `kubectl get pvc` "
                "(is there a default StorageClass?)", False)
    if "too many pods" in m:
        return "the nodes reached their pod limit: add nodes or lower replicas", False
    if "preemption" in m or "priority" in m:
        return "higher-priority pods hold the capacity: check infra.priorityClassName", False
    return "the scheduler found no node for this pod: read the message; `dockyard-k8s doctor` checks capacity", False


def image_hint(fleet: str, message: str) -> tuple[str, bool]:
    m = message.lower()
    image_key = {"sandbox": "sandbox.image", "submitter": "launch.submitter.image",
                 "serve": "serve.image"}.get(fleet, "infra.image")
    if any(s in m for s in ("not found", "manifest unknown", "does not exist", "no such image")):
        return f"the image or tag does not exist: check {image_key} (pin a tag that was pushed)", True
    if any(s in m for s in ("unauthorized", "denied", "authentication required", "forbidden", "401", "403")):
        return ("the registry refused the pull: list a valid pull secret in infra.imagePullSecrets "
                "(`dockyard-k8s doctor` checks they exist)", True)
    if any(s in m for s in ("toomanyrequests", "rate limit")):
        return "the registry is rate-limiting pulls: use a mirror or a pull secret with a higher quota", False
    if any(s in m for s in ("no such host", "i/o timeout", "tls handshake", "connection refused", "dial tcp")):
        return "the node cannot reach the registry: check egress / proxy settings of the nodes", False
    if "invalidimagename" in m or "invalid reference format" in m:
        return f"the image name is malformed: check {image_key}", True
    return f"the image cannot be pulled: check {image_key} and infra.imagePullSecrets", False


def _config_hint(message: str) -> str:
    m = message.lower()
    if "secret" in m:
        return ("a Secret the pod references is missing (or lacks the key): create it in the namespace "
                "(`dockyard-k8s dev secrets` for your own keys)")
    if "configmap" in m:
        return "a ConfigMap the pod references is missing: was the run applied completely? (`dockyard-k8s run`)"
    return "the container spec cannot be satisfied: read the message"


def _mount_hint(message: str) -> tuple[str, bool]:
    m = message.lower()
    if "secret" in m and "not found" in m:
        return "a Secret volume's Secret does not exist in the namespace: create it", True
    if "configmap" in m and "not found" in m:
        return "a ConfigMap volume's ConfigMap does not exist: was the run applied completely?", True
    if "persistentvolumeclaim" in m or "pvc" in m:
        return "a PersistentVolumeClaim is missing or not bound: `kubectl get pvc`", False
    return "a volume cannot be mounted: read the message (storage driver, node plugin)", False


def _container_findings(fleet: str, pod: str, statuses: Iterable[dict[str, Any]]) -> list[Diagnosis]:
    out = []
    for cs in statuses:
        name = cs.get("name", "")
        state = cs.get("state") or {}
        last = cs.get("lastState") or {}
        waiting = state.get("waiting") or {}
        reason = waiting.get("reason", "")
        full = _flat(waiting.get("message") or "")
        message = _one_line(full)
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            hint, fatal = image_hint(fleet, full)
            out.append(Diagnosis(fleet, pod, reason, message or f"cannot pull the image of {name}", hint, fatal))
        elif reason in ("InvalidImageName", "ErrImageNeverPull"):
            hint, _ = image_hint(fleet, "invalidimagename " + full)
            if reason == "ErrImageNeverPull":
                hint = "imagePullPolicy is Never and the image is not on the node: set infra.imagePullPolicy"
            out.append(Diagnosis(fleet, pod, reason, message or name, hint, True))
        elif reason == "CrashLoopBackOff":
            term = last.get("terminated") or {}
            why = term.get("reason", "")
            if why == "OOMKilled":
                out.append(_oom(fleet, pod, name))
                continue
            code = term.get("exitCode")
            detail = f"container {name} keeps exiting" + (f" (exit code {code}{', ' + why if why else ''})"
                                                           if code is not None else "")
            out.append(Diagnosis(fleet, pod, reason, detail, _logs_hint(fleet, pod), True))
        elif reason in ("CreateContainerConfigError", "CreateContainerError", "RunContainerError"):
            out.append(Diagnosis(fleet, pod, reason, message or name, _config_hint(full), True))
        term = state.get("terminated") or {}
        if reason != "CrashLoopBackOff" and (term.get("reason") == "OOMKilled" or (
                (last.get("terminated") or {}).get("reason") == "OOMKilled" and not reason)):
            out.append(_oom(fleet, pod, name))
        elif term and term.get("exitCode") not in (0, None) and term.get("reason") != "OOMKilled":
            code = term.get("exitCode")
            out.append(Diagnosis(fleet, pod, "Error", f"container {name} exited with code {code}"
                               + (f": {_one_line(term['message'])}" if term.get("message") else ""),
                               _logs_hint(fleet, pod, previous=False), True))
    return out


def _oom(fleet: str, pod: str, container: str) -> Diagnosis:
    field = "memoryLimit" if fleet in ("sandbox", "serve") else "memory"
    return Diagnosis(fleet, pod, "OOMKilled", f"container {container} ran out of memory and was killed",
                   f"raise {_key(fleet, field)} (the limit) or lower the memory the job uses", True)


def pod_findings(pod: dict[str, Any]) -> list[Diagnosis]:
    """Every reason this pod is not (or no longer) healthy, from its own status."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    fleet = fleet_of(pod)
    status = pod.get("status") or {}
    if status.get("reason") == "Evicted":
        full = _flat(status.get("message") or "evicted by the kubelet")
        message, m = _one_line(full), full.lower()
        if "ephemeral" in m:
            hint = f"the pod wrote more local disk than allowed: raise {_key(fleet, 'ephemeralStorage')}"
        elif "memory" in m:
            hint = f"the node ran low on memory: raise {_key(fleet, 'memory')} so the scheduler reserves it"
        else:
            hint = "the node was under resource pressure; the controller recreates the pod elsewhere"
        return [Diagnosis(fleet, name, "Evicted", message, hint, False)]
    out: list[Diagnosis] = []
    scheduled = conditions(pod).get("PodScheduled") or {}
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        full = _flat(scheduled.get("message") or "no node fits")
        hint, fatal = scheduling_hint(fleet, full)
        out.append(Diagnosis(fleet, name, "FailedScheduling", _one_line(full), hint, fatal))
    out += _container_findings(fleet, name, status.get("initContainerStatuses") or [])
    out += _container_findings(fleet, name, status.get("containerStatuses") or [])
    return out


# KubeRay's Warning event reasons about a RayJob/RayCluster it will not progress
# (utils/constant.go). On KubeRay <= 1.4 an invalid RayJob gets these events and no status at
# all, requeued forever: waiting cannot help, so they end `run` (OPERATOR_REFUSED).
OPERATOR_REFUSED = frozenset({"InvalidRayJobSpec", "InvalidRayJobMetadata", "InvalidRayJobStatus",
                              "InvalidRayClusterSpec", "InvalidRayClusterMetadata", "InvalidRayClusterStatus"})
OPERATOR_FAILED = frozenset({"FailedToCreateRayCluster", "FailedToCreateRayJobSubmitter",
                             "FailedToCreateService", "FailedToCreateIngress"})


def _operator_finding(fleet: str, name: str, reason: str, message: str) -> Diagnosis:
    if reason in OPERATOR_REFUSED:
        return Diagnosis(fleet, name, reason, message, "KubeRay refuses this spec and will not start it: fix what the "
                                                     "message names (`dockyard-k8s check` runs KubeRay's rules), then "
                                                     "re-run with --replace", True)
    return Diagnosis(fleet, name, reason, message, "KubeRay could not create an object of the run (quota, a webhook, "
                                                 "RBAC of the operator): read the message", True)


def object_findings(obj: dict[str, Any]) -> list[Diagnosis]:
    """Problems a workload object states in its own status: a RayCluster's ReplicaFailure
    condition (transient: a later successful reconcile removes it) or ``state: failed``."""
    if obj.get("kind") != "RayCluster":
        return []
    name = str((obj.get("metadata") or {}).get("name", ""))
    st = obj.get("status") or {}
    out = []
    if cond := true_conditions(obj).get("ReplicaFailure"):
        message = _one_line(f"{cond.get('reason') or ''}: {cond.get('message') or ''}".strip(": "))
        out.append(Diagnosis("RayCluster", name, "ReplicaFailure", message,
                             "KubeRay could not create or delete a pod (quota, admission, RBAC); it retries: read the "
                             "message", False))
    if st.get("state") == "failed":
        out.append(Diagnosis("RayCluster", name, "RayClusterFailed", _one_line(st.get("reason") or "state: failed"),
                           "read the RayCluster's events: `kubectl describe raycluster " + name + "`", False))
    return out


def event_finding(event: dict[str, Any], fleet: str) -> Diagnosis | None:
    """A Warning event as a finding; None for events that explain nothing actionable."""
    if event.get("type", "Warning") != "Warning":
        return None
    reason = str(event.get("reason") or "")
    full = _flat(event.get("message") or event.get("note") or "")
    message = _one_line(full)
    involved = event.get("involvedObject") or event.get("regarding") or {}
    name = str(involved.get("name", ""))
    m = full.lower()
    if reason in OPERATOR_FAILED and "already exists" in m:
        return None  # KubeRay's cache had not seen what it created; its next reconcile finds it
    if reason in OPERATOR_REFUSED or reason in OPERATOR_FAILED:
        return _operator_finding(fleet, name, reason, message)
    if reason == "FailedScheduling":
        hint, fatal = scheduling_hint(fleet, full)
        return Diagnosis(fleet, name, reason, message, hint, fatal)
    if reason in ("FailedMount", "FailedAttachVolume"):
        hint, fatal = _mount_hint(full)
        return Diagnosis(fleet, name, reason, message, hint, fatal)
    if reason in ("Failed", "ErrImagePull") and ("pull" in m or "image" in m):
        hint, fatal = image_hint(fleet, full)
        return Diagnosis(fleet, name, "ErrImagePull", message, hint, fatal)
    if reason == "BackOff":
        if "pulling image" in m:
            hint, fatal = image_hint(fleet, full)
            return Diagnosis(fleet, name, "ImagePullBackOff", message, hint, fatal)
        return Diagnosis(fleet, name, "CrashLoopBackOff", message, _logs_hint(fleet, name), True)
    if reason == "Evicted":
        return Diagnosis(fleet, name, reason, message, "the node was under resource pressure (see message)", False)
    if reason in ("OOMKilling", "OOMKilled"):
        return Diagnosis(fleet, name, "OOMKilled", message, f"raise {_key(fleet, 'memory')} (the limit)", True)
    if reason == "FailedCreate" or "exceeded quota" in m:
        if "exceeded quota" in m:
            return Diagnosis(fleet, name, "ExceededQuota", message,
                           "the namespace ResourceQuota has no room for these pods: lower the request or ask for "
                           "more quota (`dockyard-k8s doctor` shows the headroom)", True)
        if "priorityclass" in m:
            return Diagnosis(fleet, name, reason, message,
                           "the PriorityClass the pods name does not exist: create it (serve.priorityClass.create / "
                           "infra.priorityClass.create) or name an existing one", True)
        return Diagnosis(fleet, name, reason, message, "the controller cannot create pods: read the message", False)
    if reason == "FailedCreatePodSandBox":
        if "runtime" in m and ("handler" in m or "nvidia" in m):
            return Diagnosis(fleet, name, reason, message,
                           "the node has no such container runtime handler: install the NVIDIA container toolkit "
                           "(or GPU operator) on GPU nodes, or drop runtimeClassName", True)
        return Diagnosis(fleet, name, reason, message, "the node could not create the pod sandbox (CNI/runtime)",
                       False)
    if reason == "Unhealthy":
        if fleet == "serve":
            return Diagnosis(fleet, name, reason, message,
                           "the model server is up but its health path does not answer yet: still downloading or "
                           "loading the weights (serve.probes.startupSeconds allows for it), or stuck: "
                           f"`dockyard-k8s serve logs SPEC --pod {name}`", False)
        return Diagnosis(fleet, name, reason, message, "a probe fails: the container is up but not answering", False)
    if reason in ("ProvisioningFailed", "FailedBinding"):
        return Diagnosis(fleet, name, reason, message,
                       "the claim stays Pending: no volume can be provisioned or bound for it; check its StorageClass "
                       "(`kubectl get storageclass`: serve.cache.storageClass / infra.storage.storageClassName) "
                       "and access mode", "not found" in m)
    if reason in ("FailedToCreateHeadPod", "FailedToCreateWorkerPod", "FailedCreateHeadPod",
                  "FailedCreateWorkerPod"):
        return Diagnosis(fleet, name, reason, message, "KubeRay cannot create the pod: read the message", False)
    return None


# --- findings read together: retries KubeRay will make, Kueue's admission, pods the run's terminating pods
# hold up ---

# The submitter Job's backoffLimit KubeRay sets when the RayJob's submitterConfig does not
# (rayjob_controller.go createNewK8sJob): three submissions in all.
SUBMITTER_BACKOFF_LIMIT = 2


def _owner_job(pod: dict[str, Any]) -> str | None:
    return next((str(o.get("uid")) for o in (pod.get("metadata") or {}).get("ownerReferences") or []
                 if o.get("kind") == "Job"), None)


def submitter_retries(pod: dict[str, Any], pods: Iterable[dict[str, Any]],
                      main: dict[str, Any] | None) -> tuple[int, int] | None:
    """(failed pods, retries allowed) of the submitter Job of a failed submitter pod of a
    RayJob; None when ``pod`` is not one. The Job makes a new pod while failed <= backoffLimit
    (``spec.submitterConfig.backoffLimit``, KubeRay's default 2), and the submission is
    idempotent (the same Ray job id each time): a failed pod is not the end while it has retries."""
    job = _owner_job(pod)
    if main is None or main.get("kind") != "RayJob" or fleet_of(pod) != "submitter" or job is None or \
            (pod.get("status") or {}).get("phase") != "Failed":
        return None
    limit = dig(main, "spec", "submitterConfig", "backoffLimit")
    failed = sum(1 for p in pods if _owner_job(p) == job and (p.get("status") or {}).get("phase") == "Failed")
    return failed, SUBMITTER_BACKOFF_LIMIT if limit is None else int(limit)


def retried(finding: Diagnosis, retries: tuple[int, int] | None) -> Diagnosis:
    """A failed submitter pod its Job retries: said, but not fatal (``--fail-fast`` waits)."""
    if retries is None or not finding.fatal or retries[0] > retries[1]:
        return finding
    failed, limit = retries
    return dataclasses.replace(finding, fatal=False, hint=f"KubeRay's submitter Job retries it ({failed} of "
                               f"{limit + 1} submissions failed; the submission is idempotent); {finding.hint}")


def admitted_by_kueue(findings: list[Diagnosis], cluster_queue: str,
                      flavors: dict[str, dict[str, str]]) -> list[Diagnosis]:
    """A pod of a run Kueue admitted, refused for a resource that admission counted (``flavors``: pod
    set -> resource -> flavor): the ClusterQueue had quota for it, so "add nodes" is not yet the answer.
    Kueue re-admits as soon as quota frees (a preemptor's Workload gone), while that workload's pods
    still have their grace period; kube-scheduler counts a terminating pod's requests until it is gone.
    Pods of another run are not the run's to look at, so the hint says what is likely and what if not."""
    out = []
    for f in findings:
        short = sorted(_short_of(f) & set(flavors.get(f.fleet, {})))
        nowhere = _NOT_HELPFUL.search(f.message.lower())  # no node could hold it even empty: that hint stands
        if short and not (nowhere and nowhere["all"] == nowhere["none"]):
            fields = " or ".join(_key(f.fleet, _FIELD_OF.get(r, "extendedResources")) for r in short)
            f = dataclasses.replace(f, hint=(
                f"Kueue admitted the run (ClusterQueue {cluster_queue or '?'} has quota for its {', '.join(short)}), "
                "but no node has enough free yet: pods of a workload Kueue evicted or that just ended may still be "
                "terminating, and the scheduler places this pod once they are gone; if it stays Pending, the "
                f"ClusterQueue's quota is more than the nodes hold: lower {fields} or the quota, or add nodes"))
        out.append(f)
    return out


# Kueue's (v0.19.2, seen on the e2e control plane) QuotaReserved message for a Workload whose namespace its
# LocalQueue's ClusterQueue does not select: nothing changes it but an admin (or another queue).
NAMESPACE_NOT_SELECTED = "workload namespace doesn't match ClusterQueue selector"


def workload_finding(name: str, namespace: str, message: str) -> Diagnosis | None:
    """A pending Workload Kueue will never admit as things are (:data:`NAMESPACE_NOT_SELECTED`); pending, it
    has no admission yet, so no ClusterQueue of its own to name."""
    if NAMESPACE_NOT_SELECTED not in message:
        return None
    return Diagnosis("Workload", name, "Inadmissible", message, (
        "the ClusterQueue of infra.kueue.queueName does not select "
        f"namespace {namespace} (its namespaceSelector): ask the platform admin to add it, or set "
        "infra.kueue.queueName to a LocalQueue whose ClusterQueue admits it (`dockyard-k8s doctor` checks it)"), True)


def _requests(pod: dict[str, Any]) -> set[str]:
    return {str(r) for c in (pod.get("spec") or {}).get("containers") or []
            for r in ((c.get("resources") or {}).get("requests") or {})}


def waiting_for_terminating(findings: list[Diagnosis], pods: list[dict[str, Any]]) -> list[Diagnosis]:
    """A pod refused for a resource that terminating pods of the run request (KubeRay's next
    attempt starts while the failed one's pods have their grace period; a rollout's old pods)
    waits for them: the scheduler counts a terminating pod's requests until it is gone."""
    going = [p for p in pods if (p.get("metadata") or {}).get("deletionTimestamp")]
    if not going:
        return findings
    out = []
    for f in findings:
        short = _short_of(f)
        holding = sum(1 for p in going if short & _requests(p))
        if holding:
            f = dataclasses.replace(f, hint=(
                f"{holding} pod{'s' if holding > 1 else ''} of the run {'are' if holding > 1 else 'is'} still "
                f"terminating and hold{'' if holding > 1 else 's'} {', '.join(sorted(short))} until "
                f"{'they are' if holding > 1 else 'it is'} gone; the scheduler places this pod then"))
        out.append(f)
    return out
