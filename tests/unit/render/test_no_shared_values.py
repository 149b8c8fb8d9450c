"""No two places of the rendered objects are one dict or list: a later pass (the platform pass,
a ``kuberay.spec`` merge, Kueue's labels) that edits one place must not edit another."""

from __future__ import annotations

from typing import Any

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.serve_bundle import build_serve_bundle
from support.paths import EXAMPLES

MODES = ("rayjob", "bringup", "job", "statefulset")


def shared(objects: list[dict[str, Any]]) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """(first place, second place) of every dict or list met twice."""
    seen: dict[int, tuple[Any, ...]] = {}
    out = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if not isinstance(node, dict | list):
            return
        if id(node) in seen:
            out.append((seen[id(node)], path))
            return
        seen[id(node)] = path
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            walk(value, (*path, key))

    for i, obj in enumerate(objects):
        walk(obj, (i, obj["kind"]))
    return out


@pytest.mark.parametrize("infra", sorted(p.name for p in EXAMPLES.glob("*.infra.yaml")))
@pytest.mark.parametrize("mode", MODES)
def test_a_run_shares_no_value_between_places(infra, mode, clean_env):
    sets = [f"launch.mode={mode}", "infra.networkPolicy.defaultDeny=true", "infra.imagePull.prePull=true"]
    try:
        bundle = build_bundle(str(EXAMPLES / "grpo_tiny.yaml"), str(EXAMPLES / infra), Layers(sets=sets, env=clean_env))
    except ConfigError as e:  # a multi-node example in the one-pod job mode, say
        pytest.skip(f"{infra} is not a {mode} run: {e.problems[0]}")
    assert shared(bundle.objects) == []
    # nor is a rendered place a value of the infra spec (editing a pod would edit the spec);
    # nodeSelector and tolerations set so the renderer has them to copy
    # (a label and a toleration every example's GPU nodes allow)
    sets += ["kuberay.trainer.nodeSelector.topology\\.k8s\\.aws/network-node-layer-1=nn-1",
             "kuberay.trainer.tolerations=[{key: nvidia.com/gpu, operator: Exists}]",
             "sandbox.command=[sleep, infinity]"]
    try:
        bundle = build_bundle(str(EXAMPLES / "grpo_tiny.yaml"), str(EXAMPLES / infra), Layers(sets=sets, env=clean_env))
    except ConfigError as e:
        pytest.skip(f"{infra} is not a {mode} run: {e.problems[0]}")
    both = shared([{"kind": "infra spec", **bundle.run.infra}, *bundle.objects])
    assert [pair for pair in both if pair[0][1] == "infra spec"] == []


@pytest.mark.parametrize("spec", sorted(p.name for p in EXAMPLES.glob("*.serve.yaml")))
def test_an_endpoint_shares_no_value_between_places(spec, clean_env):
    assert shared(build_serve_bundle(str(EXAMPLES / spec), Layers(env=clean_env)).objects) == []
