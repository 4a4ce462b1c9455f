"""Binding readers and writers: every rule of `docs/protocol.md` §2.6."""

import copy
from typing import Any

import pytest

from chat_app.interrupts import (
    INTERRUPT_BINDING_METADATA_KEY,
    ClientToolExecutionBinding,
    GenericBinding,
    ToolApprovalBinding,
    read_interrupt_binding,
    read_unopened_interrupt_binding,
    with_interrupt_binding,
    without_interrupt_binding,
)

KEY = INTERRUPT_BINDING_METADATA_KEY


def approval(**overrides: Any) -> dict[str, Any]:
    binding = {
        "v": 1,
        "kind": "tool-approval",
        "interruptId": "approval_call_1",
        "toolName": "transfer",
        "toolCallId": "call_1",
        "originalArgs": {"cents": 100},
        "inputSchemaHash": "sha256:in",
        "approvalSchemaHash": "sha256:ap",
        "responseSchemaHash": "sha256:re",
        "interruptedRunId": "run-1",
        "generation": 0,
    }
    binding.update(overrides)
    return {"id": "approval_call_1", "reason": "tool_call", "metadata": {KEY: binding}}


def generic(**overrides: Any) -> dict[str, Any]:
    binding = {
        "v": 1,
        "kind": "generic",
        "interruptId": "g1",
        "responseSchemaHash": "sha256:re",
        "definitionId": "review-plan",
        "key": "initial",
        "batchIndex": 0,
        "interruptedRunId": "run-1",
        "generation": 0,
    }
    binding.update(overrides)
    return {"id": "g1", "reason": "review", "metadata": {KEY: binding}}


def test_reads_a_complete_tool_approval_binding_in_wire_order() -> None:
    binding = read_interrupt_binding(approval())
    assert isinstance(binding, ToolApprovalBinding)
    assert binding.original_args == {"cents": 100}
    assert list(binding.to_wire()) == [
        "v", "kind", "interruptId", "toolName", "toolCallId", "originalArgs",
        "inputSchemaHash", "approvalSchemaHash", "responseSchemaHash",
        "interruptedRunId", "generation",
    ]  # fmt: skip


def test_missing_version_reads_as_version_one() -> None:
    descriptor = approval()
    del descriptor["metadata"][KEY]["v"]
    binding = read_interrupt_binding(descriptor)
    assert binding is not None and binding.to_wire()["v"] == 1


def test_first_party_generic_binding() -> None:
    binding = read_interrupt_binding(generic())
    assert isinstance(binding, GenericBinding) and binding.first_party
    assert binding.to_wire()["batchIndex"] == 0


def test_client_tool_binding_needs_its_output_hash() -> None:
    descriptor: dict[str, Any] = {
        "id": "client_tool_c",
        "metadata": {
            KEY: {
                "kind": "client-tool-execution",
                "interruptId": "client_tool_c",
                "toolName": "lookup",
                "toolCallId": "c",
                "outputSchemaHash": "sha256:o",
                "responseSchemaHash": "sha256:r",
                "interruptedRunId": "run",
                "generation": 0,
            }
        },
    }
    assert isinstance(read_interrupt_binding(descriptor), ClientToolExecutionBinding)
    del descriptor["metadata"][KEY]["outputSchemaHash"]
    assert read_interrupt_binding(descriptor) is None


@pytest.mark.parametrize(
    "descriptor",
    [
        {"id": "x"},
        {"id": "x", "metadata": "nope"},
        {"id": "x", "metadata": {KEY: None}},
        {"id": "x", "metadata": {KEY: "binding"}},
        approval(interruptId="approval_other"),
        approval(interruptId=""),
        approval(interruptId=7),
        approval(v=2),
        approval(v="1"),
        approval(responseSchemaHash=""),
        approval(responseSchemaHash=None),
        approval(expiresAt="not a date"),
        approval(expiresAt="2026-13-01"),
        approval(kind="something-else"),
        approval(toolName=""),
        approval(toolCallId=None),
        approval(inputSchemaHash=None),
        approval(approvalSchemaHash=""),
        generic(definitionId=""),
        generic(key=None),
        generic(batchIndex=-1),
        generic(batchIndex=1.5),
        generic(batchIndex="0"),
        generic(batchIndex=True),
        generic(definitionId=None, key=None, batchIndex=None, payloadSchemaHash="sha256:p"),
    ],
)
def test_malformed_or_foreign_bindings_are_not_ours(descriptor: dict[str, Any]) -> None:
    assert read_unopened_interrupt_binding(descriptor) is None
    assert read_interrupt_binding(descriptor) is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"interruptedRunId": ""},
        {"interruptedRunId": None},
        {"generation": -1},
        {"generation": 0.5},
        {"generation": "0"},
        {"generation": False},
    ],
)
def test_an_unopened_binding_is_not_a_complete_one(overrides: dict[str, Any]) -> None:
    descriptor = approval(**overrides)
    assert read_unopened_interrupt_binding(descriptor) is not None
    assert read_interrupt_binding(descriptor) is None


def test_raw_generic_without_first_party_fields() -> None:
    descriptor = generic(definitionId=None, key=None, batchIndex=None)
    for name in ("definitionId", "key", "batchIndex"):
        del descriptor["metadata"][KEY][name]
    binding = read_interrupt_binding(descriptor)
    assert isinstance(binding, GenericBinding) and not binding.first_party


def test_with_binding_returns_a_new_descriptor_and_stamps_id_and_version() -> None:
    descriptor = {"id": "ours", "reason": "r", "metadata": {"other": 1}}
    before = copy.deepcopy(descriptor)
    bound = with_interrupt_binding(descriptor, {"kind": "generic", "interruptId": "wrong"})
    assert descriptor == before
    assert bound["metadata"] == {
        "other": 1,
        KEY: {"kind": "generic", "interruptId": "ours", "v": 1},
    }
    assert without_interrupt_binding(bound) == before
    assert read_unopened_interrupt_binding(bound) is not None


def test_an_approval_or_client_tool_id_names_its_tool_call() -> None:
    from chat_app.interrupts import tool_call_id_of

    assert tool_call_id_of("approval_call_1") == "call_1"
    assert tool_call_id_of("client_tool_approval_x") == "approval_x"
    assert tool_call_id_of("approval_") == ""
    assert tool_call_id_of("shipping-42") is None
    assert tool_call_id_of("xapproval_call_1") is None
