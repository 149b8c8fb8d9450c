"""Property tests: any value in the platform and shape keys gives a run or a ConfigError, never
another exception; and rendering a valid platform run is deterministic."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from platforms_support import IMAGE, RECIPE

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.yamlfile import dump_documents

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 70), st.sampled_from(
    ["eks", "kind", "k3s", "generic", "p5.48xlarge", "p4de.24xlarge", "job", "statefulset", "rayjob", "64Gi",
     "ReadWriteOnce", "ReadWriteOncePod", "x", "", "namespace", "run"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                       st.dictionaries(st.sampled_from(["a", "create", "gpus"]),
                                                                       inner, max_size=2)), max_leaves=4)
KEYS = [("infra", "platform"), ("infra", "instanceType"), ("infra", "runtimeClassName"),
        ("infra", "storage"), ("infra", "networkPolicy"), ("infra", "priorityClass"), ("infra", "imagePull"),
        ("infra", "gpuScheduling"), ("launch", "mode"), ("launch", "bootstrap"), ("ncclTest", "nodes"),
        ("kuberay", "trainer", "replicas"), ("kuberay", "inference", "replicas"), ("kuberay", "trainer", "shmSize")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(KEYS), values, min_size=1, max_size=4))
def test_platform_keys_give_a_run_or_a_config_error(tmp_path: Path, chosen: dict) -> None:
    doc: dict = {"infra": {"image": IMAGE}}
    for path, value in chosen.items():
        node = doc
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    infra = tmp_path / "infra.yaml"
    infra.write_text(yaml.safe_dump(doc), encoding="utf-8")
    try:
        bundle = build_bundle(RECIPE, str(infra), Layers(env={"HOME": str(tmp_path)}))
    except ConfigError:
        return
    again = build_bundle(RECIPE, str(infra), Layers(env={"HOME": str(tmp_path)}))
    assert dump_documents(bundle.objects) == dump_documents(again.objects)
    for obj in bundle.objects:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"]
