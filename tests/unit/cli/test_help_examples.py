"""What `--help` and the docs teach works (issue 22 item 30): every example of every command's
help and of README.md and docs/*.md parses with the real parser (the removed `-o PATH`,
`--format` and `-f`-meaning-follow forms no longer parse); every one that can run offline runs, exit 0, in a
scratch directory with the repository's examples; the flags a command's help names are flags it
takes; the docs cite only files that are in the repository."""

from __future__ import annotations

import argparse
import io
import os
import re
import shlex
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from dockyard_k8s.cli import _cluster_flags_after_command, build_parser, main
from support.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Commands (and actions) that never talk to a cluster.
OFFLINE = ("check", "render", "validate", "lint", "plan", "schema", "schemas list", "nccl-test", "serve check",
           "serve render", "completion")
# Flags whose value is written, not read (so it need not exist before the example runs).
WRITES = ("--output-file", "--output-dir", "--sarif-uri-prefix")
LIVE_FLAGS = ("--live", "--run", "--context", "--kubeconfig")


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                       argparse.ArgumentParser]]:
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, (*words, name))


def _commands(line: str) -> Iterator[list[str]]:
    """The dockyard-k8s invocations of a shell line (after `;`, `&&`, `||`, before `|`, `>`, `#`)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return
    current: list[str] = []
    cut = False
    for tok in [*tokens, ";"]:
        if tok in (";", "&&", "||", "&"):
            if current and current[0].endswith("dockyard-k8s"):
                yield current[1:]
            current, cut = [], False
        elif tok in ("|", ">", ">>", "<", "<(", "(", ")", "2>"):
            cut = True
        elif not cut:
            current.append(tok)


def help_examples() -> list[tuple[str, list[str]]]:
    out = []
    for words, parser in _walk(build_parser()):
        text = "\n".join(t for t in (parser.description, parser.epilog) if t)
        for line in text.splitlines():
            if re.match(r"\s+(\$ )?dockyard-k8s \w", line) or re.match(r"\s*\w+:\s+dockyard-k8s ", line):
                out += [(f"dockyard-k8s {' '.join(words)} --help: {line.strip()}", argv)
                        for argv in _commands(line.split(":", 1)[1] if re.match(r"\s*\w+:\s", line) else line)]
    return out


def doc_examples(*, inline: bool = False) -> list[tuple[str, list[str]]]:
    """Command lines in the docs' code blocks (``$ `` prompts and ``.venv/bin/`` prefixes allowed);
    ``inline``: also the `dockyard-k8s ...` spans of sentences (often fragments: parsed, never run)."""
    out = []
    for doc in DOCS:
        block = False
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                block = not block
                continue
            text = re.sub(r"^\s*(\$ )?(\.venv/bin/)?", "", line)
            if block and text.startswith("dockyard-k8s "):
                out += [(f"{doc.relative_to(REPO)}:{n}: {line.strip()}", argv) for argv in _commands(text)]
            elif inline and not block:  # `dockyard-k8s ...` in a sentence, when it is more than a command's name
                out += [(f"{doc.relative_to(REPO)}:{n}: `{code}`", argv)
                        for code in re.findall(r"`(dockyard-k8s [^`<]+)`", line) for argv in _commands(code)
                        if any(a.startswith("-") or "/" in a or "=" in a for a in argv[1:])]
    return out


EXAMPLES = help_examples() + doc_examples()  # what is run
PARSED = help_examples() + doc_examples(inline=True)  # what is parsed


def _parse(argv: list[str]) -> tuple[argparse.Namespace | None, str]:
    err = io.StringIO()
    argv = _cluster_flags_after_command(argv)  # as main() takes them
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            args, _ = build_parser(argv[0] if argv and not argv[0].startswith("-") else None).parse_known_args(argv)
        except SystemExit as e:  # --help, --version: 0
            return (argparse.Namespace() if e.code == 0 else None), err.getvalue()
    return args, err.getvalue()


@pytest.mark.parametrize(("where", "argv"), PARSED, ids=[w for w, _ in PARSED])
def test_every_example_parses(where: str, argv: list[str]) -> None:
    args, err = _parse(argv)
    assert args is not None, f"{where}: does not parse: {err}"


def _command(argv: list[str]) -> str:
    words = [w for w in argv if not w.startswith("-")]
    two = " ".join(words[:2])
    return two if two in OFFLINE else (words[0] if words else "")


def _runnable(argv: list[str], cwd: Path) -> bool:
    """Offline, not a synopsis (``RECIPE [--infra FILE]...``), and every file it reads is there (a
    placeholder like recipe.yaml is not)."""
    if _command(argv) not in OFFLINE or any(a.split("=")[0] in LIVE_FLAGS for a in argv):
        return False
    if any(a.startswith("[") or a.endswith("...") or re.fullmatch(r"[A-Z][A-Z|_-]*", a) for a in argv):
        return False
    if "-" in argv:  # reads stdin: the line pipes something into it
        return False
    for i, arg in enumerate(argv):
        written = (i > 0 and argv[i - 1] in WRITES) or arg.split("=")[0] in WRITES
        path_like = "/" in arg or re.search(r"\.(ya?ml|json|log)$", arg)
        if path_like and not written and not arg.startswith(("-", "http")) and "=" not in arg and \
                not (cwd / arg).exists():
            return False
    return True


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the repository's examples, infra/ and schemas/ where examples read them."""
    root = tmp_path_factory.mktemp("examples")
    for name in ("examples", "infra", "schemas"):
        (root / name).symlink_to(REPO / name)
    return root


def test_every_offline_example_runs(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(scratch)
    ran, failed = [], []
    for where, argv in EXAMPLES:  # in order: `render --output-dir DIR` comes before `lint DIR`
        if not _runnable(argv, scratch):
            continue
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
        ran.append(where)
        # 1 is a verdict (a plan that does not fit, lint errors): what a docs example may show; 2 is a broken example
        allowed = (0, 1) if _command(argv) in ("plan", "lint", "validate") else (0,)
        if code not in allowed:
            failed.append(f"{where}: exit {code}: {err.getvalue().strip()[-400:]}")
    assert failed == []
    assert len(ran) >= 40, ran  # not vacuous: most examples name real files


@pytest.mark.parametrize(("words", "parser"), list(_walk(build_parser())), ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_the_flags_a_commands_help_names_are_its_flags(words: tuple[str, ...],
                                                       parser: argparse.ArgumentParser) -> None:
    """Prose and the configuration-layers block: a flag named there is taken by the command (or
    one of its actions); example lines are checked by parsing them."""
    own = {o for _, p in _walk(parser) for a in p._actions for o in a.option_strings}
    text = "\n".join(t for t in (parser.description, parser.epilog) if t)
    named = set()
    for line in text.splitlines():
        if "dockyard-k8s " in line or re.search(r"\b(kubectl|helm|ray|mpirun|openssl)\b", line):
            continue
        named |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+|-[a-zA-Z])(?=[\s=/,)\]|.]|$)", line))
    assert named - own == set(), f"dockyard-k8s {' '.join(words)} --help names flags it does not take"


def test_the_docs_cite_only_files_in_the_repository() -> None:
    cited = re.compile(r"(?<![\w./-])((?:src|tests|examples|infra|scripts|schemas|docs|bench)/[\w./-]*[\w/])")
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    missing = []
    for doc in [*DOCS, REPO / "bench" / "README.md"]:
        text = doc.read_text()
        for path in cited.findall(text):
            if not ((REPO / path).exists() or (doc.parent / path).exists()):
                missing.append(f"{doc.relative_to(REPO)}: {path}")
        for path in link.findall(text):
            if not path.startswith(("http:", "https:")) and not (doc.parent / path).exists():
                missing.append(f"{doc.relative_to(REPO)}: link {path}")
        if "shared/spec/" in text:
            missing.append(f"{doc.relative_to(REPO)}: shared/spec/ (the source texts are not in the repository)")
    assert missing == []


def test_examples_are_found_in_help_and_docs() -> None:
    """The extraction itself (the tests above are only as good as it)."""
    helps = [w for w, _ in help_examples()]
    assert any("plan --help" in w for w in helps) and any("nccl-test --help" in w for w in helps)
    assert sum(1 for _ in doc_examples()) >= 30
    assert list(_commands("dockyard-k8s check a.yaml -o json | jq .config; dockyard-k8s lint b  # x")) == [
        ["check", "a.yaml", "-o", "json"], ["lint", "b"]]
    assert os.sep == "/"
