"""A run's message history: `ag_ui` messages, each built the first time it is read.

Owns `History`. A continuation carries the whole conversation, and building an `ag_ui` model
for every message of a long one cost more than everything else the server does with the
request (1.6 µs a message, measured), while a run reads only the few it needs. So a request's
messages arrive here validated but plain (see `chat_app.agent.run_input`), and each becomes
its model when read. The engine's scans (`chat_app.agent.history`) read the fields without
building anything.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from functools import cache
from typing import Any, overload

from ag_ui.core import AssistantMessage, Message, ToolMessage
from pydantic import TypeAdapter

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_ROLE_KIND: dict[object, type] = {"tool": ToolMessage, "assistant": AssistantMessage}


class History(MutableSequence[Message]):
    """A list of `ag_ui` messages to whoever reads it; plain dicts until then.

    Indexing, slicing, iterating and `==` build the models they touch; `append`, `insert`,
    assignment and `del` work as on a list. A message, once built, is the one every later read
    returns, so a hook that changes it in place is seen by the engine.
    """

    __slots__ = ("_fields", "_kinds", "_models", "_raw")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._models: list[Message | None] = list(messages)
        # The request's own dict for each message not built yet: the model is built from it,
        # so it is exactly the one `RunAgentInput` validation would have made.
        self._raw: list[Any] = [None] * len(self._models)
        # Field values by attribute name, one dict per message: the validated plain fields
        # until the message is built, then the model's own `__dict__` (live).
        self._fields: list[dict[str, Any]] = list(map(vars, self._models))
        self._kinds: list[type | None] = list(map(_kind, map(type, self._models)))

    @classmethod
    def of(cls, messages: Iterable[Message]) -> History:
        """`messages` as a history of its own (a copy when it is one already)."""
        return messages.copy() if isinstance(messages, History) else cls(messages)

    @classmethod
    def validated(cls, raw: list[Any], fields: list[dict[str, Any]]) -> History:
        """Messages checked against `ag_ui`'s schema: each request dict with its fields."""
        history = cls()
        history._models = [None] * len(raw)
        history._raw = list(raw)  # ours: an entry is dropped once built
        history._fields = fields
        history._kinds = list(map(_ROLE_KIND.get, map(_ROLE, fields)))
        return history

    def copy(self) -> History:
        other = History()
        other._models = self._models.copy()
        other._raw = self._raw.copy()
        other._fields = self._fields.copy()
        other._kinds = self._kinds.copy()
        return other

    # What the engine scans without building models.

    def kinds(self) -> Sequence[type | None]:
        """`ToolMessage`, `AssistantMessage` or `None` (any other kind) for each message."""
        return self._kinds

    def fields(self) -> Sequence[dict[str, Any]]:
        """Each message's field values by attribute name (nested values may be plain dicts
        or models, so read them with `field_values`)."""
        return self._fields

    # The list.

    def __len__(self) -> int:
        return len(self._models)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._built(i) for i in range(len(self._models))[index]]
        return self._built(index)

    def __iter__(self) -> Iterator[Message]:
        for index in range(len(self._models)):
            yield self._built(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History | list | tuple):
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"History({list(self)!r})"

    @overload
    def __setitem__(self, index: int, value: Message) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Message]) -> None: ...
    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            new = History(value)
            self._models[index] = new._models
            self._raw[index] = new._raw
            self._fields[index] = new._fields
            self._kinds[index] = new._kinds
            if len(self._models) != len(self._kinds):  # an extended slice of the wrong size
                raise AssertionError("History lists out of step")
            return
        self._models[index] = value
        self._raw[index] = None
        self._fields[index] = vars(value)
        self._kinds[index] = _kind(value.__class__)

    def __delitem__(self, index: int | slice) -> None:
        del self._models[index]
        del self._raw[index]
        del self._fields[index]
        del self._kinds[index]

    def insert(self, index: int, value: Message) -> None:
        self._models.insert(index, value)
        self._raw.insert(index, None)
        self._fields.insert(index, vars(value))
        self._kinds.insert(index, _kind(type(value)))

    def append(self, value: Message) -> None:  # one call, not `insert(len(self), …)`
        self.insert(len(self._models), value)

    def _built(self, index: int) -> Message:
        model = self._models[index]
        if model is None:
            model = _MESSAGE.validate_python(self._raw[index])
            self._models[index] = model
            self._raw[index] = None
            self._fields[index] = vars(model)
        return model


def field_values(value: Any) -> dict[str, Any]:
    """A nested value's fields by attribute name, whether it is still plain or a model."""
    return value if value.__class__ is dict else vars(value)


_ROLE = operator.methodcaller("get", "role")


@cache
def _kind(cls: type) -> type | None:
    # `isinstance` on a pydantic model goes through its metaclass in Python: once per class.
    for kind in (ToolMessage, AssistantMessage):
        if issubclass(cls, kind):
            return kind
    return None
