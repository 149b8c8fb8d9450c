"""`dev` and `doctor` against the stateful fake (kubectl replaced by a recording script)."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from fakekube import FakeKube
from states import NS

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
SECRET_VALUE = "hf_SuperSecretValue_123"


@pytest.fixture
def fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `kubectl` on PATH that records its arguments and exits 0."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "kubectl.args"
    script = bindir / "kubectl"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {record}\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_dev_connect_creates_waits_and_execs(cli: Any, fake: FakeKube, fake_kubectl: Path) -> None:
    def kubelet() -> None:
        fake.wait_for(lambda: fake.get("v1", "Pod", NS, "dockyard-dev"))
        fake.wait_watching("pods")
        p = fake.get("v1", "Pod", NS, "dockyard-dev")
        fake.put({**p, "status": {"phase": "Running"}})

    t = threading.Thread(target=kubelet, daemon=True)
    t.start()
    r = cli("dev", "connect", *ARGS)
    t.join(5)
    assert r.code == 0, r.err
    pod = fake.get("v1", "Pod", NS, "dockyard-dev")
    container = pod["spec"]["containers"][0]
    assert container["image"].startswith("ghcr.io/dockyard-rl/ubuntu-swe:")
    assert "nvidia.com/gpu" not in container["resources"]["requests"]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "ghcr-pull"}]
    args = fake_kubectl.read_text().splitlines()
    assert args[:6] == ["exec", "-it", "-n", NS, "dockyard-dev", "--"]
    # a second connect reuses the pod (no second apply)
    patches = sum(1 for q in fake.requests if q.method == "PATCH")
    assert cli("dev", "connect", *ARGS).code == 0
    assert sum(1 for q in fake.requests if q.method == "PATCH") == patches


def test_dev_connect_stops_on_a_bad_image(cli: Any, fake: FakeKube, fake_kubectl: Path) -> None:
    def kubelet() -> None:
        fake.wait_for(lambda: fake.get("v1", "Pod", NS, "dockyard-dev"))
        fake.wait_watching("pods")
        p = fake.get("v1", "Pod", NS, "dockyard-dev")
        fake.put({**p, "status": {"phase": "Pending", "containerStatuses": [{"name": "dev", "state": {"waiting": {
            "reason": "ErrImagePull", "message": "pull access denied: unauthorized"}}}]}})

    t = threading.Thread(target=kubelet, daemon=True)
    t.start()
    r = cli("dev", "connect", "-n", NS, "--image", "private/img:1")
    t.join(5)
    assert r.code == 1
    assert "ErrImagePull" in r.err and "imagePullSecrets" in r.err
    assert not fake_kubectl.exists()  # no shell opened


def test_dev_stop_is_idempotent(cli: Any, fake: FakeKube) -> None:
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dockyard-dev", "namespace": NS},
              "spec": {"containers": [{"name": "dev"}]}})
    assert "deleted Pod" in cli("dev", "stop", *ARGS).out
    r = cli("dev", "stop", *ARGS)
    assert r.code == 0 and "nothing to stop" in r.out


def test_dev_secrets_never_print_or_log_values(cli: Any, fake: FakeKube, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    env = tmp_path / "dev.env"
    env.write_text(f"# tokens\nWANDB_API_KEY='{SECRET_VALUE}-wandb'\nexport HF_HOME=/cache\n")
    monkeypatch.setattr("getpass.getpass", lambda prompt: SECRET_VALUE + "-prompted")
    r1 = cli("dev", "secrets", *ARGS, f"HF_TOKEN={SECRET_VALUE}", "--from-file", str(env))
    r2 = cli("dev", "secrets", "-n", NS, "GH_TOKEN")  # asked for, no echo
    for r in (r1, r2):
        assert r.code == 0, r.err
        assert SECRET_VALUE not in r.out + r.err
    assert SECRET_VALUE not in caplog.text
    assert "(values not shown)" in r1.out and "HF_TOKEN" in r1.out
    secret = fake.get("v1", "Secret", NS, "dockyard-dev-secrets")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"HF_TOKEN": SECRET_VALUE, "WANDB_API_KEY": SECRET_VALUE + "-wandb", "HF_HOME": "/cache",
                    "GH_TOKEN": SECRET_VALUE + "-prompted"}  # keys merge across calls


def test_dev_secrets_error_paths_do_not_leak(cli: Any, fake: FakeKube, tmp_path: Path) -> None:
    bad = tmp_path / "bad.env"
    bad.write_text(f"this line has no equals {SECRET_VALUE}\n")
    r = cli("dev", "secrets", "-n", NS, "--from-file", str(bad))
    assert r.code == 2 and SECRET_VALUE not in r.out + r.err and "bad.env:1" in r.err
    fake.fail(status_code=403, method="PATCH", path_contains="secrets")
    r = cli("dev", "secrets", "-n", NS, f"TOKEN={SECRET_VALUE}")
    assert r.code == 1 and SECRET_VALUE not in r.out + r.err


# --- doctor ---------------------------------------------------------------------------------

def healthy_cluster(fake: FakeKube, gpus_per_node: int = 8, nodes: int = 3) -> None:
    """The fake serves the KubeRay v1.7.0 CRDs already; add the operator, nodes, classes."""
    fake.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "kuberay-operator", "namespace": "kuberay-system",
        "labels": {"app.kubernetes.io/name": "kuberay-operator"}}, "status": {"readyReplicas": 1}})
    for i in range(nodes):  # where the example's nodeSelectors point (doctor simulates placement)
        fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"gpu-{i}", "labels": {"node.kubernetes.io/instance-type": "p4de.24xlarge"}}, "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus_per_node), "cpu": "96", "memory": "1100Gi",
                            "ephemeral-storage": "500Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(2):
        fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"cpu-{i}", "labels": {"node-role": "cpu"}},
                  "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "ephemeral-storage": "500Gi",
                                             "pods": "110"},
                             "conditions": [{"type": "Ready", "status": "True"}]}})
    fake.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gpu-training"}})
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ghcr-pull", "namespace": NS}})
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb", "namespace": NS}})  # trainer env
    fake.put({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node",
                                                                          "namespace": "kube-system"}})


def aws_node(policy: str | None) -> dict[str, Any]:
    """EKS's VPC CNI DaemonSet as its manifest ships it (config/master/aws-k8s-cni.yaml): the node
    agent container with ``--enable-network-policy=<policy>``."""
    ecr = "602401143452.dkr.ecr.us-west-2.amazonaws.com"
    agent: dict[str, Any] = {"name": "aws-eks-nodeagent", "image": f"{ecr}/amazon/aws-network-policy-agent:v1.0.1",
                             "args": ["--enable-ipv6=false", *([f"--enable-network-policy={policy}"] if policy else []),
                                      "--enable-cloudwatch-logs=false"]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "aws-node", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "aws-node", "image": f"{ecr}/amazon-k8s-cni:v1.13.4"},
                agent]}}}}


def test_doctor_all_green(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake)
    r = cli("doctor", *ARGS)
    assert r.code == 0, r.out
    assert "✖" not in r.out
    assert "✔ GPUs" in r.out and "24 allocatable" in r.out and "asks for 24" in r.out
    assert "the run can work here" in r.out
    reviews = [json.loads(q.body) for q in fake.requests if q.path.endswith("selfsubjectaccessreviews")]
    verbs = {(a["spec"]["resourceAttributes"]["verb"], a["spec"]["resourceAttributes"]["resource"]) for a in reviews}
    assert ("patch", "rayjobs") in verbs and ("watch", "pods") in verbs and ("get", "pods") in verbs


def test_doctor_names_the_missing_secret_the_trainer_env_references(cli: Any, fake: FakeKube) -> None:
    """Issue 22 item 8: a Secret the pods read (env secretKeyRef) was never looked up."""
    healthy_cluster(fake)
    fake.remove("v1", "Secret", NS, "wandb")
    r = cli("doctor", *ARGS)
    assert r.code == 1, r.out
    line = next(x for x in r.out.splitlines() if x.startswith("✖ Secrets"))
    assert "missing: wandb (key api-key (env WANDB_API_KEY))" in line
    assert "ghcr-pull" not in line and "ray-auth" not in line  # present; created by `run`
    assert f"kubectl -n {NS} create secret generic wandb --from-literal=api-key=..." in r.out
    assert "the run can work here" not in r.out
    gets = {q.path.rsplit("/", 1)[-1] for q in fake.requests if q.method == "GET" and "/secrets/" in q.path}
    assert gets == {"wandb", "ghcr-pull"}  # the token Secret `run` creates is not looked up


def test_doctor_fails_when_the_operator_does_not_watch_the_namespace(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake)
    operator = fake.get("apps/v1", "Deployment", "kuberay-system", "kuberay-operator")
    operator["spec"] = {"template": {"spec": {"containers": [{  # the Helm chart's form: flag, then value
        "name": "kuberay-operator", "command": ["/manager"], "args": ["--watch-namespace", "team-a,team-b"]}]}}}
    fake.put(operator)
    r = cli("doctor", *ARGS)
    assert r.code == 1, r.out
    line = next(x for x in r.out.splitlines() if x.startswith("✖ KubeRay operator"))
    assert f"kuberay-system/kuberay-operator watches only team-a, team-b (--watch-namespace), not {NS}" in line
    assert "the run cannot work here" in r.out
    operator["spec"]["template"]["spec"]["containers"][0]["args"] = [f"--watch-namespace=team-a,{NS}"]
    fake.put(operator)
    r = cli("doctor", *ARGS)
    assert r.code == 0 and "✔ KubeRay operator" in r.out, r.out


def test_doctor_says_networkpolicy_is_not_enforced_on_default_eks(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake)
    fake.remove("apps/v1", "DaemonSet", "kube-system", "calico-node")
    fake.put(aws_node("false"))
    r = cli("doctor", *ARGS)
    assert r.code == 0, r.out  # the run works; its sandbox is not isolated
    line = next(x for x in r.out.splitlines() if x.startswith("✖ NetworkPolicy"))
    assert "not enforced: kube-system/aws-node: its network policy agent runs without " \
           "--enable-network-policy=true (the EKS default)" in line
    assert "enableNetworkPolicy" in r.out  # the add-on's fix
    assert r.out.rstrip().splitlines()[-1] == "the run can start here, but not everything works as configured: " \
                                               "read the ✖ above"
    fake.put({"apiVersion": "apps/v1", "kind": "DaemonSet",  # Calico by the Tigera operator, beside aws-node
              "metadata": {"name": "calico-node", "namespace": "calico-system"}})
    r = cli("doctor", *ARGS)
    assert "✔ NetworkPolicy" in r.out and "calico-system/calico-node" in r.out, r.out
    assert r.out.rstrip().splitlines()[-1] == "the run can work here"


def test_run_warns_when_the_sandbox_policy_will_be_inert(cli: Any, fake: FakeKube) -> None:
    fake.put(aws_node("false"))
    r = cli("run", *ARGS, "--dry-run=server")
    assert r.code == 0, r.out + r.err
    warnings = [x for x in (r.out + r.err).splitlines() if "NetworkPolicy not enforced" in x]
    assert len(warnings) == 1 and warnings[0].startswith("warning: ") and "sandbox" in warnings[0]
    fake.put(aws_node("true"))
    r = cli("run", *ARGS, "--dry-run=server")
    assert "NetworkPolicy not enforced" not in r.out + r.err


def test_doctor_reports_every_problem_and_exits_1(cli: Any, fake: FakeKube) -> None:
    fake.version = {"major": "1", "minor": "27", "gitVersion": "v1.27.3"}
    for crd in ("rayjobs.ray.io", "rayclusters.ray.io"):
        fake.remove("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crd)
    for i in range(2):
        fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gpu-{i}"}, "status": {
            "allocatable": {"nvidia.com/gpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}})
    fake.put({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team", "namespace": NS},
              "spec": {"hard": {"requests.nvidia.com/gpu": "16"}},
              "status": {"hard": {"requests.nvidia.com/gpu": "16"}, "used": {"requests.nvidia.com/gpu": "8"}}})
    fake.deny("delete", "rayjobs")
    fake.deny("create", "pods", "exec")
    fake.remove("scheduling.k8s.io/v1", "PriorityClass", "", "gpu-training")
    for secret in ("ghcr-pull", "wandb"):
        fake.remove("v1", "Secret", NS, secret)
    r = cli("doctor", *ARGS)
    assert r.code == 1
    out = r.out
    assert "✖ API server" in out and "1.27" in out
    assert "✖ KubeRay CRDs" in out and "missing: rayjobs.ray.io, rayclusters.ray.io" in out
    assert "✖ KubeRay operator" in out
    assert "✖ GPUs" in out and "a pod asks for 8 GPUs but no node has more than 4" in out
    assert "✖ quota" in out and "requests.nvidia.com/gpu needs 24, 8 left" in out
    assert "✖ PriorityClass" in out and "gpu-training" in out
    assert "✖ Secrets" in out and "ghcr-pull (imagePullSecrets)" in out and "wandb (key api-key" in out
    assert "✖ permissions " in out and "delete rayjobs.ray.io" in out
    assert "exec" in out  # reported, but not fatal on its own
    assert "! NetworkPolicy" in out and "no network plugin recognised" in out
    assert "fix:" in out


def test_doctor_json(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake, gpus_per_node=8, nodes=2)
    doc = json.loads(cli("doctor", *ARGS, "-o", "json").out)
    assert doc["ok"] is False and doc["verdict"] == "the run cannot work here as configured (see ✖ above)"
    gpu = next(c for c in doc["checks"] if c["name"] == "GPUs")
    assert gpu["mark"] == "✖" and "fewer GPUs" in gpu["hint"]


def test_doctor_simulates_placement_on_the_live_nodes(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake, nodes=2)  # the example's gang needs three 8-GPU nodes
    r = cli("doctor", *ARGS)
    assert r.code == 1
    line = next(x for x in r.out.splitlines() if x.startswith("✖ placement"))
    assert "pods would stay Pending" in line and "inference" in line
    assert "0/4 nodes are available:" in line and "Insufficient nvidia.com/gpu" in line
    assert "a GPU group cannot be fully placed, so the gang cannot start" in r.out


def test_doctor_counts_what_running_pods_already_request(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake)
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "squatter", "namespace": "other"},
              "spec": {"nodeName": "gpu-0", "containers": [{"name": "c", "resources": {
                  "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
              "status": {"phase": "Running"}})
    r = cli("doctor", *ARGS)
    assert r.code == 1 and "✖ placement" in r.out


def test_doctor_and_plan_live_do_not_count_the_run_s_own_pods(cli: Any, fake: FakeKube) -> None:
    """Seen on the real control plane: doctor on a run that is already up said its own pods left no
    room for it ("the run cannot work here"); a launch of it finds them only to replace them."""
    healthy_cluster(fake)
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "grpo-swe-abc-head", "namespace": "rl-research", "labels": {"dockyard-k8s/run": "grpo-swe"}},
        "spec": {"nodeName": "gpu-0", "containers": [{"name": "c", "resources": {
            "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running"}})
    r = cli("doctor", *ARGS)
    assert "✔ placement" in r.out, r.out
    assert cli("plan", *ARGS, "--live").code == 0
    fake.put({**fake.get("v1", "Pod", "rl-research", "grpo-swe-abc-head"),  # another run's pod takes the room
              "metadata": {"name": "other-head", "namespace": "rl-research", "labels": {"dockyard-k8s/run": "other"}}})
    assert "✖ placement" in cli("doctor", *ARGS).out
    assert cli("plan", *ARGS, "--live").code == 1


def test_plan_live_places_on_the_clusters_nodes(cli: Any, fake: FakeKube) -> None:
    healthy_cluster(fake)
    r = cli("plan", *ARGS, "--live")
    assert r.code == 0, r.out + r.err
    assert "live cluster" in r.out
    fake.remove("v1", "Node", "", "gpu-2")
    r = cli("plan", *ARGS, "--live")
    assert r.code == 1 and "Insufficient nvidia.com/gpu" in r.out


def test_plan_live_on_a_cluster_without_nodes_says_so(cli: Any, fake: FakeKube) -> None:
    r = cli("plan", *ARGS, "--live")  # the fake lists no Node
    assert r.code == 1, r.out + r.err
    assert "the cluster reports no nodes, so no pod of the run can be placed" in r.err
    assert "kubectl get nodes -o yaml" not in r.err and "Traceback" not in r.err  # not the node files' message


def test_plan_live_and_nodes_are_exclusive(cli: Any, fake: FakeKube, tmp_path: Path) -> None:
    r = cli("plan", *ARGS, "--live", "--nodes", str(tmp_path / "n.yaml"))
    assert r.code == 2 and "--live and --nodes" in r.err
