
import dataclasses

import pytest

from dockyard_k8s.validate.locate import add_lines
from dockyard_k8s.validate.reader import documents_of, parse_text, read_manifests
from dockyard_k8s.yamlfile import resolve_go_yaml

BOTH = pytest.mark.parametrize("parser", ["fast", "pyyaml"])


@pytest.fixture
def parser_env(parser, monkeypatch):
    if parser == "pyyaml":
        monkeypatch.setenv("DOCKYARD_K8S_YAML", "pyyaml")
    else:
        pytest.importorskip("yaml_rs")
        monkeypatch.delenv("DOCKYARD_K8S_YAML", raising=False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", True), ("on", True), ("y", True), ("N", False), ("off", False), ("true", True),
        ("0755", 0o755), ("0x1F", 31), ("0o17", 15), ("0b101", 5), ("1_000", 1000), ("-12", -12),
        ("1.5", 1.5), ("1e3", 1000.0), ("~", None), ("", None), ("null", None),
        ("2024-01-01", "2024-01-01"), ("1:30", "1:30"), ("abc", "abc"), ("08", 8), (".inf", float("inf")),
    ],
)
def test_plain_scalars_resolve_as_go_yaml_v2_does(text, expected):
    assert resolve_go_yaml(text) == expected


@BOTH
def test_both_parsers_read_kubectl_semantics(parser, parser_env):
    text = ("a: yes\nb: 0755\nc: '0755'\nd: 2024-01-01\ne: [on, 'on']\nf: 1_000\ng: nginx:1.25\n"
            "---\n# only a comment\n---\nx: 1\n")
    docs, problems = parse_text(text, "f.yaml")
    assert problems == []
    assert [(d, i) for d, i, _ in docs] == [
        ({"a": True, "b": 493, "c": "0755", "d": "2024-01-01", "e": [True, "on"], "f": 1000, "g": "nginx:1.25"}, 0),
        ({"x": 1}, 1),
    ]


@BOTH
def test_non_string_keys_become_their_json_text(parser, parser_env):
    docs, _ = parse_text("data:\n  1: a\n  true: b\n", "f.yaml")
    assert docs[0][0] == {"data": {"1": "a", "true": "b"}}


@BOTH
def test_duplicate_key_is_located_in_its_document(parser, parser_env):
    text = "kind: A\n---\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x\n  a: y\n"
    _, problems = documents_of("f.yaml", text)
    assert [(p.doc_index, p.line, p.path, p.message, p.kind, p.name) for p in problems] == [
        (1, 8, ("data", "a"), "duplicate key 'a' (first defined on line 7)", "ConfigMap", "c")]


@BOTH
def test_syntax_error_is_reported_with_its_line(parser, parser_env):
    _, problems = parse_text("a: 1\n---\nb: [1,\n", "f.yaml")
    assert len(problems) == 1
    assert problems[0].rule == "yaml" and problems[0].doc_index == 1 and problems[0].line >= 3
    assert problems[0].message.startswith("invalid YAML")


def test_kind_list_is_expanded_with_item_paths():
    text = "apiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n"
    docs, _ = documents_of("f.yaml", text)
    assert [(d.path, d.obj["kind"]) for d in docs] == [(("items", 0), "A"), (("items", 1), "B")]


def test_json_files_and_directories_and_stdin(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.json").write_text('{"kind": "A", "x": {"y": 1}}')
    (tmp_path / "b.yaml").write_text("kind: B\n")
    (tmp_path / "notes.txt").write_text("kind: C\n")
    found = read_manifests([str(tmp_path)])
    assert [d.obj["kind"] for d in found.documents] == ["B", "A"]
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("kind: S\n"))
    assert [d.obj["kind"] for d in read_manifests(["-"]).documents] == ["S"]


def test_duplicate_key_in_json_is_rejected(tmp_path):
    (tmp_path / "a.json").write_text('{"kind": "A", "kind": "B"}')
    problems = read_manifests([str(tmp_path / "a.json")]).problems
    assert [p.message for p in problems] == ["duplicate key 'kind' (first defined on line 1)"]


def test_missing_path_is_a_usage_error(tmp_path):
    from dockyard_k8s.errors import UsageError

    with pytest.raises(UsageError, match="no such file"):
        read_manifests([str(tmp_path / "nope.yaml")])


def test_add_lines_locates_nested_paths_and_missing_fields():
    from dockyard_k8s.validate.problem import Problem

    text = "kind: A\n---\nkind: B\nspec:\n  x:\n    z: 1\n"
    problems = [Problem("f", 1, "B", "", ("spec", "x", "z"), "m"), Problem("f", 1, "B", "", ("spec", "nope"), "m")]
    assert [p.line for p in add_lines(problems, {"f": text})] == [6, 4]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\n", [("a: 1\n", 1)]),
        ("---\na: 1\n---\nb: 2\n", [("a: 1\n", 2), ("b: 2\n", 4)]),
        ("--- # first\na: 1\n---\n\n# blank\n---   \nb: 2", [("a: 1\n", 2), ("b: 2", 7)]),
        ("---\r\na: 1\r\n---\r\nb: 2\r\n", [("a: 1\r\n", 2), ("b: 2\r\n", 4)]),
        ("a: 1\n---", [("a: 1\n", 1)]),
        # the whole-file slow path: directives, document ends, content on the marker line
        ("%YAML 1.2\n---\na: 1\n", None), ("a: 1\n...\n", None), ("a: 1\n--- |\n  text\n", None),
        ("a: 1\n----\n", None),
    ],
)
def test_document_splitter(text, expected):
    from dockyard_k8s.validate.split import _chunks

    assert _chunks(text) == expected


@pytest.mark.parametrize("text", [
    "---\r\na: 1\r\n---\r\nb: [x, y]\r\n", "--- # c\na: 1\n...\n---\nb: 2\n", "a: 1\n--- {b: 2}\n",
    "x: 1\n---\n---\n# c\n---\ny: 2\n",
    # go-yaml v2 keys: `on:` is the key "true", `010:` the key "8" (yaml-rs alone gets both wrong)
    "on: 1\nno: 2\n", "a:\n  - y: 1\n", "a: {y: 1, n: 2}\n", "a: [on: 1]\n", "kind: ConfigMap\ndata:\n  010: x\n",
    "a: 1\non : 2\n", "x: 1\n---\n0755\n---\nyes\n", "kind: ConfigMap\ndata:\n  key1: x\n  1_0: y\n",
    "kind: ConfigMap\ndata: {010: x}\n", "kind: ConfigMap\ndata:\n  v1: a\n  port8080: b\n",
    # keys YAML 1.2 reads as numbers, booleans or null, anywhere: kubectl makes them strings
    "kind: Pod\nspec:\n  limits:\n    1: 2\n    ~: 3\n    1.5: x\n    true: y\n    null: z\n",
    "a: {1: x, 0x1F: y, .inf: z}\n", "a:\n- 80: http\n  False: 1\n", "time: 10:30\nv1: x\n3scale.net/x: y\n",
    # more than one space (or a tab) before the value
    "a:  yes\n", "b:  0755\n", "a:\n-  on\n-\tn\n",
])
def test_fast_and_slow_readers_agree_on_document_streams(text, monkeypatch):
    pytest.importorskip("yaml_rs")
    fast = parse_text(text, "f.yaml")
    monkeypatch.setenv("DOCKYARD_K8S_YAML", "pyyaml")
    assert fast == parse_text(text, "f.yaml")


TRICKY = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {app: x, "b": c}
  annotations:
    a.b/c: 'x'
    "q": y
spec:
  containers:
  - name: a
    args: ["x", "y: z"]
    env:
      - name: A
        value: |
          name: fake
          image: nope
      - {name: B, value: c}
      - name: C
        value: >-
          folded
    image: i
  -
    name: second
    image: j
  - - nested
    - seq
  - plain item
  volumes:
  - name: v
    emptyDir: {}
  "quoted key": 1
  tolerations:
  # comment
  - key: k  # trailing
    operator: Exists

  - key: k2

    operator: Equal
  nodeSelector:
  empty:
  after: 1
"""


@pytest.mark.parametrize(("path", "line"), [
    (("spec", "containers", 0, "image"), 22),
    (("spec", "containers", 1), 24),  # "-" alone: the item starts on the next line
    (("spec", "containers", 1, "image"), 25),
    (("spec", "containers", 0, "env", 1, "value"), 18),  # a flow mapping
    (("spec", "tolerations", 1, "operator"), 40),
    (("metadata", "labels", "b"), 5),  # a quoted key in a flow mapping
    (("spec", "quoted key"), 32),
    (("spec", "nodeSelector"), 41),  # an empty value
    (("spec", "missing"), 9),  # not there: its nearest enclosing value
    (("metadata", "name", "deeper"), 4),
])
def test_problems_are_located_on_the_line_of_their_key_or_item(path, line):
    from dockyard_k8s.validate.locate import locate

    text = "kind: A\n---\n" + TRICKY  # the second document of its file: lines count from the file's start
    assert locate(text, "f.yaml", {1: [path]}) == {(1, path): line + 2}


WHOLE_OR_NOT = [
    "a: 1\n", "---\na: 1\n---\nb: 2\n", "--- # c\na: 1\n---   \nb: 2", "a: 1\n--- x\n", "--- x\na: 1\n",
    "%YAML 1.2\n---\na: 1\n", "a: 1\n...\n", "a: 1\n----\n", "{\"a\": 1}", "\ufeff---\na: 1\n---\r\nb: 2\r\n",
    "a: 1\n---\t|\n  x\n", "", "# only a comment\n",
]


@pytest.mark.parametrize("text", WHOLE_OR_NOT)
def test_read_whole_and_regions_agree_with_the_splitter(text):
    from dockyard_k8s.validate.split import read_whole, region_documents, split_documents

    whole = split_documents(text, "f.yaml")
    assert read_whole(text, "f.yaml") == (whole is None)
    if whole is None:
        return
    body = text.lstrip("\ufeff")
    cuts = [0] + [i + 1 for i in range(len(text)) if text.startswith("\n---", i)] + [len(text)]
    for cut in cuts:  # any cut at a marker line: the two regions give the documents of the whole
        assert region_documents(text, 0, cut) + region_documents(text, cut, len(text)) == whole, (body, cut)


@pytest.mark.parametrize("text", [
    "kind: A\nmetadata: {name: a}\n---\nkind: B\nx: [1, 2]\n---\nkind: C\n",
    "---\nkind: A\n---\nkind: B\n",
    "kind: A\n--- # comment\nkind: B\n",  # a marker with a comment
    "kind: A\n---\n# blank\n---\nkind: B\n",  # a blank document
    "on: 1\n---\nkind: B\n",  # a candidate on the region's first line
    "kind: A\n---\nkind: B\nv: yes\n",  # a candidate later
    "kind: A\n---\nkind: B\nb: [1,\n---\nkind: C\n",  # a syntax error
    "kind: A\n---\nkind: B\na: 1\na: 2\n",  # a duplicate key
    "\ufeffkind: A\n---\nkind: B\n",
    "kind: A\n---\n- 1\n- 2\n",  # a document that is a list
    "kind: A\n---\nnull\n---\nkind: C\n",  # a null document
])
def test_two_regions_of_a_file_read_as_the_whole_file(text):
    """What a large input's workers do: each reads a region, its documents numbered from 0 there."""
    pytest.importorskip("yaml_rs")
    from dockyard_k8s.validate.reader import region_documents_of

    whole = documents_of("f.yaml", text)
    cuts = [i + 1 for i in range(len(text)) if text.startswith("\n---", i)]
    for cut in cuts:
        first, first_problems, chunks = region_documents_of("f.yaml", text, 0, cut)
        second, second_problems, _ = region_documents_of("f.yaml", text, cut, len(text))
        shift = len(chunks)
        assert [*first, *(dataclasses.replace(d, doc_index=d.doc_index + shift) for d in second)] == whole[0], cut
        moved = [dataclasses.replace(p, doc_index=p.doc_index + shift) for p in second_problems]
        assert [*first_problems, *moved] == whole[1]


@pytest.mark.parametrize("size", [10, 1_200_000])
def test_read_text_reads_small_and_large_files_and_rejects_bad_utf8(tmp_path, size):
    from dockyard_k8s.errors import UsageError
    from dockyard_k8s.validate.reader import read_text

    body = ("kind: ConfigMap\ndata:\n  k: 'é'\n---\n" * (size // 30 + 1))[:size]
    good = tmp_path / "good.yaml"
    good.write_text(body, encoding="utf-8")
    assert read_text(str(good)) == body
    bad = tmp_path / "bad.yaml"
    raw = body.encode()
    bad.write_bytes(raw[: len(raw) // 2] + b"\xff" + raw[len(raw) // 2:])
    at = len(raw) // 2
    line, col = raw.count(b"\n", 0, at) + 1, at - raw.rfind(b"\n", 0, at)
    with pytest.raises(UsageError, match=rf"bad.yaml:{line}:{col}: not UTF-8 text \(invalid start byte at byte {at}: "
                                         r"0xff\); save it as UTF-8"):
        read_text(str(bad))
    with pytest.raises(UsageError, match="cannot read"):
        read_text(str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize("plain", [True, False])  # bare markers only, or one with a comment
def test_a_region_counts_its_lines_from_the_line_it_is_given(plain):
    pytest.importorskip("yaml_rs")
    from dockyard_k8s.validate.reader import region_documents_of
    from dockyard_k8s.validate.split import region_documents

    text = "kind: A\nx: 1\n---\nkind: B\n---\nkind: C\nv: 2\n---\nkind: D\n" + ("" if plain else "--- # c\nkind: E\n")
    start = text.index("kind: B") - 4
    absolute, _, _ = region_documents_of("f.yaml", text, start, len(text))
    relative, _, _ = region_documents_of("f.yaml", text, start, len(text), line=1)
    before = text.count("\n", 0, start)
    assert [d.line for d in absolute] == [d.line + before for d in relative] and relative[0].line == 2
    assert [line for _, line in region_documents(text, start, len(text), line=1)] == [d.line for d in relative]


@pytest.mark.parametrize("text", ["kind: A\ndata: &x\n  a: b\n  <<: *x\n", "kind: A\nspec: &x [1, *x]\n"])
def test_a_recursive_alias_is_a_problem_at_its_line_not_a_crash(text, monkeypatch):
    monkeypatch.setenv("DOCKYARD_K8S_YAML", "pyyaml")
    _, problems = documents_of("f.yaml", text)
    assert [(p.line, p.message) for p in problems] == [(2, "recursive alias (an anchor that contains itself)")]
