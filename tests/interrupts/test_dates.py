"""`parse_js_date` against values captured from Node 20's `Date.parse` (TZ=UTC)."""

import pytest

from chat_app.interrupts import parse_js_date

CAPTURED = {
    "2099-01-01T00:00:00.000Z": 4070908800000,
    "2026-02-30": 1772409600000,  # V8 rolls day 30 of February over to March 2
    "2020-01-01T24:00:00Z": 1577923200000,
    "2026-01-01T00:00:00.000+0000": 1767225600000,
    "2026-01-01 00:00:00": 1767225600000,
    "1970-01-01Z": 0,
    "-000001-01-01": -62198755200000,
    "-271821-04-20T00:00:00.000Z": -8640000000000000,
    "+275760-09-13T00:00:00.000Z": 8640000000000000,
    "1": 978307200000,
    "100": -59011459200000,
    "May 5": 989020800000,
    "March 7, 2026": 1772841600000,
    "03/07/2026": 1772841600000,
    "Jan 1 2026 10:00 AM": 1767261600000,
    "Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)": 0,
    "10.30.2026": 1793318400000,
}
INVALID = [
    "not a date",
    "",
    "2026-13-01",
    "12:00",
    "2026-01-01T12:00:00 UTC",
    "+275760-09-13T00:00:00.001Z",
    "-000000-01-01T00:00:00Z",
    "2020-01-01T10:00:00+25:00",
    "\uff11\uff19\uff17\uff10",
]


@pytest.mark.parametrize(("text", "millis"), CAPTURED.items())
def test_valid_dates_parse_to_the_same_millisecond_as_v8(text: str, millis: int) -> None:
    assert parse_js_date(text) == millis


@pytest.mark.parametrize("text", INVALID)
def test_what_v8_rejects_is_rejected(text: str) -> None:
    assert parse_js_date(text) is None
