"""``build_bundle``: the offline checks of a run run once each."""

from __future__ import annotations

import sys

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from support.paths import EXAMPLES


def test_kuberay_and_kueue_rules_run_once_per_object(monkeypatch, clean_env):
    """KubeRay's rules once for every object, Kueue's once for every object Kueue judges (the
    queued job, the team's queue objects), and never twice."""
    from dockyard_k8s import kueue as names
    from dockyard_k8s.validate import kuberay, kueue

    calls: list[str] = []
    for module, name in ((kuberay, "kuberay_problems"), (kueue, "kueue_problems")):
        real = getattr(module, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        for loaded in list(sys.modules.values()):  # every module that imported it by name
            if getattr(loaded, name, None) is real:
                monkeypatch.setattr(loaded, name, counted)
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe_kueue.infra.yaml"),
                          Layers(env=clean_env))
    judged = [o for o in bundle.objects if names.judged(o)]
    assert 0 < len(judged) < len(bundle.objects)  # the sandbox, its policies... are not Kueue's
    assert (calls.count("kuberay_problems"), calls.count("kueue_problems")) == (len(bundle.objects), len(judged))


def test_the_bundle_carries_what_check_reports() -> None:
    """check only formats: the fit it could not judge, the sandbox's ways out and what must exist
    come with the bundle, as plain data."""
    from support.examples import example_bundle

    found = example_bundle("kind_single_gpu", ["sandbox.networkPolicy.enabled=false"]).findings
    assert [(u.group, u.gpus, u.instance_type) for u in found.unchecked] == [("trainer", 1, "")]
    assert found.most_gpus[0] == 8 and "p5.48xlarge" in found.most_gpus[1]
    assert {e.severity for e in found.exposures} == {"error"}
    assert found.token is not None and found.token.ref == "Secret dockyard/grpo-tiny-ray-auth"
    assert ("RuntimeClass nvidia", "runtimeClassName") in found.prerequisites
    assert found.token.ref in dict(found.prerequisites)
