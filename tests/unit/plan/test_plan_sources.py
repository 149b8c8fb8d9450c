"""plan/sources.py: which node inventory and Kueue objects a plan reads, from plain data."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from plankit import cpu_nodes, deployment, gpu_nodes, rayjob

from dockyard_k8s.errors import ClusterError, ConfigError, UsageError
from dockyard_k8s.plan import sources
from dockyard_k8s.plan.kueue_plan import KueuePlan
from dockyard_k8s.plan.schedule import PlanResult

POOLS = {"nodePools": [{"name": "gpu", "instanceType": "p4de.24xlarge", "count": 2}]}
KUEUE_API = "kueue.x-k8s.io/v1beta2"
NO_INVENTORY = ("no node inventory: declare plan.nodePools in the infra spec, or pass --nodes FILE "
                "(kubectl get nodes -o yaml), or --live to read the cluster's nodes")


def _file(tmp_path: Any, name: str, docs: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _queued(job: dict[str, Any], queue: str = "q") -> dict[str, Any]:
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return job


def _team_queue() -> list[dict[str, Any]]:
    """What infra.kueue.queueObjects.render adds: the team's LocalQueue and ClusterQueue."""
    return [{"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": "team-a"},
             "spec": {"namespaceSelector": {}, "resourceGroups": [{
                 "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                 "flavors": [{"name": "default", "resources": [
                     {"name": "cpu", "nominalQuota": 1000}, {"name": "memory", "nominalQuota": "10Ti"},
                     {"name": "nvidia.com/gpu", "nominalQuota": 64}]}]}]}},
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}},
            {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "team"},
             "spec": {"clusterQueue": "team-a"}}]


# --- choosing the node inventory ---------------------------------------------------------------------


@pytest.mark.parametrize(("live", "nodes", "section", "chosen"), [
    (True, [], POOLS, sources.LIVE),            # the live cluster before the declared pools
    (False, ["n.yaml"], POOLS, sources.NODE_FILES),  # node files before the declared pools
    (False, [], POOLS, sources.NODE_POOLS),
    (True, [], {}, sources.LIVE),
])
def test_each_inventory_source_is_chosen_in_order(live, nodes, section, chosen):
    got = sources.choose_sources(section, live=live, node_files=nodes)
    assert (got.inventory, got.node_files, got.kueue) == (chosen, tuple(nodes), None)


def test_live_and_nodes_together_are_refused_before_any_file_is_read(tmp_path):
    with pytest.raises(UsageError) as e:
        sources.choose_sources(POOLS, live=True, node_files=["n.yaml"], kueue_files=[str(tmp_path / "absent.yaml")])
    assert str(e.value) == "--live and --nodes both give the node inventory: choose one"


@pytest.mark.parametrize("section", [{}, {"nodePools": []}, {"nodePools": None, "instanceTypes": {}}])
def test_no_inventory_says_how_to_give_one(section):
    with pytest.raises(UsageError) as e:
        sources.choose_sources(section)
    assert str(e.value) == NO_INVENTORY


def test_kueue_files_are_read_before_the_missing_inventory_is_reported(tmp_path):
    """The order the command always had: flags, then the --kueue files, then 'no node inventory'."""
    with pytest.raises(UsageError, match=r"absent\.yaml: no such file or directory"):
        sources.choose_sources({}, kueue_files=[str(tmp_path / "absent.yaml")])


def test_kueue_files_are_read_into_one_input_named_by_its_files(tmp_path):
    first = _file(tmp_path, "a.yaml", _team_queue()[:2])
    second = _file(tmp_path, "b.yaml", _team_queue()[2:])
    got = sources.choose_sources(POOLS, kueue_files=[first, second])
    assert got.kueue is not None
    assert [o["kind"] for o in got.kueue.objects] == ["ClusterQueue", "ResourceFlavor", "LocalQueue"]
    assert got.kueue.source == f"{first}, {second}"


# --- building it -------------------------------------------------------------------------------------


def test_declared_pools_build_the_inventory():
    inv = sources.offline_inventory(sources.choose_sources(POOLS), POOLS)
    assert [n.name for n in inv.nodes] == ["gpu-0", "gpu-1"]
    assert inv.source == "plan.nodePools (gpu 2 x p4de.24xlarge)"


def test_node_files_build_the_inventory_named_by_the_files(tmp_path):
    nodes = _file(tmp_path, "nodes.yaml", gpu_nodes(1))
    more = _file(tmp_path, "more.yaml", cpu_nodes(2))
    inv = sources.offline_inventory(sources.choose_sources(POOLS, node_files=[nodes, more]), POOLS)
    assert [n.name for n in inv.nodes] == ["gpu-0", "cpu-0", "cpu-1"]
    assert inv.source == f"{nodes}, {more}"


def test_the_live_inventory_is_not_built_offline():
    with pytest.raises(ValueError, match="live_inventory"):
        sources.offline_inventory(sources.choose_sources(POOLS, live=True), POOLS)


def test_a_node_files_bad_allocatable_is_located_at_its_line(tmp_path):
    f = tmp_path / "nodes.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    cpu: lots\n")
    with pytest.raises(ConfigError) as e:
        sources.node_file_inventory([str(f)])
    (problem,) = [str(p) for p in e.value.problems]  # the whole message: tests/golden/messages/plan.txt
    assert problem.startswith(f"{f}:6:1: Node n1: status.allocatable.cpu: got 'lots'")


def test_a_malformed_node_file_is_reported_as_validate_does(tmp_path):
    node = cpu_nodes(1)[0]
    node["status"] = "x"
    f = _file(tmp_path, "nodes.yaml", [node])
    with pytest.raises(UsageError) as e:
        sources.node_file_inventory([f])
    lines = str(e.value).splitlines()  # the wording: tests/golden/messages/plan.txt
    assert lines[0].startswith("plan: cannot plan malformed manifests") and f"`dockyard-k8s validate {f}`" in lines[0]
    assert any(line.startswith(f"  {f}:") and "status: got 'x' (string), expected object" in line
               for line in lines[1:]), lines


def test_a_node_file_without_nodes_says_what_it_expected(tmp_path):
    f = _file(tmp_path, "pods.yaml", [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}])
    with pytest.raises(ConfigError) as e:
        sources.node_file_inventory([f])
    (problem,) = [str(p) for p in e.value.problems]  # the whole message: tests/golden/messages/plan.txt
    assert problem.startswith(f"{f}: no Node objects found") and "`kubectl get nodes -o yaml`" in problem


def test_the_live_inventory_is_what_the_cluster_listed():
    inv = sources.live_inventory([*gpu_nodes(2)], sources.live_source("prod"))
    assert (inv.source, len(inv.nodes)) == ("live cluster prod", 2)
    assert sources.live_source("") == "live cluster"
    with pytest.raises(ClusterError, match="the cluster reports no nodes"):
        sources.live_inventory([], "live cluster prod")


def test_run_namespaces_default_to_the_contexts():
    objects = [deployment("a", 1, ns="team"), {"kind": "ConfigMap", "metadata": {"name": "c"}},
               deployment("b", 1, ns="team")]
    assert sources.run_namespaces(objects, "ctx-ns") == ["ctx-ns", "team"]


# --- the Kueue input ---------------------------------------------------------------------------------


def test_live_kueue_objects_are_wanted_only_for_a_queued_run_without_kueue_files(tmp_path):
    queued, plain = [_queued(rayjob())], [rayjob()]
    assert sources.wants_live_kueue(queued, sources.choose_sources({}, live=True))
    assert not sources.wants_live_kueue(plain, sources.choose_sources({}, live=True))
    files = sources.choose_sources({}, live=True, kueue_files=[_file(tmp_path, "q.yaml", _team_queue())])
    assert not sources.wants_live_kueue(queued, files)


def test_a_cluster_without_kueue_cannot_admit_a_queued_run():
    with pytest.raises(UsageError) as e:
        sources.live_kueue(None, "live cluster prod")
    assert str(e.value) == (
        "the run is queued with Kueue (kueue.x-k8s.io/queue-name) but the cluster serves no ClusterQueue: Kueue is "
        "not installed, and without its webhook the job would run unqueued; install Kueue or remove "
        "infra.kueue.queueName")
    assert sources.live_kueue([], "live cluster prod") == sources.KueueInput([], "live cluster prod")


def test_kueue_input_precedence_given_then_the_rendered_queue_objects():
    team = _team_queue()
    queued = [_queued(rayjob()), *team]
    given = sources.KueueInput([team[0]], "q.yaml")
    assert sources.kueue_input(queued, given) is given  # --kueue files or the live cluster's win
    assert sources.kueue_input(queued, None) == sources.KueueInput(team, sources.TEAM_QUEUE_SOURCE)
    assert sources.kueue_input([rayjob(), *team], None) is None  # queue objects, but nothing queued
    assert sources.kueue_input([_queued(rayjob())], None) is None  # queued, but no queue objects


# --- planning on them --------------------------------------------------------------------------------


def test_a_queued_run_planned_without_kueue_says_how_to_simulate_admission():
    inventory = sources.live_inventory([*gpu_nodes(3), *cpu_nodes(1)], "live cluster")
    result = sources.plan_run([_queued(rayjob())], inventory, None, atomic_gangs=False, manifest_files=None)
    assert isinstance(result, PlanResult)
    note = result.notes[-1]  # the whole note: tests/golden/messages/plan.txt
    assert note.startswith("RayJob run is queued with Kueue: ") and "pass --kueue FILE (or --live)" in note
    plain = sources.plan_run([rayjob()], inventory, None, atomic_gangs=False, manifest_files=None)
    assert not any("queued with Kueue" in n for n in plain.notes)


def test_a_queued_run_is_admitted_against_the_rendered_queue_objects():
    inventory = sources.live_inventory([*gpu_nodes(3), *cpu_nodes(1)], "live cluster")
    objects = [_queued(rayjob()), *_team_queue()]
    result = sources.plan_run(objects, inventory, sources.kueue_input(objects, None), atomic_gangs=False,
                              manifest_files=None)
    assert isinstance(result, KueuePlan)
    assert result.source == sources.TEAM_QUEUE_SOURCE
    assert [(v.cluster_queue, v.state) for v in result.verdicts] == [("team-a", "admitted")]


def test_a_malformed_manifest_is_bad_input_only_when_it_was_read_from_a_file(tmp_path):
    bad = deployment("d", replicas=1)
    bad["spec"]["template"]["spec"]["containers"] = "x"
    f = _file(tmp_path, "m.yaml", [bad])
    inventory = sources.live_inventory(cpu_nodes(1), "live cluster")
    with pytest.raises(UsageError, match="cannot plan malformed manifests"):
        sources.plan_run([bad], inventory, None, atomic_gangs=False, manifest_files=[f])
    with pytest.raises((TypeError, AttributeError, ValueError, KeyError, IndexError)):
        sources.plan_run([bad], inventory, None, atomic_gangs=False, manifest_files=None)  # rendered: a bug


# --- Kueue's verdict without a node inventory (issue 22 item 15) -----------------------------------------


def test_kueue_files_without_an_inventory_plan_the_admission_alone(tmp_path):
    """Quota does not depend on nodes (without TAS): --kueue FILE is enough for Kueue's verdict."""
    chosen = sources.choose_sources({}, kueue_files=[_file(tmp_path, "q.yaml", _team_queue())])
    assert chosen.inventory == sources.NO_NODES
    assert sources.offline_inventory(chosen, {}) is None
    result = sources.plan_run([_queued(rayjob())], None, chosen.kueue, atomic_gangs=False, manifest_files=None)
    assert isinstance(result, KueuePlan)
    assert result.nodes is None
    assert [(v.cluster_queue, v.state) for v in result.verdicts] == [("team-a", "admitted")]
    assert result.exit_code == 0


def test_without_an_inventory_a_run_kueue_does_not_gate_has_nothing_to_plan(tmp_path):
    chosen = sources.choose_sources({}, kueue_files=[_file(tmp_path, "q.yaml", _team_queue())])
    with pytest.raises(UsageError) as e:
        sources.plan_run([rayjob()], None, chosen.kueue, atomic_gangs=False, manifest_files=None)
    said = str(e.value)  # the whole message: tests/golden/messages/plan.txt
    assert said.startswith(f"{NO_INVENTORY}; --kueue alone gives") and "nothing of the run is queued" in said
