"""Exact requests (as sent, through lightkube's request pipeline): paths, server-side apply headers and
parameters, selectors, dry run, apply order."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import httpx2
import pytest
from live_helpers import Recorder

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.live import client as client_mod
from dockyard_k8s.live.kinds import KINDS, kind_for
from support.paths import EXAMPLES

RAYJOB = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "namespace": "ns"}, "spec": {}}


@pytest.mark.parametrize(("api_version", "kind", "ns", "path"), [
    ("v1", "Pod", "ns", "/api/v1/namespaces/ns/pods/x"),
    ("apps/v1", "Deployment", "ns", "/apis/apps/v1/namespaces/ns/deployments/x"),
    ("ray.io/v1", "RayJob", "ns", "/apis/ray.io/v1/namespaces/ns/rayjobs/x"),
    ("networking.k8s.io/v1", "NetworkPolicy", "ns", "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/x"),
    ("v1", "Node", "ns", "/api/v1/nodes/x"),  # cluster-scoped: the namespace is ignored
    ("scheduling.k8s.io/v1", "PriorityClass", None, "/apis/scheduling.k8s.io/v1/priorityclasses/x"),
    ("kubeflow.org/v2beta1", "MPIJob", "ns", "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/x"),
    ("example.com/v1", "Ingress", "ns", "/apis/example.com/v1/namespaces/ns/ingresses/x"),  # conventional plural
    ("example.com/v1", "Policy", "ns", "/apis/example.com/v1/namespaces/ns/policies/x"),
])
def test_object_paths(make_client: Any, recorder: Recorder, api_version: str, kind: str, ns: str | None,
                      path: str) -> None:
    assert make_client(recorder).get(kind_for(api_version, kind), ns, "x") is None  # the recorder's 404
    assert recorder.requests[0].url.path == path


def test_collection_paths_and_resource_names(make_client: Any) -> None:
    recorder = Recorder(lambda r: httpx2.Response(200, json={"metadata": {}, "items": []}))
    client = make_client(recorder)
    client.list(KINDS["Pod"], None)  # every namespace
    client.list(KINDS["Event"], "ns")
    client.list(KINDS["Node"], "ns")
    assert [r.url.path for r in recorder.requests] == ["/api/v1/pods", "/api/v1/namespaces/ns/events",
                                                        "/api/v1/nodes"]
    assert KINDS["RayJob"].resource == "rayjobs.ray.io" and KINDS["Pod"].resource == "pods"


def test_apply_is_server_side_apply(make_client: Any, recorder: Recorder) -> None:
    client = make_client(recorder)
    client.apply(RAYJOB)
    client.apply(RAYJOB, force=True, dry_run=True)
    req, forced = recorder.requests
    assert (req.method, req.url.path) == ("PATCH", "/apis/ray.io/v1/namespaces/ns/rayjobs/r")
    assert req.headers["Content-Type"] == "application/apply-patch+yaml"
    assert dict(req.url.params) == {"fieldManager": "dockyard-k8s", "fieldValidation": "Strict"}
    assert json.loads(req.content) == RAYJOB
    assert dict(forced.url.params) == {"fieldManager": "dockyard-k8s", "fieldValidation": "Strict", "force": "true",
                                       "dryRun": "All"}


def test_list_watch_delete_logs_and_access_review_requests(make_client: Any) -> None:
    stop = threading.Event()

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch"):
            stop.set()  # the watch is ended while its stream is open: it opens no other
            return httpx2.Response(200, content=b"")
        if request.url.path.endswith("/log"):
            return httpx2.Response(200, text="a line\n")
        if request.method == "POST":
            return httpx2.Response(201, json={**json.loads(request.content), "status": {"allowed": True}})
        return httpx2.Response(200, json={"metadata": {"resourceVersion": "42"}, "items": []})

    recorder = Recorder(answer)
    client = make_client(recorder)
    client.list(KINDS["Pod"], "ns", label_selector="a=1,b=2")
    assert [e.type for e in client.watch(KINDS["Pod"], "ns", label_selector="a=1,b=2", stop=stop)] == ["SYNC"]
    assert client.delete(KINDS["RayJob"], "ns", "r", dry_run=True)
    assert client.pod_log("ns", "p", container="c", tail=5, since=60) == "a line\n"
    assert client.can_i("patch", "rayjobs", group="ray.io", namespace="ns")
    lst, _, w, d, lg, rev = recorder.requests
    assert (lst.method, lst.url.path, dict(lst.url.params)) == ("GET", "/api/v1/namespaces/ns/pods",
                                                                {"labelSelector": "a=1,b=2", "limit": "500"})
    assert dict(w.url.params) == {"watch": "true", "labelSelector": "a=1,b=2", "resourceVersion": "42",
                                  "allowWatchBookmarks": "true",
                                  "timeoutSeconds": str(client_mod.WATCH_TIMEOUT_SECONDS)}
    assert (d.method, dict(d.url.params)) == ("DELETE", {"propagationPolicy": "Background", "dryRun": "All"})
    assert lg.url.path == "/api/v1/namespaces/ns/pods/p/log"
    assert dict(lg.url.params) == {"container": "c", "tailLines": "5", "sinceSeconds": "60"}
    assert rev.url.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    assert json.loads(rev.content)["spec"]["resourceAttributes"] == {
        "namespace": "ns", "verb": "patch", "group": "ray.io", "resource": "rayjobs"}


def _bundle(*sets: str) -> Any:
    return build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                        Layers(sets=sets, env=os.environ))


@pytest.mark.parametrize("dry_run", [False, True])
def test_apply_objects_sends_the_rendered_order_minus_governance(make_client: Any, recorder: Recorder,
                                                                 dry_run: bool) -> None:
    from dockyard_k8s.live.orchestrate import apply_objects

    bundle = _bundle("infra.resourceQuota.hard.pods=10", "infra.limitRange.limits=[]")
    client = make_client(recorder)
    applied = apply_objects(client, bundle.objects, dry_run=dry_run)
    patches = [r for r in recorder.requests if r.method == "PATCH"]
    if not dry_run:  # a server dry run of everything first (preflight), then the applies
        preflight, patches = patches[:len(patches) // 2], patches[len(patches) // 2:]
        assert all(r.url.params.get("dryRun") == "All" for r in preflight)
        assert [r.content for r in preflight] == [r.content for r in patches]
    expected = [o for o in bundle.objects if o["kind"] not in ("ResourceQuota", "LimitRange")]
    assert [json.loads(r.content)["kind"] for r in patches] == [o["kind"] for o in expected]
    assert [json.loads(r.content) for r in patches] == expected  # exactly what `render` prints
    for r in patches:
        assert r.headers["content-type"] == "application/apply-patch+yaml"
        assert r.url.params["fieldManager"] == "dockyard-k8s"
        assert r.url.params.get("dryRun") == ("All" if dry_run else None)
    assert [a.action.split()[0] for a in applied[:2]] == ["skipped", "skipped"]
    assert all(a.action.startswith("created") for a in applied[2:])


def test_snapshot_lists_once_per_kind_with_the_run_selector(make_client: Any) -> None:
    from dockyard_k8s.live.orchestrate import snapshot

    seen: list[Any] = []

    def handler(request: Any) -> Any:
        import httpx2

        seen.append(request)
        return httpx2.Response(200, json={"metadata": {"resourceVersion": "5"}, "items": []})

    bundle = _bundle()
    snapshot(make_client(handler), "rl-research", "grpo-swe", bundle.objects)
    paths = [(r.url.path, r.url.params.get("labelSelector"), r.url.params.get("fieldSelector")) for r in seen]
    assert paths == [
        ("/apis/ray.io/v1/namespaces/rl-research/rayjobs", "dockyard-k8s/run=grpo-swe", None),
        ("/apis/ray.io/v1/namespaces/rl-research/rayclusters", "dockyard-k8s/run=grpo-swe", None),
        ("/apis/apps/v1/namespaces/rl-research/deployments", "dockyard-k8s/run=grpo-swe", None),
        ("/api/v1/namespaces/rl-research/pods", "dockyard-k8s/run=grpo-swe", None),
        ("/api/v1/namespaces/rl-research/events", None, "type=Warning"),
    ]
