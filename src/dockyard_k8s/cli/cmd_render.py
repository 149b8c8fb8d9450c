"""``dockyard-k8s render``: the run's objects as YAML/JSON, on stdout or one file each."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from dockyard_k8s.cli._flags import add_legacy_format_arg, add_output_arg
from dockyard_k8s.cli._output import check_output_paths, write_file
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, load_bundle
from dockyard_k8s.errors import UsageError

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
    add_output_arg(p, ("yaml", "json"), legacy_path="file-or-dir", help_extra="; json: a v1 List")
    add_legacy_format_arg(p, ("yaml", "json"))
    p.add_argument("--output-dir", metavar="DIR", help="write one file per object into DIR (+ kustomization.yaml)")
    p.add_argument("--output-file", metavar="FILE", help="write every object into FILE (.json: a v1 List)")
    p.set_defaults(func=run)


def kustomization(files: list[str]) -> dict[str, Any]:
    # sortOptions fifo (kustomize >= 5.0, kubectl >= 1.27) keeps our apply order instead of
    # kustomize's legacy kind ordering.
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "sortOptions": {"order": "fifo"}, "resources": files}


def run(args: argparse.Namespace) -> int:
    from dockyard_k8s.render.serialize import as_list, dump_documents, dump_json

    check_output_paths(args)
    bundle = load_bundle(args)
    objects = bundle.objects
    if bundle.validation is not None and bundle.validation.missing:  # stdout is the YAML: say it on stderr
        print(f"warning: {bundle.validation.coverage()}", file=sys.stderr)
    fmt = "json" if (args.output_file or "").endswith(".json") else args.output
    if not args.output_dir:
        text = dump_json(as_list(objects)) if fmt == "json" else dump_documents(objects)
        if not args.output_file:
            print(text, end="")
            return 0
        write_file(args.output_file, text)
        print(f"wrote {len(objects)} objects to {args.output_file}")
        return 0
    files = write_objects(objects, args.output_dir, args.output)
    print(f"wrote {len(files)} objects + kustomization.yaml to {args.output_dir}")
    return 0


def write_objects(objects: list[dict[str, Any]], directory: str, fmt: str) -> list[str]:
    """One file per object (``NN-kind-name.yaml``, files of an earlier render replaced) plus a
    kustomization.yaml listing them in apply order; returns the file names."""
    from dockyard_k8s.render.serialize import dump_json, dump_yaml, object_file_name

    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--output-dir {directory}: cannot create the directory: {e.strerror or e}") from e
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
