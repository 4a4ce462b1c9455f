"""`event_to_wire`: the streamed events' direct path gives exactly what `model_dump` gives
(same keys, same order, same values), and everything else still goes through `model_dump`."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from chat_app.agent import event_to_wire
from chat_app.interrupts import encode_sse_event


def dumped(event: BaseEvent) -> list[tuple[str, Any]]:
    return list(event.model_dump(by_alias=True, exclude_none=True, mode="json").items())


STREAMED = [
    TextMessageStartEvent(message_id="m1", timestamp=1),
    TextMessageStartEvent(message_id="m1", role="assistant", name="helper", timestamp=0),
    TextMessageStartEvent(message_id="m1", subagent_run_id="sub-1"),
    TextMessageContentEvent(message_id="m1", delta=' héllo \u2028 "q"', timestamp=17),
    TextMessageContentEvent(message_id="m1", delta="x"),
    TextMessageEndEvent(message_id="m1", timestamp=2),
    ToolCallStartEvent(
        tool_call_id="c1", tool_call_name="transfer", parent_message_id="m1", timestamp=3
    ),  # fmt: skip
    ToolCallStartEvent(tool_call_id="c1", tool_call_name="transfer"),
    ToolCallArgsEvent(tool_call_id="c1", delta='{"amount":25}', timestamp=4),
    ToolCallEndEvent(tool_call_id="c1", timestamp=5),
]


@pytest.mark.parametrize("event", STREAMED, ids=lambda e: type(e).__name__)
def test_a_streamed_event_is_what_model_dump_makes_of_it(event: BaseEvent) -> None:
    wire = event_to_wire(event)
    assert list(wire.items()) == dumped(event)
    assert type(wire["type"]) is str  # not the enum: the SSE encoder writes plain JSON
    assert encode_sse_event(wire).startswith(f'data: {{"type":"{wire["type"]}"')


@pytest.mark.parametrize(
    "event",
    [
        # Values JSON mode converts (a tuple becomes a list): only `model_dump` does that.
        TextMessageContentEvent(message_id="m1", delta="x", raw_event={"a": None, "b": (1, 2)}),
        TextMessageContentEvent(message_id="m1", delta="x", metadata={"tanstack": ("k", None)}),
        TextMessageContentEvent.model_validate(
            {"messageId": "m1", "delta": "x", "type": "TEXT_MESSAGE_CONTENT", "extra": {"n": 1}}
        ),
        ToolCallResultEvent(message_id="m1", tool_call_id="c1", content='{"ok":true}'),
        RunStartedEvent(thread_id="t", run_id="r", parent_run_id="p", timestamp=9),
    ],
    ids=["raw_event", "metadata", "extra field", "tool result", "run started"],
)
def test_other_events_and_fields_take_model_dump(event: BaseEvent) -> None:
    assert repr(list(event_to_wire(event).items())) == repr(dumped(event))  # lists, not tuples
