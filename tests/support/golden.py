"""Golden files: compare text with a checked-in file byte for byte, or (re)write the file with
``DOCKYARD_UPDATE_GOLDEN=1`` (``make golden``); read the diff line by line before committing."""

from __future__ import annotations

import os
from pathlib import Path

UPDATE = os.environ.get("DOCKYARD_UPDATE_GOLDEN") == "1"


def compare(path: Path, text: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}; run `make golden` to create it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from its golden file (`make golden`, review)"
