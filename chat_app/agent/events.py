"""Constructors for the AG-UI events the engine emits (models from `ag_ui.core`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    EventType,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic import BaseModel, PlainSerializer, WrapSerializer
from pydantic.fields import FieldInfo

from chat_app.interrupts import (
    POLICY_DECISION_EVENT,
    InterruptResumeValidationError,
    tool_result_text,
)
from chat_app.interrupts.strict_json import strict_loads


def event_to_wire(event: BaseEvent) -> dict[str, Any]:
    """An event as its wire dict (camelCase, nulls dropped, payload nulls kept).

    What `model_dump(by_alias=True, exclude_none=True, mode="json")` makes of it, read
    straight from the models' fields where the event holds only ag_ui's models, JSON's own
    types and enums. ag_ui serializes every model through a Python hook: a `RUN_STARTED`
    took 3.2 µs that way against 0.7 here, a snapshot of 2,000 messages 7.3 ms against 1.7,
    and a pause-and-approve cycle's events 177 µs against 77; the server's CPU per cycle
    fell by about 10 % at 1, 16 and 64 clients (`benchmarks/FINDINGS.md`). Anything else (an
    extra field, a tuple, a float JSON has no number for, a key that is not a string, a model
    that is not one of ag_ui's own, a value inside itself) goes to `model_dump`, which
    decides; `tests/agent/test_events.py` holds the two to the same dict, key order and types
    included.
    """
    try:
        return _plain_model(event)
    except (_NotPlain, RecursionError):
        return event.model_dump(by_alias=True, exclude_none=True, mode="json")


class _NotPlain(Exception):
    """A value only `model_dump` writes as it should."""


def _plain_model(model: Any) -> dict[str, Any]:
    fields = _FIELDS.get(type(model))
    if fields is None:
        fields = _fields_of(type(model))
    if model.__pydantic_extra__:
        raise _NotPlain
    values = model.__dict__
    wire: dict[str, Any] = {}
    for name, alias in fields:
        value = values[name]
        if value is not None:
            kind = type(value)
            wire[alias] = value if kind is str or kind is int else _plain(value)
    return wire


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        wire = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            kind = type(item)
            wire[key] = item if kind is str or kind is int else _plain(item)
        return wire
    if kind is list:
        return [_plain(item) for item in value]
    if kind is float:
        if math.isfinite(value):
            return value
        raise _NotPlain
    if kind in _ENUMS:
        return value.value
    return _plain_model(value)


def _fields_of(cls: type) -> tuple[tuple[str, str], ...]:
    """A model's fields and their wire names, when it is one of ag_ui's own and their common
    serializer is all it has (a subclass may hold fields its declared type would not write)."""
    if not (issubclass(cls, BaseModel) and cls.__module__ == BaseEvent.__module__):
        raise _NotPlain
    hooks = cls.__pydantic_decorators__
    if (
        hooks.field_serializers
        or hooks.computed_fields
        or hooks.model_serializers.keys() != _AG_UI_HOOKS
        or any(_serialized_apart(field) for field in cls.model_fields.values())
    ):
        raise _NotPlain
    fields = tuple(
        (name, field.serialization_alias or field.alias or name)
        for name, field in cls.model_fields.items()
    )
    _FIELDS[cls] = fields
    return fields


def _serialized_apart(field: FieldInfo) -> bool:
    """A field left out, or written by a serializer of its own."""
    return bool(
        field.exclude
        or getattr(field, "exclude_if", None) is not None
        or any(isinstance(m, PlainSerializer | WrapSerializer) for m in field.metadata)
    )


#: The serializer hook every ag_ui model shares (`BaseEvent` adds none of its own).
_AG_UI_HOOKS = BaseEvent.__pydantic_decorators__.model_serializers.keys()
_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}
_ENUMS = frozenset({EventType})


def run_started(
    thread_id: str, run_id: str, parent_run_id: str | None, now: int
) -> RunStartedEvent:
    return RunStartedEvent(
        thread_id=thread_id, run_id=run_id, parent_run_id=parent_run_id, timestamp=now
    )


def run_finished(
    thread_id: str,
    run_id: str,
    now: int,
    *,
    finish_reason: str,
    model: str | None,
    success_outcome: bool = False,
) -> RunFinishedEvent:
    tanstack: dict[str, Any] = {"finishReason": finish_reason}
    if model:
        tanstack["model"] = model
    return RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        timestamp=now,
        outcome=RunFinishedSuccessOutcome() if success_outcome else None,
        metadata={"tanstack": tanstack},
    )


def interrupt_terminal(
    thread_id: str,
    run_id: str,
    now: int,
    *,
    messages: Sequence[Message],
    state: Any,
    interrupts: Sequence[dict[str, Any]],
    model: str | None,
) -> list[BaseEvent]:
    """`MESSAGES_SNAPSHOT`, optional `STATE_SNAPSHOT`, then the one interrupt `RUN_FINISHED`."""
    events: list[BaseEvent] = [MessagesSnapshotEvent(messages=list(messages), timestamp=now)]
    if state:
        events.append(StateSnapshotEvent(snapshot=state, timestamp=now))
    tanstack: dict[str, Any] = {"finishReason": "tool_calls"}
    if model:
        tanstack["model"] = model
    events.append(
        RunFinishedEvent(
            thread_id=thread_id,
            run_id=run_id,
            timestamp=now,
            outcome=RunFinishedInterruptOutcome(
                interrupts=[Interrupt.model_validate(item) for item in interrupts]
            ),
            metadata={"tanstack": tanstack},
        )
    )
    return events


def tool_result(
    message_id: str, call_id: str, content: Any, now: int, *, error: bool = False
) -> ToolCallResultEvent:
    return ToolCallResultEvent(
        message_id=message_id,
        tool_call_id=call_id,
        content=tool_result_text(content),
        role="tool",
        timestamp=now,
        metadata={"tanstack": {"state": "output-error"}} if error else None,
    )


def tool_call_restated(
    call_id: str, name: str, parent_message_id: str, arguments: str, now: int
) -> tuple[ToolCallStartEvent, ToolCallEndEvent]:
    """`TOOL_CALL_START` and `TOOL_CALL_END` for a call an earlier run made, sent right before
    this run's `TOOL_CALL_RESULT` for it, so the result answers a call started in its own run
    (`docs/protocol.md` §3.7).

    No `TOOL_CALL_ARGS`: a client that already holds the call keeps it and ignores a second
    start, but would append the arguments again (`@ag-ui/client` 1.0.0 does). TanStack's client
    instead restarts the part with empty arguments and fills them from `TOOL_CALL_END`'s
    `metadata.tanstack.input` (the wire's place for its `TOOL_CALL_END.input`), so the end
    carries the history's arguments, parsed (unless they are empty or not JSON).
    """
    start = ToolCallStartEvent(
        tool_call_id=call_id, tool_call_name=name, parent_message_id=parent_message_id,
        timestamp=now,
    )  # fmt: skip
    metadata = None
    if arguments.strip():
        try:  # read back when the continuation was checked, or not JSON at all
            metadata = {"tanstack": {"input": strict_loads(arguments.strip())}}
        except ValueError:
            pass
    return start, ToolCallEndEvent(tool_call_id=call_id, timestamp=now, metadata=metadata)


def policy_decision(
    call_id: str, tool_name: str, rule: str, approved: bool, reason: str | None, now: int
) -> CustomEvent:
    value: dict[str, Any] = {"toolCallId": call_id, "toolName": tool_name, "rule": rule,
                             "decision": "approved" if approved else "rejected"}  # fmt: skip
    if reason:
        value["reason"] = reason
    return CustomEvent(name=POLICY_DECISION_EVENT, value=value, timestamp=now)


def resume_error(
    error: InterruptResumeValidationError, thread_id: str, run_id: str, now: int
) -> RunErrorEvent:
    """The single `RUN_ERROR` of a rejected continuation (`docs/protocol.md` §3.5)."""
    return RunErrorEvent(
        message=str(error),
        code=error.code,
        timestamp=now,
        metadata={
            "tanstack": {
                "runId": run_id,
                "threadId": thread_id,
                "interruptErrors": [item.to_wire() for item in error.errors],
            }
        },
    )
