"""`render`, `run --dry-run=client` and `run` show and apply one list (render.record.launch_objects):
the dry run lists, in order, exactly what `run` applies on the API server; render prints the same
objects except the Ray token Secret, whose generator it prints instead (never a token)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from fakekube import FakeKube

from dockyard_k8s.kube import object_ref
from support.paths import EXAMPLES

ARGS = [str(EXAMPLES / "grpo_swe.yaml"), "--infra", str(EXAMPLES / "grpo_swe.infra.yaml")]
SECRET = re.compile(r"^would create (Secret \S+) with a random Ray token, unless it exists$")


@pytest.mark.parametrize("extra", [[], ["--set", "launch.mode=bringup", "--set", "kuberay.auth.mode=disabled"]])
def test_the_dry_run_lists_what_run_applies_and_render_prints(cli: Any, fake: FakeKube, extra: list[str]) -> None:
    dry = cli("run", *ARGS, *extra, "--dry-run=client")
    assert dry.code == 0, dry.err
    listed = [m.group(1) if (m := SECRET.match(line)) else line.removeprefix("would apply ")
              for line in dry.out.splitlines() if line.startswith("would ")]

    rendered = cli("render", *ARGS, *extra)
    assert rendered.code == 0, rendered.err
    assert [object_ref(o) for o in yaml.safe_load_all(rendered.out)] == \
        [ref for ref in listed if not (ref.startswith("Secret ") and ref.endswith("-ray-auth"))]

    assert cli("run", *ARGS, *extra, "--detach").code == 0
    applied = [object_ref(yaml.safe_load(q.body)) for q in fake.requests if q.method == "PATCH"
               and q.params.get("dryRun") != "All" and q.params["fieldManager"] == "dockyard-k8s"]
    assert applied == listed
    assert listed[-1].startswith("RayJob " if not extra else "RayCluster ")
