"""The fake API server is faithful where the launcher's conclusions depend on it.

One test per behaviour of a real API server (Kubernetes API concepts: "Finalizers",
"Garbage Collection", "Server-Side Apply", "Field validation", "Subresources", "Dry-run",
"Authorization"), through a raw HTTP client, never launcher code.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from fakekube import FakeKube

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
RAYJOBS = "/apis/ray.io/v1/namespaces/default/rayjobs"
CM = "/api/v1/namespaces/default/configmaps"


def deployment(name: str = "web", containers: list[dict[str, Any]] | None = None, replicas: int = 1) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": containers or [{"name": "main", "image": "img:1"}]}}}}


def rayjob(name: str = "job", **spec: Any) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"entrypoint": "python x.py", "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {},
                     "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}}}, **spec}}


def apply(http: httpx2.Client, path: str, obj: dict, manager: str = "me", **params: str) -> httpx2.Response:
    return http.patch(f"{path}/{obj['metadata']['name']}", params={"fieldManager": manager, **params},
                      headers=APPLY, content=json.dumps(obj))


# --- namespaces -------------------------------------------------------------------------------

def test_namespace_must_exist(http: httpx2.Client) -> None:
    r = apply(http, "/api/v1/namespaces/nowhere/configmaps",
              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "nowhere"}})
    assert r.status_code == 404
    assert r.json()["message"] == 'namespaces "nowhere" not found'
    assert r.json()["details"] == {"name": "nowhere", "kind": "namespaces"}
    assert http.get("/api/v1/namespaces/nowhere/configmaps").json()["items"] == []  # listing an absent one is empty


def test_terminating_namespace_refuses_new_content(http: httpx2.Client, fake: FakeKube) -> None:
    fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old", "finalizers": ["hold"]}})
    http.delete("/api/v1/namespaces/old")
    r = http.post("/api/v1/namespaces/old/configmaps", json={"apiVersion": "v1", "kind": "ConfigMap",
                                                             "metadata": {"name": "a"}})
    assert r.status_code == 403 and "because it is being terminated" in r.json()["message"]


def test_namespace_deletion_removes_its_content(http: httpx2.Client, fake: FakeKube) -> None:
    fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}})
    fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "tmp"}})
    assert http.delete("/api/v1/namespaces/tmp").status_code == 200
    assert http.get("/api/v1/namespaces/tmp").status_code == 404
    assert fake.get("v1", "ConfigMap", "tmp", "a") is None


# --- deletion ---------------------------------------------------------------------------------

def test_finalizer_keeps_a_deleted_object_with_deletion_timestamp(http: httpx2.Client, fake: FakeKube) -> None:
    job = rayjob()
    job["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]
    assert apply(http, RAYJOBS, job).status_code == 201
    r = http.delete(f"{RAYJOBS}/job")
    assert r.status_code == 200 and r.json()["metadata"]["deletionTimestamp"]
    live = http.get(f"{RAYJOBS}/job").json()
    assert live["metadata"]["deletionTimestamp"] and live["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]
    # an object being deleted takes no new finalizers
    live["metadata"]["finalizers"].append("other")
    assert http.put(f"{RAYJOBS}/job", json=live).status_code == 422
    fake.remove_finalizer("ray.io/v1", "RayJob", "default", "job", "ray.io/rayjob-finalizer")
    assert http.get(f"{RAYJOBS}/job").status_code == 404


def test_apply_onto_an_object_being_deleted_updates_it_and_it_still_goes(http: httpx2.Client,
                                                                         fake: FakeKube) -> None:
    job = rayjob()
    job["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]
    apply(http, RAYJOBS, job)
    http.delete(f"{RAYJOBS}/job")
    r = apply(http, RAYJOBS, rayjob(entrypoint="python new.py"))
    assert r.status_code == 200 and r.json()["metadata"]["deletionTimestamp"]  # no new object was created
    fake.remove_finalizer("ray.io/v1", "RayJob", "default", "job", "ray.io/rayjob-finalizer")
    assert http.get(f"{RAYJOBS}/job").status_code == 404  # the "new" run is lost with it


def owned(fake: FakeKube, owner: dict, name: str, block: bool = True) -> dict:
    return fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name, "namespace": "default", "finalizers": ["hold"] if name.endswith("held") else [],
        "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                             "blockOwnerDeletion": block}]}})


def test_foreground_deletion_waits_for_blocking_dependents(http: httpx2.Client, fake: FakeKube) -> None:
    owner = fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    owned(fake, owner, "dep-held")
    http.delete(f"{CM}/owner", params={"propagationPolicy": "Foreground"})
    owner_now = fake.get("v1", "ConfigMap", "default", "owner")
    assert owner_now is not None and "foregroundDeletion" in owner_now["metadata"]["finalizers"]
    assert fake.get("v1", "ConfigMap", "default", "dep-held")["metadata"]["deletionTimestamp"]
    fake.remove_finalizer("v1", "ConfigMap", "default", "dep-held", "hold")
    assert fake.get("v1", "ConfigMap", "default", "dep-held") is None
    assert fake.get("v1", "ConfigMap", "default", "owner") is None


def test_background_deletion_removes_the_owner_first(http: httpx2.Client, fake: FakeKube) -> None:
    owner = fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    owned(fake, owner, "dep")
    seen: list[str] = []
    rv = http.get(CM).json()["metadata"]["resourceVersion"]
    http.delete(f"{CM}/owner", params={"propagationPolicy": "Background"})
    with http.stream("GET", CM, params={"watch": "true", "resourceVersion": rv}) as r:
        for line in r.iter_lines():
            ev = json.loads(line)
            seen.append(f"{ev['type']} {ev['object']['metadata']['name']}")
            if len(seen) == 2:
                break
    assert seen == ["DELETED owner", "DELETED dep"]


def test_orphan_deletion_keeps_dependents_without_the_reference(http: httpx2.Client, fake: FakeKube) -> None:
    owner = fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    owned(fake, owner, "dep")
    http.delete(f"{CM}/owner", params={"propagationPolicy": "Orphan"})
    assert fake.get("v1", "ConfigMap", "default", "owner") is None
    dep = fake.get("v1", "ConfigMap", "default", "dep")
    assert dep is not None and not dep["metadata"].get("ownerReferences")


def test_bound_pods_terminate_gracefully(http: httpx2.Client, fake: FakeKube) -> None:
    fake.kubelet_terminates = False
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
              "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}})
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unbound", "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": "x"}]}})
    r = http.delete("/api/v1/namespaces/default/pods/p")
    assert r.json()["metadata"]["deletionGracePeriodSeconds"] == 30
    assert http.get("/api/v1/namespaces/default/pods/p").status_code == 200  # Terminating
    http.delete("/api/v1/namespaces/default/pods/unbound")
    assert http.get("/api/v1/namespaces/default/pods/unbound").status_code == 404  # never ran: gone at once
    fake.finish_pod("default", "p")
    assert http.get("/api/v1/namespaces/default/pods/p").status_code == 404


# --- server-side apply ------------------------------------------------------------------------

def test_apply_merges_map_lists_by_key_and_keeps_other_managers_items(http: httpx2.Client) -> None:
    apply(http, DEPLOY, deployment(containers=[{"name": "main", "image": "img:1", "env": [
        {"name": "A", "value": "1"}]}]), manager="launcher")
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"},
                                                             {"name": "main", "env": [{"name": "B", "value": "2"}]}]}}}}
    r = apply(http, DEPLOY, sidecar, manager="injector")
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main", "proxy"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    # the launcher re-applies without touching what the injector owns
    r = apply(http, DEPLOY, deployment(containers=[{"name": "main", "image": "img:2", "env": [
        {"name": "A", "value": "1"}]}]), manager="launcher")
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main", "proxy"] and containers[0]["image"] == "img:2"


def test_apply_ports_are_keyed_by_port_and_defaulted_protocol(http: httpx2.Client) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}}
    assert apply(http, "/api/v1/namespaces/default/services", svc).status_code == 201
    svc["spec"]["ports"].append({"port": 80, "protocol": "TCP", "name": "dup"})
    r = apply(http, "/api/v1/namespaces/default/services", svc)
    assert r.status_code == 500
    assert 'duplicate entries for key [port=80,protocol="TCP"]' in r.json()["message"]


def test_apply_rejects_duplicate_keys_and_atomic_lists_replace(http: httpx2.Client) -> None:
    dup = deployment(containers=[{"name": "main", "image": "a"}, {"name": "main", "image": "b"}])
    r = apply(http, DEPLOY, dup)
    assert r.status_code == 500 and 'duplicate entries for key [name="main"]' in r.json()["message"]
    first = deployment()
    first["spec"]["template"]["spec"]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    apply(http, DEPLOY, first, manager="one")
    second = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"template": {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}}}
    r = apply(http, DEPLOY, second, manager="two", force="true")
    assert r.json()["spec"]["template"]["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_raycluster_worker_groups_are_atomic_as_the_crd_declares(http: httpx2.Client) -> None:
    job = rayjob()
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"] = [{"groupName": "a", "rayStartParams": {}, "template": {}}]
    apply(http, RAYJOBS, job, manager="launcher")
    other = rayjob()
    other["spec"]["rayClusterSpec"] = {"workerGroupSpecs": [{"groupName": "b", "rayStartParams": {},
                                                             "template": {}}]}
    r = apply(http, RAYJOBS, {**other, "spec": {"rayClusterSpec": other["spec"]["rayClusterSpec"]}}, manager="x")
    assert r.status_code == 409 and ".spec.rayClusterSpec.workerGroupSpecs" in r.json()["message"]


def test_managed_fields_record_each_manager(http: httpx2.Client) -> None:
    apply(http, DEPLOY, deployment(), manager="launcher")
    r = http.patch(f"{DEPLOY}/web", params={"fieldManager": "kubectl-edit"}, headers=MERGE,
                   content=json.dumps({"metadata": {"labels": {"team": "x"}}}))
    managed = {m["manager"]: m for m in r.json()["metadata"]["managedFields"]}
    assert managed["launcher"]["operation"] == "Apply" and managed["kubectl-edit"]["operation"] == "Update"
    containers = managed["launcher"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {}}}
    assert managed["kubectl-edit"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:team": {}}}}


def test_conflict_with_another_manager_names_it_and_force_takes_over(http: httpx2.Client) -> None:
    apply(http, DEPLOY, deployment(replicas=2), manager="launcher")
    http.patch(f"{DEPLOY}/web/scale", params={"fieldManager": "hpa"}, headers=MERGE,
               content=json.dumps({"spec": {"replicas": 5}}))
    r = apply(http, DEPLOY, deployment(replicas=2), manager="launcher")
    assert r.status_code == 409
    assert r.json()["message"] == 'Apply failed with 1 conflict: conflict with "hpa" using apps/v1: .spec.replicas'
    assert r.json()["details"]["causes"][0] == {"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                                "message": 'conflict with "hpa" using apps/v1'}
    r = apply(http, DEPLOY, deployment(replicas=2), manager="launcher", force="true")
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 2
    assert "hpa" not in {m["manager"] for m in r.json()["metadata"]["managedFields"]}


def test_reapplying_the_same_config_writes_nothing(http: httpx2.Client, fake: FakeKube) -> None:
    rv = apply(http, DEPLOY, deployment()).json()["metadata"]["resourceVersion"]
    before = fake.rv
    assert apply(http, DEPLOY, deployment()).json()["metadata"]["resourceVersion"] == rv
    assert fake.rv == before


# --- field validation --------------------------------------------------------------------------

def test_apply_with_an_undeclared_field_fails_whatever_field_validation_says(http: httpx2.Client) -> None:
    for mode in ("Ignore", "Warn", "Strict"):
        r = apply(http, RAYJOBS, rayjob(futureField=1), fieldValidation=mode)
        assert r.status_code == 500
        assert r.json()["message"] == ("failed to create typed patch object (default/job; ray.io/v1, Kind=RayJob): "
                                       ".spec.futureField: field not declared in schema")
        assert "reason" not in r.json()  # real servers send no reason with it


def test_older_kuberay_crd_lacks_newer_fields(fake: FakeKube) -> None:
    old = FakeKube(kuberay="1.4.2")
    with httpx2.Client(transport=old, base_url="https://x") as c:
        r = apply(c, RAYJOBS, rayjob(preRunningDeadlineSeconds=600))
        assert r.status_code == 500 and ".spec.preRunningDeadlineSeconds: field not declared in schema" in \
            r.json()["message"]
        assert apply(c, RAYJOBS, rayjob()).status_code == 201
    old.shutdown()
    with httpx2.Client(transport=fake, base_url="https://x") as c:
        assert apply(c, RAYJOBS, rayjob(preRunningDeadlineSeconds=600)).status_code == 201


@pytest.mark.parametrize(("mode", "code", "warned", "stored"), [
    ("Ignore", 201, False, False), ("Warn", 201, True, False), (None, 201, True, False), ("Strict", 400, False, False),
])
def test_create_prunes_undeclared_fields_per_field_validation(http: httpx2.Client, mode: str | None, code: int,
                                                              warned: bool, stored: bool) -> None:
    params = {"fieldValidation": mode} if mode else {}
    r = http.post(RAYJOBS, params=params, json=rayjob(futureField=1))
    assert r.status_code == code
    assert ('unknown field \\"spec.futureField\\"' in r.headers.get("Warning", "")) is warned
    if code == 400:
        assert 'strict decoding error: unknown field "spec.futureField"' in r.json()["message"]
    else:
        assert "futureField" not in http.get(f"{RAYJOBS}/job").json()["spec"]


def test_deprecated_version_warns(http: httpx2.Client) -> None:
    r = http.get("/apis/ray.io/v1alpha1/namespaces/default/rayjobs")
    assert r.status_code == 200 and "deprecated" in r.headers["Warning"]


# --- subresources, generation, dry run -------------------------------------------------------

def test_status_subresource_and_generation(http: httpx2.Client) -> None:
    r = apply(http, RAYJOBS, {**rayjob(), "status": {"jobStatus": "SUCCEEDED"}})
    assert "status" not in r.json() and r.json()["metadata"]["generation"] == 1  # status ignored on the main resource
    live = r.json()
    r = http.put(f"{RAYJOBS}/job/status", params={"fieldManager": "operator"},
                 json={**live, "status": {"jobStatus": "RUNNING", "observedGeneration": 1},
                       "spec": {"entrypoint": "x"}})
    assert r.json()["status"]["jobStatus"] == "RUNNING" and r.json()["spec"]["entrypoint"] == "python x.py"
    assert r.json()["metadata"]["generation"] == 1  # status writes leave generation alone
    labelled = apply(http, RAYJOBS, {**rayjob(), "metadata": {"name": "job", "labels": {"a": "b"}}})
    assert labelled.json()["metadata"]["generation"] == 1  # so do metadata changes
    r = apply(http, RAYJOBS, rayjob(entrypoint="python y.py"))
    assert r.json()["metadata"]["generation"] == 2 and r.json()["status"]["observedGeneration"] == 1


def test_scale_subresource(http: httpx2.Client) -> None:
    apply(http, DEPLOY, deployment(replicas=2))
    scale = http.get(f"{DEPLOY}/web/scale").json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    http.put(f"{DEPLOY}/web/scale", json={**scale, "spec": {"replicas": 4}})
    assert http.get(f"{DEPLOY}/web").json()["spec"]["replicas"] == 4
    assert http.get(f"{RAYJOBS}/job/scale").status_code == 404  # RayJob has no scale subresource


def test_dry_run_stores_nothing(http: httpx2.Client, fake: FakeKube) -> None:
    before = fake.rv
    assert apply(http, DEPLOY, deployment(), dryRun="All").status_code == 201
    assert http.post(CM, params={"dryRun": "All"}, json={"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "a"}}).status_code == 201
    assert fake.rv == before and http.get(f"{DEPLOY}/web").status_code == 404
    apply(http, DEPLOY, deployment())
    before = fake.rv
    changed = apply(http, DEPLOY, deployment(replicas=9), dryRun="All")
    assert changed.json()["spec"]["replicas"] == 9 and fake.rv == before
    assert http.delete(f"{DEPLOY}/web", params={"dryRun": "All"}).status_code == 200
    assert http.get(f"{DEPLOY}/web").json()["spec"]["replicas"] == 1 and fake.rv == before


# --- authorization ------------------------------------------------------------------------------

def test_forbidden_bodies_are_worded_as_rbac_does(http: httpx2.Client, fake: FakeKube) -> None:
    fake.deny("list", "rayclusters")
    fake.deny("delete", "rayjobs", namespace="default")
    r = http.get("/apis/ray.io/v1/namespaces/default/rayclusters")
    assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == ('rayclusters.ray.io is forbidden: User "alice" cannot list resource "rayclusters" '
                                   'in API group "ray.io" in the namespace "default"')
    assert r.json()["details"] == {"group": "ray.io", "kind": "rayclusters"}
    r = http.delete(f"{RAYJOBS}/job")
    assert r.json()["message"].startswith('rayjobs.ray.io "job" is forbidden: User "alice" cannot delete')
    r = http.get("/api/v1/nodes")
    assert r.status_code == 200
    fake.deny("list", "nodes")
    assert http.get("/api/v1/nodes").json()["message"].endswith("at the cluster scope")


# --- discovery and CRDs -------------------------------------------------------------------------

def test_discovery_documents(http: httpx2.Client) -> None:
    assert http.get("/api").json()["versions"] == ["v1"]
    groups = {g["name"] for g in http.get("/apis").json()["groups"]}
    assert {"apps", "batch", "ray.io", "kubeflow.org", "apiextensions.k8s.io"} <= groups
    ray = {r["name"]: r for r in http.get("/apis/ray.io/v1").json()["resources"]}
    assert ray["rayjobs"]["kind"] == "RayJob" and "rayjobs/status" in ray
    assert "all" in ray["rayjobs"]["categories"]
    pods = {r["name"] for r in http.get("/api/v1").json()["resources"]}
    assert {"pods", "pods/log", "pods/status", "events", "namespaces"} <= pods


def test_crds_are_served_from_their_objects(http: httpx2.Client, fake: FakeKube) -> None:
    crd = http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io").json()
    spec_props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "preRunningDeadlineSeconds" in spec_props  # v1.7.0
    apply(http, RAYJOBS, rayjob())
    http.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io")
    assert http.get(RAYJOBS).status_code == 404  # no longer served
    fake.install_crd(crd)
    assert http.get(RAYJOBS).json()["items"] == []  # its objects went with it
