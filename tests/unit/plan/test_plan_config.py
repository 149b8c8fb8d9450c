"""The lint: and plan: sections: checked strictly, and invisible to the renderers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.kube import pod_requests
from support.paths import EXAMPLES

SECTIONS = """\
lint:
  ignore: [image-digest]
  shmPerGpu: 4Gi
  gpuRuntimeClass: nvidia
  coldPullSeconds: 900
plan:
  nodePools:
    - {name: gpu, instanceType: p5.48xlarge, count: 2, taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}
  instanceTypes:
    mine: {allocatable: {cpu: "8", memory: 32Gi}}
"""


def _infra(tmp_path, extra: str) -> str:
    f = tmp_path / "x.infra.yaml"
    f.write_text(f"defaults: {EXAMPLES / 'grpo_swe.infra.yaml'}\n{extra}")
    return str(f)


def test_sections_do_not_change_what_is_rendered(tmp_path):
    recipe = str(EXAMPLES / "grpo_swe.yaml")
    plain = build_bundle(recipe, _infra(tmp_path, ""), Layers(env={}))
    with_sections = build_bundle(recipe, _infra(tmp_path, SECTIONS), Layers(env={}))
    assert with_sections.objects == plain.objects
    assert with_sections.run.infra["lint"]["gpuRuntimeClass"] == "nvidia"
    assert with_sections.run.infra["plan"]["nodePools"][0]["count"] == 2


@pytest.mark.parametrize(("extra", "message"), [
    ("lint: {ignor: []}\n", "lint.ignor: unknown key 'ignor'"),
    ("lint: {shmPerGpu: lots}\n", "lint.shmPerGpu: got 'lots' (string), expected a Kubernetes quantity"),
    ("plan: {nodePools: [{instanceType: p5.48xlarge}]}\n", "plan.nodePools[0].name: is required"),
    ("plan: {nodePools: [{name: g, instanceType: p5.48xlarge, size: 2}]}\n", "plan.nodePools[0].size: unknown key"),
    ("plan: {instanceTypes: {x: {labels: {}}}}\n", "plan.instanceTypes.x.allocatable: is required"),
])
def test_sections_are_checked(tmp_path, extra, message):
    with pytest.raises(ConfigError) as e:
        build_bundle(str(EXAMPLES / "grpo_swe.yaml"), _infra(tmp_path, extra), Layers(env={}))
    assert any(message in str(p) for p in e.value.problems), [str(p) for p in e.value.problems]


def test_pod_requests_follow_the_scheduler():
    spec = {
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "warm", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
        ],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi"}}},
                       {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 2}}}],
        "overhead": {"cpu": "250m"},
    }
    # app 1 + sidecar 1 = 2 cpu < init 3 + sidecar 1 = 4; memory limit defaults the request; + overhead.
    assert pod_requests(spec) == {"cpu": Fraction(17, 4), "memory": 2 * 2**30, "nvidia.com/gpu": 2}
