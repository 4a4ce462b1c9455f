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
from datetime import UTC, datetime
from typing import Any

from chat_app.client import (
    AnsweredQuestion,
    ChatMessage,
    ClientState,
    GenericInterrupt,
    InterruptItem,
    ToolApprovalInterrupt,
    ToolCallPart,
    UnboundInterrupt,
)
from chat_app.interrupts import (
    CANCELLED_RESULT,
    DEFAULT_DENIED_RESULT,
    INTERRUPT_PAYLOAD_METADATA_KEY,
    POLICY_METADATA_KEY,
    DecisionProblem,
    parse_js_date,
    read_decision,
)
from chat_app.trust import cancel_refusal
from chat_app.trust.identity import spelled_out

from .answered import (
    IN_THE_LEDGER,
    WITHDRAWN,
    answered_at_desk,
    held_answers,
    shown_value,
    staged_answer,
)
from .edit_form import EditLimits, edit_note, form_schema, pause_edit_limits
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
        return [[spelled_out(str(key)), shown_value(value)] for key, value in args.items()]
    return [["arguments", shown_value(args)]] if args is not None else []


#: How much of a call's arguments a card's accessible name carries.
LABEL_CHARACTERS = 160


def _label(title: str, arguments: Sequence[Sequence[str]]) -> str:
    """A card's accessible name: its title and its arguments in brief, so that a screen
    reader moving through a batch (three invoices) tells one card from the next."""
    if not arguments:
        return ""
    label = f"{title} " + ", ".join(f"{key} {value}" for key, value in arguments)
    return label if len(label) <= LABEL_CHARACTERS else label[: LABEL_CHARACTERS - 1] + "…"


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


def _under_policy(item: InterruptItem) -> bool:
    """The item paused under a policy, which names who asked for it."""
    return isinstance((item.metadata or {}).get(POLICY_METADATA_KEY), Mapping)


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
