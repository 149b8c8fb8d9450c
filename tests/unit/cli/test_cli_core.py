import json
import os

import pytest
import yaml

from dockyard_k8s.cli import main
from support.cli import run_cli
from support.paths import REPO

RECIPE = os.path.join(REPO, "examples", "grpo_swe.yaml")
INFRA = os.path.join(REPO, "examples", "grpo_swe.infra.yaml")


def test_check_prints_a_one_page_summary(capsys):
    code, out, err = run_cli("check", RECIPE, "--infra", INFRA)
    assert code == 0 and err == ""
    assert out.startswith("✔ grpo-swe: configuration valid, 9 objects rendered\n")
    for line in ("namespace  rl-research", "mode       rayjob (K8sJobMode)", "total GPUs: 24",
                 "replicas   16 × (cpu 2, memory 4Gi, ephemeral-storage 20Gi)",
                 "1  ConfigMap rl-research/grpo-swe-launch", "9  RayJob rl-research/grpo-swe",
                 "ingress    :9090 ← the run's Ray pods (head, trainer, inference); other executors and pods refused",
                 "egress     cluster DNS (kube-system k8s-app=kube-dns); public IPv4 internet (every port but 53); "
                 "never private or reserved space (NAT64, class E, IPv6 global unicast too), cloud metadata endpoints",
                 "Ray ports ← the run's pods but the sandbox (any port), the KubeRay operator (8265); sandbox refused; "
                 "token auth (Secret grpo-swe-ray-auth, key auth_token)"):
        assert line in out
    assert "trainer    2     8        90   1000Gi" in out


def test_check_lists_the_objects_render_writes_in_the_same_order(tmp_path):
    """The launch record ConfigMap is one of them: check's list is what `render` writes and `run` applies."""
    code, out, _ = run_cli("check", RECIPE, "--infra", INFRA)
    assert code == 0
    listed = [line.split()[1:] for line in out.split("objects (apply order)\n")[1].splitlines()
              if line.strip()[:1].isdigit()]
    code, _, _ = run_cli("render", RECIPE, "--infra", INFRA, "--output-dir", str(tmp_path / "out"))
    assert code == 0
    written = []
    for f in sorted((tmp_path / "out").glob("[0-9]*.yaml")):
        doc = yaml.safe_load(f.read_text())
        written.append([doc["kind"], f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"])
    assert listed == written and len(written) == 9, (listed, written)


def test_check_writes_the_bundle(capsys, tmp_path):
    for ext, load in ((".yaml", yaml.safe_load), (".json", json.loads)):
        out_file = tmp_path / f"bundle{ext}"
        code, out, _ = run_cli("check", RECIPE, "--infra", INFRA, "--output-file", str(out_file))
        assert code == 0 and f"wrote {out_file}" in out
        doc = load(out_file.read_text())
        assert doc["config"]["infra"]["namespace"] == "rl-research"
        assert doc["recipe"]["env"]["code"]["sandbox_urls"] is None
        assert [o["kind"] for o in doc["objects"]][-1] == "RayJob"


def test_check_output_needs_a_known_extension(capsys):
    code, _, err = run_cli("check", RECIPE, "--output-file", "bundle.txt")
    assert code == 2 and "expected a file name ending in .yaml or .json" in err


def test_render_stdout_is_multi_document_yaml(capsys):
    code, out, _ = run_cli("render", RECIPE, "--infra", INFRA)
    docs = list(yaml.safe_load_all(out))
    assert code == 0 and [d["kind"] for d in docs] == ["ConfigMap", "NetworkPolicy", "NetworkPolicy", "ServiceAccount",
                                                       "Deployment", "Service", "PodDisruptionBudget", "ConfigMap",
                                                       "RayJob"]
    assert docs[0]["metadata"]["name"] == "grpo-swe-launch"  # the launch record, as `run` applies it first


def test_render_json_is_a_v1_list(capsys):
    code, out, _ = run_cli("render", RECIPE, "--infra", INFRA, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == "List" and len(doc["items"]) == 9


def test_render_to_directory_with_kustomization_in_apply_order(capsys, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "99-stale-old.yaml").write_text("stale")
    (out_dir / "notes.txt").write_text("mine")
    code, out, _ = run_cli("render", RECIPE, "--infra", INFRA, "--output-dir", str(out_dir))
    assert code == 0 and out == f"wrote 9 objects + kustomization.yaml to {out_dir}\n"
    kust = yaml.safe_load((out_dir / "kustomization.yaml").read_text())
    assert kust["sortOptions"] == {"order": "fifo"}
    assert kust["resources"] == ["00-configmap-grpo-swe-launch.yaml", "01-networkpolicy-grpo-swe-gpu-ingress.yaml",
                                 "02-networkpolicy-grpo-swe-sandbox.yaml", "03-serviceaccount-grpo-swe-sandbox.yaml",
                                 "04-deployment-grpo-swe-sandbox.yaml", "05-service-grpo-swe-sandbox.yaml",
                                 "06-poddisruptionbudget-grpo-swe-sandbox.yaml", "07-configmap-grpo-swe-recipe.yaml",
                                 "08-rayjob-grpo-swe.yaml"]
    assert sorted(os.listdir(out_dir)) == sorted([*kust["resources"], "kustomization.yaml", "notes.txt"])


def test_overrides_may_follow_options(capsys):
    code, out, _ = run_cli("render", RECIPE, "--infra", INFRA, "optimizer.lr=3e-6", "--set",
                       "sandbox.replicas=3", "rollout.backend=sglang")
    docs = list(yaml.safe_load_all(out))
    assert code == 0
    assert docs[4]["spec"]["replicas"] == 3
    assert "++optimizer.lr=3e-06 ++rollout.backend=sglang" in docs[-1]["spec"]["entrypoint"]


def test_namespace_flag(capsys):
    code, out, _ = run_cli("render", RECIPE, "--infra", INFRA, "-n", "other")
    assert code == 0 and {d["metadata"]["namespace"] for d in yaml.safe_load_all(out)} == {"other"}


def test_unknown_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["render", RECIPE, "--bogus"])
    assert e.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_schema_is_json_schema_and_markdown_matches_docs(capsys):
    code, out, _ = run_cli("schema")
    schema = json.loads(out)
    assert code == 0 and schema["$schema"].startswith("http://json-schema.org/draft-07")
    assert schema["properties"]["sandbox"]["properties"]["port"]["default"] == 9090
    with open(os.path.join(REPO, "schemas", "infra.schema.json"), encoding="utf-8") as f:
        assert f.read() == out, "schemas/infra.schema.json is stale: dockyard-k8s schema > schemas/infra.schema.json"
    code, out, _ = run_cli("schema", "--markdown")
    with open(os.path.join(REPO, "docs", "infra-spec.md"), encoding="utf-8") as f:
        assert f.read() == out, "docs/infra-spec.md is stale: dockyard-k8s schema --markdown > docs/infra-spec.md"


def test_examples_validate_against_the_published_schema():
    import jsonschema

    with open(os.path.join(REPO, "schemas", "infra.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    for name in ("grpo_swe.infra.yaml", "grpo_swe_sglang.infra.yaml"):
        with open(os.path.join(REPO, "examples", name), encoding="utf-8") as f:
            jsonschema.validate(yaml.safe_load(f), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sandbox": {"replicas": "x"}}, schema)
    # editors accept serve.model's string shorthand, and check it is a hub id
    jsonschema.validate({"serve": {"model": "Qwen/Qwen2.5-7B"}}, schema)
    jsonschema.validate({"serve": {"model": {"id": "Qwen/Qwen2.5-7B"}}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"serve": {"model": "/fsx/checkpoints/step-100"}}, schema)


def test_help_has_examples(capsys):
    for argv in (["--help"], ["check", "--help"], ["render", "--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
        assert "examples:" in capsys.readouterr().out


def test_every_command_registers_with_its_summary():
    import argparse

    from dockyard_k8s.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)
    for name, parser in sub.choices.items():
        assert parser.description, f"{name}: its module did not register a full parser"
    summaries = {a.dest: a.help for a in sub._choices_actions}
    assert summaries == COMMANDS


def test_a_rendered_directory_validates_and_its_kustomization_is_skipped(capsys, tmp_path):
    out_dir = tmp_path / "out"
    assert main(["render", RECIPE, "--infra", INFRA, "--output-dir", str(out_dir)]) == 0
    capsys.readouterr()
    assert main(["validate", str(out_dir), "--summary"]) == 0
    assert capsys.readouterr().out.strip() == ("Summary: 9 object(s) in 9 file(s): 9 valid, 0 invalid, 0 skipped, "
                                               "0 problem(s)")


@pytest.mark.parametrize(("command", "missing"), [("check", "RECIPE"), ("render", "RECIPE"), ("run", "RECIPE"),
                                                  ("status", "RECIPE|RUN"), ("down", "RECIPE|RUN")])
def test_a_missing_recipe_names_only_the_recipe(command, missing, capsys):
    """The optional KEY=VALUE overrides are not "required" (argparse says so of a `*` positional
    without a default)."""
    with pytest.raises(SystemExit) as e:
        main([command])
    assert e.value.code == 2
    said = capsys.readouterr().err.rstrip()
    assert f"error: the following arguments are required: {missing}" in said
    assert "KEY=VALUE" not in said.splitlines()[-1]


def test_check_lists_what_must_already_exist(capsys):
    """`render | kubectl apply` needs these first; run creates the token Secret."""
    code, out, _ = run_cli("check", RECIPE, "--infra", INFRA)
    assert code == 0
    section = out.split("\nmust exist before `render | kubectl apply`", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in section.splitlines()[1:]]
    assert lines[0] == "Namespace rl-research"
    assert any(line.startswith("PriorityClass gpu-training") and line.endswith("priorityClassName") for line in lines)
    token = next(line for line in lines if line.startswith("Secret rl-research/grpo-swe-ray-auth"))
    assert "the Ray token (key auth_token): `run` creates it with a random token; by hand: kubectl -n rl-research " \
           "create secret generic grpo-swe-ray-auth --from-literal=auth_token=\"$(openssl rand -base64 32)\" && " \
           "kubectl -n rl-research label secret grpo-swe-ray-auth dockyard-k8s/run=grpo-swe" in token
    assert any(line.startswith("Secret rl-research/ghcr-pull") and "imagePullSecrets" in line for line in lines)
    assert any(line.startswith("Secret rl-research/wandb") and "key api-key" in line for line in lines)


def test_render_and_run_say_checks_notes_on_stderr() -> None:
    """An unpinned image is a note beside check's ✔; `render` and `run` said nothing of it."""
    unpinned = ("--set", "infra.image=registry.example.com/ubuntu-swe")
    note = "note: infra.image got 'registry.example.com/ubuntu-swe' (no tag: Kubernetes pulls :latest)"
    code, out, err = run_cli("render", RECIPE, "--infra", INFRA, *unpinned)
    assert code == 0 and note in err and "note:" not in out
    code, out, err = run_cli("run", RECIPE, "--infra", INFRA, "--dry-run=client", *unpinned)
    assert code == 0 and note in err and "note:" not in out
    assert note not in run_cli("render", RECIPE, "--infra", INFRA)[2]


def test_render_emits_the_token_generator_without_any_token(capsys, tmp_path):
    """The Secret's value is never rendered (golden output is deterministic, files may be committed):
    the YAML says how to create it, and so does stderr, which a pipe into kubectl shows."""
    code, out, err = run_cli("render", RECIPE, "--infra", INFRA)
    assert code == 0
    header = out.split("\n---\n", 1)[0]
    assert header.startswith("# Before the first `kubectl apply`, these must exist (dockyard-k8s check lists "
                             "them; `dockyard-k8s run` creates the Ray token Secret itself):")
    assert '#   kubectl -n rl-research create secret generic grpo-swe-ray-auth --from-literal=auth_token="$(openssl ' \
           'rand -base64 32)" && kubectl -n rl-research label secret grpo-swe-ray-auth dockyard-k8s/run=grpo-swe' \
           in header
    assert "note: Secret rl-research/grpo-swe-ray-auth (the Ray token) is not rendered: create it before " \
           "`kubectl apply`" in err
    assert "kind: Secret" not in out and "auth_token:" not in out
    assert run_cli("render", RECIPE, "--infra", INFRA)[1] == out  # deterministic
    out_dir = tmp_path / "out"
    assert run_cli("render", RECIPE, "--infra", INFRA, "--output-dir", str(out_dir))[0] == 0
    kust = (out_dir / "kustomization.yaml").read_text()
    assert kust.startswith("# Before the first `kubectl apply`") and "create secret generic grpo-swe-ray-auth" in kust
    assert yaml.safe_load(kust)["sortOptions"] == {"order": "fifo"}
    code, out, err = run_cli("render", RECIPE, "--infra", INFRA, "--set", "kuberay.auth.mode=disabled")
    assert "grpo-swe-ray-auth" not in out + err
