"""Answering items one by one: validation, staging, cancel, clear, auto-submit
(`docs/protocol.md` §4.4–4.6)."""

from __future__ import annotations

import json

import pytest

from chat_app.client import UsageError
from tests.client.builders import (
    REASON,
    SHIPPING,
    approval,
    client_call,
    generic,
    hydrated,
    item_error_wire,
    pay_tool,
    plain_tool,
    printer_tool,
    typed_generic,
    unbound,
)
from tests.fixtures.loader import load_fixture

FIXTURE = load_fixture("client-manager-hydration")


def test_approving_with_edited_args_and_payload_submits_the_js_clients_exact_submission() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    submission = manager.resolve(
        "approval_c1", approved=True, edited_args={"cents": 9}, payload={"note": "ok"}
    )
    assert submission is not None
    assert submission.to_wire() == FIXTURE["submission"]


def test_a_degraded_approval_is_answered_with_a_raw_response() -> None:
    manager = hydrated(approval(pay_tool()))
    submission = manager.resolve("approval_c1", response={"approved": False})
    assert submission is not None and submission.to_wire() == FIXTURE["submissionNoTool"]


def test_a_raw_generic_answer_is_submitted_as_given() -> None:
    submission = hydrated(generic("g")).resolve("g", response={"anything": True})
    assert submission is not None and submission.to_wire() == FIXTURE["submissionGeneric"]


def test_approving_without_the_required_approve_payload_is_an_item_error_and_sends_nothing() -> (
    None
):
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    assert manager.resolve("approval_c1", approved=True) is None
    assert item_error_wire(manager, "approval_c1") == json.loads(
        FIXTURE["clientMissingPayload"][0][2]
    )
    assert manager.interrupts[0].status == "error"


def test_a_payload_on_a_decision_without_schema_is_refused() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    assert manager.resolve("approval_c1", approved=False, payload={"reason": "no"}) is None
    assert item_error_wire(manager, "approval_c1") == json.loads(
        FIXTURE["clientRejectPayloadNoSchema"][0][2]
    )


def test_edited_args_on_a_rejection_are_dropped_silently() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    submission = manager.resolve("approval_c1", approved=False, edited_args={"cents": 1})
    assert submission is not None
    assert submission.resolutions[0]["payload"] == {"approved": False}


def test_edited_args_that_break_the_input_schema_are_an_invalid_edited_args_error() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    submission = manager.resolve(
        "approval_c1", approved=True, edited_args={"cents": "nine"}, payload={"note": "ok"}
    )
    error = manager.interrupts[0].errors[0]
    assert submission is None
    assert (error.code, error.path) == ("invalid-edited-args", ("cents",))


def test_a_branch_payload_that_breaks_its_schema_is_an_invalid_payload_error_with_a_path() -> None:
    tool = pay_tool(approval_schema={"reject": REASON})
    manager = hydrated(approval(tool), tools=[tool])
    assert manager.resolve("approval_c1", approved=False, payload={"reason": ""}) is None
    error = manager.interrupts[0].errors[0]
    assert (error.code, error.path, error.source) == ("invalid-payload", ("reason",), "client")


def test_an_invalid_answer_keeps_the_draft_so_a_form_can_show_it_again() -> None:
    tool = pay_tool(approval_schema={"reject": REASON})
    manager = hydrated(approval(tool), tools=[tool])
    manager.resolve("approval_c1", approved=False, payload={"reason": ""})
    item = manager.interrupts[0]
    assert (item.draft, item.resolution) == ({"approved": False, "payload": {"reason": ""}}, None)


def test_a_typed_generic_answer_is_validated_against_the_definition() -> None:
    manager = hydrated(typed_generic(), definitions=[SHIPPING])
    assert manager.resolve("interrupt-1", response={"speed": "warp", "giftWrap": True}) is None
    assert manager.interrupts[0].errors[0].code == "invalid-payload"


def test_a_raw_generic_answer_is_validated_against_the_descriptor_schema() -> None:
    manager = hydrated(generic("g", schema={"type": "object", "required": ["ok"]}))
    assert manager.resolve("g", response={}) is None
    assert manager.interrupts[0].errors[0].message == "'ok' is a required property"


def test_a_typed_generic_resolution_carries_continuation_metadata() -> None:
    manager = hydrated(typed_generic(), definitions=[SHIPPING])
    submission = manager.resolve("interrupt-1", response={"speed": "express", "giftWrap": False})
    assert submission is not None
    continuation = submission.resolutions[0]["metadata"]["tanstack:interruptContinuation"]  # type: ignore[index]
    assert continuation == {
        "v": 1,
        "batchIndex": 0,
        "definitionId": "shipping-speed",
        "key": "order-42",
        "message": "How should order 42 ship?",
        "payload": {"order": "42"},
        "payloadSchemaHash": SHIPPING.payload_schema_hash,
        "reason": "shipping_speed",
        "responseSchemaHash": SHIPPING.response_schema_hash,
    }


def test_cancelling_a_typed_generic_sends_metadata_but_no_payload() -> None:
    manager = hydrated(typed_generic(), definitions=[SHIPPING])
    submission = manager.cancel_item("interrupt-1")
    assert submission is not None
    entry = submission.resolutions[0]
    assert (entry["status"], "payload" in entry, "metadata" in entry) == ("cancelled", False, True)


def test_resolving_an_item_that_cannot_be_resolved_is_an_invalid_response_schema_error() -> None:
    manager = hydrated(generic("g", schema={"type": "object"}, hashed=False))
    assert manager.resolve("g", response={}) is None
    assert manager.interrupts[0].errors[0].code == "invalid-response-schema"


def test_a_multi_item_batch_waits_for_the_last_item_and_a_singleton_submits_at_once() -> None:
    tool = plain_tool()
    manager = hydrated(approval(tool, "a"), approval(tool, "b"), tools=[tool])
    assert manager.resolve("approval_a", approved=True) is None
    assert [i.status for i in manager.interrupts] == ["staged", "pending"]
    submission = manager.resolve("approval_b", approved=False)
    assert submission is not None and submission.interrupt_ids == ("approval_a", "approval_b")
    assert manager.resuming and manager.interrupts == ()


def test_resolutions_are_submitted_in_canonical_order_not_answer_order() -> None:
    tool = plain_tool()
    manager = hydrated(approval(tool, "b"), approval(tool, "a"), tools=[tool])
    manager.resolve("approval_b", approved=True)
    submission = manager.resolve("approval_a", approved=True)
    assert submission is not None and submission.interrupt_ids == ("approval_a", "approval_b")


def test_an_unbound_item_does_not_block_the_batch() -> None:
    manager = hydrated(unbound(), generic("ours"))
    submission = manager.resolve("ours", response={"ok": True})
    assert submission is not None and submission.interrupt_ids == ("ours",)
    assert [i.kind for i in manager.interrupts] == ["unbound"]


def test_answering_an_unbound_item_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="another system"):
        hydrated(unbound()).resolve("theirs", response={})


def test_cancel_stages_a_payloadless_cancellation_and_submits_a_singleton() -> None:
    manager = hydrated(approval(plain_tool()), tools=[plain_tool()])
    submission = manager.cancel_item("approval_c1")
    assert submission is not None
    assert submission.resolutions == ({"interruptId": "approval_c1", "status": "cancelled"},)


def test_clear_resolution_returns_the_item_to_pending_without_error_or_draft() -> None:
    tool = plain_tool()
    manager = hydrated(approval(tool, "a"), approval(tool, "b"), tools=[tool])
    manager.resolve("approval_a", approved=True, payload={"x": 1})
    manager.clear_item("approval_a")
    item = manager.interrupts[0]
    assert (item.status, item.errors, item.draft, item.resolution) == ("pending", (), None, None)


def test_a_hidden_client_tool_blocks_submission_until_its_output_arrives() -> None:
    manager = hydrated(
        approval(plain_tool()), client_call(printer_tool()), tools=[plain_tool(), printer_tool()]
    )
    assert manager.resolve("approval_c1", approved=True) is None
    found, submission = manager.resolve_client_tool_output("k1", {"tag": "t"})
    assert found and submission is not None
    assert submission.interrupt_ids == ("approval_c1", "client_tool_k1")


def test_client_tools_do_not_block_a_batch_that_has_a_generic_item() -> None:
    manager = hydrated(
        typed_generic(), client_call(printer_tool()), tools=[printer_tool()], definitions=[SHIPPING]
    )
    assert manager.client_tool_requests() == []
    submission = manager.resolve("interrupt-1", response={"speed": "express", "giftWrap": True})
    assert submission is not None and submission.interrupt_ids == ("interrupt-1",)


def test_an_invalid_client_tool_output_is_an_item_error_and_a_root_error() -> None:
    manager = hydrated(client_call(printer_tool()), tools=[printer_tool()])
    found, submission = manager.resolve_client_tool_output("k1", {"error": "boom"})
    assert (found, submission) == (True, None)
    (root,) = manager.errors
    assert (root.code, root.interrupt_ids) == ("item-validation-failed", ("client_tool_k1",))


def test_unknown_ids_and_mutations_while_submitting_are_usage_errors() -> None:
    tool = plain_tool()
    manager = hydrated(approval(tool), tools=[tool])
    with pytest.raises(UsageError, match="Unknown interrupt: nope"):
        manager.resolve("nope", approved=True)
    manager.resolve("approval_c1", approved=True)
    with pytest.raises(UsageError, match="cannot be mutated while submitting"):
        manager.cancel_item("approval_c1")
    with pytest.raises(UsageError, match="cannot be mutated while submitting"):
        manager.cancel_all()


def test_the_wrong_answer_shape_for_the_item_kind_is_a_usage_error() -> None:
    manager = hydrated(approval(plain_tool()), generic("g"), tools=[plain_tool()])
    with pytest.raises(UsageError):
        manager.resolve("approval_c1", response={"approved": True})
    with pytest.raises(UsageError):
        manager.resolve("g", approved=True)
