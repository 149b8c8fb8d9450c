"""Lint never raises on a malformed manifest: it says a rule could not check it."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from dockyard_k8s.cli import main
from dockyard_k8s.lint.engine import lint_objects
from dockyard_k8s.lint.model import Obj

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "expected" / "grpo_swe.rayjob.yaml"
ODD = ["", "x", -1, 70000, "abc", None, True, {}, [], ["a"], {"a": 1}, 3.5, "Exists", "x" * 70]


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    if path:
        yield path


@pytest.mark.parametrize("seed", range(8))
def test_rules_and_pod_security_never_raise_on_odd_values(seed):
    rnd = random.Random(seed)
    objects = []
    for base in (o for o in yaml.safe_load_all(GOLDEN.read_text()) if isinstance(o, dict)):
        paths = list(_leaves(base))
        for _ in range(6):
            obj = copy.deepcopy(base)
            for _ in range(rnd.randint(1, 4)):
                node, path = obj, rnd.choice(paths)
                try:
                    for part in path[:-1]:
                        node = node[part]
                    node[path[-1]] = copy.deepcopy(rnd.choice(ODD))
                except (KeyError, IndexError, TypeError):
                    pass
            objects.append(Obj(obj))
    report = lint_objects(objects)
    assert report.objects == len(objects)


def test_a_malformed_field_is_a_finding_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "odd.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n"
                    "  - name: c\n    image: i:1\n    securityContext: {capabilities: {add: [NET_ADMIN], drop: 5}}\n")
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out
    assert "capabilities: could not be checked: a field this rule reads has an unexpected type" in out
