"""The fake API server honours the documented Kubernetes semantics the launcher relies on.

Each test names the behaviour of a real API server it checks (Kubernetes API concepts:
"Server-Side Apply", "Efficient detection of changes", "Labels and Selectors",
"Field Selectors"), and talks to the fake with a raw HTTP client, not launcher code.
"""

from __future__ import annotations

import json
import threading

import httpx2
import pytest
from fakekube import FakeKube

APPLY = {"Content-Type": "application/apply-patch+yaml"}
CM = "/api/v1/namespaces/default/configmaps"


def cm(name: str, labels: dict[str, str] | None = None, data: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}}, "data": data or {"k": "v"}}


def apply(http: httpx2.Client, obj: dict, manager: str = "me", **params: str) -> httpx2.Response:
    return http.patch(f"{CM}/{obj['metadata']['name']}", params={"fieldManager": manager, **params},
                      headers=APPLY, content=json.dumps(obj))


def test_get_missing_is_404_status(http: httpx2.Client) -> None:
    r = http.get(f"{CM}/nope")
    assert r.status_code == 404
    assert r.json()["kind"] == "Status" and r.json()["reason"] == "NotFound"


def test_unserved_resource_is_404(http: httpx2.Client) -> None:
    fake_no_crds = FakeKube(crds=False)
    with httpx2.Client(transport=fake_no_crds, base_url="https://x") as c:
        assert c.get("/apis/ray.io/v1/namespaces/default/rayjobs").status_code == 404
    assert http.get("/apis/ray.io/v1/namespaces/default/rayjobs").status_code == 200


def test_create_201_then_409(http: httpx2.Client) -> None:
    assert http.post(CM, json=cm("a")).status_code == 201
    r = http.post(CM, json=cm("a"))
    assert r.status_code == 409 and r.json()["reason"] == "AlreadyExists"


def test_apply_creates_then_updates(http: httpx2.Client) -> None:
    r = apply(http, cm("a"))
    assert r.status_code == 201
    rv = r.json()["metadata"]["resourceVersion"]
    r2 = apply(http, cm("a", data={"k": "changed"}))
    assert r2.status_code == 200
    assert r2.json()["data"] == {"k": "changed"}
    assert int(r2.json()["metadata"]["resourceVersion"]) > int(rv)


def test_apply_noop_keeps_resource_version(http: httpx2.Client) -> None:
    rv = apply(http, cm("a")).json()["metadata"]["resourceVersion"]
    assert apply(http, cm("a")).json()["metadata"]["resourceVersion"] == rv


def test_apply_requires_field_manager_and_content_type(http: httpx2.Client) -> None:
    r = http.patch(f"{CM}/a", headers=APPLY, content=json.dumps(cm("a")))
    assert r.status_code == 400 and "fieldManager is required" in r.json()["message"]
    r = http.patch(f"{CM}/a", params={"fieldManager": "me"}, headers={"Content-Type": "text/plain"},
                   content=json.dumps(cm("a")))
    assert r.status_code == 415


def test_apply_name_mismatch_is_400(http: httpx2.Client) -> None:
    r = http.patch(f"{CM}/other", params={"fieldManager": "me"}, headers=APPLY, content=json.dumps(cm("a")))
    assert r.status_code == 400


def test_apply_dry_run_persists_nothing(http: httpx2.Client) -> None:
    assert apply(http, cm("a"), dryRun="All").status_code == 201
    assert http.get(f"{CM}/a").status_code == 404


def test_apply_conflict_with_other_manager_unless_forced(http: httpx2.Client) -> None:
    apply(http, cm("a", data={"k": "mine"}), manager="first")
    r = apply(http, cm("a", data={"k": "theirs"}), manager="second")
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    r = apply(http, cm("a", data={"k": "theirs"}), manager="second", force="true")
    assert r.status_code == 200 and r.json()["data"]["k"] == "theirs"


def test_apply_removes_fields_the_manager_no_longer_sets(http: httpx2.Client) -> None:
    apply(http, cm("a", data={"k": "v", "old": "x"}))
    r = apply(http, cm("a", data={"k": "v"}))
    assert r.json()["data"] == {"k": "v"}


def test_label_selectors(http: httpx2.Client) -> None:
    apply(http, cm("a", {"run": "x", "fleet": "head"}))
    apply(http, cm("b", {"run": "x", "fleet": "trainer"}))
    apply(http, cm("c", {"run": "y"}))

    def names(selector: str) -> list[str]:
        r = http.get(CM, params={"labelSelector": selector})
        assert r.status_code == 200, r.text
        return [i["metadata"]["name"] for i in r.json()["items"]]

    assert names("run=x") == ["a", "b"]
    assert names("run==x,fleet=head") == ["a"]
    assert names("run!=x") == ["c"]
    assert names("fleet in (trainer,inference)") == ["b"]
    assert names("fleet notin (trainer)") == ["a", "c"]
    assert names("fleet") == ["a", "b"]
    assert names("!fleet") == ["c"]
    assert names("run=z") == []


def test_bad_label_selector_is_400(http: httpx2.Client) -> None:
    assert http.get(CM, params={"labelSelector": "a in b"}).status_code == 400


def test_field_selectors_only_supported_fields(http: httpx2.Client) -> None:
    apply(http, cm("a"))
    apply(http, cm("b"))
    r = http.get(CM, params={"fieldSelector": "metadata.name=b"})
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["b"]
    assert http.get(CM, params={"fieldSelector": "data.k=v"}).status_code == 400
    assert http.get("/api/v1/namespaces/default/events", params={"fieldSelector": "type=Warning"}).status_code == 200


def test_list_has_resource_version_and_namespace_scope(http: httpx2.Client, fake: FakeKube) -> None:
    apply(http, cm("a"))
    fake.put({**cm("elsewhere"), "metadata": {"name": "elsewhere", "namespace": "rl-research"}})
    doc = http.get(CM).json()
    assert doc["metadata"]["resourceVersion"] == str(fake.rv)
    assert [i["metadata"]["name"] for i in doc["items"]] == ["a"]
    everywhere = http.get("/api/v1/configmaps").json()
    assert sorted(i["metadata"]["name"] for i in everywhere["items"]) == ["a", "elsewhere"]


def _watch_lines(http: httpx2.Client, params: dict[str, str], count: int) -> list[dict]:
    out: list[dict] = []
    with http.stream("GET", CM, params={"watch": "true", **params}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            out.append(json.loads(line))
            if len(out) >= count:
                break
    return out


def test_watch_from_resource_version_sees_only_later_events(http: httpx2.Client, fake: FakeKube) -> None:
    apply(http, cm("before", {"run": "x"}))
    rv = http.get(CM).json()["metadata"]["resourceVersion"]
    apply(http, cm("after", {"run": "x"}))
    events = _watch_lines(http, {"resourceVersion": rv, "labelSelector": "run=x"}, 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after")]


def test_watch_without_resource_version_starts_with_current_state(http: httpx2.Client) -> None:
    apply(http, cm("a"))
    events = _watch_lines(http, {}, 1)
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "a"


def test_watch_label_transitions(http: httpx2.Client, fake: FakeKube) -> None:
    apply(http, cm("a", {"run": "x"}))
    rv = http.get(CM).json()["metadata"]["resourceVersion"]
    apply(http, cm("a", {"run": "y"}))  # leaves the selector: DELETED for this watch
    apply(http, cm("a", {"run": "x"}))  # back in: ADDED
    events = _watch_lines(http, {"resourceVersion": rv, "labelSelector": "run=x"}, 2)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_watch_blocks_until_a_change(http: httpx2.Client, fake: FakeKube) -> None:
    rv = http.get(CM).json()["metadata"]["resourceVersion"]
    got: list[dict] = []
    t = threading.Thread(target=lambda: got.extend(_watch_lines(http, {"resourceVersion": rv}, 1)))
    t.start()
    fake.wait_watching("configmaps")
    assert got == []
    apply(http, cm("late"))
    t.join(timeout=10)
    assert got and got[0]["object"]["metadata"]["name"] == "late"


def test_watch_from_compacted_version_is_410(http: httpx2.Client, fake: FakeKube) -> None:
    apply(http, cm("a"))
    old = http.get(CM).json()["metadata"]["resourceVersion"]
    apply(http, cm("b"))
    fake.compact()
    events = _watch_lines(http, {"resourceVersion": str(int(old) - 1)}, 1)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    fake.gone_as_http = True
    r = http.get(CM, params={"watch": "true", "resourceVersion": str(int(old) - 1)})
    assert r.status_code == 410 and r.json()["reason"] == "Expired"


def test_watch_ends_at_server_timeout(http: httpx2.Client, fake: FakeKube) -> None:
    fake.max_watch_seconds = 0.1
    rv = http.get(CM).json()["metadata"]["resourceVersion"]
    with http.stream("GET", CM, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}) as r:
        assert list(r.iter_lines()) == []


def test_delete_404_then_cascade_by_owner(http: httpx2.Client, fake: FakeKube) -> None:
    assert http.delete(f"{CM}/nope").status_code == 404
    owner = fake.put(cm("owner"))
    fake.put({**cm("owned"), "metadata": {"name": "owned", "namespace": "default", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]}})
    fake.put({**cm("orphan-owned"), "metadata": {"name": "orphan-owned", "namespace": "default"}})
    assert http.delete(f"{CM}/owner", params={"propagationPolicy": "Background"}).status_code == 200
    assert http.get(f"{CM}/owned").status_code == 404
    assert http.get(f"{CM}/orphan-owned").status_code == 200


def test_delete_orphan_keeps_dependents_and_dry_run_keeps_all(http: httpx2.Client, fake: FakeKube) -> None:
    owner = fake.put(cm("owner"))
    fake.put({**cm("owned"), "metadata": {"name": "owned", "namespace": "default", "ownerReferences": [
        {"uid": owner["metadata"]["uid"]}]}})
    assert http.delete(f"{CM}/owner", params={"dryRun": "All"}).status_code == 200
    assert http.get(f"{CM}/owner").status_code == 200
    http.delete(f"{CM}/owner", params={"propagationPolicy": "Orphan"})
    assert http.get(f"{CM}/owned").status_code == 200


def pod(name: str, containers: tuple[str, ...] = ("main",)) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": c, "image": "x"} for c in containers]}}


def test_logs_container_rules(http: httpx2.Client, fake: FakeKube) -> None:
    fake.put(pod("one"))
    fake.put(pod("two", ("a", "b")))
    fake.add_log("default", "one", "main", ["l1", "l2", "l3"])
    logs = "/api/v1/namespaces/default/pods/{}/log"
    assert http.get(logs.format("one")).text == "l1\nl2\nl3\n"
    assert http.get(logs.format("one"), params={"tailLines": "2"}).text == "l2\nl3\n"
    r = http.get(logs.format("two"))
    assert r.status_code == 400 and "a container name must be specified" in r.json()["message"]
    assert http.get(logs.format("missing")).status_code == 404
    r = http.get(logs.format("one"), params={"previous": "true"})
    assert r.status_code == 400 and "previous terminated container" in r.json()["message"]


def test_logs_since_seconds(http: httpx2.Client, fake: FakeKube) -> None:
    fake.put(pod("one"))
    fake.add_log("default", "one", "main", ["old"], at=fake.now - 3600)
    fake.add_log("default", "one", "main", ["new"], at=fake.now - 5)
    assert http.get("/api/v1/namespaces/default/pods/one/log", params={"sinceSeconds": "60"}).text == "new\n"


def test_logs_follow_streams_until_container_ends(http: httpx2.Client, fake: FakeKube) -> None:
    fake.put(pod("one"))
    fake.add_log("default", "one", "main", ["first"])
    got: list[str] = []

    def reader() -> None:
        with http.stream("GET", "/api/v1/namespaces/default/pods/one/log", params={"follow": "true"}) as r:
            got.extend(r.iter_lines())

    t = threading.Thread(target=reader)
    t.start()
    fake.wait_for(lambda: got == ["first"])  # the stream is open and caught up
    fake.add_log("default", "one", "main", ["second"])
    fake.end_logs("default", "one", "main")
    t.join(timeout=10)
    assert got == ["first", "second"]


def test_access_review_and_version(http: httpx2.Client, fake: FakeKube) -> None:
    fake.deny("delete", "rayjobs")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "delete", "resource": "rayjobs", "group": "ray.io"}}}
    r = http.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review)
    assert r.status_code == 201 and r.json()["status"]["allowed"] is False
    review["spec"]["resourceAttributes"]["verb"] = "get"
    assert http.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review).json()["status"][
        "allowed"] is True
    assert http.get("/version").json()["minor"] == "31"


def test_injected_faults(http: httpx2.Client, fake: FakeKube) -> None:
    fake.fail(status_code=429, retry_after="1", times=1)
    r = http.get(CM)
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    assert http.get(CM).status_code == 200
    fake.fail(reset=True)
    with pytest.raises(httpx2.ReadError):
        http.get(CM)


def _pods(fake: FakeKube, n: int, ns: str = "default", labels: dict[str, str] | None = None) -> None:
    for i in range(n):
        fake.put({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"p{i:05d}", "namespace": ns, "labels": labels or {"app": "x"}}})


def test_list_chunks_with_limit_and_continue(http: httpx2.Client, fake: FakeKube) -> None:
    """API concepts, "Retrieving large results sets in chunks": at most `limit` items, a
    `continue` token while more remain, every chunk at the first chunk's resourceVersion
    (later writes are not seen), `remainingItemCount` only without selectors."""
    _pods(fake, 7)
    url = "/api/v1/namespaces/default/pods"
    first = http.get(url, params={"limit": "3"}).json()
    assert [p["metadata"]["name"] for p in first["items"]] == ["p00000", "p00001", "p00002"]
    assert first["metadata"]["remainingItemCount"] == 4
    rv = first["metadata"]["resourceVersion"]
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p00006", "namespace": "default",
                                                                "labels": {"app": "changed"}}})
    fake.remove("v1", "Pod", "default", "p00005")
    second = http.get(url, params={"limit": "3", "continue": first["metadata"]["continue"]}).json()
    third = http.get(url, params={"limit": "3", "continue": second["metadata"]["continue"]}).json()
    assert [p["metadata"]["name"] for p in second["items"] + third["items"]] == [
        "p00003", "p00004", "p00005", "p00006"]  # the snapshot: p00005 still there, p00006 unchanged
    assert third["items"][0]["metadata"]["labels"] == {"app": "x"}
    assert {second["metadata"]["resourceVersion"], third["metadata"]["resourceVersion"]} == {rv}
    assert "continue" not in third["metadata"] and "remainingItemCount" not in third["metadata"]
    selected = http.get(url, params={"limit": "2", "labelSelector": "app=x"}).json()
    assert len(selected["items"]) == 2 and "remainingItemCount" not in selected["metadata"]
    assert "continue" not in http.get(url).json()["metadata"]  # no limit: everything at once


def test_list_continue_rules(http: httpx2.Client, fake: FakeKube) -> None:
    """A token is bound to its list (selectors changed: 400), garbage is 400, and a token
    from before a compaction is 410 Expired; an API server may return fewer than `limit`."""
    _pods(fake, 5)
    url = "/api/v1/namespaces/default/pods"
    token = http.get(url, params={"limit": "2"}).json()["metadata"]["continue"]
    assert http.get(url, params={"limit": "2", "continue": token, "labelSelector": "app=y"}).status_code == 400
    assert http.get(url, params={"limit": "2", "continue": "%%%"}).status_code == 400
    fake.compact()
    r = http.get(url, params={"limit": "2", "continue": token})
    assert r.status_code == 410 and r.json()["reason"] == "Expired"
    fake.max_page = 2
    capped = http.get(url, params={"limit": "500"}).json()
    assert len(capped["items"]) == 2 and capped["metadata"]["continue"]
    assert len(http.get(url).json()["items"]) == 5  # without a limit: everything
    fake.slow_list_over = 4
    r = http.get(url)
    assert r.status_code == 504 and r.json()["reason"] == "Timeout"
    assert http.get(url, params={"limit": "2"}).status_code == 200
