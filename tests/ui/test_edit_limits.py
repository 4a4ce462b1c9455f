"""The edit form under a rule's `editable`: it holds only the arguments the rule lets an
approver change, says so, and approves them over the call's own (the server refuses the
rest: tests/agent/test_policy_gate.py, tests/desk/test_refused.py)."""

from __future__ import annotations

from typing import Any

from chat_app.client import ToolApprovalInterrupt
from chat_app.demo import tools as demo_tools
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.ui.forms import read_form
from chat_app.ui.views import decision_view, edited_arguments, form_schema

TRANSFER: dict[str, Any] = dict(demo_tools.TRANSFER.input_schema or {})


def _transfer(
    editable: list[str] | None, schema: dict[str, Any] = TRANSFER
) -> ToolApprovalInterrupt:
    shown = {"rule": "large-transfers", "requester": "rita@example.com", "quorum": 1,
             "editable": editable}  # fmt: skip
    return ToolApprovalInterrupt(
        id="approval_c1", reason="tool_approval", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="transfer", tool_call_id="c1", input_schema=schema,
        original_args={"recipient": "Bob", "amount": 5300},
        metadata={POLICY_METADATA_KEY: shown},
    )  # fmt: skip


def test_the_form_holds_the_editable_arguments_alone_and_says_why() -> None:
    view = decision_view(_transfer(["amount"]), None, 0)
    assert [row.path for row in view.edit_fields] == ["amount"]
    assert view.edit_fields[0].value == "5300" and view.edit_fields[0].required
    assert view.can_edit
    assert view.edit_note == "Rule large-transfers lets an approver change only amount."
    # The arguments as proposed still read in full above the buttons.
    assert [row[0] for row in view.arguments] == ["recipient", "amount"]


def test_what_the_form_approves_keeps_the_calls_other_arguments() -> None:
    item = _transfer(["amount"])
    schema, initial = form_schema(item, "edit")
    assert schema is not None
    result = read_form(schema, decision_view(item, None, 0).edit_fields, {"amount": "4000"})
    assert result.ok and result.value == {"amount": 4000}
    assert edited_arguments(item, result.value) == {"recipient": "Bob", "amount": 4000}


def test_under_editable_empty_there_is_no_edit_to_offer() -> None:
    view = decision_view(_transfer([]), None, 0)
    assert view.edit_fields == [] and not view.can_edit


def test_without_editable_the_form_is_the_whole_input_schema() -> None:
    item = _transfer(None)
    view = decision_view(item, None, 0)
    assert [row.path for row in view.edit_fields] == ["recipient", "amount"]
    assert view.edit_note == ""
    asked = {"recipient": "Ada", "amount": 1}
    assert edited_arguments(item, asked) == asked


def test_a_schema_not_made_of_plain_properties_is_shown_whole_and_left_to_the_server() -> None:
    """Cut down, `oneOf` could no longer be met: the form keeps every field, and what the
    approver changes is sent as changed, for the server to refuse with its reason."""
    schema = {**TRANSFER, "oneOf": [{"required": ["recipient"]}, {"required": ["amount"]}]}
    item = _transfer(["amount"], schema)
    view = decision_view(item, None, 0)
    assert [row.path for row in view.edit_fields] == ["recipient", "amount"]
    asked = {"recipient": "Ada", "amount": 1}
    assert edited_arguments(item, asked) == asked
