"""What a launch applies, in order: the Ray token Secret ``run`` creates, the launch record, the run.

:func:`launch_objects` is the one list ``render`` prints, ``run --dry-run=client`` lists and
``run``/``cluster up`` apply. The token is passed in: ``run`` passes a random one when the run's
own Secret is missing, ``--dry-run=client`` a stand-in, ``render`` none (its output never holds a
token: it prints the Secret's generator, ``rayauth.create_command``).

The launch record, ConfigMap ``<run>-launch`` labelled like the run (``down`` deletes it), holds
``launch.yaml`` (launcher version, recipe and infra files as given, ``--set`` layers, overrides,
mode, every object applied: what ``status RUN``/``down RUN`` work from without the files) and the
resolved ``infra.yaml``/``recipe.yaml``, **never a secret value** (``credentials.redact``). Reading
records back is ``live/record.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dockyard_k8s import __version__, kueue
from dockyard_k8s.config.model import RunConfig
from dockyard_k8s.credentials import redact, redact_assignment
from dockyard_k8s.kube import GPU, pod_requests, pod_templates
from dockyard_k8s.render.meta import metadata
from dockyard_k8s.render.rayauth import token_secret
from dockyard_k8s.yamlfile import dump as dump_yaml

RECORD_COMPONENT = "launch-record"
VERSION_ANNOTATION = "dockyard-k8s/launcher-version"
MODE_ANNOTATION = "dockyard-k8s/mode"
GPUS_ANNOTATION = "dockyard-k8s/gpus"
# Rendered but never applied by `run` (namespace governance and the team's Kueue queue objects
# are cluster-admin territory): `render | kubectl apply` applies them.
RENDER_ONLY = frozenset({"ResourceQuota", "LimitRange", *kueue.TEAM_KINDS})


def record_name(run: str) -> str:
    return f"{run}-launch"


@dataclass(frozen=True, slots=True)
class Invocation:
    """What the command line said (files as given), for the record."""

    infra_files: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()  # --set (and --set-string) as typed
    set_files: tuple[str, ...] = ()  # --set-file KEY=PATH: the path is recorded, never the content


NO_INVOCATION = Invocation()


def applied_objects(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects ``run`` applies: all but the :data:`RENDER_ONLY` kinds (an admin applies those;
    what they hold, a LocalQueue, must exist before ``run`` as much as if they were not rendered)."""
    return [o for o in objects if o.get("kind") not in RENDER_ONLY]


def launch_objects(run: RunConfig, objects: Sequence[dict[str, Any]], invocation: Invocation = NO_INVOCATION,
                   token: str | None = None) -> list[dict[str, Any]]:
    """What a launch of ``run`` (rendered as ``objects``) applies, in order: the token Secret
    (with ``token``), first, since every Ray pod reads it; the launch record, before any object of
    the run, so a launch that fails half-way still says what it was launched with; then the
    objects (``run`` skips the :data:`RENDER_ONLY` kinds among them)."""
    secret = [token_secret(run.infra, token)] if token is not None else []
    return [*secret, launch_record(run, applied_objects(objects), invocation), *objects]


def total_gpus(objects: Sequence[dict[str, Any]]) -> int:
    """GPUs the run's pod templates request (nvidia.com/gpu x replicas)."""
    return sum(int(pod_requests(t.spec).get(GPU, 0)) * t.replicas
               for obj in objects for t in pod_templates(obj) if t.replicas is not None)  # not a DaemonSet's pods


def launch_record(run: RunConfig, applied: Sequence[dict[str, Any]], invocation: Invocation) -> dict[str, Any]:
    """The record ConfigMap of a run about to be applied (``applied``: the objects, in order)."""
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
