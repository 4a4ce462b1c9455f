"""JavaScript `Date.parse`, as V8 (Node, Chromium) answers it, for the dates interrupts carry.

Owns `parse_js_date`. TanStack treats an `expiresAt` as valid iff `Date.parse` returns a
finite number, so a binding's validity, and therefore whether an interrupt is ours, depends
on V8's parser. V8 first reads an ECMAScript date-time string as far as it goes, then hands
whatever is left to its lenient "legacy" grammar (month names, `GMT+0100`, `3/7/2026`,
`10:00 PM`, parenthesized comments…). Both are reproduced here, token by token.

One deliberate difference: a date-time without a zone is local time in JavaScript; here it
is read as UTC (our servers run in UTC, and producers write a zone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

_MAX_DIGITS = 9  # V8 keeps the first nine digits of a numeral and skips the rest
_MS_PER_DAY = 86_400_000
_MAX_TIME_MS = 8.64e15
_MAX_LOCAL_MS = _MAX_TIME_MS + 864_000_000  # the local-time window before conversion
_MAX_YEAR = 1_000_000
_SMI_MAX = 2**30 - 1

# ECMAScript WhiteSpace and LineTerminator code points.
_WHITESPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# Words of at most three letters (a month name may be longer: only its prefix counts).
_SHORT_WORDS: dict[str, tuple[str, int]] = {
    "am": ("ampm", 0),
    "pm": ("ampm", 12),
    "ut": ("zone", 0),
    "utc": ("zone", 0),
    "z": ("zone", 0),
    "gmt": ("zone", 0),
    "cdt": ("zone", -5),
    "cst": ("zone", -6),
    "edt": ("zone", -4),
    "est": ("zone", -5),
    "mdt": ("zone", -6),
    "mst": ("zone", -7),
    "pdt": ("zone", -7),
    "pst": ("zone", -8),
    "t": ("time-separator", 0),
}

TokenKind = Literal["number", "symbol", "word", "space", "unknown", "end", "invalid"]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: TokenKind
    value: int = 0
    length: int = 0
    symbol: str = ""
    word: str = ""  # for words: "month", "ampm", "zone", "time-separator" or "" (unknown)

    def is_symbol(self, symbol: str) -> bool:
        return self.kind == "symbol" and self.symbol == symbol

    def is_number(self, length: int | None = None) -> bool:
        return self.kind == "number" and (length is None or self.length == length)

    @property
    def is_sign(self) -> bool:
        return self.kind == "symbol" and self.symbol in "+-"

    @property
    def sign(self) -> int:
        return 1 if self.symbol == "+" else -1

    @property
    def is_z(self) -> bool:
        return self.kind == "word" and self.word == "zone" and self.length == 1 and self.value == 0


_END = _Token("end")
_INVALID = _Token("invalid")


class _Scanner:
    """Splits the text into V8's date tokens, with one token of lookahead."""

    def __init__(self, text: str) -> None:
        # V8 reads a NUL character as the end of the string.
        self._text = text.split("\0", 1)[0]
        self._pos = 0
        self._next = self._scan()

    def peek(self) -> _Token:
        return self._next

    def next(self) -> _Token:
        token, self._next = self._next, self._scan()
        return token

    def skip_symbol(self, symbol: str) -> bool:
        if self._next.is_symbol(symbol):
            self._next = self._scan()
            return True
        return False

    def _scan(self) -> _Token:
        text, start = self._text, self._pos
        if start >= len(text):
            return _END
        char = text[start]
        if "0" <= char <= "9":
            end = start
            while end < len(text) and "0" <= text[end] <= "9":
                end += 1
            self._pos = end
            digits = text[start:end]
            return _Token("number", value=int(digits[:_MAX_DIGITS]), length=len(digits))
        if char in ":-+.)":
            self._pos += 1
            return _Token("symbol", symbol=char)
        if char >= "A":
            end = start
            while end < len(text) and text[end] >= "A":
                end += 1
            self._pos = end
            word = text[start:end]
            # JavaScript counts UTF-16 code units.
            length = len(word.encode("utf-16-le")) // 2
            kind, value = _word(word)
            return _Token("word", value=value, length=length, word=kind)
        if char in _WHITESPACE:
            self._pos += 1
            return _Token("space")
        if char == "(":
            depth, end = 0, start
            while True:
                if text[end] == ")":
                    depth -= 1
                elif text[end] == "(":
                    depth += 1
                end += 1
                if depth <= 0 or end >= len(text):
                    break
            self._pos = end
            return _Token("unknown")
        self._pos += 1
        return _Token("unknown")


def _lower_prefix(word: str) -> str:
    return "".join(chr(ord(c) | 0x20) if "A" <= c <= "Z" else c for c in word[:3])


def _word(word: str) -> tuple[str, int]:
    """The word's kind ("month", "ampm", "zone", "time-separator" or "") and its value."""
    prefix = _lower_prefix(word)
    if prefix in _MONTHS:
        return "month", _MONTHS.index(prefix) + 1
    if len(word) <= 3 and prefix in _SHORT_WORDS:
        return _SHORT_WORDS[prefix]
    return "", 0


def _is_month(value: int) -> bool:
    return 1 <= value <= 12


def _is_day(value: int) -> bool:
    return 1 <= value <= 31


def _is_hour(value: int) -> bool:
    return 0 <= value <= 23


def _is_minute(value: int) -> bool:
    return 0 <= value <= 59


@dataclass
class _Day:
    parts: list[int] = field(default_factory=list)
    named_month: int | None = None
    iso: bool = False

    def add(self, value: int) -> bool:
        if len(self.parts) >= 3:
            return False
        self.parts.append(value)
        return True

    def resolve(self) -> tuple[int, int, int] | None:
        if not self.parts:
            return None
        # Missing parts are 1, and from here on V8 reasons as if three were given: "1" is
        # January 1st of (20)01, "May 5" is May 5th, 2001.
        first, second, third = self.parts + [1] * (3 - len(self.parts))
        if self.named_month is None:
            if self.iso or not _is_day(first):
                year, month, day = first, second, third
            else:
                month, day, year = first, second, third
        else:
            month = self.named_month
            if not _is_day(first):
                year, day = first, second
            else:
                day, year = first, second
        if not self.iso:
            if 0 <= year <= 49:
                year += 2000
            elif 50 <= year <= 99:
                year += 1900
        if abs(year) > _SMI_MAX or not _is_month(month) or not _is_day(day):
            return None
        return year, month, day


@dataclass
class _Time:
    parts: list[int] = field(default_factory=list)
    hour_offset: int | None = None

    def add(self, value: int) -> bool:
        if len(self.parts) >= 4:
            return False
        self.parts.append(value)
        return True

    def add_final(self, value: int) -> bool:
        if not self.add(value):
            return False
        self.parts += [0] * (4 - len(self.parts))
        return True

    def expects(self, value: int) -> bool:
        index = len(self.parts)
        return (index in (1, 2) and _is_minute(value)) or (index == 3 and 0 <= value <= 999)

    def resolve(self) -> tuple[int, int, int, int] | None:
        hour, minute, second, millis = self.parts + [0] * (4 - len(self.parts))
        if self.hour_offset is not None:
            if not 0 <= hour <= 12:
                return None
            hour = hour % 12 + self.hour_offset
        hms = hour, minute, second, millis
        in_range = _is_hour(hour) and _is_minute(minute) and _is_minute(second)
        if not (in_range and 0 <= millis <= 999) and hms != (24, 0, 0, 0):
            return None
        return hms


@dataclass
class _Zone:
    sign: int | None = None
    hour: int | None = None
    minute: int | None = None

    def set_hours(self, offset: int) -> None:
        self.sign = -1 if offset < 0 else 1
        self.hour, self.minute = abs(offset), 0

    def expects(self, value: int) -> bool:
        return self.hour is not None and self.minute is None and _is_minute(value)

    @property
    def is_utc(self) -> bool:
        return self.hour == 0 and self.minute == 0

    def offset_seconds(self) -> int | None | Literal[False]:
        """Seconds east of UTC; `None` when no zone was given; `False` when out of range."""
        if self.sign is None:
            return None
        total = (self.hour or 0) * 3600 + (self.minute or 0) * 60
        if total > _SMI_MAX:
            return False
        return self.sign * total


def _milliseconds(token: _Token) -> int:
    # The first three significant digits of the numeral, whatever its length.
    number, length = token.value, token.length
    if length == 1:
        return number * 100
    if length == 2:
        return number * 10
    length = min(length, _MAX_DIGITS)
    return number // 10 ** (length - 3) if length > 3 else number


def _read_iso(scanner: _Scanner, day: _Day, time: _Time, zone: _Zone) -> _Token:
    """Read an ECMAScript date-time string as far as it goes.

    Returns `_END` when the whole text was one, `_INVALID` when it cannot be a date at all,
    and otherwise the first token the legacy grammar must handle.
    """
    if scanner.peek().is_sign:
        sign_token = scanner.next()
        if not scanner.peek().is_number(6):
            return sign_token
        year = scanner.next().value
        if sign_token.sign < 0 and year == 0:
            return sign_token
        day.add(sign_token.sign * year)
    elif scanner.peek().is_number(4):
        day.add(scanner.next().value)
    else:
        return scanner.next()
    if scanner.skip_symbol("-"):
        if not (scanner.peek().is_number(2) and _is_month(scanner.peek().value)):
            return scanner.next()
        day.add(scanner.next().value)
        if scanner.skip_symbol("-"):
            if not (scanner.peek().is_number(2) and _is_day(scanner.peek().value)):
                return scanner.next()
            day.add(scanner.next().value)
    if not (scanner.peek().kind == "word" and scanner.peek().word == "time-separator"):
        if scanner.peek().kind != "end":
            return scanner.next()
    else:
        scanner.next()
        if not _read_iso_time(scanner, time, zone):
            return _INVALID
        if scanner.peek().kind != "end":
            return _INVALID
    # A date-only form without a zone is UTC; a date-time form is local time.
    if zone.hour is None and not time.parts:
        zone.set_hours(0)
    day.iso = True
    return _END


def _read_iso_time(scanner: _Scanner, time: _Time, zone: _Zone) -> bool:
    if not (scanner.peek().is_number(2) and 0 <= scanner.peek().value <= 24):
        return False
    hour_is_24 = scanner.peek().value == 24
    time.add(scanner.next().value)
    for index, required in enumerate((True, False)):
        if not scanner.skip_symbol(":"):
            if required:
                return False
            break
        token = scanner.peek()
        if not (token.is_number(2) and _is_minute(token.value)) or (hour_is_24 and token.value):
            return False
        time.add(scanner.next().value)
        if index == 1 and scanner.skip_symbol("."):
            token = scanner.peek()
            if token.kind != "number" or (hour_is_24 and token.value > 0):
                return False
            time.add(_milliseconds(scanner.next()))
    if scanner.peek().is_z:
        scanner.next()
        zone.set_hours(0)
    elif scanner.peek().is_sign:
        zone.sign = scanner.next().sign
        if scanner.peek().is_number(4):
            hour, minute = divmod(scanner.next().value, 100)
            if not (_is_hour(hour) and _is_minute(minute)):
                return False
            zone.hour, zone.minute = hour, minute
        else:
            if not (scanner.peek().is_number(2) and _is_hour(scanner.peek().value)):
                return False
            zone.hour = scanner.next().value
            if not scanner.skip_symbol(":"):
                return False
            if not (scanner.peek().is_number(2) and _is_minute(scanner.peek().value)):
                return False
            zone.minute = scanner.next().value
    return True


def _read_legacy(  # noqa: C901 - one loop over V8's legacy grammar, kept in one place
    scanner: _Scanner, first: _Token, day: _Day, time: _Time, zone: _Zone
) -> bool:
    has_number = bool(day.parts)
    token = first
    while token.kind != "end":
        if token.kind == "number":
            has_number = True
            value = token.value
            if scanner.skip_symbol(":"):
                if scanner.skip_symbol(":"):
                    if time.parts:
                        return False
                    time.add(value)
                    time.add(0)
                else:
                    if not time.add(value):
                        return False
                    if scanner.peek().is_symbol("."):
                        scanner.next()
            elif scanner.skip_symbol(".") and time.expects(value):
                # V8 consumes the '.' before asking whether a time is expected.
                time.add(value)
                if scanner.peek().kind != "number":
                    return False
                time.add_final(_milliseconds(scanner.next()))
            elif zone.expects(value):
                zone.minute = value
            elif time.expects(value):
                time.add_final(value)
                after = scanner.peek()
                if not (after.kind in ("end", "space") or after.is_z or after.is_sign):
                    return False
            else:
                if not day.add(value):
                    return False
                scanner.skip_symbol("-")
        elif token.kind == "word":
            if token.word == "ampm" and time.parts:
                time.hour_offset = token.value
            elif token.word == "month":
                day.named_month = token.value
                scanner.skip_symbol("-")
            elif token.word == "zone" and has_number:
                zone.set_hours(token.value)
            else:
                # Words are ignored before the first number, and only there.
                if has_number or scanner.peek().kind == "number":
                    return False
        elif token.is_sign and (zone.is_utc or time.parts):
            zone.sign = token.sign
            value, length = 0, 0
            if scanner.peek().kind == "number":
                number = scanner.next()
                value, length = number.value, number.length
            has_number = True
            if scanner.peek().is_symbol(":"):
                zone.hour, zone.minute = value, None
            elif length in (1, 2):
                zone.hour, zone.minute = value, 0
            elif length in (3, 4):
                zone.hour, zone.minute = divmod(value, 100)
            else:
                return False
        elif (token.is_sign or token.is_symbol(")")) and has_number:
            return False
        token = scanner.next()
    return True


def parse_js_date(text: str) -> float | None:
    """Milliseconds since the epoch, as `Date.parse(text)` returns them; `None` for NaN."""
    scanner = _Scanner(text)
    day, time, zone = _Day(), _Time(), _Zone()
    rest = _read_iso(scanner, day, time, zone)
    if rest.kind == "invalid":
        return None
    if rest.kind != "end" and not _read_legacy(scanner, rest, day, time, zone):
        return None
    ymd, hms, offset = day.resolve(), time.resolve(), zone.offset_seconds()
    if ymd is None or hms is None or offset is False:
        return None
    days = _make_day(*ymd)
    if days is None:
        return None
    hour, minute, second, millis = hms
    moment = float(days * _MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millis)
    if offset is None:
        if abs(moment) > _MAX_LOCAL_MS:
            return None
    else:
        moment -= offset * 1000
    if abs(moment) > _MAX_TIME_MS:
        return None
    return moment + 0.0


def _make_day(year: int, month: int, day: int) -> int | None:
    """Days from the epoch to the given civil date; the day may overflow the month."""
    if abs(year) > _MAX_YEAR:
        return None
    # Days from civil (proleptic Gregorian), with floor division for negative years.
    shifted = year - (month <= 2)
    era = shifted // 400
    year_of_era = shifted - era * 400
    month_index = month + (-3 if month > 2 else 9)
    day_of_year = (153 * month_index + 2) // 5
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468 + day - 1
