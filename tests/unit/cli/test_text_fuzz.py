"""Mutated manifest text never makes `validate`, `lint` or `plan --manifests` raise: every
input gets exit 0, 1 or 2 and its problems as messages (the standard: never a traceback).
The mutations are what hand-edited YAML goes through: odd scalars and keys (YAML 1.1 words,
numbers, null, tags, anchors, flow collections), duplicated, deleted or re-indented lines."""

import random

import pytest

from dockyard_k8s.yamlfile import dump_documents
from odd_values import rendered
from support.cli import run_cli

SCALARS = ["yes", "no", "on", "0x1F", "0755", "1_000", ".inf", "-.inf", ".nan", "~", "null", "[]", "{}",
           "!!str 1", "&a x", "*a", '"q"', "'", "- x", "1:2", "? x", ": x", "1e400", "-1", "99999999999999999999",
           "true", "|\n  block", ">-\n  folded", "[a, {b: c}]", "{a: [1, 2]}", "!!binary aGk=", "2024-01-01",
           "é", "\t", "<<: *a", "%", "...", "---", "#", '"unterminated', "{", "]", "10:30", "!tag x", "0o17",
           "+1", "1.", "x" * 300, "-", "? [a, b]\n: c"]
KEYS = ["1", "true", "~", ".inf", "0x1F", "on", "010", "1_0", "a b", '"q"', "? k", "-k", "<<", "k:", "&a k", "*a"]
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "rl-research"},
           "spec": {"selector": {"app": "x"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def _mutated(rnd: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(lines))
        line, op = lines[i], rnd.random()
        if op < 0.4 and ": " in line:
            lines[i] = f"{line.partition(': ')[0]}: {rnd.choice(SCALARS)}"
        elif op < 0.6 and ":" in line:
            indent = len(line) - len(line.lstrip(" -"))
            lines[i] = line[:indent] + rnd.choice(KEYS) + ":" + line[indent:].partition(":")[2]
        elif op < 0.7:
            lines.insert(i, line)  # often a duplicate key
        elif op < 0.8:
            lines[i] = " " * rnd.randint(0, 6) + line.lstrip()
        elif op < 0.9:
            del lines[i]
        else:
            lines.insert(i, rnd.choice(SCALARS))
    return "\n".join(lines)


def _run(argv: list[str]) -> tuple[int, str]:
    result = run_cli(*argv)
    return result.code, result.text


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_mutated_manifests_get_messages_not_tracebacks(tmp_path, seed):
    rnd = random.Random(seed)
    objects = [*rendered(), SERVICE]
    path = tmp_path / "m.yaml"
    codes = []
    for _ in range(25):
        path.write_text(_mutated(rnd, dump_documents(rnd.sample(objects, rnd.randint(1, 4)))))
        for argv in (["validate", str(path)], ["lint", str(path)], ["plan", "--manifests", str(path)]):
            code, output = _run(argv)  # an exception here fails the test with its traceback
            assert code in (0, 1, 2), (argv, output[-500:], path.read_text())
            assert "Traceback" not in output
            codes.append(code)
    assert {1, 2} <= set(codes), "the mutations never produced a problem: the test proves little"
