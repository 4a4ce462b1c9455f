"""Root operations: boolean bulk, resolver transactions with rollback, cancel all
(`docs/protocol.md` §4.7)."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest

from chat_app.client import InterruptHandle, InterruptManager, UsageError
from tests.client.builders import (
    REASON,
    approval,
    client_call,
    generic,
    hydrated,
    plain_tool,
    printer_tool,
    unbound,
)


def batch_of_three() -> InterruptManager:
    tool = plain_tool()
    return hydrated(approval(tool, "a"), approval(tool, "b"), approval(tool, "c"), tools=[tool])


def test_boolean_bulk_stages_an_approved_envelope_for_every_approval_and_submits_once() -> None:
    manager = batch_of_three()
    submission = manager.resolve_all(True)
    assert submission is not None
    assert [e["payload"] for e in submission.resolutions] == [{"approved": True}] * 3


def test_boolean_bulk_is_refused_when_a_decision_needs_a_payload() -> None:
    tool = plain_tool(approval_schema={"reject": REASON})
    manager = hydrated(approval(tool, "a"), tools=[tool])
    assert manager.resolve_all(False) is None
    (error,) = manager.errors
    assert (error.code, error.message) == (
        "unsupported-bulk-operation",
        "Boolean bulk resolution requires payloadless tool approvals.",
    )
    assert manager.interrupts[0].status == "pending"


def test_boolean_bulk_is_refused_when_a_generic_item_is_in_the_batch() -> None:
    manager = hydrated(approval(plain_tool()), generic("g"), tools=[plain_tool()])
    assert manager.resolve_all(True) is None
    assert manager.errors[0].code == "unsupported-bulk-operation"


def test_a_resolver_transaction_visits_each_answerable_item_once_and_submits_once() -> None:
    manager = hydrated(approval(plain_tool(), "a"), generic("g"), unbound(), tools=[plain_tool()])
    seen: list[str] = []

    def resolver(item: InterruptHandle) -> None:
        seen.append(item.id)
        if item.kind == "tool-approval":
            item.resolve_interrupt(True)
        else:
            item.resolve_interrupt(response={"ok": 1})

    submission = manager.transaction(resolver)
    assert seen == ["approval_a", "g"]
    assert submission is not None and submission.interrupt_ids == ("approval_a", "g")


def test_a_resolver_that_throws_rolls_everything_back_with_item_validation_failed() -> None:
    manager = batch_of_three()

    def resolver(item: InterruptHandle) -> None:
        if item.id == "approval_c":
            raise ValueError("no idea")
        item.resolve_interrupt(True)

    assert manager.transaction(resolver) is None
    assert [i.status for i in manager.interrupts] == ["pending"] * 3
    assert [(e.code, e.message) for e in manager.errors] == [("item-validation-failed", "no idea")]


def test_a_resolver_that_returns_a_value_rolls_back_with_inactive_transaction() -> None:
    manager = batch_of_three()

    def resolver(item: InterruptHandle) -> str:
        item.resolve_interrupt(True)
        return "done"

    assert manager.transaction(resolver) is None
    assert manager.errors[0].code == "inactive-transaction"
    assert (
        manager.errors[0].message
        == "Interrupt transaction resolvers must return literal undefined."
    )


def test_an_async_resolver_rolls_back_with_async_resolver() -> None:
    manager = batch_of_three()

    async def resolver(item: InterruptHandle) -> None:
        item.resolve_interrupt(True)

    def call(item: InterruptHandle) -> Awaitable[None]:
        return resolver(item)

    assert manager.transaction(call) is None
    assert manager.errors[0].code == "async-resolver"


def test_a_resolver_that_skips_an_item_rolls_back_with_incomplete_batch() -> None:
    manager = batch_of_three()

    def resolver(item: InterruptHandle) -> None:
        if item.id != "approval_b":
            item.resolve_interrupt(True)

    assert manager.transaction(resolver) is None
    assert [i.status for i in manager.interrupts] == ["pending"] * 3
    assert manager.errors[0].message == "Interrupt transaction did not resolve every item."


def test_an_invalid_answer_inside_a_transaction_rolls_back_as_incomplete() -> None:
    tool = plain_tool(approval_schema={"reject": REASON})
    manager = hydrated(approval(tool, "a"), approval(tool, "b"), tools=[tool])
    manager.resolve("approval_a", approved=True)
    assert manager.transaction(lambda item: item.resolve_interrupt(False)) is None
    assert [i.status for i in manager.interrupts] == ["staged", "pending"]
    assert manager.errors[0].code == "incomplete-batch"


def test_a_handle_used_after_its_transaction_is_inactive() -> None:
    manager = batch_of_three()
    captured: list[InterruptHandle] = []

    def resolver(item: InterruptHandle) -> None:
        captured.append(item)
        item.resolve_interrupt(False)

    manager.transaction(resolver)
    with pytest.raises(UsageError, match="Interrupt transaction is inactive."):
        captured[0].cancel()


def test_a_root_call_inside_a_transaction_is_a_usage_error() -> None:
    manager = batch_of_three()
    failures: list[str] = []

    def resolver(item: InterruptHandle) -> None:
        try:
            manager.cancel_all()
        except UsageError as error:
            failures.append(str(error))
        item.resolve_interrupt(True)

    assert manager.transaction(resolver) is not None
    assert failures == ["Interrupt transaction is already active."] * 3


def test_item_methods_outside_the_transaction_are_refused_during_it() -> None:
    manager = batch_of_three()

    def resolver(item: InterruptHandle) -> None:
        manager.resolve(item.id, approved=True)

    assert manager.transaction(resolver) is None
    assert manager.errors[0].message == "Interrupt transaction is inactive."


def test_cancel_all_cancels_every_resumable_item_including_hidden_client_tools() -> None:
    manager = hydrated(
        approval(plain_tool()),
        client_call(printer_tool()),
        unbound(),
        tools=[plain_tool(), printer_tool()],
    )
    submission = manager.cancel_all()
    assert submission is not None
    assert submission.resolutions == (
        {"interruptId": "approval_c1", "status": "cancelled"},
        {"interruptId": "client_tool_k1", "status": "cancelled"},
    )
