"""Where the tests find the real upstream CRDs (KubeRay, MPI Operator): ``$DOCKYARD_SHARED_CRDS``,
else ``shared/crds`` beside the checkout (worktrees and CI clones sit beside it), else
``/work/shared/crds``. Tests that need them skip with this folder named when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_crds() -> Path:
    for candidate in (os.environ.get("DOCKYARD_SHARED_CRDS"), REPO.parent / "shared" / "crds", "/work/shared/crds"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return REPO.parent / "shared" / "crds"
