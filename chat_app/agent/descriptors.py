"""Interrupt descriptors as they go on the wire (`docs/protocol.md` §1.4), with their bindings.

Owns the three builders. The server emits these on a pause and rebuilds the same ones from
the history on a continuation, so both sides agree on every hash.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from chat_app.interrupts import (
    ABSENT,
    APPROVAL_ID_PREFIX,
    APPROVAL_REASON,
    CLIENT_TOOL_ID_PREFIX,
    CLIENT_TOOL_REASON,
    INTERRUPT_PAYLOAD_METADATA_KEY,
    ClientToolExecutionBinding,
    GenericBinding,
    ToolApprovalBinding,
    canonical_interrupt_json,
    digest_interrupt_json,
    with_interrupt_binding,
)

from .definitions import InterruptRequest
from .tools import Tool

Descriptor = dict[str, Any]


def approval_descriptor(
    tool: Tool, call_id: str, args: Any, run_id: str, expires_at: str | None = None
) -> Descriptor:
    interrupt_id = APPROVAL_ID_PREFIX + call_id
    descriptor: Descriptor = {
        "id": interrupt_id,
        "reason": APPROVAL_REASON,
        "message": f"Approval required to run {tool.name}",
        "toolCallId": call_id,
        "responseSchema": tool.approval.response_schema,
        **({"expiresAt": expires_at} if expires_at else {}),
        "metadata": {"kind": "approval", "toolName": tool.name, "input": args},
    }
    binding = ToolApprovalBinding(
        expires_at=expires_at,
        interrupt_id=interrupt_id,
        tool_name=tool.name,
        tool_call_id=call_id,
        original_args=args,
        input_schema_hash=tool.input_schema_hash,
        approval_schema_hash=tool.approval.approval_schema_hash,
        response_schema_hash=tool.approval.response_schema_hash,
        interrupted_run_id=run_id,
        generation=0,
    )
    return with_interrupt_binding(descriptor, binding)


def client_tool_descriptor(
    tool: Tool, call_id: str, args: Any, run_id: str, expires_at: str | None = None
) -> Descriptor:
    interrupt_id = CLIENT_TOOL_ID_PREFIX + call_id
    response_schema = tool.client_response_schema
    descriptor: Descriptor = {
        "id": interrupt_id,
        "reason": CLIENT_TOOL_REASON,
        "message": f"Client tool {tool.name} is ready to run",
        "toolCallId": call_id,
        "responseSchema": response_schema,
        **({"expiresAt": expires_at} if expires_at else {}),
        "metadata": {"kind": "client_tool", "toolName": tool.name, "input": args},
    }
    binding = ClientToolExecutionBinding(
        expires_at=expires_at,
        interrupt_id=interrupt_id,
        tool_name=tool.name,
        tool_call_id=call_id,
        output_schema_hash=tool.output_schema_hash,
        response_schema_hash=digest_interrupt_json(canonical_interrupt_json(response_schema)),
        interrupted_run_id=run_id,
        generation=0,
    )
    return with_interrupt_binding(descriptor, binding)


def new_generic_interrupt_id() -> str:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    suffix = "".join(secrets.choice(alphabet) for _ in range(7))
    return f"interrupt-{int(time.time() * 1000)}-{suffix}"


def generic_fields(request: InterruptRequest, key: str, batch_index: int) -> dict[str, Any]:
    """Everything a generic interrupt's continuation metadata carries back (what is sealed)."""
    definition = request.definition
    fields: dict[str, Any] = {
        "definitionId": definition.id,
        "key": key,
        "batchIndex": batch_index,
        "reason": request.reason,
        "message": request.message,
        "expiresAt": request.expires_at,
        "responseSchemaHash": definition.response_schema_hash,
        "payloadSchemaHash": definition.payload_schema_hash,
    }
    if request.payload is not ABSENT and definition.payload_schema is not None:
        fields["payload"] = request.payload
    return fields


def generic_descriptor(
    request: InterruptRequest,
    interrupt_id: str,
    batch_index: int,
    run_id: str,
    *,
    key: str | None = None,
) -> Descriptor:
    """`key` overrides the request's key on the wire (a sealed key)."""
    definition = request.definition
    descriptor: Descriptor = {
        "id": interrupt_id,
        "reason": request.reason,
        "message": request.message,
    }
    if definition.wire_response_schema is not None:
        descriptor["responseSchema"] = definition.wire_response_schema
    if request.expires_at is not None:
        descriptor["expiresAt"] = request.expires_at
    metadata: dict[str, Any] = {}
    if request.payload is not ABSENT and definition.payload_schema is not None:
        metadata[INTERRUPT_PAYLOAD_METADATA_KEY] = request.payload
    descriptor["metadata"] = metadata
    binding = GenericBinding(
        interrupt_id=interrupt_id,
        response_schema_hash=definition.response_schema_hash,
        expires_at=request.expires_at,
        definition_id=definition.id,
        key=key or request.key,
        batch_index=batch_index,
        payload_schema_hash=definition.payload_schema_hash,
        interrupted_run_id=run_id,
        generation=0,
    )
    bound = with_interrupt_binding(descriptor, binding)
    # TanStack writes the binding before the display payload in metadata.
    bound_metadata: dict[str, Any] = bound["metadata"]  # type: ignore[assignment]
    if INTERRUPT_PAYLOAD_METADATA_KEY in bound_metadata:
        bound_metadata[INTERRUPT_PAYLOAD_METADATA_KEY] = bound_metadata.pop(
            INTERRUPT_PAYLOAD_METADATA_KEY
        )
    return bound
