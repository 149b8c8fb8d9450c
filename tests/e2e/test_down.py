"""`down` and a deletion while `run` follows, on the real control plane (issue 22 items 5 and 6).

kwok's fake kubelet ends a deleted pod's containers after its graceful-deletion stage
(manifests/stages.yaml ``pod-delete``: 1 s), and the real garbage collector deletes a RayJob's
RayCluster and its pods after the RayJob: a run's pods outlive the `down` that deleted their owners.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from e2e_helpers import RUN, labelled, ray_jobs

from support.cli import printed

pytestmark = pytest.mark.e2e


def run_pods(cluster: Any, ns: str) -> list[dict[str, Any]]:
    return list(cluster.get("-n", ns, "pods", "-l", f"dockyard-k8s/run={RUN}")["items"])


def all_running(cluster: Any, ns: str) -> bool:
    pods = run_pods(cluster, ns)
    fleets = {p["metadata"]["labels"].get("dockyard-k8s/fleet") for p in pods}
    return {"head", "trainer", "inference", "sandbox"} <= fleets and all(
        p["status"].get("phase") == "Running" for p in pods)


class Observer:
    """Lists the run's NetworkPolicies, then its pods, again and again (the launcher's own client,
    no output) while `down` runs and until the pods are gone: a list of policies that finds none,
    followed by a list of pods that finds some, is a moment when a pod of the run ran without its
    policies."""

    def __init__(self, cluster: Any, ns: str) -> None:
        from dockyard_k8s.live.client import connect
        from dockyard_k8s.live.kinds import KINDS, POD

        self.client = connect(kubeconfig=cluster.kubeconfig)
        self.ns = ns
        self.kinds = (KINDS["NetworkPolicy"], POD)
        self.snapshots: list[tuple[int, int]] = []  # (policies, pods)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.observe, daemon=True)

    def observe(self) -> None:
        selector = f"dockyard-k8s/run={RUN}"
        while not self.stop.is_set():
            policies, _ = self.client.list(self.kinds[0], self.ns, label_selector=selector)
            pods, _ = self.client.list(self.kinds[1], self.ns, label_selector=selector)
            self.snapshots.append((len(policies), len(pods)))
            time.sleep(0.05)

    def __enter__(self) -> Observer:
        self.thread.start()
        while not self.snapshots:  # one snapshot of the run as it was, before `down`
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        self.client.close()


def test_down_deletes_the_network_policies_only_once_the_run_s_pods_are_gone(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 600]]}, namespace=ns)
    r = e2e_cli("run", *example("--detach"))
    assert r.code == 0, r.out + r.err
    cluster.wait("every pod of the run running", lambda: all_running(cluster, ns))
    policies = cluster.get("-n", ns, "networkpolicies", "-l", f"dockyard-k8s/run={RUN}")["items"]
    assert len(policies) == 2

    with Observer(cluster, ns) as seen:
        down = e2e_cli("down", *example())
        # and after `down` returned, until the last pod of the run is gone
        cluster.wait("every pod of the run gone", lambda: seen.snapshots[-1][1] == 0)
    assert down.code == 0, down.out + down.err
    assert seen.snapshots[0][0] == 2 and seen.snapshots[0][1] > 0  # before `down`: the policies and the pods
    with_pods = [s for s in seen.snapshots if s[1]]
    assert all(policies == 2 for policies, _ in with_pods), seen.snapshots  # no pod ever without its policies
    last = f"Secret {RUN}-ray-auth, NetworkPolicy {RUN}-gpu-ingress, NetworkPolicy {RUN}-sandbox"
    assert f"pod(s) of grpo-swe to be gone before deleting {last} (they stay in force" in down.out
    assert run_pods(cluster, ns) == []  # `down` returned once they were gone
    assert cluster.get("-n", ns, "networkpolicies", "-l", f"dockyard-k8s/run={RUN}")["items"] == []
    lines = [line for line in down.out.splitlines() if line.startswith("deleted ") and "object(s)" not in line]
    assert [line.split()[1] for line in lines[-3:]] == ["Secret", "NetworkPolicy", "NetworkPolicy"]
    assert "its pods are gone" in down.out.splitlines()[-1] and "still terminating" not in down.out  # it waited
    # what still follows is what KubeRay made: for a RayJob, its RayCluster
    assert down.out.splitlines()[-1].endswith("; the RayCluster KubeRay made for the RayJob follows by garbage "
                                              "collection: `--wait` waits for it")


def test_run_ends_when_the_rayjob_is_deleted_while_it_follows(cluster: Any, e2e_cli: Any, example: Any,
                                                                ns: str) -> None:
    cluster.script(RUN, {"steps": [["RUNNING", 600]]}, namespace=ns)

    def running() -> bool:
        got = cluster.kubectl("-n", ns, "get", "rayjob", RUN, "-o", "jsonpath={.status.jobDeploymentStatus}",
                              check=False)
        return got.returncode == 0 and got.stdout == "Running"

    def delete_when_running() -> None:
        cluster.wait("the RayJob running", running, timeout=120)
        cluster.kubectl("-n", ns, "delete", "rayjob", RUN, "--wait=false")

    deleter = threading.Thread(target=delete_when_running, daemon=True)
    deleter.start()
    r = e2e_cli("run", *example("--timeout", "150"))  # the timeout: a safety net, never reached
    deleter.join(10)
    assert r.code == 1, r.out + r.err
    assert f"✖ deleted: RayJob {ns}/{RUN} was deleted while it was followed" in r.out
    assert "stopped following" not in r.out
    # `run` ended on the deletionTimestamp; KubeRay stops the Ray job and releases its finalizer
    cluster.wait("the RayJob gone", lambda: cluster.kubectl("-n", ns, "get", "rayjob", RUN, check=False).returncode)


HOLD = "e2e.dockyard-k8s.dev/hold"  # a finalizer of the test's, as a stopped or slow controller's would hold


def hold(cluster: Any, ns: str) -> None:
    cluster.kubectl("-n", ns, "patch", "rayjob", RUN, "--type=json", "-p",
                    f'[{{"op": "add", "path": "/metadata/finalizers/-", "value": "{HOLD}"}}]')


def release(cluster: Any, ns: str) -> None:
    cluster.kubectl("-n", ns, "patch", "rayjob", RUN, "--type=json", "-p",
                    '[{"op": "replace", "path": "/metadata/finalizers", "value": []}]')


def test_a_rayjob_held_by_a_finalizer_keeps_its_pods_policies_and_token_until_it_is_gone(
        cluster: Any, e2e_cli: Any, example: Any, ns: str) -> None:
    """A RayJob being deleted stays while a finalizer holds it, and so do its RayCluster and pods
    (the garbage collector deletes them once their owner is gone). `down` keeps what must outlive
    them: the NetworkPolicies, and the Ray token Secret, which KubeRay reads to stop the Ray job of
    a RayJob being deleted (without it KubeRay keeps its own finalizer for ever:
    rayjob_controller.go, "failed to get auth secret"). `run` then waits for the RayJob to be
    gone before creating it again, and `down --wait` returns once everything is gone."""
    start = time.time()
    cluster.script(RUN, {"steps": [["RUNNING", 600]]}, namespace=ns)
    assert e2e_cli("run", *example("--detach")).code == 0
    cluster.wait("every pod of the run running", lambda: all_running(cluster, ns))
    cluster.wait("the Ray job running", lambda: cluster.get("-n", ns, "rayjob", RUN).get("status", {}).get(
        "jobStatus") == "RUNNING")
    old = cluster.get("-n", ns, "rayjob", RUN)["metadata"]["uid"]
    hold(cluster, ns)
    try:
        down = e2e_cli("down", *example("--timeout", "3"))
        assert down.code == 1, down.out + down.err
        assert cluster.kubectl("-n", ns, "get", "secret", f"{RUN}-ray-auth", check=False).returncode == 0, down.out
        assert f"kept Secret {RUN}-ray-auth, NetworkPolicy {RUN}-gpu-ingress, NetworkPolicy {RUN}-sandbox, so " \
               "that no pod of the run runs without them" in down.err
        job = cluster.get("-n", ns, "rayjob", RUN)
        assert job["metadata"]["deletionTimestamp"] and job["metadata"]["finalizers"] == [HOLD]  # KubeRay's is gone
        (stopped,) = ray_jobs(cluster, ns, start)
        assert stopped["status"] == "STOPPED"  # what KubeRay did before it released its finalizer
        assert {p["metadata"]["labels"]["dockyard-k8s/fleet"] for p in run_pods(cluster, ns)} >= {"head", "trainer"}
        assert len(cluster.get("-n", ns, "networkpolicies", "-l", f"dockyard-k8s/run={RUN}")["items"]) == 2
    except BaseException:  # nothing left held for the fixture's `down`
        release(cluster, ns)
        raise

    def released_once(text: str) -> threading.Thread:
        def body() -> None:
            try:
                cluster.wait(f"`{text}` printed", lambda: text in printed(), timeout=60)
            finally:
                release(cluster, ns)
        t = threading.Thread(target=body, daemon=True)
        t.start()
        return t

    releaser = released_once("to finish deleting")
    again = e2e_cli("run", *example("--detach"))
    releaser.join(10)
    assert again.code == 0, again.out + again.err
    assert f"waiting for RayJob {ns}/{RUN} to finish deleting ({HOLD})" in again.out
    assert cluster.get("-n", ns, "rayjob", RUN)["metadata"]["uid"] != old

    gone = e2e_cli("down", *example("--wait", "--timeout", "60"))
    assert gone.code == 0, gone.out + gone.err
    assert f"everything of run {RUN} is gone from {ns}" in gone.out
    assert labelled(cluster, ns) == {} and run_pods(cluster, ns) == []
