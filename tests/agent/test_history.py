"""`tool_calls`: every call of the history with whether it has a result, in order; and where
the result a run replaces sits (`tool_result_positions`, `answers_at`)."""

from __future__ import annotations

import json

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_app.agent.history import answers_at, tool_calls, tool_result_positions
from chat_app.server.run_input import read_run_input


class _MyToolMessage(ToolMessage):
    """A subclass still counts as a tool result."""


def _call(call_id: str, metadata: dict[str, object] | None = None) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name="f", arguments="{}"), metadata=metadata)


def _history() -> list[Message]:
    return [
        ToolMessage(id="r0", tool_call_id="c2", content="early"),  # before its call
        UserMessage(id="u1", content="go"),
        AssistantMessage(id="a1", tool_calls=[_call("c1"), _call("c2")]),
        ToolMessage(id="r1", tool_call_id="c1", content=json.dumps({"pendingExecution": True})),
        AssistantMessage(id="a2", content="no calls"),
        AssistantMessage(
            id="a3",
            tool_calls=[_call("c3"), _call("c4", metadata={"providerExecuted": True})],
        ),
        _MyToolMessage(id="r3", tool_call_id="c3", content='{"\\u0070endingExecution": false}'),
        AssistantMessage(id="a4", tool_calls=[_call("c5")]),
    ]


def test_every_call_in_order_with_its_result() -> None:
    found = [(ref.message_id, ref.id, ref.has_result) for ref in tool_calls(_history())]
    assert found == [
        ("a1", "c1", False),  # a pending-execution marker is not a result
        ("a1", "c2", True),
        ("a3", "c3", True),
        ("a4", "c5", False),
    ]


def test_reopened_keeps_only_pending_calls_and_those_answered_again() -> None:
    found = [ref.id for ref in tool_calls(_history(), reopened={"c3", "c5", "nope"})]
    assert found == ["c1", "c3", "c5"]
    assert [ref.id for ref in tool_calls(_history(), reopened=set())] == ["c1", "c5"]


def test_a_call_a_later_asking_turn_went_past_is_no_part_of_the_batch() -> None:
    """The history sent again as it was (a regenerate): the model read the paused call as
    without a result and called another, and the pause asked about that one only. Its
    continuation answers that one; the first was left behind, as a later message leaves
    one. A call marked as running on the client is still under way."""
    history: list[Message] = [
        UserMessage(id="u1", content="delete project apollo"),
        AssistantMessage(id="a1", tool_calls=[_call("first")]),
        AssistantMessage(id="a2", tool_calls=[_call("second")]),
    ]
    assert [ref.id for ref in tool_calls(history, reopened=set())] == ["second"]
    assert [ref.id for ref in tool_calls(history)] == ["first", "second"]
    running = ToolMessage(id="r1", tool_call_id="first", content='{"pendingExecution": true}')
    marked = [*history[:2], running, history[2]]
    assert [ref.id for ref in tool_calls(marked, reopened=set())] == ["first", "second"]


def _reference(messages: list[Message], reopened: set[str] | None) -> list[tuple[str, str, bool]]:
    """The plain loop the C-level passes must agree with."""
    answered = {
        m.tool_call_id
        for m in messages
        if isinstance(m, ToolMessage)
        and not (
            isinstance(parsed := _json_or_none(str(m.content)), dict)
            and parsed.get("pendingExecution") is True
        )
    }
    # A call without a result that a later user message left behind is no continuation's,
    # nor one that nothing answered before the last asking turn since that message.
    users = [i for i, m in enumerate(messages) if getattr(m, "role", None) == "user"]
    left_behind = users[-1] if users and reopened is not None else -1
    asking = [i for i, m in enumerate(messages) if i > left_behind
              and isinstance(m, AssistantMessage) and m.tool_calls]  # fmt: skip
    batch = asking[-1] if asking and reopened is not None else -1
    marked = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    found = []
    for index, message in enumerate(messages):
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls or ():
            has_result = call.id in answered
            if has_result and reopened is not None and call.id not in reopened:
                continue
            if not has_result and index < left_behind:
                continue
            if index < batch and call.id not in marked:
                continue
            if call.metadata and call.metadata.get("providerExecuted") is True:
                continue
            found.append((message.id, call.id, has_result))
    return found


def _json_or_none(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


_IDS = st.sampled_from(["c1", "c2", "c3", "c4"])
_CONTENTS = st.sampled_from(
    [
        "done",
        json.dumps({"pendingExecution": True}),
        json.dumps({"pendingExecution": False}),
        '{"\\u0070endingExecution": true}',
        '"pendingExecution"',
        "\\u",
    ]
)
_MESSAGES = st.one_of(
    st.builds(lambda: UserMessage(id="u", content="hi")),
    st.builds(lambda i, c: ToolMessage(id="t", tool_call_id=i, content=c), _IDS, _CONTENTS),
    st.builds(lambda i, c: _MyToolMessage(id="t", tool_call_id=i, content=c), _IDS, _CONTENTS),
    st.builds(
        lambda calls, n: AssistantMessage(id=f"a{n}", tool_calls=calls or None),
        st.lists(
            st.builds(
                lambda i, p: _call(i, {"providerExecuted": p} if p is not None else None),
                _IDS,
                st.sampled_from([None, True, False]),
            ),
            max_size=3,
        ),
        st.integers(0, 9),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGES, max_size=12), st.none() | st.sets(_IDS))
def test_tool_calls_match_the_plain_loop(
    messages: list[Message], reopened: set[str] | None
) -> None:
    found = [
        (ref.message_id, ref.id, ref.has_result) for ref in tool_calls(messages, reopened=reopened)
    ]
    assert found == _reference(messages, reopened)
    # The same history as a request brings it: plain until read.
    wire = [message.model_dump(by_alias=True) for message in messages]
    lazy = read_run_input({"threadId": "t", "runId": "r", "messages": wire}).messages
    assert tool_calls(lazy, reopened=reopened) == tool_calls(messages, reopened=reopened)
    assert tool_result_positions(lazy) == tool_result_positions(messages)


def test_a_result_replaces_the_first_tool_message_of_its_call() -> None:
    history = [
        *_history(),
        ToolMessage(id="r1b", tool_call_id="c1", content="a second result for c1"),
    ]
    positions = tool_result_positions(history)
    assert positions["c1"] == 3 and positions["c2"] == 0 and positions["c3"] == 6
    assert all(answers_at(history, index, call) for call, index in positions.items())


def test_a_position_is_checked_before_it_is_written_to() -> None:
    history = _history()
    positions = tool_result_positions(history)
    history.insert(0, UserMessage(id="u0", content="a hook added this"))
    assert not answers_at(history, positions["c1"], "c1")
    assert not answers_at(history, len(history), "c1")  # past the end
