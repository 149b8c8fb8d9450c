"""plan with Kueue: admission first, then the nodes of what Kueue admits (plan/kueue_plan.py, the CLI)."""

from __future__ import annotations

import json

import yaml
from kueuekit import GPU, admitted, cq, flavor, lq, rayjob, standard

from dockyard_k8s.cli import main
from dockyard_k8s.plan import from_pools
from dockyard_k8s.plan.kueue_model import snapshot_from_objects
from dockyard_k8s.plan.kueue_plan import plan_with_kueue
from dockyard_k8s.plan.kueue_report import text, verdict

P5 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
TAINT = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]


def pools(gpu_nodes: int, extra: dict | None = None):
    return from_pools({"nodePools": [
        {"name": "gpu", "instanceType": "p5.48xlarge", "count": gpu_nodes, "taints": TAINT, **(extra or {})},
        {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 2, "labels": {"node-role": "cpu"}}]})


def run_plan(objects, queue_objects, inventory):
    return plan_with_kueue(objects, inventory, snapshot_from_objects(queue_objects), source="test")


def test_admitted_and_placed():
    result = run_plan([rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})], standard(), pools(3))
    assert result.exit_code == 0
    assert verdict(result) == "✔ Kueue admits the run and every pod is placed (5 pods)"


def test_kueue_admits_it_but_the_nodes_cannot_hold_it():
    result = run_plan([rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})], standard(), pools(2))
    assert result.admitted and result.exit_code == 1
    lines = verdict(result).splitlines()  # the wording: tests/golden/messages/plan.txt
    assert lines[0].startswith("✖ Kueue admits the run, but the nodes") and lines[0].endswith(": 1 of 5 pods pending")
    assert lines[1].startswith("  RayJob team/run cannot start: ") and "inference 0/1 placed" in lines[1]


def test_a_single_gpu_flavor_pins_the_head_to_gpu_nodes():
    """Kueue adds a flavor's node labels to the pods it admits: with one GPU flavor, the head (node-role: cpu)
    is told to run on a p5 node too, and no node is both."""
    queue = [flavor("h100", P5), cq("team-a", {"h100": {"cpu": 600, "memory": "4Ti", GPU: 24}}), lq("q", "team-a")]
    result = run_plan([rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})], queue, pools(3))
    assert result.admitted and not result.nodes.fits
    head = next(g for g in result.nodes.groups if g.group.template == "head")
    assert head.group.spec["nodeSelector"] == {"node-role": "cpu", **P5}
    assert head.pending == 1 and "didn't match Pod's node affinity/selector" in head.reasons[0]


def test_a_waiting_run_creates_no_pods_and_the_rest_is_still_planned():
    sandbox = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pool", "namespace": "team"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {
                   "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                       {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}
    queue = [*standard(), admitted("big", "team-a", {GPU: ("h100", 20)})]
    result = run_plan([sandbox, rayjob(gpu_selector=P5)], queue, pools(3))
    assert [v.state for v in result.verdicts] == ["waiting"]
    assert [g.group.name for g in result.nodes.groups] == ["Deployment team/pool"]
    assert result.exit_code == 1
    assert verdict(result) == "✖ not admitted by Kueue now: RayJob team/run (WaitingForQuota)"


def test_a_queued_deployment_is_one_workload_per_pod_and_only_the_admitted_ones_run():
    pool = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "pool", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "300", "memory": "1Gi"}}}]}}}}
    result = run_plan([pool], standard(), pools(1))
    # each pod is a Workload: two take the h100 flavor's 600 cpu (the cpu flavor has 64), the third waits
    assert [v.state for v in result.verdicts] == ["admitted", "admitted", "waiting"]
    assert [v.workload.ref for v in result.verdicts] == [f"Deployment team/pool pod {i}" for i in (1, 2, 3)]
    assert result.nodes.groups[0].group.replicas == 2


REQUIRED = {"trainer": {"kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block"}}
TOPOLOGY = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "gpus"},
            "spec": {"levels": [{"nodeLabel": "cloud.google.com/gce-topology-block"},
                                {"nodeLabel": "kubernetes.io/hostname"}]}}


def tas_queue():
    return [flavor("cpu"), flavor("h100", P5, topology="gpus"), TOPOLOGY, *standard()[2:]]


def blocks(*sizes: int):
    return from_pools({"nodePools": [
        *({"name": f"b{i}", "instanceType": "p5.48xlarge", "count": n, "taints": TAINT,
           "labels": {"cloud.google.com/gce-topology-block": f"block-{i}"}} for i, n in enumerate(sizes)),
        {"name": "cpu", "instanceType": "m6i.16xlarge", "count": 2, "labels": {"node-role": "cpu"}}]})


def test_a_required_topology_is_placed_in_one_domain_or_never():
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"}, annotations=REQUIRED, inference=0)
    result = run_plan([job], tas_queue(), blocks(1, 1))
    (v,) = result.verdicts
    assert (v.state, v.reason) == ("never", "TopologyPlacementFailed")
    assert v.message == ('couldn\'t assign flavors to pod set trainer: topology "gpus" allows to fit only 1 out of '
                         '2 pod(s)')
    assert run_plan([job], tas_queue(), blocks(1, 2)).verdicts[0].state == "admitted"


def test_topology_levels_missing_on_the_nodes_are_named():
    job = rayjob(gpu_selector=P5, annotations=REQUIRED, inference=0)
    (v,) = run_plan([job], tas_queue(), pools(3)).verdicts
    assert v.state == "never"  # Kueue's words, then which levels no node carries (whole: golden plan.txt)
    assert 'topology "gpus" doesn\'t allow to fit any of 2 pod(s) (' in v.message
    assert "no node of flavor h100 carries" in v.message
    assert v.message.endswith(": cloud.google.com/gce-topology-block, kubernetes.io/hostname)")


def test_text_report_names_flavors_quota_and_the_verdict():
    queue = [*standard(gpus=16, cohort="research"), cq("team-b", {"h100": {"cpu": 0, "memory": 0, GPU: 16}},
                                                       cohort="research")]
    out = text(run_plan([rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})], queue, pools(3)))
    assert "  RayJob team/run  q -> team-a  head       1     cpu (cpu, memory)" in out
    assert "inference  1     h100 (cpu, memory, nvidia.com/gpu) borrowing" in out
    (admitted_line,) = [line for line in out.splitlines() if line.startswith("✔ RayJob team/run admitted: ")]
    assert "(QuotaReserved): Quota reserved in ClusterQueue team-a" in admitted_line  # whole: golden plan.txt
    quota_line = next(line for line in out.splitlines() if line.startswith("  team-a        h100    nvidia.com/gpu"))
    assert quota_line.split() == ["team-a", "h100", "nvidia.com/gpu", "16", "-", "-", "0", "32", "32", "24"]
    assert out.rstrip().endswith("✔ Kueue admits the run and every pod is placed (5 pods)")
    assert out.count("✔") == 2  # no second verdict from the node section


# --- the CLI ---------------------------------------------------------------------------------------


def write_docs(path, docs):
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_cli_plan_with_kueue_files(tmp_path, capsys):
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"g{i}", "labels": P5},
              "status": {"allocatable": {"cpu": "190", "memory": "1900Gi", GPU: "8", "pods": "100"}}}
             for i in range(3)] + [{"apiVersion": "v1", "kind": "Node", "metadata": {
                 "name": "c0", "labels": {"node-role": "cpu"}}, "status": {"allocatable": {
                     "cpu": "60", "memory": "200Gi", "pods": "100"}}}]
    manifests = write_docs(tmp_path / "job.yaml", [job])
    node_file = write_docs(tmp_path / "nodes.yaml", nodes)
    queues = write_docs(tmp_path / "queues.yaml", standard())
    assert main(["plan", manifests, "--nodes", node_file, "--kueue", queues]) == 0
    assert "✔ Kueue admits the run and every pod is placed (5 pods)" in capsys.readouterr().out
    busy = write_docs(tmp_path / "busy.yaml", [admitted("big", "team-a", {GPU: ("h100", 20)})])
    assert main(["plan", manifests, "--nodes", node_file, "--kueue", queues, "--kueue", busy, "-o",
                 "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (wl,) = doc["kueue"]["workloads"]
    assert (wl["state"], wl["reason"], wl["clusterQueue"]) == ("waiting", "WaitingForQuota", "team-a")
    assert doc["exitCode"] == 1 and doc["kueue"]["usage"] == "1 admitted Workload(s)"


def test_cli_the_runs_own_workload_is_not_usage(tmp_path, capsys):
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"})
    own = admitted("rayjob-run-abcde", "team-a", {GPU: ("h100", 24)}, namespace="team")
    own["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "run", "uid": "u"}]
    manifests = write_docs(tmp_path / "job.yaml", [job])
    queues = write_docs(tmp_path / "queues.yaml", [*standard(), own])
    infra = tmp_path / "i.yaml"
    infra.write_text("plan:\n  nodePools:\n  - {name: gpu, instanceType: p5.48xlarge, count: 3}\n"
                     "  - {name: cpu, instanceType: m6i.16xlarge, count: 1, labels: {node-role: cpu}}\n")
    assert main(["plan", manifests, "--infra", str(infra), "--kueue", queues]) == 0, capsys.readouterr().out


def test_cli_bad_kueue_input_is_exit_2(tmp_path, capsys):
    manifests = write_docs(tmp_path / "job.yaml", [rayjob()])
    bad = standard()
    bad[2]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "many"
    infra = tmp_path / "i.yaml"
    infra.write_text("plan:\n  nodePools:\n  - {name: gpu, instanceType: p5.48xlarge, count: 1}\n")
    assert main(["plan", manifests, "--infra", str(infra), "--kueue", write_docs(tmp_path / "q.yaml", bad)]) == 2
    assert "ClusterQueue team-a flavor cpu: cpu: got 'many'" in capsys.readouterr().err  # whole: golden plan.txt


def test_cli_a_queued_run_without_kueue_input_says_how_to_simulate_admission(tmp_path, capsys):
    manifests = write_docs(tmp_path / "job.yaml", [rayjob()])
    infra = tmp_path / "i.yaml"
    infra.write_text("plan:\n  nodePools:\n  - {name: gpu, instanceType: p5.48xlarge, count: 3}\n")
    main(["plan", manifests, "--infra", str(infra)])
    assert "note: RayJob run is queued with Kueue: pass --kueue FILE (or --live)" in capsys.readouterr().out


def test_cli_plans_against_the_rendered_queue_objects(capsys):
    from support.paths import EXAMPLES

    pools_set = ("plan.nodePools=[{name: gpu, instanceType: p4de.24xlarge, count: 3, labels: "
                 "{topology.k8s.aws/network-node-layer-1: a, topology.k8s.aws/network-node-layer-2: b, "
                 "topology.k8s.aws/network-node-layer-3: c}}, {name: cpu, instanceType: m6i.16xlarge, count: 4, "
                 "rootVolume: 400Gi, labels: {node-role: cpu}}]")
    code = main(["plan", str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe_kueue.infra.yaml"),
                 "--set", pools_set, "--set", "infra.kueue.priorityClass=null"])
    out = capsys.readouterr().out
    assert out.startswith("kueue: the rendered queue objects (infra.kueue.queueObjects); usage: none given")
    assert code == 0, out


def test_the_documented_plan_output_is_what_plan_prints(capsys):
    from support.paths import EXAMPLES

    doc = (EXAMPLES.parent / "docs" / "kueue.md").read_text()
    block = doc[doc.index("<!-- kueue-plan:begin -->"):doc.index("<!-- kueue-plan:end -->")]
    documented = block.split("```console\n", 1)[1].split("\n```", 1)[0].splitlines()
    args = documented[0].removeprefix("$ dockyard-k8s ").split()
    root = EXAMPLES.parent
    code = main([a if not a.startswith("examples/") else str(root / a) for a in args])
    assert code == 1
    printed = capsys.readouterr().out.replace(str(root) + "/", "")
    assert printed.splitlines() == documented[1:]


def test_statefulsets_are_admitted_one_by_one_and_the_plan_says_so():
    def sts(name: str) -> dict:
        job = rayjob()
        template = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
            "name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"a": name}}, "template": template}}

    result = run_plan([sts("run-trainer"), sts("run-inference")], standard(gpus=16), pools(3))
    assert [v.state for v in result.verdicts] == ["admitted", "waiting"]
    assert any(n.startswith("the StatefulSets are separate Workloads and Kueue admits them one by one: run-trainer "
                            "admitted, run-inference waiting") for n in result.notes)


def test_a_tas_only_queue_refuses_a_required_level_its_topology_lacks():
    """Every flavor of the queue has a topologyName (a TAS-only ClusterQueue), and the pod
    set asks for a level the Topology does not list. Kueue checks an explicit request against the flavor even
    then (tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS: only an implied request skips the check):
    NoMatchingFlavor, not a crash of the placement on a level no node was grouped by."""
    queue = [flavor("cpu", {"node-role": "cpu"}, topology="gpus"), flavor("h100", P5, topology="gpus"), TOPOLOGY,
             *standard()[2:]]
    rack = {"trainer": {"kueue.x-k8s.io/podset-required-topology": "rack"}}
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"}, annotations=rack, inference=0)
    (v,) = run_plan([job], queue, blocks(2)).verdicts
    assert (v.state, v.reason) == ("never", "NoMatchingFlavor")
    assert v.message == ('couldn\'t assign flavors to pod set trainer: Flavor "cpu" does not contain the requested '
                         'level, Flavor "h100" does not contain the requested level')


def test_cli_kueue_without_a_node_inventory_gives_kueues_verdict(tmp_path, capsys):
    """No plan.nodePools, no --nodes, no --live: Kueue's admission verdict, the node fit
    said not to be checked, and the exit code of the verdict (not 2)."""
    manifests = write_docs(tmp_path / "job.yaml", [rayjob(gpu_selector=P5)])
    queues = write_docs(tmp_path / "queues.yaml", standard())
    assert main(["plan", manifests, "--kueue", queues]) == 0
    out = capsys.readouterr().out  # the lines whole: tests/golden/messages/plan.txt
    (admitted_line,) = [line for line in out.splitlines() if line.startswith("✔ RayJob team/run admitted: ")]
    assert "(QuotaReserved)" in admitted_line
    assert "node fit: not checked (no node inventory" in out
    assert out.rstrip().endswith("✔ Kueue admits the run; node fit: not checked")
    busy = write_docs(tmp_path / "busy.yaml", [admitted("big", "team-a", {GPU: ("h100", 20)})])
    assert main(["plan", manifests, "--kueue", queues, "--kueue", busy, "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["kueue"]["workloads"][0]["state"] == "waiting"
    assert (doc["fits"], doc["inventory"], doc["groups"], doc["exitCode"]) == (None, None, [], 1)


def test_without_a_node_inventory_a_topology_request_is_not_placed_and_the_plan_says_so(tmp_path):
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"}, annotations=REQUIRED, inference=0)
    result = plan_with_kueue([job], None, snapshot_from_objects(tas_queue()), source="test")
    assert [v.state for v in result.verdicts] == ["admitted"] and result.exit_code == 0
    note = result.notes[0]  # the whole note: tests/golden/messages/plan.txt
    assert note.startswith("topology placement not checked (no node") and "RayJob team/run pod set trainer" in note


def test_a_slice_level_the_topology_lacks_is_no_matching_flavor():
    """A pod set asking for slices (podset-slice-required-topology with podset-slice-size) requests TAS
    explicitly (IsExplicitlyRequestingTAS), so even a TAS-only queue checks the slice level against the
    flavor's Topology (HasLevel): "rack" is not a level of "gpus"."""
    queue = [flavor("cpu", {"node-role": "cpu"}, topology="gpus"), flavor("h100", P5, topology="gpus"), TOPOLOGY,
             *standard()[2:]]
    slices = {"trainer": {"kueue.x-k8s.io/podset-slice-required-topology": "rack",
                          "kueue.x-k8s.io/podset-slice-size": "1"}}
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"}, annotations=slices, inference=0)
    (v,) = run_plan([job], queue, blocks(2)).verdicts
    assert (v.state, v.reason) == ("never", "NoMatchingFlavor")
    assert v.message == ('couldn\'t assign flavors to pod set trainer: Flavor "cpu" does not contain the requested '
                         'level, Flavor "h100" does not contain the requested level')


def test_an_unconstrained_topology_request_takes_the_tas_flavor_of_a_mixed_queue():
    """podset-unconstrained-topology: "true" is an explicit TAS request (at the Topology's lowest level):
    the TAS flavor h100 matches it, where a pod set without any request would be refused by it
    ("supports only TopologyAwareScheduling")."""
    job = rayjob(gpu_selector=P5, head_selector={"node-role": "cpu"}, inference=0,
                 annotations={"trainer": {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}})
    (v,) = run_plan([job], tas_queue(), blocks(2)).verdicts
    assert v.state == "admitted"
    assert {ps.name: ps.flavors.get(GPU) for ps in v.pod_sets}["trainer"] == "h100"
