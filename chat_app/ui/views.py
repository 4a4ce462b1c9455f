"""What the page shows, computed from the headless client's state. Pure Python, no Reflex.

Owns the view dataclasses (`MessageView`, `ToolCardView`, `DecisionView`, `NoticeView`) and
`build_views`. Reflex renders these with `rx.foreach`, so every field is a plain, typed
value; the protocol rules stay in `chat_app.client`, this module only decides what a person
sees: labels, pretty JSON, which controls a card has, and the fields of its forms.
"""

from __future__ import annotations

import json
import operator
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from chat_app.client import (
    AnsweredQuestion,
    ChatMessage,
    ClientState,
    GenericInterrupt,
    InterruptItem,
    Submission,
    ToolApprovalInterrupt,
    ToolCallPart,
    UnboundInterrupt,
)
from chat_app.desk import InboxItem, SettledRequest
from chat_app.desk.records import expiry_note
from chat_app.interrupts import (
    CANCELLED_RESULT,
    DEFAULT_DENIED_RESULT,
    INTERRUPT_PAYLOAD_METADATA_KEY,
    POLICY_METADATA_KEY,
    DecisionProblem,
    InterruptKind,
    edited_args_of,
    parse_js_date,
    read_decision,
)
from chat_app.trust import cancel_refusal
from chat_app.trust.identity import spelled_out
from chat_app.trust.policy import all_of, editable_shown

from .forms import FORM_ERROR_KEY, FormField, answer_lines, form_fields

STATUS_LABELS = {
    "streaming": "Preparing",
    "running": "Running",
    "awaiting-approval": "Awaiting approval",
    "approved": "Approved",
    "rejected": "Rejected",
    "cancelled": "Cancelled",
    "expired": "Expired",
    "done": "Done",
    "error": "Error",
    "abandoned": "No result",
    "stopped": "Stopped",
}
STATUS_COLORS = {
    "streaming": "gray",
    "running": "blue",
    "awaiting-approval": "amber",
    "approved": "green",
    "rejected": "red",
    "cancelled": "gray",
    "expired": "gray",
    "done": "green",
    "error": "red",
    "abandoned": "gray",
    "stopped": "gray",
}


@dataclass
class DecisionView:
    """One pending decision, with the controls and forms it needs."""

    id: str
    kind: str = "approval"  # approval | generic | unbound
    title: str = ""
    #: The card's accessible name when its title alone does not tell it from its batch's
    #: others ("Approve pay invoice? invoice INV-1001, supplier Acme…"); "" for the title.
    label: str = ""
    message: str = ""
    can_resolve: bool = False
    error: str = ""
    #: For approvals: the proposed arguments, one `key: value` row each.
    arguments: list[list[str]] = field(default_factory=list)
    approve_fields: list[FormField] = field(default_factory=list)
    reject_fields: list[FormField] = field(default_factory=list)
    edit_fields: list[FormField] = field(default_factory=list)
    #: The edit form's note of the arguments its rule keeps as they are ("" for none).
    edit_note: str = ""
    can_edit: bool = False
    #: Which panel is open: "" | "approve" | "reject" | "edit".
    panel: str = ""
    #: For generic interrupts: the response form and the display payload.
    response_fields: list[FormField] = field(default_factory=list)
    payload_title: str = ""
    payload_items: list[str] = field(default_factory=list)
    payload_json: str = ""
    #: The answer already given while the rest of the batch is pending ("" when none), and
    #: which kind of answer it is (its icon): approved, rejected, cancelled or answered.
    staged: str = ""
    staged_tone: str = ""
    #: Past its expiry (or refused as expired by the server): nothing can be answered.
    expired: bool = False
    #: Closed unanswered once its time was up ("Expired: nobody decided within 1 day."):
    #: the conversation goes on without it, so there is nothing to start over. "" otherwise.
    expired_note: str = ""
    #: Someone else decides this one: who ("Waiting for finance — you asked for this, so
    #: someone else approves it"); "" when the person looking may decide it.
    waiting: str = ""
    #: When it expires if nobody decides, for whoever waits on someone else ("Expires 6 Dec,
    #: 12:04 UTC, if nobody decides."); "" without an expiry or when theirs to decide. A
    #: date, not "in 23 h": the card is not drawn again as time passes.
    expires: str = ""
    #: A quorum's approvals so far, for whoever may still approve ("1 of 2: Sam approved");
    #: "" without a quorum.
    progress: str = ""
    #: Someone else decides it, but the person looking asked for it: they may withdraw it
    #: (else nothing would unblock their conversation until that someone answers).
    can_withdraw: bool = False
    #: Cancel is offered: on an approval under the policy, only to whoever asked (anyone
    #: else says no by rejecting it; the server refuses their cancel).
    can_cancel: bool = True
    #: The answer a failed continuation held, which Retry sends again ("Approved, not sent:
    #: …"); "" when none.
    held: str = ""
    #: That answer was given at the desk (by whoever `held` names): nobody answers anew here,
    #: only a Retry sends it.
    held_only: bool = False
    #: The first answerable decision takes the keyboard focus (its Approve, or its Submit),
    #: unless a decision's form is open: Enter there would answer beside the draft. A
    #: field of the view rather than a page var, so that a memoized message row depends on
    #: its own data only.
    focus: bool = False
    #: How many of the tab's answers to it the server refused (`FormMemory.replies`): the
    #: card redraws on each, so its "Sending…" ends even when the refusal is the same again
    #: (an answer that goes changes the card anyway; counting those too cost the page a
    #: part of the transcript sent again per approval).
    replies: int = 0


@dataclass
class ToolCardView:
    id: str
    name: str
    arguments: str  # pretty JSON
    status: str
    status_label: str
    status_color: str
    result: str = ""  # pretty JSON or text
    reason: str = ""  # rejection reason or error
    #: "Approved by policy small-refunds" when a rule decided the call and nobody was asked;
    #: "Approved by Ada" when someone other than the person looking answered it.
    decided_by: str = ""
    #: What an approval with changes changed before it ran: "amount: 5000 → 4000".
    changes: list[str] = field(default_factory=list)
    decision: DecisionView = field(default_factory=lambda: DecisionView(id=""))
    has_decision: bool = False


@dataclass
class MessageView:
    id: str
    #: "user", "assistant", or "question": a question answered earlier, `text` asking it.
    role: str
    text: str
    tools: list[ToolCardView] = field(default_factory=list)
    #: A question's answer, one line a field ("Shipping speed: express").
    answer: list[str] = field(default_factory=list)
    #: How a question ended: "Answered", "Answered by Ada", "Cancelled", or its expiry.
    note: str = ""


@dataclass
class Views:
    messages: list[MessageView]
    #: Decisions not attached to a tool call (generic and unbound), in batch order.
    loose_decisions: list[DecisionView]
    #: How many decisions a person can still answer, and how many the batch has in all.
    open_count: int
    batch_size: int
    #: Whether Approve all / Reject all apply (every answerable item is a payloadless approval).
    bulk_ok: bool
    batch_errors: list[str]
    #: Whether Cancel all applies: the person may cancel every open decision (an approver
    #: may not withdraw someone else's request).
    cancel_all_ok: bool = True
    #: Of the open decisions, how many hold an answer a failed send kept (Retry sends it,
    #: or they answer anew): when all do, nothing is needed but the Retry.
    unsent: int = 0


def pretty(value: Any) -> str:
    """A value shown whole (a tool's arguments and result, a payload, an audit record's
    data): text as it is, anything else as indented JSON, as it reads stored (`spelled_out`)."""
    if isinstance(value, str):
        return spelled_out(value)
    return spelled_out(json.dumps(value, indent=2, ensure_ascii=False))


def _argument_rows(args: Any) -> list[list[str]]:
    if isinstance(args, Mapping):
        return [[spelled_out(str(key)), _short(value)] for key, value in args.items()]
    return [["arguments", _short(args)]] if args is not None else []


#: How much of a call's arguments a card's accessible name carries.
LABEL_CHARACTERS = 160


def _label(title: str, arguments: Sequence[Sequence[str]]) -> str:
    """A card's accessible name: its title and its arguments in brief, so that a screen
    reader moving through a batch (three invoices) tells one card from the next."""
    if not arguments:
        return ""
    label = f"{title} " + ", ".join(f"{key} {value}" for key, value in arguments)
    return label if len(label) <= LABEL_CHARACTERS else label[: LABEL_CHARACTERS - 1] + "…"


def _short(value: Any) -> str:
    """A value as a card shows it: text as it is, anything else as JSON; either way as it
    reads in the order it is stored (`spelled_out`)."""
    return spelled_out(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _apply_drafts(
    fields: list[FormField],
    draft: Mapping[str, str | list[str]] | None,
    errors: Mapping[str, str],
) -> list[FormField]:
    """A form's rows as its draft left them. A draft is the whole form as it was posted, so
    a box it does not hold was unticked: it stays so, though the proposal ticked it."""
    for row in fields:
        if draft is not None and row.path not in draft and row.kind in ("checks", "boolean"):
            row.chosen, row.value = [], ""
        elif draft is not None and row.path in draft:
            raw = draft[row.path]
            if row.kind == "checks":
                row.chosen = list(raw) if isinstance(raw, list) else [raw]
            elif row.kind == "boolean":
                row.value = "true" if raw else ""
            else:
                row.value = raw[-1] if isinstance(raw, list) and raw else str(raw)
        row.error = errors.get(row.path, "")
    return fields


@dataclass
class FormMemory:
    """What the page remembers of one decision's forms: open panel, drafts, field errors."""

    panel: str = ""
    drafts: dict[str, dict[str, Any]] = field(default_factory=dict)  # form -> path -> raw
    errors: dict[str, dict[str, str]] = field(default_factory=dict)  # form -> path -> message
    message: str = ""
    #: The answers to it from this tab that the server refused (`DecisionView.replies`).
    replies: int = 0


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


def _under_policy(item: InterruptItem) -> bool:
    """The item paused under a policy, which names who asked for it."""
    return isinstance((item.metadata or {}).get(POLICY_METADATA_KEY), Mapping)


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
        return [] if before == after else [f"arguments: {_short(before)} → {_short(after)}"]
    missing = object()
    lines = []
    for key in [*before, *(key for key in after if key not in before)]:
        old, new = before.get(key, missing), after.get(key, missing)
        if old != new:
            shown = ["—" if value is missing else _short(value) for value in (old, new)]
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


def form_schema(
    item: InterruptItem, form: str, limits: EditLimit | None = None
) -> tuple[Mapping[str, Any] | None, Any]:
    """The schema of one of a decision's forms, and the value its fields start from. The
    edit form holds only the arguments `limits` (its rule's) lets an approver change."""
    if isinstance(item, ToolApprovalInterrupt):
        schemas = {
            "approve": item.approve_schema,
            "reject": item.reject_schema,
            "edit": _editable_schema(item.input_schema, limits),
        }
        return schemas.get(form), item.original_args if form == "edit" else None
    if isinstance(item, GenericInterrupt):
        return item.response_schema, None
    return None, None


#: The rule that judges an edit of an item, and the arguments it lets an approver change.
EditLimit = tuple[str, tuple[str, ...]]
#: An item's `EditLimit`; `None` when any argument may change.
EditLimits = Callable[[InterruptItem], EditLimit | None]

#: Keywords that tie properties to each other or count them: a form cut down to some of
#: the properties could not meet them, so a schema with one is shown whole.
_WHOLE_SCHEMA_KEYWORDS = (
    "$ref", "allOf", "anyOf", "oneOf", "not", "if", "dependencies", "dependentSchemas",
    "dependentRequired", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "unevaluatedProperties",
)  # fmt: skip


def pause_edit_limits(item: InterruptItem) -> EditLimit | None:
    """The `EditLimit` the pause's policy metadata gave (`editable`), for a page that knows
    no policy of its own (`chat_app.ui.session.edit_limits` reads the rule in force)."""
    editable = editable_shown(item.metadata)
    if editable is None:
        return None
    shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
    return str(shown.get("rule") or "") if isinstance(shown, Mapping) else "", editable


def _editable_schema(
    schema: Mapping[str, Any] | None, limits: EditLimit | None
) -> Mapping[str, Any] | None:
    """`schema` with only the properties `limits` lets be changed (`None` when none may
    be). A schema not made of plain properties stays whole: the server refuses what the
    rule does not allow, and the card says why."""
    if limits is None or schema is None:
        return schema
    if not limits[1]:
        return None
    properties = schema.get("properties")
    if (schema.get("type") != "object" or not isinstance(properties, Mapping)
            or any(key in schema for key in _WHOLE_SCHEMA_KEYWORDS)):  # fmt: skip
        return schema
    editable = limits[1]
    if not any(name in properties for name in editable):
        return None
    required = schema.get("required")
    return {
        **schema,
        "properties": {name: sub for name, sub in properties.items() if name in editable},
        **({"required": [name for name in required if name in editable]}
           if isinstance(required, list) else {}),
    }  # fmt: skip


def edited_arguments(item: InterruptItem, value: Any, limits: EditLimit | None) -> Any:
    """The arguments an edit form's `value` approves: the fields the form holds in place of
    the call's own, which stand for every other argument (the form leaves out those the
    rule, `limits`, does not let be changed)."""
    if limits is None or not isinstance(item, ToolApprovalInterrupt):
        return value
    original = item.original_args
    held = _editable_schema(item.input_schema, limits)
    if held is None or held is item.input_schema:
        return value  # the form held every argument: the server says what it refuses
    if not isinstance(value, Mapping) or not isinstance(original, Mapping):
        return value
    fields = held.get("properties") or {}
    merged: dict[str, Any] = {}
    for name in dict.fromkeys([*original, *value]):
        if name in fields:
            if name in value:
                merged[name] = value[name]
        elif name in original:
            merged[name] = original[name]
    return merged


def edit_note(item: InterruptItem, limits: EditLimit | None) -> str:
    """What the edit form says of the arguments it leaves out, by their fields' titles:
    "Rule large-transfers lets an approver change only Amount."; "" when any may be
    changed."""
    if limits is None:
        return ""
    rule, editable = limits
    by = f"Rule {spelled_out(rule)}" if rule else "The policy"
    if not editable:
        return f"{by} lets nobody change the arguments."
    schema = item.input_schema if isinstance(item, ToolApprovalInterrupt) else None
    properties = (schema or {}).get("properties")
    titled = properties if isinstance(properties, Mapping) else {}

    def title(name: str) -> str:
        field = titled.get(name)
        given = field.get("title") if isinstance(field, Mapping) else None
        return spelled_out(given if isinstance(given, str) and given else name)

    return f"{by} lets an approver change only {all_of([title(n) for n in editable])}."


#: Who decides an item, when it is not the person looking: the sentence to show, or "".
WhoDecides = Callable[[InterruptItem], str]
#: Whether the person looking asked for an item.
AskedBy = Callable[[InterruptItem], bool]


def decision_view(
    item: InterruptItem,
    memory: FormMemory | None,
    now_ms: float,
    who_decides: WhoDecides | None = None,
    quorum: Mapping[str, str] | None = None,
    edits: EditLimits | None = None,
) -> DecisionView:
    """What the card of `item` shows. `quorum` holds the approvals that need more than one
    approver, with their progress (item id -> "1 of 2: Sam approved"): they offer no edit,
    as each approver approves the arguments as shown (the desk refuses an edited one).
    `edits` says which arguments the edit form may hold (`pause_edit_limits` without it)."""
    quorum = quorum or {}
    limits = (edits or pause_edit_limits)(item)
    memory = memory or FormMemory()
    waiting = who_decides(item) if who_decides is not None else ""
    # A problem of a whole form (no field to show it under: `FORM_ERROR_KEY`) is the card's.
    # The open panel's form (a question's is its response form).
    whole = memory.errors.get(memory.panel or "response", {}).get(FORM_ERROR_KEY, "")
    error = item.error.message if item.error else memory.message or whole
    expired = item.expired(now_ms)
    expired_note = (item.expiry_note or "") if item.status == "expired" else ""
    staged, staged_tone = staged_answer(item)
    expires = _expires(item) if waiting and not expired else ""

    def fields(form: str) -> list[FormField]:
        schema, initial = form_schema(item, form, limits)
        if not schema:
            return []
        rows = form_fields(schema, initial)
        for row in rows:
            row.control_id = f"{item.id}--{form}--{row.path}"
            row.error_round = memory.replies
        if form == "edit":  # each field says what was proposed, once changed
            for row in rows:
                if row.kind not in ("group", "list", "checks"):
                    row.proposed, row.has_proposed = row.value, True
        return _apply_drafts(rows, memory.drafts.get(form), memory.errors.get(form, {}))

    if isinstance(item, ToolApprovalInterrupt):
        tool = _tool_words(item)
        edit_fields = fields("edit")
        # A question only to whoever may answer it; the others read what it waits for.
        title = f"Approval needed: {tool}" if waiting else f"Approve {tool}?"
        arguments = _argument_rows(item.original_args)
        return DecisionView(
            id=item.id,
            replies=memory.replies,
            kind="approval",
            title=title,
            label=_label(title, arguments),
            message=spelled_out(item.message or ""),
            can_resolve=item.can_resolve,
            error=error,
            arguments=arguments,
            approve_fields=fields("approve"),
            reject_fields=fields("reject"),
            edit_fields=edit_fields,
            edit_note=edit_note(item, limits),
            # A tool that takes no arguments has nothing to edit.
            can_edit=bool(edit_fields) and item.id not in quorum,
            panel=memory.panel,
            staged=staged,
            staged_tone=staged_tone,
            expired=expired,
            expired_note=expired_note,
            waiting=waiting,
            expires=expires,
            progress=quorum.get(item.id, ""),
        )
    if isinstance(item, GenericInterrupt):
        title, items, rest = _payload_parts(display_payload(item))
        return DecisionView(
            id=item.id,
            replies=memory.replies,
            kind="generic",
            title=title or "Your input is needed",
            message=spelled_out(item.message or ""),
            can_resolve=item.can_resolve,
            error=error,
            response_fields=fields("response"),
            payload_title=title,
            payload_items=items,
            payload_json=rest,
            staged=staged,
            staged_tone=staged_tone,
            expired=expired,
            expired_note=expired_note,
            waiting=waiting,
            expires=expires,
        )
    assert isinstance(item, UnboundInterrupt)
    return DecisionView(
        id=item.id,
        replies=memory.replies,
        kind="unbound",
        title="Paused elsewhere",
        message=spelled_out(item.message or item.reason),
    )


def _expires(item: InterruptItem) -> str:
    """When `item` expires, as its card says it: "Expires 6 Dec, 12:04 UTC, if nobody
    decides."; "" without an expiry."""
    at_ms = parse_js_date(item.expires_at) if item.expires_at else None
    if at_ms is None:
        return ""
    at = datetime.fromtimestamp(at_ms / 1000, UTC)
    return f"Expires {at.day} {at:%b}, {at:%H:%M} UTC, if nobody decides."


#: The statuses of a decision still to answer here (not staged in a batch, not submitted).
OPEN_STATUSES = ("pending", "error")


def what_is_asked(item: InterruptItem) -> str:
    """How a notice names a decision: its question, or what it approves, as its card does."""
    if item.message:
        return spelled_out(item.message.rstrip("."))
    if isinstance(item, ToolApprovalInterrupt):
        return f"Approve {_tool_words(item)}?"
    return "A question"


def _tool_words(item: ToolApprovalInterrupt) -> str:
    return item.tool_name.replace("_", " ")


def display_payload(item: GenericInterrupt) -> Any:
    """What a question shows beside its form: its typed payload, or the one its metadata
    carries when the client does not know its definition."""
    if item.payload is None and isinstance(item.metadata, Mapping):
        return item.metadata.get(INTERRUPT_PAYLOAD_METADATA_KEY)
    return item.payload


def _payload_parts(payload: Any) -> tuple[str, list[str], str]:
    """A display payload as a title, a list of bullet items, and any other fields as JSON."""
    if not isinstance(payload, Mapping):
        return "", [], pretty(payload) if payload is not None else ""
    rest = dict(payload)
    title = rest.pop("title", "")
    items: list[str] = []
    for name in ("changes", "items", "steps"):
        value = rest.get(name)
        if isinstance(value, list) and all(isinstance(entry, str) for entry in value):
            items = [spelled_out(entry) for entry in value]
            rest.pop(name)
            break
    return spelled_out(str(title)), items, pretty(rest) if rest else ""


@dataclass
class _Cached:
    message: ChatMessage
    view: MessageView | None
    #: The ids of the message's tool calls (a decision attached to one makes it uncacheable).
    calls: tuple[str, ...]


class _Entries:
    """One refresh's entries, one a message (None: not cached), and what `ViewCache` reads
    of them without going through them again: the views in order, where each is, where
    each tool call is, and where the first uncached message is."""

    def __init__(self) -> None:
        self.entries: list[_Cached | None] = []
        self.views: list[MessageView] = []
        #: `views_before[i]`: how many of `views` the first `i` entries have.
        self.views_before: list[int] = [0]
        self.positions: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.first_uncached = sys.maxsize

    def add(self, entry: _Cached | None, view: MessageView | None) -> None:
        """The next message's entry (None: not cached) and its view, if it has one."""
        at = len(self.entries)
        self.entries.append(entry)
        if entry is None:
            self.first_uncached = min(self.first_uncached, at)
        else:
            for call in entry.calls:
                self.calls[call] = at
        if view is not None:
            self.positions[view.id] = len(self.views)
            self.views.append(view)
        self.views_before.append(len(self.views))

    def first(self, count: int) -> _Entries:
        """The first `count` entries' own (positions past them are left: see `positions`)."""
        kept = _Entries()
        kept.entries = self.entries[:count]
        kept.views_before = self.views_before[: count + 1]
        kept.views = self.views[: kept.views_before[-1]]
        # Taken over (this one is not read again), or started afresh with nothing reused.
        kept.positions = self.positions if count else {}
        kept.calls = {call: at for call, at in self.calls.items() if at < count}
        kept.first_uncached = self.first_uncached if self.first_uncached < count else sys.maxsize
        return kept


class ViewCache:
    """The views of messages no decision is attached to, kept between refreshes.

    `ChatMessage` is a frozen value, so the view of a message without a decision depends on
    the message alone: a refresh builds views for the messages that changed (the current
    turn), not for the whole history. A snapshot from the server keeps the objects of the
    messages it brings back equal; one that differs in what the page does not show (its
    metadata) is a new object, matched by id and what the page shows.

    The messages a refresh finds as they were at the last one (the same objects, in the same
    places: the history before the turn) are not looked up one by one: `reusable` finds how
    many lead the list, and their views are taken as they were.

    Answered questions' rows are kept too (`question`), by item id, while the question and
    who answered it stay the same.
    """

    def __init__(self) -> None:
        self._views: dict[str, _Cached] = {}
        #: The messages of the last refresh, and what is known of its entries.
        self._shown: Sequence[ChatMessage] = ()
        self._last = _Entries()
        self._next = _Entries()
        #: Answered questions' views by item id, with the question and who answered it.
        self._questions: dict[str, tuple[AnsweredQuestion, str | None, MessageView]] = {}

    def reusable(self, messages: Sequence[ChatMessage], by_call: AbstractSet[str]) -> int:
        """How many of `messages`, from the first, are the last refresh's own, cached, and
        with no decision attached now (to none of the tool calls `by_call`).

        Read from what the last refresh noted (where its first uncached message and each
        tool call were), not entry by entry: in the app the history is out of the
        processor's caches between refreshes, and every object read costs. With
        `positions`, at 2,000 messages (timing marks in the app) a click's first refresh
        2.35 → 2.03 ms and its second 1.02 → 0.65 ms."""
        last = self._last
        count = min(len(self._shown), len(messages), last.first_uncached)
        for call in by_call:
            at = last.calls.get(call)
            if at is not None and at < count:
                count = at
        shown = self._shown
        if all(map(operator.is_, shown[:count], messages[:count])):
            return count
        index = 0
        while messages[index] is shown[index]:
            index += 1
        return index

    def reused(self, count: int) -> list[MessageView]:
        """The views of the first `count` messages of the last refresh (see `reusable`)."""
        self._next = self._last.first(count)
        return list(self._next.views)

    def get(self, message: ChatMessage) -> tuple[bool, MessageView | None]:
        """The view kept for `message`, if any (then it counts as shown by this refresh)."""
        entry = self._views.get(message.id)
        if entry is None or not (entry.message is message or _shown_alike(entry.message, message)):
            return False, None
        if entry.message is not message:
            entry = self._views[message.id] = _Cached(message, entry.view, entry.calls)
        self._next.add(entry, entry.view)
        return True, entry.view

    def put(self, message: ChatMessage, view: MessageView | None) -> None:
        """Keep the view built for `message` (which `get` did not find)."""
        entry = _Cached(message, view, tuple(part.id for part in message.tool_calls))
        self._views[message.id] = entry
        self._next.add(entry, view)

    def skip(self, view: MessageView | None) -> None:
        """A message the cache does not keep (a decision is attached to it), and its view."""
        self._next.add(None, view)

    def rotate(
        self, messages: Sequence[ChatMessage], answered: Sequence[AnsweredQuestion]
    ) -> None:
        """Remember this refresh's messages; forget, now and then, the messages it did not
        show and the questions no longer `answered` in it."""
        self._shown, self._last, self._next = messages, self._next, _Entries()
        if len(self._views) > 2 * len(messages) + 64:
            self._views = {e.message.id: e for e in self._last.entries if e is not None}
        if len(self._questions) > 2 * len(answered) + 64:
            kept = {question.item.id for question in answered}
            self._questions = {k: v for k, v in self._questions.items() if k in kept}

    def positions(self) -> Mapping[str, int]:
        """Where each view of the last refresh (`rotate`d) is in its list of views, by
        message id (and, for views since gone, where they were: check the id there)."""
        return self._last.positions

    def question(self, question: AnsweredQuestion, decided_by: Mapping[str, str]) -> MessageView:
        """`question_view(question, decided_by)`, built again only when the question or who
        answered it changed: a conversation that asks the time at every turn keeps hundreds,
        and building them all at every refresh took a third of the backend's work on an
        Approve click at 2,000 messages."""
        item_id = question.item.id
        by = decided_by.get(item_id)
        kept = self._questions.get(item_id)
        if kept is not None and kept[1] == by and (kept[0] is question or kept[0] == question):
            if kept[0] is not question:  # read back from JSON: the next refresh finds it by `is`
                self._questions[item_id] = (question, by, kept[2])
            return kept[2]
        view = question_view(question, decided_by)
        self._questions[item_id] = (question, by, view)
        return view


def _shown_alike(one: ChatMessage, other: ChatMessage) -> bool:
    return one.role == other.role and one.parts == other.parts


def build_views(
    state: ClientState,
    memory: Mapping[str, FormMemory],
    *,
    focus: bool = True,
    cache: ViewCache | None = None,
    who_decides: WhoDecides | None = None,
    asked_by: AskedBy | None = None,
    decided_by: Mapping[str, str] | None = None,
    quorum: Mapping[str, str] | None = None,
    changes: Mapping[str, list[str]] | None = None,
    can_retry: bool = True,
    retry_by: str = "",
    at_desk: Mapping[str, str] | None = None,
    edits: EditLimits | None = None,
) -> Views:
    """Everything the transcript and the decision cards show.

    With `focus`, the first decision a person can answer (in reading order) takes the focus.
    `who_decides` says which decisions belong to someone else (they count as not open);
    `asked_by`, which of those the person looking asked for (they may withdraw them);
    `decided_by`, who answered which approval when it was someone else ("Approved by Ada",
    by the approval's id), for its tool call's card; `quorum`, the approvals that need more
    than one approver, with their progress (`decision_view`); `changes`, what an approval
    with changes changed (`edits`), for its tool call's card; `can_retry`, whether the person
    looking may send a failed continuation again (its cards then say what it holds), and
    when not, `retry_by`, who may (the cards then say which answers from the desk it holds);
    `at_desk`, the answers given at the desk (`given_at_desk`), which only Retry sends;
    `edits`, which arguments each approval's edit form may hold (`decision_view`).
    """
    decisions = {item.id: item for item in state.interrupts}
    by_call = {
        item.tool_call_id: item
        for item in state.interrupts
        if isinstance(item, ToolApprovalInterrupt)
    }
    now_ms = time.time() * 1000  # one clock for every card, the count and the focus
    known = _Cards(
        by_call, memory, now_ms, who_decides, decided_by or {}, quorum or {}, changes or {},
        edits,
    )  # fmt: skip
    reused = cache.reusable(state.messages, by_call.keys()) if cache is not None else 0
    messages: list[MessageView] = cache.reused(reused) if cache is not None else []
    fresh = len(messages)  # the reused views have no decision: they were cached
    for message in state.messages[reused:]:
        cacheable = cache is not None and not any(part.id in by_call for part in message.tool_calls)
        found, view = cache.get(message) if cache is not None and cacheable else (False, None)
        if not found:
            view = _message_view(message, known)
            if cache is not None:
                if cacheable:
                    cache.put(message, view)
                else:
                    cache.skip(view)
        if view is not None:
            messages.append(view)
    if cache is not None:
        cache.rotate(state.messages, state.answered)
    loose = [known.decision(item) for item in state.interrupts if item.id not in known.attached]
    theirs = "" if can_retry else retry_by or "the requester"
    given = at_desk or {}
    others = {item.id for item in state.interrupts if who_decides is not None and who_decides(item)}
    held = held_answers(state, given, retry_by=theirs, decided_by_others=others)
    #: Answers a failed continuation holds that only a Retry sends: given at the desk, or
    #: the requester's withdrawal of what someone else decides.
    held_only = {
        item_id for item_id in held if item_id in given or item_id in others or theirs
    }  # fmt: skip
    # Decided at the desk while the rest of its batch is not: the desk sends it with them,
    # and nobody answers it again here (the desk would refuse it as decided).
    with_batch = {
        item_id: f"{given[item_id]}; the desk sends this answer with the rest of the batch."
        for item_id in answered_at_desk(state.interrupts, given) - held.keys()
    }
    held.update(with_batch)
    held_only.update(with_batch)
    if state.answered_before:  # the ledger holds these answers: nothing is left to do
        for replayed in state.interrupts:
            if replayed.error is not None and replayed.error.code == "conflict":
                held[replayed.id] = IN_THE_LEDGER
                held_only.add(replayed.id)
    answerable = [
        item
        for item in decisions.values()
        if item.can_resolve
        and not item.expired(now_ms)
        and not (who_decides is not None and who_decides(item))
        and item.id not in held_only
    ]
    # Approve all would answer in the tab what the desk holds decided (`with_batch`): the
    # rest go one by one, through the desk.
    bulk_ok = (
        bool(answerable) and not with_batch and state.can_approve_all and state.can_reject_all
    )
    open_ids = {item.id for item in answerable if item.status in OPEN_STATUSES}
    cards = [t.decision for m in messages[fresh:] for t in m.tools if t.has_decision] + loose
    if state.answered and cache is None:
        rows = [question_view(question, known.decided_by) for question in state.answered]
        messages = _with_answers(messages, state, rows)
    elif state.answered and cache is not None:
        rows = [cache.question(question, known.decided_by) for question in state.answered]
        messages = _with_answers(messages, state, rows, cache.positions())
    if focus:
        first = next((d for d in cards if d.id in open_ids), None)
        if first is not None:
            # A form left open (a reload, the person back from another page) keeps the
            # keyboard: no Approve takes it, where Enter would answer beside the draft.
            first.focus = not any(d.panel for d in cards if d.id in open_ids)
    for card in cards:
        card.held = held.get(card.id, "")
        card.held_only = card.id in held_only
    for shown in messages[fresh:]:
        for tool in shown.tools:
            if tool.decision.id in with_batch:  # decided: not awaiting it
                tool.status_label, tool.status_color = "Decided", "blue"
                # An approval with changes runs the call so: the arguments shown are the
                # proposal, as on a card decided and sent.
                tool.changes = list(known.changes.get(tool.decision.id, ()))
            elif tool.has_decision and tool.decision.held == IN_THE_LEDGER:
                tool.status_label, tool.status_color = "In the ledger", "amber"
            elif tool.has_decision and tool.decision.held:
                tool.status_label, tool.status_color = "Not sent", "amber"
            elif tool.has_decision and tool.decision.staged:  # answered: goes with the rest
                tone = tool.decision.staged_tone
                tool.status_label = STATUS_LABELS.get(tone, "Decided")
                tool.status_color = STATUS_COLORS.get(tone, "blue")
    if asked_by is not None:
        for card in cards:
            item = decisions.get(card.id)
            if item is None or card.held_only:  # only a Retry is left to do
                continue
            if card.waiting and not card.expired and item.can_resolve:
                card.can_withdraw = asked_by(item)
            elif card.kind == "approval":
                asked = asked_by(item) if _under_policy(item) else None
                card.can_cancel = cancel_refusal(approval=True, asked=asked) is None
    return Views(
        messages=messages,
        loose_decisions=loose,
        open_count=len(open_ids),
        batch_size=len(answerable),
        bulk_ok=bulk_ok,
        cancel_all_ok=not with_batch
        and all(card.can_cancel for card in cards if card.id in open_ids),
        unsent=len(open_ids & held.keys()),
        # "One or more … are invalid" only repeats what the items themselves show; a
        # replay's refusal, what the status row says of it.
        batch_errors=[] if state.answered_before else _tries(
            error.message
            for error in state.interrupt_errors
            if error.code != "item-validation-failed"
        ),
    )


def _tries(messages: Iterable[str]) -> list[str]:
    """Each failure once, in order, with how often it came. The client keeps each failed
    send's error (`docs/protocol.md` §4.8): the same words twice say no more, but a Retry
    that failed again shows it did something."""
    counted = Counter(messages)
    return [
        message if times == 1 else f"{message.rstrip('.')} ({times} tries)."
        for message, times in counted.items()
    ]


def _with_answers(
    views: list[MessageView],
    state: ClientState,
    rows: Sequence[MessageView],
    positions: Mapping[str, int] | None = None,
) -> list[MessageView]:
    """`views` with each answered question's row (`rows`, one for each of `state.answered`)
    after the message it followed (first when it followed none, last when that message is
    gone), questions at one place in the order they were answered.

    `positions`, where each view is by message id (`ViewCache.positions`), saves reading
    every view for its id (see `ViewCache.reusable` for what that bought)."""
    if positions is None:
        positions = {view.id: at for at, view in enumerate(views)}
    first: list[MessageView] = []
    following: dict[int, list[MessageView]] = {}
    for question, row in zip(state.answered, rows, strict=True):
        if not question.after:
            first.append(row)
            continue
        at = positions.get(question.after)
        if at is None or at >= len(views) or views[at].id != question.after:
            return _placed_in_order(views, state, rows)
        following.setdefault(at, []).append(row)
    # Every question follows a message shown: the rows go in between runs of the views.
    placed, start = first, 0
    for at in sorted(following):
        placed += views[start : at + 1]
        placed += following[at]
        start = at + 1
    placed += views[start:]
    return placed


def _placed_in_order(
    views: list[MessageView], state: ClientState, rows: Sequence[MessageView]
) -> list[MessageView]:
    """`_with_answers` when some question follows a message without a view, or one gone: it
    goes after the view before that message's place, or last."""
    index = {message.id: i for i, message in enumerate(state.messages)}
    end = len(state.messages)
    # A question sits half a place after its message; the sort is stable, so views keep
    # their order, and questions at one place the order they were answered in.
    placed = [(index.get(view.id, end), view) for view in views] + [
        (index.get(q.after, end if q.after else -1) + 0.5, row)
        for q, row in zip(state.answered, rows, strict=True)
    ]
    return [view for _, view in sorted(placed, key=lambda pair: pair[0])]


def question_view(question: AnsweredQuestion, decided_by: Mapping[str, str]) -> MessageView:
    """An answered question as the conversation shows it: what was asked, what was answered
    and how it ended."""
    item = question.item
    title = _payload_parts(display_payload(item))[0]
    # The payload's title tells apart questions asked alike ("Release 2026.12").
    asked = ": ".join(part for part in (title, spelled_out(item.message or "")) if part)
    asked = asked or "A question"
    decision = read_decision(question.resolution, "generic")
    answer: list[str] = []
    if isinstance(decision, DecisionProblem):
        note = "Answered"
    elif decision.kind == "cancel":
        # An expiry is the cancellation sent once its time was up, with its note.
        note = item.expiry_note or decided_by.get(item.id, "Cancelled")
    else:
        answer = answer_lines(item.response_schema, decision.payload)
        note = decided_by.get(item.id, "Answered")
    return MessageView(
        id=f"answer-{item.id}", role="question", text=asked, answer=answer, note=note
    )


@dataclass(frozen=True)
class _Cards:
    """What one `build_views` knows for every tool call's card (see its arguments)."""

    by_call: Mapping[str, ToolApprovalInterrupt]
    memory: Mapping[str, FormMemory]
    now_ms: float
    who_decides: WhoDecides | None
    decided_by: Mapping[str, str]
    quorum: Mapping[str, str]
    changes: Mapping[str, list[str]]
    edits: EditLimits | None = None
    #: The ids of the decisions shown on a tool call's card, added to as they are built.
    attached: set[str] = field(default_factory=set)

    def decision(self, item: InterruptItem) -> DecisionView:
        return decision_view(
            item, self.memory.get(item.id), self.now_ms, self.who_decides, self.quorum,
            self.edits,
        )  # fmt: skip


def _message_view(message: ChatMessage, cards: _Cards) -> MessageView | None:
    if message.role not in ("user", "assistant"):
        return None
    tools = [_tool_card(part, cards) for part in message.parts if isinstance(part, ToolCallPart)]
    # Written out as everything else a person reads here: an override in what someone
    # typed, or in a reply quoting it, would reverse the rest of the bubble.
    text = spelled_out(message.text)
    if not text and not tools:
        return None
    return MessageView(id=message.id, role=message.role, text=text, tools=tools)


def _tool_card(part: ToolCallPart, cards: _Cards) -> ToolCardView:
    item = cards.by_call.get(part.id)
    card = ToolCardView(
        id=part.id,
        name=part.name,
        arguments=pretty(part.input if part.input is not None else part.arguments),
        status=part.status,
        status_label=STATUS_LABELS.get(part.status, part.status),
        status_color=STATUS_COLORS.get(part.status, "gray"),
        result=pretty(part.output) if part.has_output and part.status == "done" else "",
        reason=_reason(part),
    )
    if part.decided_by_rule:
        verdict = "Approved" if part.decision == "approved" else "Rejected"
        card.decided_by = f"{verdict} by policy {part.decided_by_rule}"
    elif item is None and part.approval_id is not None:
        # Only once the client holds the answer too: the desk's record of it can come first.
        card.decided_by = cards.decided_by.get(part.approval_id, "")
        card.changes = list(cards.changes.get(part.approval_id, ()))
        if part.status == "cancelled" and card.decided_by.startswith(WITHDRAWN):
            card.status_label = WITHDRAWN
        if part.status == "expired" and card.decided_by:
            # Decided in time, its batch not: the desk's words say who did, and why nothing
            # ran; the agent's ("nobody decided") are of the batch.
            card.reason, card.decided_by = card.decided_by, ""
    if item is not None:
        cards.attached.add(item.id)
        card.decision = cards.decision(item)
        card.has_decision = True
        if card.decision.expired:
            # Whatever was clicked, nothing ran: the server refused the expired answer, or
            # nobody decided in time.
            card.status, card.status_label, card.status_color = "expired", "Expired", "gray"
            if card.decision.expired_note:
                card.reason = ""  # the decision card says it, once
    return card


def _reason(part: ToolCallPart) -> str:
    """What the card says after "Reason:" (or as the error): "" for a one-click Reject or a
    cancellation, whose results are the protocol's stock words, not a reason anyone gave (the
    card's status says what happened)."""
    if (part.status, part.error) in _STOCK_RESULTS:
        return ""
    return part.error or ""


#: The results the protocol sends for an answer without words of its own.
_STOCK_RESULTS = {
    ("rejected", DEFAULT_DENIED_RESULT["error"]),
    ("cancelled", CANCELLED_RESULT["error"]),
}


def split_turn(messages: list[MessageView]) -> tuple[list[MessageView], list[MessageView]]:
    """The transcript up to and including the last user message, and the turn after it.

    Only the turn changes while a person answers decisions and the agent resumes.
    """
    last_user = next(
        (index for index in range(len(messages) - 1, -1, -1) if messages[index].role == "user"),
        -1,
    )
    return messages[: last_user + 1], messages[last_user + 1 :]


#: The history is cut at multiples of this many messages (see `split_transcript`).
ARCHIVE_BLOCK = 64


@dataclass
class Transcript:
    """The transcript as the page holds it: three lists, each sent again only when it changes.

    `archive` ends at a multiple of `ARCHIVE_BLOCK` messages, so it changes once in that many
    messages; `recent` runs from there to the last user message, and `turn` is the rest.
    Answering a decision sends the turn; a new message sends `recent` and the turn; the whole
    history goes over the wire again only when the archive grows by a block.
    """

    archive: list[MessageView]
    recent: list[MessageView]
    turn: list[MessageView]


def split_transcript(messages: list[MessageView]) -> Transcript:
    settled, turn = split_turn(messages)
    cut = len(settled) - len(settled) % ARCHIVE_BLOCK
    return Transcript(archive=settled[:cut], recent=settled[cut:], turn=turn)


@dataclass
class ArchiveBlock:
    """`ARCHIVE_BLOCK` messages of the archive, shown as one box (keyed by its first message).

    The page renders a block again only when it changed, which after it is cut is never, and
    the browser skips laying out and painting a block while it is off screen, so the cost of
    an update on the page does not grow with the history (`components.transcript`).
    """

    id: str
    messages: list[MessageView]


def archive_blocks(archive: list[MessageView]) -> list[ArchiveBlock]:
    """The archive cut into its blocks, oldest first."""
    return [
        ArchiveBlock(id=archive[start].id, messages=archive[start : start + ARCHIVE_BLOCK])
        for start in range(0, len(archive), ARCHIVE_BLOCK)
    ]


def streaming_preview(messages: Sequence[ChatMessage]) -> tuple[str, str, list[str]]:
    """The id, text and tool names of the assistant message being streamed (the last one)."""
    if not messages or messages[-1].role != "assistant":
        return "", "", []
    last = messages[-1]
    return last.id, spelled_out(last.text), [part.name for part in last.tool_calls]
