"""The one "did you mean" of every message about a near-miss name: a key, a flag, a command,
a fleet, an instance type, a field of a Kubernetes object.

``difflib``'s ratio with one cutoff for all of them, so a typo is suggested the same way
wherever it is made.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's own default: "volumeMount" -> "volumeMounts", "optimzer" -> "optimizer"


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice nearest to ``word``, or None when none is near enough."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str], quote: str = "'") -> str:
    """``; did you mean 'status'?`` for a near miss, else "" (``quote='"'`` where the message
    quotes as kubectl does: ``unknown field "x"``)."""
    near = closest(word, choices)
    return f"; did you mean {quote}{near}{quote}?" if near is not None else ""
