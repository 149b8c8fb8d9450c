"""What lint and plan run on: a recipe + infra pair (rendered) or manifest files.

``dockyard-k8s lint RECIPE [KEY=VALUE...]`` renders the run first; ``dockyard-k8s lint
FILE|DIR...`` (or ``--manifests``) reads Kubernetes objects. A first argument that is a
directory, ``-``, or a YAML file whose first document has apiVersion and kind is taken as
manifests. With manifests, ``--infra FILE`` still supplies the ``lint:`` and ``plan:``
sections.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, NamedTuple

from dockyard_k8s.cli._runargs import RUN_ARGS_HELP
from dockyard_k8s.errors import UsageError

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

TARGET_HELP = RUN_ARGS_HELP + """\
manifests instead of a recipe: FILE, DIR (recursive, *.yaml/*.yml/*.json) or - (stdin);
  --infra FILE then only supplies the lint: and plan: sections
"""


class Targets(NamedTuple):
    objects: list[Any]  # lint.inputs.Located
    sections: dict[str, Any]  # the infra spec's lint and plan sections (defaults filled)
    rendered: bool


def add_target_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", nargs="?", metavar="RECIPE|FILE", help="recipe YAML, or manifest files/dirs")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE|FILE",
                        help="recipe overrides (Hydra style), or more manifest files")
    parser.add_argument("-f", "--infra", metavar="FILE", help="infra spec YAML (where to run it)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override an infra key, e.g. --set lint.ignore=[image-digest] (repeatable)")
    parser.add_argument("-n", "--namespace", help="namespace (same as --set infra.namespace=NS)")
    parser.add_argument("--manifests", action="store_true", help="treat every argument as a manifest file")


def _sections_from_file(path: str | None, sets: list[str]) -> dict[str, Any]:
    """The lint and plan sections of an infra file, layered and checked like a run's."""
    from dockyard_k8s.config.loader import load_infra

    return _sections(load_infra(path, sets=sets))


def _sections(infra: InfraSpec) -> dict[str, Any]:
    """lint and plan settings; lint.gpuRuntimeClass defaults to the platform's
    infra.runtimeClassName (kind/k3s: nvidia), so the profile and the lint rule agree."""
    lint = dict(infra["lint"])
    lint["gpuRuntimeClass"] = lint.get("gpuRuntimeClass") or infra["infra"].get("runtimeClassName")
    return {"lint": lint, "plan": infra["plan"]}


def load_targets(args: argparse.Namespace) -> Targets:
    from dockyard_k8s.lint.inputs import looks_like_manifests, objects_from_bundle, read_manifests

    if not args.recipe:
        raise UsageError("nothing to check: give a RECIPE (with --infra) or manifest FILE/DIR arguments")
    if args.manifests or looks_like_manifests(args.recipe):
        if args.namespace:
            raise UsageError("-n applies to a recipe + infra pair, not to manifest files")
        return Targets(read_manifests([args.recipe, *args.overrides]), _sections_from_file(args.infra, args.sets),
                       False)
    from dockyard_k8s.cli._runargs import load_bundle

    bundle = load_bundle(args)
    return Targets(objects_from_bundle(bundle.objects), _sections(bundle.run.infra), True)
