"""``nccl-test --run``: apply the MPIJob, wait for its launcher pod to end, return its log.

The pure parts (rendering the MPIJob, parsing all_reduce_perf output) live in
``render/nccl.py``; this module only supplies the live ``apply`` / ``wait_launcher_logs`` /
``delete`` callables that ``render.nccl.run_and_summarize`` takes.
"""

from __future__ import annotations

from contextlib import closing
from typing import Any

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.kinds import KINDS, kind_of
from dockyard_k8s.live.orchestrate import watch_for
from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL

TERMINAL = ("Succeeded", "Failed")


def wait_launcher_logs(client: KubeClient, mpijob: dict[str, Any], *, timeout: float) -> str:
    """Watch the launcher pod until it is Succeeded or Failed; return its whole log.

    Raises:
        ClusterError: the timeout passed first (the MPIJob is left for `kubectl describe`).
    """
    namespace, run = mpijob["metadata"]["namespace"], mpijob["metadata"]["labels"][RUN_LABEL]
    with closing(watch_for(client, KINDS["Pod"], namespace, timeout=timeout,
                           label_selector=f"{RUN_LABEL}={run},{FLEET_LABEL}=nccl-launcher")) as events:
        for event in events:
            pods = event.items if event.type == "SYNC" else [event.obj]
            done = [p for p in pods if (p.get("status") or {}).get("phase") in TERMINAL]
            if done:
                name = done[0]["metadata"]["name"]
                return client.pod_log(namespace, name, container="launcher")
    raise ClusterError(f"the NCCL launcher did not finish within {timeout:.0f}s", obj=f"MPIJob {namespace}/"
                       f"{mpijob['metadata']['name']}", hint="kubectl describe mpijob; the MPI Operator must be "
                                                             "installed (kubeflow.org/v2beta1)")


def live_callables(client: KubeClient, *, timeout: float, cleanup: bool) -> dict[str, Any]:
    """The keyword arguments of ``render.nccl.run_and_summarize`` for the live cluster."""
    return {
        "apply": client.apply,
        "wait_launcher_logs": lambda obj: wait_launcher_logs(client, obj, timeout=timeout),
        "delete": (lambda obj: client.delete(kind_of(obj), obj["metadata"]["namespace"], obj["metadata"]["name"]))
        if cleanup else None,
    }
