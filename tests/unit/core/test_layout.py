"""Guards of the layout (issue 12): small modules, a thin CLI, docstrings and the README map
that describe what is there."""

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

