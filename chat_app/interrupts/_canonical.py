"""Canonical interrupt JSON and its digest, byte-identical to `@tanstack/ai`.

Owns `canonical_interrupt_json` and `digest_interrupt_json` (`docs/protocol.md` §2.4).
Pure: stdlib and orjson.

The common case goes through orjson (sorted keys, UTF-8 out) and is then checked for the
places where its output and JavaScript's disagree:

* numbers: JavaScript prints the double that `JSON.parse` reads (`1.0` -> `1`, `1e-7`,
  `1e+21`, integers past 2**53 rounded to a double);
* lone surrogates: `JSON.stringify` escapes them as `\\udxxx`;
* key order: JavaScript sorts by UTF-16 code unit, Python by code point; they differ only
  when keys mix U+E000..U+FFFF with astral characters.

A few substring searches over the output (cheaper than the encoding) clear most payloads at
once; the rest get the precise checks, and when those fail the exact (slower) encoder below
writes the text. Integer keys are written as their decimal text, as a JavaScript object
holds them; other non-string keys are rejected.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Callable
from typing import TypeAlias

import orjson

JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"

_NOT_JSON = "Interrupt values must be JSON-compatible."
_CYCLE = "Interrupt values must not cycle."
_NOT_PLAIN = "Interrupt values must use plain JSON objects."
_NOT_TEXT = "Interrupt digests require canonical JSON text."

#: The largest whole number every JSON reader keeps exactly (JavaScript's
#: `Number.MAX_SAFE_INTEGER`, RFC 7493): past it a browser or a JavaScript agent reads another
#: number than the one written, and canonical JSON writes the one they would read.
MAX_SAFE_INTEGER = 2**53 - 1
#: Up to this one, a whole number is written as it is (2**53 too: a double holds it exactly).
_SAFE_INTEGER = MAX_SAFE_INTEGER + 1
_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL_UTF8 = re.compile(b"[\xf0-\xf4]")
# Subclasses, dataclasses and datetimes go to `default`, which refuses them. Integers past
# 2**53 - 1 raise (JavaScript rounds them to a double): the exact encoder writes them.
_ORJSON_UNSORTED = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_STRICT_INTEGER
)
_ORJSON_SORTED = _ORJSON_UNSORTED | orjson.OPT_SORT_KEYS
_ORJSON_FAILURES = (orjson.JSONEncodeError, TypeError, RecursionError)
# The `.0` orjson writes at the end of an integral float (`24.0`); JavaScript writes `24`.
_INTEGRAL_FRACTION = re.compile(rb"\.0(?=[,\]}])")
# The exponents where orjson's notation differs from JavaScript's (`1e-6` is `0.000001`,
# `1e+16`..`1e+20` are written in full); every other exponent is written alike. Each regex
# starts with a literal byte that prose rarely holds, which keeps its scan fast.
_EXPONENT_16_TO_20 = re.compile(rb"\+(?:1[6-9]|20)(?=[,\]}]|\Z)")
_EXPONENT_MINUS_6 = re.compile(rb"-6(?=[,\]}]|\Z)(?<=e-6)")
_DOT_ZERO = re.compile(rb"\.0")
_NEGATIVE_ZERO = re.compile(rb"-0\.0")
_NULL = re.compile(rb"null")
# Every byte `_plain` starts a search from, for texts up to `_SHORT` bytes.
_SHORT = 64
_SHORT_SUSPECT = re.compile(rb"[.+\-]|null")
# From this many bytes, reading a text back pauses the cyclic garbage collector (`_read_back`).
_LARGE_TEXT = 64 * 1024


def canonical_interrupt_json(value: object) -> str:
    """Return the canonical JSON text of `value` exactly as `canonicalInterruptJson` does.

    Raises:
        TypeError: for NaN, infinities, cycles and values that are not JSON
            (`Interrupt values must be JSON-compatible.` / `... must not cycle.` /
            `... must use plain JSON objects.`).
    """
    # Written out rather than shared with `js_json_dumps`: on small values the call layers
    # cost as much as the encoding.
    try:
        data = orjson.dumps(value, default=_reject, option=_ORJSON_SORTED)
    except _ORJSON_FAILURES:
        return _exact(value, sort_keys=True)
    if not _plain(data, value) or (not data.isascii() and _utf16_order_differs(data)):
        return _checked(data, value, sort_keys=True)
    return data.decode()


def js_json_dumps(value: object) -> str:
    """`JSON.stringify(value)` for JSON values: insertion order kept, JavaScript numbers.

    Used for what we put on the wire without hashing it (SSE events, tool arguments).
    """
    try:
        data = orjson.dumps(value, default=_reject, option=_ORJSON_UNSORTED)
    except _ORJSON_FAILURES:
        return _exact(value, sort_keys=False)
    if not _plain(data, value):
        return _checked(data, value, sort_keys=False)
    return data.decode()


def tool_result_text(content: object) -> str:
    """A tool result's content as messages and events carry it: a string as is, else its
    `JSON.stringify`."""
    return content if isinstance(content, str) else js_json_dumps(content)


def digest_interrupt_json(text: str) -> str:
    """Return `"sha256:" + hex(SHA-256(UTF-8(text)))`, as `digestInterruptJson` does."""
    if not isinstance(text, str):
        raise TypeError(_NOT_TEXT)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # TextEncoder writes U+FFFD for a lone surrogate; a pair stored as two code
        # points is one character in JavaScript.
        data = _SURROGATE.sub("\ufffd", _rejoin_surrogates(text)).encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _plain(data: bytes, value: object) -> bool:
    """Whether orjson's output `data` for `value` is JavaScript's too, as far as numbers go.

    Numbers need no change unless the output holds a `.0` (integral floats, `-0.0`) or an
    exponent JavaScript writes in full; a hit inside a string only costs the slower
    `_checked`. A `null` may be a NaN or an infinity: the text is read back.
    A one-byte `find` is a memchr, by far the fastest scan; a regex with a literal prefix
    comes next (`in` and multi-byte `find` are slower, and so is one regex alternation).
    """
    if len(data) <= _SHORT and _SHORT_SUSPECT.search(data) is None:
        return True  # on a short text one regex costs less than the scans below
    dot = data.find(b".")
    if dot >= 0 and _DOT_ZERO.search(data, dot):
        return False
    if _js_writes_in_full(data):
        return False
    return _NULL.search(data) is None or _read_back(data) == value


def _js_writes_in_full(data: bytes) -> bool:
    plus = data.find(b"+")
    if plus >= 0 and _EXPONENT_16_TO_20.search(data, plus):
        return True
    minus = data.find(b"-")
    return minus >= 0 and _EXPONENT_MINUS_6.search(data, minus) is not None


def _utf16_order_differs(data: bytes) -> bool:
    # Keys mixing U+E000..U+FFFF (UTF-8 lead byte EE or EF) with astral characters (F0..F4)
    # sort differently by code point and by UTF-16 code unit.
    return (data.find(b"\xee") >= 0 or data.find(b"\xef") >= 0) and _ASTRAL_UTF8.search(
        data
    ) is not None


def _checked(data: bytes, value: object, *, sort_keys: bool) -> str:
    """orjson's output `data` for `value` once made JavaScript's, or the exact encoder's."""
    if data.endswith(b".0"):  # a bare integral float, maybe -0.0
        return _exact(value, sort_keys=sort_keys)
    # Integral floats (`24.0`, as Python writes them) are the common difference: drop the
    # `.0` that ends a token. A `.0` dropped inside a string is caught by reading the text
    # back; a number cannot end in `.0` afterwards.
    # (One regex subn is several times faster than three `bytes.replace`.)
    trimmed, edited = _INTEGRAL_FRACTION.subn(b"", data)
    if edited and _NEGATIVE_ZERO.search(data):  # JavaScript writes `0`
        return _exact(value, sort_keys=sort_keys)
    # A `null` may be a NaN: the text is read back. So is an edited one, unless no string holds
    # a `.0` at all, which proves the `.0`s dropped were all numbers at half the cost.
    read_back = _NULL.search(trimmed) is not None or (
        edited > 0 and not _no_string_holds_dot_zero(data)
    )
    if not _orjson_agrees(trimmed, value, sort_keys=sort_keys, read_back=read_back):
        return _exact(value, sort_keys=sort_keys)
    return trimmed.decode()


def _no_string_holds_dot_zero(data: bytes) -> bool:
    # With no backslash in the text no quote is escaped, so every quote opens or closes a
    # string and the odd pieces between quotes are exactly the strings (keys included).
    return data.find(b"\\") < 0 and b".0" not in b"".join(data.split(b'"')[1::2])


def _orjson_agrees(data: bytes, value: object, *, sort_keys: bool, read_back: bool) -> bool:
    """Whether orjson wrote `value` exactly as JavaScript would, integral floats aside.

    Every check is a byte search over the output, cheaper than the encoding. Beyond integral
    floats (`_checked`), orjson differs from JavaScript on exponents -6 and 16..20 (`1e-7`
    and `1e+21` agree, `1e-6` and `1e+16` do not), on NaN and infinities (written as `null`),
    and on key order when keys mix U+E000..U+FFFF with astral characters (UTF-8 order against
    UTF-16 order). Integers past 2**53 never get here (`OPT_STRICT_INTEGER`), and other
    floats are written alike: both sides print the shortest digits that read back as the
    same double. A match inside a string only costs the exact path, never a wrong answer.
    With `read_back`, the text is read back and compared with `value` (`_checked` says when).
    """
    if _js_writes_in_full(data):
        return False
    if read_back and _read_back(data) != value:
        return False
    return not (sort_keys and not data.isascii() and _utf16_order_differs(data))


def _read_back(data: bytes) -> object:
    """`data` read back, the collector paused when it is large.

    A large text becomes ~10 objects per 100 bytes, none in a cycle, which would set off
    collections, full ones included, over the whole heap: the canonical benchmark's 1 MB
    records (`benchmarks/bench_canonical.py`, read back for their `null`s) take a median 32 ms
    with the collector on and 18 ms paused (5 quick runs each); in-process, 28 against 13 ms
    (CPU time, 21 interleaved rounds). Within noise at 81 KiB, or after `gc.freeze()`.
    """
    if len(data) < _LARGE_TEXT:
        return orjson.loads(data)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        if enabled:
            gc.enable()


def _reject(value: object) -> object:
    raise TypeError(_NOT_JSON if callable(value) else _NOT_PLAIN)


def _exact(value: object, *, sort_keys: bool) -> str:
    parts: list[str] = []
    _encode(value, parts.append, set(), sort_keys)
    return "".join(parts)


def _encode(
    value: object, emit: Callable[[str], object], active: set[int], sort_keys: bool
) -> None:
    if value is None:
        emit("null")
    elif value is True:
        emit("true")
    elif value is False:
        emit("false")
    elif isinstance(value, str):
        emit(_js_string(value))
    elif isinstance(value, int):
        emit(_js_integer(value))
    elif isinstance(value, float):
        emit(_js_number(value))
    elif isinstance(value, (list, tuple, dict)):
        marker = id(value)
        if marker in active:
            raise TypeError(_CYCLE)
        active.add(marker)
        if isinstance(value, dict):
            _encode_object(value, emit, active, sort_keys)
        else:
            emit("[")
            for index, item in enumerate(value):
                if index:
                    emit(",")
                _encode(item, emit, active, sort_keys)
            emit("]")
        active.discard(marker)
    else:
        _reject(value)


def _encode_object(
    value: dict[object, object],
    emit: Callable[[str], object],
    active: set[int],
    sort_keys: bool,
) -> None:
    # json.dumps writes int keys as their decimal text, as a JavaScript object would hold
    # them; any other non-string key has no JSON meaning.
    entries: list[tuple[str, object]] = []
    for key, item in value.items():
        if isinstance(key, str):
            entries.append((key, item))
        elif isinstance(key, int) and not isinstance(key, bool):
            entries.append((str(key), item))
        else:
            raise TypeError(_NOT_PLAIN)
    if sort_keys:
        entries.sort(key=lambda entry: _utf16_key(entry[0]))
    emit("{")
    for index, (key, item) in enumerate(entries):
        if index:
            emit(",")
        emit(_js_string(key))
        emit(":")
        _encode(item, emit, active, sort_keys)
    emit("}")


def _utf16_key(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare in code-unit order, which is what Array#sort uses.
    return key.encode("utf-16-be", "surrogatepass")


def _rejoin_surrogates(text: str) -> str:
    # A str can hold a surrogate pair as two code points; in JavaScript that is one
    # character. Round-tripping through UTF-16 joins pairs and leaves lone halves alone.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _js_string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    if _SURROGATE.search(encoded):
        joined = json.dumps(_rejoin_surrogates(text), ensure_ascii=False)
        encoded = _SURROGATE.sub(_escape_surrogate, joined)
    return encoded


def _js_integer(value: int) -> str:
    if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return str(value)
    try:
        # JavaScript holds every number as a double: JSON.parse rounds the literal.
        return _js_number(float(value))
    except OverflowError:
        raise TypeError(_NOT_JSON) from None


def _js_number(value: float) -> str:
    """Format a finite double as ECMAScript Number::toString does."""
    if value != value or value in (float("inf"), float("-inf")):
        raise TypeError(_NOT_JSON)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    significant = all_digits.lstrip("0")
    # value = 0.<significant> * 10**point
    point = len(whole) + (int(exponent) if exponent else 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        text = digits[0] + ("." + digits[1:] if count > 1 else "") + "e"
        text += ("+" if power >= 0 else "-") + str(abs(power))
    return sign + text
