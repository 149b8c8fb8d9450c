"""`run` / `status` of a run queued with Kueue, against the fake API server."""

from __future__ import annotations

from typing import Any

from fakekube import FakeKube
from kuberay_sim import EXAMPLES, NS, RUN

KUEUE_ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe_kueue.infra.yaml")]


def test_the_team_queue_objects_are_render_only(cli: Any, fake: FakeKube) -> None:
    r = cli("run", *KUEUE_ARGS, "--detach")
    assert r.code == 0, r.err
    for kind in ("ResourceFlavor", "Topology", "ClusterQueue", "LocalQueue"):
        assert f"{kind} " in r.out and "skipped (render-only" in r.out
    assert not any("kueue.x-k8s.io" in q.path for q in fake.requests)
    job = fake.get("ray.io/v1", "RayJob", NS, RUN)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "rl-research"
