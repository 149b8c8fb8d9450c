"""kubectl parity of the live commands against the stateful fake: the kubeconfig context's
namespace, KUBECONFIG lists, a Ray cluster that does not exist."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakekube import FakeKube
from kuberay_sim import EXAMPLES

RECIPE = str(EXAMPLES / "grpo_swe.yaml")


@pytest.fixture
def bare_infra(tmp_path: Path) -> str:
    """An infra file that names no namespace (as most first infra files do)."""
    path = tmp_path / "bare.infra.yaml"
    path.write_text("infra:\n  image: ghcr.io/acme/trainer:1.0\n")
    return str(path)


def namespaces_of_run(fake: FakeKube) -> set[str]:
    return {o["metadata"]["namespace"] for o in fake.all("ray.io/v1", "RayJob")}


def test_context_namespace_when_no_one_names_one(cli: Any, fake: FakeKube, bare_infra: str) -> None:
    """kubectl's rule: -n, else the context's namespace, else default; an infra file or --set
    that names one wins over the context (it is the user's)."""
    r = cli("run", RECIPE, "--infra", bare_infra, "--detach")
    assert r.code == 0, r.err
    assert "in rl-research" in r.out and namespaces_of_run(fake) == {"rl-research"}  # context fake's
    r = cli("status", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and "run grpo-swe in rl-research" in r.out
    r = cli("down", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and namespaces_of_run(fake) == set()
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "--context", "other").code == 0
    assert namespaces_of_run(fake) == {"default"}  # context other sets none
    cli("down", RECIPE, "--infra", bare_infra, "--context", "other")
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "-n", "default").code == 0
    assert namespaces_of_run(fake) == {"default"}  # -n wins
    cli("down", RECIPE, "--infra", bare_infra, "-n", "default")
    assert cli("run", RECIPE, "--infra", bare_infra, "--detach", "--set", "infra.namespace=default").code == 0
    assert namespaces_of_run(fake) == {"default"}  # a user layer wins over the context


def test_offline_commands_ignore_the_context(cli: Any, bare_infra: str) -> None:
    """render output is the same on every machine: the kubeconfig is never read."""
    r = cli("render", RECIPE, "--infra", bare_infra)
    assert r.code == 0 and "namespace: default" in r.out and "rl-research" not in r.out


def test_kubeconfig_list_is_merged(cli: Any, fake: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   kubeconfig: str, bare_infra: str) -> None:
    """KUBECONFIG=contexts.yaml:clusters.yaml (split files) works as with kubectl (it failed
    with "cannot use kubeconfig ...: 'clusters'")."""
    contexts = tmp_path / "contexts.yaml"
    contexts.write_text(textwrap.dedent("""\
        current-context: team
        contexts:
        - {name: team, context: {cluster: fake, user: me, namespace: rl-research}}
        """))
    creds = tmp_path / "creds.yaml"
    creds.write_text(textwrap.dedent("""\
        clusters:
        - {name: fake, cluster: {server: "https://fake.invalid:6443"}}
        users:
        - {name: me, user: {token: t}}
        """))
    monkeypatch.setenv("KUBECONFIG", f"{contexts}:{creds}")
    r = cli("run", RECIPE, "--infra", bare_infra, "--detach")
    assert r.code == 0, r.err
    assert namespaces_of_run(fake) == {"rl-research"}
    assert fake.requests[-1].headers["authorization"] == "Bearer t"


def test_job_on_a_cluster_that_does_not_exist(cli: Any) -> None:
    r = cli("job", "list", "--cluster", "nope")
    assert r.code == 1
    assert "no Service nope-head-svc in namespace rl-research: no RayCluster nope there" in r.err
    assert "cluster list -n rl-research" in r.err
