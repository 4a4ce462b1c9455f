"""Canonical interrupt JSON and its digest, byte-identical to `@tanstack/ai`.

Owns `canonical_interrupt_json` and `digest_interrupt_json` (contract §2.4). Pure: stdlib only.

The common case goes through the C encoder (`json.dumps` with sorted keys) and is then
checked for the three places where Python and JavaScript disagree:

* numbers: JavaScript prints the double that `JSON.parse` reads (`1.0` -> `1`, `1e-7`,
  `1e+21`, integers past 2**53 rounded to a double);
* lone surrogates: `JSON.stringify` escapes them as `\\udxxx`;
* key order: JavaScript sorts by UTF-16 code unit, Python by code point; they differ only
  when keys mix U+E000..U+FFFF with astral characters.

A walk over the value (cheaper than the encoder itself) decides whether the C output can be
trusted; when it cannot, the exact (slower) encoder below writes the text. Integer keys are
written as their decimal text, as a JavaScript object holds them; other non-string keys are
rejected.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import TypeAlias

JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"

_NOT_JSON = "Interrupt values must be JSON-compatible."
_CYCLE = "Interrupt values must not cycle."
_NOT_PLAIN = "Interrupt values must use plain JSON objects."
_NOT_TEXT = "Interrupt digests require canonical JSON text."

_SAFE_INTEGER = 2**53
# repr() and Number::toString agree on non-integral doubles in this range: below it repr
# switches to exponents at 1e-5 (JavaScript at 1e-7), above it at 1e16 (JavaScript at 1e21).
_REPR_LIKE_JS_LOW = 1e-4
_REPR_LIKE_JS_HIGH = 1e16
_STR_ONLY = frozenset({str})
_SURROGATE = re.compile("[\ud800-\udfff]")
_BMP_HIGH = re.compile("[\ue000-\uffff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def canonical_interrupt_json(value: object) -> str:
    """Return the canonical JSON text of `value` exactly as `canonicalInterruptJson` does.

    Raises:
        TypeError: for NaN, infinities, cycles and values that are not JSON
            (`Interrupt values must be JSON-compatible.` / `... must not cycle.` /
            `... must use plain JSON objects.`).
    """
    return _dumps(value, sort_keys=True)


def js_json_dumps(value: object) -> str:
    """`JSON.stringify(value)` for JSON values: insertion order kept, JavaScript numbers.

    Used for what we put on the wire without hashing it (SSE events, tool arguments).
    """
    return _dumps(value, sort_keys=False)


def digest_interrupt_json(text: str) -> str:
    """Return `"sha256:" + hex(SHA-256(UTF-8(text)))`, as `digestInterruptJson` does."""
    if not isinstance(text, str):
        raise TypeError(_NOT_TEXT)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # TextEncoder writes U+FFFD for a lone surrogate; a pair stored as two code points
        # is one character in JavaScript.
        data = _SURROGATE.sub("\ufffd", _rejoin_surrogates(text)).encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _dumps(value: object, *, sort_keys: bool) -> str:
    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=sort_keys,
            allow_nan=False,
            default=_reject,
        )
    except (ValueError, TypeError, RecursionError):
        # The C encoder reports cycles and NaN as ValueError and in its own words; the exact
        # encoder walks in TanStack's order and raises TanStack's TypeError.
        return _exact(value, sort_keys=sort_keys)
    # json.dumps succeeded, so the value is acyclic and the walk below terminates.
    if not _c_encoder_agrees(value):
        return _exact(value, sort_keys=sort_keys)
    if not text.isascii():
        if _SURROGATE.search(text):
            return _exact(value, sort_keys=sort_keys)
        if sort_keys and _BMP_HIGH.search(text) and _ASTRAL.search(text):
            return _exact(value, sort_keys=sort_keys)
    return text


def _c_encoder_agrees(value: object) -> bool:
    """Whether json.dumps printed every number and key of `value` as JavaScript would.

    Floats agree when repr() uses neither an exponent nor a trailing `.0`; integers agree up
    to 2**53; keys agree when they are strings (json.dumps coerces others, and sorts ints
    numerically where JavaScript sorts their text).
    """
    if type(value) is not dict and type(value) is not list:
        return _leaf_agrees(value)
    containers: list[object] = [value]
    pop, push = containers.pop, containers.append
    while containers:
        container = pop()
        if type(container) is dict:
            if not _STR_ONLY >= set(map(type, container)):
                return False
            items = container.values()
        else:
            items = container  # type: ignore[assignment]
        for item in items:
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is dict or kind is list:
                push(item)
            elif not _leaf_agrees(item):
                return False
    return True


def _leaf_agrees(item: object) -> bool:
    kind = type(item)
    if kind is int:
        return -_SAFE_INTEGER <= item <= _SAFE_INTEGER  # type: ignore[operator]
    if kind is float:
        number: float = item  # type: ignore[assignment]
        return not number.is_integer() and _REPR_LIKE_JS_LOW <= abs(number) < _REPR_LIKE_JS_HIGH
    # Tuples, subclasses and the like: the exact encoder decides.
    return kind is str or kind is bool or item is None


def _reject(value: object) -> object:
    raise TypeError(_NOT_JSON if callable(value) else _NOT_PLAIN)


def _exact(value: object, *, sort_keys: bool = True) -> str:
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
