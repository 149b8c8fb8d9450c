"""The public API ``dockyard_k8s/__init__.py`` promises: load a run, render it, validate, lint, plan."""

from __future__ import annotations

import dockyard_k8s
from dockyard_k8s.config.layering import Layers
from support.paths import EXAMPLES, REPO

RECIPE = f"{EXAMPLES}/grpo_swe.yaml"
INFRA = f"{EXAMPLES}/grpo_swe_kueue.infra.yaml"  # it declares plan.nodePools


def test_load_render_validate_lint_plan(clean_env):
    from dockyard_k8s import (
        build_bundle,
        from_pools,
        lint_objects,
        load_run,
        plan_objects,
        read_objects,
        render_run,
        validate_objects,
    )

    run = load_run(RECIPE, INFRA, Layers(env=clean_env))
    assert (run.name, run.namespace) == ("grpo-swe", "rl-research")
    objects = render_run(run)
    assert objects == build_bundle(RECIPE, INFRA, Layers(env=clean_env)).objects
    assert validate_objects(objects) == []
    report = lint_objects(objects)
    assert report.exit_code == 0 and report.findings
    result = plan_objects(objects, from_pools(run.infra["plan"]))
    assert result.exit_code == 0 and result.groups
    assert [m.data["kind"] for m in read_objects([str(REPO / "infra" / "examples" / "sandbox-pool.yaml")])] == [
        "NetworkPolicy", "ServiceAccount", "Deployment", "Service", "PodDisruptionBudget"]


def test_every_exported_name_resolves():
    for name in dockyard_k8s.__all__:
        assert getattr(dockyard_k8s, name) is not None, name
