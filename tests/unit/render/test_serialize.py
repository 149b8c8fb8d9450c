"""The YAML written for rendered objects: PyYAML's block style, read back as written."""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.yamlfile import dump as dump_yaml
from dockyard_k8s.yamlfile import load_data
from support.paths import EXAMPLES

words = st.sampled_from([
    "a", "name", "Qwen/Qwen3-32B", "http://localhost:9090", "expandable_segments:True", "swe-gym/train",
    "yes", "No", "ON", "off", "null", "Null", "true", "False", "y", "n", "~", "", " ", "a ", " a", "a: b", "a:",
    "a #b", "a#b", "-a", "- a", "?a", "@a", "a@b", "=", "<<", "0755", "1:30", "1e3", ".inf", ".5", "2024-01-01",
    "a\nb", "é", "a  b", "_x", "/p", "a=b", "a+b", "a,b", "[a]", "{a}", "a'b", 'a"b', "!a", "&a", "*a", "%a",
    "x" * 130, "a - b", "a:b:c", "TRUE", "NULL", "Yes", "Off", "inf", "nan", "0x1F", "0o17", "010", "1_000",
])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**18, 10**18),
                    st.floats(allow_nan=False, allow_infinity=False), words, st.text(max_size=10),
                    st.text(alphabet="abcXYZ019_./:@=+ -#'\"", max_size=10))
keys = st.one_of(words, st.text(alphabet="abXY09_./:@=+ -", max_size=10))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=15)


@settings(max_examples=500, deadline=None)
@given(data=st.dictionaries(keys, values, max_size=4))
def test_what_is_written_reads_back_the_same_as_pyyaml_and_kubectl_read_it(data):
    text = dump_yaml(data)
    assert yaml.safe_load(text) == data  # YAML 1.1 (PyYAML)
    assert load_data(text) == data  # go-yaml v2 (kubectl), where y and n are booleans


def test_y_and_n_are_quoted():
    assert dump_yaml({"y": "n", "Y": ["N", "yy"]}) == "'y': 'n'\n'Y':\n- 'N'\n- yy\n"


def test_block_style_keys_in_order_multi_line_strings_as_literals():
    data = {"b": 1, "a": {"script": "set -e\necho hi\n", "on": "yes", "list": [{"x": 1}, "z"], "e": {}, "l": []}}
    assert dump_yaml(data) == ("b: 1\na:\n  script: |\n    set -e\n    echo hi\n  'on': 'yes'\n  list:\n"
                               "  - x: 1\n  - z\n  e: {}\n  l: []\n")


def test_a_shared_value_is_written_in_full_never_as_an_anchor_and_alias():
    labels = {"dockyard-k8s/run": "r", "note": "yes"}  # "yes" needs quoting: PyYAML writes it
    selector = {"matchLabels": labels}
    data = {"a": selector, "b": {"podSelector": selector, "also": labels}, "c": [labels, labels]}
    text = dump_yaml(data)
    assert "&" not in text and "*" not in text, text
    assert yaml.safe_load(text) == data
    assert text.count("dockyard-k8s/run: r") == 5


def test_rendered_runs_have_no_yaml_anchors(clean_env):
    """The default-deny policies and the pre-pull DaemonSet share dicts between objects."""

    from dockyard_k8s.bundle import build_bundle
    from dockyard_k8s.yamlfile import dump_documents

    for infra in ("k3s_single_gpu.infra.yaml", "eks_p5.infra.yaml"):
        bundle = build_bundle(str(EXAMPLES / "grpo_tiny.yaml"), str(EXAMPLES / infra), Layers(env=clean_env))
        text = dump_documents(bundle.objects)
        assert not [line for line in text.splitlines() if "&id0" in line or "*id0" in line], infra
