"""Property tests: whatever the input, the loader returns a config or raises ConfigError."""

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.config.yamlio import parse_yaml
from dockyard_k8s.errors import ConfigError, ManifestError
from dockyard_k8s.yamlfile import dump_documents

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                    st.text(max_size=12), st.sampled_from(["no", "on", "0755", "1:30", "${X}", "${X:-1}", "2Gi",
                                                            "500m", "-1", "", "rayjob", "attach", "10.0.0.0/8"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=12)


def _paths(schema, prefix=()):
    for key, sub in schema.get("properties", {}).items():
        yield (*prefix, key)
        yield from _paths(sub, (*prefix, key))


INFRA_PATHS = sorted(_paths(INFRA))


@SETTINGS
@given(text=st.text(max_size=200))
def test_any_text_parses_or_reports_problems(text):
    doc, problems = parse_yaml(text, "f.yaml", {})
    assert all(p.file == "f.yaml" and p.message for p in problems)
    if not problems:
        assert doc.data is not None


@SETTINGS
@given(data=values)
def test_any_yaml_document_as_infra_is_a_config_or_a_config_error(tmp_path, data):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("a: 1\n")
    infra = tmp_path / "i.yaml"
    infra.write_text(yaml.safe_dump(data))
    try:
        run = load_run(str(recipe), str(infra), Layers(env={"HOME": str(tmp_path)}))
    except ConfigError as e:
        assert e.problems and all(str(p) for p in e.problems)
    else:
        assert isinstance(run.infra, dict)


@SETTINGS
@given(mutations=st.lists(st.tuples(st.sampled_from(INFRA_PATHS), values), min_size=1, max_size=4))
def test_mutated_valid_infra_renders_or_fails_cleanly(tmp_path, mutations):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("a: 1\n")
    data = {"infra": {"image": "reg/img:1"}}
    for path, value in mutations:
        node = data
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[path[-1]] = value
    infra = tmp_path / "i.yaml"
    infra.write_text(yaml.safe_dump(data))
    try:
        bundle = build_bundle(str(recipe), str(infra), Layers(env={"HOME": str(tmp_path)}))
    except ConfigError as e:
        assert e.problems
        return
    except ManifestError as e:  # a free-form fragment (kuberay.spec) the schemas reject: fail closed
        assert e.lines
        return
    text = dump_documents(bundle.objects)
    assert text == dump_documents(build_bundle(str(recipe), str(infra), Layers(env={"HOME": str(tmp_path)})).objects)
    for obj in bundle.objects:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"]


@SETTINGS
@given(sizes=st.fixed_dictionaries({
    "replicas": st.integers(0, 64), "gpus": st.integers(0, 16), "cpu": st.sampled_from(["1", "500m", 8, 2.5]),
    "memory": st.sampled_from(["1Gi", "512Mi", "1000Gi"]), "shm": st.sampled_from(["1Gi", None])}))
def test_valid_sizing_always_renders_deterministically(tmp_path, sizes):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("a: 1\n")
    infra = tmp_path / "i.yaml"
    infra.write_text(yaml.safe_dump({"infra": {"image": "reg/img:1"}, "kuberay": {"trainer": {
        "replicas": sizes["replicas"], "gpus": sizes["gpus"], "cpu": sizes["cpu"], "memory": sizes["memory"],
        "shmSize": sizes["shm"]}}}))
    env = {"HOME": str(tmp_path)}
    objects = build_bundle(str(recipe), str(infra), Layers(env=env)).objects
    assert dump_documents(objects) == dump_documents(build_bundle(str(recipe), str(infra), Layers(env=env)).objects)
    trainer = objects[-1]["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert trainer["replicas"] == sizes["replicas"]
    requests = trainer["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests.get("nvidia.com/gpu", "0") == str(sizes["gpus"])
