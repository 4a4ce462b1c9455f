"""Reading JSON as a JavaScript peer would, refusing what could not go back on the wire.

Owns `strict_loads` (the standard library's reader with number hooks: NaN, Infinity and
numbers JavaScript reads as Infinity are refused with a `ValueError`) and `too_deep` (the
nesting limit, `MAX_NESTING`). The HTTP layer reads request bodies with them; `resume` reads
the tool arguments a history carries back. Imports only the stdlib.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: The deepest a request body, or a tool call's arguments, may nest.
MAX_NESTING = 200


def strict_loads(text: str | bytes) -> object:
    """`json.loads`, refusing non-finite numbers (`ValueError`); deep nesting may raise
    `RecursionError`."""
    return json.loads(
        text, parse_int=_finite_int, parse_float=_finite_float, parse_constant=_no_constant
    )


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
