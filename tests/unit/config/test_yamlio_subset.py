"""The subset parser (no PyYAML) must give exactly what the PyYAML walk gives, or decline."""

import glob
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dockyard_k8s.config import yamlio
from support.paths import REPO

ENV = {"SET": "v", "NUM": "4", "EMPTY": ""}


def same_as_walker(text, env=None):
    """True when the subset took ``text``; then data, marks and key marks equal the walker's."""
    doc = yamlio._Subset("f.yaml", env).document(text)
    if doc is None:
        return False
    data, walker = yamlio._compose(text, "f.yaml", env)
    assert walker.problems == []
    assert repr(doc.data) == repr({} if data is None else data)  # repr: 1, 1.0 and True differ
    assert doc.marks == walker.marks
    assert doc.key_marks == walker.key_marks
    return True


SCALARS = ["a", "b c", "1", "-1", "+1", "1.5", "1e-6", ".inf", "-.inf", ".nan", "0x1f", "0o17", "true", "False",
           "null", "~", "no", "On", "0755", "1:30", "1_000", "2024-01-01", "'q'", '"q"', "'it''s'", '"a\\"b"', "''",
           '""', "a:b", "http://x:9", "a: b", "a:", "a #c", "a#b", "&x a", "*x", "!!str 1", "!t x", "|", ">", "[]",
           "{}", "[a, b]", "[a,b]", "[ a , 'b' ]", "[a, ]", "[a, [b]]", "{a: 1, b: x}", "{a: 1, a: 2}", "{a:1}",
           "[a: 1]", "{a: [b]}", "- a", "-", "-x", "?x", "%x", "@x", "`x", ",x", "${SET}", "${UNSET}", "${UNSET:-d}",
           "$${SET}", "x${NUM}", "${NUM}", "yes", "é", "a\u2028b", "<<", "=", "x   ", "'a' #c", "'a'#c", "[a] x",
           "[a] #c", "{a: b} #c", "a [b]", "a {b}", "a, b", '"unterminated', "'a", "\\", "[a #b]"]
KEYS = ["k", "a", "b", "k2", "on", "No", "1", "a.b/c-d", "<<", "'q'", '"q"', "a b", "x:y", "k_1"]
INDENTS = [0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 6]


@st.composite
def line(draw):
    indent = " " * draw(st.sampled_from(INDENTS))
    kind = draw(st.integers(0, 7))
    key, value = draw(st.sampled_from(KEYS)), draw(st.sampled_from(SCALARS))
    spaces = " " * draw(st.integers(1, 2))
    comment = draw(st.sampled_from(["", "", "", " # c", "  #c", "#c"]))
    return indent + [f"{key}:{spaces}{value}", f"{key}:", f"-{spaces}{value}", f"-{spaces}{key}:{spaces}{value}",
                     f"-{spaces}{key}:", "-", "# comment", ""][kind] + comment


@settings(max_examples=3000, deadline=None)
@given(lines=st.lists(line(), min_size=1, max_size=8), env=st.sampled_from([None, ENV]))
def test_random_line_soup_matches_the_walker_or_is_declined(lines, env):
    same_as_walker("\n".join(lines) + "\n", env)


data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=False, width=32),
              st.sampled_from(SCALARS), st.text(alphabet="ab :#-'\"[]{},", max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from([*KEYS, "x", "y"]), inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=1500, deadline=None)
@given(value=st.dictionaries(st.sampled_from(KEYS), data, min_size=1, max_size=4),
       flow=st.sampled_from([False, None]), indent=st.sampled_from([2, 4]))
def test_what_pyyaml_writes_matches_the_walker_or_is_declined(value, flow, indent):
    same_as_walker(yaml.safe_dump(value, default_flow_style=flow, indent=indent, sort_keys=False))


@pytest.mark.parametrize("path", sorted(
    glob.glob(os.path.join(REPO, "examples", "**", "*.yaml"), recursive=True)
    + glob.glob(os.path.join(REPO, "tests", "**", "*.yaml"), recursive=True)))
def test_repository_yaml_files_match_the_walker_or_are_declined(path):
    with open(path, encoding="utf-8") as f:
        same_as_walker(f.read())


def test_the_examples_take_the_subset():
    for name in ("grpo_swe.yaml", "grpo_swe.infra.yaml", "grpo_tiny.yaml", "eks_p5.infra.yaml",
                 "kind_single_gpu.infra.yaml", "base/grpo_common.yaml"):
        with open(os.path.join(REPO, "examples", name), encoding="utf-8") as f:
            assert same_as_walker(f.read(), ENV), name


@pytest.mark.parametrize("text", ["4", "1.5", "x", "'q'", "[a, 1]", "{a: 1}", "true", "null", "  7", "a #c"])
def test_set_values_match_the_walker(text):
    data, walker = yamlio._compose(text, "--set", None)
    assert repr(yamlio.parse_value(text, "--set")) == repr((data, walker.problems))
