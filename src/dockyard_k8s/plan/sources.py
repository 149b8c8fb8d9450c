"""Where ``plan`` takes its inputs from, and what it says when one of them is malformed.

The node inventory comes from one source, in this order: the live cluster (``--live``), node files
(``--nodes FILE``: ``kubectl get nodes -o yaml``, pods and ResourceQuotas beside them) or the infra
spec's ``plan.nodePools``; ``--live`` and ``--nodes`` together is bad input, and so is none of the
three, except with ``--kueue FILE`` for a queued run: Kueue's quota does not depend on nodes, so
its admission verdict is given alone, the node fit said not to be checked.
A run queued with Kueue is planned against ``--kueue FILE``'s objects, else the live cluster's, else
the team's queue objects the run renders (``infra.kueue.queueObjects.render``).

Nothing here talks to a cluster: ``live/`` lists the objects (``live.doctor.cluster_inventory_objects``,
``live.kueue.kueue_objects``) and the command passes what it got. A manifest the planner cannot read
(a field of the wrong type) is reported as ``validate`` reports it, at its file:line, exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.errors import MALFORMED_DATA, ConfigProblem, UsageError
from dockyard_k8s.kube import object_ref
from dockyard_k8s.manifests import read_objects
from dockyard_k8s.plain import format_path
from dockyard_k8s.plan.inventory import Inventory, from_objects, from_pools
from dockyard_k8s.plan.kueue_plan import plan_with_kueue, queued_jobs, run_snapshot, team_objects
from dockyard_k8s.plan.schedule import plan
from dockyard_k8s.validate.engine import ValidateOptions, validate_files

if TYPE_CHECKING:
    from dockyard_k8s.plan.kueue_plan import KueuePlan
    from dockyard_k8s.plan.schedule import PlanResult

# Where the node inventory comes from (Sources.inventory); NO_NODES: none, Kueue's admission alone.
LIVE, NODE_FILES, NODE_POOLS, NO_NODES = "live", "nodes", "nodePools", "none"
TEAM_QUEUE_SOURCE = "the rendered queue objects (infra.kueue.queueObjects)"
NO_INVENTORY = ("no node inventory: declare plan.nodePools in the infra spec, or pass --nodes FILE "
                "(kubectl get nodes -o yaml), or --live to read the cluster's nodes")


@dataclass(frozen=True, slots=True)
class KueueInput:
    """The Kueue objects a queued run is admitted against, and where they came from (for the report)."""

    objects: list[dict[str, Any]]
    source: str


@dataclass(frozen=True, slots=True)
class Sources:
    """What the command line chose, checked before anything is fetched from a cluster."""

    inventory: str  # LIVE, NODE_FILES, NODE_POOLS or NO_NODES
    node_files: tuple[str, ...]
    kueue: KueueInput | None  # the --kueue files' objects, when some were given


def choose_sources(plan_section: Mapping[str, Any], *, live: bool = False, node_files: Sequence[str] = (),
                   kueue_files: Sequence[str] = ()) -> Sources:
    """The node inventory's source and the ``--kueue`` files' objects (read before any cluster is contacted).

    Raises:
        UsageError: both ``live`` and ``node_files``; no inventory and no ``--kueue`` file.
        ConfigError: an unreadable ``--kueue`` file (at its file:line).
    """
    if live and node_files:
        raise UsageError("--live and --nodes both give the node inventory: choose one")
    kueue = (KueueInput([o.data for o in read_objects(list(kueue_files))], ", ".join(kueue_files))
             if kueue_files else None)
    if live:
        source = LIVE
    elif node_files:
        source = NODE_FILES
    elif plan_section.get("nodePools"):
        source = NODE_POOLS
    elif kueue is not None:
        source = NO_NODES
    else:
        raise UsageError(NO_INVENTORY)
    return Sources(source, tuple(node_files), kueue)


def offline_inventory(sources: Sources, plan_section: Mapping[str, Any]) -> Inventory | None:
    """The inventory of node files or ``plan.nodePools``; None for ``NO_NODES``.

    Raises:
        ConfigError: a node file without nodes, or with a node's allocatable unreadable, at its file:line.
        UsageError: a node file's object the planner cannot read, with ``validate``'s problems.
    """
    if sources.inventory == LIVE:
        raise ValueError("the live inventory is built from what the cluster listed: live_inventory()")
    if sources.inventory == NO_NODES:
        return None
    if sources.inventory == NODE_POOLS:
        return from_pools(dict(plan_section))
    return node_file_inventory(sources.node_files)


def node_file_inventory(files: Sequence[str]) -> Inventory:
    """Nodes (and pods, ResourceQuotas) read from ``kubectl get ... -o yaml`` files; a problem of an
    object is reported at its file:line, a malformed object as ``validate`` reports it."""
    nodes = read_objects(list(files))
    by_id = {id(m.data): m for m in nodes}

    def locate(obj: dict[str, Any], path: tuple[Any, ...], message: str) -> ConfigProblem:
        m = by_id[id(obj)]
        line = m.line(path)
        return ConfigProblem(m.source.file, line, 1 if line else 0, "",
                             f"{object_ref(obj)}: {format_path(path)}: {message}")

    try:
        return from_objects([o.data for o in nodes], source=", ".join(files), locate=locate)
    except MALFORMED_DATA as e:
        raise malformed(list(files), e) from e


def live_source(context: str) -> str:
    """How the report names the live cluster of kubeconfig context ``context``."""
    return f"live cluster {context}".rstrip()


def run_namespaces(objects: list[dict[str, Any]], default_namespace: str) -> list[str]:
    """The namespaces the run's objects go to (an object without one goes to the context's)."""
    return sorted({str((o.get("metadata") or {}).get("namespace") or default_namespace) for o in objects})


def live_inventory(cluster_objects: list[dict[str, Any]], source: str) -> Inventory:
    """The inventory of what the live cluster listed (``live.doctor.cluster_inventory_objects``).

    Raises:
        ClusterError: the cluster lists no node.
    """
    return from_objects(cluster_objects, source=source, live=True)


def wants_live_kueue(objects: list[dict[str, Any]], sources: Sources) -> bool:
    """Whether ``--live`` must list the cluster's Kueue objects: the run is queued and no
    ``--kueue`` file was given."""
    return sources.kueue is None and bool(queued_jobs(objects))


def live_kueue(kueue_objects: list[dict[str, Any]] | None, source: str) -> KueueInput:
    """The live cluster's Kueue objects (``live.kueue.kueue_objects``); ``None``: the cluster
    serves no ClusterQueue.

    Raises:
        UsageError: Kueue is not installed (the queued job would run unqueued).
    """
    if kueue_objects is None:
        raise UsageError("the run is queued with Kueue (kueue.x-k8s.io/queue-name) but the cluster serves no "
                         "ClusterQueue: Kueue is not installed, and without its webhook the job would run unqueued; "
                         "install Kueue or remove infra.kueue.queueName")
    return KueueInput(kueue_objects, source)


def kueue_input(objects: list[dict[str, Any]], given: KueueInput | None) -> KueueInput | None:
    """What a queued run is admitted against: ``given`` (``--kueue`` files or the live cluster's),
    else the team's queue objects the run renders; ``None``: no Kueue simulation."""
    if given is not None:
        return given
    team = team_objects(objects)
    if team and queued_jobs(objects):
        return KueueInput(team, TEAM_QUEUE_SOURCE)
    return None


def plan_run(objects: list[dict[str, Any]], inventory: Inventory | None, kueue: KueueInput | None, *,
             atomic_gangs: bool, manifest_files: Sequence[str] | None, kueue_files: Sequence[str] = ()
             ) -> PlanResult | KueuePlan:
    """Plan the run's objects on ``inventory``, after Kueue's admission when ``kueue`` is given
    (the team's queue objects are then the queue, not part of the run). ``manifest_files``: the files
    the objects were read from; ``None`` when they were rendered and validated (an object the planner
    cannot read is then a bug, raised as is).

    Raises:
        UsageError: a malformed manifest or ``--kueue`` object, with ``validate``'s problems; no
            inventory and nothing of the run queued (no verdict to give).
        ConfigError: Kueue objects with unreadable quantities.
    """
    if kueue is not None and (inventory is not None or queued_jobs(objects)):
        team = team_objects(objects)
        run = [o for o in objects if o not in team]
        try:
            snap = run_snapshot(run, kueue.objects, kueue.source)
            return plan_with_kueue(run, inventory, snap, atomic_gangs=atomic_gangs, source=kueue.source)
        except MALFORMED_DATA as e:
            if manifest_files is None and not kueue_files:
                raise
            raise malformed(list(kueue_files) or list(manifest_files or ())[:1], e) from e
    if inventory is None:
        raise UsageError(f"{NO_INVENTORY}; --kueue alone gives Kueue's admission verdict, and nothing of the run is "
                         "queued (no kueue.x-k8s.io/queue-name label)")
    try:
        result = plan(objects, inventory, atomic_gangs=atomic_gangs)
    except MALFORMED_DATA as e:
        if manifest_files is None:
            raise
        raise malformed(list(manifest_files), e) from e
    waiting = queued_jobs(objects)
    if waiting:
        result.notes.append(f"{waiting[0]} is queued with Kueue: pass --kueue FILE (or --live) to simulate its "
                            "admission against the ClusterQueue's quota before the scheduler")
    return result


def malformed(paths: list[str], error: Exception) -> Exception:
    """The planner met a malformed manifest: say where, as ``validate`` does (or give back
    ``error``, a bug, when ``validate`` finds nothing wrong with the files)."""
    problems = [p for p in validate_files(paths, ValidateOptions(ignore_missing_schemas=True)).problems
                if p.rule in ("yaml", "object", "schema")]
    if not problems:
        return error
    shown = "\n".join(f"  {p}" for p in problems[:10])
    more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
    return UsageError(f"plan: cannot plan malformed manifests (`dockyard-k8s validate {' '.join(paths)}` "
                      f"lists every problem):\n{shown}{more}")
