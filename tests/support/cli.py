"""The command line run in process, for the tests of every directory::

    from support.cli import run_cli
    code, out, err = run_cli("check", RECIPE)

What the command printed is captured, argparse's own exits (``--help``, a usage error) become
exit codes. Live tests wrap it in fixtures that point ``connect`` at a fake or a real cluster.
"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import NamedTuple


class Result(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        """stdout then stderr."""
        return self.out + self.err


def run_cli(*argv: str) -> Result:
    from dockyard_k8s.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse: --help, --version, a usage error
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return Result(code, out.getvalue(), err.getvalue())


def printed() -> str:
    """What the CLI running in this process (:func:`run_cli`, in another thread) printed so far."""
    return str(getattr(sys.stdout, "getvalue", lambda: "")())


def summary_line(text: str, label: str) -> str:
    """The one line of a summary (``check``'s, ``serve check``'s) that starts with ``label`` after its
    indent: a test asserts what that line says, tests/golden/messages/check-report.txt how."""
    found = [line for line in text.splitlines() if line.lstrip().startswith(label)]
    assert len(found) == 1, (label, found)
    return found[0]
