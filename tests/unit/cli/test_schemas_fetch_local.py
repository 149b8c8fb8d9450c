"""`schemas fetch --from` an air-gapped mirror: a local directory or a file:// URL."""

from __future__ import annotations

import os
import shutil

import pytest

from dockyard_k8s.cli import main
from dockyard_k8s.validate.crd import BUNDLED_DIR

BUNDLED_KUBERAY = os.path.join(BUNDLED_DIR, "kuberay-v1.7.0")  # the package's own copies: present everywhere
# The package bundles no RayService (it never renders one); a mirror holds every upstream file.
RAYSERVICE_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: rayservices.ray.io}
spec:
  group: ray.io
  names: {kind: RayService, plural: rayservices}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Fetched CRDs go to this test's cache, not the session's (they would win over the bundled ones)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def mirror(tmp_path):
    target = tmp_path / "mirror" / "v1.7.0"
    shutil.copytree(BUNDLED_KUBERAY, target, ignore=shutil.ignore_patterns("*.json"))
    (target / "ray.io_rayservices.yaml").write_text(RAYSERVICE_CRD)
    return tmp_path / "mirror"


@pytest.mark.parametrize("form", ["path", "url"])
def test_fetch_from_a_local_mirror(mirror, capsys, form):
    where = f"{mirror}/{{version}}" if form == "path" else f"file://{mirror}/{{version}}"
    assert main(["schemas", "fetch", "--kuberay", "v1.7.0", "--from", where]) == 0
    out = capsys.readouterr().out
    assert "fetched" in out and "ray.io/v1/RayJob" in out


def test_a_mirror_that_is_not_there_is_exit_2(tmp_path, capsys):
    assert main(["schemas", "fetch", "--kuberay", "v1.7.0", "--from", f"{tmp_path}/nope/{{version}}"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/nope/v1.7.0 is not a directory" in err and "Traceback" not in err


def test_a_mirror_missing_a_file_says_which(mirror, capsys):
    os.remove(mirror / "v1.7.0" / "ray.io_rayjobs.yaml")
    assert main(["schemas", "fetch", "--kuberay", "v1.7.0", "--from", f"{mirror}/{{version}}"]) == 2
    assert "ray.io_rayjobs.yaml not found (the mirror needs" in capsys.readouterr().err
