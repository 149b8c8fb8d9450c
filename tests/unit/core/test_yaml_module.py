"""One YAML module (issue 23 §2): ``yamlfile.py`` is the only module of the package that imports
a YAML library, so reading (marks, duplicate keys, scalar typing) and writing have one home."""

from __future__ import annotations

import ast
import sys

from support.paths import PACKAGE

YAML_LIBRARIES = ("yaml", "yaml_rs", "ruamel", "ryml")


def _yaml_imports(tree: ast.AST) -> list[str]:
    """The YAML libraries a module imports, at top level or inside a function."""
    found = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [n for n in names if n.split(".")[0] in YAML_LIBRARIES]
    return found


def test_only_the_yaml_module_imports_a_yaml_library() -> None:
    importers = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
                 if (found := _yaml_imports(ast.parse(path.read_text(encoding="utf-8"))))}
    assert list(importers) == ["yamlfile.py"], importers


def test_the_check_sees_imports_in_functions_and_from_forms() -> None:
    """Not vacuous: each import form is found."""
    code = "import yaml\ndef f():\n    from yaml import CSafeLoader\n    import yaml_rs as y\nfrom . import yaml\n"
    assert _yaml_imports(ast.parse(code)) == ["yaml", "yaml", "yaml_rs"]


def test_collections_nested_too_deeply_are_an_error_not_a_crash() -> None:
    """The walk recurses; past the interpreter's recursion limit (1,000 frames unless a test
    framework raised it: set here, above this frame) the text is a YAML error, not a traceback."""
    from dockyard_k8s.yamlfile import load_all

    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 300)
    try:
        deep = load_all("a: " + "[" * 400 + "]" * 400 + "\n", "f.yaml")
        shallow = load_all("a: " + "[" * 50 + "]" * 50 + "\n", "f.yaml")
    finally:
        sys.setrecursionlimit(limit)
    assert deep.error is not None and deep.documents == []
    assert deep.error.message == "collections nested too deeply (hundreds of levels)"
    assert shallow.error is None and len(shallow.documents) == 1
