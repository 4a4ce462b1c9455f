"""What the desk hands out: conversations as lists show them, inbox items, a decision's
outcome, and the desk's refusals.

Owns `ConversationSummary`, `ConversationView`, `InboxItem`, `Vote`, `Answer`,
`DecideResult` and `DeskError`. Frozen dataclasses; `to_json()` gives the camelCase shape
the HTTP desk API answers with (`docs/protocol.md` §10).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal, TypeAlias
from urllib.parse import urlencode

from chat_app.notify.notice import one_line
from chat_app.trust import (
    AuthMethod,
    Identity,
    describe_duration,
    escalation_note,
    expiry_words,
)
from chat_app.trust.identity import spelled_out
from chat_app.trust.policy import any_of_approvers
from chat_app.trust.store import not_answering

__all__ = [
    "Answer",
    "ConversationStatus",
    "ConversationSummary",
    "ConversationView",
    "DecideResult",
    "DeskError",
    "DeskErrorCode",
    "InboxItem",
    "InboxQuery",
    "SettledRequest",
    "Vote",
    "expiry_note",
    "expiry_note_of",
    "waiting_for_requester",
]

ConversationStatus: TypeAlias = Literal["running", "waiting", "done", "failed"]
#: Why the desk refused, as the HTTP API's status: 400, 403, 404, 409, 410, 503. `stale` is
#: a page's write over a stored version that moved on (no route gives it).
DeskErrorCode: TypeAlias = Literal[
    "invalid", "forbidden", "unknown", "already-decided", "expired", "busy", "stale",
    "unavailable",
]

_STATUS_OF_CODE: dict[str, int] = {
    "invalid": 400,
    "forbidden": 403,
    "unknown": 404,
    "already-decided": 409,
    "busy": 409,
    "stale": 409,
    "expired": 410,
    "unavailable": 503,
}


class DeskError(Exception):
    """The desk refused: `code` says why (and the HTTP status), the message says it to a
    person; `details` are machine-readable extras (the schema errors, who decided)."""

    def __init__(self, code: DeskErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @classmethod
    def unavailable(cls, error: Exception) -> DeskError:
        """The database did not answer (`error`, SQLAlchemy's or the driver's): `unavailable`,
        saying why in the driver's own words."""
        return cls("unavailable", not_answering(error))

    @property
    def http_status(self) -> int:
        return _STATUS_OF_CODE[self.code]

    def to_json(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code, **self.details}


def _rounded(span: timedelta) -> timedelta:
    """A pause's time to live as its rule or TTL said it, from its expiry and the moment it
    was stored. The expiry is sealed in whole seconds, cut down, and the decision is stored a
    moment after the pause: so the span falls short by about a second, sometimes two. It is
    rounded up to the whole second, and past ten seconds up to a multiple of 5 s when that is
    at most 2 s away (most lifetimes people write are: "150s", "2h", "1d"; "12s" stays). The
    engine's own note ("within 2 min 30 s") names the lifetime itself; this one says the same
    but for a lifetime just short of a multiple of 5 s ("59s" reads "1 min")."""
    seconds = math.ceil(span.total_seconds())
    if seconds > 10 and seconds % 5 >= 3:
        seconds += 5 - seconds % 5
    return timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class InboxQuery:
    """What an inbox is asked for, by the names `GET /api/inbox` and the Inbox page's address
    give it: `tool` (a tool's name, or what a question asks), `requester` (an email) and
    `all` (`1`, `true` or `yes`, in any case: every pending decision, which is for admins)."""

    #: The query's parameters, as the API and the page's address name them.
    NAMES: ClassVar[tuple[str, str, str]] = ("tool", "requester", "all")

    tool: str = ""
    requester: str = ""
    everyone: bool = False

    @classmethod
    def read(cls, query: Mapping[str, str]) -> InboxQuery:
        """Raises `DeskError` ("invalid") for a control character in a filter: no tool or
        email has one, and PostgreSQL refuses a NUL outright."""
        tool, requester = query.get("tool", ""), query.get("requester", "")
        for name, value in (("tool", tool), ("requester", requester)):
            if any(ord(char) < 32 or ord(char) == 127 for char in value):
                raise DeskError(
                    "invalid", f"The {name} filter holds a control character: nothing matches it."
                )
        everyone = query.get("all", "").strip().lower() in ("1", "true", "yes")
        return cls(tool=tool, requester=requester, everyone=everyone)

    def query_string(self) -> str:
        """The query `read` reads back ("" for no filter): the Inbox page's address."""
        given = (self.tool, self.requester, "1" if self.everyone else "")
        named = zip(self.NAMES, given, strict=True)
        return urlencode([(key, value) for key, value in named if value])


def waiting_now(waiting_for: str, escalated_to: Sequence[str]) -> str:
    """What a decision waits for, with whom its escalation added (`escalated_to`, empty
    before it fired): "Waiting for finance; escalated to admin"."""
    if not escalated_to:
        return waiting_for
    return f"{waiting_for}; escalated to {any_of_approvers(escalated_to)}"


def waiting_for_requester(name: str) -> str:
    """What a decision no rule governs waits for: whoever asked ("Waiting for Rita")."""
    return f"Waiting for {name or 'the person who asked'}"


def expiry_note(
    paused_at: datetime, expires_at: datetime | None, decided_by: str = "", *,
    approved_by: Sequence[str] = (), quorum: int = 1,
) -> str:  # fmt: skip
    """ "Expired: nobody decided within 1 day." for a decision paused and expiring then; for
    one `decided_by` someone in time whose batch the rest of did not come before the expiry
    (the agent takes no answer past it), that they did, and why nothing ran all the same; for
    a quorum some approved short of it (`approved_by`), who did and how far it got."""
    within = (
        "in time" if expires_at is None
        else f"within {describe_duration(_rounded(expires_at - paused_at))}"
    )  # fmt: skip
    if decided_by:
        return (
            f"Expired: {decided_by} decided it in time, but the rest of its batch was not "
            f"decided {within}, so nothing ran."
        )
    return expiry_words(within, approved_by, quorum)


def expiry_note_of(decision: Any) -> str:
    """`expiry_note` of a stored decision that expired (its row, or an `InboxItem`), naming
    whoever decided it in time, if someone did, or, from an `InboxItem`'s votes, who
    approved a quorum short of it."""
    decider = decision.decided_by_name or decision.decided_by or ""
    approved_by = decision.approved_by if isinstance(decision, InboxItem) else ()
    return expiry_note(decision.created_at, decision.expires_at, decider,
                       approved_by=approved_by, quorum=decision.quorum)  # fmt: skip


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Vote:
    """One person's approval (or the rejection that decided)."""

    email: str
    name: str
    approved: bool
    at: datetime
    #: How they were verified when they voted: the engine checks a cosigner as that person.
    verified_by: AuthMethod = "none"
    token_name: str = ""
    #: Their roles: an account's as it holds them now (signed in with a password or a token:
    #: roles are read again on every request); a sign-in proxy's or the demo's as verified
    #: when they voted (nothing holds them since).
    roles: frozenset[str] = frozenset()
    #: Verified by an account that has since been removed: their approval counts for nothing.
    removed: bool = False
    #: Counts towards the quorum: the desk marks an approval the rule in force no longer
    #: allows (it stays on record, counting for nothing).
    counts: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"email": self.email, "name": self.name, "approved": self.approved,
                "at": _when(self.at)}  # fmt: skip

    def identity(self) -> Identity:
        """The voter as they were verified when they voted, with the roles they hold now."""
        return Identity(
            email=self.email, method=self.verified_by, name=self.name, roles=self.roles,
            token_name=self.token_name,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class InboxItem:
    """A decision as the inbox lists it."""

    decision_id: str
    thread_id: str
    item_id: str
    kind: Literal["tool", "question"]
    #: The tool's name, or the question's definition id (or its message).
    name: str
    summary: str
    args: Any
    requester_email: str
    requester_name: str
    rule: str | None
    waiting_for: str
    quorum: int
    votes: tuple[Vote, ...]
    status: str
    created_at: datetime
    expires_at: datetime | None
    decided_by: str | None = None
    decided_by_name: str | None = None
    outcome: str | None = None
    reminded_at: datetime | None = None
    #: When its rule's escalation added `escalated_to` (as `approvers`) to who may decide.
    escalated_at: datetime | None = None
    escalated_to: tuple[str, ...] = ()
    escalate_at: datetime | None = None
    #: The arguments an approver changed the call to before approving it (outcome
    #: `edited`); `None` otherwise.
    edited_args: Any = None
    #: A rule's own decision (outcome `auto`): whether it approved; `None` for any other, or
    #: one stored before the verdict was kept.
    auto_approved: bool | None = None

    @property
    def waiting_now(self) -> str:
        """`waiting_for` as it stands: once escalated, with who else may decide now
        ("Waiting for finance; escalated to admin")."""
        return waiting_now(self.waiting_for, self.escalated_to if self.escalated_at else ())

    @property
    def withdrawn(self) -> bool:
        """Cancelled by whoever asked, when someone else was to decide it (their Withdraw)."""
        return (
            self.outcome == "cancelled"
            and self.decided_by == self.requester_email
            and self.waiting_for != waiting_for_requester(self.requester_name)
        )

    @property
    def escalation(self) -> str:
        """ "escalated to admin after 2 h" once it was; "" before."""
        if self.escalated_at is None:
            return ""
        after = (self.escalate_at or self.escalated_at) - self.created_at
        return escalation_note(self.escalated_to, after)

    @property
    def expiry_note(self) -> str:
        """What the requester reads once it expired: "Expired: nobody decided within 1 day."."""
        return expiry_note_of(self)

    @property
    def approvals(self) -> tuple[Vote, ...]:
        """The approvals that count towards the quorum (as the desk marked them)."""
        return tuple(vote for vote in self.votes if vote.approved and vote.counts)

    @property
    def approved_by(self) -> tuple[str, ...]:
        """Who gave `approvals`, by name (their email where they have none)."""
        return tuple(vote.name or vote.email for vote in self.approvals)

    @property
    def deciders(self) -> dict[str, str]:
        """Who settled it, email -> name, in order: for an approval a quorum's approvers, then
        whoever decided; for anything else whoever decided alone (a rejection is not its
        earlier approvers'); nobody for an expiry or a rule's decision."""
        if not self.decided_by:
            return {}
        people: dict[str, str] = {}
        if self.outcome in ("approved", "edited"):
            people = {vote.email: vote.name or vote.email for vote in self.approvals}
        people.setdefault(self.decided_by, self.decided_by_name or self.decided_by)
        return people

    @property
    def progress(self) -> str:
        """Quorum progress for a person: "1 of 2: Sam approved"; "" without a quorum."""
        return self.progress_for("")

    def progress_for(self, viewer_email: str) -> str:
        """`progress` as `viewer_email` reads it: once they approved, the tally and who else
        did, "1 of 2" or "2 of 3, with Sam" (they know they approved)."""
        if self.quorum <= 1:
            return ""
        approvals = self.approvals
        tally = f"{len(approvals)} of {self.quorum}"
        others = [vote.name or vote.email for vote in approvals if vote.email != viewer_email]
        if viewer_email and len(others) < len(approvals):
            return f"{tally}, with {', '.join(others)}" if others else tally
        return f"{tally}: {', '.join(others)} approved" if others else tally

    def to_json(self) -> dict[str, Any]:
        return {
            "decisionId": self.decision_id,
            "threadId": self.thread_id,
            "interruptId": self.item_id,
            "kind": self.kind,
            "name": self.name,
            "summary": self.summary,
            "args": self.args,
            "requester": {"email": self.requester_email, "name": self.requester_name},
            "rule": self.rule,
            "waitingFor": self.waiting_now,
            "quorum": {
                "needed": self.quorum,
                "approvals": [v.to_json() for v in self.approvals],
                "progress": self.progress,
            },  # fmt: skip
            "status": self.status,
            "outcome": self.outcome,
            "decidedBy": self.decided_by,
            "editedArgs": self.edited_args,
            "waitingSince": _when(self.created_at),
            "expiresAt": _when(self.expires_at),
            "remindedAt": _when(self.reminded_at),
            "escalatedAt": _when(self.escalated_at),
            # Whom its rule escalates to is stored from the start: said once it happened.
            "escalatedTo": list(self.escalated_to) if self.escalated_at is not None else [],
            "note": self.escalation,
        }


@dataclass(frozen=True, slots=True)
class PastDecision:
    """A decision someone took part in, as their history lists it: what it was and how it
    ended (`item`), and when they acted (their answer, or their approval towards a quorum)."""

    item: InboxItem
    acted_at: datetime
    #: A rejection's reason ("" for none, and for any other end).
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return self.item.to_json() | {"actedAt": _when(self.acted_at), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SettledRequest:
    """A request someone made that another person settled, or that expired: how it ended
    (`item`), when, and the title of the conversation it was made in."""

    item: InboxItem
    settled_at: datetime
    title: str
    #: A rejection's reason ("" for none, and for any other end).
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation as the conversations page lists it."""

    thread_id: str
    title: str
    status: ConversationStatus
    waiting_for: str
    owner_email: str
    owner_name: str
    updated_at: datetime
    created_at: datetime
    error: str | None = None
    version: int = 0
    #: How its latest settled decision ended (the list says "transfer: Rejected by Ada"),
    #: when the list was read with it; `None` for none.
    last_decision: InboxItem | None = None
    #: Every settled decision of the pause `last_decision` belongs to, oldest first (a batch
    #: ends in several: "pay_invoice ×3: 2 approved by you, 1 rejected by Ada").
    last_pause: tuple[InboxItem, ...] = ()

    @property
    def waits_for_owner(self) -> bool:
        """It waits for whoever started it (a decision no rule governs is theirs)."""
        return self.status == "waiting" and self.waiting_for == waiting_for_requester(
            self.owner_name
        )

    def to_json(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "threadId": self.thread_id,
            "title": self.title,
            "status": self.status,
            "waitingFor": self.waiting_for,
            "owner": {"email": self.owner_email, "name": self.owner_name},
            "error": self.error,
            "createdAt": _when(self.created_at),
            "updatedAt": _when(self.updated_at),
        }
        if (last := self.last_decision) is not None:
            summary["lastDecision"] = {
                "name": last.name, "outcome": last.outcome, "decidedBy": last.decided_by,
            }  # fmt: skip
        return summary


@dataclass(frozen=True, slots=True)
class ConversationView:
    """A stored conversation: its summary, its client state (JSON) and its decisions."""

    summary: ConversationSummary
    state: str
    decisions: tuple[InboxItem, ...] = ()
    #: The viewer may only look (and decide what is theirs to decide).
    read_only: bool = False
    #: A run is going on in it now (the desk's, or a page's): `state` is as it stood when
    #: last stored, mid-run, and a newer version follows.
    running: bool = False
    #: The message its owner sent while decisions were pending, kept for them to send
    #: ("" for none, and to anyone else).
    held: str = ""

    @property
    def pending(self) -> list[InboxItem]:
        """Its decisions still to make, those of the current pause."""
        return [item for item in self.decisions if item.status == "pending"]

    def to_json(
        self,
        messages: list[dict[str, Any]],
        schemas: Mapping[str, dict[str, Any]],
        refusals: Mapping[str, dict[str, str]] | None = None,
        current: Sequence[InboxItem] | None = None,
    ) -> dict[str, Any]:
        """`schemas`: `Desk.answer_schemas`, by interrupt id; `refusals`: why the agent
        refused the last answer to a decision that waits again (`Desk.refusals`);
        `current`: the pause's decisions in the order asked (`Desk.current`: the pending ones,
        then listed as `decisions`, and those whose answers the desk holds for the rest of
        their batch, listed apart as `heldAnswers`; `pending` alone when `None`)."""
        refused = refusals or {}
        listed = self.pending if current is None else current
        return {
            **self.summary.to_json(),
            "messages": messages,
            "decisions": [
                item.to_json() | {"answerSchemas": schemas.get(item.item_id),
                                  "refusal": refused.get(item.item_id)}
                for item in listed if item.status == "pending"
            ],
            "heldAnswers": [item.to_json() for item in listed if item.status != "pending"],
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Answer:
    """A decision as someone gives it to the desk (from the inbox, a card, the HTTP API)."""

    kind: Literal["approve", "reject", "cancel", "answer"]
    payload: Any = None
    has_payload: bool = False
    edited_args: Any = None
    has_edited_args: bool = False

    @classmethod
    def read(cls, body: Any) -> Answer:
        """From the HTTP API's JSON: `{"approved": true|false, "payload"?, "editedArgs"?}`,
        `{"cancelled": true}` or `{"value": …}`. Raises `DeskError("invalid")`."""
        if not isinstance(body, dict):
            raise DeskError("invalid", "The body must be a JSON object.")
        if body.get("cancelled") is True:
            if len(body) > 1:
                raise DeskError("invalid", "A cancellation takes no other field.")
            return cls(kind="cancel")
        if "value" in body:
            if len(body) > 1:
                raise DeskError("invalid", 'An answer to a question is `{"value": …}` alone.')
            return cls(kind="answer", payload=body["value"], has_payload=True)
        approved = body.get("approved")
        if not isinstance(approved, bool):
            raise DeskError(
                "invalid",
                'Give {"approved": true|false} (with "payload" and "editedArgs" as the tool '
                'asks), {"cancelled": true}, or {"value": …} for a question.',
            )
        unknown = sorted(set(body) - {"approved", "payload", "editedArgs"})
        if unknown:
            # The usual slip is a payload's field beside `approved` ("reason"): say where it
            # goes, with the body as it would be, its fields named (cut short), not echoed.
            named = [key if len(key) <= 40 else f"{key[:39]}…" for key in unknown[:5]]
            moved = ", ".join(f"{json.dumps(key)}: …" for key in named)
            raise DeskError(
                "invalid",
                f"Unknown field(s): {', '.join(named)}. What a tool asks with a decision "
                f'goes in "payload" ({{"approved": {json.dumps(approved)}, "payload": '
                f"{{{moved}}}}}), where the conversation's answerSchemas say it takes one.",
            )
        # Neither a payload nor arguments are null: an item's own JSON shows `"editedArgs":
        # null` for none, and an answer copying that shape (or a script's empty payload
        # written as null) means none too.
        body = {key: value for key, value in body.items() if value is not None or key == "approved"}
        if "editedArgs" in body and not approved:
            raise DeskError("invalid", "Edited arguments go with an approval only.")
        return cls(
            kind="approve" if approved else "reject",
            payload=body.get("payload"),
            has_payload="payload" in body,
            edited_args=body.get("editedArgs"),
            has_edited_args="editedArgs" in body,
        )


@dataclass(frozen=True, slots=True)
class DecideResult:
    """What a decision did: `decided` (the continuation is under way), or `waiting` for more
    approvals (quorum)."""

    status: Literal["decided", "waiting"]
    item: InboxItem
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "decision": self.item.to_json()}


def arguments_line(args: Any) -> str:
    """Arguments in one short line: `recipient=Ada, amount=5000`, as they read stored
    (`spelled_out`: lists and notices show it to the people who decide)."""
    if isinstance(args, Mapping):
        parts = [f"{key}={_short(value)}" for key, value in args.items()]
        line = ", ".join(parts)
    elif args is None:
        line = ""
    elif isinstance(args, str):  # a free-text answer: as much of it as the line takes
        line = one_line(args.replace("\x00", " "))
    else:
        line = _short(args)
    line = spelled_out(line)
    return line if len(line) <= 200 else line[:199] + "…"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = one_line(text.replace("\x00", " "))  # a body's newlines too
    return text if len(text) <= 60 else text[:59] + "…"
