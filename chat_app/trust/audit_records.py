"""What the audit trail says about a pause and about a decision (plain JSON records)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chat_app.interrupts import (
    ABSENT,
    APPROVAL_ID_PREFIX,
    INTERRUPT_BINDING_METADATA_KEY,
    Decision,
    canonical_interrupt_json,
    digest_interrupt_json,
)

from .identity import Identity


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


def decision_record(
    decision: Decision,
    *,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
    shown_args: Any = ABSENT,
    cosigners: Sequence[Identity] = (),
    expired: bool = False,
) -> dict[str, Any]:
    """What was decided about one interrupt; for a tool call, with what the person was shown
    (its name, id, arguments and their digest); for a quorum, who else approved it earlier
    (`cosigners`, each with how they were verified, in the order given). A cancellation that
    came once the request had `expired` is recorded as the expiry (`"decision": "expired"`):
    nobody decided in time."""
    status = "expired" if expired else "cancelled" if decision.kind == "cancel" else "resolved"
    record: dict[str, Any] = {"interruptId": decision.interrupt_id, "status": status}
    if tool_name is not None:
        record.update(toolName=tool_name, toolCallId=tool_call_id, shownArgs=shown_args,
                      argsDigest=_digest(shown_args))  # fmt: skip
    record["decision"] = "expired" if expired else decision.outcome
    if decision.kind == "cancel":
        return record
    if decision.payload is not ABSENT:
        record["payload"] = decision.payload
    if decision.edited:
        record["editedArgs"] = decision.edited_args
    if cosigners:
        record["cosigners"] = [_cosigner(person) for person in cosigners]
    return record


def _cosigner(person: Identity) -> dict[str, Any]:
    """One earlier approver, as the trail names the person deciding: email, and how they
    were verified (`verified_by`)."""
    return {"actor": person.email, **verified_by(person)}


def verified_by(person: Identity) -> dict[str, Any]:
    """How the person acting was verified, for their record in the trail: the method, the
    token's name if a token, and the roles their verification gave them (a sign-in proxy's
    groups, an account's roles) if any, which the policy's `[roles]` adds to: what let them
    decide, as it was then."""
    record: dict[str, Any] = {"verifiedBy": person.method}
    if person.token_name:
        record["tokenName"] = person.token_name
    if person.roles:
        record["roles"] = sorted(person.roles)
    return record


def policy_decision_record(
    *,
    approved: bool,
    rule: str,
    reason: str | None,
    tool_name: str,
    tool_call_id: str,
    shown_args: Any,
) -> dict[str, Any]:
    """A tool call a policy rule decided alone: what was decided about what, as for a person's
    decision, and which rule decided it (nobody was asked)."""
    decision = Decision.approval(APPROVAL_ID_PREFIX + tool_call_id, approved)
    record = decision_record(
        decision, tool_name=tool_name, tool_call_id=tool_call_id, shown_args=shown_args
    )
    record.update(decidedBy="policy", rule=rule)
    if reason:
        record["reason"] = reason
    return record


def _about_item(
    interrupt_id: str, tool_name: str | None, rule: str | None, **fields: str
) -> dict[str, Any]:
    record: dict[str, Any] = {"interruptId": interrupt_id, **fields}
    if tool_name:
        record["toolName"] = tool_name
    if rule:
        record["rule"] = rule
    return record


def refusal_record(
    interrupt_id: str, reason: str, *, tool_name: str | None = None, rule: str | None = None
) -> dict[str, Any]:
    """An answer the policy refused: which item (its tool and rule, when known), and the
    refusal the person was shown."""
    return _about_item(interrupt_id, tool_name, rule, reason=reason)


def held_record(
    interrupt_id: str, outcome: str, *, tool_name: str | None = None, rule: str | None = None
) -> dict[str, Any]:
    """An answer given at the desk that waits for the rest of its batch (`outcome`:
    `approved`, `edited`, `rejected`, `cancelled`, `answered`): which item. The decision
    record, written when the batch goes, says what the agent took; one that never goes (the
    batch expired) leaves this as the trail's word that someone answered in time."""
    return _about_item(interrupt_id, tool_name, rule, outcome=outcome)


def approval_record(
    interrupt_id: str, progress: str, *, tool_name: str | None = None, rule: str | None = None
) -> dict[str, Any]:
    """An approval towards a quorum that did not complete it: which item, and how far the
    quorum got with it ("1 of 2: Sam approved"). The decision that completes it names every
    approver again, as its cosigners."""
    return _about_item(interrupt_id, tool_name, rule, progress=progress)
