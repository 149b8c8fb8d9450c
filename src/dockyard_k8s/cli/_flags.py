"""One meaning per flag across every command, as kubectl and helm users expect:

    -o, --output FORMAT    the output format (text|json|yaml, and what a command adds: wide,
                           sarif, junit...), never a path
    --output-file FILE     write to a file; --output-dir DIR: one file per object
    -f, --infra FILE       an infra (values) file, repeatable, later files win: helm's -f
    --follow               follow (logs, job logs): kubectl's long form
    -l, --selector SEL     a label selector, where kubectl has one
    -n / -A                namespace / all namespaces

``-o`` never takes a path: ``-o out.yaml`` is refused with the ``--output-file`` hint.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


class OutputAction(argparse.Action):
    """``-o FORMAT``: a value that is no format is refused; ``writes`` ("file", "file-or-dir"):
    the command writes files, and the error says which flag takes one."""

    def __init__(self, *args: Any, writes: str = "", formats: Sequence[str] = (), **kwargs: Any) -> None:
        self.writes = writes
        self.formats = tuple(formats)
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        value = str(values)
        if value not in self.formats:
            choices = ", ".join(repr(f) for f in self.formats)
            files = {"file": "; a file goes to --output-file FILE",
                     "file-or-dir": "; a file goes to --output-file FILE, a directory to --output-dir DIR"}
            parser.error(f"argument -o/--output: invalid choice: {value!r} (choose from {choices})"
                         f"{files.get(self.writes, '')}")
        setattr(namespace, self.dest, value)


def add_output_arg(parser: argparse.ArgumentParser, formats: Sequence[str], *, default: str | None = None,
                   writes: str = "", help_extra: str = "") -> None:
    """``-o/--output FORMAT`` (see the module doc)."""
    parser.add_argument("-o", "--output", action=OutputAction, formats=formats, writes=writes,
                        default=default or formats[0], metavar="|".join(formats),
                        help=f"output format (default {default or formats[0]}){help_extra}")
