"""Kubeconfig files are read as kubectl reads them: KUBECONFIG lists merged (first file wins
per named entry, current-context from the first that sets it), relative paths against the
file that holds them, and malformed files located (file:line:col, exit 2), never a traceback.

The merge is compared with the real kubectl (`kubectl config view --merge`) of every
version this machine has (kubectl.1.27 ... kubectl.1.33, beside `kubectl`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dockyard_k8s.live import kubeconfig as kc
from dockyard_k8s.yamlfile import Mark


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def split(tmp_path: Path) -> dict[str, Any]:
    """Three files as teams write them: contexts in one, clusters in another, overlaps."""
    a = write(tmp_path / "a.yaml", """\
        apiVersion: v1
        kind: Config
        contexts:
        - name: shared
          context: {cluster: c1, user: u1, namespace: from-a}
        users:
        - name: u1
          user: {token: tok-a}
        """)
    b = write(tmp_path / "sub" / "b.yaml", """\
        apiVersion: v1
        kind: Config
        current-context: shared
        contexts:
        - name: shared
          context: {cluster: c2, user: u2, namespace: from-b}
        - name: only-b
          context: {cluster: c1, user: u1}
        clusters:
        - name: c1
          cluster: {server: "https://b.example:6443", certificate-authority: ca.crt}
        users:
        - name: u1
          user: {token: tok-b, client-key: key.pem}
        - name: u2
          user: {tokenFile: tok.txt, exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bin/login}}
        """)
    c = write(tmp_path / "c.yaml", """\
        current-context: ignored
        clusters:
        - name: c2
          cluster: {server: "https://c.example"}
        """)
    (tmp_path / "sub" / "ca.crt").write_text("CA OF B\n")
    env = {"KUBECONFIG": os.pathsep.join([a, b, str(tmp_path / "missing.yaml"), "", a, c])}
    return {"a": a, "b": b, "c": c, "env": env, "dir": tmp_path}


def test_files_merge_first_wins_per_entry_and_current_context(split: dict[str, Any]) -> None:
    files = kc.kubeconfig_files(None, split["env"])
    assert files == [split["a"], split["b"], split["c"]]  # missing, empty and repeated entries dropped
    config = kc.merge_files(files)
    assert config.data["current-context"] == "shared"  # c.yaml's comes too late
    assert config.entry("contexts", "shared") == {"cluster": "c1", "user": "u1", "namespace": "from-a"}
    assert config.entry("users", "u1") == {"token": "tok-a"}  # b's u1 discarded whole, client-key too
    assert config.names("contexts") == ["shared", "only-b"]
    assert config.entry("clusters", "c2") == {"server": "https://c.example"}
    sub = split["dir"] / "sub"
    assert config.entry("clusters", "c1")["certificate-authority"] == str(sub / "ca.crt")
    u2 = config.entry("users", "u2")
    assert u2 is not None
    assert (u2["tokenFile"], u2["exec"]["command"]) == (str(sub / "tok.txt"), str(sub / "bin/login"))
    selected = kc.select(config)
    assert (selected.name, selected.namespace, selected.cluster["server"]) == ("shared", "from-a",
                                                                                "https://b.example:6443")
    assert kc.select(config, "only-b").namespace is None


def test_explicit_kubeconfig_is_that_file_only(split: dict[str, Any], tmp_path: Path) -> None:
    assert kc.kubeconfig_files(split["c"], split["env"]) == [split["c"]]
    home = {"HOME": str(tmp_path / "home")}
    assert kc.kubeconfig_files(None, home) == [] or kc.kubeconfig_files(None, home)[0].endswith(".kube/config")


def _kubectls() -> list[str]:
    real = shutil.which("kubectl")
    dirs = [os.path.dirname(os.path.realpath(real))] if real else []
    found = []
    for minor in range(27, 34):
        name = f"kubectl.1.{minor}"
        exe = shutil.which(name) or next(
            (os.path.join(d, name) for d in dirs if os.path.exists(os.path.join(d, name))), None)
        if exe:
            found.append(exe)
    return found


KUBECTLS = _kubectls()


@pytest.mark.skipif(not KUBECTLS, reason="no kubectl.1.NN on this machine (kubectl 1.27-1.33 expected beside kubectl)")
@pytest.mark.parametrize("kubectl", KUBECTLS, ids=[os.path.basename(k) for k in KUBECTLS])
def test_merge_matches_real_kubectl(split: dict[str, Any], kubectl: str) -> None:
    """`KUBECONFIG=a:b:... kubectl config view --merge --raw --flatten` and ours agree on the
    current context, every context, every cluster (the CA file kubectl embeds is the one our
    resolved path names) and every user's token."""
    env = {**os.environ, **split["env"]}
    out = subprocess.run([kubectl, "config", "view", "--merge", "--raw", "--flatten", "-o", "json"], env=env,
                         capture_output=True, text=True, timeout=60, cwd=split["dir"], check=True).stdout
    theirs = json.loads(out)
    ours = kc.merge_files(kc.kubeconfig_files(None, split["env"]))
    assert theirs["current-context"] == ours.data["current-context"]
    assert {c["name"]: c["context"] for c in theirs["contexts"]} == {
        c["name"]: c["context"] for c in ours.data["contexts"]}
    for cluster in theirs["clusters"]:
        mine = ours.entry("clusters", cluster["name"])
        assert mine is not None and mine["server"] == cluster["cluster"]["server"]
        if "certificate-authority-data" in cluster["cluster"]:
            embedded = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
            assert Path(mine["certificate-authority"]).read_bytes() == embedded
    assert {u["name"]: u["user"].get("token") for u in theirs["users"]} == {
        u["name"]: u["user"].get("token") for u in ours.data["users"]}


# kubectl refuses them too; what we say of them: tests/golden/messages/kubeconfig.txt
MALFORMED = {"top-level list": "- a\n- b\n", "bad yaml": "clusters: [\n", "clusters mapping": "clusters: {a: 1}\n"}


@pytest.mark.skipif(not KUBECTLS, reason="no kubectl.1.NN on this machine")
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_kubectl_refuses_the_same_files(tmp_path: Path, name: str) -> None:
    """What we refuse as malformed, kubectl refuses to load too (oldest and newest)."""
    path = tmp_path / "kubeconfig"
    path.write_text(MALFORMED[name])
    for kubectl in (KUBECTLS[0], KUBECTLS[-1]):
        done = subprocess.run([kubectl, "config", "view"], env={**os.environ, "KUBECONFIG": str(path)},
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode != 0 and "error loading config file" in done.stderr
    with pytest.raises(kc.KubeconfigError):
        kc.merge_files([str(path)])


def test_an_empty_file_in_a_list_sets_nothing(tmp_path: Path, split: dict[str, Any]) -> None:
    """kubectl reads an empty file of a KUBECONFIG list as a config that sets nothing."""
    empty = write(tmp_path / "empty.yaml", "")
    config = kc.merge_files([empty, split["a"], split["b"]])
    assert kc.select(config).name == "shared"


def test_context_namespace_is_quiet_on_problems(tmp_path: Path, split: dict[str, Any]) -> None:
    assert kc.resolve(None, None, split["env"]).namespace == "from-a"
    assert kc.resolve(None, "only-b", split["env"]).namespace is None
    bad = write(tmp_path / "bad.yaml", "- not a config\n")
    assert kc.resolve(bad, None, {}).namespace is None  # connecting reports the problem


def test_a_target_keeps_its_problem_for_connecting(tmp_path: Path, split: dict[str, Any]) -> None:
    """resolve reads once; the namespace default is quiet, usable() (what connect calls) raises
    the problem found then, located."""
    target = kc.resolve(None, None, split["env"])
    found = target.usable()
    assert target.namespace == "from-a" and found is not None and found[1].name == "shared"
    bad = write(tmp_path / "bad.yaml", "- not a config\n")
    target = kc.resolve(bad, None, {})
    assert target.namespace is None
    with pytest.raises(kc.KubeconfigError) as e:
        target.usable()
    assert f"{bad}:1:1" in e.value.render()
    assert kc.resolve(None, None, {"KUBECONFIG": str(tmp_path / "none.yaml")}).usable() is None  # no file: in-cluster


def test_scalars_and_repeated_keys_read_as_client_go_reads_them(tmp_path: Path) -> None:
    """go-yaml v2: ``y`` is a boolean, a timestamp stays a string; a repeated key keeps its last
    value (client-go's decoding is not strict); every place is the value's line and column."""
    path = write(tmp_path / "config", """\
        current-context: old
        current-context: dev
        contexts:
        - {name: dev, context: {cluster: c, namespace: 2024-01-01}}
        clusters:
        - name: c
          cluster:
            server: https://x
            insecure-skip-tls-verify: y
        """)
    config = kc.merge_files([path])
    selected = kc.select(config)
    assert (selected.name, selected.namespace, selected.cluster["insecure-skip-tls-verify"]) == (
        "dev", "2024-01-01", True)
    assert config.where[("current-context",)] == Mark(path, 2, 18)
    assert config.locate("clusters", "c", "server") == Mark(path, 8, 13)
    assert config.locate("contexts", "dev", "missing") == Mark(path, 4, 3)
