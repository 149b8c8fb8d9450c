"""Golden-independent: every example renders to objects with zero problems, against the strict
Kubernetes schemas and the real KubeRay and Kueue CRDs in ../shared/crds (not the bundled copies)."""

import glob
import os

import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.render import render_run
from dockyard_k8s.validate.engine import ValidateOptions, validate_report
from support.paths import REPO

INFRAS = sorted(glob.glob(str(REPO / "examples" / "*.infra.yaml")))
MODES = {"rayjob": [], "bringup": [], "attach": ["launch.attach.cluster=existing"]}


@pytest.mark.parametrize("infra", INFRAS, ids=os.path.basename)
@pytest.mark.parametrize("mode", sorted(MODES))
def test_example_renders_valid_objects_against_the_real_crds(infra, mode, kuberay_crds, kueue_crds):
    run = load_run(str(REPO / "examples" / "grpo_swe.yaml"), infra,
                   Layers(sets=[f"launch.mode={mode}", *MODES[mode]], env={}))
    objects = render_run(run)
    report = validate_report(objects, ValidateOptions(crd_sources=(str(kuberay_crds), str(kueue_crds)),
                                                      use_bundled=False, use_fetched=False))
    assert report.problems == []
    assert report.missing == []
    ray = [k for k in report.sources if k.startswith(("ray.io/", "kueue.x-k8s.io/"))]
    assert all(report.sources[k].startswith("CRD ") and "(--crd)" in report.sources[k] for k in ray)
    assert len(report.sources) == len({f"{o['apiVersion']}/{o['kind']}" for o in objects})


def test_build_bundle_fails_closed_on_a_renderer_bug(monkeypatch):
    import dockyard_k8s.bundle as bundle
    from dockyard_k8s.errors import ManifestError

    def broken(run):
        objects = render_run(run)
        (sandbox,) = [o for o in objects if o["kind"] == "Deployment"]
        sandbox["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Sometimes"
        sandbox["spec"]["bogus"] = True
        return objects

    monkeypatch.setattr(bundle, "render_run", broken)
    with pytest.raises(ManifestError) as e:
        build_bundle(str(REPO / "examples" / "grpo_swe.yaml"), INFRAS[0], Layers(env={}))
    text = e.value.render()
    assert e.value.exit_code == 1
    assert 'Deployment rl-research/grpo-swe-sandbox: spec.bogus: unknown field "bogus"' in text
    assert "imagePullPolicy: got 'Sometimes'" in text
    assert text.endswith("2 problem(s) in the rendered objects; nothing applied.")
