"""Guards of the layout (issues 12 and 23): small modules, a thin CLI, docstrings and the README map
that describe what is there, no import circles."""

from __future__ import annotations

import ast
import re

from support.paths import PACKAGE, REPO

MAX_MODULE_LINES = 600
MAX_CLI_SHARE = 0.12


def _lines(path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_600_lines():
    assert [(str(p.relative_to(PACKAGE)), n) for p in _modules() if (n := _lines(p)) > MAX_MODULE_LINES] == []


def test_the_cli_is_under_12_percent_of_the_code():
    total = sum(_lines(p) for p in _modules())
    cli = sum(_lines(p) for p in (PACKAGE / "cli").rglob("*.py"))
    assert cli / total < MAX_CLI_SHARE, f"cli/ is {cli} of {total} lines ({cli / total:.1%})"


def _members(package):
    """The modules and subpackages of ``package`` (``cmd_<name>.py`` stand for themselves as a pattern)."""
    for p in sorted(package.iterdir()):
        if p.suffix == ".py" and p.name != "__init__.py":
            yield p.stem
        elif p.is_dir() and ((p / "__init__.py").exists() or any(p.glob("*.sh"))):
            yield p.name


def test_every_package_docstring_names_its_modules():
    missing = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        named = set(re.findall(r"[A-Za-z_][\w]*(?=\.py\b|/)", doc))
        gone = [m for m in _members(init.parent)
                if m not in named and not (m.startswith("cmd_") and "cmd_<name>.py" in doc)]
        if gone:
            missing[str(init.parent.relative_to(PACKAGE.parent))] = gone
    assert missing == {}


def test_no_docstring_names_a_module_that_is_not_there():
    everywhere = {p.stem for p in _modules()} | {p.name for p in PACKAGE.rglob("*") if p.is_dir()}
    ghosts = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        named = set(re.findall(r"\b([a-z_][\w]*)\.py\b", doc)) - {"cmd_<name>"}
        if named - everywhere:
            ghosts[str(init.parent.relative_to(PACKAGE.parent))] = sorted(named - everywhere)
    assert ghosts == {}


def test_the_readme_map_names_every_top_level_module_and_package():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Development", 1)[1].split("```", 2)[1]
    named = set(re.findall(r"[A-Za-z_][\w]*(?=\.py\b|/)", block))
    assert [m for m in _members(PACKAGE) if m not in named and m != "__main__"] == []



def _module_imports(path, modules):
    """The package's modules that ``path`` imports, at its top or inside a function (not under
    ``if TYPE_CHECKING:``); ``from pkg import sub`` names the submodule, not the package. A
    function's own import counts: it moves a circle from import time to call time, it does not
    remove it."""
    found = set()

    def visit(node):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found.update(subs)
            if node.module in modules and len(subs) < len(node.names):
                found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_import_circles():
    """No module of the package (live/ included) reaches itself through its imports, top-level or
    function-local (issue 23): a circle at the top fails at import time, depending on which module
    comes first; one hidden in a function still ties the modules into one."""
    paths = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in _modules()}
    graph = {name: _module_imports(path, set(paths)) for name, path in paths.items()}
    circles, done = [], set()

    def walk(name, trail):
        if name in trail:
            circles.append(" -> ".join([*trail[trail.index(name):], name]))
            return
        if name in done:
            return
        for dep in sorted(graph[name]):
            walk(dep, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        walk(name, [])
    assert circles == []
