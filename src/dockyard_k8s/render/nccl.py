"""The NCCL fabric test: an MPIJob (``kubeflow.org/v2beta1``) running nccl-tests
``all_reduce_perf`` across the GPU nodes the run would use, and its output summarised.

The workers get the GPU fleet's placement and platform settings (node selector,
tolerations, GPUs, EFA and other extended resources, ``/dev/shm``, runtime class,
one pod per node, topology spread), so a green test says something about the nodes the
run will land on. Ranks are started over ssh by ``mpirun`` and do not inherit the pod's
environment, so every variable (the fleet's, e.g. ``FI_PROVIDER=efa``, and
``ncclTest.env``) is set on the launcher and exported with ``-x NAME``.

Pattern: [NCCL] aws-samples/sample-rlinf-on-eks ``infrastructure/manifests/nccl-tests-mpijob.yaml``
(itself from awslabs/awsome-distributed-ai), which the EKS manifests text names.

:func:`run_and_summarize` takes the live client's callables (``live/nccl.py``): this module
imports no client.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.model import GPU_FLEETS
from dockyard_k8s.kube import GPU
from dockyard_k8s.render import meta
from dockyard_k8s.render.meta import env_list, metadata, name_of, placement, pod_labels, pull_secrets, quantity
from dockyard_k8s.render.platform import (
    add_gpu_scheduling,
    add_runtime_class,
    keep_off_gpu_nodes,
    off_gpu_nodes,
    padded_deadline,
)

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec
    from dockyard_k8s.config.model import Fleet


def _gpu_fleet(infra: InfraSpec) -> Fleet | None:
    """The GPU fleet whose nodes the test uses: the first with GPU pods."""
    kr = infra["kuberay"]
    return next((r for r in GPU_FLEETS if kr[r]["gpus"] > 0 and kr[r]["replicas"] > 0), None)


def nccl_shape(infra: InfraSpec) -> tuple[int, int]:
    """(worker nodes, GPUs per node) of the test: the run's GPU pods unless ncclTest says otherwise."""
    nt, kr, fleet = infra["ncclTest"], infra["kuberay"], _gpu_fleet(infra)
    pods = sum(kr[r]["replicas"] for r in GPU_FLEETS if kr[r]["gpus"] > 0)
    return int(nt["nodes"] or max(pods, 1)), int(nt["gpusPerNode"] or (kr[fleet]["gpus"] if fleet else 1))


def mpirun_command(infra: InfraSpec, env_names: list[str]) -> list[str]:
    nt = infra["ncclTest"]
    nodes, gpus = nccl_shape(infra)
    return [nt["mpirunPath"], "--allow-run-as-root", "--tag-output", "-np", str(nodes * gpus), "-N", str(gpus),
            "--bind-to", "none", *(w for name in env_names for w in ("-x", name)), *nt["mpirunArgs"],
            nt["binary"], "-b", str(nt["minBytes"]), "-e", str(nt["maxBytes"]), "-f", str(nt["stepFactor"]),
            "-g", "1", "-c", "1" if nt["check"] else "0", "-n", str(nt["iterations"])]


def nccl_mpijob(infra: InfraSpec) -> dict[str, Any]:
    """The MPIJob ``<run>-nccl``. ``infra["ncclTest"]["image"]`` must be set (see :func:`nccl_problems`)."""
    nt = infra["ncclTest"]
    sizing: dict[str, Any] = dict(infra["kuberay"][_gpu_fleet(infra) or "trainer"])
    nodes, gpus = nccl_shape(infra)
    image = nt["image"]
    env = {**sizing["env"], **nt["env"]}
    extended = {**sizing["extendedResources"], **nt["extendedResources"], GPU: gpus}
    amounts = {k: quantity(v) for k, v in sorted(extended.items())}
    requests = {"cpu": quantity(sizing["cpu"]), "memory": quantity(sizing["memory"]), **amounts}
    limits = {"cpu": quantity(sizing["cpuLimit"] or sizing["cpu"]),
              "memory": quantity(sizing["memoryLimit"] or sizing["memory"]), **amounts}
    worker: dict[str, Any] = {"name": "worker", "image": image, "imagePullPolicy": infra["infra"]["imagePullPolicy"],
                              "resources": {"requests": requests, "limits": limits}}
    worker_pod: dict[str, Any] = {**pull_secrets(infra), **placement(sizing), "containers": [worker]}
    if sizing["shmSize"] is not None:
        worker["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        worker_pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory",
                                                               "sizeLimit": quantity(sizing["shmSize"])}}]
    add_runtime_class(infra, worker_pod)
    add_gpu_scheduling(infra, worker_pod, meta.fleets_selector(infra, ["nccl-worker"]))

    launcher: dict[str, Any] = {
        "name": "launcher", "image": image, "imagePullPolicy": infra["infra"]["imagePullPolicy"],
        "command": mpirun_command(infra, list(env)),
        "env": env_list(env),
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
    }
    launcher_pod: dict[str, Any] = {"restartPolicy": "OnFailure", **pull_secrets(infra), "containers": [launcher]}
    keep_off_gpu_nodes(launcher_pod, off_gpu_nodes(infra))  # a CPU pod: not on a GPU node the test needs
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": metadata(infra, name_of(infra, "nccl"), "nccl-test"),
        "spec": {
            "slotsPerWorker": gpus,
            "mpiImplementation": "OpenMPI",
            # The launcher starts once every worker is Ready, instead of crash-looping until then.
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {
                "cleanPodPolicy": "Running",
                "backoffLimit": 3,
                "activeDeadlineSeconds": padded_deadline(infra, nt["activeDeadlineSeconds"]),
                "ttlSecondsAfterFinished": 3600,  # an hour to read the launcher's log
            },
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"metadata": {"labels": pod_labels(infra, "nccl-launcher")},
                                                         "spec": launcher_pod}},
                "Worker": {"replicas": nodes, "template": {"metadata": {"labels": pod_labels(infra, "nccl-worker")},
                                                           "spec": worker_pod}},
            },
        },
    }


def nccl_problems(infra: InfraSpec) -> list[tuple[tuple[str, ...], str]]:
    """What stops the test from being rendered, as (infra key path, message)."""
    out: list[tuple[tuple[str, ...], str]] = []
    if not infra["ncclTest"]["image"]:
        out.append((("ncclTest", "image"), "is required for nccl-test (got nothing, expected an image with mpirun "
                                           "and nccl-tests, e.g. the eks profile's public EFA build)"))
    _, gpus = nccl_shape(infra)
    if not any(infra["kuberay"][r]["gpus"] > 0 for r in GPU_FLEETS) and not infra["ncclTest"]["gpusPerNode"]:
        out.append((("kuberay", "trainer", "gpus"), f"the run has no GPU pods to test (gpus per node: {gpus}); "
                                                    "set ncclTest.gpusPerNode to test anyway"))
    return out


# --- the summary ------------------------------------------------------------------------------

_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")  # mpirun --tag-output prefix


@dataclass(frozen=True, slots=True)
class BusBandwidth:
    """One row of all_reduce_perf: a message size, out-of-place and in-place."""

    size: int  # bytes
    elements: int  # the count column
    dtype: str
    oop_time_us: float
    oop_busbw: float  # GB/s
    oop_wrong: int | None  # None: N/A (run with -c 0)
    ip_time_us: float
    ip_busbw: float
    ip_wrong: int | None


@dataclass(frozen=True, slots=True)
class NcclSummary:
    rows: list[BusBandwidth]
    ranks: int
    avg_busbw: float | None
    out_of_bounds: int | None

    @property
    def peak(self) -> BusBandwidth | None:
        return max(self.rows, key=lambda r: max(r.oop_busbw, r.ip_busbw)) if self.rows else None

    @property
    def wrong(self) -> int:
        return sum((r.oop_wrong or 0) + (r.ip_wrong or 0) for r in self.rows) + (self.out_of_bounds or 0)


def _wrong(token: str) -> int | None:
    if token == "N/A":
        return None
    try:
        return int(token)
    except ValueError:  # nccl-tests < 2.10 printed a max error as a float (e.g. 0e+00)
        return 0 if float(token) == 0 else 1


def parse_all_reduce(text: str) -> NcclSummary:
    """Parse all_reduce_perf output (plain, or interleaved mpirun ``--tag-output`` logs).

    Rows are the lines starting with two integers (size, count) and ending with the
    out-of-place and in-place ``time algbw busbw #wrong`` columns; with or without the
    ``root`` column, so nccl-tests 2.x output of any vintage parses.
    """
    rows: list[BusBandwidth] = []
    ranks = 0
    avg = None
    oob = None
    for raw in text.splitlines():
        line = _TAG.sub("", raw).strip()
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            if re.match(r"Rank\s+\d+\s+Group", body):
                ranks += 1
            elif m := re.match(r"Avg bus bandwidth\s*:\s*([0-9.eE+-]+)", body):
                avg = float(m.group(1))
            elif m := re.match(r"Out of bounds values\s*:\s*(\d+)", body):
                oob = int(m.group(1))
            continue
        tokens = line.split()
        if len(tokens) < 12 or not (tokens[0].isdigit() and tokens[1].isdigit()):
            continue
        try:
            tail = tokens[-8:]
            rows.append(BusBandwidth(int(tokens[0]), int(tokens[1]), tokens[2], float(tail[0]), float(tail[2]),
                                     _wrong(tail[3]), float(tail[4]), float(tail[6]), _wrong(tail[7])))
        except ValueError:
            continue
    return NcclSummary(rows, ranks, avg, oob)


def human_bytes(n: int) -> str:
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B" if n < 1024 else f"{n / 1024:.1f}K"


def summary_problems(summary: NcclSummary, *, min_busbw: float | None = None) -> list[str]:
    """Why the result is bad ([] when it is good)."""
    why = []
    if not summary.rows:
        why.append("no result rows")
    if summary.wrong:
        why.append(f"{summary.wrong} wrong value(s): data corruption on the fabric or a GPU")
    peak = summary.peak
    if min_busbw is not None and peak is not None and max(peak.oop_busbw, peak.ip_busbw) < min_busbw:
        why.append(f"peak bus bandwidth {max(peak.oop_busbw, peak.ip_busbw):.2f} GB/s is below "
                   f"--min-busbw {min_busbw:g}")
    return why


def run_and_summarize(
    mpijob: dict[str, Any],
    *,
    apply: Callable[[dict[str, Any]], None],
    wait_launcher_logs: Callable[[dict[str, Any]], str],
    delete: Callable[[dict[str, Any]], None] | None = None,
) -> NcclSummary:
    """Apply the MPIJob, wait for the launcher pod to terminate and parse its full log
    (``wait_launcher_logs``), then delete the MPIJob (``delete`` None keeps it, e.g. for `kubectl describe`)."""
    apply(mpijob)
    try:
        return parse_all_reduce(wait_launcher_logs(mpijob))
    finally:
        if delete is not None:
            delete(mpijob)
