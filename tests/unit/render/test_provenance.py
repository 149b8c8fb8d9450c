"""Provenance: a rendered field knows the infra key (file:line:col, layer) that produced it."""

from __future__ import annotations

import pytest

from dockyard_k8s import bundle as bundle_mod
from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.errors import ConfigError, ManifestError
from dockyard_k8s.render import provenance, render_run

INFRA = "infra:\n  image: reg/img:1.0\n"


@pytest.fixture
def recipe(write):
    return write("r.yaml", "model: m\n")


def problems_of(recipe, infra, **layers):
    with pytest.raises(ConfigError) as e:
        build_bundle(recipe, infra, Layers(**layers))
    return [str(p) for p in e.value.problems]


def test_tracing_renders_the_same_objects(recipe, write, clean_env):
    run = load_run(recipe, write("i.yaml", INFRA + "kuberay:\n  pdb: {enabled: true}\n"), Layers(env=clean_env))
    plain = render_run(run)
    with provenance.tracing(run.infra):
        traced = render_run(run)
    assert traced == plain
    assert provenance.active() is None


def test_rendered_fields_know_their_infra_keys(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + "launch:\n  suspend: true\nkuberay:\n  trainer:\n    memoryLimit: 300Gi\n"
                                    "  spec:\n    workerGroupSpecs:\n      - groupName: trainer\n"
                                    "        template: {spec: {containers: [{name: ray-worker, ports: []}]}}\n")
    run = load_run(recipe, infra, Layers(env=clean_env))
    with provenance.tracing(run.infra) as trace:
        job = next(o for o in render_run(run) if o["kind"] == "RayJob")
    where = trace.paths(job).infra_key
    worker = ("spec", "rayClusterSpec", "workerGroupSpecs", 0)
    container = (*worker, "template", "spec", "containers", 0)
    assert where(("spec", "suspend")) == ("launch", "suspend")
    assert where(("metadata", "name")) == ("launch", "name")
    assert where((*container, "resources", "limits", "memory")) == ("kuberay", "trainer", "memoryLimit")
    assert where((*container, "resources", "requests", "memory")) == ("kuberay", "trainer", "memory")
    assert where((*container, "resources", "limits", "nvidia.com/gpu")) == ("kuberay", "trainer", "gpus")
    assert where((*worker, "replicas")) == ("kuberay", "trainer", "replicas")
    assert where((*worker, "template", "spec", "tolerations", 0, "key")) == \
        ("kuberay", "trainer", "tolerations", 0, "key")
    # a field the fragment added is the fragment's; the renderer's own fields are no one's
    assert where((*container, "ports")) == ("kuberay", "spec", "workerGroupSpecs", 0, "template", "spec",
                                           "containers", 0, "ports")
    assert where((*container, "volumeMounts", 0, "mountPath")) is None
    # and the loader knows the layer and place of each key
    problem = run.locate(("kuberay", "trainer", "memoryLimit"), "")
    assert (problem.file, problem.line) == (infra, 7)
    assert run.layer(("kuberay", "trainer", "memory")) == "<shipped defaults>"
    assert run.layer(("kuberay", "trainer", "memoryLimit")) == infra
    assert run.layer(("kuberay", "trainer", "tolerations", 0, "key")) == "<shipped defaults>"


def test_a_fragment_problem_is_reported_once_at_the_fragment(recipe, write, clean_env):
    infra = write("i.yaml", INFRA + """\
kuberay:
  spec:
    workerGroupSpecs:
      - groupName: trainer
        template:
          spec:
            containers:
              - name: ray-worker
                volumeMount: []
                resources:
                  limits:
                    memory: lots
""")
    found = problems_of(recipe, infra, env=clean_env)  # the whole messages: tests/golden/messages/run-rules.txt
    container = "kuberay.spec.workerGroupSpecs[0].template.spec.containers[0]"
    assert [p.split(": ")[:2] for p in found] == [[f"{infra}:11:17", f"{container}.volumeMount"],
                                                  [f"{infra}:14:29", f"{container}.resources.limits.memory"]]
    assert 'did you mean "volumeMounts"?' in found[0] and "got 'lots'" in found[1]


def test_a_problem_no_infra_value_explains_is_a_renderer_bug(recipe, write, clean_env, monkeypatch):
    real = bundle_mod.render_run

    def broken(run):
        objects = real(run)
        objects[-1]["spec"]["bogus"] = 1  # a renderer bug: no infra key behind it
        return objects

    monkeypatch.setattr(bundle_mod, "render_run", broken)
    with pytest.raises(ManifestError) as e:
        build_bundle(recipe, write("i.yaml", INFRA), Layers(env=clean_env))
    assert e.value.lines == ['object 7: RayJob default/r: spec.bogus: unknown field "bogus"']
