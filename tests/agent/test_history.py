"""`tool_calls`: every call of the history with whether it has a result, in order."""

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

from chat_app.agent.history import tool_calls


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
