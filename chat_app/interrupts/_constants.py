"""Literal constants of the TanStack AI interrupt wire format (`docs/protocol.md` §1.5).

Owns: metadata keys, versions, id prefixes (and `tool_call_id_of`, which reads them back),
reasons, boundary phases, tool-resume values, and the results a server writes for a call
that did not run (`expired_result` and `is_expired_result`, which recognises one).
Imports nothing but `typing` and `collections.abc`.
"""

from collections.abc import Mapping, Sequence
from typing import Final, Literal

INTERRUPT_BINDING_METADATA_KEY: Final = "tanstack:interruptBinding"
INTERRUPT_BINDING_VERSION: Final = 1
INTERRUPT_PAYLOAD_METADATA_KEY: Final = "tanstack:interruptPayload"
INTERRUPT_BINDING_KIND: Final = "generic"
INTERRUPT_CONTINUATION_METADATA_KEY: Final = "tanstack:interruptContinuation"
INTERRUPT_CONTINUATION_VERSION: Final = 1

BoundaryPhase = Literal["beforeModel", "afterModel", "beforeTools", "afterTools"]
INTERRUPT_BOUNDARY_PHASES: Final[tuple[BoundaryPhase, ...]] = (
    "beforeModel",
    "afterModel",
    "beforeTools",
    "afterTools",
)

ToolResume = Literal["continue", "cancel", "stop"]
INTERRUPT_TOOL_RESUMES: Final[tuple[ToolResume, ...]] = ("continue", "cancel", "stop")

APPROVAL_ID_PREFIX: Final = "approval_"
CLIENT_TOOL_ID_PREFIX: Final = "client_tool_"
TOOL_MESSAGE_ID_PREFIX: Final = "tool-"


def tool_call_id_of(interrupt_id: str) -> str | None:
    """The tool call an approval or client-tool interrupt id names; None for other ids."""
    for prefix in (APPROVAL_ID_PREFIX, CLIENT_TOOL_ID_PREFIX):
        if interrupt_id.startswith(prefix):
            return interrupt_id.removeprefix(prefix)
    return None


APPROVAL_REASON: Final = "tool_call"
CLIENT_TOOL_REASON: Final = "tanstack:client_tool_execution"
# Older producers used these; clients still accept them.
LEGACY_APPROVAL_REASON: Final = "approval_required"
LEGACY_CLIENT_TOOL_REASON: Final = "client_tool_input"

RUN_ID_HEADER: Final = "X-Run-Id"

# This project's own names on the wire (`docs/protocol.md` §6.7): the metadata key of an
# interrupt that says which policy rule governs it and who may decide, and the `CUSTOM` event
# that says a rule decided a tool call alone.
POLICY_METADATA_KEY: Final = "chat_app:policy"
POLICY_DECISION_EVENT: Final = "chat_app:policyDecision"

DEFAULT_DENIED_RESULT: Final = {"error": "User declined tool execution"}
CANCELLED_RESULT: Final = {"error": "Tool execution cancelled"}


def expired_result(
    *, error: str, approved_by: Sequence[str] = (), quorum: int = 1
) -> dict[str, object]:
    """The result of a call nobody decided on before its request expired, or that fewer
    people approved (`approved_by`) than its `quorum`: the model reads `error`, that it did
    not run and why ("Expired: nobody decided within 1 day."). An ordinary error result on
    the wire; the `expired` flag lets a client tell it from a person's cancellation."""
    result: dict[str, object] = {"error": error, "expired": True}
    if approved_by:
        result |= {"approvedBy": list(approved_by), "quorum": quorum}
    return result


def is_expired_result(output: object) -> bool:
    """Whether a tool result is one `expired_result` wrote."""
    return (
        isinstance(output, Mapping)
        and output.get("expired") is True
        and isinstance(output.get("error"), str)
    )
