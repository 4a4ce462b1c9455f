"""JavaScript `Date.parse` for the date strings interrupts carry.

Owns `parse_js_date`. TanStack accepts an `expiresAt` iff `Date.parse` gives a finite number.
We accept the ECMAScript date-time string format (what every producer writes:
`toISOString()`), plus RFC 2822 dates, which V8 also parses. V8's legacy fallback parser
accepts more exotic text ("1", "Jan 2020 x"); such values are treated as invalid here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

_ISO = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})"
    r"(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# ECMAScript time values are limited to ±8.64e15 ms around the epoch.
_MAX_TIME_MS = 8.64e15


def parse_js_date(text: str) -> float | None:
    """Return milliseconds since the epoch, or `None` where `Date.parse` gives NaN."""
    match = _ISO.fullmatch(text)
    if match is not None:
        return _iso_millis(match)
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) / timedelta(milliseconds=1)


def _iso_millis(match: re.Match[str]) -> float | None:
    year = int(match["year"])
    if match["year"] == "-000000":
        return None
    month = int(match["month"] or 1)
    day = int(match["day"] or 1)
    hour = int(match["hour"] or 0)
    minute = int(match["minute"] or 0)
    second = int(match["second"] or 0)
    millis = int((match["fraction"] or "0")[:3].ljust(3, "0"))
    # V8 accepts any day up to 31 and rolls it over (2026-02-30 is March 2).
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    if hour > 24 or minute > 59 or second > 59:
        return None
    if hour == 24 and (minute or second or millis):
        return None
    days = _days_from_civil(year, month, day)
    total = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    zone = match["zone"]
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        offset_hours, offset_minutes = int(zone[1:3]), int(zone[4:6])
        if offset_hours > 23 or offset_minutes > 59:
            return None
        total -= sign * (offset_hours * 60 + offset_minutes) * 60_000
    # A date-time without a zone is local time in JavaScript; servers here run in UTC,
    # and producers always write a zone, so UTC is the faithful reading.
    if abs(total) > _MAX_TIME_MS:
        return None
    return float(total)


def _days_from_civil(year: int, month: int, day: int) -> int:
    # Howard Hinnant's days_from_civil: proleptic Gregorian, valid for any year.
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
