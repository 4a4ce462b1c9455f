"""What the demo's scripted model says about a request that expired: that nobody decided in
time, never that someone denied or rejected it."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage

from chat_app.agent import ModelRequest
from chat_app.demo.script import demo_script
from chat_app.interrupts import CANCELLED_RESULT, expired_result
from chat_app.trust import expiry_words


def _after(tool: str, result: object) -> str:
    call = ToolCall(id="c1", type="function",
                    function=FunctionCall(name=tool, arguments="{}"))  # fmt: skip
    request = ModelRequest(
        messages=[
            UserMessage(id="u1", role="user", content="whatever"),
            AssistantMessage(id="a1", role="assistant", tool_calls=[call]),
            ToolMessage(id="t1", role="tool", tool_call_id="c1", content=json.dumps(result),
                        error="failed"),
        ],  # fmt: skip
        tools=(),
    )
    return demo_script(request).text


def _after_question(note: dict[str, str]) -> str:
    request = ModelRequest(
        messages=[UserMessage(id="u1", role="user", content="whatever")],
        tools=(),
        notes=(json.dumps(note),),
    )
    return demo_script(request).text


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("transfer", "Nobody decided on the transfer in time"),
        ("delete_project", "Nobody decided on the delete project in time"),
    ],
)
def test_an_expired_call_is_said_to_have_expired(tool: str, said: str) -> None:
    text = _after(tool, expired_result(error=expiry_words("within 1 day")))
    assert text == f"{said}: the request expired unanswered, so it did not run."
    assert not any(word in text.lower() for word in ("denied", "rejected", "declined"))


def test_a_cancelled_call_is_still_said_to_be_cancelled() -> None:
    assert _after("transfer", CANCELLED_RESULT) == "Cancelled: transfer did not run."


def test_an_expired_shipping_question_leaves_the_order_where_it_is() -> None:
    note = {"interrupt": "shipping-speed", "key": "order-42", "status": "expired"}
    assert _after_question(note) == "Nobody answered in time, so order 42 stays where it is."
    cancelled = {**note, "status": "cancelled"}
    assert _after_question(cancelled) == "Okay, order 42 stays where it is."


def test_an_expired_release_plan_changes_nothing() -> None:
    note = {"interrupt": "release-plan", "key": "release-2026.12", "status": "expired"}
    assert _after_question(note) == "The release plan review expired unanswered; nothing changes."
