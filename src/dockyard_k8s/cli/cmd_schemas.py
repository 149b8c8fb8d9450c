"""``dockyard-k8s schemas``: fetch CRD schemas once, see what validation will use."""

from __future__ import annotations

import argparse
from typing import Any

from dockyard_k8s.cli._output import table
from dockyard_k8s.validate import builtin
from dockyard_k8s.validate.cache import cache_root
from dockyard_k8s.validate.compiled import ValidatorCache
from dockyard_k8s.validate.crd import CrdRegistry
from dockyard_k8s.validate.fetch import KUBERAY_URL, fetch_kuberay

EXAMPLES = """\
examples:
  dockyard-k8s schemas fetch --kuberay v1.6.1     # KubeRay CRDs of your operator's release
  dockyard-k8s schemas fetch --kuberay v1.6.1 --from /mirror/kuberay/{version}   # an air-gapped mirror
  dockyard-k8s schemas list
"""


def register(sub: Any) -> None:
    p = sub.add_parser("schemas",
                       description="Manage the schemas `validate`, `check` and `render` validate against. "
                                   "Built-in Kubernetes schemas ship with the kubernetes-validate package; "
                                   "KubeRay v1.7.0 CRDs ship with dockyard-k8s; `fetch` gets another release "
                                   "once (network), into the user cache.",
                       epilog=EXAMPLES)
    actions = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    fetch = actions.add_parser("fetch", help="download CRDs (KubeRay release) into the user cache")
    fetch.add_argument("--kuberay", required=True, metavar="VERSION", help="KubeRay release, e.g. v1.7.0")
    fetch.add_argument("--from", dest="base_url", metavar="URL",
                       help="where the CRD files are: a base URL, a local directory or a file:// URL ({version} is "
                            "replaced; default: the GitHub release tag)")
    fetch.set_defaults(func=run_fetch)
    listing = actions.add_parser("list", help="the schema sources validation uses, and the cache")
    listing.add_argument("--kubernetes-version", default="1.29", metavar="X.Y")
    listing.set_defaults(func=run_list)


def run_fetch(args: argparse.Namespace) -> int:
    root = cache_root()
    kinds = fetch_kuberay(args.kuberay, root=root, base_url=args.base_url or KUBERAY_URL)
    CrdRegistry(root, use_bundled=False).table()  # read them now, so the next run only stats them
    print(f"fetched {len(kinds)} CRD schema(s) into {root}/crds/kuberay: {', '.join(kinds)}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    root = cache_root()
    found = builtin.schema_set(args.kubernetes_version)
    print(f"built-in: {found.label if found else 'none (install kubernetes-validate)'}")
    versions = builtin.available_versions()
    if versions:
        print(f"  Kubernetes versions available: {versions[0]} to {versions[-1]}")
    rows = [[api_kind, crd.source] for api_kind, crd in sorted(CrdRegistry(root).table().items())]
    print("CRDs (first source wins):")
    print(table(rows, ["apiVersion/kind", "source"], indent="  ") if rows else "  none")
    print(f"cache: {root} ({ValidatorCache(root).cached_code_count()} compiled validator(s))")
    return 0
