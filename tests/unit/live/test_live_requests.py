"""Exact requests: paths, server-side apply headers and parameters, selectors, dry run, apply order."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from live_helpers import Recorder

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.live import requests as rq
from dockyard_k8s.live.kinds import KINDS, collection_path, kind_for, object_path
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
def test_object_paths(api_version: str, kind: str, ns: str | None, path: str) -> None:
    assert object_path(kind_for(api_version, kind), ns, "x") == path


def test_collection_paths_and_resource_names() -> None:
    assert collection_path(KINDS["Pod"], None) == "/api/v1/pods"
    assert collection_path(KINDS["Event"], "ns") == "/api/v1/namespaces/ns/events"
    assert KINDS["RayJob"].resource == "rayjobs.ray.io" and KINDS["Pod"].resource == "pods"


def test_prepare_apply_is_server_side_apply() -> None:
    req = rq.prepare_apply(RAYJOB)
    assert (req.method, req.path) == ("PATCH", "/apis/ray.io/v1/namespaces/ns/rayjobs/r")
    assert dict(req.headers)["Content-Type"] == "application/apply-patch+yaml"
    assert dict(req.params) == {"fieldManager": "dockyard-k8s", "fieldValidation": "Strict"}
    assert json.loads(req.body or b"") == RAYJOB
    assert req.obj == "RayJob ns/r"
    forced = rq.prepare_apply(RAYJOB, force=True, dry_run=True)
    assert dict(forced.params) == {"fieldManager": "dockyard-k8s", "fieldValidation": "Strict", "force": "true",
                                   "dryRun": "All"}


def test_prepare_list_watch_delete_logs() -> None:
    sel = rq.selector_text({"b": "2", "a": "1"})
    assert sel == "a=1,b=2"
    lst = rq.prepare_list(KINDS["Pod"], "ns", label_selector=sel)
    assert (lst.method, lst.path, lst.params) == ("GET", "/api/v1/namespaces/ns/pods", (("labelSelector", sel),))
    w = rq.prepare_watch(KINDS["Pod"], "ns", label_selector=sel, resource_version="42")
    assert dict(w.params) == {"watch": "true", "labelSelector": sel, "resourceVersion": "42",
                              "allowWatchBookmarks": "true", "timeoutSeconds": str(rq.WATCH_TIMEOUT_SECONDS)}
    assert w.stream
    d = rq.prepare_delete(KINDS["RayJob"], "ns", "r", dry_run=True)
    assert (d.method, dict(d.params)) == ("DELETE", {"propagationPolicy": "Background", "dryRun": "All"})
    lg = rq.prepare_logs("ns", "p", container="c", follow=True, tail=5, since_seconds=60, previous=False)
    assert lg.path == "/api/v1/namespaces/ns/pods/p/log"
    assert dict(lg.params) == {"container": "c", "follow": "true", "tailLines": "5", "sinceSeconds": "60"}
    rev = rq.prepare_access_review("patch", "rayjobs", group="ray.io", namespace="ns")
    assert json.loads(rev.body or b"")["spec"]["resourceAttributes"] == {
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
