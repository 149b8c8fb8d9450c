"""``dockyard-k8s schema``: the infra spec as JSON Schema, for editors and CI."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.config.docs import infra_json_schema, infra_markdown
from dockyard_k8s.output import dump_json

EXAMPLES = """\
examples:
  dockyard-k8s schema > infra.schema.json
  # then, first line of an infra file, for editors using yaml-language-server:
  # yaml-language-server: $schema=./infra.schema.json
"""


def register(sub: Any) -> None:
    p = sub.add_parser("schema",
                       description="Print the infra spec's JSON Schema (draft-07), for editor completion "
                                   "and checking. --markdown prints the reference table instead.",
                       epilog=EXAMPLES)
    p.add_argument("--markdown", action="store_true", help="print the field reference as Markdown")


def run(args: argparse.Namespace) -> int:
    print(infra_markdown() if args.markdown else dump_json(infra_json_schema()), end="")
    return 0
