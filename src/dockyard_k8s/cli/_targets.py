"""What lint and plan run on: a recipe + infra pair (rendered) or manifest files.

``dockyard-k8s lint RECIPE [KEY=VALUE...]`` renders the run first; ``dockyard-k8s lint
FILE|DIR...`` (or ``--manifests``) reads Kubernetes objects. A first argument that is a
directory, ``-``, or a YAML file whose first document has apiVersion and kind is taken as
manifests. With manifests, ``--infra FILE`` still supplies the ``lint:`` and ``plan:``
sections. ``--serve SPEC`` (repeatable) adds a model endpoint's objects (``serve render``'s):
alone, or beside the run or the manifests, so ``plan`` places the endpoint with the run.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_layer_args, invocation_of, layers_of, load_bundle
from dockyard_k8s.config.loader import Setting, load_infra_doc
from dockyard_k8s.errors import UsageError
from dockyard_k8s.manifests import Manifest, looks_like_manifests, objects_from_bundle, read_objects
from dockyard_k8s.render.record import launch_objects
from dockyard_k8s.serve_bundle import ServeBundle, build_serve_bundle

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec

TARGET_HELP = RUN_ARGS_HELP + """\
manifests instead of a recipe: FILE, DIR (recursive, *.yaml/*.yml/*.json) or - (stdin);
  --infra FILE then only supplies the lint: and plan: sections
--serve SPEC adds a model endpoint (docs/serve.md), alone or beside the run; --set and -n apply
  to every spec; alone, SPEC (or --infra FILE) supplies the lint: and plan: sections
"""


@dataclass(frozen=True, slots=True)
class Targets:
    objects: list[Manifest]
    sections: dict[str, Any]  # the infra spec's lint and plan sections (defaults filled)
    rendered: bool


def add_target_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", nargs="?", metavar="RECIPE|FILE", help="recipe YAML, or manifest files/dirs")
    parser.add_argument("overrides", nargs="*", default=[], metavar="KEY=VALUE|FILE",
                        help="recipe overrides (Hydra style), or more manifest files")
    add_layer_args(parser, example="lint.ignore=[image-digest]")
    parser.add_argument("--manifests", action="store_true", help="treat every argument as a manifest file")
    parser.add_argument("--serve", action="append", default=[], metavar="SPEC",
                        help="add a model endpoint's objects (a serve spec; repeatable)")


def _sections_from_file(args: argparse.Namespace) -> dict[str, Any]:
    """The lint and plan sections of the infra files, layered and checked like a run's."""
    return _sections(load_infra_doc(args.infra, layers_of(args))[0].data)


def _sections(infra: InfraSpec) -> dict[str, Any]:
    """lint and plan settings; lint.gpuRuntimeClass defaults to the platform's
    infra.runtimeClassName (kind/k3s: nvidia), so the profile and the lint rule agree, and the GPU
    node labels of infra.cpuScheduling are lint's too."""
    lint = dict(infra["lint"])
    lint["gpuRuntimeClass"] = lint.get("gpuRuntimeClass") or infra["infra"].get("runtimeClassName")
    lint["gpuNodeLabels"] = infra["infra"]["cpuScheduling"]["gpuNodeLabels"]  # what marks a GPU node here
    return {"lint": lint, "plan": infra["plan"]}


def _endpoints(args: argparse.Namespace) -> tuple[list[Any], InfraSpec | None]:
    """The objects of every --serve SPEC (each named as `serve render -o <endpoint>` names its
    files) and the first spec's infra (for its lint and plan sections)."""
    bundles = [load_serve_bundle(argparse.Namespace(spec=spec, sets=args.sets, namespace=args.namespace))
               for spec in getattr(args, "serve", None) or []]
    return ([o for b in bundles for o in objects_from_bundle(b.objects, prefix=f"{b.config.name}/")],
            bundles[0].config.infra if bundles else None)


def load_targets(args: argparse.Namespace) -> Targets:
    endpoints, serve_infra = _endpoints(args)
    if not args.recipe:
        if serve_infra is not None:
            return Targets(endpoints, _sections_from_file(args) if args.infra else _sections(serve_infra), True)
        raise UsageError("nothing to check: give a RECIPE (with --infra), manifest FILE/DIR arguments or --serve SPEC")
    if args.manifests or looks_like_manifests(args.recipe):
        if args.namespace and not args.serve:
            raise UsageError("-n applies to a recipe + infra pair, not to manifest files")
        return Targets([*read_objects([args.recipe, *args.overrides]), *endpoints], _sections_from_file(args),
                       False)

    bundle = load_bundle(args, fit=False)  # plan says what fits where; lint judges the objects as they are
    objects = launch_objects(bundle.run, bundle.objects, invocation_of(args))  # named as `render` names them
    return Targets([*objects_from_bundle(objects), *endpoints], _sections(bundle.run.infra), True)


def load_serve_bundle(args: argparse.Namespace) -> ServeBundle:
    """The model endpoint of ``serve``'s SPEC argument, with its --set and -n."""
    values = [Setting(("infra", "namespace"), args.namespace, f"-n {args.namespace}")] if args.namespace else []
    return build_serve_bundle(args.spec, layers_of(args, values))
