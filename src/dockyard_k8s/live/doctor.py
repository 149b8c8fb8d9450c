"""``doctor``: can this run work on the current context? Each check is ✔, ✖ or ! (unknown,
e.g. no permission to look) with a one-line fix.

Fetching (``gather``) is separate from judging (the ``check_*`` functions are pure), so
checks are tested on plain API objects; placement is ``plan``'s scheduler simulation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import (
    GPU,
    as_mapping,
    format_quantity,
    parse_quantity,
    pod_templates,
    true_conditions,
    unheld_references,
)
from dockyard_k8s.kube import pod_requests as kube_pod_requests
from dockyard_k8s.live.checks import Check
from dockyard_k8s.live.client import KubeClient, allowed
from dockyard_k8s.live.crdfields import explain, since, undeclared_fields
from dockyard_k8s.live.kinds import KINDS, Kind, kind_of
from dockyard_k8s.live.kueue import kueue_installed, kueue_objects, queued
from dockyard_k8s.live.netpol import Enforcement, enforcement, list_daemonsets
from dockyard_k8s.live.operator import check_operator, operator_deployments
from dockyard_k8s.live.orchestrate import down_kinds, split_apply, watched_kinds
from dockyard_k8s.live.rayhead import reads_token
from dockyard_k8s.live.references import REFERENCE_FIXES, check_references, read_references
from dockyard_k8s.live.runs import run_of
from dockyard_k8s.plain import dig
from dockyard_k8s.plan import inventory_from_cluster, plan
from dockyard_k8s.plan.kueue_assign import WorkloadRequest, admit, assign, inactive_reason, workload_requests
from dockyard_k8s.plan.kueue_model import Snapshot, snapshot_from_objects
from dockyard_k8s.render.rayauth import TokenSecret
from dockyard_k8s.render.record import applied_objects

MIN_MINOR = 29  # Kubernetes 1.29: the oldest release still patched when this was written
KUBERAY_CRDS = ("rayjobs.ray.io", "rayclusters.ray.io")


@dataclass(frozen=True, slots=True)
class Facts:
    """What doctor read from the cluster (None: not allowed to read it)."""

    version: dict[str, Any] | None
    namespace: dict[str, Any] | bool | None = None  # False: does not exist
    crds: dict[str, dict[str, Any] | None] | None = None
    operators: list[dict[str, Any]] | None = None
    nodes: list[dict[str, Any]] | None = None
    # (kind, namespace, name) -> exists (None: not allowed to look)
    references: dict[tuple[str, str, str], bool | None] | None = None
    access: dict[tuple[str, str, str], bool] | None = None
    quotas: list[dict[str, Any]] | None = None
    netpol: Enforcement | None = None  # whether the network plugin enforces NetworkPolicy (live/netpol.py)
    pods: list[dict[str, Any]] | None = None  # running pods of every namespace: what is already requested
    kueue: tuple[bool | None, list[dict[str, Any]] | None] | None = None  # (installed, objects) for a queued run
    unreachable: str = ""  # why /version failed: the URL and the reason
    unreachable_hint: str = ""


# --- what the run needs (pure) --------------------------------------------------------------

Templates = list[tuple[dict[str, Fraction], dict[str, Fraction], int]]


def template_requests(objects: Iterable[dict[str, Any]]) -> Templates:
    """(requests, limits, count) of every pod template the run creates."""
    out = []
    for obj in objects:
        for template in pod_templates(obj):
            if template.replicas is None:  # a DaemonSet: one pod per node, not the run's
                continue
            spec, count = template.spec, template.replicas
            limits: dict[str, Fraction] = {}
            for c in spec.get("containers") or []:
                for name, value in (dig(c, "resources", "limits") or {}).items():
                    q = parse_quantity(value)
                    if q is not None:
                        limits[name] = limits.get(name, Fraction(0)) + q
            out.append((kube_pod_requests(spec), limits, count))
    return out


# Who needs a permission that the run can do without (reported, not fatal).
TOLERATED = "down"  # `down` and `status` skip, with a warning, kinds the run does not render
REMOTE = "dashboard, job, dev"


def needed_access(objects: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, str, bool, str]]:
    """(verb, group, resource, subresource, essential, commands) for every request the
    commands make for this run: run applies and watches what it renders (plus the RayJob's
    cluster, pods and events), status lists the same, logs reads pods, down lists and
    deletes every kind a run may own."""
    out: dict[tuple[str, str, str, str], tuple[str, str, str, str, bool, str]] = {}

    def need(verbs: str, k: Kind | tuple[str, str], essential: bool, commands: str, sub: str = "") -> None:
        group, plural = (k.group, k.plural) if isinstance(k, Kind) else k
        for verb in verbs.split():  # a request is counted where it is first needed
            out.setdefault((verb, group, plural, sub), (verb, group, plural, sub, essential, commands))

    applied = split_apply(objects)[0]
    for k in dict.fromkeys(kind_of(o) for o in applied):
        need("get list watch create patch delete", k, True, "run, status, down")
    for k in watched_kinds(applied):
        need("get list watch", k, True, "run, status")
    need("get list watch", ("", "pods"), True, "run, status, logs")
    need("get", ("", "pods"), True, "logs", "log")
    need("list watch", ("", "events"), True, "run, status")
    for k in down_kinds(objects):
        need("list delete", k, False, TOLERATED)
    if any(reads_token(o) for o in applied):  # the Ray token Secret: run reads or creates it
        need("get", ("", "secrets"), True, "run, job, dashboard")
        need("patch", ("", "secrets"), True, "run")
    need("get", ("", "services"), False, REMOTE)
    need("create", ("", "pods"), False, REMOTE, "portforward")
    need("create", ("", "pods"), False, REMOTE, "exec")
    return list(out.values())


# --- checks (pure) -------------------------------------------------------------------------

def check_version(version: dict[str, Any] | None, unreachable: str = "", hint: str = "") -> Check:
    if version is None:
        return Check("API server", False, unreachable or "not reachable",
                     hint or "check KUBECONFIG / --context and that the cluster is up")
    minor = int("".join(ch for ch in str(version.get("minor", "0")) if ch.isdigit()) or 0)
    text = str(version.get("gitVersion") or f"{version.get('major')}.{version.get('minor')}")
    if str(version.get("major")) == "1" and minor < MIN_MINOR:
        return Check("API server", False, f"reachable, version {text}",
                     f"Kubernetes >= 1.{MIN_MINOR} is required (KubeRay 1.x and the rendered policy/v1 objects)")
    return Check("API server", True, f"reachable, version {text}")


def check_namespace(namespace: str, found: dict[str, Any] | bool | None) -> Check:
    if found is None:
        return Check("namespace", None, f"{namespace}: cannot tell (no permission to read namespaces)", fatal=False)
    if found is False:
        return Check("namespace", False, f"{namespace} does not exist", f"kubectl create namespace {namespace}")
    return Check("namespace", True, namespace)


def check_crds(crds: dict[str, dict[str, Any] | None] | None, needed: bool) -> Check:
    if not needed:
        return Check("KubeRay CRDs", None, "not needed by this launch mode", fatal=False)
    if crds is None:
        return Check("KubeRay CRDs", None, "cannot tell (no permission to read CRDs)", fatal=False)
    missing = [n for n in KUBERAY_CRDS if not crds.get(n)]
    if missing:
        return Check("KubeRay CRDs", False, f"missing: {', '.join(missing)}",
                     "install the KubeRay operator: helm install kuberay-operator kuberay/kuberay-operator")
    parts, bad = [], []
    for name in KUBERAY_CRDS:
        served = [v.get("name") for v in dig(crds[name], "spec", "versions") or [] if v.get("served")]
        parts.append(f"{name} ({', '.join(str(s) for s in served)})")
        if "v1" not in served:
            bad.append(name)
    if bad:
        return Check("KubeRay CRDs", False, "; ".join(parts), "ray.io/v1 is not served: upgrade KubeRay to >= 1.0")
    return Check("KubeRay CRDs", True, "; ".join(parts))


def check_crd_fields(crds: dict[str, dict[str, Any] | None] | None, objects: list[dict[str, Any]],
                     needed: bool) -> Check:
    """The installed CRDs declare every field the run renders (an older operator's do not:
    its server-side apply fails on them, a plain create drops them)."""
    if not needed or not crds:
        return Check("KubeRay CRD fields", None, "not checked (CRDs not needed or not readable)", fatal=False)
    lacking: list[str] = []
    hints: list[str] = []
    for obj in split_apply(objects)[0]:
        kind = kind_of(obj)
        crd = crds.get(kind.resource)
        if not crd:
            continue
        fields = undeclared_fields(obj, crd)
        if fields:
            lacking.append(f"{kind.resource} lacks " + ", ".join(
                f"{f} (KubeRay v{known[0]})" if (known := since(kind.kind, f)) else f for f in fields))
            hints.append(explain(kind.kind, fields)[1])
    if lacking:
        some = "it" if len(lacking) == 1 and "," not in lacking[0] else "them"
        return Check("KubeRay CRD fields", False, "; ".join(lacking) + f": the run renders {some}", "; ".join(
            dict.fromkeys(hints)))
    return Check("KubeRay CRD fields", True, "the installed CRDs declare every field the run renders")


def check_placement(objects: list[dict[str, Any]], nodes: list[dict[str, Any]] | None,
                    pods: list[dict[str, Any]] | None, quotas: list[dict[str, Any]] | None) -> Check:
    """Every pod of the run placed with ``dockyard-k8s plan``'s scheduler simulation on the
    live nodes, minus what running pods already request."""
    if nodes is None:
        return Check("placement", None, "cannot list nodes (permission): placement not simulated", fatal=False)
    if not nodes:
        return Check("placement", False, "the cluster reports no nodes: no pod of the run can be placed",
                     "check the cluster's node pools (`kubectl get nodes`); a managed cluster may be scaled to zero")
    result = plan(objects, inventory_from_cluster(nodes, pods or [], quotas))
    usage = "" if pods is not None else " (running pods unknown: cannot list pods, so nodes look empty)"
    if result.fits:
        return Check("placement", True, f"all {result.pods} pods of the run fit on {len(nodes)} node(s) now{usage}")
    first = next(g for g in result.groups if g.pending)
    reason = next(r for r in first.reasons if r)
    detail = (f"{result.pending} of {result.pods} pods would stay Pending{usage}; first: "
              f"{first.group.name} ({first.pending} of {len(first.nodes)}): {reason}")
    if not result.startable:
        return Check("placement", False, detail, "a GPU group cannot be fully placed, so the gang cannot start: "
                                                 "`dockyard-k8s plan --live` shows every group")
    return Check("placement", False, detail, "`dockyard-k8s plan --live` shows every group", fatal=False)


def check_capacity(objects: list[dict[str, Any]], nodes: list[dict[str, Any]] | None,
                   quotas: list[dict[str, Any]] | None) -> list[Check]:
    """GPUs allocatable vs requested (whole run and largest pod), and quota headroom.

    Allocatable is what nodes offer in total, not what is free right now.
    """
    pods = template_requests(objects)
    want_total = sum((r.get(GPU, Fraction(0)) * n for r, _, n in pods), Fraction(0))
    want_pod = max((r.get(GPU, Fraction(0)) for r, _, _ in pods), default=Fraction(0))
    out = []
    if nodes is None:
        out.append(Check("GPUs", None, f"the run asks for {want_total} GPUs; cannot list nodes (permission)",
                         fatal=False))
    else:
        per_node = [parse_quantity(dig(n, "status", "allocatable", GPU) or 0) or Fraction(0)
                    for n in nodes if not dig(n, "spec", "unschedulable") and "Ready" in true_conditions(n)]
        gpu_nodes = [g for g in per_node if g > 0]
        have = sum(gpu_nodes, Fraction(0))
        biggest = max(gpu_nodes, default=Fraction(0))
        detail = (f"{len(gpu_nodes)} ready node(s) advertise {GPU}: {have} allocatable "
                  f"(largest node {biggest}); the run asks for {want_total} (largest pod {want_pod})")
        if want_total == 0:
            out.append(Check("GPUs", True, detail + "; no GPU needed"))
        elif not gpu_nodes:
            out.append(Check("GPUs", False, detail, "no node advertises nvidia.com/gpu: install the NVIDIA device "
                                                    "plugin / GPU operator, or check node readiness"))
        elif want_pod > biggest:
            out.append(Check("GPUs", False, detail, f"a pod asks for {want_pod} GPUs but no node has more than "
                                                    f"{biggest}: lower gpus per pod and raise replicas"))
        elif want_total > have:
            out.append(Check("GPUs", False, detail, "the cluster has fewer GPUs than the run needs: lower replicas "
                                                    "or gpus (`dockyard-k8s plan` simulates placement)"))
        else:
            out.append(Check("GPUs", True, detail + " (allocatable, not necessarily free)"))
    out.append(_check_quota(pods, quotas))
    return out


def _quota_need(key: str, pods: Templates) -> Fraction | None:
    if key == "pods":
        return Fraction(sum(n for *_, n in pods))
    scope, _, resource = key.partition(".")
    if scope == "requests" or (not resource and key in ("cpu", "memory", "ephemeral-storage")):
        resource = resource or key
        return sum((r.get(resource, Fraction(0)) * n for r, _, n in pods), Fraction(0))
    if scope == "limits":
        return sum((lim.get(resource, Fraction(0)) * n for _, lim, n in pods), Fraction(0))
    return None  # count/..., storage classes: not computed here


def _check_quota(pods: Templates, quotas: list[dict[str, Any]] | None) -> Check:
    if quotas is None:
        return Check("quota", None, "cannot read ResourceQuotas (permission)", fatal=False)
    if not quotas:
        return Check("quota", True, "no ResourceQuota in the namespace")
    short = []
    for q in quotas:
        hard = dig(q, "status", "hard") or dig(q, "spec", "hard") or {}
        used = dig(q, "status", "used") or {}
        for key, limit in sorted(hard.items()):
            need = _quota_need(key, pods)
            if need is None or need == 0:
                continue
            hard_q, used_q = parse_quantity(limit), parse_quantity(used.get(key, 0))
            if hard_q is None or used_q is None:
                continue
            room = hard_q - used_q
            if need > room:
                binary = key.endswith(("memory", "storage"))  # BinarySI (32Gi), the rest DecimalSI
                short.append(f"{(q.get('metadata') or {}).get('name')}: {key} needs "
                             f"{format_quantity(need, binary=binary)}, {format_quantity(room, binary=binary)} left")
    if short:
        return Check("quota", False, "; ".join(short),
                     "lower the run's requests or ask the namespace admin for more quota")
    return Check("quota", True, f"{len(quotas)} ResourceQuota(s) leave room for the run")


def check_access(access: dict[tuple[str, str, str], bool] | None,
                 needed: list[tuple[str, str, str, str, bool, str]]) -> list[Check]:
    if access is None:
        return [Check("permissions", None, "SelfSubjectAccessReview failed", fatal=False)]
    essential: list[str] = []
    optional: dict[str, list[str]] = {}
    for verb, group, resource, sub, is_essential, commands in needed:
        if not access.get((verb, f"{resource}.{group}" if group else resource, sub), True):
            name = f"{verb} {resource}{'/' + sub if sub else ''}{'.' + group if group else ''}"
            if is_essential:
                essential.append(name)
            else:
                optional.setdefault(commands, []).append(name)
    out = []
    if essential:
        out.append(Check("permissions", False, f"denied: {', '.join(essential)}",
                         "ask for a Role granting these verbs in the namespace"))
    else:
        out.append(Check("permissions", True, f"{sum(1 for n in needed if n[4])} verb/resource pairs allowed "
                                              "(run, status, logs)"))
    for commands, denied in optional.items():
        hint = ("`down` and `status` skip these kinds with a warning; a run of another shape would leave them "
                "behind" if commands == TOLERATED else "`cluster dashboard`, `job` and `dev connect` need these")
        out.append(Check(f"permissions ({commands})", False, f"denied: {', '.join(denied)}", hint, fatal=False))
    return out


def check_cni(found: Enforcement | None, needed: bool) -> Check:
    """Whether the run's NetworkPolicies will do anything (live/netpol.py): ✖ when the network
    plugin is known not to enforce them (the run works, the sandbox is not isolated)."""
    if not needed:
        return Check("NetworkPolicy", None, "the run renders no NetworkPolicy", fatal=False)
    if found is None:
        return Check("NetworkPolicy", None, "cannot tell (network plugin not read)", fatal=False)
    if found.enforced is False:
        return Check("NetworkPolicy", False, f"{found.detail}: the run's sandbox policy would be inert, its pods "
                                             "not isolated", found.hint, fatal=False)
    return Check("NetworkPolicy", found.enforced, found.detail, found.hint, fatal=False)


def evaluate(facts: Facts, objects: list[dict[str, Any]], namespace: str, *, ray_needed: bool,
             token: TokenSecret | None = None) -> list[Check]:
    """Every check on what ``gather`` read; ``token``: the Ray token Secret (``Bundle.findings``)."""
    checks = [check_version(facts.version, facts.unreachable, facts.unreachable_hint)]
    if facts.version is None:
        return checks
    checks.append(check_namespace(namespace, facts.namespace))
    checks.append(check_crds(facts.crds, ray_needed))
    checks.append(check_crd_fields(facts.crds, objects, ray_needed))
    checks.append(check_operator(facts.operators, ray_needed, namespace))
    checks += check_capacity(objects, facts.nodes, facts.quotas)
    checks.append(check_placement(objects, facts.nodes, facts.pods, facts.quotas))
    checks += check_references(unheld_references(applied_objects(objects)), facts.references, token)
    checks += check_access(facts.access, needed_access(objects))
    checks.append(check_cni(facts.netpol, any(o.get("kind") == "NetworkPolicy" for o in objects)))
    if facts.kueue is not None:  # a queued run: LocalQueue -> ClusterQueue, coverage, fit (kueue_checks)
        checks += kueue_checks(objects, facts.kueue[1], facts.kueue[0], namespace)
    return checks


# --- Kueue (a queued run: LocalQueue -> ClusterQueue, coverage, fit with plan's admission engine) ----

def kueue_checks(objects: list[dict[str, Any]], found: list[dict[str, Any]] | None, installed: bool | None,
                 namespace: str) -> list[Check]:
    """doctor's Kueue checks for a queued run: Kueue installed, LocalQueue -> ClusterQueue (active,
    admitting the namespace), every requested resource covered, and the run fits the quota at all.
    ``found`` is :func:`~dockyard_k8s.live.kueue.kueue_objects` (None: not allowed to read them)."""
    jobs = [o for o in objects if o.get("kind") in kueue.INTEGRATED_KINDS and kueue.queue_name(o)]
    if not jobs:
        return []
    queue = kueue.queue_name(jobs[0])
    if installed is False:
        return [Check("Kueue", False, f"the run is queued (LocalQueue {queue}) but the cluster serves no "
                                      "ClusterQueue: Kueue is not installed",
                      "install Kueue (its webhook is what suspends and queues the job; without it the job runs "
                      "unqueued), or remove infra.kueue.queueName")]
    if installed is None or found is None:
        return [Check("Kueue", None, "cannot read Kueue's objects (permission)", fatal=False)]
    checks = [Check("Kueue", True, "installed (ClusterQueue served)")]
    priority = kueue.priority_class(jobs[0])
    if priority and not any(o.get("kind") == "WorkloadPriorityClass" and as_mapping(o.get("metadata")).get("name")
                            == priority for o in [*found, *objects]):
        missing = f"missing: {priority} (label {kueue.PRIORITY_LABEL}): Kueue makes no Workload for the job, " \
                  "which stays suspended"
        checks.append(Check("WorkloadPriorityClass", False, missing, REFERENCE_FIXES["WorkloadPriorityClass"]))
    mine = [w for w in found if w.get("kind") != "Workload" or not any(kueue.owned_by(w, j) for j in jobs)]
    snap = snapshot_from_objects(mine, "live cluster")
    lq = snap.local_queues.get((namespace, queue))
    if lq is None:
        return [*checks, Check("LocalQueue", False, f"LocalQueue {queue} doesn't exist in namespace {namespace}",
                               f"kubectl get localqueues -n {namespace}; ask the platform admin for one "
                               "(`render` with infra.kueue.queueObjects.render prints an example)")]
    cq_name = str(as_mapping(lq.get("spec")).get("clusterQueue", ""))
    checks.append(Check("LocalQueue", True, f"{namespace}/{queue} -> ClusterQueue {cq_name}"))
    cq = snap.queues.get(cq_name)
    if cq is None:
        return [*checks, Check("ClusterQueue", False, f"ClusterQueue {cq_name} doesn't exist",
                               "ask the platform admin: the LocalQueue points to a ClusterQueue that is not there")]
    why = inactive_reason(snap, cq)
    if why:
        return [*checks, Check("ClusterQueue", False, f"ClusterQueue {cq_name} is inactive: {why}",
                               "ask the platform admin to fix the ClusterQueue")]
    requests, _ = workload_requests(snap, jobs)
    wanted = sorted({r for wl in requests for ps in wl.pod_sets for r, v in ps.total.items() if v})
    uncovered = [r for r in wanted if cq.group_of(r) is None]
    if uncovered:
        checks.append(Check("ClusterQueue", False, f"{cq_name} covers no {', '.join(uncovered)} (the run requests "
                                                   f"{', '.join(wanted)}): resource ... unavailable in ClusterQueue",
                            "ask the admin to add them to a resource group, or drop them from the run"))
        return checks
    checks.append(Check("ClusterQueue", True, f"{cq_name}" + (f" (cohort {cq.cohort})" if cq.cohort else "")
                        + f" covers {', '.join(wanted)}"))
    checks.append(_fit_check(snap, requests))
    return checks


def _fit_check(snap: Snapshot, requests: list[WorkloadRequest]) -> Check:
    verdicts = []
    for wl in requests:
        verdicts.append(assign(snap, wl))
        admit(snap, verdicts[-1])
    worst = next((v for v in verdicts if v.state in ("never", "misconfigured", "inactive")), None)
    if worst is not None:
        # too large for the quota; else the queue itself is wrong (a namespace it does not select)
        fix = ("lower the run's request or ask for more nominal quota (`dockyard-k8s plan --live` shows the quota "
               "per flavor)") if worst.state == "never" else "; ".join(
            [*worst.notes, "ask the platform admin to fix the ClusterQueue, or set infra.kueue.queueName to a "
                           "LocalQueue whose ClusterQueue admits the run"])
        return Check("Kueue quota", False, f"{worst.workload.ref} can never be admitted ({worst.reason}): "
                                           f"{worst.message}", fix)
    waiting = next((v for v in verdicts if v.state in ("waiting", "preempt")), None)
    if waiting is not None:
        what = "would preempt" if waiting.state == "preempt" else "must wait"
        return Check("Kueue quota", None, f"{waiting.workload.ref} fits the quota but {what} now "
                                          f"({waiting.reason}): {waiting.message}", fatal=False)
    flavors = ", ".join(sorted({f for v in verdicts for ps in v.pod_sets for f in ps.flavors.values()}))
    borrow = " (borrowing from the cohort)" if any(v.borrowing for v in verdicts) else ""
    return Check("Kueue quota", True, f"admitted now in flavors {flavors}{borrow}")


def verdict(checks: list[Check]) -> str:
    """The last line: never "can work" under a ✖, fatal or not."""
    if not exit_ok(checks):
        return "the run cannot work here as configured (see ✖ above)"
    if any(c.ok is False for c in checks):
        return "the run can start here, but not everything works as configured: read the ✖ above"
    return "the run can work here"


# --- fetching -------------------------------------------------------------------------------

def gather(client: KubeClient, objects: list[dict[str, Any]], namespace: str, *, ray_needed: bool,
           token: TokenSecret | None = None) -> Facts:
    try:
        version = client.version()
    except ClusterError as e:
        return Facts(None, unreachable=str(e), unreachable_hint=e.hint)
    namespace_fact = allowed(lambda: client.get(KINDS["Namespace"], None, namespace) or False)
    crd_kind = KINDS["CustomResourceDefinition"]
    crds = allowed(lambda: {n: client.get(crd_kind, None, n) for n in KUBERAY_CRDS}) if ray_needed else {}
    operators = allowed(lambda: operator_deployments(client)) if ray_needed else None
    nodes = allowed(lambda: client.list(KINDS["Node"], None)[0])

    references = read_references(client, applied_objects(objects), token)
    access: dict[tuple[str, str, str], bool] | None
    try:
        access = {(verb, f"{resource}.{group}" if group else resource, sub):
                  client.can_i(verb, resource, group=group, namespace=namespace, subresource=sub)
                  for verb, group, resource, sub, _, _ in needed_access(objects)}
    except ClusterError:
        access = None
    quotas = allowed(lambda: client.list(KINDS["ResourceQuota"], namespace)[0])
    netpol = None
    if any(o.get("kind") == "NetworkPolicy" for o in objects):
        netpol = enforcement(list_daemonsets(client), nodes, version)
    pods = allowed(lambda: running_pods(client, objects))
    kueue_facts = None
    if queued(objects):
        installed = allowed(lambda: kueue_installed(client))
        kueue_facts = (installed, allowed(lambda: kueue_objects(client, [namespace])) if installed else None)
    return Facts(version, namespace_fact, crds, operators, nodes, references, access, quotas, netpol, pods,
                 kueue_facts)


def running_pods(client: KubeClient, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods of every namespace that hold resources (not Succeeded/Failed; one list call), but
    those of the run ``objects`` belong to: a launch of it finds them there only to replace them."""
    pods = client.list(KINDS["Pod"], None, field_selector="status.phase!=Succeeded,status.phase!=Failed")[0]
    ours = {run for o in objects if (run := run_of(o))}
    return [p for p in pods if run_of(p) not in ours]


def cluster_inventory_objects(client: KubeClient, objects: list[dict[str, Any]],
                              namespaces: list[str]) -> list[dict[str, Any]]:
    """Nodes, running pods (not the run's own) and the ResourceQuotas of ``namespaces``: what
    ``plan --live`` places the run ``objects`` on."""
    quotas = [q for ns in namespaces for q in client.list(KINDS["ResourceQuota"], ns)[0]]
    return [*client.list(KINDS["Node"], None)[0], *running_pods(client, objects), *quotas]


def exit_ok(checks: list[Check]) -> bool:
    return not any(c.ok is False and c.fatal for c in checks)
