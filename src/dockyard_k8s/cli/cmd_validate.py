"""``dockyard-k8s validate``: strict offline validation of any Kubernetes manifests."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dockyard_k8s.cli._output import add_output_arg
from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate.bulk import validate_paths
from dockyard_k8s.validate.engine import ValidateOptions
from dockyard_k8s.validate.output import render

EXAMPLES = """\
examples:
  dockyard-k8s validate build/grpo_swe/                  # every .yaml/.yml/.json, recursively
  dockyard-k8s render examples/grpo_swe.yaml | dockyard-k8s validate -
  dockyard-k8s validate --crd crds/ --kubernetes-version 1.31 manifests/
  dockyard-k8s validate -o junit --summary k8s/ > validate.xml

exit codes: 0 every object valid, 1 a problem found, 2 bad usage (missing file, bad flag)
"""


def register(sub: Any) -> None:
    p = sub.add_parser("validate",
                       description="Validate manifests against the strict Kubernetes schemas and CRD schemas, "
                                   "plus the rules the API server and the KubeRay operator enforce that no schema "
                                   "expresses. Unknown fields, wrong types and duplicate keys are errors. "
                                   "Nothing is sent to a cluster.",
                       epilog=EXAMPLES)
    p.add_argument("paths", nargs="*", metavar="PATH|DIR|-", default=["-"],
                   help="files, directories (recursive) or - for stdin (default: stdin)")
    p.add_argument("--kubernetes-version", default="1.29", metavar="X.Y",
                   help="Kubernetes version of the built-in schemas (default 1.29)")
    p.add_argument("--crd", action="append", default=[], metavar="FILE|DIR",
                   help="CustomResourceDefinition file or directory (repeatable); searched before the CRDs "
                        "from `schemas fetch` and the bundled KubeRay CRDs")
    p.add_argument("--skip", action="append", default=[], metavar="KIND,...",
                   help="kinds (Kind or apiVersion/Kind) not to validate")
    p.add_argument("--reject", action="append", default=[], metavar="KIND,...",
                   help="kinds that are an error wherever they appear")
    p.add_argument("--ignore-missing-schemas", action="store_true",
                   help="an object with no schema is not an error (it still gets the semantic rules)")
    p.add_argument("--no-bundled-crds", action="store_true",
                   help="do not use the KubeRay, KEDA and Kueue CRDs shipped with dockyard-k8s")
    add_output_arg(p, ("text", "json", "junit", "tap"))
    p.add_argument("--summary", action="store_true", help="print a summary line (text output)")
    p.add_argument("--exit-on-error", action="store_true", help="stop at the first invalid object")
    p.add_argument("--workers", type=_workers, default=0, metavar="N",
                   help="processes for a large input (default: one per core; 1: this process only). "
                        "Inputs under 1 MB always use one")
    p.add_argument("--verbose", action="store_true", help="also say which schema validated each kind")


def _workers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes >= 1, got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    if args.paths == ["-"] and sys.stdin.isatty():
        raise UsageError("validate: give manifest files or directories, or pipe YAML into `validate -`")
    options = ValidateOptions(kubernetes_version=args.kubernetes_version, crd_sources=tuple(args.crd),
                              skip=tuple(args.skip), reject=tuple(args.reject),
                              ignore_missing_schemas=args.ignore_missing_schemas,
                              use_bundled=not args.no_bundled_crds, exit_on_error=args.exit_on_error)
    result = validate_paths(args.paths, options, workers=args.workers)
    report = result.report
    sys.stdout.write(render(report, args.output, files=result.files, summary=args.summary))
    if args.verbose and args.output == "text":
        for api_kind, source in report.sources.items():
            print(f"schema: {api_kind}: {source}", file=sys.stderr)
    return 1 if result.problems else 0
