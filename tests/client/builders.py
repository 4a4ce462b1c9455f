"""Builders for client tests: tools, descriptors as servers emit them, and scripted streams."""

from __future__ import annotations

from typing import Any

from chat_app.client import ClientInterruptDefinition, ClientTool, InterruptManager
from chat_app.interrupts import (
    ClientToolExecutionBinding,
    GenericBinding,
    ToolApprovalBinding,
    canonical_interrupt_json,
    client_tool_response_schema,
    digest_interrupt_json,
    with_interrupt_binding,
)

THREAD = "t"
RUN = "run-1"
CENTS = {"type": "object", "properties": {"cents": {"type": "number"}}, "required": ["cents"]}
NOTE = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
REASON = {
    "type": "object",
    "properties": {"reason": {"type": "string", "minLength": 1}},
    "required": ["reason"],
}
OUTPUT = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}
SHIPPING_RESPONSE = {
    "type": "object",
    "properties": {
        "speed": {"type": "string", "enum": ["standard", "express"]},
        "giftWrap": {"type": "boolean"},
    },
    "required": ["speed", "giftWrap"],
    "additionalProperties": False,
}
ORDER_PAYLOAD: dict[str, object] = {"type": "object", "properties": {"order": {"type": "string"}}}


def pay_tool(**overrides: Any) -> ClientTool:
    """The tool of the captured hydration fixture: cents input, approve-branch note."""
    fields: dict[str, Any] = {
        "name": "pay",
        "input_schema": CENTS,
        "needs_approval": True,
        "approval_schema": {"approve": NOTE},
    }
    fields.update(overrides)
    return ClientTool(**fields)


def plain_tool(name: str = "delete", **overrides: Any) -> ClientTool:
    fields: dict[str, Any] = {"name": name, "input_schema": CENTS, "needs_approval": True}
    fields.update(overrides)
    return ClientTool(**fields)


def printer_tool(**overrides: Any) -> ClientTool:
    fields: dict[str, Any] = {
        "name": "printTag",
        "input_schema": {"type": "object", "properties": {"animal": {"type": "string"}}},
        "output_schema": OUTPUT,
        "execute": lambda args: {"tag": f"tag_{args.get('animal', '')}"},
    }
    fields.update(overrides)
    return ClientTool(**fields)


SHIPPING = ClientInterruptDefinition(
    id="shipping-speed", response_schema=SHIPPING_RESPONSE, payload_schema=ORDER_PAYLOAD
)


def approval(
    tool: ClientTool, call_id: str = "c1", *, run: str = RUN, args: object = None, **binding: Any
) -> dict[str, object]:
    """An approval descriptor exactly as a server bound to `tool` emits it."""
    args = {"cents": 100} if args is None else args
    fields: dict[str, Any] = {
        "interrupt_id": f"approval_{call_id}",
        "tool_name": tool.name,
        "tool_call_id": call_id,
        "original_args": args,
        "input_schema_hash": tool.input_schema_hash,
        "approval_schema_hash": tool.approval.approval_schema_hash,
        "response_schema_hash": tool.approval.response_schema_hash,
        "interrupted_run_id": run,
        "generation": 0,
    }
    fields.update(binding)
    descriptor: dict[str, object] = {
        "id": f"approval_{call_id}",
        "reason": "tool_call",
        "message": f"Approval required to run {tool.name}",
        "toolCallId": call_id,
        "responseSchema": tool.approval.response_schema,
        "metadata": {"kind": "approval", "toolName": tool.name, "input": args},
    }
    return with_interrupt_binding(descriptor, ToolApprovalBinding(**fields))


def client_call(
    tool: ClientTool, call_id: str = "k1", *, run: str = RUN, args: object = None
) -> dict[str, object]:
    """A client-tool execution descriptor."""
    args = {"animal": "Rusty"} if args is None else args
    response = client_tool_response_schema(tool.output_schema)
    descriptor: dict[str, object] = {
        "id": f"client_tool_{call_id}",
        "reason": "tanstack:client_tool_execution",
        "message": f"Client tool {tool.name} is ready to run",
        "toolCallId": call_id,
        "responseSchema": response,
        "metadata": {"kind": "client_tool", "toolName": tool.name, "input": args},
    }
    return with_interrupt_binding(
        descriptor,
        ClientToolExecutionBinding(
            interrupt_id=f"client_tool_{call_id}",
            tool_name=tool.name,
            tool_call_id=call_id,
            output_schema_hash=tool.output_schema_hash,
            response_schema_hash=digest_interrupt_json(canonical_interrupt_json(response)),
            interrupted_run_id=RUN if run is None else run,
            generation=0,
        ),
    )


def generic(
    interrupt_id: str = "g",
    *,
    schema: dict[str, object] | None = None,
    run: str = RUN,
    hashed: bool = True,
    **binding: Any,
) -> dict[str, object]:
    """A raw generic descriptor (bound with `withInterruptBinding`)."""
    descriptor: dict[str, object] = {"id": interrupt_id, "reason": "confirm", "message": "Sure?"}
    if schema is not None:
        descriptor["responseSchema"] = schema
    digest = (
        digest_interrupt_json(canonical_interrupt_json(schema))
        if schema is not None and hashed
        else None
    )
    fields: dict[str, Any] = {
        "interrupt_id": interrupt_id,
        "response_schema_hash": digest,
        "interrupted_run_id": run,
        "generation": 0,
    }
    fields.update(binding)
    return with_interrupt_binding(descriptor, GenericBinding(**fields))


def typed_generic(
    interrupt_id: str = "interrupt-1",
    *,
    definition: ClientInterruptDefinition = SHIPPING,
    batch_index: int = 0,
    key: str = "order-42",
    run: str = RUN,
    payload: object = None,
) -> dict[str, object]:
    """A first-party generic descriptor as `defineInterrupt(...).interrupt()` produces it."""
    schema = definition.response_schema
    wire_schema = None if schema is None else {k: v for k, v in schema.items() if k != "$schema"}
    descriptor: dict[str, object] = {
        "id": interrupt_id,
        "reason": "shipping_speed",
        "message": "How should order 42 ship?",
        "metadata": {"tanstack:interruptPayload": payload or {"order": "42"}},
    }
    if wire_schema is not None:
        descriptor["responseSchema"] = wire_schema
    return with_interrupt_binding(
        descriptor,
        GenericBinding(
            interrupt_id=interrupt_id,
            response_schema_hash=definition.response_schema_hash,
            definition_id=definition.id,
            key=key,
            batch_index=batch_index,
            payload_schema_hash=definition.payload_schema_hash,
            interrupted_run_id=run,
            generation=0,
        ),
    )


def unbound(interrupt_id: str = "theirs") -> dict[str, object]:
    return {"id": interrupt_id, "reason": "workflow", "message": "Someone else decides."}


def hydrated(
    *descriptors: dict[str, object],
    tools: list[ClientTool] | None = None,
    definitions: list[ClientInterruptDefinition] | None = None,
) -> InterruptManager:
    manager = InterruptManager(tools=tools or [], definitions=definitions or [])
    manager.hydrate(
        thread_id=THREAD, interrupted_run_id=RUN, generation=0, descriptors=list(descriptors)
    )
    return manager


def item_error_wire(manager: InterruptManager, interrupt_id: str) -> list[dict[str, object]]:
    item = next(i for i in manager.interrupts if i.id == interrupt_id)
    return [error.to_wire() for error in item.errors]
