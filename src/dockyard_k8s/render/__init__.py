"""Rendering: a resolved run -> the list of Kubernetes objects, in apply order.

Pure functions of their arguments: no I/O, no clock, no randomness, so the same
inputs give byte-identical output. One module per object family:

    governance.py   ResourceQuota, LimitRange (opt-in; render-only)
    sandbox.py      NetworkPolicy, Deployment, Service, PDB of the sandbox pool
    recipe.py       the resolved recipe as a ConfigMap
    ray.py          RayJob / RayCluster (+ the GPU PDB)
    shapes.py       operator-free shapes: Job, or headless Service + StatefulSets (+ bootstrap ConfigMap)
    kueue.py        Kueue queue labels and topology requests; the team's queue objects (render-only)
    network.py      every NetworkPolicy: default-deny (opt-in), the GPU pods' ingress, the sandbox's
    platform.py     PriorityClass, storage PVC, pre-pull DaemonSet, and the platform pass over
                    every GPU pod (runtimeClass, storage, placement, service account)
    rayauth.py      Ray token authentication of the GPU pods (kuberay.auth), the token Secret
    record.py       the launch record; what a launch applies, in order (render, run, run --dry-run)
    submission.py   what attach mode and ``job submit`` send to the Ray Jobs API
    scripts/        the shell the operator-free shapes mount (Ray bootstrap)
    nccl.py         the NCCL fabric test MPIJob (its own command, not part of a run)
    serve.py        a model endpoint's objects (``serve``; not part of a run)
    merge.py        the deep merge of free-form fragments
    provenance.py   which infra key produced a rendered field (recorded only when asked)
    meta.py         names and labels every object shares
"""

from __future__ import annotations

from typing import Any

from dockyard_k8s.config.model import RunConfig
from dockyard_k8s.render.governance import governance_objects
from dockyard_k8s.render.kueue import apply_kueue, queue_objects
from dockyard_k8s.render.network import network_policies
from dockyard_k8s.render.platform import apply_platform, prepull_daemonset, priority_class, storage_claim
from dockyard_k8s.render.ray import gpu_pdb, raycluster, rayjob
from dockyard_k8s.render.recipe import recipe_configmap
from dockyard_k8s.render.sandbox import sandbox_objects
from dockyard_k8s.render.shapes import job_objects, statefulset_objects

__all__ = ["render_run"]


def render_run(run: RunConfig) -> list[dict[str, Any]]:
    """Every object of the run, in apply order."""
    infra = run.infra
    mode = infra["launch"]["mode"]
    objects = governance_objects(infra)
    objects += [o for o in (priority_class(infra),) if o]  # before any pod that names it
    objects += network_policies(infra)  # before any pod they cover
    objects += sandbox_objects(infra)
    objects.append(recipe_configmap(infra, run.recipe))
    if mode != "attach":
        objects += [o for o in (storage_claim(infra), prepull_daemonset(infra)) if o]
    if mode in ("rayjob", "bringup", "statefulset") and infra["kuberay"]["pdb"]["enabled"]:
        objects.append(gpu_pdb(infra))
    if mode == "rayjob":
        objects.append(rayjob(infra, run.job_args))
    elif mode == "bringup":
        objects.append(raycluster(infra))
    elif mode in ("job", "statefulset"):  # the operator-free shapes
        objects += (job_objects if mode == "job" else statefulset_objects)(infra, run.job_args)
    apply_platform(infra, objects)
    if not infra["infra"]["kueue"]["queueName"]:  # not queued: no Kueue label, no queue objects
        return objects

    apply_kueue(infra, objects)
    return queue_objects(infra, objects) + objects  # the team's queue objects first, render-only
