"""The launcher and the real kubectl agree (issue 21 §4): on the kubeconfig (two files in
``KUBECONFIG``, the context in the second, merged as ``kubectl config view --merge`` merges them)
and on the run (what kubectl reads by the run label is what ``status`` says)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_helpers import RUN, fleet_counts, status_fleets

from dockyard_k8s.live.kubeconfig import kubeconfig_files, merge_files, select

pytestmark = pytest.mark.e2e


def kubectl_env(cluster: Any, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real kubectl with ``env`` (its own KUBECONFIG: no --kubeconfig flag)."""
    if not cluster.ours:
        pytest.skip("uses the control plane's kubectl")
    exe = str(Path(cluster.stack.state()["bin"]) / "kubectl")
    proc = subprocess.run([exe, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def split_kubeconfig(cluster: Any, ns: str, tmp: Path) -> str:
    """KUBECONFIG of three entries: a first file with the cluster and user (relative certificate
    paths) and current-context; a missing file; a second file with that context (namespace ``ns``),
    a cluster of the same name pointing nowhere (the first file's wins) and another current-context
    (the first file's wins)."""
    real = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    cl, user = real["clusters"][0]["cluster"], real["users"][0]["user"]
    (tmp / "pki").mkdir()
    for src, key in ((cl, "certificate-authority"), (user, "client-certificate"), (user, "client-key")):
        if key in src:  # relative to the file that names it, as kubectl resolves it
            shutil.copy(src[key], tmp / "pki" / Path(src[key]).name)
            src[key] = f"pki/{Path(src[key]).name}"
    first = {"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
             "clusters": [{"name": "e2e-cp", "cluster": cl}], "users": [{"name": "e2e-admin", "user": user}]}
    second = {"apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
              "clusters": [{"name": "e2e-cp", "cluster": {"server": "https://127.0.0.1:9"}}],
              "contexts": [{"name": "e2e", "context": {"cluster": "e2e-cp", "user": "e2e-admin", "namespace": ns}},
                           {"name": "elsewhere", "context": {"cluster": "e2e-cp", "user": "e2e-admin"}}]}
    (tmp / "first.yaml").write_text(yaml.safe_dump(first))
    (tmp / "b").mkdir()
    (tmp / "b" / "second.yaml").write_text(yaml.safe_dump(second))
    return os.pathsep.join([str(tmp / "first.yaml"), str(tmp / "missing.yaml"), str(tmp / "b" / "second.yaml")])


def by_name(entries: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {e["name"]: e[key] for e in entries or []}


def test_kubeconfig_files_merge_as_kubectl_merges_them(cluster: Any, e2e_cli: Any, example: Any, ns: str,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    merged_path = split_kubeconfig(cluster, ns, tmp_path)
    env = {"KUBECONFIG": merged_path}
    theirs = json.loads(kubectl_env(cluster, "config", "view", "--merge", "--raw", "-o", "json", env=env).stdout)
    ours = merge_files(kubeconfig_files(env=env)).data
    assert ours["current-context"] == theirs["current-context"] == "e2e"
    # kubectl prints paths as the file wrote them, and reads them relative to that file (here
    # first.yaml's directory, which is not the working directory: kubectl connects below)
    for entry in [*theirs["clusters"], *theirs["users"]]:
        body = entry.get("cluster") or entry.get("user")
        for field in ("certificate-authority", "client-certificate", "client-key"):
            if field in body and not os.path.isabs(body[field]):
                body[field] = str(tmp_path / body[field])
    for section, key in (("clusters", "cluster"), ("contexts", "context"), ("users", "user")):
        assert by_name(ours[section], key) == by_name(theirs[section], key), section
    selected = select(merge_files(kubeconfig_files(env=env)))
    assert (selected.namespace, selected.cluster["server"]) == (ns, yaml.safe_load(
        Path(cluster.kubeconfig).read_text())["clusters"][0]["cluster"]["server"])

    # the launcher on that KUBECONFIG: the context's namespace where -n is not given
    monkeypatch.setenv("KUBECONFIG", merged_path)
    assert e2e_cli("run", *example("--detach")).code == 0
    assert e2e_cli("runs", "-o", "name").out.split() == [RUN]
    status = e2e_cli("status", RUN)
    assert status.code == 0 and f"run {RUN} in {ns} (context e2e)" in status.out, status.out + status.err
    kubectl_jobs = kubectl_env(cluster, "get", "rayjobs", "-o", "name", env=env).stdout.split()
    assert kubectl_jobs == [f"rayjob.ray.io/{RUN}"]
    doctor = e2e_cli("doctor", *example())
    assert "✔ API server" in doctor.out, doctor.out


def test_kubectl_reads_what_the_run_created_as_status_says(cluster: Any, e2e_cli: Any, example: Any,
                                                           ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 600]]}, namespace=ns)
    r = e2e_cli("run", *example("--detach"))
    assert r.code == 0, r.out + r.err
    printed = next(line.split("kubectl: ", 1)[1] for line in r.out.splitlines() if line.strip().startswith("kubectl:"))
    assert printed == f"kubectl -n {ns} get all,rayjobs,rayclusters -l dockyard-k8s/run={RUN}"
    cluster.wait("the Ray job running", lambda: cluster.get("-n", ns, "rayjob", RUN).get("status", {}).get(
        "jobStatus") == "RUNNING")  # no status at all until KubeRay's first write
    cluster.wait("every pod ready", lambda: all(
        any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        for p in cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN},dockyard-k8s/fleet!=submitter")[
            "items"]))

    # the command the launcher printed, run by the real kubectl
    found = json.loads(cluster.kubectl(*printed.split()[1:], "-o", "json").stdout)["items"]
    kinds = {(o["kind"], o["metadata"]["name"]) for o in found}
    doc = json.loads(e2e_cli("status", RUN, "-n", ns, "-o", "json").out)
    assert {(o["kind"], o["name"]) for o in doc["objects"]} <= kinds
    pods = [o for o in found if o["kind"] == "Pod"]
    assert status_fleets(doc) == fleet_counts(pods)
    job = next(o for o in found if o["kind"] == "RayJob")
    assert doc["main"]["status"]["jobDeploymentStatus"] == job["status"]["jobDeploymentStatus"] == "Running"
    assert doc["main"]["status"]["rayClusterName"] == next(o["metadata"]["name"] for o in found
                                                           if o["kind"] == "RayCluster")

    described = cluster.kubectl("-n", ns, "describe", "rayjob", RUN).stdout
    assert "Job Deployment Status:  Running" in described and "Job Status:             RUNNING" in described
    columns = cluster.kubectl("-n", ns, "get", "rayjob", RUN, "--no-headers").stdout.split()
    assert columns[:3] == [RUN, "RUNNING", "Running"]  # NAME, JOB STATUS, DEPLOYMENT STATUS
    text = e2e_cli("status", RUN, "-n", ns).out
    assert "RayJob grpo-swe: jobDeploymentStatus Running, jobStatus RUNNING" in text
    # every pod of the run by its label, the way kubectl lists them, is in the fleet table
    names = cluster.kubectl("-n", ns, "get", "pods", "-l", f"dockyard-k8s/run={RUN}", "-o", "name").stdout.split()
    assert len(names) == sum(f["pods"] for f in doc["fleets"])
