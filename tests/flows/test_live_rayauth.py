"""Ray token authentication on the live side: the run's Secret (against the fake API server),
and every command that talks to the Ray dashboard against a real local Ray head started with
RAY_AUTH_MODE=token. The token never appears in what a command prints."""

from __future__ import annotations

import base64
import os
import stat
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from fakekube import FakeKube
from states import NS, RUN

from conftest import RAY_TOKEN
from dockyard_k8s.config.layering import Layers
from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
SECRET = f"{RUN}-ray-auth"


def token_of(fake: FakeKube, name: str = SECRET) -> str:
    secret = fake.get("v1", "Secret", NS, name)
    assert secret is not None
    return base64.b64decode(secret["data"]["auth_token"]).decode()


def put_secret(fake: FakeKube, name: str, token: str, ns: str = NS) -> None:
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
              "data": {"auth_token": base64.b64encode(token.encode()).decode()}})


def put_head_service(fake: FakeKube, cluster: str) -> None:
    fake.put({"apiVersion": "v1", "kind": "Service",  # what KubeRay makes for the cluster's head
              "metadata": {"name": f"{cluster}-head-svc", "namespace": NS}})


def put_cluster(fake: FakeKube, name: str, *, auth: dict[str, Any] | None = None,
                head_env: list[dict[str, Any]] | None = None) -> None:
    spec: dict[str, Any] = {"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.52.1", "env": head_env or []}]}}}}
    if auth:
        spec["authOptions"] = auth
    fake.put({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": NS},
              "spec": spec})
    put_head_service(fake, name)


# --- the run's Secret (fake API server) -------------------------------------------------------

def test_run_creates_a_random_token_secret_first_and_never_prints_it(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    token = token_of(fake)
    assert len(token) >= 32 and token not in r.out + r.err
    patches = [q.path.split("/")[-2] for q in fake.requests if q.method == "PATCH"]
    assert patches[0] == "secrets"  # before every pod that reads it
    assert f"created    Secret {NS}/{SECRET}" in r.out
    secret = fake.get("v1", "Secret", NS, SECRET)
    assert secret["metadata"]["labels"]["dockyard-k8s/run"] == RUN  # `down` finds it
    # a re-run keeps the token (a running cluster must keep working)
    again = cli("run", *ARGS, "--detach")
    assert f"unchanged  Secret {NS}/{SECRET}" in again.out and token_of(fake) == token
    # another run gets another token
    cli("run", *ARGS, "--detach", "--set", "launch.name=second")
    assert token_of(fake, "second-ray-auth") != token


def test_down_deletes_the_launchers_secret(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach")
    r = cli("down", *ARGS)
    assert r.code == 0, r.err
    assert fake.get("v1", "Secret", NS, SECRET) is None


def test_a_secret_the_infra_names_must_exist_and_nothing_is_applied_without_it(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--detach", "--set", "kuberay.auth.secretName=team-ray-token")
    assert r.code == 1
    assert f"error: Secret {NS}/team-ray-token: does not exist (kuberay.auth.secretName names it" in r.err
    assert f"kubectl -n {NS} create secret generic team-ray-token --from-literal=auth_token=" in r.err
    assert [q for q in fake.requests if q.method in ("PATCH", "POST")] == []
    put_secret(fake, "team-ray-token", "theirs-" + "y" * 30)
    assert cli("run", *ARGS, "--detach", "--set", "kuberay.auth.secretName=team-ray-token").code == 0
    assert token_of(fake, "team-ray-token") == "theirs-" + "y" * 30  # never rewritten


def test_dry_runs_say_what_would_happen(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *ARGS, "--dry-run=client")
    assert f"would create Secret {NS}/{SECRET} with a random Ray token, unless it exists" in r.out
    r = cli("run", *ARGS, "--dry-run=server")
    assert r.code == 0, r.err
    assert fake.get("v1", "Secret", NS, SECRET) is None
    assert any(q.path.endswith(f"/secrets/{SECRET}") and q.params.get("dryRun") == "All" for q in fake.requests)


def test_what_render_says_to_create_is_the_secret_run_creates(cli: Any, fake: FakeKube) -> None:
    """Issue 22 item 26: render never emits the token (its output is deterministic and lands in
    files), it emits the generator; run --dry-run and run itself deal with the same Secret."""
    import re

    rendered = cli("render", *ARGS)
    note = next(line for line in rendered.err.splitlines() if "(the Ray token) is not rendered" in line)
    ns, name, key, label = re.search(r"kubectl -n (\S+) create secret generic (\S+) --from-literal=(\w+)=.*"
                                     r"label secret \S+ (\S+)$", note).groups()
    dry = cli("run", *ARGS, "--dry-run=client")
    assert f"would create Secret {ns}/{name} with a random Ray token, unless it exists" in dry.out
    assert cli("run", *ARGS, "--detach").code == 0
    made = fake.get("v1", "Secret", ns, name)
    assert set(made["data"]) == {key}
    run_key, run_value = label.split("=")
    assert made["metadata"]["labels"][run_key] == run_value  # `down` deletes either one


def test_no_secret_without_token_auth_or_in_attach_mode(cli: Any, fake: FakeKube) -> None:
    cli("run", *ARGS, "--detach", "--set", "kuberay.auth.mode=disabled")
    assert fake.get("v1", "Secret", NS, SECRET) is None


def test_where_the_token_comes_from() -> None:
    from dockyard_k8s.live.rayhead import RayTarget, cluster_secret, token_source

    assert cluster_secret({"metadata": {"name": "rc"}, "spec": {"authOptions": {"mode": "token"}}}) == \
        ("rc", "auth_token")  # the operator's own Secret is named after the cluster
    named = {"mode": "token", "secretName": "s"}
    assert cluster_secret({"metadata": {"name": "rc"}, "spec": {"authOptions": named}}) == ("s", "auth_token")
    env_ref = {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "mine", "key": "tok"}}}
    assert cluster_secret({"metadata": {"name": "rc"}, "spec": {"headGroupSpec": {"template": {"spec": {
        "containers": [{"name": "ray-head", "env": [env_ref]}]}}}}}) == ("mine", "tok")  # pruned authOptions
    assert cluster_secret({"metadata": {"name": "rc"}, "spec": {}}) is None
    assert token_source(RayTarget(address="http://x:8265"), None, None, env={"RAY_AUTH_TOKEN": "t"}).env
    assert token_source(RayTarget(address="http://x:8265"), None, None, env={}) is None
    assert token_source(RayTarget(), None, None, env={}) is None


def test_doctor_checks_the_secret_verbs_only_when_the_run_reads_a_token() -> None:
    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.live.doctor import needed_access
    from dockyard_k8s.live.rayhead import reads_token

    for mode, expected in (("token", True), ("disabled", False)):
        objects = build_bundle(ARGS[0], ARGS[2], Layers(sets=[f"kuberay.auth.mode={mode}"], env={"HOME": "/x"})).objects
        assert any(reads_token(o) for o in objects) is expected
        verbs = {(v, res) for v, _, res, sub, _, _ in needed_access(objects) if not sub}
        assert (("get", "secrets") in verbs and ("patch", "secrets") in verbs) is expected


# --- the Ray dashboard commands against a real head with token auth ---------------------------

slow = pytest.mark.slow


@pytest.fixture
def kubectl_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A `kubectl` whose port-forward "forwards" to a given local Ray head."""

    def make(url: str) -> None:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        script = bindir / "kubectl"
        script.write_text(f"#!/bin/sh\necho 'Forwarding from 127.0.0.1:{urlparse(url).port} -> 8265'\nexec sleep 300\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    return make


@slow
def test_job_commands_by_address_need_the_token(cli: Any, ray_head_token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    r = cli("job", "list", "--address", ray_head_token)
    assert r.code == 1
    assert f"error: Ray dashboard: the Ray head at {ray_head_token} requires a token and none was found" in r.err
    assert "export RAY_AUTH_TOKEN" in r.err
    monkeypatch.setenv("RAY_AUTH_TOKEN", "wrong-" + "z" * 30)
    r = cli("job", "list", "--address", ray_head_token)
    assert r.code == 1 and "Ray dashboard answered 403" in r.err and "was refused" in r.err
    monkeypatch.setenv("RAY_AUTH_TOKEN", RAY_TOKEN)
    r = cli("job", "submit", "--address", ray_head_token, "--entrypoint", "echo authenticated-run", "--wait")
    assert r.code == 0, r.out + r.err
    assert "authenticated-run" in r.out and "SUCCEEDED" in r.out
    job_id = r.out.split("submitted job ")[1].split()[0]
    listed = cli("job", "list", "--address", ray_head_token)
    assert job_id in listed.out
    assert "authenticated-run" in cli("job", "logs", "--address", ray_head_token, "--job", job_id).out
    started = cli("job", "submit", "--address", ray_head_token, "--entrypoint", "sleep 120")
    sid = started.out.split("submitted job ")[1].split()[0]
    assert "stop requested" in cli("job", "stop", "--address", ray_head_token, "--job", sid).out
    for res in (r, listed, started):
        assert RAY_TOKEN not in res.out + res.err


@slow
def test_the_run_reads_its_token_from_its_secret(cli: Any, fake: FakeKube, ray_head_token: str, kubectl_to: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    kubectl_to(ray_head_token)
    bringup = [*ARGS, "--set", "launch.mode=bringup"]
    put_secret(fake, SECRET, RAY_TOKEN)  # as `cluster up` left it
    put_head_service(fake, RUN)
    r = cli("job", "submit", *bringup, "--entrypoint", "echo via-secret", "--wait")
    assert r.code == 0, r.out + r.err
    assert "via-secret" in r.out and RAY_TOKEN not in r.out + r.err
    # --cluster NAME: the RayCluster says where its token is (authOptions, or its env when an old CRD pruned it)
    put_cluster(fake, "shared", auth={"mode": "token", "secretName": "shared-token"})
    put_secret(fake, "shared-token", RAY_TOKEN)
    assert cli("job", "list", "--cluster", "shared", "-n", NS).code == 0
    put_cluster(fake, "old-operator", head_env=[{"name": "RAY_AUTH_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "shared-token", "key": "auth_token"}}}])
    assert cli("job", "list", "--cluster", "old-operator", "-n", NS).code == 0
    # attach mode: `run` submits with the attached cluster's token
    run = cli("run", *ARGS, "--set", "launch.mode=attach", "--set", "launch.attach.cluster=shared",
              "--set", "launch.entrypoint=echo attached with {recipe}")
    assert run.code == 0, run.out + run.err
    assert "attached with " in run.out and "SUCCEEDED" in run.out and RAY_TOKEN not in run.out + run.err
    # cluster dashboard: checks the token is accepted, says how to read it, never prints it
    import threading

    real_wait = threading.Event.wait

    def interrupted(self: threading.Event, timeout: float | None = None) -> bool:
        if sys._getframe(1).f_code.co_name == "cluster_dashboard":
            raise KeyboardInterrupt  # the user's Ctrl-C, instead of waiting forever
        return real_wait(self, timeout)

    monkeypatch.setattr(threading.Event, "wait", interrupted)
    dash = cli("cluster", "dashboard", *bringup)
    assert dash.code == 0, dash.out + dash.err
    assert (f"Ray token auth: the dashboard asks for the token once; kubectl -n {NS} get secret {SECRET} -o "
            "jsonpath='{.data.auth_token}' | base64 -d") in dash.out
    assert RAY_TOKEN not in dash.out + dash.err
    put_secret(fake, SECRET, "stale-" + "w" * 30)  # the Secret changed after the cluster started
    dash = cli("cluster", "dashboard", *bringup)
    assert dash.code == 1 and "Ray dashboard answered 403" in dash.err


@slow
def test_a_head_without_token_auth_is_reported(cli: Any, ray_head: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    r = cli("job", "list", "--address", ray_head)
    assert r.code == 0
    assert f"warning: the Ray head at {ray_head} does not require a token (authentication_mode: disabled)" in r.err


# --- run checks that the head refuses a request without the token (issue 22 item 20) -------------

def proxy_pods_to(fake: FakeKube, monkeypatch: pytest.MonkeyPatch, head: str) -> None:
    """The API server's pods/proxy, played by the test: a request to
    /api/v1/namespaces/NS/pods/NAME:8265/proxy/PATH reaches the local Ray head without the
    caller's Authorization header (kube-apiserver drops it once it has authenticated the caller)."""
    import re

    import httpx2

    real = fake.handle_request

    def handle(request: httpx2.Request) -> httpx2.Response:
        found = re.fullmatch(r"/api/v1/namespaces/[^/]+/pods/[^/]+:8265/proxy(/.*)", request.url.path)
        if not found:
            return real(request)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("authorization", "host")}
        answer = httpx2.request(request.method, head + found.group(1), headers=headers, timeout=30)
        return httpx2.Response(answer.status_code, content=answer.content,
                               headers={"Content-Type": answer.headers.get("content-type", "text/plain")})

    monkeypatch.setattr(fake, "handle_request", handle)


@slow
@pytest.mark.parametrize("head", ["ray_head_token", "ray_head"])
def test_run_checks_that_the_head_refuses_a_request_without_the_token(cli: Any, fake: FakeKube, head: str,
                                                                      request: pytest.FixtureRequest,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A real Ray head behind the run's head pod: one started with RAY_AUTH_MODE=token, and one
    without (what an image with Ray < 2.52 is, whatever the environment says)."""
    from flowkit import in_background, wait_following, wait_output
    from states import set_job, start_cluster

    proxy_pods_to(fake, monkeypatch, request.getfixturevalue(head))
    protected = head == "ray_head_token"

    def operator() -> None:
        fake.wait_for(lambda: fake.get("ray.io/v1", "RayJob", NS, RUN))
        wait_following(fake)
        set_job(fake, "Initializing")
        start_cluster(fake)
        set_job(fake, "Running", "RUNNING")
        if protected:
            wait_output(fake, "refuses a request without the token", timeout=120)
            set_job(fake, "Complete", "SUCCEEDED")

    t = in_background(operator)
    r = cli("run", *ARGS, "--timeout", "150")  # bounded: without the check nothing would end the open case
    t.join(10)
    assert not t.errors
    head_pod = f"{RUN}-abcde-head-x1"
    if protected:
        assert r.code == 0, r.out + r.err
        assert f"✔ the Ray head {head_pod} refuses a request without the token (GET /api/jobs/: HTTP 401)" in r.out
        assert "✔ succeeded" in r.out
    else:
        assert r.code == 1
        assert f"✖ the Ray head {head_pod} answered a request without the token (GET /api/jobs/: HTTP 200): Ray " \
               "token authentication is OFF" in r.out
        assert fake.get("ray.io/v1", "RayJob", NS, RUN) is not None  # the run is left as is, and said so
        assert "dockyard-k8s down" in r.out


@slow
def test_an_attached_head_that_answers_without_the_token_gets_no_job(cli: Any, ray_head: str,
                                                                       ray_head_token: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_TOKEN", RAY_TOKEN)
    attach = ["--set", "launch.mode=attach", "--set", "launch.entrypoint=echo attached"]
    r = cli("run", *ARGS, *attach, "--set", f"launch.attach.address={ray_head}")
    assert r.code == 1
    assert f"the Ray head at {ray_head} answered a request without the token (GET /api/jobs/: HTTP 200): Ray token " \
           "authentication is OFF" in r.err
    assert "nothing was submitted" in r.err and "submitted job" not in r.out
    ok = cli("run", *ARGS, *attach, "--set", f"launch.attach.address={ray_head_token}")
    assert ok.code == 0, ok.out + ok.err
    # a run that does not ask for token auth is not held to it
    off = cli("run", *ARGS, *attach, "--set", f"launch.attach.address={ray_head}", "--set",
              "kuberay.auth.mode=disabled")
    assert off.code == 0, off.out + off.err


# --- run --detach and the head's check (issue 22 item 20) -------------------------------------------

def answer_proxy(fake: FakeKube, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    """The head pod's dashboard behind the API server's pods/proxy, answering ``status`` to a request
    without the token (401: token auth on; 200: an image whose Ray ignores RAY_AUTH_MODE)."""
    import re

    import httpx2

    real = fake.handle_request

    def handle(request: httpx2.Request) -> httpx2.Response:
        if re.fullmatch(r"/api/v1/namespaces/[^/]+/pods/[^/]+:8265/proxy/.*", request.url.path):
            return httpx2.Response(status, content=b"[]" if status == 200 else b"Unauthorized")
        return real(request)

    monkeypatch.setattr(fake, "handle_request", handle)


def test_run_detach_says_the_head_was_not_checked_and_how_to_check_it(cli: Any, fake: FakeKube) -> None:
    """A detached run returns before its head pod is Ready: it says, in one line, that the head's
    refusal of a request without the token was not checked, and which command checks it."""
    r = cli("run", *ARGS, "--detach")
    assert r.code == 0, r.err
    (line,) = [x for x in r.err.splitlines() if "refuses a request without the token" in x]
    assert "not checked" in line and "`dockyard-k8s job list`" in line
    off = cli("run", *ARGS, "--detach", "--set", "kuberay.auth.mode=disabled", "--set", "launch.name=open")
    assert off.code == 0 and "refuses a request without the token" not in off.out + off.err


@pytest.mark.parametrize(("status", "code"), [(401, 0), (200, 1)])
def test_run_detach_checks_a_head_that_is_already_ready(cli: Any, fake: FakeKube, monkeypatch: pytest.MonkeyPatch,
                                                        status: int, code: int) -> None:
    from states import start_cluster

    assert cli("run", *ARGS, "--detach").code == 0
    start_cluster(fake)  # the head pod is Ready: a re-run asks it, as a followed run does
    answer_proxy(fake, monkeypatch, status)
    r = cli("run", *ARGS, "--detach")
    assert r.code == code, r.out + r.err
    head = f"{RUN}-abcde-head-x1"
    if status == 401:
        assert f"✔ the Ray head {head} refuses a request without the token (GET /api/jobs/: HTTP 401)" in r.out
        assert "not checked" not in r.err
    else:
        assert f"✖ the Ray head {head} answered a request without the token" in r.out and "dockyard-k8s down" in r.out
