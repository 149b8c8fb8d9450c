"""One line of ``doctor``'s report: a :class:`Check` is ✔, ✖ or ! (unknown, e.g. no permission to
look) with a one-line fix.

Every module that contributes checks (``doctor.py`` and its helpers ``operator.py`` and
``references.py``) returns these; it sits below all of them so that none imports another for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool | None  # None: could not tell (permission, not applicable)
    detail: str
    hint: str = ""
    fatal: bool = True  # a failure means the run cannot work

    @property
    def mark(self) -> str:
        return "✔" if self.ok else ("!" if self.ok is None else "✖")
