"""`run` against the stateful fake: apply, follow with watches, surface failures, finish."""

from __future__ import annotations

from typing import Any

import pytest
from fakekube import FakeKube
from flowkit import in_background, seed, wait_following, wait_output
from states import NS, RUN, pod, set_job, start_cluster

from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
RENDERED = ["NetworkPolicy", "Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "RayJob"]


def test_run_detach_applies_in_order_with_server_side_apply(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    patches = [q for q in fake.requests if q.method == "PATCH" and q.params.get("dryRun") != "All"]
    # the Ray token Secret and the launch record (a ConfigMap: what the run was launched with) first,
    # then render order
    assert [q.path.split("/")[-2] for q in patches] == ["secrets", "configmaps", "networkpolicies", "networkpolicies",
                                                        "serviceaccounts", "deployments", "services",
                                                        "poddisruptionbudgets", "configmaps", "rayjobs"]
    assert patches[1].path.endswith("/configmaps/grpo-swe-launch")
    assert all(q.headers["content-type"] == "application/apply-patch+yaml" for q in patches)
    assert all(q.params["fieldManager"] == "dockyard-k8s" for q in patches)
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None
    assert "dockyard-k8s status" in r.out and "dockyard-k8s down" in r.out


def test_a_missing_secret_or_priority_class_stops_the_run_before_anything_is_applied(cli: Any, fake: FakeKube) -> None:
    # It used to apply everything and follow: FailedCreate (forbidden: no PriorityClass) and
    # CreateContainerConfigError repeated until --timeout, while check said "`run` stops on anything missing"
    fake.remove("scheduling.k8s.io/v1", "PriorityClass", "", "gpu-training")
    fake.remove("v1", "Secret", NS, "wandb")
    r = cli("run", *ARGS, "--detach")
    assert r.code == 1
    assert r.err.splitlines()[:3] == [
        f"error: run {RUN} refers to 2 object(s) the cluster does not have, so its pods could never start; nothing "
        "was applied:",
        "  PriorityClass gpu-training, used as priorityClassName; create: infra.priorityClass.create: true, or "
        "kubectl create priorityclass gpu-training --value=1000",
        f"  Secret {NS}/wandb, used as key api-key (env WANDB_API_KEY); create: kubectl -n {NS} create secret "
        "generic wandb --from-literal=api-key=... (or `dockyard-k8s dev secrets`)"]
    assert not [q for q in fake.requests if q.method in ("PATCH", "POST", "PUT")]


def test_a_reference_the_user_may_not_read_is_a_note_not_a_refusal(cli: Any, fake: FakeKube) -> None:
    fake.deny("get", "priorityclasses")  # cluster-scoped: a namespaced Role cannot grant it
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    assert "note: not checked: the PriorityClass the pods name (no permission to get priorityclasses)" in r.out + r.err


def test_rerun_unchanged_is_a_noop(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    uid = fake.get("ray.io/v1", "RayJob", NS, RUN)["metadata"]["uid"]
    rv_before = fake.rv
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0
    assert "10 unchanged" in r.out  # the token Secret, the eight rendered objects and the launch record
    assert fake.rv == rv_before  # nothing written
    assert fake.get("ray.io/v1", "RayJob", NS, RUN)["metadata"]["uid"] == uid


def test_rerun_of_a_finished_job_says_so_and_does_not_wait(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    set_job(fake, "Complete", "SUCCEEDED")
    r = cli("run", *ARGS)
    assert r.code == 0
    assert "already finished" in r.out and "--replace" in r.out
    set_job(fake, "Failed", "FAILED", reason="AppFailed")
    assert cli("run", *ARGS).code == 1


def test_replace_deletes_the_job_first(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    old = fake.get("ray.io/v1", "RayJob", NS, RUN)["metadata"]["uid"]
    r = cli("run", *ARGS, "--detach", "--replace")
    assert r.code == 0, r.err
    methods = [(q.method, q.path.rsplit("/", 2)[-2]) for q in fake.requests]
    assert methods.index(("DELETE", "rayjobs")) < max(i for i, m in enumerate(methods) if m == ("PATCH", "rayjobs"))
    assert fake.get("ray.io/v1", "RayJob", NS, RUN)["metadata"]["uid"] != old


def test_dry_run_server_persists_nothing(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--dry-run=server")
    assert r.code == 0, r.err
    assert "server dry run: nothing was persisted" in r.out  # the tally above it counts what would be done
    assert all(q.params.get("dryRun") == "All" for q in fake.requests if q.method == "PATCH")
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None


def test_dry_run_client_contacts_nothing(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--dry-run=client")
    assert r.code == 0
    assert fake.requests == []
    assert r.out.count("would apply") == 9  # the eight rendered objects and the launch record


def test_governance_is_render_only(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach", "--set", "infra.resourceQuota.hard.pods=100")
    assert r.code == 0, r.err
    assert "skipped" in r.out and "ResourceQuota" in r.out
    assert not any("resourcequotas" in q.path for q in fake.requests)


def test_run_follows_to_success(cli: Any, fake: FakeKube) -> None:
    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        wait_following(fake)
        set_job(fake, "Initializing")
        start_cluster(fake)
        set_job(fake, "Running", "RUNNING")
        wait_output(fake, "trainer: 2/2 scheduled, 2/2 ready")
        set_job(fake, "Complete", "SUCCEEDED")

    t = in_background(operator)
    r = cli("run", *ARGS)
    t.join(5)
    assert not t.errors
    assert r.code == 0, r.out + r.err
    assert "trainer: 2/2 scheduled, 2/2 ready" in r.out
    assert "jobDeploymentStatus Running, jobStatus RUNNING" in r.out
    assert "✔ succeeded" in r.out


def test_run_surfaces_image_pull_backoff_with_fleet_pod_and_hint(cli: Any, fake: FakeKube) -> None:
    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        wait_following(fake)
        set_job(fake, "Initializing")
        fake.put(pod("grpo-swe-abcde-trainer-worker-0", "trainer", container_state={"waiting": {
            "reason": "ImagePullBackOff",
            "message": 'Back-off pulling image "ghcr.io/x:bad": manifest unknown'}}))

    t = in_background(operator)
    r = cli("run", *ARGS, "--fail-fast")
    t.join(5)
    assert r.code == 1
    assert "✖ trainer/grpo-swe-abcde-trainer-worker-0: ImagePullBackOff" in r.out
    assert "hint: the image or tag does not exist: check infra.image" in r.out
    assert "fatal" in r.out  # the outcome names why it stopped
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None  # the run is left as is


def test_run_surfaces_failed_scheduling_event_and_then_failure(cli: Any, fake: FakeKube) -> None:
    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        wait_following(fake)
        p = fake.put(pod("grpo-swe-abcde-inference-worker-0", "inference", scheduled=False))
        fake.add_event(NS, p, "FailedScheduling", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
        wait_output(fake, "FailedScheduling")
        set_job(fake, "Failed", "", reason="PreRunningDeadlineExceeded", message="not running in time")

    t = in_background(operator)
    r = cli("run", *ARGS)
    t.join(5)
    assert r.code == 1
    assert "inference/grpo-swe-abcde-inference-worker-0: FailedScheduling: 0/4 nodes are available" in r.out
    assert "lower kuberay.inference.gpus" in r.out
    assert "PreRunningDeadlineExceeded" in r.out
    assert "dockyard-k8s down" in r.out  # how to clean up


def test_run_survives_dropped_watches_and_410(cli: Any, fake: FakeKube) -> None:
    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        wait_following(fake)
        set_job(fake, "Running", "RUNNING")
        fake.drop_watches()  # the server closes every stream: resume from the last version
        wait_following(fake)
        set_job(fake, "Running", "RUNNING", message="still going")
        fake.compact()  # history gone: resuming gives 410, the client re-lists
        set_job(fake, "Complete", "SUCCEEDED")

    t = in_background(operator)
    r = cli("run", *ARGS)
    t.join(5)
    assert not t.errors
    assert r.code == 0, r.out + r.err
    watches = [q for q in fake.requests if q.params.get("watch") == "true" and q.path.endswith("rayjobs")]
    assert len(watches) >= 3  # first watch, resume after the drop, re-watch after the re-list
    resumed = [q.params.get("resourceVersion") for q in watches]
    assert all(resumed)  # every watch starts from a resourceVersion (never from "now")


def test_run_retries_throttling_and_resets(cli: Any, fake: FakeKube) -> None:
    fake.fail(status_code=429, method="PATCH", times=2, retry_after="1")
    fake.fail(status_code=503, method="GET", times=1)
    fake.fail(reset=True, method="PATCH", path_contains="rayjobs", times=1)
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None


def test_api_error_names_the_object_without_traceback(cli: Any, fake: FakeKube) -> None:
    fake.fail(status_code=403, method="PATCH", path_contains="deployments", times=1)
    r = cli("run", *ARGS, "--detach")
    assert r.code == 1
    assert "error: Deployment rl-research/grpo-swe-sandbox:" in r.err
    assert "hint:" in r.err and "Traceback" not in r.err


def test_missing_kuberay_crds_is_explained(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from lightkube import KubeConfig
    from lightkube.config.models import Cluster, User

    from dockyard_k8s.live import client as client_mod

    bare = seed(FakeKube(crds=False, namespaces=("rl-research",)))
    config = KubeConfig.from_one(cluster=Cluster(server="https://x"), user=User(), namespace="rl-research").get()
    monkeypatch.setattr(client_mod, "connect", lambda **kw: client_mod.KubeClient(config, transport=bare))
    r = cli("run", *ARGS, "--detach")
    bare.shutdown()
    assert r.code == 1
    assert "RayJob rl-research/grpo-swe" in r.err and "KubeRay" in r.err


def test_timeout_leaves_the_run_and_says_how_to_follow(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--timeout", "0.3")
    assert r.code == 1
    assert "stopped following after 0s" in r.out or "stopped following" in r.out
    assert "dockyard-k8s status" in r.out
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None


def test_ctrl_c_leaves_the_run_running(cli: Any, fake: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    from dockyard_k8s.live import orchestrate

    real_follow = orchestrate.follow

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        def say(line: str) -> None:
            raise KeyboardInterrupt

        return real_follow(*args, **{**kwargs, "say": say})

    monkeypatch.setattr(orchestrate, "follow", interrupted)
    r = cli("run", *ARGS)
    assert r.code == 130
    assert "the run keeps going" in r.out
    assert "dockyard-k8s down" in r.out and "dockyard-k8s status" in r.out
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None
    assert not any(q.method == "DELETE" for q in fake.requests)


def test_cluster_up_waits_until_ready(cli: Any, fake: FakeKube) -> None:
    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayCluster", NS, RUN))
        for plural in ("rayclusters", "pods", "events"):
            fake.wait_watching(plural)
        fake.set_status("ray.io/v1", "RayCluster", NS, RUN, {"state": "", "conditions": [
            {"type": "HeadPodReady", "status": "False", "reason": "HeadPodNotFound"}]})
        fake.set_status("ray.io/v1", "RayCluster", NS, RUN, {"state": "ready", "readyWorkerReplicas": 3,
                                                            "desiredWorkerReplicas": 3})

    t = in_background(operator)
    r = cli("cluster", "up", *ARGS)
    t.join(5)
    assert r.code == 0, r.out + r.err
    assert "provisioning: head pod not ready (HeadPodNotFound)" in r.out
    assert "✔ ready" in r.out and "cluster dashboard" in r.out
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None


def test_cluster_list(cli: Any, fake: FakeKube) -> None:
    cli("cluster", "up", *ARGS, "--detach")
    fake.set_status("ray.io/v1", "RayCluster", NS, RUN, {"state": "ready", "readyWorkerReplicas": 3,
                                                        "desiredWorkerReplicas": 3, "desiredGPU": "24"})
    r = cli("cluster", "list")
    assert r.code == 0
    line = next(line for line in r.out.splitlines() if RUN in line)
    assert line.split() == [NS, RUN, RUN, "ready", "3/3", "24"]
    r = cli("cluster", "list", "-n", "default")
    assert "no RayCluster" in r.out


def test_cluster_list_says_not_ready_when_the_head_pod_is_not_ready(cli: Any, fake: FakeKube) -> None:
    """KubeRay sets ``state: ready`` once and never clears it; its HeadPodReady condition follows the head pod."""
    cli("cluster", "up", *ARGS, "--detach")
    fake.set_status("ray.io/v1", "RayCluster", NS, RUN, {
        "state": "ready", "readyWorkerReplicas": 3, "desiredWorkerReplicas": 3, "desiredGPU": "24",
        "conditions": [{"type": "HeadPodReady", "status": "False", "reason": "ContainersNotReady",
                        "message": "containers with unready status: [ray-head]"}]})
    r = cli("cluster", "list")
    assert r.code == 0, r.err
    line = next(line for line in r.out.splitlines() if line.startswith(NS))
    assert line.split() == [NS, RUN, RUN, "not", "ready", "3/3", "24"]
    assert f"{NS}/{RUN}: provisioning: head pod not ready (ContainersNotReady)" in r.out


@pytest.mark.parametrize("held", [False, True], ids=["gone", "held-by-a-finalizer"])
def test_run_ends_when_the_rayjob_is_deleted_while_it_follows(cli: Any, fake: FakeKube, held: bool) -> None:
    """`kubectl delete rayjob` (or a `down` elsewhere) while `run` follows: said at once, exit 1,
    not a silent wait until --timeout (the safety net here). A finalizer may hold the deleted RayJob
    (the operator stopping its Ray job, or not running): its deletionTimestamp is enough."""
    def operator() -> None:
        job = fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        if held:
            job["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]
            fake.put(job)
        wait_following(fake)
        set_job(fake, "Running", "RUNNING")
        wait_output(fake, "jobDeploymentStatus Running, jobStatus RUNNING")
        fake.remove("ray.io/v1", "RayJob", NS, RUN)

    t = in_background(operator)
    r = cli("run", *ARGS, "--timeout", "30")
    t.join(5)
    assert not t.errors
    assert r.code == 1, r.out + r.err
    assert f"✖ deleted: RayJob {NS}/{RUN} was deleted while it was followed" in r.out
    assert "timeout" not in r.out
    assert (fake.get("ray.io/v1", "RayJob", NS, RUN) is not None) == held


def test_stopping_the_watches_shares_one_deadline() -> None:
    """Threads still blocked when following ends are joined within one deadline, not one each:
    five stuck watch threads cost JOIN_SECONDS in all, not five times a per-thread timeout."""
    import threading

    from dockyard_k8s.live import orchestrate

    now = [0.0]
    waits: list[float] = []

    class Stuck(threading.Thread):
        def join(self, timeout: float | None = None) -> None:
            waits.append(float(timeout if timeout is not None else -1))
            now[0] += waits[-1]  # blocked for all of it: the thread does not end

    orchestrate.join_all([Stuck() for _ in range(5)], clock=lambda: now[0])
    assert now[0] == orchestrate.JOIN_SECONDS and all(w >= 0 for w in waits)
    assert orchestrate.JOIN_SECONDS <= 1.0
