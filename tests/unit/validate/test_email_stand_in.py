"""The stand-in for ``email.utils`` used while jsonschema-rs is imported (compiled.import_jsonschema_rs)."""

import datetime
import email.utils
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dockyard_k8s.validate import _email_utils


def _outcome(f, data):
    try:
        return f(data)
    except Exception as e:  # the same kind of failure counts as the same answer
        return type(e)


ZONES = st.one_of(st.none(), st.integers(-1439, 1439).map(lambda m: datetime.timezone(datetime.timedelta(minutes=m))))


@settings(max_examples=500, deadline=None)
@given(st.datetimes(min_value=datetime.datetime(1000, 1, 1)), ZONES, st.booleans())
def test_stand_in_parses_rfc2822_dates_as_email_utils_does(moment, zone, weekday):
    text = email.utils.format_datetime(moment.replace(tzinfo=zone))  # no zone: "-0000"
    if not weekday:
        text = text.split(", ", 1)[1]
    got, want = _email_utils.parsedate_to_datetime(text), email.utils.parsedate_to_datetime(text)
    assert got == want and got.tzinfo == want.tzinfo and got.utcoffset() == want.utcoffset()


@pytest.mark.parametrize("text", [
    "Thu, 12 Nov 2026 07:50:16 +0000", "12 Nov 2026 07:50:16 -0000", "1 Jan 2020 00:00:00 +0530",
    "Mon, 31 Feb 2020 00:00:00 +0000", "Mon, 12 Nov 26 07:50:16 +0000", "Thu, 12 nov 2026 07:50:16 +0000",
    "Thu, 12 Nov 2026 24:00:00 +0000", "Thu, 12 Nov 2026 07:50 +0000", "Thu, 12 Nov 2026 07:50:16 GMT",
    "", "garbage", "Thu, ١٢ Nov 2026 07:50:16 +0000",
])
def test_stand_in_agrees_with_email_utils_on_odd_dates(text):
    assert _outcome(_email_utils.parsedate_to_datetime, text) == _outcome(email.utils.parsedate_to_datetime, text)


def test_stand_in_hands_every_other_name_to_the_real_module():
    assert _email_utils.formataddr is email.utils.formataddr


def test_jsonschema_rs_imports_without_the_email_package_and_leaves_the_real_one():
    pytest.importorskip("jsonschema_rs")
    code = (
        "import sys\n"
        "from dockyard_k8s.validate.compiled import import_jsonschema_rs\n"
        "m = import_jsonschema_rs()\n"
        "assert 'email.utils' not in sys.modules, 'the stand-in stayed, or the real module was imported'\n"
        "built = m.jsonschema_rs.__build__['info-time']\n"
        "assert m.validator_for({'type': 'object'}).is_valid({})\n"
        "import email.utils\n"
        "assert email.utils.formataddr(('a', 'b@c')) == 'a <b@c>'\n"
        "assert email.utils.parsedate_to_datetime(email.utils.format_datetime(built)) == built\n"
        "assert import_jsonschema_rs() is m\n"
        "print(type(built).__name__, built.tzinfo is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["datetime", "True"]
