"""kubectl parity of the live commands against the stateful fake: the kubeconfig context's
namespace, KUBECONFIG lists, a Ray cluster that does not exist."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakekube import FakeKube, bundled_crds
from states import NS, RUN, set_job, start_cluster

from dockyard_k8s import __version__
from support.paths import EXAMPLES

RECIPE = str(EXAMPLES / "grpo_swe.yaml")


@pytest.fixture
def bare_infra(tmp_path: Path) -> str:
    """An infra file that names no namespace (as most first infra files do)."""
    path = tmp_path / "bare.infra.yaml"
    path.write_text("infra:\n  image: ghcr.io/acme/trainer:1.0\n")
    return str(path)


def namespaces_of_run(fake: FakeKube) -> set[str]:
    return {o["metadata"]["namespace"] for o in fake.all("ray.io/v1", "RayJob")}


def test_context_namespace_when_no_one_names_one(cli: Any, fake: FakeKube, bare_infra: str) -> None:
    """kubectl's rule: -n, else the context's namespace, else default; an infra file or --set
    that names one wins over the context (it is the user's)."""
    r = cli("run", RECIPE, "--infra", bare_infra, "--detach")
    assert r.code == 0, r.err
    assert "in rl-research" in r.out and namespaces_of_run(fake) == {"rl-research"}  # context fake's
    r = cli("status", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and "run grpo-swe in rl-research" in r.out
    r = cli("down", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and namespaces_of_run(fake) == set()
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "--context", "other").code == 0
    assert namespaces_of_run(fake) == {"default"}  # context other sets none
    cli("down", RECIPE, "--infra", bare_infra, "--context", "other")
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "-n", "default").code == 0
    assert namespaces_of_run(fake) == {"default"}  # -n wins
    cli("down", RECIPE, "--infra", bare_infra, "-n", "default")
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "--set", "infra.namespace=default").code == 0
    assert namespaces_of_run(fake) == {"default"}  # a user layer wins over the context


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, kubeconfig: str) -> dict[str, int]:
    """How often the kubeconfig file is opened and a run is resolved (a bundle built)."""
    import builtins

    from dockyard_k8s import bundle

    counts = {"kubeconfig": 0, "builds": 0}
    real_open, real_resolve = builtins.open, bundle.resolve_run

    def opening(file: Any, *args: Any, **kwargs: Any) -> Any:
        counts["kubeconfig"] += str(file) == kubeconfig
        return real_open(file, *args, **kwargs)

    def resolving(*args: Any, **kwargs: Any) -> Any:
        counts["builds"] += 1
        return real_resolve(*args, **kwargs)

    monkeypatch.setattr(builtins, "open", opening)
    monkeypatch.setattr(bundle, "resolve_run", resolving)
    return counts


@pytest.mark.parametrize("argv", [["run", "--dry-run=client"], ["run", "--detach"], ["status"], ["down"]])
def test_one_kubeconfig_read_and_one_build(cli: Any, fake: FakeKube, bare_infra: str, counted: dict[str, int],
                                           argv: list[str]) -> None:
    """The target is resolved once: the context's namespace (a layer under the user's) and the
    client come from one read of the kubeconfig, and one build gives the run in that namespace
    (the bundle was built twice and the kubeconfig read twice when the context named one)."""
    r = cli(*argv[:1], RECIPE, "--infra", bare_infra, *argv[1:])
    assert r.code in (0, 1), r.err  # status/down of a run not there yet: 1
    assert counted == {"kubeconfig": 1, "builds": 1}
    assert "rl-research" in r.out + r.err


def test_context_namespace_is_below_every_user_layer(cli: Any, bare_infra: str, tmp_path: Path,
                                                     counted: dict[str, int]) -> None:
    """A user layer naming the namespace wins over the context, with one build."""
    named = tmp_path / "named.infra.yaml"
    named.write_text("infra:\n  image: ghcr.io/acme/trainer:1.0\n  namespace: default\n")
    r = cli("run", RECIPE, "--infra", str(named), "--dry-run=client")
    assert r.code == 0 and "default/" in r.out and "rl-research" not in r.out, r.out + r.err
    assert counted["builds"] == 1


def test_bad_context_namespace_is_the_contexts(cli: Any, bare_infra: str, kubeconfig: str) -> None:
    """A namespace the context names that is no DNS label is said as the context's (exit 2),
    not blamed on a file the user wrote."""
    Path(kubeconfig).write_text(Path(kubeconfig).read_text().replace("namespace: rl-research", "namespace: Bad_NS"))
    r = cli("run", RECIPE, "--infra", bare_infra, "--dry-run=client")
    assert r.code == 2
    assert "<the kubeconfig context's namespace Bad_NS>: infra.namespace: got 'Bad_NS'" in r.err
    assert bare_infra not in r.err


def test_offline_commands_ignore_the_context(cli: Any, bare_infra: str) -> None:
    """render output is the same on every machine: the kubeconfig is never read."""
    r = cli("render", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and "namespace: default" in r.out and "rl-research" not in r.out


def test_kubeconfig_list_is_merged(cli: Any, fake: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   kubeconfig: str, bare_infra: str) -> None:
    """KUBECONFIG=contexts.yaml:clusters.yaml (split files) works as with kubectl (it failed
    with "cannot use kubeconfig ...: 'clusters'")."""
    contexts = tmp_path / "contexts.yaml"
    contexts.write_text(textwrap.dedent("""\
        current-context: team
        contexts:
        - {name: team, context: {cluster: fake, user: me, namespace: rl-research}}
        """))
    creds = tmp_path / "creds.yaml"
    creds.write_text(textwrap.dedent("""\
        clusters:
        - {name: fake, cluster: {server: "https://fake.invalid:6443"}}
        users:
        - {name: me, user: {token: t}}
        """))
    monkeypatch.setenv("KUBECONFIG", f"{contexts}:{creds}")
    r = cli("run", RECIPE, "--infra", bare_infra, "--detach")
    assert r.code == 0, r.err
    assert namespaces_of_run(fake) == {"rl-research"}
    assert fake.requests[-1].headers["authorization"] == "Bearer t"


def test_job_on_a_cluster_that_does_not_exist(cli: Any) -> None:
    r = cli("job", "list", "--cluster", "nope")
    assert r.code == 1
    assert "no Service nope-head-svc in namespace rl-research: no RayCluster nope there" in r.err
    assert "cluster list -n rl-research" in r.err


def test_job_on_a_run_never_brought_up_says_the_cluster_is_missing_not_its_token(cli: Any) -> None:
    """No `cluster up` yet, so no cluster and no token Secret: the cluster is what is missing (the
    token's error and its hint, "`run` creates it", sent a user to the wrong command)."""
    r = cli("job", "list", *ARGS, "--set", "launch.mode=bringup")
    assert r.code == 1
    assert "no Service grpo-swe-head-svc in namespace rl-research: no RayCluster grpo-swe there" in r.err, r.err
    assert "Ray token" not in r.err


ARGS = [RECIPE, "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]


def test_launch_record_says_what_the_run_was_launched_with_never_secrets(cli: Any, fake: FakeKube) -> None:
    secret = cli("run", *ARGS, "--detach", "--set", "kuberay.trainer.env.HF_TOKEN=hf_abcdef123456",
                 "++wandb_api_key=wandb-s3cr3t")
    assert secret.code == 2 and "2 problem(s)" in secret.err, secret.err  # refused before anything is applied
    assert "hf_abcdef123456" not in secret.text and "wandb-s3cr3t" not in secret.text
    assert fake.get("v1", "ConfigMap", NS, "grpo-swe-launch") is None
    r = cli("run", *ARGS, "--detach", "--set", "kuberay.trainer.env.NCCL_DEBUG=INFO",
            "--set", "kuberay.trainer.replicas=2", "+extra.note=hello")
    assert r.code == 0, r.err
    cm = fake.get("v1", "ConfigMap", NS, "grpo-swe-launch")
    assert cm is not None and cm["metadata"]["labels"]["dockyard-k8s/run"] == "grpo-swe"
    assert cm["metadata"]["annotations"]["dockyard-k8s/launcher-version"] == __version__
    launch = yaml.safe_load(cm["data"]["launch.yaml"])
    # an environment's values are never recorded: some are credentials the detector cannot know
    assert launch["sets"] == ["kuberay.trainer.env.NCCL_DEBUG=<redacted>", "kuberay.trainer.replicas=2"]
    assert "++extra.note=hello" in launch["overrides"]
    assert launch["infraFiles"] == [ARGS[2]] and launch["recipeFile"] == RECIPE and launch["mode"] == "rayjob"
    assert {"kind": "RayJob", "apiVersion": "ray.io/v1", "name": "grpo-swe"} in launch["objects"]
    infra = yaml.safe_load(cm["data"]["infra.yaml"])
    assert infra["kuberay"]["trainer"]["env"]["NCCL_DEBUG"] == "<redacted>"
    assert infra["kuberay"]["trainer"]["replicas"] == 2


def test_status_logs_down_by_run_name_without_files(cli: Any, fake: FakeKube) -> None:
    """`status RUN -n NS`, `logs RUN`, `down RUN`: found by label, the record says how it was launched."""
    assert cli("run", *ARGS, "--detach", "--set", "kuberay.trainer.replicas=2").code == 0
    set_job(fake, "Running", "RUNNING")
    start_cluster(fake, workers={"trainer": 2})
    fake.add_log(NS, "grpo-swe-submit-q2", "main", ["job says hi"])
    by_file = cli("status", *ARGS)
    r = cli("status", "grpo-swe", "-n", NS)
    assert r.code == 0, r.err
    assert "RayJob grpo-swe: jobDeploymentStatus Running, jobStatus RUNNING" in r.out
    assert f"launched with dockyard-k8s {__version__} (rayjob mode" in r.out
    assert f"{RECIPE} -f {ARGS[2]} --set kuberay.trainer.replicas=2" in r.out
    fleets = [line for line in r.out.splitlines() if line.startswith(("trainer", "head", "sandbox"))]
    assert fleets == [line for line in by_file.out.splitlines() if line.startswith(("trainer", "head", "sandbox"))]
    assert cli("status", "grpo-swe").code == 0  # -n defaults to the context's namespace (rl-research)
    doc = json.loads(cli("status", "grpo-swe", "-o", "json").out)
    assert doc["launch"]["mode"] == "rayjob" and doc["main"]["state"] == "running"
    assert yaml.safe_load(cli("status", "grpo-swe", "-o", "yaml").out)["run"] == "grpo-swe"
    assert cli("logs", "grpo-swe").out == "job says hi\n"
    r = cli("down", "grpo-swe", "--dry-run")
    assert r.code == 0 and "ConfigMap rl-research/grpo-swe-launch" in r.out
    near = "rl-research; did you mean 'grpo-swe'?"  # a typo in the name says which run is there
    assert cli("status", "grpo-sw").out.startswith("nothing of run grpo-sw in namespace rl-research (label "
                                                    "dockyard-k8s/run=grpo-sw); did you mean 'grpo-swe'?")
    assert near in cli("down", "grpo-sw").out and near in cli("logs", "grpo-sw").err
    assert near in cli("job", "list", "grpo-sw").err
    r = cli("down", "grpo-swe")
    assert "deleted RayJob rl-research/grpo-swe" in r.out and "deleted ConfigMap rl-research/grpo-swe-launch" in r.out
    assert [c for c in fake.all("v1", "ConfigMap") if c["metadata"]["namespace"] == NS] == []
    assert "nothing left of run grpo-swe" in cli("down", "grpo-swe").out
    gone = cli("status", "other-run")
    assert gone.code == 1 and "nothing of run other-run in namespace rl-research (label dockyard-k8s/run=" \
                              "other-run)\n" in gone.out  # nothing near
    assert "dockyard-k8s runs -A" in gone.out


def test_by_name_mistakes_are_bad_input(cli: Any) -> None:
    r = cli("status", "Bad_Name")
    assert r.code == 2 and "'Bad_Name' is neither a recipe file (no such file) nor a run name" in r.err
    r = cli("status", "grpo-swe", "--set", "kuberay.trainer.replicas=4")
    assert r.code == 2 and "grpo-swe names a run on the cluster" in r.err and "--set" in r.err
    r = cli("status", "missing.yaml")
    assert r.code == 2 and "missing.yaml" in r.err  # a file name is a recipe: read errors as before


def test_job_by_run_name_finds_the_runs_cluster(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    r = cli("job", "list", "grpo-swe")
    assert r.code == 1 and "run grpo-swe has no Ray cluster (yet)" in r.err
    set_job(fake, "Running", "RUNNING")  # status.rayClusterName: grpo-swe-abcde
    r = cli("job", "list", "grpo-swe")
    assert r.code == 1 and "no Service grpo-swe-abcde-head-svc in namespace rl-research" in r.err
    assert "no run nope in namespace rl-research" in cli("job", "logs", "nope").err


def test_runs_lists_every_run_with_mode_state_gpus_age_and_queue(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    set_job(fake, "Running", "RUNNING")
    # a run applied with `render | kubectl apply`: no record, found by its labels
    fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": "dev-box", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z",
                           "labels": {"dockyard-k8s/run": "dev-box", "app.kubernetes.io/managed-by": "dockyard-k8s",
                                      "team": "infra"}},
              "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "resources": {
                  "requests": {"nvidia.com/gpu": "1"}}}]}}}},
              "status": {"state": "ready"}})
    job = fake.get("ray.io/v1", "RayJob", NS, RUN)
    fake.install_crds(bundled_crds("kueue"))
    fake.put({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
              "metadata": {"name": "rayjob-grpo-swe-1", "namespace": NS,
                           "ownerReferences": [{"kind": "RayJob", "name": RUN, "uid": job["metadata"]["uid"]}]},
              "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}})
    r = cli("runs")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "MODE", "STATE", "GPUS", "AGE", "QUEUE"]
    assert lines[1].split()[:4] == ["grpo-swe", "rayjob", "running", "24"]
    assert lines[1].split()[5:] == ["pending", "(Pending)"]
    everywhere = cli("runs", "-A").out.splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[:5] for line in everywhere[1:]] == [["default", "dev-box", "bringup", "ready", "1"],
                                                             ["rl-research", "grpo-swe", "rayjob", "running", "24"]]
    assert [line.split()[1] for line in cli("runs", "-A", "-l", "team=infra").out.splitlines()[1:]] == ["dev-box"]
    docs = json.loads(cli("runs", "-A", "-o", "json").out)
    assert {d["name"]: d["queue"] for d in docs} == {"dev-box": "", "grpo-swe": "pending (Pending)"}
    assert cli("runs", "-n", "default", "-l", "team=nobody").out == "no runs in namespace default\n"
    assert cli("runs", "-A", "-o", "name").out == "dev-box\ngrpo-swe\n"  # one name a line, for xargs
    assert cli("runs", "-n", "default", "-l", "team=nobody", "-o", "name").out == ""


def test_logs_follow_with_an_infra_file(cli: Any, fake: FakeKube) -> None:
    assert cli("run", *ARGS, "--detach").code == 0
    start_cluster(fake, workers={"trainer": 1})
    fake.add_log(NS, "grpo-swe-submit-q2", "main", ["job says hi"])
    fake.end_logs(NS, "grpo-swe-submit-q2", "main")
    r = cli("logs", RECIPE, "-f", str(EXAMPLES / "grpo_swe.infra.yaml"), "--follow")
    assert r.code == 0, r.err
    assert r.out == "job says hi\n"
    assert any(q.params.get("follow") == "true" for q in fake.requests if q.path.endswith("/log"))


def test_cluster_list_takes_selector_and_output(cli: Any, fake: FakeKube) -> None:
    for name, team in (("a", "rl"), ("b", "infra")):
        fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                  "metadata": {"name": name, "namespace": NS, "labels": {
                      "app.kubernetes.io/managed-by": "dockyard-k8s", "dockyard-k8s/run": name, "team": team}},
                  "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}}}})
    r = cli("cluster", "list", "-l", "team=rl")
    assert r.code == 0 and [line.split()[1] for line in r.out.splitlines()[1:]] == ["a"]
    doc = yaml.safe_load(cli("cluster", "list", "-o", "yaml").out)
    assert doc["kind"] == "List" and sorted(i["metadata"]["name"] for i in doc["items"]) == ["a", "b"]
