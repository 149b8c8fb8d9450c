import pytest

from dockyard_k8s.config import overrides as ov
from dockyard_k8s.config.schema import array, check, defaults_of, fill_defaults, integer, obj, quantity, string


@pytest.mark.parametrize(
    ("text", "path"),
    [("a.b.c", ("a", "b", "c")), ("a[0].b", ("a", 0, "b")),
     (r"ns.node\.kubernetes\.io/x", ("ns", "node.kubernetes.io/x")),
     ("a-b_c", ("a-b_c",)), ("", None), ("a..b", None), ("a.[0]", ("a", 0))],
)
def test_parse_key(text, path):
    assert ov.parse_key(text) == path


def test_parse_override_ops():
    assert ov.parse_override("a.b=1")[0] == ov.Override("=", ("a", "b"), 1, "a.b=1")
    assert ov.parse_override("+a=x")[0].op == "+"
    assert ov.parse_override("++a=[1, 2]")[0].value == [1, 2]
    assert ov.parse_override("~a.b")[0] == ov.Override("~", ("a", "b"), None, "~a.b")
    assert ov.parse_override("novalue")[1].startswith("got 'novalue', expected KEY=VALUE")
    assert "YAML 1.1" in ov.parse_override("a=no")[1]


def test_set_path_creates_mappings_and_appends_to_lists():
    data = {"a": [1]}
    assert ov.set_path(data, ("b", "c"), 2) == ""
    assert ov.set_path(data, ("a", 1), 5) == ""
    assert data == {"a": [1, 5], "b": {"c": 2}}
    assert ov.set_path(data, ("a", 7), 1) == "a[7] is not an existing list item"


@pytest.mark.parametrize(
    ("value", "arg"),
    [(None, "++k=null"), (True, "++k=true"), (3, "++k=3"), (1e-6, "++k=1e-06"), ("plain", "++k=plain"),
     ("4", "++k='4'"), ("a b", "++k='a b'"), ("it's", "++k='it\\'s'"), ([1, "a"], '++k=[1,"a"]')],
)
def test_job_args_are_idempotent_hydra_overrides(value, arg):
    assert ov.job_arg(ov.Override("=", ("k",), value, "")) == arg
    assert ov.job_arg(ov.Override("~", ("k",), None, "~k")) == "~k"  # left to the job (its Hydra deletes it)


SCHEMA = obj("root", {
    "n": integer("n", 1, minimum=0, maximum=10),
    "q": quantity("q", "1"),
    "s": string("s", "a", enum=["a", "b"]),
    "maybe": integer("m", None, nullable=True),
    "list": array("l", integer("i"), []),
    "sub": obj("sub", {"x": integer("x", 5)}),
})


def test_defaults_of_builds_nested_defaults():
    assert defaults_of(SCHEMA) == {"n": 1, "q": "1", "s": "a", "maybe": None, "list": [], "sub": {"x": 5}}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"n": 11}, [(("n",), "got 11, expected a number <= 10")]),
        ({"n": True}, [(("n",), "got true (boolean), expected an integer")]),
        ({"q": "2GB"}, [(("q",), "got '2GB' (string), expected a Kubernetes quantity like 4, 500m or 16Gi; "
                                 "did you mean '2Gi' (binary) or '2G' (decimal)?")]),
        ({"q": "2 gigs"}, [(("q",), "got '2 gigs' (string), expected a Kubernetes quantity like 4, 500m or 16Gi")]),
        ({"q": 2.5}, []),
        ({"s": "c"}, [(("s",), "got 'c' (string), expected one of: a, b")]),
        ({"maybe": None, "list": [1, "x"]}, [(("list", 1), "got 'x' (string), expected an integer")]),
        ({"sub": []}, [(("sub",), "got a list, expected a mapping")]),
        ({"zzz": 1}, [(("zzz",), "unknown key 'zzz' (expected one of: n, q, s, maybe, list, sub)")]),
        ({"sub": {"n": 1}}, [(("sub", "n"), "unknown key 'n' (expected one of: x); 'n' belongs at n")]),
        ({"x": 1}, [(("x",), "unknown key 'x' (expected one of: n, q, s, maybe, list, sub); 'x' belongs at sub.x")]),
    ],
)
def test_check_messages(data, expected):
    assert check(SCHEMA, data) == expected


def test_fill_defaults_reaches_nullable_sections_and_list_items():
    schema = obj("root", {
        "quota": obj("q", {"hard": {"type": "object", "default": {}}}, nullable=True, default=None),
        "pools": array("p", obj("pool", {"count": integer("c", 1)}), []),
    })
    data = {"quota": {}, "pools": [{}, {"count": 3}]}
    fill_defaults(schema, data)
    assert data == {"quota": {"hard": {}}, "pools": [{"count": 1}, {"count": 3}]}
    data = {"quota": None, "pools": []}
    fill_defaults(schema, data)
    assert data == {"quota": None, "pools": []}
