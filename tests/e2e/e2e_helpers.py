"""Helpers of the e2e run tests (test_run_*.py, test_kueue_live.py, test_parity.py): the example
run sized to share the fake fleet, and the run's objects and pods read back from the cluster."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from support.paths import EXAMPLES

RUN = "grpo-swe"  # the example's run name (its recipe file's)
# 1-GPU trainer and inference pods and one sandbox replica: a run takes 2 of the fleet's 40 GPUs,
# so a test's run never waits for another's pods still terminating.
SMALL = ("kuberay.trainer.gpus=1", "kuberay.inference.gpus=1", "kuberay.trainer.replicas=1", "sandbox.replicas=1")
# launch.mode job|statefulset run the head in a GPU pod: no head nodeSelector of its own, and a
# job pod (head + every fleet) must fit one p4de node.
NO_OPERATOR = ("kuberay.head.nodeSelector=null", "kuberay.trainer.cpu=8", "kuberay.trainer.memory=64Gi",
               "kuberay.inference.cpu=8", "kuberay.inference.memory=64Gi")
# The kinds a run's objects are (kubectl's names), for reading them back by the run label.
RUN_KINDS = "rayjobs,rayclusters,jobs,statefulsets,deployments,services,configmaps,secrets,networkpolicies," \
            "poddisruptionbudgets"


def example_args(ns: str, *extra: str, sets: tuple[str, ...] = SMALL) -> list[str]:
    """The example recipe and infra file in ``ns`` with ``sets``, then ``extra``."""
    out = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml"), "-n", ns]
    for s in sets:
        out += ["--set", s]
    return [*out, *extra]


def labelled(cluster: Any, ns: str, run: str = RUN, kinds: str = RUN_KINDS) -> dict[str, dict[str, Any]]:
    """Every object of ``run`` the cluster holds, by ``Kind/name`` (read with the real kubectl)."""
    items = cluster.get("-n", ns, kinds, "-l", f"dockyard-k8s/run={run}")["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in items}


def versions(objects: dict[str, dict[str, Any]]) -> dict[str, str]:
    """What a write of ours to each object we apply would change: its ``generation`` (a spec
    write; controllers' status writes leave it), else its resourceVersion (ConfigMaps, Secrets,
    Services). Objects a controller owns (the RayCluster KubeRay makes for a RayJob, carrying its
    labels) are left out: we never write them, and the operator creates them whenever it gets to it."""
    return {k: str(o["metadata"].get("generation") or o["metadata"]["resourceVersion"]) for k, o in objects.items()
            if not any(ref.get("controller") for ref in o["metadata"].get("ownerReferences") or [])}


def fleet_counts(pods: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per fleet, what the cluster's pods say: existing, scheduled, ready, completed, failed
    (pods being deleted left out, as ``status`` does)."""
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        fleet = pod["metadata"].get("labels", {}).get("dockyard-k8s/fleet", "-")
        st = pod.get("status") or {}
        conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
        c = out.setdefault(fleet, {"pods": 0, "scheduled": 0, "ready": 0, "done": 0, "failed": 0})
        c["pods"] += 1
        c["scheduled"] += conds.get("PodScheduled") == "True" or st.get("phase") in ("Running", "Succeeded", "Failed")
        c["ready"] += conds.get("Ready") == "True"
        c["done"] += st.get("phase") == "Succeeded"
        c["failed"] += st.get("phase") == "Failed"
    return out


def status_fleets(doc: dict[str, Any]) -> dict[str, dict[str, int]]:
    """``status -o json``'s fleet table in :func:`fleet_counts`' shape (fleets with pods only)."""
    return {f["fleet"]: {k: f[k] for k in ("pods", "scheduled", "ready", "done", "failed")}
            for f in doc["fleets"] if f["pods"]}


def ray_jobs(cluster: Any, ns: str, since: float, ray_cluster: str | None = None) -> list[dict[str, Any]]:
    """The Ray jobs the head stand-in ran in ``ns`` (on ``ray_cluster``) from ``since`` (time.time()) on:
    a stack kept across sessions (DOCKYARD_CP_KEEP) remembers earlier sessions' jobs in the same namespaces."""
    return [j for j in cluster.ray_jobs() if j["namespace"] == ns and j["start_time"] >= since * 1000 - 1000
            and ray_cluster in (None, j["cluster"])]


def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The launcher in a process of its own: beside a command running in this one (``e2e_cli``
    redirects this process's stdout), e.g. `status` while `run` follows. KUBECONFIG is the test's."""
    return subprocess.run([sys.executable, "-m", "dockyard_k8s", *args], capture_output=True, text=True, timeout=60)


def loopback(address: str) -> bool:
    """``host:port`` (an address the Ray head stand-in dialled for the API server) is a loopback one."""
    try:
        return ipaddress.ip_address(address.rpartition(":")[0].strip("[]")).is_loopback
    except ValueError:
        return False


def trainer_layer(path: Path, annotations: dict[str, str]) -> Path:
    """An infra layer at ``path`` giving the trainer pods ``annotations`` (kwok stages read them).
    A list replaces: the example's trainer env (its W&B Secret reference) comes along."""
    wandb = {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    template = {"metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "ray-worker", "env": [wandb]}]}}
    path.write_text(yaml.safe_dump({"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer",
                                                                              "template": template}]}}}))
    return path
