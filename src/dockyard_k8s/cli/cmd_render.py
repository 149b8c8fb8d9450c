"""``dockyard-k8s render``: the run's objects as YAML/JSON, on stdout or one file each."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, load_bundle

EXAMPLES = """\
examples:
  dockyard-k8s render examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml | kubectl apply -f -
  dockyard-k8s render recipe.yaml -o build/run        # one file per object + kustomization.yaml
  dockyard-k8s render recipe.yaml --format json > run.json
"""

# Files this command writes into an output directory (and may replace on the next render).
_OWNED = re.compile(r"^\d{2}-[a-z0-9.-]+\.(yaml|json)$")


def register(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("render",
                       description="Render every object of the run in apply order. Output is byte-for-byte "
                                   "deterministic. With -o DIR, write one file per object plus a "
                                   "kustomization.yaml (for kubectl apply -k, Argo CD or Flux).",
                       epilog=RUN_ARGS_HELP + "\n" + EXAMPLES, formatter_class=formatter)
    add_run_args(p)
    p.add_argument("-o", "--output-dir", metavar="DIR", help="write one file per object into DIR")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default yaml)")
    p.set_defaults(func=run)


def kustomization(files: list[str]) -> dict[str, Any]:
    # sortOptions fifo (kustomize >= 5.0, kubectl >= 1.27) keeps our apply order instead of
    # kustomize's legacy kind ordering.
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "sortOptions": {"order": "fifo"}, "resources": files}


def run(args: argparse.Namespace) -> int:
    from dockyard_k8s.render.serialize import as_list, dump_documents, dump_json

    bundle = load_bundle(args)
    objects = bundle.objects
    if bundle.validation is not None and bundle.validation.missing:  # stdout is the YAML: say it on stderr
        print(f"warning: {bundle.validation.coverage()}", file=sys.stderr)
    if not args.output_dir:
        print(dump_json(as_list(objects)) if args.format == "json" else dump_documents(objects), end="")
        return 0
    files = write_objects(objects, args.output_dir, args.format)
    print(f"wrote {len(files)} objects + kustomization.yaml to {args.output_dir}")
    return 0


def write_objects(objects: list[dict[str, Any]], directory: str, fmt: str) -> list[str]:
    """One file per object (``NN-kind-name.yaml``, files of an earlier render replaced) plus a
    kustomization.yaml listing them in apply order; returns the file names."""
    from dockyard_k8s.render.serialize import dump_json, dump_yaml, object_file_name

    os.makedirs(directory, exist_ok=True)
    for stale in os.listdir(directory):
        if _OWNED.match(stale):
            os.remove(os.path.join(directory, stale))
    files = []
    for i, obj in enumerate(objects):
        name = object_file_name(i, obj, fmt)
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(dump_json(obj) if fmt == "json" else dump_yaml(obj))
        files.append(name)
    with open(os.path.join(directory, "kustomization.yaml"), "w", encoding="utf-8") as f:
        f.write(dump_yaml(kustomization(files)))
    return files
