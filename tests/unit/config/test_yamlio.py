import math

import pytest

from dockyard_k8s.config.yamlio import format_path, interpolate, parse_value, parse_yaml


def parse(text, env=None):
    doc, problems = parse_yaml(text, "f.yaml", env)
    return doc, [str(p) for p in problems]


def test_scalars_resolve_with_the_yaml_1_2_core_schema():
    doc, problems = parse("a: 1\nb: 1.5\nc: 1e-6\nd: true\ne: null\nf: ~\ng: 0x1f\nh: 0o17\ni: .inf\nj: text\n"
                          "k: 2024-01-01\nl: '1'\nm: !!str 12\n")
    assert problems == []
    assert doc.data == {"a": 1, "b": 1.5, "c": 1e-6, "d": True, "e": None, "f": None, "g": 31, "h": 15,
                        "i": math.inf, "j": "text", "k": "2024-01-01", "l": "1", "m": "12"}


@pytest.mark.parametrize(
    ("value", "why"),  # the whole messages: tests/golden/messages/config.txt
    [
        ("no", "is a boolean in YAML 1.1"),
        ("On", "is a boolean in YAML 1.1"),
        ("0755", "is an octal number in YAML 1.1"),
        ("1:30", "is a base-60 number in YAML 1.1"),
        ("1_000", "is a number in YAML 1.1"),
    ],
)
def test_yaml_1_1_surprises_are_errors_at_their_location(value, why):
    _, problems = parse(f"x:\n  key: {value}\n")
    assert len(problems) == 1 and problems[0].startswith(f"f.yaml:2:8: x.key: unquoted '{value}' {why}")


def test_quoted_yaml_1_1_words_are_plain_strings():
    doc, problems = parse("a: 'no'\nb: \"on\"\nc: n\nd: y\n")
    assert problems == []
    assert doc.data == {"a": "no", "b": "on", "c": "n", "d": "y"}


def test_unquoted_boolean_word_as_key_is_an_error():
    _, problems = parse("on: push\n")
    assert len(problems) == 1 and problems[0].startswith("f.yaml:1:1: on: unquoted key 'on' is a boolean")


def test_duplicate_keys_are_errors_naming_both_lines():
    _, problems = parse("a:\n  b: 1\n  c: 2\n  b: 3\n")
    assert problems == ["f.yaml:4:3: a.b: duplicate key 'b' (first defined on line 2)"]


def test_every_problem_is_reported_at_once():
    _, problems = parse("a: no\nb: 1\nb: 2\nc: off\n")
    assert len(problems) == 3


def test_syntax_errors_are_located():
    _, problems = parse("a: [1, 2\nb: 3\n")
    assert len(problems) == 1 and problems[0].startswith("f.yaml:2:")
    assert "invalid YAML" in problems[0]


def test_several_documents_are_an_error():
    _, problems = parse("a: 1\n---\nb: 2\n")
    assert problems == ["f.yaml:3:1: expected a single YAML document, found several ('---')"]


def test_unknown_tags_are_errors():
    _, problems = parse("a: !Ref thing\n")
    assert problems == ["f.yaml:1:4: a: unsupported tag '!Ref' (plain YAML only)"]


def test_marks_point_at_values_and_keys():
    doc, _ = parse("top:\n  inner:\n    - x\n    - y: 2\n")
    assert (doc.marks[("top", "inner", 1, "y")].line, doc.marks[("top", "inner", 1, "y")].col) == (4, 10)
    assert (doc.key_marks[("top", "inner")].line, doc.key_marks[("top", "inner")].col) == (2, 3)


def test_anchors_and_merge_keys():
    doc, problems = parse("base: &b {x: 1, z: 2}\nderived:\n  <<: *b\n  z: 3\n")
    assert problems == []
    assert doc.data["derived"] == {"x": 1, "z": 3}


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("${A}", {"A": "1"}, "1"),
        ("x-${A}-y", {"A": "v"}, "x-v-y"),
        ("${A:-d}", {}, "d"),
        ("${A:-d}", {"A": ""}, "d"),
        ("${A-d}", {"A": ""}, ""),
        ("${A-d}", {}, "d"),
        ("$${A}", {"A": "1"}, "${A}"),
        ("${A:-x$${B}}", {}, "x${B}"),  # the escape inside a default too
        ("${A-$${B}}", {}, "${B}"),
        ("$A stays", {"A": "1"}, "$A stays"),
    ],
)
def test_interpolation_forms(text, env, expected):
    assert interpolate(text, env) == (expected, [])


def test_interpolated_plain_scalars_are_retyped_quoted_stay_strings():
    doc, problems = parse("a: ${N}\nb: '${N}'\n", {"N": "4"})
    assert problems == []
    assert doc.data == {"a": 4, "b": "4"}


def test_unset_variable_without_default_is_an_error_with_location():
    _, problems = parse("image:\n  name: reg/${IMAGE_TAG}\n", {})
    assert len(problems) == 1 and problems[0].startswith("f.yaml:2:9: image.name: environment variable IMAGE_TAG ")
    assert "write ${IMAGE_TAG:-default}" in problems[0]  # the fix names the variable


def test_an_unset_variable_is_one_problem_at_its_key_whatever_the_tag():
    # The unset variable leaves the value unknown: no second problem about the literal ${N}.
    _, problems = parse("a: !!int ${N}\nb: !!float ${N}\nc: ${N}${N}\n", {})
    assert [p.split(" (got")[0] for p in problems] == [f"f.yaml:{i}:4: {k}: environment variable N is not set"
                                                       for i, k in ((1, "a"), (2, "b"), (3, "c"))]


def test_a_variable_inside_a_default_is_an_error_not_a_literal():
    # ${A:-${B}} would render the text ${B}: refuse it at its key.
    _, problems = parse("a: ${A:-${B}}\nb: x-${A-${B}}\nc: ${A:-$${B}}\n", {"B": "1"})
    assert [p.split(": a variable")[0] for p in problems] == [
        f"f.yaml:{i}:4: {k}: got {ref!r}" for i, k, ref in ((1, "a", "${A:-${B}}"), (2, "b", "${A-${B}}"))]
    assert all("a variable reference inside a default" in p for p in problems)


def test_no_interpolation_without_an_environment():
    doc, problems = parse("a: ${NOPE}\n", None)
    assert problems == [] and doc.data == {"a": "${NOPE}"}


def test_parse_value_types_command_line_values():
    assert parse_value("4", "--set") == (4, [])
    assert parse_value("null", "--set") == (None, [])
    assert parse_value("[a, 1]", "--set") == (["a", 1], [])
    assert parse_value("", "--set") == ("", [])
    value, problems = parse_value("yes", "--set")
    assert value == "yes" and "YAML 1.1" in problems[0].message


def test_format_path_quotes_odd_keys():
    assert format_path(("a", "b", 0, "c")) == "a.b[0].c"
    assert format_path(("nodeSelector", "node.kubernetes.io/instance-type")) == \
        'nodeSelector["node.kubernetes.io/instance-type"]'


def test_a_recursive_merge_is_a_problem_not_a_crash():
    doc, problems = parse("a: &x\n  b: 1\n  <<: *x\n")
    assert problems == ["f.yaml:1:4: a: recursive alias (an anchor that contains itself)"]
    assert doc.data == {"a": {"b": 1}}
