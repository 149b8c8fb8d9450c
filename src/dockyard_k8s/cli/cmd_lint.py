"""``dockyard-k8s lint``: policy rules and Pod Security levels for a run or for manifests."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dockyard_k8s import __version__
from dockyard_k8s.cli._output import add_output_arg
from dockyard_k8s.cli._targets import TARGET_HELP, add_target_args, load_targets
from dockyard_k8s.errors import UsageError
from dockyard_k8s.lint import output as out
from dockyard_k8s.lint.engine import lint_objects, unknown_rules
from dockyard_k8s.lint.model import LintConfig
from dockyard_k8s.lint.registry import BY_ID, FAMILY_OF, RULES, explain
from dockyard_k8s.output import dump_json, write_file

EXAMPLES = """\
examples:
  dockyard-k8s lint examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s lint build/grpo_swe/                 # rendered files (render --output-dir), or any manifests
  dockyard-k8s lint examples/grpo_swe.yaml -o sarif --output-file lint.sarif --sarif-uri-prefix build/grpo_swe
  dockyard-k8s lint --explain gpu-shm
  dockyard-k8s lint --list-rules

suppress: lint.ignore: [rule, ...] in the infra spec, --ignore RULE, or the annotation
  dockyard-k8s/lint-ignore: "rule1,rule2" on an object or pod template; each is listed in the summary.
exit codes: 0 no error-severity finding, 1 error findings, 2 bad input
"""


def register(sub: Any) -> None:
    p = sub.add_parser("lint",
                       description="Check the run's objects (or manifest files) against policy rules for GPU "
                                   "training and the untrusted-code sandbox, and report the Pod Security "
                                   "Standards level of every pod template.",
                       epilog=TARGET_HELP + "\n" + EXAMPLES)
    add_target_args(p)
    add_output_arg(p, ("text", "json", "sarif"), help_extra=" of the report")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--min-severity", choices=("error", "warning", "info"), default=None,
                   help="lowest severity shown (default: warning for text, info for json/sarif)")
    p.add_argument("--ignore", action="append", default=[], metavar="RULE", help="suppress a rule (repeatable)")
    p.add_argument("--sarif-uri-prefix", default="", metavar="DIR",
                   help="directory prepended to rendered file names in SARIF (where `render --output-dir` wrote them)")
    p.add_argument("--explain", metavar="RULE", help="print what a rule checks, why, and how to fix it")
    p.add_argument("--list-rules", action="store_true", help="list every rule")


def run(args: argparse.Namespace) -> int:
    if args.list_rules:
        for r in RULES:
            print(f"{r.id:<28} {r.severity:<8} {FAMILY_OF[r.id]:<12} {r.title}")
        return 0
    if args.explain:
        if args.explain not in BY_ID:
            raise UsageError(f"--explain {args.explain}: no such rule (see --list-rules)")
        print(explain(args.explain), end="")
        return 0

    targets = load_targets(args)
    section = dict(targets.sections["lint"])
    section["ignore"] = [*section.get("ignore", []), *args.ignore]
    unknown = unknown_rules(section["ignore"])
    if unknown:
        raise UsageError(f"lint.ignore / --ignore: unknown rule(s) {', '.join(unknown)} (see --list-rules)")
    report = lint_objects(targets.objects, LintConfig.from_section(section))
    if args.output == "json":
        text = dump_json(out.as_json(report))
    elif args.output == "sarif":
        text = dump_json(out.sarif(report, __version__, args.sarif_uri_prefix))
    else:
        text = out.text(report, args.min_severity or "warning")
    if args.output_file:
        write_file(args.output_file, text)
        print(report.summary(), file=sys.stderr)
    else:
        print(text, end="")
    return report.exit_code
