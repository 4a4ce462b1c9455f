"""A run's message history: `ag_ui` messages, each built the first time it is read.

Owns `History`. A continuation carries the whole conversation, and building an `ag_ui` model
for every message of a long one cost more than everything else the server does with the
request (1.6 µs a message, measured), while a run reads only the few it needs. So a request's
messages arrive here checked, as light views with the models' attributes (see
`chat_app.server.run_input`), and each becomes its model when read. The engine's scans
(`chat_app.agent.history`) read the views without building anything.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
from functools import cache
from typing import Any, overload

import msgspec
from ag_ui.core import AssistantMessage, Message, ToolMessage, UserMessage
from pydantic import TypeAdapter

from chat_app.interrupts.message_views import LENIENT, SHALLOW

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class History(MutableSequence[Message]):
    """A list of `ag_ui` messages to whoever reads it; light views until then.

    Indexing, slicing, iterating and `==` build the models they touch; `append`, `insert`,
    assignment and `del` work as on a list. A message, once built, is the one every later read
    returns, so a hook that changes it in place is seen by the engine.
    """

    __slots__ = ("_kinds", "_models", "_raw", "_views")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._models: list[Message | None] = list(messages)
        # For a message not built yet, the request's own dict, or None when its view holds all
        # of it: the model is built from that, so it is exactly the one `RunAgentInput`
        # validation would have made.
        self._raw: list[Any] = [None] * len(self._models)
        # What the scans read: a view with the model's attributes until the message is built,
        # then the model itself.
        self._views: list[Any] = self._models.copy()
        self._kinds: list[type | None] = list(map(_kind, map(type, self._models)))

    @classmethod
    def of(cls, messages: Iterable[Message]) -> History:
        """`messages` as a history of its own (a copy when it is one already)."""
        return messages.copy() if isinstance(messages, History) else cls(messages)

    @classmethod
    def checked(cls, views: list[Any], raw: list[Any] | None = None) -> History:
        """Messages checked against `ag_ui`'s schema, as views; with `raw`, the request's
        dict for each, to build it from (when a view does not hold all its message said).
        """
        history = cls()
        history._models = [None] * len(views)
        # Kept only when needed: the dicts are the request's largest part and would live, in
        # the collector's sight, as long as the run.
        history._raw = [None] * len(views) if raw is None else list(raw)
        history._views = views
        history._kinds = list(map(_VIEW_KINDS.__getitem__, map(type, views)))
        return history

    def window(self) -> Sequence[Message]:
        """The first `len(self)` messages, read only, through this history: what a reader
        builds stays built for every later one (a model adapter reads them all each turn).
        For a model turn: the engine changes nothing while the model streams."""
        return _Window(self, len(self._models))

    def copy(self) -> History:
        other = History()
        other._models = self._models.copy()
        other._raw = self._raw.copy()
        other._views = self._views.copy()
        other._kinds = self._kinds.copy()
        return other

    __copy__ = copy

    # What the engine scans without building models.

    def kinds(self) -> Sequence[type | None]:
        """`ToolMessage`, `AssistantMessage` or `None` (any other kind) for each message."""
        return self._kinds

    def views(self) -> Sequence[Any]:
        """Each message as something with its model's attributes (values and nested values
        alike): a view until the message is built, then the model."""
        return self._views

    def last_user(self) -> int:
        """The index of the last user message (-1 when there is none), read from the end
        without building a message: it is near the end."""
        for index in range(len(self._views) - 1, -1, -1):
            kind = type(self._views[index])
            if _VIEW_MODELS.get(kind, kind) is UserMessage:
                return index
        return -1

    # The list.

    def __len__(self) -> int:
        return len(self._models)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._read(range(len(self._models))[index])
        return self._built(index)

    def __iter__(self) -> Iterator[Message]:
        self._build(range(len(self._models)))
        index = 0
        while index < len(self._models):  # as a list's iterator: sees changes made meanwhile
            yield self._built(index)
            index += 1

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History | list):  # as a list: never equal to a tuple
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    def __add__(self, other: Iterable[Message]) -> list[Message]:
        return [*self, *other]

    def __radd__(self, other: Iterable[Message]) -> list[Message]:
        return [*other, *self]

    def sort(self, *, key: Callable[[Message], Any] | None = None, reverse: bool = False) -> None:
        ordered = list(self)
        ordered.sort(key=key, reverse=reverse)  # type: ignore[arg-type]
        self[:] = ordered

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
            # A wrong-sized extended slice raises here, before any of the lists changes.
            self._models[index] = new._models
            self._raw[index] = new._raw
            self._views[index] = new._views
            self._kinds[index] = new._kinds
            return
        self._models[index] = value
        self._raw[index] = None
        self._views[index] = value
        self._kinds[index] = _kind(value.__class__)

    def __delitem__(self, index: int | slice) -> None:
        del self._models[index]
        del self._raw[index]
        del self._views[index]
        del self._kinds[index]

    def insert(self, index: int, value: Message) -> None:
        self._models.insert(index, value)
        self._raw.insert(index, None)
        self._views.insert(index, value)
        self._kinds.insert(index, _kind(type(value)))

    def append(self, value: Message) -> None:  # one call, not `insert(len(self), …)`
        self.insert(len(self._models), value)

    def _read(self, indices: range) -> list[Message]:
        """The messages at `indices`, those not built yet built in one call."""
        self._build(indices)
        return [self._built(i) for i in indices]

    def _build(self, indices: Iterable[int]) -> None:
        """Build the messages at `indices` not built yet, in one call (a snapshot reads all)."""
        models = self._models
        missing = [index for index in indices if models[index] is None]
        if len(missing) < 2:
            return  # `_built` does one
        built = _MESSAGES.validate_python([self._source(i) for i in missing])
        for index, model in zip(missing, built, strict=True):
            models[index] = self._views[index] = model
            self._raw[index] = None

    def _source(self, index: int) -> Any:
        raw = self._raw[index]
        return msgspec.to_builtins(self._views[index]) if raw is None else raw

    def _built(self, index: int) -> Message:
        model = self._models[index]
        if model is None:
            model = _MESSAGE.validate_python(self._source(index))
            self._models[index] = model
            self._raw[index] = None
            self._views[index] = model
        return model


class _Window(Sequence[Message]):
    __slots__ = ("_history", "_length")

    def __init__(self, history: History, length: int) -> None:
        self._history = history
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:  # callers see Sequence[Message]'s overloads
        if isinstance(index, slice):
            return self._history._read(range(self._length)[index])
        return self._history[range(self._length)[index]]  # IndexError past the end

    def __iter__(self) -> Iterator[Message]:
        return iter(self._history._read(range(self._length)))


@cache
def _kind(cls: type) -> type | None:
    # `isinstance` on a pydantic model goes through its metaclass in Python: once per class.
    for kind in (ToolMessage, AssistantMessage):
        if issubclass(cls, kind):
            return kind
    return None


#: Each view's message model (a built message is its own).
_VIEW_MODELS: dict[type, type] = {
    view: model
    for views in (LENIENT, SHALLOW)
    if views is not None
    for view, model in views.kinds.items()
}
_VIEW_KINDS = {
    view: _kind(model)
    for views in (LENIENT, SHALLOW)
    if views is not None
    for view, model in views.kinds.items()
}
