"""``dockyard-k8s plan`` on the command line: inventories, formats, exit codes."""

from __future__ import annotations

import json

import yaml
from plankit import cpu_nodes, deployment, gpu_nodes, rayjob

from dockyard_k8s.cli import main
from support.paths import EXAMPLES

RECIPE = str(EXAMPLES / "grpo_swe.yaml")

POOLS = """\
defaults: {infra}
plan:
  nodePools:
    - name: gpu
      instanceType: p4de.24xlarge
      count: {gpus}
      taints: [{{key: nvidia.com/gpu, value: present, effect: NoSchedule}}]
    - name: cpu
      instanceType: m6i.8xlarge
      count: 2
      labels: {{node-role: cpu}}
      rootVolume: 500Gi
"""


def _rows(text):
    """Output lines with runs of spaces collapsed (column widths follow the longest name)."""
    return [" ".join(line.split()) for line in text.splitlines()]


def _infra(tmp_path, gpus):
    f = tmp_path / "run.infra.yaml"
    f.write_text(POOLS.format(infra=EXAMPLES / "grpo_swe.infra.yaml", gpus=gpus))
    return str(f)


def test_example_fits_on_declared_pools(tmp_path, capsys):
    assert main(["plan", RECIPE, "--infra", _infra(tmp_path, 3)]) == 0
    out = capsys.readouterr().out  # the report's wording: tests/golden/messages/plan.txt
    inventory = out.splitlines()[0]
    assert inventory.startswith("inventory: 5 nodes from plan.nodePools")
    assert inventory.endswith("(gpu 3 x p4de.24xlarge, cpu 2 x m6i.8xlarge)")
    assert "RayJob rl-research/grpo-swe trainer 2 8 2 0 gpu x2" in _rows(out)
    assert "gpu 3 3 270/287.07 3000.0/3172.0Gi 24/24" in _rows(out)
    assert "cpu 2 18 40.5/63.7 128.2/231.1Gi 0/0" in _rows(out)
    assert out.splitlines()[-1] == "✔ fits: all 21 pods placed; the GPU gang can start"


def test_one_node_short_exits_1_with_the_reason(tmp_path, capsys):
    assert main(["plan", RECIPE, "--infra", _infra(tmp_path, 2)]) == 1
    out = capsys.readouterr().out
    assert ("  RayJob rl-research/grpo-swe inference: 1 pod: 0/4 nodes are available: 2 Insufficient cpu, "
            "2 Insufficient memory, 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node "
            "affinity/selector.") in out
    verdict = out.splitlines()[-2:]  # the wording: tests/golden/messages/plan.txt
    assert verdict[0] == "✖ does not fit: 1 of 21 pods pending"
    assert verdict[1].startswith("  RayJob rl-research/grpo-swe cannot start: ")
    assert "inference 0/1 placed" in verdict[1]


def test_set_replicas_and_json(tmp_path, capsys):
    rc = main(["plan", RECIPE, "--infra", _infra(tmp_path, 3), "--set", "kuberay.trainer.replicas=3",
               "-o", "json"])
    assert rc == 1
    doc = json.loads(capsys.readouterr().out)
    trainer = next(g for g in doc["groups"] if g["template"] == "trainer")
    assert trainer["nodes"] == ["gpu-0", "gpu-1", "gpu-2"]
    assert (doc["fits"], doc["startable"], doc["exitCode"]) == (False, False, 1)


def test_nodes_files_from_kubectl(tmp_path, capsys):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [*gpu_nodes(3), *cpu_nodes(1)]}))
    manifests = tmp_path / "run.yaml"
    manifests.write_text(yaml.safe_dump_all([rayjob(), deployment("sandbox", 2)]))
    assert main(["plan", str(manifests), "--nodes", str(nodes), "--wide"]) == 0
    out = capsys.readouterr().out
    assert "RayJob team/run trainer 2 8 2 0 gpu-0,gpu-1" in _rows(out)
    assert "Deployment team/sandbox 2 0 2 0 cpu-0,cpu-0" in _rows(out)


def test_gang_flag_rolls_back(tmp_path, capsys):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([*gpu_nodes(2), *cpu_nodes(1)]))
    manifests = tmp_path / "run.yaml"
    manifests.write_text(yaml.safe_dump(rayjob()))
    assert main(["plan", str(manifests), "--nodes", str(nodes), "--gang", "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [g["placed"] for g in doc["groups"]] == [0, 0, 0, 1]


def test_no_inventory_is_bad_input(capsys):
    assert main(["plan", RECIPE, "--set", "plan.nodePools=[]"]) == 2  # the example's infra declares some
    assert "no node inventory" in capsys.readouterr().err


def test_unknown_instance_type_is_bad_input(tmp_path, capsys):
    f = tmp_path / "i.yaml"
    f.write_text(f"defaults: {EXAMPLES / 'grpo_swe.infra.yaml'}\nplan:\n  nodePools: [{{name: x, instanceType: z9}}]\n")
    assert main(["plan", RECIPE, "--infra", str(f)]) == 2
    assert f"{f}:3:39: plan.nodePools[0].instanceType: unknown instance type 'z9'" in capsys.readouterr().err


def test_the_plan_section_is_checked_at_its_lines_by_check_and_plan_alike(tmp_path, capsys):
    f = tmp_path / "i.yaml"
    f.write_text(f"defaults: {EXAMPLES / 'grpo_swe.infra.yaml'}\nplan:\n  nodePools:\n"
                 "  - {name: gpu, instanceType: p4de.24xlrge}\n  instanceTypes:\n    box:\n"
                 "      allocatable: {cpu: lots}\n")
    for command in ("plan", "check"):
        assert main([command, RECIPE, "--infra", str(f)]) == 2
        err = capsys.readouterr().err  # the whole messages: tests/golden/messages/plan.txt
        (typo,) = [line for line in err.splitlines() if line.startswith(f"{f}:4:31: plan.nodePools[0].instanceType: ")]
        assert "unknown instance type 'p4de.24xlrge'" in typo and typo.endswith("did you mean 'p4de.24xlarge'?")
        assert f"{f}:7:26: plan.instanceTypes.box.allocatable.cpu: got 'lots'" in err
        assert "<infra spec>" not in err


def test_nodes_file_without_nodes_is_bad_input(tmp_path, capsys):
    f = tmp_path / "pods.yaml"
    f.write_text(yaml.safe_dump({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}))
    assert main(["plan", RECIPE, "--nodes", str(f)]) == 2
    assert "no Node objects found" in capsys.readouterr().err


def test_a_node_files_bad_allocatable_is_reported_at_its_line(tmp_path, capsys):
    f = tmp_path / "nodes.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    cpu: lots\n"
                 "    memory: 10Gi\n")
    assert main(["plan", RECIPE, "--nodes", str(f)]) == 2
    assert f"{f}:6:1: Node n1: status.allocatable.cpu: got 'lots'" in capsys.readouterr().err  # golden plan.txt


def test_list_instance_types(capsys):
    assert main(["plan", "--list-instance-types"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("p4d.24xlarge")
    assert lines[-1].startswith("workstation-a10-24gb")


def test_malformed_manifests_get_their_problems_not_a_traceback(tmp_path, capsys):
    """The planner reads fields as the schemas define them; a manifest that breaks a schema
    badly enough to trip it is reported as `validate` would, exit 2."""
    bad = deployment("d", replicas=1)
    bad["metadata"] = "x"
    manifests, nodes = tmp_path / "m.yaml", tmp_path / "nodes.yaml"
    manifests.write_text(yaml.safe_dump(bad))
    nodes.write_text(yaml.safe_dump_all(cpu_nodes(1)))
    assert main(["plan", "--manifests", str(manifests), "--nodes", str(nodes)]) == 2
    err = capsys.readouterr().err
    assert "cannot plan malformed manifests" in err
    assert f"{manifests}:3: Deployment: metadata: got 'x' (string), expected object" in err
    broken_nodes = tmp_path / "broken-nodes.yaml"
    node = cpu_nodes(1)[0]
    node["status"] = "x"
    broken_nodes.write_text(yaml.safe_dump(node))
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(deployment("d", replicas=1)))
    code = main(["plan", "--manifests", str(good), "--nodes", str(broken_nodes)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
