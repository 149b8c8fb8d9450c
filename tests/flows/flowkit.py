"""Helpers of the live flow tests: a controller thread beside the CLI, and ordering on what
the CLI printed (never sleeps)."""

from __future__ import annotations

import sys
import threading
from typing import Any

from fakekube import SAFETY_TIMEOUT, FakeKube


def in_background(fn: Any) -> threading.Thread:
    """Run ``fn`` (a controller's part) in a thread; its exceptions land in ``thread.errors``."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            fn()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=body, daemon=True)
    t.errors = errors  # type: ignore[attr-defined]
    t.start()
    return t


def printed() -> str:
    """What the CLI (running in this process, stdout redirected) printed so far."""
    return str(getattr(sys.stdout, "getvalue", lambda: "")())


def wait_output(fake: FakeKube, text: str, timeout: float = SAFETY_TIMEOUT) -> None:
    """Until the CLI printed ``text``: orders what a test does after something the CLI saw."""
    fake.wait_for(lambda: text in printed(), timeout)


def wait_following(fake: FakeKube, *plurals: str) -> None:
    """The CLI has its watches open (rayjobs, pods, events by default)."""
    for plural in plurals or ("rayjobs", "pods", "events"):
        fake.wait_watching(plural)
