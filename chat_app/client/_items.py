"""The interrupt manager's public values: items, submissions, and the manager's snapshot.

Owns `ToolApprovalInterrupt`, `GenericInterrupt`, `UnboundInterrupt` (the closed union
`InterruptItem`), `Submission` and `ManagerSnapshot`. All are frozen dataclasses that
round-trip through JSON, so UI state can hold them and a reload loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

from pydantic import Discriminator

from chat_app.interrupts import BatchInterruptError, ItemInterruptError, parse_js_date

__all__ = [
    "AnsweredQuestion",
    "GenericInterrupt",
    "InterruptItem",
    "ItemRecord",
    "ItemStatus",
    "ManagerSnapshot",
    "Submission",
    "ToolApprovalInterrupt",
    "UnboundInterrupt",
]

ItemStatus: TypeAlias = Literal[
    "pending",  # waiting for an answer (initially, and after `clear_resolution`)
    "validating",  # an answer is being checked (validation here is synchronous: never seen)
    "staged",  # a valid answer or a cancellation is recorded
    "submitting",  # the continuation carrying the batch is in flight (hidden from the list)
    "error",  # the answer failed validation, the server refused it, or the send failed
    "expired",  # nobody answered in time: its cancellation (the expiry) is staged; final
]


#: Item statuses a person can still act on.
ANSWERABLE_STATUSES = ("pending", "error", "staged")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Base:
    id: str
    reason: str
    message: str | None = None
    response_schema: dict[str, object] | None = None
    expires_at: str | None = None
    metadata: dict[str, object] | None = None
    thread_id: str
    interrupted_run_id: str
    generation: int = 0
    status: ItemStatus = "pending"
    #: Zero or one item error.
    errors: tuple[ItemInterruptError, ...] = ()
    #: Whether binding and schema allow an answer (decided once, when the batch arrives).
    can_resolve: bool = False
    #: The last answer given, valid or not (so a form can show it again).
    draft: dict[str, object] | None = None
    #: The resume entry staged for this item, if any.
    resolution: dict[str, object] | None = None
    #: Why it closed unanswered, once `expired` ("Expired: nobody decided within 1 day.").
    expiry_note: str | None = None

    @property
    def error(self) -> ItemInterruptError | None:
        return self.errors[0] if self.errors else None

    @property
    def answerable(self) -> bool:
        """A person can answer it now: bound, resolvable, and pending, refused or staged
        (`ANSWERABLE_STATUSES`)."""
        bound = not isinstance(self, UnboundInterrupt)
        return bound and self.can_resolve and self.status in ANSWERABLE_STATUSES

    def expired(self, now_ms: float) -> bool:
        """Nothing can answer it any more: it was closed as `expired`, the server refused an
        answer as `expired`, or `now_ms` is at or past `expires_at` (read as JavaScript's
        `Date.parse` reads it)."""
        if self.status == "expired":
            return True
        if self.error is not None and self.error.code == "expired":
            return True
        expiry = parse_js_date(self.expires_at) if self.expires_at else None
        return expiry is not None and expiry <= now_ms


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolApprovalInterrupt(_Base):
    """A tool call waiting for approval; resolve with `approved=`, `edited_args=`, `payload=`."""

    kind: Literal["tool-approval"] = "tool-approval"
    binding: dict[str, object]
    tool_name: str
    tool_call_id: str
    original_args: object = None
    #: Payload schemas of the two decisions (`None`: that decision takes no payload).
    approve_schema: dict[str, object] | None = None
    reject_schema: dict[str, object] | None = None
    #: The tool's input schema: edited arguments must match it.
    input_schema: dict[str, object] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GenericInterrupt(_Base):
    """A question for a person; resolve with `response=`.

    Typed when its definition is registered (`definition_id`, `key`, `payload` set).
    """

    kind: Literal["generic"] = "generic"
    binding: dict[str, object]
    definition_id: str | None = None
    key: str | None = None
    #: The display payload of a typed generic interrupt.
    payload: object = None


@dataclass(frozen=True, kw_only=True, slots=True)
class UnboundInterrupt(_Base):
    """A pause owned by someone else: shown, never answered here, never blocks the batch."""

    kind: Literal["unbound"] = "unbound"


InterruptItem: TypeAlias = Annotated[
    ToolApprovalInterrupt | GenericInterrupt | UnboundInterrupt, Discriminator("kind")
]


@dataclass(frozen=True, kw_only=True, slots=True)
class AnsweredQuestion:
    """A question of an earlier batch and the answer sent to it (or its cancellation): the
    conversation's record of it, since neither is a message. Kept from the moment the
    answer leaves until the conversation ends; dropped again if the server refuses it."""

    item: GenericInterrupt
    #: The resume entry that answered it.
    resolution: dict[str, object]
    #: The last message before the answer was sent ("" when there was none): where the
    #: conversation shows it.
    after: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Submission:
    """One complete batch of answers, exactly as it will be sent (and re-sent on retry)."""

    thread_id: str
    interrupted_run_id: str
    generation: int = 0
    #: Resume entries in canonical order with sorted keys.
    resolutions: tuple[dict[str, object], ...]
    canonical_resolutions: str
    fingerprint: str

    @property
    def interrupt_ids(self) -> tuple[str, ...]:
        return tuple(str(entry["interruptId"]) for entry in self.resolutions)

    def to_wire(self) -> dict[str, object]:
        """camelCase, as `InterruptManagerSubmission`."""
        return {
            "threadId": self.thread_id,
            "interruptedRunId": self.interrupted_run_id,
            "generation": self.generation,
            "resolutions": [dict(entry) for entry in self.resolutions],
            "canonicalResolutions": self.canonical_resolutions,
            "fingerprint": self.fingerprint,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemRecord:
    """What a person did to one item (the part of an item that descriptors cannot rebuild)."""

    id: str
    status: ItemStatus
    resolution: dict[str, object] | None = None
    error: ItemInterruptError | None = None
    draft: dict[str, object] | None = None
    expiry_note: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ManagerSnapshot:
    """The interrupt manager as data: enough to rebuild it after a reload."""

    thread_id: str | None = None
    interrupted_run_id: str | None = None
    generation: int = 0
    descriptors: tuple[dict[str, object], ...] = ()
    items: tuple[ItemRecord, ...] = ()
    root_errors: tuple[BatchInterruptError, ...] = ()
    submission_root_errors: tuple[BatchInterruptError, ...] = ()
    retry_submission: Submission | None = None
    active_submission: Submission | None = None
