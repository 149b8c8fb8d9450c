"""`validate` across worker processes gives exactly what one process gives."""

import copy
import itertools
import json
import os
import sys

import pytest
from validate_samples import DEPLOYMENT

from dockyard_k8s.cli import main
from dockyard_k8s.validate import bulk
from dockyard_k8s.validate.bulk import validate_paths
from dockyard_k8s.validate.engine import ValidateOptions, validate_files
from dockyard_k8s.yamlfile import dump_documents

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork only on Linux")


def _objects(n):
    """Deployments and the Services selecting them, every tenth one broken in one of several ways."""
    out = []
    for i in range(n):
        d = copy.deepcopy(DEPLOYMENT)
        d["metadata"] = {"name": f"web-{i}", "namespace": "ns", "labels": {"app": f"web-{i}"}}
        d["spec"]["selector"] = {"matchLabels": {"app": f"web-{i}"}}
        d["spec"]["template"]["metadata"]["labels"] = {"app": f"web-{i}"}
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"web-{i}", "namespace": "ns"},
               "spec": {"selector": {"app": f"web-{i}"}, "ports": [{"port": 80, "targetPort": 8080}]}}
        if i % 10 == 3:
            d["spec"]["bogus"] = 1  # schema
        elif i % 10 == 5:
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "abc"
        elif i % 10 == 7:
            svc["spec"]["selector"] = {"app": "nobody"}  # cross-object: selects no pod
        elif i % 10 == 1:  # two problems, found in the opposite order to their lines
            d["spec"]["replicas"] = 3000000000
            d["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "1BAD", "value": "a"}]
        elif i % 10 == 9:
            svc["spec"]["ports"][0]["targetPort"] = "http"  # cross-object: no such named port
        out += [d, svc] if i % 2 else [svc, d]  # a Service may come before or after its pods
    return out


@pytest.fixture
def corpus(tmp_path):
    """Several files: big YAML streams (one with a syntax error and a duplicate key), a List, JSON."""
    first = dump_documents(_objects(60))
    broken = dump_documents(_objects(40)).replace("replicas: 2\n", "replicas: 2\nreplicas: 3\n", 1)
    broken += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: [unclosed\n---\n" + dump_documents(_objects(5))
    (tmp_path / "a.yaml").write_text(first)
    (tmp_path / "b.yaml").write_text(broken)
    items = {"apiVersion": "v1", "kind": "List", "items": _objects(4)}
    (tmp_path / "c.json").write_text(json.dumps(items))
    (tmp_path / "d.yaml").write_text("%YAML 1.2\n---\n" + dump_documents(_objects(3)))  # read whole
    return str(tmp_path)


def _reference(path):
    """The one-process path: every document read and validated together, cross-object rules inside."""
    return validate_files([path])


def _same(one, many):
    assert many.problems == one.problems
    assert many.report == one.report
    assert many.files == one.files


@pytest.fixture
def worker_pids(tmp_path, monkeypatch):
    """The pid of the process that ran each part, appended to a file (works across fork)."""
    log = tmp_path / "parts.log"
    real = bulk._run_part

    def logged(*args):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(*args)

    monkeypatch.setattr(bulk, "_run_part", logged)
    return lambda: [int(line) for line in log.read_text().split()] if log.exists() else []


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_workers_find_the_same_problems_in_the_same_order(corpus, workers, monkeypatch, worker_pids):
    monkeypatch.setattr(bulk, "MIN_PARALLEL_BYTES", 0)
    one = validate_paths([corpus], workers=1)
    assert worker_pids() == []  # one process: no parts
    _same(_reference(corpus), one)
    assert {p.rule for p in one.problems} == {"yaml", "schema", "semantic"}
    assert any("selects no pod" in p.message for p in one.problems)
    assert any("declares a port named" in p.message for p in one.problems)
    assert all(p.line for p in one.problems)
    by_object: dict = {}
    for p in one.problems:  # within an object, by line (the checks find replicas' last)
        by_object.setdefault((p.file, p.doc_index, p.path[:2] if p.path[:1] == ("items",) else ()), []).append(p.line)
    assert all(lines == sorted(lines) for lines in by_object.values())
    assert any(len(lines) > 1 for lines in by_object.values())
    _same(one, validate_paths([corpus], workers=workers))
    # the unreadable document is an object too: the summary's counts add up
    assert one.report.objects == one.report.valid + one.report.invalid + one.report.skipped
    pids = worker_pids()
    texts = {f: bulk.read_text(f) for f in bulk.manifest_files([corpus])}
    parts = bulk.plan_parts(texts, {f for f, text in texts.items() if bulk.read_whole(text, f)}, bulk.guided(workers))
    assert len(pids) == len(parts) > 1  # every part ran once...
    assert os.getpid() not in pids  # ...in a forked worker, none in this process


def test_a_failed_worker_is_redone_by_the_parent(corpus, monkeypatch):
    monkeypatch.setattr(bulk, "MIN_PARALLEL_BYTES", 0)
    one = validate_paths([corpus], workers=1)
    parent = os.getpid()
    real = bulk._run_part
    ran_here = []

    def dies_in_children(*args):
        if os.getpid() != parent:
            raise MemoryError("worker out of memory")
        ran_here.append(1)
        return real(*args)

    monkeypatch.setattr(bulk, "_run_part", dies_in_children)
    _same(one, validate_paths([corpus], workers=3))
    assert ran_here  # the parent did the parts


def test_small_inputs_and_exit_on_error_stay_in_one_process(corpus, monkeypatch):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    validate_paths([corpus], workers=4)  # under MIN_PARALLEL_BYTES
    monkeypatch.setattr(bulk, "MIN_PARALLEL_BYTES", 0)
    result = validate_paths([corpus], ValidateOptions(exit_on_error=True), workers=4)
    assert len({(p.file, p.doc_index) for p in result.problems}) == 1


def test_plan_cuts_at_document_lines_and_keeps_file_order():
    doc = "---\nkind: A\n"  # 12 characters
    texts = {"a": doc * 4, "b": '{"kind": "B"}', "c": doc * 2}
    assert bulk.plan_parts(texts, {"b"}, 1) == [[("a", 0, 48), ("b", 0, -1), ("c", 0, 24)]]
    two = bulk.plan_parts(texts, {"b"}, 2)
    assert two == [[("a", 0, 36)], [("a", 36, 48), ("b", 0, -1), ("c", 0, 24)]]
    shares = [*range(1, 9), *(bulk.guided(w) for w in (1, 2, 3, 8))]
    for workers in shares:  # every file covered once, in order, cut only at "---" lines
        parts = bulk.plan_parts(texts, {"b"}, workers)
        assert all(len({f for f, _, _ in part}) == len(part) for part in parts)  # one region of a file per part
        spans = [s for part in parts for s in part]
        for file, text in texts.items():
            mine = [(start, end) for f, start, end in spans if f == file]
            if file == "b":
                assert mine == [(0, -1)]
                continue
            assert mine[0][0] == 0 and mine[-1][1] == len(text)
            assert all(end == nxt for (_, end), (nxt, _) in itertools.pairwise(mine))
            assert all(text.startswith("---", start) for start, _ in mine)


def test_guided_shares_shrink_and_add_up():
    shares = bulk.guided(2)
    assert abs(sum(shares) - 1) < 1e-9 and shares[0] == 0.25
    assert all(a >= b for a, b in itertools.pairwise(shares)) and len(shares) <= 255
    text = "".join(f"---\nkind: A\nn: {i:04}\n" for i in range(2000))
    sizes = [sum(end - start for _, start, end in part) for part in bulk.plan_parts({"a": text}, set(), shares)]
    assert sizes[0] > 3 * sizes[-1] and abs(sizes[0] / len(text) - 0.25) < 0.01


def test_workers_flag(corpus, capsys):
    assert main(["validate", "--workers", "2", "--summary", corpus]) == 1
    assert "Summary:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["validate", "--workers", "0", corpus])
    assert e.value.code == 2
    assert "expected a number of processes >= 1, got '0'" in capsys.readouterr().err


def test_no_fork_while_other_threads_run(corpus, monkeypatch):
    import threading

    monkeypatch.setattr(bulk, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert validate_paths([corpus], workers=4).problems
    finally:
        stop.set()
        thread.join()
