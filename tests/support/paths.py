"""Where things are in the checkout, for the tests of every directory:
``from support.paths import REPO, EXAMPLES``.

The real upstream CRDs (KubeRay, Kueue, MPI Operator) are :func:`shared_crds`:
``$DOCKYARD_SHARED_CRDS``, else ``shared/crds`` beside the checkout (worktrees and CI clones sit
beside it), else ``/work/shared/crds``. Tests that need them skip with the folder named when it
is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DOCS = REPO / "docs"
GOLDEN = REPO / "tests" / "golden" / "expected"
PACKAGE = REPO / "src" / "dockyard_k8s"


def shared_crds() -> Path:
    for candidate in (os.environ.get("DOCKYARD_SHARED_CRDS"), REPO.parent / "shared" / "crds", "/work/shared/crds"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return REPO.parent / "shared" / "crds"
