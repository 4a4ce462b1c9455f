"""What the audit trail says about a pause and about a decision (plain JSON records)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ag_ui.core import ResumeEntry

from chat_app.interrupts import (
    ABSENT,
    INTERRUPT_BINDING_METADATA_KEY,
    canonical_interrupt_json,
    digest_interrupt_json,
    tool_call_id_of,
)

if TYPE_CHECKING:
    from chat_app.agent.resume import ResumePlan


def _digest(value: Any) -> str:
    return digest_interrupt_json(canonical_interrupt_json(value))


def pause_record(descriptor: dict[str, Any]) -> dict[str, Any]:
    """What a person was shown: the interrupt, and for tools the arguments and their digest."""
    metadata = descriptor.get("metadata") or {}
    record: dict[str, Any] = {
        "interruptId": descriptor.get("id"),
        "reason": descriptor.get("reason"),
        "message": descriptor.get("message"),
    }
    if "toolName" in metadata:
        record["toolName"] = metadata["toolName"]
        record["toolCallId"] = descriptor.get("toolCallId")
        record["args"] = metadata.get("input")
        record["argsDigest"] = _digest(metadata.get("input"))
    if INTERRUPT_BINDING_METADATA_KEY not in metadata:
        record["unbound"] = True
    if descriptor.get("expiresAt"):
        record["expiresAt"] = descriptor["expiresAt"]
    return record


def decision_record(plan: ResumePlan, entry: ResumeEntry) -> dict[str, Any]:
    """What was decided about one interrupt of a continuation."""
    interrupt_id = entry.interrupt_id
    record: dict[str, Any] = {"interruptId": interrupt_id, "status": entry.status}
    call_id = tool_call_id_of(interrupt_id)
    call = next((pending.call for pending in plan.calls if pending.call.id == call_id), None)
    if call is not None:
        record.update(toolName=call.name, toolCallId=call.id, shownArgs=call.args,
                      argsDigest=_digest(call.args))  # fmt: skip
    decision = plan.approvals.get(call_id or "")
    if entry.status == "cancelled":
        record["decision"] = "cancelled"
    elif decision is not None:
        record["decision"] = "approved" if decision.approved else "rejected"
        if decision.payload is not ABSENT:
            record["payload"] = decision.payload
        if decision.edited_args is not ABSENT:
            record["editedArgs"] = decision.edited_args
    else:
        record["decision"] = "answered"
        if "payload" in entry.model_fields_set:
            record["payload"] = entry.payload
    return record
