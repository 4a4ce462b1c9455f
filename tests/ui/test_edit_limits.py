"""The edit form under a rule's `editable`: it holds only the arguments the rule lets an
approver change, says so, and approves them over the call's own (the server refuses the
rest: tests/agent/test_policy_gate.py, tests/desk/test_refused.py)."""

from __future__ import annotations

from typing import Any

from chat_app.client import ToolApprovalInterrupt
from chat_app.demo import tools as demo_tools
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.ui.edit_form import EditLimit, edited_arguments, form_schema, pause_edit_limits
from chat_app.ui.forms import read_form
from chat_app.ui.views import decision_view

TRANSFER: dict[str, Any] = dict(demo_tools.TRANSFER.input_schema or {})


def _transfer(
    editable: list[str] | None,
    schema: dict[str, Any] = TRANSFER,
    args: dict[str, Any] | None = None,
) -> ToolApprovalInterrupt:
    shown = {"rule": "large-transfers", "requester": "rita@example.com", "quorum": 1,
             "editable": editable}  # fmt: skip
    return ToolApprovalInterrupt(
        id="approval_c1", reason="tool_approval", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="transfer", tool_call_id="c1", input_schema=schema,
        original_args=args or {"recipient": "Bob", "amount": 5300},
        metadata={POLICY_METADATA_KEY: shown},
    )  # fmt: skip


def _submitted(item: ToolApprovalInterrupt, data: dict[str, str]) -> Any:
    """What Approve with changes sends for the form `data`, as the page reads it."""
    limits = pause_edit_limits(item)
    schema, _ = form_schema(item, "edit", limits)
    assert schema is not None
    result = read_form(schema, decision_view(item, None, 0).edit_fields, data)
    assert result.ok, result.errors
    return edited_arguments(item, result.value, limits)


def test_the_form_holds_the_editable_arguments_alone_and_says_why() -> None:
    view = decision_view(_transfer(["amount"]), None, 0)
    assert [row.path for row in view.edit_fields] == ["amount"]
    assert view.edit_fields[0].value == "5300" and view.edit_fields[0].required
    assert view.can_edit
    # By the field's title, as the form shows it.
    assert view.edit_note == "Rule large-transfers lets an approver change only Amount."
    # The arguments as proposed still read in full above the buttons.
    assert [row[0] for row in view.arguments] == ["recipient", "amount"]


def test_what_the_form_approves_keeps_the_calls_other_arguments() -> None:
    assert _submitted(_transfer(["amount"]), {"amount": "4000"}) == {
        "recipient": "Bob", "amount": 4000
    }  # fmt: skip


def test_an_argument_the_form_does_not_hold_is_kept_even_when_editable() -> None:
    """A `memo` the schema does not describe (extra arguments allowed) is editable, but the
    form cannot show it: it goes as it was, not dropped."""
    schema = {**TRANSFER, "additionalProperties": True}
    item = _transfer(["amount", "memo"], schema, {"recipient": "Bob", "amount": 5, "memo": "rent"})
    assert _submitted(item, {"amount": "4"}) == {"recipient": "Bob", "amount": 4, "memo": "rent"}


def test_an_optional_editable_field_left_empty_leaves_it_out() -> None:
    schema = {**TRANSFER, "properties": {**TRANSFER["properties"], "memo": {"type": "string"}}}
    item = _transfer(["amount", "memo"], schema, {"recipient": "Bob", "amount": 5, "memo": "rent"})
    assert _submitted(item, {"amount": "5", "memo": ""}) == {"recipient": "Bob", "amount": 5}


def test_under_editable_empty_there_is_no_edit_to_offer() -> None:
    view = decision_view(_transfer([]), None, 0)
    assert view.edit_fields == [] and not view.can_edit
    assert view.edit_note == "Rule large-transfers lets nobody change the arguments."
    # Whatever the schema: a form the server would refuse every change of is not offered.
    tied = {**TRANSFER, "oneOf": [{"required": ["recipient"]}, {"required": ["amount"]}]}
    assert not decision_view(_transfer([], tied), None, 0).can_edit


def test_without_editable_the_form_is_the_whole_input_schema() -> None:
    item = _transfer(None)
    view = decision_view(item, None, 0)
    assert [row.path for row in view.edit_fields] == ["recipient", "amount"]
    assert view.edit_note == ""
    asked = {"recipient": "Ada", "amount": 1}
    assert edited_arguments(item, asked, None) == asked


def test_a_schema_that_ties_its_arguments_is_shown_whole_and_left_to_the_server() -> None:
    """Cut down, `oneOf` or `minProperties` could no longer be met: the form keeps every
    field, and what the approver changes is sent as changed, for the server to refuse with
    its reason."""
    for tie in ({"oneOf": [{"required": ["recipient"]}, {"required": ["amount"]}]},
                {"minProperties": 2}):  # fmt: skip
        item = _transfer(["amount"], {**TRANSFER, **tie})
        view = decision_view(item, None, 0)
        assert [row.path for row in view.edit_fields] == ["recipient", "amount"], tie
        asked = {"recipient": "Ada", "amount": 1}
        assert edited_arguments(item, asked, pause_edit_limits(item)) == asked


def test_the_page_may_be_given_the_rule_in_force_rather_than_the_pauses() -> None:
    def in_force(item: Any) -> EditLimit | None:
        return ("large-transfers", ("recipient",))

    view = decision_view(_transfer(["amount"]), None, 0, edits=in_force)
    assert [row.path for row in view.edit_fields] == ["recipient"]
