"""The launch facade (``live/launch.py``) used as a library, without the CLI: the calls the
commands make, with typed options instead of re-parsed ``--set`` strings."""

from __future__ import annotations

import os
from typing import Any

import pytest
from fakekube import FakeKube
from states import NS, RUN, set_job

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import Setting
from dockyard_k8s.errors import ConfigError
from support.paths import EXAMPLES


def bundle(*values: Setting) -> Any:
    return build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                        Layers(env=os.environ, values=values))


def test_launch_status_wait_down_as_a_library(client: Any, fake: FakeKube) -> None:
    from dockyard_k8s.live.launch import LaunchOptions, down, launch, status, wait

    lines: list[str] = []
    b = bundle()
    out = launch(client, b, LaunchOptions(detach=True), say=lines.append)
    assert (out.ok, out.reason) == (True, "detached")
    # the Ray token Secret, the eight rendered objects and the launch record
    assert "run grpo-swe in rl-research: 10 created" in lines
    assert status(client, b).main_phase() is not None
    set_job(fake, "Complete", "SUCCEEDED")
    assert wait(client, b, say=lines.append).reason == "succeeded"
    again = launch(client, b, LaunchOptions(), say=lines.append)
    assert (again.ok, again.reason) == (True, "already-finished")
    assert "RayJob rl-research/grpo-swe" in down(client, b, say=lines.append)
    assert fake.get("ray.io/v1", "RayJob", NS, RUN) is None


def test_client_dry_run_is_preview_only(client: Any) -> None:
    from dockyard_k8s.live.launch import LaunchOptions, launch, preview

    to_apply, skipped = preview(bundle())
    assert [o["kind"] for o in to_apply][-1] == "RayJob" and skipped == []
    with pytest.raises(ValueError, match="preview"):
        launch(client, bundle(), LaunchOptions(dry_run="client"))


def test_typed_settings_win_over_set_and_keep_their_type() -> None:
    b = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                     Layers(env=os.environ, sets=["launch.mode=rayjob"],
                            values=[Setting(("launch", "mode"), "bringup", "cluster up")]))
    assert [o["kind"] for o in b.objects][-1] == "RayCluster"
    with pytest.raises(ConfigError) as e:
        bundle(Setting(("launch", "preRunningDeadlineSeconds"), 0, "--pre-running-deadline 0"))
    assert "--pre-running-deadline 0: launch.preRunningDeadlineSeconds" in e.value.render()


def test_namespace_flag_is_a_string_even_when_it_looks_like_a_number(cli: Any, fake: FakeKube) -> None:
    fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "2024"}})
    for secret in ("ghcr-pull", "wandb"):  # what the example's pods name
        fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": "2024"}})
    r = cli("run", str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml"), "-n", "2024",
            "--detach")
    assert r.code == 0, r.err
    assert fake.get("ray.io/v1", "RayJob", "2024", RUN) is not None
