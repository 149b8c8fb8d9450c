"""The recipe is written without PyYAML when it is simple: the bytes must be PyYAML's."""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dockyard_k8s.render import serialize
from dockyard_k8s.render.serialize import _fast_dump, dump_yaml
from support.paths import EXAMPLES


def _pyyaml(data):
    return yaml.dump(data, Dumper=serialize._pyyaml_dumper(), sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=4096)


words = st.sampled_from([
    "a", "name", "Qwen/Qwen3-32B", "http://localhost:9090", "expandable_segments:True", "swe-gym/train",
    "yes", "No", "ON", "off", "null", "Null", "true", "False", "y", "n", "~", "", " ", "a ", " a", "a: b", "a:",
    "a #b", "a#b", "-a", "- a", "?a", "@a", "a@b", "=", "<<", "0755", "1:30", "1e3", ".inf", ".5", "2024-01-01",
    "a\nb", "é", "a  b", "_x", "/p", "a=b", "a+b", "a,b", "[a]", "{a}", "a'b", 'a"b', "!a", "&a", "*a", "%a",
    "x" * 130, "a - b", "a:b:c", "TRUE", "NULL", "Yes", "Off", "inf", "nan", "0x1F", "0o17",
])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), words,
                    st.text(max_size=10),
                    st.text(alphabet="abcXYZ019_./:@=+ -#'\"", max_size=10))
keys = st.one_of(words, st.text(alphabet="abXY09_./:@=+ -", max_size=10))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=15)


@settings(max_examples=1500, deadline=None)
@given(data=st.dictionaries(keys, values, max_size=4))
def test_fast_dump_writes_pyyaml_bytes_or_declines(data):
    fast = _fast_dump(data)
    if fast is not None:
        assert fast == _pyyaml(data)
    assert dump_yaml(data) == _pyyaml(data)


def test_a_typical_recipe_takes_the_fast_path():
    recipe = {"experiment": {"name": "grpo", "seed": 1234}, "policy": {"lr": 3e-06, "tp": 8, "ckpt": True},
              "env": {"code": {"sandbox_urls": None, "urls": ["http://localhost:9090"], "opts": {}, "l": []}},
              "fleets": [{"name": "a", "env": [{"name": "X", "value": "x1"}]}, {}]}
    assert _fast_dump(recipe) == _pyyaml(recipe)


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
    from dockyard_k8s.render.serialize import dump_documents

    for infra in ("k3s_single_gpu.infra.yaml", "eks_p5.infra.yaml"):
        bundle = build_bundle(str(EXAMPLES / "grpo_tiny.yaml"), str(EXAMPLES / infra), env=clean_env)
        text = dump_documents(bundle.objects)
        assert not [line for line in text.splitlines() if "&id0" in line or "*id0" in line], infra
