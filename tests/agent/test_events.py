"""`event_to_wire`: reading an event's fields directly gives exactly what `model_dump` gives
(same keys, same order, same values, same types), and what only `model_dump` writes right
still goes through it."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    SystemMessage,
    TextInputContent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_app.agent import event_to_wire
from chat_app.agent.events import interrupt_terminal, policy_decision, run_finished, tool_result
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


class _NotedMessage(UserMessage):
    note: str = ""


INTERRUPT = {
    "id": "i-1", "reason": "tool_approval", "message": "Approve transfer?", "toolCallId": "c1",
    "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}},
                       "required": ["approved"], "default": None},
    "expiresAt": "2026-12-04T10:00:00.000Z",
    "metadata": {"tanstack": {"toolName": "transfer", "input": {"amount": 25.5, "to": None}},
                 "deciders": ["finance"]},
}  # fmt: skip
MESSAGES: list[Message] = [
    SystemMessage(id="s1", content="Be brief."),
    UserMessage(id="u1", content="transfer 25 to Ada", name=None),
    UserMessage(id="u2", content=[TextInputContent(text="and one more")]),
    AssistantMessage(
        id="a1", content=None,
        tool_calls=[ToolCall(id="c1", function=FunctionCall(name="transfer", arguments="{}"))],
    ),  # fmt: skip
    ToolMessage(id="t1", tool_call_id="c1", content='{"ok":true}', error=None),
]
OTHERS = [
    RunStartedEvent(thread_id="t", run_id="r", parent_run_id="p", timestamp=9),
    run_finished("t", "r", 10, finish_reason="stop", model="demo", success_outcome=True),
    run_finished("t", "r", 10, finish_reason="stop", model=None),
    *interrupt_terminal(
        "t", "r", 11, messages=MESSAGES, state={"cart": [1, None, {"k": 2.5}]},
        interrupts=[INTERRUPT, {"id": "i-2", "reason": "question"}], model="demo",
    ),  # fmt: skip
    tool_result("m2", "c1", {"ok": True, "id": None}, 12),
    tool_result("m2", "c1", "boom", 12, error=True),
    policy_decision("c1", "transfer", "small-transfers", True, None, 13),
    CustomEvent(name="n", value=None),
    CustomEvent(name="n", value=[True, False, 0, -1.5, "", {"": None}]),
    RunErrorEvent(message="no", code="INVALID", metadata={"tanstack": {"interruptErrors": []}}),
    StateSnapshotEvent(snapshot={}),
    MessagesSnapshotEvent(messages=[]),
]


@pytest.mark.parametrize("event", STREAMED + OTHERS, ids=lambda e: type(e).__name__)
def test_an_event_read_directly_is_what_model_dump_makes_of_it(
    event: BaseEvent, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = repr(dumped(event))  # repr: a tuple would not equal a list, nor 1 equal 1.0
    monkeypatch.setattr(type(event), "model_dump", _not_called)
    assert repr(list(event_to_wire(event).items())) == expected


def _not_called(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("model_dump was called")


@pytest.mark.parametrize(
    "event",
    [
        # Values JSON mode converts (a tuple becomes a list): only `model_dump` does that.
        TextMessageContentEvent(message_id="m1", delta="x", raw_event={"a": None, "b": (1, 2)}),
        TextMessageContentEvent(message_id="m1", delta="x", metadata={"tanstack": ("k", None)}),
        TextMessageContentEvent.model_validate(
            {"messageId": "m1", "delta": "x", "type": "TEXT_MESSAGE_CONTENT", "extra": {"n": 1}}
        ),
        CustomEvent(name="n", value={"over": float("inf"), "nan": float("nan")}),
        CustomEvent(name="n", value={1: "a key JSON writes as a string"}),
        CustomEvent(name="n", value=[{"set": {1, 2}}]),
        interrupt_terminal(
            "t", "r", 1, messages=[], state=None, model=None,
            interrupts=[{**INTERRUPT, "somethingNew": None}],  # an extra field of a nested model
        )[-1],  # fmt: skip
        # A subclass in a typed field: model_dump writes the declared class's fields only.
        MessagesSnapshotEvent(messages=[_NotedMessage(id="u1", content="hi", note="private")]),
    ],
    ids=[
        "tuple", "metadata tuple", "extra field", "inf", "int key", "set", "nested extra",
        "subclass",
    ],
)
def test_what_only_model_dump_writes_right_takes_model_dump(event: BaseEvent) -> None:
    calls: list[BaseEvent] = []
    real = type(event).model_dump

    def spy(self: BaseEvent, *args: Any, **kwargs: Any) -> Any:
        calls.append(self)
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(event), "model_dump", spy)
        wire = event_to_wire(event)
    assert calls == [event]
    assert repr(list(wire.items())) == repr(dumped(event))


def test_a_value_inside_itself_fails_as_model_dump_fails() -> None:
    looped: list[Any] = []
    looped.append(looped)
    event = CustomEvent(name="n", value={"loop": looped})
    with pytest.raises(ValueError) as caught:
        event_to_wire(event)
    assert "ircular" in str(caught.value) or "recursion" in str(caught.value).lower()


KEYS = st.one_of(st.sampled_from(["a", "", "type", "é"]), st.integers(0, 2))
VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=3)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(KEYS, inner, max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_any_payload_is_written_as_model_dump_writes_it(value: Any) -> None:
    for event in (
        CustomEvent(name="n", value=value),
        StateSnapshotEvent(snapshot=value),
        RunStartedEvent(thread_id="t", run_id="r", metadata={"x": value}),
        ToolCallEndEvent(tool_call_id="c", raw_event=value),
    ):
        assert repr(list(event_to_wire(event).items())) == repr(dumped(event))
