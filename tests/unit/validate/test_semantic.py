"""Rules the schemas cannot express: each asserts the exact message and location."""

import copy

import pytest
from validate_samples import DEPLOYMENT

from dockyard_k8s.validate.engine import validate_objects

C = ("spec", "template", "spec", "containers", 0)


def _set(obj, path, value):
    node = obj
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return obj


@pytest.mark.parametrize(
    ("path", "value", "at", "message"),
    [
        ((*C, "resources", "limits", "nvidia.com/gpu"), "abc", (*C, "resources", "limits", "nvidia.com/gpu"),
         "got 'abc', expected a quantity such as 500m, 2, 16Gi"),
        ((*C, "resources", "limits", "memory"), "16GB", (*C, "resources", "limits", "memory"),
         "got '16GB', expected a quantity such as 500m, 2, 16Gi; did you mean '16Gi' (binary) or '16G' (decimal)?"),
        ((*C, "resources", "limits", "nvidia.com/gpu"), "1.5", (*C, "resources", "limits", "nvidia.com/gpu"),
         "got '1.5': nvidia.com/gpu is an extended resource, expected a whole number"),
        ((*C, "resources", "requests"), {"cpu": "2"}, (*C, "resources", "requests", "cpu"),
         "request '2' is greater than limit '1'"),
        ((*C, "resources", "requests"), {"nvidia.com/gpu": 4}, (*C, "resources", "requests", "nvidia.com/gpu"),
         "nvidia.com/gpu is an extended resource: requests must equal limits"),
        (("metadata", "name"), "Bad_Name!", ("metadata", "name"),
         "Deployment name 'Bad_Name!' is not a DNS-1123 subdomain (lowercase letters, digits, '-', '.')"),
        ((*C, "ports", 0, "containerPort"), 70000, (*C, "ports", 0, "containerPort"),
         "containerPort 70000 is out of range, expected 1-65535"),
        (("spec", "replicas"), -1, ("spec", "replicas"), "got -1, expected a number >= 0"),
        ((*C, "imagePullPolicy"), "Sometimes", (*C, "imagePullPolicy"),
         "got 'Sometimes', expected one of: Always, IfNotPresent, Never"),
        (("spec", "template", "spec", "restartPolicy"), "Never", ("spec", "template", "spec", "restartPolicy"),
         "got 'Never', expected one of: Always"),
        ((*C, "securityContext"), {"seccompProfile": {"type": "Bogus"}}, (*C, "securityContext", "seccompProfile",
                                                                          "type"),
         "got 'Bogus', expected one of: RuntimeDefault, Localhost, Unconfined"),
        (("spec", "template", "spec", "tolerations"), [{"key": "k", "operator": "Maybe"}],
         ("spec", "template", "spec", "tolerations", 0, "operator"), "got 'Maybe', expected one of: Exists, Equal"),
        ((*C, "ports", 0, "protocol"), "ICMP", (*C, "ports", 0, "protocol"),
         "got 'ICMP', expected one of: TCP, UDP, SCTP"),
        (("spec", "template", "metadata", "labels"), {"app": "other"}, ("spec", "selector"),
         "selector does not match the pod template labels (spec.template.metadata.labels: app=other)"),
        ((*C, "volumeMounts"), [{"name": "data", "mountPath": "/d"}], (*C, "volumeMounts", 0, "name"),
         "no volume named 'data' in this pod"),
        (("metadata", "labels"), {"app": "a b"}, ("metadata", "labels", "app"),
         "label value 'a b' is not valid (at most 63 letters, digits, '-', '_', '.', starting and ending with a "
         "letter or digit)"),
    ],
)
def test_semantic_rule(path, value, at, message):
    obj = _set(copy.deepcopy(DEPLOYMENT), path, value)
    problems = [(p.path, p.message) for p in validate_objects([obj])]
    assert problems == [(at, message)]
    assert validate_objects([obj])[0].rule == "semantic"


def _service(selector, target="http", ns="ns"):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": ns},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": target}]}}


def test_service_selecting_no_pod_of_the_bundle():
    problems = validate_objects([DEPLOYMENT, _service({"app": "nope"}, 80)])
    assert [(p.kind, p.path) for p in problems] == [("Service", ("spec", "selector"))]
    message = problems[0].message  # the whole message: tests/golden/messages/validate.txt
    assert message.startswith("selects no pod: ") and "namespace ns" in message and "labels app=nope" in message


def test_service_named_target_port_must_exist_on_selected_pods():
    problems = validate_objects([DEPLOYMENT, _service({"app": "web"}, "http")])
    assert [(p.path, p.message) for p in problems] == [
        (("spec", "ports", 0, "targetPort"), "no container of the selected pods declares a port named 'http'")]


def test_service_for_pods_elsewhere_is_not_judged():
    assert validate_objects([DEPLOYMENT, _service({"app": "nope"}, 80, ns="other")]) == []
    assert validate_objects([_service({"app": "nope"}, 80)]) == []


def test_service_name_is_a_dns1035_label():
    svc = _service({"app": "web"}, 80)
    svc["metadata"]["name"] = "9svc"
    (problem,) = validate_objects([svc])  # the whole message: tests/golden/messages/validate.txt
    assert problem.path == ("metadata", "name")
    assert problem.message.startswith("Service name '9svc' is not a DNS-1035 label")


def test_network_policy_ip_blocks_and_ports():
    np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"},
          "spec": {"podSelector": {}, "policyTypes": ["Egress"],
                   "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}},
                                      {"ipBlock": {"cidr": "not-a-cidr"}}],
                               "ports": [{"port": 100, "endPort": 50, "protocol": "TCP"}]}]}}
    assert [(p.path, p.message) for p in validate_objects([np])] == [
        (("spec", "egress", 0, "ports", 0, "endPort"), "endPort 50 is lower than port 100"),
        (("spec", "egress", 0, "to", 0, "ipBlock", "except", 0), "192.168.0.0/16 is not inside cidr 10.0.0.0/8"),
        (("spec", "egress", 0, "to", 1, "ipBlock", "cidr"), "got 'not-a-cidr', expected a CIDR such as 10.0.0.0/8"),
    ]


def test_pdb_min_and_max_together():
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
           "spec": {"minAvailable": 1, "maxUnavailable": "x", "selector": {"matchLabels": {"app": "web"}}}}
    assert [(p.path, p.message) for p in validate_objects([pdb])] == [
        (("spec",), "set minAvailable or maxUnavailable, not both"),
        (("spec", "maxUnavailable"), "got 'x', expected an integer or a percentage such as '25%'")]


def test_cross_object_rules_survive_odd_port_names():
    """A port name that is a list (schema-invalid) once crashed the Service rule with a TypeError."""
    deployment = copy.deepcopy(DEPLOYMENT)
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"name": ["http"], "containerPort": 80}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
               "spec": {"selector": dict(deployment["spec"]["template"]["metadata"]["labels"]),
                        "ports": [{"port": 80, "targetPort": "http"}]}}
    deployment["metadata"]["namespace"] = "default"
    messages = [(p.kind, p.path, p.message) for p in validate_objects([deployment, service]) if p.rule == "semantic"]
    assert ("Service", ("spec", "ports", 0, "targetPort"),
            "no container of the selected pods declares a port named 'http'") in messages


@pytest.mark.parametrize("seed", range(12))
def test_rules_never_raise_on_odd_values(seed):
    """Every value of a valid object replaced by odd ones (wrong types, unhashable values where
    strings go): the rules report or ignore, never raise (they run before nothing else guards)."""
    from validate_samples import DEPLOYMENT as D

    from dockyard_k8s.validate.engine import validate_report
    from odd_values import mutated, rendered

    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}
    rayjob = next(o for o in rendered() if o.get("kind") == "RayJob")
    objects = mutated([D, service, rayjob], seed, copies=60, most=4)
    report = validate_report(objects)
    assert report.objects == len(objects) and report.problems


def test_resource_blocks_are_judged_every_time():
    from dockyard_k8s.validate import semantic

    def pod(resources):
        return {"kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}

    def found(resources):
        return [(p, m) for p, m in semantic.object_problems(pod(resources)) if p[2:3] == ("resources",) or
                p[:4] == ("spec", "containers", 0, "resources")]

    fine = {"limits": {"cpu": "2", "nvidia.com/gpu": 8}, "requests": {"cpu": 1, "nvidia.com/gpu": 8}}
    assert found(fine) == [] and found(copy.deepcopy(fine)) == []
    bad = {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}
    for _ in range(2):
        assert found(bad) == [(("spec", "containers", 0, "resources", "requests", "cpu"),
                               "request '2' is greater than limit '1'")]
    # a float equal to an int is the same quantity
    assert found({"limits": {"cpu": "2", "nvidia.com/gpu": 8.0}, "requests": {"cpu": 1.0, "nvidia.com/gpu": 8}}) == []
    assert found({"limits": {"cpu": "2", "nvidia.com/gpu": 8.5}, "requests": {"cpu": 1, "nvidia.com/gpu": 8.5}})


def test_non_string_keys_of_an_in_memory_object_do_not_break_the_rules():
    """The reader makes every key a string, as kubectl does; an object built in memory may not."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {1: "x", None: "y"}},
           "spec": {"containers": [{"name": "a", "image": "i",
                                    "resources": {"limits": {1: 2, None: "1", "cpu": "1"}, "requests": {1: 3}}}],
                    "nodeSelector": {2: "y"}}}
    assert [p.message for p in validate_objects([pod]) if p.rule == "semantic"] == []


def test_numeric_boolean_and_null_keys_read_from_yaml_are_strings_as_kubectl_makes_them(tmp_path):
    from dockyard_k8s.validate.reader import read_manifests

    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n"
                    "    image: i\n    resources:\n      limits:\n        1: 2\n        true: 3\n        ~: 4\n"
                    "        0x1F: 5\n      requests:\n        1: 3\n")
    doc = read_manifests([str(path)]).documents[0].obj
    assert doc["spec"]["containers"][0]["resources"] == {"limits": {"1": 2, "true": 3, "null": 4, "31": 5},
                                                         "requests": {"1": 3}}
    problems = validate_objects([doc])
    assert (("spec", "containers", 0, "resources", "requests", "1"), "request 3 is greater than limit 2") in [
        (p.path, p.message) for p in problems]


def test_a_part_settles_only_the_services_its_own_pods_satisfy():
    from dockyard_k8s.validate.cross import CrossObjects

    def part(services, pods):
        c = CrossObjects()
        for who, ns, selector, targets in services:
            c.add(who, ("service", ns, selector, targets))
        for ns, labels, ports in pods:
            c.add(None, ("pods", ns, [(labels, set(ports))]))
        return c

    first = part([("fine", "a", {"app": "x"}, [(0, "http")]),
                  ("no-port-here", "a", {"app": "x"}, [(0, "metrics")]),
                  ("no-match-here", "a", {"app": "y"}, []),
                  ("other-namespace", "b", {"app": "x"}, [])],
                 [("a", {"app": "x"}, ["http"])])
    first.settle()
    assert [s[0] for s in first.services] == ["no-port-here", "no-match-here", "other-namespace"]
    second = part([], [("a", {"app": "x", "tier": "t"}, ["metrics"]), ("b", {"app": "z"}, [])])
    first.merge(second)
    assert [(who, path, message.split(":")[0]) for who, _, path, message in first.problems()] == [
        ("no-match-here", ("spec", "selector"), "selects no pod"),
        ("other-namespace", ("spec", "selector"), "selects no pod")]
