"""The bundled Kueue v0.19.2 CRDs: byte-for-byte upstream, and what validate/check check Kueue objects with."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dockyard_k8s.validate.crd import BUNDLED_DIR
from dockyard_k8s.validate.engine import validate_report
from support.paths import shared_crds

FOLDER = os.path.join(BUNDLED_DIR, "kueue-v0.19.2")
CLUSTER_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
                 "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                          "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8,
                                                                      "borrowLimit": 8}]}]}]}}


def test_bundled_kueue_crds_match_their_provenance():
    with open(os.path.join(FOLDER, "PROVENANCE.json")) as f:
        provenance = json.load(f)
    assert (provenance["project"], provenance["tag"]) == ("kubernetes-sigs/kueue", "v0.19.2")
    names = sorted(n for n in os.listdir(FOLDER) if n.endswith(".yaml"))
    assert names == sorted(provenance["files"])
    for name, info in provenance["files"].items():
        data = Path(FOLDER, name).read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert (blob, len(data)) == (info["git_blob_sha1"], info["size"])
        assert info["upstream_path"] == f"config/components/crd/bases/{name}"


def test_bundled_copies_equal_the_shared_ones():
    shared = shared_crds() / "kueue"
    if not shared.is_dir():
        pytest.skip(f"real Kueue CRDs not found at {shared}")
    for name in (n for n in os.listdir(FOLDER) if n.endswith(".yaml")):
        assert Path(FOLDER, name).read_bytes() == (shared / name).read_bytes()


def test_a_misspelt_field_of_a_cluster_queue_is_caught_against_the_bundled_crd():
    report = validate_report([CLUSTER_QUEUE])
    assert [(p.path, p.message) for p in report.problems] == [
        (("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "borrowLimit"),
         'unknown field "borrowLimit"; did you mean "borrowingLimit"?')]
    assert report.sources["kueue.x-k8s.io/v1beta2/ClusterQueue"] == "Kueue v0.19.2 CRD (bundled)"


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_both_served_versions_are_known(version):
    lq = {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "n"},
          "spec": {"clusterQueue": "cq"}}
    report = validate_report([lq])
    assert report.problems == [] and report.missing == []


def test_workloads_validate_too():
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
          "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
              "containers": [{"name": "c", "image": "x:1"}]}}}]}}
    assert validate_report([wl]).problems == []
    wl["spec"]["podSets"][0]["cont"] = 1
    assert [p.message for p in validate_report([wl]).problems] == ['unknown field "cont"; did you mean "count"?']


def test_an_admission_check_validates_though_its_crd_uses_a_go_only_regex():
    """The AdmissionCheck CRD's parameters.kind pattern is ``^(?i)[a-z]...``: Go's regexp takes a flag
    group anywhere, Python's only at the start (re.error, a traceback from `validate`, before issue 22
    item 16 rendered AdmissionChecks). The pattern is translated, and still applies."""
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "mk"},
             "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}}}
    assert validate_report([check]).problems == []
    check["spec"]["parameters"]["kind"] = "9-lives"
    assert [(p.path, p.message.split(",")[0]) for p in validate_report([check]).problems] == [
        (("spec", "parameters", "kind"), "got '9-lives'")]


def test_go_regex_flags_become_python_ones():
    from dockyard_k8s.validate.crd_convert import python_pattern

    assert python_pattern("^(?i)[a-z]+$") == "^(?i:[a-z]+$)"
    assert python_pattern("(?i)^[a-z]+$") == "(?i)^[a-z]+$"  # already at the start: as it is
    assert python_pattern("^[a-z]+$") == "^[a-z]+$"
    assert python_pattern(r"^a\(?i\)b$") == r"^a\(?i\)b$"  # an escaped parenthesis opens no flag group
    assert python_pattern("^[(?i)]x$") == "^[(?i)]x$"  # nor one in a character class
