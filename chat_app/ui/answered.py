"""How answers read on a page: who answered what and how it ended ("Approved by Ada and
you", "Withdrawn"), what an edit changed ("amount: 5000 → 4000"), answers held for a Retry,
and requests settled in other conversations. Pure Python, no Reflex; `views` puts these on
cards, and the Inbox, Conversations and Audit pages use them for their lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chat_app.client import (
    ChatMessage,
    ClientState,
    InterruptItem,
    Submission,
    ToolApprovalInterrupt,
)
from chat_app.desk import InboxItem, SettledRequest
from chat_app.desk.records import expiry_note
from chat_app.interrupts import DecisionProblem, InterruptKind, edited_args_of, read_decision
from chat_app.trust.identity import spelled_out
from chat_app.trust.policy import all_of


def shown_value(value: Any) -> str:
    """A value as a card shows it: text as it is, anything else as JSON; either way as it
    reads in the order it is stored (`spelled_out`)."""
    return spelled_out(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def staged_answer(item: InterruptItem) -> tuple[str, str]:
    """How a staged answer reads while the rest of the batch is pending, and its kind (for
    its icon); ("", "") when nothing is staged."""
    if item.status != "staged" or item.resolution is None:
        return "", ""
    label, outcome = _answer_label(item, item.resolution)
    # The card still shows the arguments proposed: the answer says what it changes.
    changed = answered_edits([item]).get(item.id)
    return (f"{label} ({'; '.join(changed)})" if changed else label), outcome


def _answer_label(item: InterruptItem, entry: Mapping[str, Any]) -> tuple[str, str]:
    """How the answer `entry` to `item` reads ("Approved with changes"), and its outcome."""
    kind: InterruptKind = "approval" if isinstance(item, ToolApprovalInterrupt) else "generic"
    decision = read_decision(entry, kind)
    if isinstance(decision, DecisionProblem):
        return "Answered", "answered"
    label = ANSWER_LABELS["edited" if decision.edited else decision.outcome]
    return label, decision.outcome


#: What a card says of an answer the ledger held already when it was sent again.
IN_THE_LEDGER = "Already in the ledger, from an earlier send: not sent again (it may not have run)."


def held_answers(
    state: ClientState,
    at_desk: Mapping[str, str] | None = None,
    *,
    retry_by: str = "",
    decided_by_others: AbstractSet[str] = frozenset(),
) -> dict[str, str]:
    """The answers of a continuation that failed and that Retry sends again, by item: what
    each card says meanwhile. The person's own answers from this page leave its controls open
    (they may answer anew), but for a request someone else decides (`decided_by_others`: its
    withdrawal, "Withdrawn, not sent"), which only Retry sends; one given at the desk
    (`at_desk`: "Approved by Ada", "Approved by you") is named as whoever gave it, and only
    Retry sends it. `retry_by`: whose Retry that is, when it is not the person looking (their
    own answers are named as theirs: "Withdrawn by Rita, not sent: Rita's Retry sends it
    again.")."""
    held = state.manager.retry_submission if state.can_retry else None
    if held is None:
        return {}
    items = {item.id: item for item in state.interrupts}
    given = at_desk or {}
    retry = f"{retry_by}'s Retry" if retry_by else "Retry"
    notes: dict[str, str] = {}
    for entry in held.resolutions:
        item = items.get(str(entry.get("interruptId", "")))
        if item is None:
            continue
        if item.id in given:
            notes[item.id] = f"{given[item.id]}, not sent: {retry} sends it again."
        elif retry_by or item.id in decided_by_others:
            label, outcome = _answer_label(item, entry)
            label = "Withdrawn" if outcome == "cancelled" else label
            by = f" by {retry_by}" if retry_by and retry_by != "the requester" else ""
            notes[item.id] = f"{label}{by}, not sent: {retry} sends it again."
        else:
            label, _ = _answer_label(item, entry)
            notes[item.id] = f"{label}, not sent: Retry sends it again, or answer anew."
    return notes


def answered_at_desk(items: Iterable[InterruptItem], given: Mapping[str, str]) -> set[str]:
    """Of the client's `items`, those still open in it whose answer the desk holds (`given`,
    from `given_at_desk`): the desk sends them with the rest of their batch."""
    return {item.id for item in items if item.id in given and item.answerable}


def given_at_desk(items: Iterable[InboxItem], viewer_email: str) -> dict[str, str]:
    """The answers of `items` given at the desk (decided there, not in a page's own run),
    however they were given and by whom, the person looking named "you": item id ->
    "Approved by Ada". The desk sends these; a page that held one sends nothing of it."""
    found: dict[str, str] = {}
    for item in items:
        answer = how_answered(item, viewer_email) if item.status == "decided" else None
        if answer is not None:
            found[item.item_id] = answer.text
    return found


#: How the page names an answer, by its outcome (as the desk records it).
ANSWER_LABELS = {
    "approved": "Approved",
    "edited": "Approved with changes",
    "rejected": "Rejected",
    "cancelled": "Cancelled",
    "answered": "Answered",
}


#: A request cancelled by whoever asked, while someone else was to decide it (their card's
#: Withdraw): so named everywhere it is shown, the card's status too.
WITHDRAWN = "Withdrawn"


def answered_by(items: Iterable[InboxItem], viewer_email: str) -> dict[str, str]:
    """Who answered each tool call or question of `items` decided at the desk, for its card
    or line: item id -> "Approved by Sam and Olive" (a quorum's approvers, then whoever
    decided), the person looking named "you"; for a tool call in their own conversation, none
    when they alone answered (they know), nor for a policy's decision (its card names the
    rule). In someone else's conversation "Approved by you" says the approver's part, as a
    quorum's "Approved by Sam and you" does."""
    found: dict[str, str] = {}
    for item in items:
        if item.status == "pending" or not item.decided_by:
            continue
        if item.outcome == "expired":  # decided in time, but its batch was not
            who = "you" if item.decided_by == viewer_email else item.decided_by_name
            found[item.item_id] = expiry_note(item.created_at, item.expires_at,
                                              who or item.decided_by)  # fmt: skip
            continue
        answer = how_answered(item, viewer_email)
        if answer is None:
            continue
        # A question's line always says how it ended, "by you" too, as the lists do; so does
        # a withdrawal's (its card's status says what the lists say: `_tool_card`).
        own = item.requester_email == viewer_email and item.kind != "question"
        if answer.people != ("you",) or not own or answer.label == WITHDRAWN:
            found[item.item_id] = answer.text
    return found


@dataclass(frozen=True, slots=True)
class Answered:
    """How a settled decision ended, and who ended it, as the page names them."""

    #: "Approved", "Approved with changes", "Rejected", "Cancelled", "Withdrawn", "Answered".
    label: str
    #: Who: a quorum's approvers, then whoever decided; the person looking is "you".
    people: tuple[str, ...]

    @property
    def text(self) -> str:
        """ "Approved by Sam and you"."""
        return f"{self.label} by {all_of(list(self.people))}"


def arguments_changed(before: Any, after: Any) -> list[str]:
    """What an edit changed, one line a field: "amount: 5000 → 4000" ("—" where a field was
    missing); a value that is not an object of fields compares whole."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        if before == after:
            return []
        return [f"arguments: {shown_value(before)} → {shown_value(after)}"]
    missing = object()
    lines = []
    for key in [*before, *(key for key in after if key not in before)]:
        old, new = before.get(key, missing), after.get(key, missing)
        if old != new:
            shown = ["—" if value is missing else shown_value(value) for value in (old, new)]
            lines.append(f"{spelled_out(str(key))}: {shown[0]} → {shown[1]}")
    return lines


def answered_edits(items: Iterable[InterruptItem]) -> dict[str, list[str]]:
    """What the answers given to open `items` (a tab's own, before they go) change: item id
    -> `arguments_changed`, for approvals answered with changed arguments."""
    found: dict[str, list[str]] = {}
    for item in items:
        if not isinstance(item, ToolApprovalInterrupt) or item.resolution is None:
            continue
        after = edited_args_of(item.resolution)
        if after is not None and (changed := arguments_changed(item.original_args, after)):
            found[item.id] = changed
    return found


def submitted_edits(
    submission: Submission | None, messages: Sequence[ChatMessage]
) -> dict[str, list[str]]:
    """What the answers of a continuation in flight (`submission`) change: approval id ->
    `arguments_changed`, each against its tool call's arguments in `messages` (the last
    turn's, looked for from the end)."""
    edited = {
        str(entry.get("interruptId")): after
        for entry in (submission.resolutions if submission is not None else ())
        if (after := edited_args_of(entry)) is not None
    }
    found: dict[str, list[str]] = {}
    for message in reversed(messages):
        for part in message.tool_calls:
            if part.approval_id in edited:
                after = edited.pop(part.approval_id)
                before = part.input if part.input is not None else _parsed(part.arguments)
                if changed := arguments_changed(before, after):
                    found[part.approval_id] = changed
        if not edited:
            break
    return found


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def edits(items: Iterable[InboxItem]) -> dict[str, list[str]]:
    """The tool calls of `items` approved with changed arguments, for their cards: item id ->
    what changed (`arguments_changed`)."""
    return {
        item.item_id: changed
        for item in items
        if item.kind == "tool" and item.outcome == "edited" and item.edited_args is not None
        if (changed := arguments_changed(item.args, item.edited_args))
    }


def how_answered(item: InboxItem, viewer_email: str) -> Answered | None:
    """How a person settled `item` (None: it is pending, expired, or a rule decided it),
    naming its `deciders`, the person looking as "you"."""
    label = ANSWER_LABELS.get(item.outcome or "")
    if label is None or not item.decided_by or item.status == "pending":
        return None
    if item.withdrawn:  # an approver's cancel, or one of a request of one's own, is none
        label = WITHDRAWN
    deciders = item.deciders.items()
    return Answered(label, tuple("you" if email == viewer_email else n for email, n in deciders))


def how_it_ended(item: InboxItem, viewer_email: str) -> str:
    """A settled decision's end in words, for the lists: "Rejected by Olive", "Approved by
    you and Sam", "Approved by policy small-refunds", "Expired" (the person looking: "you")."""
    answered = how_answered(item, viewer_email)
    if answered is not None:
        return answered.text
    if item.outcome == "auto" and item.rule:
        verdict = {True: "Approved", False: "Rejected", None: "Decided"}[item.auto_approved]
        return f"{verdict} by policy {item.rule}"
    return (item.outcome or "closed").capitalize()  # expired, or closed with nobody named


#: What a conversation is called before its first message gives it a title.
UNTITLED = "Untitled conversation"


def settled_elsewhere(settled: SettledRequest, viewer_email: str) -> tuple[str, str]:
    """How a request of the viewer's in another conversation ended, then which it was, each a
    sentence: ("Rejected by Ada: not this quarter.", "Your transfer_funds request in “pay
    acme”."); a question's: ("Answered by Sam.", "The question “How should order 42 ship?”
    in …"). The end first: on a phone it may be all there is room for."""
    item, title = settled.item, settled.title or UNTITLED  # one line already
    if item.outcome == "expired":  # said as every other channel says it
        ended = item.expiry_note
    else:
        ended = how_it_ended(item, viewer_email)
        ended += f": {settled.reason}" if settled.reason else ""
    what = f"Your {item.name} request" if item.kind == "tool" else f"The question “{item.name}”"
    return _sentence(ended), f"{what} in “{title}”."


def settled_news(
    found: Sequence[SettledRequest], since: datetime, seen: Mapping[str, datetime],
    overlap: timedelta,
) -> tuple[list[SettledRequest], datetime, dict[str, datetime]]:  # fmt: skip
    """Of `found` (read from `overlap` before `since`, the newest read so far), those not
    `seen` before; the new newest; and what to remember as seen: those within `overlap` of
    it, which the next read, looking as far back again, will find again."""
    fresh = [settled for settled in found if settled.item.decision_id not in seen]
    newest = max([since, *(settled.settled_at for settled in found)])
    kept = {**seen, **{settled.item.decision_id: settled.settled_at for settled in found}}
    return fresh, newest, {key: at for key, at in kept.items() if at >= newest - overlap}


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def mid_sentence(text: str) -> str:
    """`text` (how something ended: "Approved by Ada") to go on after other words: "approved
    by Ada"."""
    return text[:1].lower() + text[1:]
