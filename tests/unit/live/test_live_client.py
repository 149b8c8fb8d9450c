"""KubeClient: retries with backoff, error mapping naming the object, watch re-list, kubeconfig."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.client import connect
from dockyard_k8s.live.kinds import KINDS

OK_LIST = {"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "a"}}]}


def scripted(*answers: Any) -> Any:
    """A handler answering with each of ``answers`` in turn (a Response or an exception to raise)."""
    queue = list(answers)
    calls: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    handler.calls = calls  # type: ignore[attr-defined]
    return handler


def status(code: int, reason: str, message: str) -> httpx2.Response:
    return httpx2.Response(code, json={"kind": "Status", "code": code, "reason": reason, "message": message})


def test_retries_429_with_retry_after_then_5xx_then_reset(make_client: Any) -> None:
    sleeps: list[float] = []
    handler = scripted(httpx2.Response(429, headers={"Retry-After": "3"}), status(503, "ServiceUnavailable", "x"),
                       httpx2.ReadError("connection reset by peer"), httpx2.Response(200, json=OK_LIST))
    items, rv = make_client(handler, sleeps).list(KINDS["Pod"], "ns")
    assert [i["metadata"]["name"] for i in items] == ["a"] and rv == "7"
    assert items[0]["kind"] == "Pod"  # list items get their kind back
    assert sleeps == [3.0, 0.4, 0.8]  # Retry-After honoured, then exponential backoff
    assert len(handler.calls) == 4


def test_retries_are_bounded(make_client: Any) -> None:
    handler = scripted(*[status(503, "ServiceUnavailable", "down")] * 3)
    with pytest.raises(ClusterError) as e:
        make_client(handler, max_retries=2).get(KINDS["RayJob"], "ns", "r")
    assert e.value.status == 503 and e.value.obj == "RayJob ns/r"
    handler = scripted(*[httpx2.ConnectError("refused")] * 3)
    with pytest.raises(ClusterError) as e:
        make_client(handler, max_retries=2).version()
    assert "cannot reach the API server" in str(e.value) and e.value.hint


@pytest.mark.parametrize(("code", "reason", "hint_word"), [
    (401, "Unauthorized", "credentials"),
    (403, "Forbidden", "RBAC"),
    (404, "NotFound", "KubeRay"),
    (409, "Conflict", "--force-conflicts"),
    (422, "Invalid", "invalid"),
])
def test_api_errors_name_the_object_and_hint(make_client: Any, code: int, reason: str, hint_word: str) -> None:
    handler = scripted(status(code, reason, f"rayjobs.ray.io \"r\" is {reason.lower()}"))
    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "namespace": "ns"}}
    with pytest.raises(ClusterError) as e:
        make_client(handler).apply(obj)
    rendered = e.value.render()
    assert rendered.startswith("error: RayJob ns/r: ")
    assert e.value.status == code and hint_word in rendered


def test_an_immutable_field_is_said_without_the_whole_object_go_prints() -> None:
    """The API server's 422 for a changed Job pod template prints the whole template (~6,000
    characters, as on the e2e control plane); its causes say the field and why."""
    from dockyard_k8s.live.answers import api_error

    value = "{" + ", ".join(f'"Field{i}": "x: y"' for i in range(300)) + "}"
    body = json.dumps({"kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
                       "message": f'Job.batch "my" is invalid: spec.template: Invalid value: {value}: field is '
                                  'immutable',
                       "details": {"name": "my", "kind": "jobs", "causes": [
                           {"reason": "FieldValueInvalid", "message": f"Invalid value: {value}: field is immutable",
                            "field": "spec.template"}]}}).encode()
    e = api_error(422, body, "Job ns/my")
    assert str(e) == "Invalid: spec.template: field is immutable"
    assert "--replace deletes it and creates it from this spec" in e.hint
    short = json.dumps({"reason": "Invalid",
                        "message": 'x "r" is invalid: spec.replicas: Invalid value: -1: must be >= 0',
                        "details": {"causes": [{"field": "spec.replicas",
                                                "message": "Invalid value: -1: must be >= 0"}]}})
    assert "Invalid value: -1: must be >= 0" in str(api_error(422, short.encode(), "Job ns/r"))  # short: as is


def test_non_json_error_body(make_client: Any) -> None:
    """Any error body is worded, also one without a Content-Type (lightkube's transform_exception
    would fail on it with KeyError)."""
    handler = scripted(httpx2.Response(400, text="plain text failure"), httpx2.Response(404, content=b"no such"))
    client = make_client(handler)
    with pytest.raises(ClusterError, match="plain text failure"):
        client.version()
    with pytest.raises(ClusterError, match="no such") as e:
        client.list(KINDS["RayJob"], "ns")
    assert e.value.status == 404 and e.value.obj == "rayjobs in ns"


def test_get_and_delete_treat_404_as_absent(make_client: Any) -> None:
    handler = scripted(status(404, "NotFound", "x"), status(404, "NotFound", "x"))
    client = make_client(handler)
    assert client.get(KINDS["Pod"], "ns", "p") is None
    assert client.delete(KINDS["Pod"], "ns", "p") is False


def test_list_missing_ok_for_unserved_kinds(make_client: Any) -> None:
    handler = scripted(status(404, "NotFound", "the server could not find the requested resource"))
    assert make_client(handler).list(KINDS["RayJob"], "ns", missing_ok=True) == ([], "")


def lines(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def test_watch_skips_bookmarks_resumes_and_relists_on_http_410(make_client: Any) -> None:
    obj = {"metadata": {"name": "a", "resourceVersion": "8"}}
    handler = scripted(
        httpx2.Response(200, json=OK_LIST),  # list at 7
        httpx2.Response(200, content=lines({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
                                           {"type": "MODIFIED", "object": obj})),  # stream ends: resume
        status(410, "Expired", "too old resource version"),  # resume refused: re-list
        httpx2.Response(200, json={"metadata": {"resourceVersion": "20"}, "items": []}),
        httpx2.Response(200, content=lines({"type": "ERROR", "object": {"kind": "Status", "code": 410}})),
        httpx2.Response(200, json={"metadata": {"resourceVersion": "30"}, "items": []}),
    )
    client = make_client(handler)
    events = client.watch(KINDS["Pod"], "ns", label_selector="a=b")
    got = [next(events) for _ in range(4)]
    assert [e.type for e in got] == ["SYNC", "MODIFIED", "SYNC", "SYNC"]
    watch_rvs = [c.url.params.get("resourceVersion") for c in handler.calls if c.url.params.get("watch")]
    assert watch_rvs == ["7", "8", "20"]  # from the list, then after the last event (not the bookmark's 9)
    assert all(c.url.params.get("labelSelector") == "a=b" for c in handler.calls)


def test_watch_other_errors_raise(make_client: Any) -> None:
    handler = scripted(httpx2.Response(200, json=OK_LIST), httpx2.Response(200, content=lines(
        {"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "etcd down"}})))
    events = make_client(handler).watch(KINDS["Pod"], "ns")
    next(events)
    with pytest.raises(ClusterError, match="etcd down"):
        next(events)


KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: a
contexts:
- {name: a, context: {cluster: c, user: u, namespace: team-a}}
- {name: b, context: {cluster: c, user: u}}
clusters:
- {name: c, cluster: {server: "https://k8s.test:6443", insecure-skip-tls-verify: true}}
users:
- {name: u, user: {token: tok-123}}
"""


def test_connect_uses_context_token_and_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"major": "1", "minor": "31"})

    client = connect(kubeconfig=str(path), transport=httpx2.MockTransport(handler))
    assert (client.context, client.default_namespace) == ("a", "team-a")
    client.version()
    assert seen[0].headers["Authorization"] == "Bearer tok-123"
    assert str(seen[0].url) == "https://k8s.test:6443/version"
    other = connect(kubeconfig=str(path), context="b", transport=httpx2.MockTransport(handler))
    assert other.default_namespace == "default"
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{path}")
    assert connect(transport=httpx2.MockTransport(handler)).context == "a"  # first existing file of the list


def test_connect_errors_are_bad_input(tmp_path: Path) -> None:
    """A context or file that does not exist is bad input (exit 2), named, never a traceback."""
    from dockyard_k8s.errors import EXIT_BAD_INPUT
    from dockyard_k8s.live.kubeconfig import KubeconfigError

    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    with pytest.raises(KubeconfigError, match="1 problem") as e:
        connect(kubeconfig=str(path), context="nope")
    assert "context 'nope' is not in the kubeconfig (contexts: a, b)" in e.value.render()
    assert e.value.exit_code == EXIT_BAD_INPUT
    with pytest.raises(KubeconfigError) as e:
        connect(kubeconfig=str(tmp_path / "absent"))
    assert "absent: --kubeconfig: no such file" in e.value.render()


def test_list_follows_limit_and_continue_chunks(make_client: Any) -> None:
    """client-go's pager: `limit` on every chunk, `continue` until the server sends none,
    the resourceVersion of the list (every chunk's is the snapshot's)."""
    def chunk(names: list[str], token: str = "") -> httpx2.Response:
        meta = {"resourceVersion": "9", **({"continue": token} if token else {})}
        return httpx2.Response(200, json={"metadata": meta, "items": [{"metadata": {"name": n}} for n in names]})

    handler = scripted(chunk(["a", "b"], "t1"), chunk(["c"], "t2"), chunk([]))
    items, rv = make_client(handler, page_size=2).list(KINDS["Pod"], "ns", label_selector="x=y")
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"] and rv == "9"
    sent = [dict(r.url.params) for r in handler.calls]
    assert sent == [{"labelSelector": "x=y", "limit": "2"}, {"labelSelector": "x=y", "limit": "2", "continue": "t1"},
                    {"labelSelector": "x=y", "limit": "2", "continue": "t2"}]


def test_list_restarts_whole_when_the_continue_token_expired(make_client: Any) -> None:
    """410 Expired on a continue token (etcd compacted mid-list): one full list, as client-go's
    pager with FullListIfExpired; a 410 on the first chunk is an error as any other."""
    first = httpx2.Response(200, json={"metadata": {"resourceVersion": "5", "continue": "old"},
                                       "items": [{"metadata": {"name": "a"}}]})
    whole = httpx2.Response(200, json={"metadata": {"resourceVersion": "8"},
                                       "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]})
    handler = scripted(first, status(410, "Expired", "The provided continue parameter is too old"), whole)
    items, rv = make_client(handler, page_size=1).list(KINDS["Pod"], "ns")
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and rv == "8"
    assert "limit" not in dict(handler.calls[2].url.params)
    with pytest.raises(ClusterError):
        make_client(scripted(status(410, "Expired", "too old"))).list(KINDS["Pod"], "ns")


def test_a_terminating_namespace_403_says_so_not_rbac(make_client: Any) -> None:
    """The namespace lifecycle admission plugin's 403 (k8s.io/apiserver
    pkg/admission/plugin/namespace/lifecycle): the namespace is going away, no permission is missing."""
    body = {"kind": "Status", "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": 'configmaps "grpo-swe-launch" is forbidden: unable to create new content in namespace '
                       "old because it is being terminated",
            "details": {"name": "grpo-swe-launch", "kind": "configmaps", "causes": [
                {"reason": "NamespaceTerminating", "message": "namespace old is being terminated",
                 "field": "metadata.namespace"}]}}
    handler = scripted(httpx2.Response(403, json=body))
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "grpo-swe-launch", "namespace": "old"}}
    with pytest.raises(ClusterError) as e:
        make_client(handler).apply(obj)
    assert e.value.status == 403
    assert str(e.value) == "unable to create new content in namespace old because it is being terminated"
    assert "RBAC" not in e.value.render() and "doctor" not in e.value.hint
    assert "namespace old is being deleted" in e.value.hint and "kubectl get namespace old" in e.value.hint
