"""Small JSON-shape helpers shared by the wire modules (JavaScript `typeof` semantics)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard


def is_record(value: object) -> TypeGuard[Mapping[str, object]]:
    """A JSON object (JavaScript: non-null, `typeof 'object'`, not an array)."""
    return isinstance(value, Mapping)


def tanstack_metadata(event: Mapping[str, object]) -> Mapping[str, object]:
    """An event's `metadata.tanstack` object (empty when it has none)."""
    metadata = event.get("metadata")
    tanstack = metadata.get("tanstack") if isinstance(metadata, Mapping) else None
    return tanstack if isinstance(tanstack, Mapping) else {}


def string_field(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def non_negative_integer(value: object) -> int | None:
    """The value as an int if JavaScript's `Number.isInteger(v) && v >= 0` holds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None
