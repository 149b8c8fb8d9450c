"""The shared vocabulary of the fake API server's modules: Status bodies and small helpers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_discovery import Resource


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
           "reason": reason, "details": details, "code": code}
    if not reason:
        doc.pop("reason")
    if not details:
        doc.pop("details")
    return doc


class ApiFailure(Exception):
    def __init__(self, code: int, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.doc = status(code, reason, message, **details)


def now_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def qualified(res: Resource) -> str:
    return f"{res.plural}.{res.group}" if res.group else res.plural


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def strip_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}
