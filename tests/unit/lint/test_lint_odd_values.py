"""Lint never raises on a malformed manifest: it says a rule could not check it."""

from __future__ import annotations

import pytest

from dockyard_k8s.cli import main
from dockyard_k8s.lint.engine import lint_objects
from dockyard_k8s.lint.model import Obj
from odd_values import mutated, rendered

ODD = ["", "x", -1, 70000, "abc", None, True, {}, [], ["a"], {"a": 1}, 3.5, "Exists", "x" * 70]


@pytest.mark.parametrize("seed", range(8))
def test_rules_and_pod_security_never_raise_on_odd_values(seed):
    objects = [Obj(o) for o in mutated(rendered(), seed, copies=6, most=4, odd=ODD)]
    report = lint_objects(objects)
    assert report.objects == len(objects)


def test_a_malformed_field_is_a_finding_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "odd.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n"
                    "  - name: c\n    image: i:1\n    securityContext: {capabilities: {add: [NET_ADMIN], drop: 5}}\n")
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out
    (finding,) = [line for line in out.splitlines() if line.startswith("  error    capabilities: ")]
    assert "could not be checked" in finding  # the whole finding: tests/golden/messages/lint.txt
