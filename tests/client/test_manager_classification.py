"""How the interrupt manager classifies each descriptor of a batch (`docs/protocol.md` §4.2)."""

from __future__ import annotations

import json

import pytest

from chat_app.client import (
    GenericInterrupt,
    InterruptManager,
    ToolApprovalInterrupt,
    UnboundInterrupt,
)
from chat_app.interrupts import canonical_interrupt_json
from tests.client.builders import (
    SHIPPING,
    approval,
    client_call,
    generic,
    hydrated,
    pay_tool,
    plain_tool,
    printer_tool,
    typed_generic,
    unbound,
)
from tests.fixtures.loader import load_fixture

FIXTURE = load_fixture("client-manager-hydration")


def summary(manager: InterruptManager) -> list[list[object]]:
    return [[i.kind, i.can_resolve, i.status] for i in manager.interrupts]


def test_client_tool_hashes_equal_the_hashes_the_js_client_computed() -> None:
    tool = pay_tool()
    ours = {
        "inputSchemaHash": tool.input_schema_hash,
        "responseSchemaHash": tool.approval.response_schema_hash,
        "approvalSchemaHash": tool.approval.approval_schema_hash,
    }
    assert ours == FIXTURE["jsHashes"] == FIXTURE["pyHashes"]


def test_an_approval_whose_hashes_match_a_registered_tool_is_a_typed_tool_approval() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool()])
    assert summary(manager) == FIXTURE["kindMatch"]
    item = manager.interrupts[0]
    assert isinstance(item, ToolApprovalInterrupt)
    assert (item.tool_name, item.tool_call_id, item.original_args) == ("pay", "c1", {"cents": 100})


def test_an_approval_whose_hashes_differ_degrades_to_a_resolvable_raw_generic() -> None:
    drifted = pay_tool(
        input_schema={"type": "object", "properties": {"cents": {"type": "integer"}}}
    )
    manager = hydrated(approval(pay_tool()), tools=[drifted])
    item = manager.interrupts[0]
    expected_kind, can_resolve, status, binding = FIXTURE["kindMismatch"][0]
    assert [item.kind, item.can_resolve, item.status] == [expected_kind, can_resolve, status]
    assert isinstance(item, GenericInterrupt)
    assert canonical_interrupt_json(item.binding) == binding


def test_an_approval_bound_to_another_run_cannot_be_resolved() -> None:
    manager = hydrated(approval(pay_tool(), run="run-other"), tools=[pay_tool()])
    assert summary(manager) == FIXTURE["kindWrongRun"]


def test_an_approval_for_an_unregistered_tool_is_a_resolvable_raw_generic() -> None:
    manager = hydrated(approval(pay_tool()))
    assert summary(manager) == FIXTURE["kindNoTool"]


def test_an_approval_whose_tool_call_id_differs_from_the_binding_is_not_typed() -> None:
    descriptor = approval(pay_tool())
    descriptor["toolCallId"] = "other"
    manager = hydrated(descriptor, tools=[pay_tool()])
    assert manager.interrupts[0].kind == "generic"


def test_an_approval_for_a_tool_registered_without_needs_approval_is_not_typed() -> None:
    manager = hydrated(approval(pay_tool()), tools=[pay_tool(needs_approval=False)])
    assert manager.interrupts[0].kind == "generic"


def test_a_binding_with_reserved_but_incomplete_first_party_fields_is_a_stale_error() -> None:
    descriptor = generic("g")
    descriptor["metadata"]["tanstack:interruptBinding"]["definitionId"] = "x"  # type: ignore[index]
    manager = hydrated(descriptor)
    item = manager.interrupts[0]
    kind, can_resolve, status, errors = FIXTURE["reservedInvalid"][0]
    assert [item.kind, item.can_resolve, item.status] == [kind, can_resolve, status]
    assert [[e.code, e.message] for e in item.errors] == json.loads(errors)


def test_a_raw_generic_without_schema_or_hash_is_resolvable() -> None:
    manager = hydrated(generic("g"))
    assert summary(manager) == FIXTURE["genericNoHash"]


def test_a_raw_generic_with_a_schema_but_no_hash_cannot_be_resolved() -> None:
    manager = hydrated(generic("g", schema={"type": "object"}, hashed=False))
    assert summary(manager) == FIXTURE["genericSchemaNoHash"]


def test_a_raw_generic_with_a_foreign_dialect_schema_and_matching_hash_is_resolvable() -> None:
    manager = hydrated(generic("g", schema={"type": "object", "x-dialect": {"weird": True}}))
    assert summary(manager) == [["generic", True, "pending"]]


def test_a_descriptor_without_binding_is_unbound_and_cannot_be_resolved() -> None:
    manager = hydrated(unbound())
    item = manager.interrupts[0]
    assert isinstance(item, UnboundInterrupt)
    assert (item.can_resolve, item.status, item.message) == (
        False,
        "pending",
        "Someone else decides.",
    )


def test_a_binding_with_an_unknown_version_is_unbound() -> None:
    descriptor = generic("g")
    descriptor["metadata"]["tanstack:interruptBinding"]["v"] = 2  # type: ignore[index]
    assert hydrated(descriptor).interrupts[0].kind == "unbound"


def test_a_legacy_approval_without_binding_is_a_resumable_generic() -> None:
    descriptor: dict[str, object] = {
        "id": "approval_c1",
        "reason": "approval_required",
        "toolCallId": "c1",
        "metadata": {"kind": "approval", "toolName": "pay", "input": {}},
    }
    assert summary(hydrated(descriptor)) == [["generic", True, "pending"]]


def test_a_correlated_client_tool_execution_is_hidden_from_the_public_list() -> None:
    manager = hydrated(
        approval(pay_tool()), client_call(printer_tool()), tools=[pay_tool(), printer_tool()]
    )
    assert [i.kind for i in manager.interrupts] == ["tool-approval"]
    assert manager.client_tool_requests() == [("k1", "printTag", {"animal": "Rusty"})]


def test_a_client_tool_whose_output_schema_drifted_is_a_public_generic() -> None:
    drifted = printer_tool(output_schema={"type": "object"})
    manager = hydrated(client_call(printer_tool()), tools=[drifted])
    assert [i.kind for i in manager.interrupts] == ["generic"]


def test_a_registered_first_party_generic_is_typed_with_its_payload() -> None:
    manager = hydrated(typed_generic(), definitions=[SHIPPING])
    item = manager.interrupts[0]
    assert isinstance(item, GenericInterrupt)
    assert (item.definition_id, item.key, item.payload) == (
        "shipping-speed",
        "order-42",
        {"order": "42"},
    )
    assert item.can_resolve


def test_an_unregistered_first_party_generic_is_still_resolvable_untyped() -> None:
    item = hydrated(typed_generic()).interrupts[0]
    assert isinstance(item, GenericInterrupt)
    assert (item.definition_id, item.can_resolve) == (None, True)


def test_first_party_generics_sharing_a_batch_index_are_both_stale() -> None:
    manager = hydrated(
        typed_generic("a", batch_index=0), typed_generic("b", batch_index=0), definitions=[SHIPPING]
    )
    assert [(i.status, i.errors[0].message) for i in manager.interrupts] == [
        ("error", "Generic interrupt batch contains a duplicate batchIndex.")
    ] * 2


def test_a_first_party_generic_from_another_run_is_a_stale_error() -> None:
    item = hydrated(typed_generic(run="run-9"), definitions=[SHIPPING]).interrupts[0]
    assert (item.status, item.can_resolve) == ("error", False)
    assert item.errors[0].message == "The interrupt binding does not match this interrupted run."


@pytest.mark.parametrize("kind", ["tool-approval", "client-tool-execution", "generic"])
def test_a_reserved_binding_kind_that_does_not_parse_is_a_stale_error(kind: str) -> None:
    descriptor: dict[str, object] = {
        "id": "x",
        "reason": "r",
        "metadata": {
            "tanstack:interruptBinding": {"v": 1, "kind": kind, "interruptId": "x", "key": ""}
        },
    }
    item = hydrated(descriptor).interrupts[0]
    assert (item.kind, item.status, item.errors[0].code) == ("generic", "error", "stale")


def test_hydrating_a_new_batch_replaces_items_and_clears_root_errors() -> None:
    manager = hydrated(approval(plain_tool()), tools=[plain_tool()])
    manager.resolve_all(True)  # submits
    submission = manager.active_submission
    assert submission is not None
    manager.submission_failed(submission, message="down")
    assert manager.errors
    manager.hydrate(
        thread_id="t", interrupted_run_id="run-2", generation=0, descriptors=[unbound()]
    )
    assert (manager.errors, [i.kind for i in manager.interrupts], manager.can_retry) == (
        (),
        ["unbound"],
        False,
    )
