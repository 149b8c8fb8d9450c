"""One line of ``doctor``'s report: a :class:`Check` is ✔, ✖ or ! (unknown, e.g. no permission to
look) with a one-line fix.

Every module that contributes checks (``doctor.py`` and its helpers ``operator.py`` and
``references.py``) returns these; it sits below all of them so that none imports another for it.
"""

from __future__ import annotations

from dockyard_k8s.plain import Record


class Check(Record):
    __slots__ = ("name", "ok", "detail", "hint", "fatal")

    def __init__(self, name: str, ok: bool | None, detail: str, hint: str = "", fatal: bool = True) -> None:
        self.name = name
        self.ok = ok  # None: could not tell (permission, not applicable)
        self.detail = detail
        self.hint = hint
        self.fatal = fatal  # a failure means the run cannot work

    @property
    def mark(self) -> str:
        return "✔" if self.ok else ("!" if self.ok is None else "✖")
