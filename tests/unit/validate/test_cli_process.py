"""`dockyard-k8s validate` as a real process: workers forked, output complete, exit code right."""

import os
import subprocess
import sys

import pytest

from dockyard_k8s.yamlfile import dump_documents

BROKEN = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "Bad_Name", "namespace": "ns"},
          "spec": {"ports": [{"port": 80}]}}
GOOD = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "v"}}


def _env(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("PYTHONUNBUFFERED", None)  # stdout block-buffered, as for users
    return env


def _run(args, tmp_path, **kw):
    env = _env(tmp_path)
    return subprocess.run([sys.executable, "-m", "dockyard_k8s", "validate", *args], env=env, capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork only on Linux")
def test_a_large_input_in_two_processes_prints_everything_and_exits_1(tmp_path):
    """Over 1 MB: two workers; the output must be whole and flushed, and the exit code right."""
    objects = [BROKEN if i % 500 == 0 else dict(GOOD, metadata={"name": f"c{i}", "namespace": "ns"})
               for i in range(12_000)]
    path = tmp_path / "big.yaml"
    path.write_text(dump_documents(objects))
    assert path.stat().st_size > 1_000_000
    result = _run(["--workers", "2", "--summary", str(path)], tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 24 + 1 and all("Service ns/Bad_Name" in line for line in lines[:-1])
    assert lines[-1] == "Summary: 12000 object(s) in 1 file(s): 11976 valid, 24 invalid, 0 skipped, 24 problem(s)"
    good = tmp_path / "good.yaml"
    good.write_text(dump_documents([GOOD]))
    assert _run([str(good)], tmp_path).returncode == 0


def test_output_into_a_closed_pipe_is_quiet(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(dump_documents([BROKEN] * 2000))
    env = _env(tmp_path)
    shell = f"{sys.executable} -m dockyard_k8s validate {path} | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", shell], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.count("\n") == 1 and "Bad_Name" in result.stdout
    assert "Traceback" not in result.stderr
