"""Schema strictness: unknown fields at every depth, wrong types, missing schemas; the compiled gate and the
collector agree."""

import copy

import pytest
from validate_samples import DEPLOYMENT

from dockyard_k8s.validate.engine import ValidateOptions, validate_objects, validate_report


def _with(path, value):
    obj = copy.deepcopy(DEPLOYMENT)
    node = obj
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return obj


def test_a_valid_deployment_has_no_problem():
    assert validate_objects([DEPLOYMENT]) == []


@pytest.mark.parametrize(
    "path",
    [
        ("bogus",),
        ("metadata", "bogus"),
        ("spec", "bogus"),
        ("spec", "template", "spec", "bogus"),
        ("spec", "template", "spec", "containers", 0, "bogus"),
        ("spec", "template", "spec", "containers", 0, "ports", 0, "bogus"),
    ],
)
def test_unknown_field_is_rejected_at_every_depth(path):
    problems = validate_objects([_with(path, 1)])
    assert [(p.path, p.message, p.rule) for p in problems] == [(path, 'unknown field "bogus"', "schema")]
    assert (problems[0].kind, problems[0].name, problems[0].namespace) == ("Deployment", "web", "ns")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("spec", "replicas"), "two", "got 'two' (string), expected integer"),
        (("spec", "template", "spec", "containers", 0, "image"), 5, "got 5 (integer), expected string"),
        (("spec", "template", "spec", "containers"), {"name": "c"}, "got a mapping, expected array"),
        (("metadata", "labels"), ["a"], "got a list, expected object"),
        (("spec", "template", "spec", "containers", 0, "image"), True, "got true (boolean), expected string"),
    ],
)
def test_wrong_type_is_rejected_with_the_exact_message(path, value, message):
    problems = [p for p in validate_objects([_with(path, value)]) if p.rule == "schema"]
    assert [(p.path, p.message) for p in problems] == [(path, message)]


def test_a_null_is_shown_as_null_not_twice():
    from dockyard_k8s.validate.collect import Collector

    assert Collector({"type": "object", "properties": {"a": {"type": "string"}}}).errors({"a": None}) == [
        (("a",), "got null, expected string")]


def test_every_problem_of_an_object_is_listed():
    obj = _with(("spec", "bogus"), 1)
    obj["spec"]["replicas"] = "x"
    obj["spec"]["template"]["spec"]["containers"][0]["extra"] = True
    paths = sorted(p.path for p in validate_objects([obj]) if p.rule == "schema")
    assert paths == [("spec", "bogus"), ("spec", "replicas"), ("spec", "template", "spec", "containers", 0, "extra")]


def test_missing_required_field():
    obj = _with(("spec", "template", "spec", "containers"), [{"image": "x:1"}])
    schema = [(p.path, p.message) for p in validate_objects([obj]) if p.rule == "schema"]
    assert schema == [(("spec", "template", "spec", "containers", 0, "name"), "missing required field")]


def test_int_or_string_and_quantities_accept_both_forms():
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"ports": [{"port": 80, "targetPort": "http", "name": "a"}, {"port": 81, "targetPort": 8081,
                                                                                 "name": "b"}]}}
    assert validate_objects([svc]) == []


def test_unknown_kind_is_an_error_unless_ignored():
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    problems = validate_objects([widget])
    assert [(p.path, p.rule) for p in problems] == [(("kind",), "object")]
    assert problems[0].message.startswith("no schema for example.com/v1/Widget (Kubernetes 1.29)")
    report = validate_report([widget], ValidateOptions(ignore_missing_schemas=True))
    assert report.problems == [] and report.missing == ["example.com/v1/Widget"]


def test_not_an_object_and_missing_kind():
    problems = validate_objects([["a"], {"apiVersion": "v1"}])  # type: ignore[list-item]
    assert [p.message for p in problems] == ["expected a Kubernetes object (a mapping), got a list",
                                             "not a Kubernetes object: missing kind"]


def test_skip_and_reject_by_kind_or_api_kind():
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    report = validate_report([widget, DEPLOYMENT], ValidateOptions(skip=("Widget",), reject=("apps/v1/Deployment",)))
    assert report.skipped == 1
    assert [(p.kind, p.message) for p in report.problems] == [
        ("Deployment", "apps/v1/Deployment is rejected (--reject)")]


def test_kubernetes_version_selects_schemas_and_rejects_nonsense():
    from dockyard_k8s.errors import UsageError

    sources = validate_report([DEPLOYMENT], ValidateOptions(kubernetes_version="1.33")).sources
    assert sources["apps/v1/Deployment"].startswith("Kubernetes 1.33 strict schemas")
    with pytest.raises(UsageError, match=r"expected MAJOR\.MINOR"):
        validate_report([DEPLOYMENT], ValidateOptions(kubernetes_version="latest-ish"))
    with pytest.raises(UsageError, match="has schemas for"):
        validate_report([DEPLOYMENT], ValidateOptions(kubernetes_version="1.10"))


def test_explicit_null_is_accepted_where_kubernetes_accepts_it():
    obj = _with(("spec", "template", "spec", "containers", 0, "ports", 0, "name"), None)
    assert validate_objects([obj]) == []


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_gate_and_the_collector_agree_on_every_object(seed):
    """Two engines read each schema: the compiled gate says whether an object is valid, the
    collector lists why not. On objects with odd values anywhere (rendered ones, RayJobs
    included), the collector finds a problem exactly where the gate fails."""
    from dockyard_k8s.validate.collect import Collector
    from dockyard_k8s.validate.compiled import ValidatorCache
    from dockyard_k8s.validate.engine import Engine
    from odd_values import mutated, rendered

    engine = Engine()
    objects = mutated([DEPLOYMENT, *rendered()], seed, copies=12, most=3)
    verdicts = []
    for obj in objects:
        found = engine.find(str(obj["apiVersion"]), str(obj["kind"]))
        if found is None:  # apiVersion or kind replaced
            continue
        cache = ValidatorCache(engine._root)
        valid = cache.gate(found.key, found.build)(obj)
        errors = Collector(cache.schema(found.key, found.build)).errors(obj)
        assert valid == (not errors), (obj["kind"], errors)
        verdicts.append(valid)
    assert True in verdicts and False in verdicts
