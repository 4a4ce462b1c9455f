"""The demo's sums stop at `MAX_AMOUNT`: asked for more, its model says so and calls nothing
(rather than a call its tool's schema would refuse after promising an approval)."""

from __future__ import annotations

import pytest
from ag_ui.core import UserMessage

from chat_app.agent import ModelRequest
from chat_app.demo.script import TOO_MUCH, demo_script
from chat_app.demo.tools import MAX_AMOUNT, REFUND, TRANSFER


def _turn(text: str) -> tuple[str, list[tuple[str, dict[str, object]]]]:
    request = ModelRequest(messages=[UserMessage(id="u1", role="user", content=text)], tools=())
    turn = demo_script(request)
    return turn.text, [(call.name, call.arguments) for call in turn.calls]


@pytest.mark.parametrize("text", ["transfer 2000000 to Ada", "refund 1000000.5 for order 7"])
def test_a_sum_past_the_most_is_said_and_nothing_is_called(text: str) -> None:
    assert _turn(text) == (TOO_MUCH, [])
    assert TOO_MUCH == "The demo moves at most 1,000,000 at a time: ask for less."


def test_the_most_itself_is_asked_for_and_the_schemas_hold_to_it() -> None:
    _, calls = _turn("transfer 1000000 to Ada")
    assert calls == [("transfer", {"recipient": "Ada", "amount": MAX_AMOUNT})]
    assert TRANSFER.arguments_problem({"recipient": "Ada", "amount": MAX_AMOUNT}) is None
    assert TRANSFER.arguments_problem({"recipient": "Ada", "amount": 1e99}) == (
        "Tool transfer arguments are invalid at amount: 1e+99 is greater than the maximum of "
        "1000000"
    )
    assert REFUND.arguments_problem({"order": "7", "amount": MAX_AMOUNT + 0.01}) is not None
