"""One meaning per flag across every command, as kubectl and helm users expect:

    -o, --output FORMAT    the output format (text|json|yaml, and what a command adds: wide,
                           sarif, junit...), never a path
    --output-file FILE     write to a file; --output-dir DIR: one file per object
    -f, --infra FILE       an infra (values) file, repeatable, later files win: helm's -f
    --follow               follow (logs, job logs): kubectl's long form
    -l, --selector SEL     a label selector, where kubectl has one
    -n / -A                namespace / all namespaces

The forms these replace keep working, with a one-line deprecation note on stderr: ``-o PATH``
(check, render, nccl-test, serve render), ``--format`` (lint, plan, render, nccl-test) and
``-f`` meaning follow (``logs``, ``job logs``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

DEPRECATED = "note: {old} is deprecated: {new}"


def deprecated(old: str, new: str) -> None:
    print(DEPRECATED.format(old=old, new=new), file=sys.stderr, flush=True)


class OutputAction(argparse.Action):
    """``-o FORMAT``; with ``legacy_path``, a value that is no format is the old ``-o PATH`` form
    (stored in ``output_file``, or ``output_dir`` for a directory-shaped name where the command
    has one), with a deprecation note."""

    def __init__(self, *args: Any, legacy_path: str = "", formats: Sequence[str] = (), **kwargs: Any) -> None:
        self.legacy_path = legacy_path  # "file", "file-or-dir" or ""
        self.formats = tuple(formats)
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        value = str(values)
        if value in self.formats:
            setattr(namespace, self.dest, value)
            return

        if not self.legacy_path or not ("." in value or os.sep in value or os.path.exists(value)):
            choices = ", ".join(repr(f) for f in self.formats)
            files = {"file": "; a file goes to --output-file FILE",
                     "file-or-dir": "; a file goes to --output-file FILE, a directory to --output-dir DIR"}
            parser.error(f"argument -o/--output: invalid choice: {value!r} (choose from {choices})"
                         f"{files.get(self.legacy_path, '')}")
        to_dir = self.legacy_path == "file-or-dir" and not value.endswith((".yaml", ".yml", ".json"))
        flag = "--output-dir" if to_dir else "--output-file"
        deprecated(f"{option_string} {value}", f"-o is the output format everywhere ({'|'.join(self.formats)}); "
                                                f"write to a {'directory' if to_dir else 'file'} with {flag} {value}")
        setattr(namespace, "output_dir" if to_dir else "output_file", value)


def add_output_arg(parser: argparse.ArgumentParser, formats: Sequence[str], *, default: str | None = None,
                   legacy_path: str = "", help_extra: str = "") -> None:
    """``-o/--output FORMAT`` (see the module doc)."""
    parser.add_argument("-o", "--output", action=OutputAction, formats=formats, legacy_path=legacy_path,
                        default=default or formats[0], metavar="|".join(formats),
                        help=f"output format (default {default or formats[0]}){help_extra}")


class _LegacyFormatAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        deprecated(f"--format {values}", f"use -o {values} (-o is the output format everywhere)")
        setattr(namespace, self.dest, values)


def add_legacy_format_arg(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    """The old ``--format`` spelling of ``-o`` (hidden from --help, still accepted)."""
    parser.add_argument("--format", dest="output", choices=tuple(formats), action=_LegacyFormatAction,
                        help=argparse.SUPPRESS)


class _DeprecatedFollowAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        deprecated("-f meaning follow", "use --follow (-f names a file in every command, as helm's -f)")
        namespace.follow = True


def add_deprecated_follow(parser: argparse.ArgumentParser) -> None:
    """The old ``-f`` (follow) of a command that takes no infra file (``serve logs``): hidden,
    still accepted, with a note."""
    parser.add_argument("-f", dest="follow", nargs=0, action=_DeprecatedFollowAction, help=argparse.SUPPRESS)


def add_infra_or_follow_arg(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-f FILE`` of ``logs`` and ``job logs``: an infra file, as in every command; ``-f`` with no
    file after it is the old follow (see :func:`settle_follow`). ``--infra`` is defined beside it."""
    parser.add_argument("-f", dest="infra", nargs="?", action=_InfraOrFollowAction, metavar="FILE", help=help_text)
    parser.add_argument("--follow", action="store_true", help="stream new lines until the pods/job end")


class _InfraOrFollowAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values is None:
            namespace.old_follow = True
            return
        current = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, [*current, values] if isinstance(current, list) else values)
        namespace.after_f = values


def settle_follow(args: argparse.Namespace) -> None:
    """``logs``/``job logs``: the old ``-f`` (follow) keeps working, with a note, when no file
    follows it (``logs RUN -f``, ``logs RUN -f --tail 5``) or when what follows it is the only
    positional (``logs -f RUN``: the run or recipe, not an infra file)."""
    old = bool(getattr(args, "old_follow", False))
    after = getattr(args, "after_f", None)
    if after is not None and not getattr(args, "recipe", None):
        args.recipe = after  # `logs -f RUN`
        infra = args.infra
        args.infra = [f for f in infra if f != after] if isinstance(infra, list) else None
        old = True
    if old:
        deprecated("-f meaning follow", "use --follow (-f names an infra file in every command, as helm's -f)")
        args.follow = True
