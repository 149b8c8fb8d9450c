"""`validate` across worker processes gives exactly what one process gives."""

import copy
import itertools
import json
import os
import sys

import pytest
from validate_samples import DEPLOYMENT

from dockyard_k8s.cli import main
from dockyard_k8s.render.serialize import dump_documents
from dockyard_k8s.validate import parallel
from dockyard_k8s.validate.parallel import validate_paths

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
    """The one-process engine, cross-object rules inside validate_documents (--exit-on-error's path)."""
    from dockyard_k8s.validate.reader import manifest_files, read_text

    files = manifest_files([path])
    return parallel._serial([path], files, {f: read_text(f) for f in files}, {})


def _same(one, many):
    assert many.problems == one.problems
    assert many.report == one.report
    assert many.files == one.files


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_workers_find_the_same_problems_in_the_same_order(corpus, workers, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    one = validate_paths([corpus], workers=1)
    _same(_reference(corpus), one)
    assert {p.rule for p in one.problems} == {"yaml", "schema", "semantic"}
    assert any("selects no pod" in p.message for p in one.problems)
    assert any("declares a port named" in p.message for p in one.problems)
    assert all(p.line for p in one.problems)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    _same(one, validate_paths([corpus], workers=workers))
    assert len(forks) == workers - 1


def test_a_failed_worker_is_redone_by_the_parent(corpus, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    one = validate_paths([corpus], workers=1)
    parent = os.getpid()
    real = parallel._run_part

    def dies_in_children(*args):
        if os.getpid() != parent:
            raise MemoryError("worker out of memory")
        return real(*args)

    monkeypatch.setattr(parallel, "_run_part", dies_in_children)
    _same(one, validate_paths([corpus], workers=3))


def test_small_inputs_and_exit_on_error_stay_in_one_process(corpus, monkeypatch):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    validate_paths([corpus], workers=4)  # under MIN_PARALLEL_BYTES
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    result = validate_paths([corpus], workers=4, exit_on_error=True)
    assert len({(p.file, p.doc_index) for p in result.problems}) == 1


def test_mapped_files_are_released_unless_the_caller_is_about_to_exit(tmp_path, monkeypatch):
    from dockyard_k8s.validate import reader

    monkeypatch.setattr(reader, "_MAP_FROM", 100_000)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    big = tmp_path / "big.yaml"
    big.write_text(dump_documents(_objects(200)))  # over _MAP_FROM: mapped, kept while validating
    assert big.stat().st_size >= reader._MAP_FROM
    reader.release_mapped()
    kept = len(parallel._KEEP)
    first = validate_paths([str(big)], workers=2)
    assert reader._MAPPED == {} and len(parallel._KEEP) == kept  # a library caller: nothing left behind
    try:
        again = validate_paths([str(big)], workers=2, keep_parsed=True)  # the CLI: it exits right after
        assert len(reader._MAPPED) == 1 and any(isinstance(k, dict) and str(big) in k for k in parallel._KEEP)
        assert again.problems == first.problems
    finally:
        reader.release_mapped()
        del parallel._KEEP[kept:]


def test_plan_cuts_at_document_lines_and_keeps_file_order():
    doc = "---\nkind: A\n"  # 12 characters
    texts = {"a": doc * 4, "b": '{"kind": "B"}', "c": doc * 2}
    assert parallel._plan(texts, {"b"}, 1) == [[("a", 0, 48), ("b", 0, -1), ("c", 0, 24)]]
    two = parallel._plan(texts, {"b"}, 2)
    assert two == [[("a", 0, 36)], [("a", 36, 48), ("b", 0, -1), ("c", 0, 24)]]
    shares = [*range(1, 9), *(parallel.guided(w) for w in (1, 2, 3, 8))]
    for workers in shares:  # every file covered once, in order, cut only at "---" lines
        parts = parallel._plan(texts, {"b"}, workers)
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
    shares = parallel.guided(2)
    assert abs(sum(shares) - 1) < 1e-9 and shares[0] == 0.25
    assert all(a >= b for a, b in itertools.pairwise(shares)) and len(shares) <= 255
    text = "".join(f"---\nkind: A\nn: {i:04}\n" for i in range(2000))
    sizes = [sum(end - start for _, start, end in part) for part in parallel._plan({"a": text}, set(), shares)]
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

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert validate_paths([corpus], workers=4).problems
    finally:
        stop.set()
        thread.join()
