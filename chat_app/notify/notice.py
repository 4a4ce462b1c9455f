"""What a notice says: `Notice` (one decision that needs someone, and why now; or how one
ended, for whoever asked) and `Recipient`.

A notice is built once, by the desk, and stored as JSON with each of its deliveries, so a
worker that sends it after a restart says exactly what was meant when it was queued. Every
channel renders from it alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from chat_app.interrupts import JSONValue

__all__ = [
    "DeliveryError",
    "Event",
    "OUTCOME_HEADINGS",
    "Notice",
    "NoticeKind",
    "Recipient",
    "in_words_utc",
    "iso_utc",
    "together_intro",
    "together_subject",
]

Event = Literal["decision-needed", "reminder", "escalated", "decided"]
NoticeKind = Literal["tool", "question"]

_EVENTS: tuple[Event, ...] = ("decision-needed", "reminder", "escalated", "decided")
#: The events that ask someone to decide: pointless, and misleading, once it is decided. An
#: event about an outcome would not be here, and would go out whatever the decision's state.
ASKING: frozenset[Event] = frozenset({"decision-needed", "reminder", "escalated"})
_KINDS: tuple[NoticeKind, ...] = ("tool", "question")
#: Mail clients and chat previews cut long subjects anyway; a bounded one stays readable.
_SUBJECT_LIMIT = 200


class DeliveryError(Exception):
    """A channel could not deliver a notice; the message says why (never a secret). The
    delivery is tried again later."""


def iso_utc(moment: datetime) -> str:
    """`2025-01-31T09:00:00Z`: the form every channel shows a time in."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: pass an aware one (UTC)")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def in_words_utc(moment: datetime, *, seconds: bool = False) -> str:
    """`Tue 1 Jan 2030, 13:00 UTC` (with `seconds`, `13:00:25 UTC`): a time as a person
    reads it in a message (the webhook's JSON keeps `iso_utc`)."""
    at = moment.astimezone(UTC)
    clock = f"{at:%H:%M:%S}" if seconds else f"{at:%H:%M}"
    return f"{at:%a} {at.day} {at:%b %Y}, {clock} UTC"


def _moment(value: object, field: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"notice {field}: expected an ISO time, got {value!r}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"notice {field}: {value!r} has no time zone")
    return moment.astimezone(UTC)


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) one space: a header's, a subject's."""
    return " ".join(text.split())


def bounded_line(text: str) -> str:
    """`one_line`, cut with an ellipsis at `_SUBJECT_LIMIT` characters: a subject's."""
    text = one_line(text)
    if len(text) > _SUBJECT_LIMIT:
        text = text[: _SUBJECT_LIMIT - 1].rstrip() + "…"
    return text


@dataclass(frozen=True, slots=True)
class Recipient:
    """A person a notice is for."""

    email: str
    name: str

    @property
    def display(self) -> str:
        """`Ada (ada@example.com)`, or the address alone."""
        return f"{self.name} ({self.email})" if self.name else self.email


#: How a `decided` notice heads each outcome.
OUTCOME_HEADINGS = {
    "approved": "Approved",
    "edited": "Approved with changes",
    "rejected": "Rejected",
    "cancelled": "Cancelled",
    "answered": "Answered",
    "expired": "Expired",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """One decision that needs someone (`decision-needed`, `reminder`, `escalated`), or how
    one ended, for whoever asked (`decided`)."""

    event: Event
    decision_id: str
    thread_id: str
    kind: NoticeKind
    #: The tool's name, or the question's.
    name: str
    #: The arguments on one line: `recipient=Ada, amount=5000`.
    summary: str
    args: JSONValue
    requester_email: str
    requester_name: str
    #: The policy rule that routes it, if any.
    rule: str | None
    #: Where the person answers it.
    link: str
    expires_at: datetime | None
    waiting_since: datetime
    #: Why this notice now, beyond the event: "Escalated to admin after 2 h"; "" for none.
    note: str
    #: Who is asked (told, for `decided`).
    recipients: tuple[Recipient, ...]
    #: `decided`: how it ended (`OUTCOME_HEADINGS`' keys), who decided it, by name and by
    #: email ("" for an expiry), and the reason a rejection gave ("" for none).
    outcome: str = ""
    decided_by: str = ""
    reason: str = ""
    decided_by_email: str = ""
    #: A quorum's: the approvals it needs (1: no quorum), and who has approved so far.
    quorum: int = 1
    approved_by: tuple[str, ...] = ()

    @property
    def expires_in_words(self) -> str:
        """When it expires, as a message says it ("" for never): to the second where it was
        given less than an hour (a minute is then much of its time)."""
        if self.expires_at is None:
            return ""
        short = self.expires_at - self.waiting_since < timedelta(hours=1)
        return in_words_utc(self.expires_at, seconds=short)

    @property
    def approvals(self) -> str:
        """How far a quorum has got, for those asked: "2 needed", "1 of 2: Ada approved";
        "" without one."""
        if self.quorum <= 1:
            return ""
        if not self.approved_by:
            return f"{self.quorum} needed"
        return f"{len(self.approved_by)} of {self.quorum}: {', '.join(self.approved_by)} approved"

    @property
    def requester(self) -> Recipient:
        return Recipient(email=self.requester_email, name=self.requester_name)

    @property
    def asks_for_decision(self) -> bool:
        """Whether it asks someone to decide (`ASKING`), so goes out only while the decision
        is pending."""
        return self.event in ASKING

    @property
    def what(self) -> str:
        """The tool with its arguments, or the question: `transfer (amount=5)`."""
        if self.kind == "tool" and self.summary:
            return f"{self.name} ({self.summary})"
        return self.name

    @property
    def heading(self) -> str:
        """What this notice is, in a word or two: `Approval needed`, `Answer needed`,
        `Reminder`, `Escalated`; how it ended, `Rejected`."""
        if self.event == "reminder":
            return "Reminder"
        if self.event == "escalated":
            return "Escalated"
        if self.event == "decided":
            return OUTCOME_HEADINGS.get(self.outcome, "Decided")
        return "Approval needed" if self.kind == "tool" else "Answer needed"

    def subject(self) -> str:
        """One line for an email subject or a chat preview: `Approval needed: transfer
        (recipient=Ada, amount=5000)`, `Answer needed: shipping`, `Reminder: …`,
        `Escalated: …`; how it ended, `Rejected: transfer (…)`."""
        return bounded_line(f"{self.heading}: {self.what}")

    def to_json(self) -> str:
        """The notice as stored in the outbox (`from_json` reads it back)."""
        return json.dumps(
            {
                "event": self.event,
                "decision_id": self.decision_id,
                "thread_id": self.thread_id,
                "kind": self.kind,
                "name": self.name,
                "summary": self.summary,
                "args": self.args,
                "requester_email": self.requester_email,
                "requester_name": self.requester_name,
                "rule": self.rule,
                "link": self.link,
                "expires_at": iso_utc(self.expires_at) if self.expires_at else None,
                "waiting_since": iso_utc(self.waiting_since),
                "note": self.note,
                "recipients": [{"email": r.email, "name": r.name} for r in self.recipients],
                "outcome": self.outcome,
                "decided_by": self.decided_by,
                "decided_by_email": self.decided_by_email,
                "reason": self.reason,
                "quorum": self.quorum,
                "approved_by": list(self.approved_by),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Notice:
        """Read what `to_json` wrote. Fields a newer version added are ignored, and the
        optional ones may be missing, so workers of two versions share one outbox.

        Raises:
            ValueError: not a notice.
        """
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a notice is a JSON object")

        def string(key: str) -> str:
            value = data.get(key)
            if not isinstance(value, str):
                raise ValueError(f"notice {key}: expected a string, got {value!r}")
            return value

        event = string("event")
        if event not in _EVENTS:
            raise ValueError(f"notice event: {event!r} is not one of {_EVENTS}")
        kind = string("kind")
        if kind not in _KINDS:
            raise ValueError(f"notice kind: {kind!r} is not one of {_KINDS}")
        rule = data.get("rule")
        note = data.get("note")
        expires = data.get("expires_at")
        recipients = data.get("recipients") or []
        if not isinstance(recipients, list):
            raise ValueError("notice recipients: expected a list")
        return cls(
            event=event,
            decision_id=string("decision_id"),
            thread_id=string("thread_id"),
            kind=kind,
            name=string("name"),
            summary=string("summary"),
            args=cast(JSONValue, data.get("args")),
            requester_email=string("requester_email"),
            requester_name=string("requester_name"),
            rule=rule if isinstance(rule, str) else None,
            link=string("link"),
            expires_at=_moment(expires, "expires_at") if expires is not None else None,
            waiting_since=_moment(data.get("waiting_since"), "waiting_since"),
            note=note if isinstance(note, str) else "",
            recipients=tuple(_recipient(item) for item in recipients),
            outcome=_optional(data, "outcome"),
            decided_by=_optional(data, "decided_by"),
            reason=_optional(data, "reason"),
            decided_by_email=_optional(data, "decided_by_email"),
            quorum=quorum if isinstance(quorum := data.get("quorum"), int) and quorum > 1 else 1,
            approved_by=tuple(name for name in approved if isinstance(name, str))
            if isinstance(approved := data.get("approved_by"), list) else (),
        )


def together_subject(notices: Sequence[Notice]) -> str:
    """The subject of notices of one conversation and event sent as one message (a batch's):
    `Approval needed: pay_invoice (…) and 2 more`; a single notice's own subject."""
    first = notices[0]
    if len(notices) == 1:
        return first.subject()
    if len({notice.heading for notice in notices}) == 1:
        heading = first.heading
    else:
        heading = "Decided" if first.event == "decided" else "Decisions needed"
    return bounded_line(f"{heading}: {first.what} and {len(notices) - 1} more")


def together_intro(notices: Sequence[Notice], *, to_requester: bool) -> str:
    """The line above the notices of such a message: who waits for how many decisions, or
    (`decided`) how they ended, said to whoever asked (`to_requester`: for a decision, one
    they are asked to make themselves) or to anyone else (an approver, a channel)."""
    first, count = notices[0], len(notices)
    if first.event == "decided":
        whose = "your conversation" if to_requester else f"{first.requester.display}'s conversation"
        return f"How {count} decisions in {whose} ended:"
    still = "still " if first.event == "reminder" else ""
    if to_requester:  # no rule asks anyone else: whoever asked decides their own
        return f"{count} decisions in your conversation {still}wait for you, asked together:"
    return (
        f"{first.requester.display} is {still}waiting for {count} decisions in one "
        "conversation, asked together:"
    )


def _optional(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _recipient(item: Any) -> Recipient:
    if not isinstance(item, dict) or not isinstance(item.get("email"), str):
        raise ValueError(f"notice recipient: expected {{email, name}}, got {item!r}")
    name = item.get("name")
    return Recipient(email=item["email"], name=name if isinstance(name, str) else "")
