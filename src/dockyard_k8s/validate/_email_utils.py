"""A stand-in for ``email.utils`` while jsonschema-rs is imported (see
:func:`.compiled.import_jsonschema_rs`): the one function its set-up calls, for the dates it
passes (``Thu, 12 Nov 2026 07:50:16 +0000``), without importing the ``email`` package
(~20 ms); any other date, and any other name, come from the real module."""

from __future__ import annotations

import re
from typing import Any

_DATE = re.compile(r"(?:[A-Z][a-z]{2}, )?([0-9]{1,2}) ([A-Z][a-z]{2}) ([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) "
                   r"([+-])([0-9]{2})([0-9]{2})")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def parsedate_to_datetime(data: str) -> Any:
    """``email.utils.parsedate_to_datetime``: the same datetime (timezone-aware)."""
    m = _DATE.fullmatch(data) if isinstance(data, str) else None
    if m is None or m.group(2) not in _MONTHS or (m.group(7) == "-" and m.group(8, 9) == ("00", "00")):
        return _real().parsedate_to_datetime(data)  # anything else, and "-0000" (no zone), as it does
    import datetime

    day, _, year, hour, minute, second, sign, zone_h, zone_m = m.groups()
    offset = datetime.timedelta(hours=int(zone_h), minutes=int(zone_m)) * (-1 if sign == "-" else 1)
    try:
        return datetime.datetime(int(year), _MONTHS.index(m.group(2)) + 1, int(day), int(hour), int(minute),
                                 int(second), tzinfo=datetime.timezone(offset))
    except ValueError:  # an impossible date or time: its error, not ours
        return _real().parsedate_to_datetime(data)


def _real() -> Any:
    """The real ``email.utils`` (this stand-in leaves ``sys.modules`` for good)."""
    import importlib
    import sys

    if sys.modules.get("email.utils") is sys.modules[__name__]:
        del sys.modules["email.utils"]
    return importlib.import_module("email.utils")


def __getattr__(name: str) -> Any:
    return getattr(_real(), name)
