"""Fields an installed CRD lacks: which release added them, what the API server's refusal
names, and the client's reading of refusals and Warning headers."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live.answers import warnings_of
from dockyard_k8s.live.crdfields import explain, since, undeclared_fields, undeclared_in_message

REFUSAL = ("failed to create typed patch object (rl-research/grpo-swe; ray.io/v1, Kind=RayJob): errors:\n"
           "  .spec.preRunningDeadlineSeconds: field not declared in schema\n"
           "  .spec.rayClusterSpec.workerGroupSpecs[0].suspend: field not declared in schema")


def test_the_fields_a_refusal_names() -> None:
    assert undeclared_in_message(REFUSAL) == ["spec.preRunningDeadlineSeconds",
                                              "spec.rayClusterSpec.workerGroupSpecs.suspend"]


def test_releases_of_fields_and_of_a_rayjobs_cluster_fields() -> None:
    assert since("RayJob", "spec.preRunningDeadlineSeconds") == ("1.6.0", "launch.preRunningDeadlineSeconds")
    assert since("RayJob", "spec.rayClusterSpec.authOptions") == (
        "1.5.1", "kuberay.auth (mode: disabled turns Ray authentication off)")
    assert since("RayCluster", "spec.workerGroupSpecs[0].suspend") == ("1.3.0", "kuberay.spec")
    assert since("RayJob", "spec.unheardOf") is None


def test_explain_names_the_newest_release_needed() -> None:
    message, hint = explain("RayJob", ["spec.preRunningDeadlineSeconds", "spec.rayClusterSpec.authOptions"])
    assert "spec.preRunningDeadlineSeconds (KubeRay v1.6.0 added it)" in message
    assert hint.startswith("upgrade the operator and its CRDs to KubeRay >= v1.6.0, or unset kuberay.auth (mode: "
                           "disabled turns Ray authentication off), launch.preRunningDeadlineSeconds")
    _, hint = explain("RayJob", ["spec.unheardOf"])
    assert "unset" not in hint


def crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}}


def test_undeclared_fields_walk_the_schema() -> None:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "integer"},
            "params": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "groups": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        }}}}
    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "x", "labels": {"a": "b"}},
           "spec": {"a": 1, "b": 2, "params": {"any": "thing"}, "free": {"deep": {"x": 1}},
                    "groups": [{"name": "g", "suspend": True}]}, "status": {"whatever": 1}}
    assert undeclared_fields(obj, crd(schema)) == ["spec.b", "spec.groups.suspend"]
    assert undeclared_fields({**obj, "apiVersion": "ray.io/v2"}, crd(schema)) == []  # a version not served


@pytest.mark.parametrize(("headers", "expected"), [
    ([("Warning", '299 - "unknown field \\"spec.x\\""')], ['unknown field "spec.x"']),
    ([("Warning", '299 - "one", 299 - "two, with a comma"')], ["one", "two, with a comma"]),
    ([("Warning", '299 - "a"'), ("Warning", '299 - "b"')], ["a", "b"]),
    ([], []),
])
def test_warning_headers(headers: list[tuple[str, str]], expected: list[str]) -> None:
    assert warnings_of(httpx2.Response(200, headers=headers)) == expected


def test_a_schema_refusal_is_not_retried_and_is_explained(make_client: Any) -> None:
    calls: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        return httpx2.Response(500, json={"kind": "Status", "status": "Failure", "message": REFUSAL, "code": 500})

    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "grpo-swe", "namespace": "rl-research"}}
    with pytest.raises(ClusterError) as e:
        make_client(handler).apply(obj)
    assert len(calls) == 1
    assert str(e.value).startswith("the cluster's RayJob CRD has no field spec.preRunningDeadlineSeconds "
                                   "(KubeRay v1.6.0 added it), spec.rayClusterSpec.workerGroupSpecs.suspend "
                                   "(KubeRay v1.3.0 added it)")
    assert ">= v1.6.0" in e.value.hint


def test_a_missing_namespace_is_named(make_client: Any) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(404, json={"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
                                          "message": 'namespaces "nope" not found',
                                          "details": {"name": "nope", "kind": "namespaces"}})

    with pytest.raises(ClusterError) as e:
        make_client(handler).apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
                                                                                          "namespace": "nope"}})
    assert str(e.value) == "namespace nope does not exist" and "kubectl create namespace nope" in e.value.hint


def test_auth_options_secret_name_arrived_in_v1_6_0_not_with_auth_options() -> None:
    """KubeRay v1.5.1's CRD has authOptions {mode} only; secretName (which the run renders) and
    enableK8sTokenAuth came in v1.6.0 (read in ray-operator/config/crd/bases at both tags)."""
    auth_key = "kuberay.auth (mode: disabled turns Ray authentication off)"
    assert since("RayCluster", "spec.authOptions.secretName") == ("1.6.0", auth_key)
    assert since("RayJob", "spec.rayClusterSpec.authOptions.secretName") == ("1.6.0", auth_key)
    # an operator of v1.5.1: the CRD declares authOptions.mode, not secretName
    v151 = crd({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "authOptions": {"type": "object", "properties": {"mode": {"type": "string"}}}}}}})
    obj = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "x"},
           "spec": {"authOptions": {"mode": "token", "secretName": "x-ray-auth"}}}
    fields = undeclared_fields(obj, v151)
    assert fields == ["spec.authOptions.secretName"]
    message, hint = explain("RayCluster", fields)
    assert "spec.authOptions.secretName (KubeRay v1.6.0 added it)" in message
    assert hint.startswith("upgrade the operator and its CRDs to KubeRay >= v1.6.0")
    # an operator older than v1.5.1 lacks the whole object: the run still needs v1.6.0 (it renders secretName)
    message, hint = explain("RayJob", ["spec.rayClusterSpec.authOptions"])
    assert "spec.rayClusterSpec.authOptions (KubeRay v1.5.1 added it; its secretName v1.6.0)" in message
    assert hint.startswith("upgrade the operator and its CRDs to KubeRay >= v1.6.0")


def test_a_built_in_kind_s_refused_field_is_not_blamed_on_the_operator(make_client: Any) -> None:
    """Seen on the real control plane: a ConfigMap field the API server's schema lacks was worded
    "the cluster's ConfigMap CRD has no field ...: the operator installed is older"."""
    message = ('failed to create typed patch object (rl-research/a; /v1, Kind=ConfigMap): .bogus: field not '
               'declared in schema')

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(500, json={"kind": "Status", "status": "Failure", "message": message, "code": 500})

    with pytest.raises(ClusterError) as e:
        make_client(handler).apply({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "a", "namespace": "rl-research"}})
    assert str(e.value) == "the API server's schema for ConfigMap has no field bogus"
    assert "operator" not in e.value.hint and "kubectl explain configmap" in e.value.hint
