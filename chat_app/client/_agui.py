"""Whether what a remote agent sent is an AG-UI event: `event_problem`.

Checks one decoded event against `ag_ui.core`'s models (its type is one AG-UI knows, its
fields have their types; extra fields are allowed, as AG-UI allows them) and says what is
wrong in words, for `SSEConnection`. The in-process agent's events are typed already.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache

from ag_ui.core import Event, EventType
from pydantic import TypeAdapter, ValidationError

from ._http import trim

__all__ = ["event_problem"]

_TYPES = frozenset(item.value for item in EventType)


@cache
def _adapter() -> TypeAdapter[Event]:
    return TypeAdapter(Event)


def event_problem(event: object) -> str | None:
    """Why `event` is not a valid AG-UI event, or `None` when it is."""
    if not isinstance(event, Mapping):
        return f"{_show(event)} is not an object"
    kind = event.get("type")
    if kind is None:
        return f"{_show(event)} has no type"
    if not isinstance(kind, str) or kind not in _TYPES:
        return f"{_show(event)} has a type AG-UI does not know"
    try:
        _adapter().validate_python(dict(event))
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "its fields"
        if first["type"] == "missing":
            return f"a {kind} event without its {where}"
        return f"a {kind} event whose {where} is invalid ({first['msg']})"
    return None


def _show(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    return trim(text, 80)
