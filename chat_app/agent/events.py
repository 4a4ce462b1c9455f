"""Constructors for the AG-UI events the engine emits (models from `ag_ui.core`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from chat_app.interrupts import (
    POLICY_DECISION_EVENT,
    InterruptResumeValidationError,
    tool_result_text,
)
from chat_app.interrupts.strict_json import strict_loads


def event_to_wire(event: BaseEvent) -> dict[str, Any]:
    """An event as its wire dict (camelCase, nulls dropped, payload nulls kept)."""
    fields = _STREAMED.get(type(event))
    if (
        fields is None
        or event.raw_event is not None
        or event.metadata is not None
        or event.__pydantic_extra__
    ):
        return event.model_dump(by_alias=True, exclude_none=True, mode="json")
    values = event.__dict__
    wire = {alias: values[name] for name, alias in fields if values[name] is not None}
    wire["type"] = event.type.value
    return wire


# The events a model streams by the hundred. Without `rawEvent`, `metadata` or extra fields
# they hold only strings, integers and the type, so their wire dict is their non-null fields
# under their aliases, in field order: 0.5 µs against `model_dump`'s 4 (ag_ui serializes
# every event through a Python hook). A test pins both to the same dict, key order included.
_STREAMED: dict[type[BaseEvent], tuple[tuple[str, str], ...]] = {
    cls: tuple((name, field.alias or name) for name, field in cls.model_fields.items())
    for cls in (
        TextMessageStartEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        ToolCallStartEvent,
        ToolCallArgsEvent,
        ToolCallEndEvent,
    )
}


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
