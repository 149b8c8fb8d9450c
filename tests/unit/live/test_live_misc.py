"""Small pure pieces: quantities, durations, log pod selection, dev builders, Ray job requests."""

from __future__ import annotations

import base64
from fractions import Fraction

import httpx2
import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.kube import parse_quantity
from dockyard_k8s.live.dev import dev_pod, dev_secret, parse_dotenv, parse_secret_args
from dockyard_k8s.live.logs import container_of, default_fleet, parse_duration, select_pods
from dockyard_k8s.live.rayhead import RayJobsClient, prepare_submit, ray_cluster_name, submission_id
from support.paths import EXAMPLES


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Fraction(1, 2)), ("2", 2), ("64Gi", 64 * 2 ** 30), ("1e3", 1000), ("1.5", Fraction(3, 2)),
    ("100M", 10 ** 8), (8, 8), ("0.5Ki", 512),
])
def test_quantities(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["abc", "1Xi", "", True])
def test_bad_quantities(bad: object) -> None:
    assert parse_quantity(bad) is None


def test_durations() -> None:
    assert [parse_duration(t) for t in ("30", "30s", "10m", "1h30m")] == [30, 30, 600, 5400]
    with pytest.raises(UsageError):
        parse_duration("soon")


def p(name: str, fleet: str, containers: tuple[str, ...] = ("a",), default: str = "") -> dict:
    meta: dict = {"name": name, "labels": {"dockyard-k8s/fleet": fleet}}
    if default:
        meta["annotations"] = {"kubectl.kubernetes.io/default-container": default}
    return {"metadata": meta, "spec": {"containers": [{"name": c} for c in containers]}}


def test_log_pod_selection() -> None:
    pods = [p("h", "head"), p("s", "submitter"), p("t1", "trainer"), p("t0", "trainer")]
    assert default_fleet("RayJob", pods) == "submitter"
    assert default_fleet("RayCluster", pods) == "head"
    assert [x["metadata"]["name"] for x in select_pods(pods, fleet="trainer")] == ["t0", "t1"]
    assert [x["metadata"]["name"] for x in select_pods(pods, main_kind="RayJob")] == ["s"]
    with pytest.raises(ClusterError, match="no inference pod"):
        select_pods(pods, fleet="inference")
    assert container_of(p("x", "head", ("a", "b"), default="b")) == "b"
    assert container_of(p("x", "head", ("a", "b"))) == "a"
    assert container_of(p("x", "head", ("a", "b")), "b") == "b"


def test_dev_pod_is_cpu_only_with_optional_secret() -> None:
    pod = dev_pod("ns", image="img:1", pull_secrets=["pull"], pvc="ws")
    c = pod["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in c["resources"]["limits"]
    assert c["envFrom"] == [{"secretRef": {"name": "dockyard-dev-secrets", "optional": True}}]
    assert pod["spec"]["volumes"][0]["secret"]["optional"] is True
    assert {"name": "workspace", "mountPath": "/workspace"} in c["volumeMounts"]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]


def test_dev_secret_and_parsing(tmp_path: object) -> None:
    s = dev_secret("ns", "dockyard-dev", {"B": "2", "A": "x=y"})
    assert list(s["data"]) == ["A", "B"] and base64.b64decode(s["data"]["A"]).decode() == "x=y"
    assert parse_dotenv("# c\nexport A='1'\nB=\"two words\"\n\nC=", "f") == {"A": "1", "B": "two words", "C": ""}
    with pytest.raises(UsageError, match="f:1"):
        parse_dotenv("novalue", "f")
    asked: list[str] = []
    got = parse_secret_args(["K=v", "ASKED"], [], prompt=lambda q: asked.append(q) or "typed")
    assert got == {"K": "v", "ASKED": "typed"} and asked == ["ASKED: "]
    with pytest.raises(UsageError):
        parse_secret_args(["bad key=v"], [], prompt=lambda q: "")
    with pytest.raises(UsageError):
        parse_secret_args([], [], prompt=lambda q: "")


def test_ray_job_requests_and_ids() -> None:
    a = submission_id("run", "python train.py", {"env_vars": {"A": "1"}})
    assert a == submission_id("run", "python train.py", {"env_vars": {"A": "1"}})
    assert a != submission_id("run", "python train.py lr=1", {"env_vars": {"A": "1"}})
    assert a.startswith("run-") and len(a) == len("run-") + 10
    req = prepare_submit("python x.py", sub_id=a, runtime_env={"pip": []})
    assert (req.method, req.path) == ("POST", "/api/jobs/")
    assert req.body == {"entrypoint": "python x.py", "submission_id": a, "runtime_env": {"pip": []}}


def test_follow_logs_polls_the_whole_log_and_yields_each_part_once() -> None:
    """`job logs --follow`: the Jobs API has no stream, so the whole log is read again until the
    job is terminal (its status read first: the last log read is complete)."""
    answers = [("RUNNING", "line 1\n"), ("RUNNING", "line 1\n"), ("RUNNING", "line 1\nline 2\n"),
               ("SUCCEEDED", "line 1\nline 2\nline 3\n")]
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        status, text = answers[0]
        if request.url.path.endswith("/logs"):
            answers.pop(0)
            return httpx2.Response(200, json={"logs": text})
        return httpx2.Response(200, json={"submission_id": "j", "status": status})

    sleeps: list[float] = []
    ray = RayJobsClient("http://head:8265", transport=httpx2.MockTransport(handler), sleep=sleeps.append)
    assert list(ray.follow_logs("j", poll=2.0)) == ["line 1\n", "line 2\n", "line 3\n"]
    assert seen[:2] == ["/api/jobs/j", "/api/jobs/j/logs"] and len(seen) == 8 and sleeps == [2.0] * 3


def test_json_rows_show_every_field_in_order() -> None:
    """status/doctor/runs -o json write these rows with dataclasses.asdict(): every field, in declaration
    order (what NamedTuple._asdict() gave), so a field added later reaches the JSON too."""
    import dataclasses
    import datetime as dt

    from dockyard_k8s.live.checks import Check
    from dockyard_k8s.live.diagnose import Diagnosis
    from dockyard_k8s.live.kueue import WorkloadState
    from dockyard_k8s.live.progress import FleetRow
    from dockyard_k8s.live.runs import RunRow

    for cls in (FleetRow, Diagnosis, WorkloadState, Check):
        names = [f.name for f in dataclasses.fields(cls)]
        values = [f"v{i}" for i in range(len(names))]
        assert dataclasses.asdict(cls(*values)) == dict(zip(names, values, strict=True))
        assert list(dataclasses.asdict(cls(*values))) == names
    row = RunRow("ns", "r", "rayjob", "running", 8, "2026-12-01T00:00:00Z", "", "ok")
    doc = row.as_dict(dt.datetime(2026, 12, 1, 0, 5, tzinfo=dt.UTC))
    names = [f.name for f in dataclasses.fields(RunRow)]
    assert list(doc) == [*names, "age"]
    assert [doc[k] for k in names] == ["ns", "r", "rayjob", "running", 8, "2026-12-01T00:00:00Z", "", "ok"]
    assert doc["age"] == "5m"


def test_the_local_pre_running_deadline_comes_after_kuberay_s_own_checks() -> None:
    """KubeRay fails a RayJob past preRunningDeadlineSeconds when it reconciles it, every 3 s while
    it is not running (RayJobDefaultRequeueDuration): the fallback must not fire in between (it
    did at 6 s for a 5 s deadline on the real control plane, saying KubeRay did not end a job
    KubeRay ended a second later)."""
    from dockyard_k8s.live.launch import KUBERAY_RECHECK_SECONDS, deadline_margin

    assert KUBERAY_RECHECK_SECONDS == 3.0
    assert deadline_margin(5) > KUBERAY_RECHECK_SECONDS and deadline_margin(1) > KUBERAY_RECHECK_SECONDS
    assert deadline_margin(300) == 30 and deadline_margin(2700) == 60  # 10%, at most a minute


class _Objects:
    """A client's ``get`` over a few objects by kind and name."""

    def __init__(self, *objects: dict[str, object]) -> None:
        self.objects = {(o["kind"], o["name"]): o for o in objects}

    def get(self, kind: object, namespace: str, name: str) -> dict[str, object] | None:
        return self.objects.get((getattr(kind, "kind", ""), name))


@pytest.mark.parametrize(("objects", "said", "hint"), [
    # `cluster up` of the recipe made a bringup RayCluster; `job submit` without the mode looked for a RayJob
    ([{"kind": "RayCluster", "name": "grpo-swe"}], "no RayJob rl-research/grpo-swe (the recipe's launch.mode is "
     "rayjob)", "RayCluster grpo-swe is up (bringup mode, `cluster up`): add --set launch.mode=bringup"),
    ([], "no RayJob rl-research/grpo-swe", "`dockyard-k8s run RECIPE` starts it"),
    ([{"kind": "RayJob", "name": "grpo-swe"}], "the RayJob has no RayCluster (yet)", "`dockyard-k8s status`"),
])
def test_the_ray_cluster_of_a_rayjob_run_that_is_not_there_is_said_as_it_is(
        objects: list[dict[str, object]], said: str, hint: str) -> None:
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"), Layers(env={}))
    with pytest.raises(ClusterError) as e:
        ray_cluster_name(_Objects(*objects), bundle)  # type: ignore[arg-type]
    assert str(e.value).startswith(said) and hint in e.value.hint
