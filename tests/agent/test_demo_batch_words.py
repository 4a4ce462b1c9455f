"""What the demo's scripted model says after a batch: calls of one tool that came out alike
are said once, naming each, not the same sentence again and again."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ag_ui.core import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage

from chat_app.agent import ModelRequest
from chat_app.demo.script import INVOICES, demo_script
from chat_app.interrupts import CANCELLED_RESULT, DEFAULT_DENIED_RESULT, expired_result
from chat_app.trust import expiry_words


def _after_invoices(
    *results: Mapping[str, object], invoices: Sequence[Mapping[str, object]] = INVOICES
) -> str:
    calls = [
        ToolCall(id=f"c{n}", type="function",
                 function=FunctionCall(name="pay_invoice", arguments=json.dumps(invoice)))
        for n, invoice in enumerate(invoices[: len(results)])
    ]  # fmt: skip
    answers = [
        ToolMessage(id=f"t{n}", role="tool", tool_call_id=f"c{n}", content=json.dumps(result),
                    error=None if "paid" in result else "refused")
        for n, result in enumerate(results)
    ]  # fmt: skip
    request = ModelRequest(
        messages=[
            UserMessage(id="u1", role="user", content="pay invoices"),
            AssistantMessage(id="a1", role="assistant", tool_calls=calls),
            *answers,
        ],
        tools=(),
    )
    return demo_script(request).text


def test_three_invoices_rejected_alike_are_one_sentence_naming_each() -> None:
    text = _after_invoices(*[DEFAULT_DENIED_RESULT] * 3)
    assert text == (
        "Understood — pay invoice was not run for INV-1001, INV-1002 and INV-1003; "
        "no reason was given."
    )


def test_different_reasons_and_outcomes_are_said_each() -> None:
    text = _after_invoices(
        {"error": "rejected", "reason": "Paid twice"},
        {"error": "rejected", "reason": "Paid twice"},
        {"error": "rejected", "reason": "Wrong supplier"},
    )
    assert text == (
        "Understood — pay invoice was not run for INV-1001 and INV-1002. Reason: Paid twice. "
        "Understood — pay invoice was not run. Reason: Wrong supplier."
    )
    expired = expired_result(error=expiry_words("within 1 day"))
    mixed = _after_invoices(CANCELLED_RESULT, expired, CANCELLED_RESULT)
    assert mixed.count("Cancelled: pay invoice did not run.") == 2
    assert "Nobody decided on the pay invoice in time" in mixed


def test_payments_that_ran_are_each_said_with_their_own_confirmation() -> None:
    paid = [
        {"paid": invoice["invoice"], "amount": invoice["amount"], "confirmation": f"conf-{n}"}
        for n, invoice in enumerate(INVOICES)
    ]
    text = _after_invoices(*paid)
    assert [f"confirmation conf-{n}" in text for n in range(3)] == [True] * 3


def test_two_calls_with_one_label_are_not_named_as_one_twice() -> None:
    twice = _after_invoices(DEFAULT_DENIED_RESULT, DEFAULT_DENIED_RESULT,
                            invoices=[INVOICES[0], INVOICES[0]])  # fmt: skip
    assert twice == " ".join(["Understood — pay invoice was not run; no reason was given."] * 2)
