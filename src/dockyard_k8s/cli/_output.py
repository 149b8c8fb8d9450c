"""Small printing helpers: aligned tables, check marks, the output flags and rendered objects.

One meaning per flag across every command, as kubectl and helm users expect:

    -o, --output FORMAT    the output format (text|json|yaml, and what a command adds: wide,
                           sarif, junit...), never a path
    --output-file FILE     write to a file; --output-dir DIR: one file per object
    -f, --infra FILE       an infra (values) file, repeatable, later files win: helm's -f
    --follow               follow (logs, job logs): kubectl's long form
    -l, --selector SEL     a label selector, where kubectl has one
    -n / -A                namespace / all namespaces
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.output import objects_text, write_file, write_objects
from dockyard_k8s.render.rayauth import TokenSecret

OK = "✔"
WARN = "!"


def add_output_arg(parser: argparse.ArgumentParser, formats: Sequence[str], *, help_extra: str = "") -> None:
    """``-o/--output FORMAT``, the first of ``formats`` by default (see the module doc)."""
    parser.add_argument("-o", "--output", choices=formats, default=formats[0], metavar="|".join(formats),
                        help=f"output format (default {formats[0]}){help_extra}")


def add_objects_output_args(parser: argparse.ArgumentParser) -> None:
    """``render``'s and ``serve render``'s: what :func:`print_objects` writes, and where."""
    add_output_arg(parser, ("yaml", "json"), help_extra="; json: a v1 List")
    parser.add_argument("--output-dir", metavar="DIR", help="write one file per object into DIR (+ kustomization.yaml)")
    parser.add_argument("--output-file", metavar="FILE", help="write every object into FILE (.json: a v1 List)")


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str] | None = None, indent: str = "") -> str:
    """Left-aligned columns separated by two spaces (kubectl get style)."""
    body = [[str(c) for c in r] for r in rows]
    if headers:
        body.insert(0, [h.upper() for h in headers])
    if not body:
        return ""
    widths = [max(len(r[i]) for r in body if i < len(r)) for i in range(max(len(r) for r in body))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in body]
    return "\n".join(indent + line for line in lines)


def check_output_paths(args: Any) -> None:
    """``--output-file`` / ``--output-dir`` that cannot be used are bad input (exit 2), said before
    any work is done."""

    file, directory = getattr(args, "output_file", None), getattr(args, "output_dir", None)
    if file:
        if os.path.isdir(file):
            raise UsageError(f"--output-file {file}: is a directory (--output-dir {file} writes one file per object)")
        parent = os.path.dirname(file) or "."
        if not os.path.isdir(parent):
            raise UsageError(f"--output-file {file}: the directory {parent} does not exist")
    if directory and os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"--output-dir {directory}: exists and is not a directory (--output-file {directory} "
                         "writes every object into one file)")


def prerequisite_section(missing: Sequence[tuple[str, str]], title: str,
                         generated: TokenSecret | None = None) -> list[str]:
    """``check``'s and ``serve check``'s list of what must already exist: ``missing``, (``Kind
    ns/name``, how it is used) from ``kube.missing_references``; ``generated`` said with its command."""
    rows = [[ref, f"{generated.what}: {generated.command}" if generated and ref == generated.ref else how]
            for ref, how in missing]
    return [f"\n{title}", table(rows, indent="  ")] if rows else []


def prerequisite_header(missing: Sequence[tuple[str, str]], intro: str, generated: TokenSecret | None = None) -> str:
    """The YAML comment ``render`` puts before the objects: what must exist, the generator whole."""
    lines = [f"# Before the first `kubectl apply`, these must exist ({intro}):"]
    for ref, how in missing:
        if generated and ref == generated.ref:
            lines += [f"#   {ref} ({generated.what.split(' (')[0]}, never rendered), created once with:",
                      f"#   {generated.command}"]
        else:
            lines.append(f"#   {ref}" + (f": {how}" if how else ""))
    return "\n".join(lines) + "\n" if len(lines) > 1 else ""


def print_objects(args: Any, objects: list[dict[str, Any]], validation: Any, *, header: str = "",
                  notes: Sequence[str] = ()) -> int:
    """``render`` and ``serve render``: the objects on stdout, in ``--output-file`` or ``--output-dir``;
    ``header`` (YAML comments) before YAML and in kustomization.yaml, ``notes`` on stderr."""

    if validation.missing:  # stdout is the YAML: say it on stderr
        print(f"warning: {validation.coverage()}", file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.output_dir:
        files = write_objects(objects, args.output_dir, args.output, header=header)
        print(f"wrote {len(files)} objects + kustomization.yaml to {args.output_dir}")
        return 0
    fmt = "json" if (args.output_file or "").endswith(".json") else args.output
    text = objects_text(objects, fmt)
    if fmt != "json":
        text = header + text
    if not args.output_file:
        print(text, end="")
        return 0
    write_file(args.output_file, text)
    print(f"wrote {len(objects)} objects to {args.output_file}")
    return 0
