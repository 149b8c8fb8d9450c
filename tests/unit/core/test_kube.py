from fractions import Fraction

import pytest

from dockyard_k8s.kube import containers, parse_quantity, pod_templates, selector_matches


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("2Gi", 2 * 2**30),
        ("1.5", Fraction(3, 2)),
        ("1e3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("100k", 100_000),
        ("64Mi", 64 * 2**20),
        (".5", Fraction(1, 2)),
        ("+2", 2),
        (8, 8),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_quantity_accepts_the_apimachinery_grammar(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["abc", "2GB", "1.2.3", "", " 1", "Gi", "1 Gi", "1ki", True, None, [1],
                                  float("inf"), float("-inf"), float("nan"), "inf", ".inf"])
def test_parse_quantity_rejects_everything_else(text):
    assert parse_quantity(text) is None


def _pod(name):
    return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": name}]}}


def test_pod_templates_of_every_workload_kind():
    cases = {
        "Deployment": {"replicas": 3, "template": _pod("d")},
        "StatefulSet": {"template": _pod("s")},
        "DaemonSet": {"template": _pod("ds")},
        "Job": {"parallelism": 2, "template": _pod("j")},
        "CronJob": {"jobTemplate": {"spec": {"template": _pod("c")}}},
    }
    got = {k: pod_templates({"kind": k, "spec": v}) for k, v in cases.items()}
    assert [(t.path, t.replicas) for t in got["Deployment"]] == [(("spec", "template"), 3)]
    assert got["StatefulSet"][0].replicas == 1
    assert got["DaemonSet"][0].replicas is None
    assert got["Job"][0].replicas == 2
    assert got["CronJob"][0].path == ("spec", "jobTemplate", "spec", "template")
    assert pod_templates({"kind": "Service", "spec": {}}) == []


def test_pod_templates_of_a_rayjob_name_each_group():
    job = {"kind": "RayJob", "spec": {
        "submitterPodTemplate": _pod("sub"),
        "rayClusterSpec": {
            "headGroupSpec": {"template": _pod("head")},
            "workerGroupSpecs": [{"groupName": "trainer", "replicas": 2, "numOfHosts": 2, "template": _pod("t")},
                                 {"groupName": "inference", "minReplicas": 1, "template": _pod("i")}],
        }}}
    got = [(t.group, t.replicas, t.path) for t in pod_templates(job)]
    assert got == [
        ("head", 1, ("spec", "rayClusterSpec", "headGroupSpec", "template")),
        ("trainer", 4, ("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template")),
        ("inference", 1, ("spec", "rayClusterSpec", "workerGroupSpecs", 1, "template")),
        ("submitter", 1, ("spec", "submitterPodTemplate")),
    ]


def test_pod_templates_of_an_mpijob():
    job = {"kind": "MPIJob", "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": _pod("l")},
                                                          "Worker": {"replicas": 4, "template": _pod("w")}}}}
    assert [(t.group, t.replicas) for t in pod_templates(job)] == [("Launcher", 1), ("Worker", 4)]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, {"a": "1"}, True),
        (None, {"a": "1"}, False),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": ""}, False),
    ],
)
def test_selector_matches(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


def test_containers_lists_init_then_main():
    spec = {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}
    assert [(f, c["name"]) for f, c in containers(spec)] == [("initContainers", "i"), ("containers", "c")]


def test_missing_references_are_what_the_pods_name_and_the_input_lacks():
    """What must exist before a kubectl apply of the objects."""
    from dockyard_k8s.kube import missing_references

    pod_spec = {"priorityClassName": "high", "serviceAccountName": "trainer", "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c", "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "maybe", "key": "k", "optional": True}}},
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "x"}}}],
                    "envFrom": [{"secretRef": {"name": "bulk"}}]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                            {"name": "own", "persistentVolumeClaim": {"claimName": "mine"}},
                            {"name": "certs", "secret": {"secretName": "tls"}}]}
    objects = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "team"},
                "spec": {"template": {"metadata": {}, "spec": pod_spec}}},
               {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "mine", "namespace": "team"}}]
    assert missing_references(objects) == [
        ("Namespace team", ""), ("PriorityClass high", "priorityClassName"),
        ("StorageClass (default)", "claim mine (no storageClassName: the cluster's default class)"),
        ("ServiceAccount team/trainer", "serviceAccountName"), ("Secret team/bulk", "envFrom"),
        ("Secret team/pull", "imagePullSecrets"), ("Secret team/s", "key k (env A)"),
        ("Secret team/tls", "volume certs"), ("ConfigMap team/cm", "key x (env C)"),
        ("PersistentVolumeClaim team/data", "volume data")]


def test_a_rendered_claim_names_its_storage_class_which_must_exist():
    """A claim of a class the cluster has no StorageClass (or static PersistentVolume) for stays
    Pending with every pod that mounts it; "" asks for no class and names nothing; no class at all
    is the cluster's default class, which must exist too."""
    from dockyard_k8s.kube import missing_references

    def claim(name: str, cls: str | None) -> dict:
        spec = {} if cls is None else {"storageClassName": cls}
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "t"},
                "spec": spec}

    assert missing_references([claim("a", "fsx"), claim("b", ""), claim("c", None), claim("d", "fsx")]) == [
        ("Namespace t", ""), ("StorageClass (default)", "claim c (no storageClassName: the cluster's default class)"),
        ("StorageClass fsx", "storageClassName of claim a; storageClassName of claim d")]



def test_kueue_s_labels_name_a_local_queue_and_a_workload_priority_class_that_must_exist():
    """Without the LocalQueue the Workload stays Inadmissible; without the WorkloadPriorityClass
    Kueue v0.19 makes no Workload at all and the job stays suspended, said in Kueue's log only."""
    from dockyard_k8s import kueue
    from dockyard_k8s.kube import missing_references

    labels = {kueue.QUEUE_LABEL: "team-a", kueue.PRIORITY_LABEL: "urgent"}
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "namespace": "ml", "labels": labels}}
    assert missing_references([job]) == [
        ("Namespace ml", ""), ("WorkloadPriorityClass urgent", f"label {kueue.PRIORITY_LABEL}"),
        ("LocalQueue ml/team-a", f"label {kueue.QUEUE_LABEL}")]
    rendered_queue = {"apiVersion": kueue.API_VERSION, "kind": "LocalQueue",
                      "metadata": {"name": "team-a", "namespace": "ml"}}
    assert ("LocalQueue ml/team-a", f"label {kueue.QUEUE_LABEL}") not in missing_references([rendered_queue, job])
