"""Reading JSON as a JavaScript peer would, refusing what could not go back on the wire.

Owns `strict_loads` (the standard library's reader with number hooks: NaN, Infinity and
numbers JavaScript reads as Infinity are refused with a `ValueError`), `has_long_digit_run`
(when a faster reader may read a number otherwise), `is_text` (no lone surrogates),
`repeated_key` (an object naming a key twice, `RepeatedKey` its refusal) and
`too_deep` (the nesting limit, `MAX_NESTING`). The HTTP layer reads request bodies with them;
`resume` reads the tool arguments a history carries back. Imports only the stdlib.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

#: The deepest a request body, or a tool call's arguments, may nest.
MAX_NESTING = 200


def strict_loads(
    text: str | bytes,
    *,
    unique_keys: bool = False,
    pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> object:
    """`json.loads`, refusing non-finite numbers (`ValueError`); deep nesting may raise
    `RecursionError`. With `unique_keys`, an object naming a key twice is refused too: where
    a person's answer is read, `{"approved": false, "approved": true}` must not mean
    whichever a reader happens to keep (JavaScript keeps the last). `pairs_hook` makes each
    object otherwise (`json.loads`'s `object_pairs_hook`)."""
    return json.loads(
        text,
        parse_int=_finite_int,
        parse_float=_finite_float,
        parse_constant=_no_constant,
        object_pairs_hook=_unique if unique_keys else pairs_hook,
    )


class RepeatedKey(ValueError):
    """An object names `key` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {json.dumps(key)} is given twice")
        self.key = key


def repeated_key(pairs: list[tuple[str, Any]]) -> str | None:
    """The first key an object's `pairs` name a second time, if any."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise RepeatedKey(repeated_key(pairs) or "")
    return found


def is_text(value: object) -> bool:
    """Whether every string in `value` (parsed JSON) can be written as UTF-8: JSON's escapes
    can spell a lone surrogate ("\\ud800"), which no database or page can hold."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


# A number JavaScript reads as Infinity, and NaN/Infinity (not JSON at all), could not be put
# back on the wire or hashed: refused here, before anything runs.
def _finite_int(text: str) -> int:
    if not math.isfinite(float(text)):  # also keeps Python's 4300-digit int limit unreached
        raise ValueError(f"the number {text[:16]}... is out of range")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:24]} is out of range")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def has_long_digit_run(text: bytes) -> bool:
    """Whether `text` holds 19 digits in a row: a number the fast readers may read otherwise
    than `strict_loads` (orjson reads integers past 64 bits as floats; msgspec reads integers
    of any length, where `strict_loads` refuses those JavaScript reads as Infinity)."""
    return _LONG_DIGIT_RUN in text.translate(_DIGITS_TO_ZERO)


_LONG_DIGIT_RUN = b"0" * 19
_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def too_deep(value: dict[str, Any] | list[Any], limit: int = MAX_NESTING) -> bool:
    """Whether any value in the container sits deeper than `limit` (the container itself is at
    depth 1).

    Walks level by level (a large body holds tens of thousands of values): one comprehension
    per level keeps only the containers among the children of the last, with no call per
    value; the JSON readers build exact `dict`s and `list`s only.
    """
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth > limit or (depth == limit and any(map(len, level))):
            return True  # a container past the limit, or one at it with children below
        level = [
            child
            for container in level
            for child in (container.values() if type(container) is dict else container)
            if type(child) in _CONTAINER_TYPES
        ]
        depth += 1
    return False


_CONTAINER_TYPES = frozenset((dict, list))
