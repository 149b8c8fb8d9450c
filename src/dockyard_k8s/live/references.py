"""``doctor``'s references check: what the run's pods name without rendering it must exist.

The list is :func:`dockyard_k8s.kube.unheld_references` (what ``check`` and ``render`` print as
"must exist before `kubectl apply`"): PriorityClass, RuntimeClass, ServiceAccount, the Secrets of
env ``secretKeyRef``, ``envFrom`` and volumes, imagePullSecrets, ConfigMaps and PVCs. The one
exception is the Ray token Secret ``run`` creates itself when missing (its default
``<run>-ray-auth``; a Secret named by ``kuberay.auth.secretName`` must exist). A missing one fails
doctor: its pods would never start (CreateContainerConfigError, ImagePullBackOff, Pending).
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import DEFAULT_STORAGE_CLASS, format_ref, unheld_references
from dockyard_k8s.live.checks import Check
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS
from dockyard_k8s.plain import dig
from dockyard_k8s.render.rayauth import TokenSecret
from dockyard_k8s.render.record import applied_objects

# What a missing reference's fix is, by kind ({ns}, {name} filled in).
REFERENCE_FIXES = {
    "PriorityClass": "kubectl create priorityclass {name} --value=1000 (or unset infra.priorityClassName)",
    "RuntimeClass": "a RuntimeClass {name} with a handler the nodes' container runtime has (GPU nodes: nvidia, from "
                    "the NVIDIA container toolkit or GPU operator), or unset the runtimeClassName that names it",
    "ServiceAccount": "kubectl -n {ns} create serviceaccount {name} (or drop the serviceAccountName naming it)",
    "StorageClass": "set infra.storage.storageClassName (serve.cache.storageClass) to one of `kubectl get "
                    "storageclass`, or null for the cluster's default class (or create PersistentVolumes of class "
                    "{name})",
    "ConfigMap": "kubectl -n {ns} create configmap {name} --from-literal=KEY=... (or drop the reference)",
    "PersistentVolumeClaim": "create the claim {name} in {ns} (or drop the volume naming it)",
    "LocalQueue": "ask the platform admin for it (infra.kueue.queueObjects.render renders it for them to apply), or "
                  "set infra.kueue.queueName to one of `kubectl get localqueues -n {ns}`",
    "WorkloadPriorityClass": "infra.kueue.queueObjects.priorityValue renders it (for an admin to apply), or set "
                             "infra.kueue.priorityClass to one of `kubectl get workloadpriorityclasses`",
}
# Kueue's, named by the job's labels: doctor checks them with the rest of Kueue (kueue_checks).
KUEUE_KINDS = ("LocalQueue", "WorkloadPriorityClass")
REFERENCE_TITLES = {"Secret": "Secrets", "ConfigMap": "ConfigMaps", "PersistentVolumeClaim": "PVCs"}


# No StorageClass is marked default (the annotation, or its beta form, "true").
NO_DEFAULT_CLASS_FIX = ("set infra.storage.storageClassName (serve.cache.storageClass) to one of `kubectl get "
                        "storageclass`, or make one the default: kubectl annotate storageclass NAME "
                        "storageclass.kubernetes.io/is-default-class=true")
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")


def _fix(kind: str, namespace: str, name: str, how: str) -> str:
    """How to create a missing reference: a Secret is a registry Secret for a pull secret, else one
    with the keys the pods read; any other kind's fix is in REFERENCE_FIXES."""
    if kind == "StorageClass" and name == DEFAULT_STORAGE_CLASS:
        return NO_DEFAULT_CLASS_FIX
    if kind != "Secret":
        return REFERENCE_FIXES[kind].format(ns=namespace, name=name)
    if "imagePullSecrets" in how:
        return f"kubectl -n {namespace} create secret docker-registry {name} --docker-server=... (or drop it from " \
               "infra.imagePullSecrets)"
    keys = [use.split()[1] for use in how.split("; ") if use.startswith("key ")]
    literals = " ".join(f"--from-literal={k}=..." for k in dict.fromkeys(keys)) or "--from-literal=KEY=..."
    return f"kubectl -n {namespace} create secret generic {name} {literals} (or `dockyard-k8s dev secrets`)"


def check_references(references: list[tuple[str, str, str, str]],
                     found: dict[tuple[str, str, str], bool | None] | None,
                     token: TokenSecret | None = None) -> list[Check]:
    """One check per kind the run's pods refer to (module docstring), the token ``run`` creates aside."""
    out = []
    # the namespace is checked first, Kueue's objects with the rest of Kueue (doctor.kueue_checks)
    for kind in dict.fromkeys(r[0] for r in references if r[0] != "Namespace" and r[0] not in KUEUE_KINDS):
        title = REFERENCE_TITLES.get(kind, kind)
        present, missing, unknown, fixes = [], [], [], []
        for k, ns, name, how in references:
            if k != kind:
                continue
            ref = format_ref(k, ns, name)
            if token is not None and ref == token.ref and token.own:
                present.append(f"{name} (`run` creates it)")
                continue
            exists = None if found is None else found.get((k, ns, name))
            if exists:
                present.append(name)
            elif exists is None:
                unknown.append(name)
            else:
                missing.append(f"{name} ({how})" if how else name)
                fixes.append(token.command if token is not None and ref == token.ref else _fix(k, ns, name, how))
        if missing:
            out.append(Check(title, False, "missing: " + ", ".join(missing), "; ".join(dict.fromkeys(fixes))))
        elif unknown:
            out.append(Check(title, None, f"{', '.join(unknown)}: cannot tell (no permission to read "
                                          f"{KINDS[kind].plural})", fatal=False))
        else:
            out.append(Check(title, True, ", ".join(present)))
    return out


def read_references(client: KubeClient, objects: list[dict[str, Any]],
                    token: TokenSecret | None) -> dict[tuple[str, str, str], bool | None]:
    """Whether each object the run's pods name exists (None for a kind we may not read); the
    token Secret ``run`` creates is not looked up."""
    out: dict[tuple[str, str, str], bool | None] = {}
    denied: set[str] = set()
    for kind, ns, name, _ in unheld_references(objects):
        if kind == "Namespace" or (token is not None and token.own and format_ref(kind, ns, name) == token.ref):
            continue
        if kind in denied:
            out[kind, ns, name] = None
            continue
        try:
            if kind == "StorageClass" and name == DEFAULT_STORAGE_CLASS:
                found = any(dig(c, "metadata", "annotations", a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS
                            for c in client.list(KINDS["StorageClass"], None)[0])
            else:
                found = client.get(KINDS[kind], ns or None, name) is not None
            if not found and kind == "StorageClass":  # a static PersistentVolume of that class binds the claim
                volumes = client.list(KINDS["PersistentVolume"], None)[0]
                wanted = "" if name == DEFAULT_STORAGE_CLASS else name
                found = any((dig(v, "spec", "storageClassName") or "") == wanted for v in volumes)
            if not found and kind in KUEUE_KINDS and not client.list(KINDS[kind], ns or None, missing_ok=True)[1]:
                continue  # Kueue is not installed: nothing queues the job (the follower says so; doctor ✖)
            out[kind, ns, name] = found
        except ClusterError as e:
            if e.status not in (401, 403):
                raise
            denied.add(kind)
            out[kind, ns, name] = None
    return out


# The kubectl way to create what a spec key can also render, said after that key.
_BY_HAND = {"PriorityClass": "kubectl create priorityclass {name} --value=1000",
            "PersistentVolumeClaim": "create the claim {name} in {ns}"}


def missing_fixes(objects: list[dict[str, Any]], found: dict[tuple[str, str, str], bool | None],
                  creates: dict[str, str]) -> list[str]:
    """One line per reference ``found`` says is missing: what it is, how the pods use it, how to
    create it (``creates``: kind -> the spec key that renders it, said first)."""
    lines = []
    for kind, ns, name, how in unheld_references(objects):
        if found.get((kind, ns, name)) is not False:
            continue
        fix = (f"{creates[kind]}, or {_BY_HAND[kind].format(ns=ns, name=name)}" if kind in creates else
               _fix(kind, ns, name, how))
        lines.append(f"  {format_ref(kind, ns, name)}" + (f", used as {how}" if how else "") + f"; create: {fix}")
    return lines


def require(client: KubeClient, objects: list[dict[str, Any]], *, what: str, creates: dict[str, str],
            check: str = "dockyard-k8s check") -> list[str]:
    """``run``'s and ``serve up``'s check before anything is applied: every object the pods name
    and ``objects`` do not hold must exist (``objects`` include what the command creates itself,
    the run's token Secret). A namespace that does not exist or is being deleted is left to the
    apply to say.
    Returns a note per kind the user may not read (not a refusal: the pods may be fine).

    Raises:
        ClusterError: one line per missing object; nothing was applied.
    """
    objects = applied_objects(objects)  # a render-only LocalQueue is not created by `run`: it must exist
    namespaces = {name for kind, _, name, _ in unheld_references(objects) if kind == "Namespace"}
    for ns in namespaces:
        found_ns = client.get(KINDS["Namespace"], None, ns)
        if found_ns is None or (found_ns.get("status") or {}).get("phase") == "Terminating":
            return []  # the apply says so, once for every object (orchestrate.apply_objects)
    found = read_references(client, objects, None)
    lines = missing_fixes(objects, found, creates)
    if lines:
        raise ClusterError(f"{what} refers to {len(lines)} object(s) the cluster does not have, so its pods could "
                           "never start; nothing was applied:\n" + "\n".join(lines),
                           hint=f"create them (or change the spec), then run it again; `{check}` lists what must "
                                "exist")
    return [f"note: not checked: the {kind} the pods name (no permission to get {KINDS[kind].plural}"
            + (" or list persistentvolumes)" if kind == "StorageClass" else ")")
            for kind in sorted({kind for (kind, _, _), exists in found.items() if exists is None})]
