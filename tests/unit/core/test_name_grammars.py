"""Kubernetes name grammars (dockyard_k8s.names): the one home, checked against apimachinery's
``k8s.io/apimachinery/pkg/util/validation`` and used the same way by config, validate, the
command line and ``dev``."""

from __future__ import annotations

import os
import re

import pytest

from dockyard_k8s import names
from dockyard_k8s.config.schema import FORMATS
from dockyard_k8s.errors import UsageError
from dockyard_k8s.live.dev import parse_dotenv
from dockyard_k8s.validate.kueue import kueue_problems
from dockyard_k8s.validate.semantic import object_problems

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "dockyard_k8s")


@pytest.mark.parametrize(("check", "good", "bad"), [
    (names.is_dns1123_label, ["a", "0", "a-b", "a" * 63], ["", "A", "-a", "a-", "a.b", "a" * 64]),
    (lambda text: names.check_name(text, "dns1035", "name") is None, ["a", "a-1", "a" * 63],
     ["", "1a", "a-", "A", "a" * 64]),
    (names.is_dns1123_subdomain, ["a", "a.b", "1.2-3", "a" * 253], ["", "a..b", ".a", "a.", "A.b", "a" * 254]),
    (names.is_qualified_name, ["a", "A_b.c", "example.com/MyName", "k8s.io/" + "a" * 63],
     ["", "a/", "-a", "a" * 64, "Example.com/a", "a/b/c", "/a"]),
    (names.is_label_value, ["", "a", "a_B.c-1", "a" * 63], ["-a", "a-", "a b", "a" * 64]),
    (names.is_config_key, ["a", ".env", "A-b_c.d", "a" * 253], ["", "a/b", "café", "a" * 254]),
    (names.is_env_var_name, ["A", "a.b-c_D", "_1"], ["", "1A", "A=B", "é"]),
])
def test_each_grammar_accepts_and_refuses_as_apimachinery(check, good, bad) -> None:
    assert [v for v in good if not check(v)] == []
    assert [v for v in bad if check(v)] == []


def test_an_empty_label_key_prefix_is_refused_everywhere() -> None:
    """apimachinery IsQualifiedName: "prefix part must be non-empty". The config schema's and
    validate's copies took ``/app`` as a key with no prefix."""
    ok, _ = FORMATS["label-key"]
    assert not ok("/app")
    found = object_problems({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "labels": {"/app": "x"}}})
    assert [(path, why) for path, why in found if path == ("metadata", "labels", "/app")] == [
        (("metadata", "labels", "/app"), "key '/app': the prefix before '/' is empty")]
    queued = {"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
              "spec": {"template": {"metadata": {"annotations": {
                  "kueue.x-k8s.io/podset-required-topology": "/zone"}}, "spec": {"containers": []}}}}
    assert [why for _, why in kueue_problems(queued)] == ["Invalid value: '/zone': prefix part must be non-empty"]


def test_the_config_schema_refuses_a_trailing_newline_in_a_name() -> None:
    """The config schema matched with ``$``, which Python lets match before a final newline; the
    API server (Go's regexp) and validate refused it."""
    for fmt, value in (("label-key", "app\n"), ("label-value", "x\n"), ("dns-subdomain", "a.b\n"),
                       ("env-name", "HOME\n")):
        ok, _ = FORMATS[fmt]
        assert not ok(value), fmt
        assert ok(value[:-1]), fmt


def test_a_secret_key_from_a_dotenv_file_is_a_config_map_key() -> None:
    """``dev`` checked keys with str.isalnum (any Unicode letter, any length); the API server
    refuses a Secret data key outside ``[-._a-zA-Z0-9]`` or over 253 characters."""
    assert parse_dotenv("A_b.c-1=x", "f") == {"A_b.c-1": "x"}
    for key in ("café", "a" * 254):
        with pytest.raises(UsageError, match="expected KEY=VALUE"):
            parse_dotenv(f"{key}=x", "f")


def test_no_module_but_names_writes_a_name_grammar() -> None:
    grammar = re.compile(r"\[a-z0-9\]\(\[-a-z0-9\]|\[A-Za-z0-9\]\(\[-A-Za-z0-9_\.\]|isalnum\(\)")
    found = []
    for root, _, files in os.walk(SRC):
        for file in files:
            path = os.path.join(root, file)
            if file.endswith(".py") and file != "names.py":
                with open(path, encoding="utf-8") as f:
                    where = os.path.relpath(path, SRC)
                    found += [f"{where}:{i}" for i, line in enumerate(f, 1) if grammar.search(line)]
    assert [f for f in found if not f.startswith("plain.py:")] == []  # plain.py: a JSON-path key, not a name
