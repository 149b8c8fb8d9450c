"""``dockyard-k8s render``: the run's objects as YAML/JSON, on stdout or one file each."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._output import add_objects_output_args, check_output_paths, prerequisite_header, print_objects
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, invocation_of, load_bundle
from dockyard_k8s.render.record import launch_objects

EXAMPLES = """\
examples:
  dockyard-k8s render examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml | kubectl apply -f -
  dockyard-k8s render examples/grpo_swe.yaml --output-dir build/grpo_swe   # one file per object + kustomization.yaml
  dockyard-k8s render examples/grpo_swe.yaml -o json > run.json           # a v1 List
"""


def register(sub: Any) -> None:
    p = sub.add_parser("render",
                       description="Render every object of the run in apply order, as `run` applies them "
                                   "(the launch record first; the Ray token Secret never: a comment says how to "
                                   "create it). Output is byte-for-byte deterministic. With --output-dir DIR, one "
                                   "file per object plus a kustomization.yaml (for kubectl apply -k, Argo CD or Flux).",
                       epilog=RUN_ARGS_HELP + "\n" + EXAMPLES)
    add_run_args(p)
    add_objects_output_args(p)


def run(args: argparse.Namespace) -> int:
    check_output_paths(args)
    bundle = load_bundle(args)
    objects = launch_objects(bundle.run, bundle.objects, invocation_of(args))  # what `run` applies, no token
    token = bundle.findings.token
    header = prerequisite_header(bundle.findings.prerequisites, "dockyard-k8s check lists them; `dockyard-k8s run` "
                                                                "creates the Ray token Secret itself", token)
    # a pipe into kubectl shows stderr: the one object the pods need that no apply creates
    notes = [*bundle.run.notes, *([f"{token.ref} (the Ray token) is not rendered: create it before `kubectl "
                                   f"apply`: {token.command}"] if token else [])]
    return print_objects(args, objects, bundle.validation, header=header, notes=notes)
