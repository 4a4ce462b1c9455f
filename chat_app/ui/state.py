"""The chat page's Reflex state: a thin shell over the headless client.

Only plain, picklable data lives here (Reflex persists state to disk or redis); the live
`ChatClient` lives in `chat_app.ui.session`, keyed by the tab's token, and is rebuilt from
`_client_json` after a restart. Runs go on in background tasks: the text being streamed is
flushed into a small var every 50 ms, and the transcript list is rebuilt only when a message
is finished, so the bytes sent per token do not grow with the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast
from urllib.parse import unquote

import reflex as rx
from reflex.event import EventSpec
from reflex.istate.manager import get_state_manager
from reflex.vars.function import FunctionStringVar

from chat_app.client import (
    ANSWERED_BEFORE,
    RUNNING_ELSEWHERE,
    ChatClient,
    ClientError,
    ClientState,
    InterruptItem,
    UsageError,
)
from chat_app.desk import (
    Answer,
    DeskError,
    InboxItem,
    SettledRequest,
    decision_id_of,
    inbox_topic,
    thread_topic,
)
from chat_app.desk.desk import WATCH_SECONDS as PRESENCE_SECONDS
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.trust import Identity

from . import session as sessions
from .answered import (
    WITHDRAWN,
    answered_at_desk,
    answered_by,
    answered_edits,
    edits,
    given_at_desk,
    mid_sentence,
    settled_elsewhere,
    settled_news,
    submitted_edits,
)
from .components.settled import SettledRow
from .conversations_state import CHAT_PATHS, CONVERSATION_PREFIX, address
from .edit_form import edited_arguments, form_schema
from .forms import DRAFT_FIELD, FORM_ERROR_KEY, form_fields, read_form
from .guard import failure_message, guarded, guarded_task
from .identity_state import IdentityState, replace_address
from .views import (
    OPEN_STATUSES,
    ArchiveBlock,
    DecisionView,
    FormMemory,
    MessageView,
    WhoDecides,
    archive_blocks,
    build_views,
    split_transcript,
    streaming_preview,
    what_is_asked,
)

FLUSH_SECONDS = 0.05
#: How long an answer clicked while the tab's last action ends waits for that end (storing
#: the conversation, a moment) before it is refused as made during a run (`STILL_BUSY`).
ENDING_WAIT_SECONDS = 10.0
STILL_BUSY = "Your last action had not finished: the one after it was not sent. Try it again."
#: How many of the person's requests settled in other conversations the page lists at once
#: (the newest; the Conversations page has every one).
SETTLED_SHOWN = 3
#: How far back each read of them looks again: a decision's time is taken before its commit
#: (and workers' clocks differ), so one committed just after a read may be older than it.
SETTLED_OVERLAP = timedelta(seconds=30)
#: How long an answer's continuation may go without words before the answer in flight is
#: stored anyway (`InFlightRecord`).
RECORD_WAIT_SECONDS = 0.5


SUGGESTIONS = [
    "transfer 25 to Ada",
    "transfer 5000 to Ada",
    "refund 20 to order 42",
    "rotate production keys",
    "delete project apollo",
    "email ada@example.com about Launch",
    "ship order 42",
    "plan release",
    "pay invoices",
    "what time is it",
    "share my location",
    "deploy",
]
#: What a message held back is told: it stays in the box, and the desk keeps it for the
#: conversation's owner (`Desk.hold`), so their box holds it wherever they open it.
HELD_NOTICE = "Answer the pending decisions first — your message stays in the box, to send after."
WAITING_NOTICE = (
    "This conversation waits for a decision someone else makes — your message stays in the "
    "box, here and wherever you open this conversation, to send once they have decided or "
    "after you withdraw the request."
)
#: The same, when the decisions are made but sending them failed: Retry is what is left.
NOT_SENT_NOTICE = (
    "The decisions are made, but they were not sent — your message stays in the box; Retry "
    "above sends them, then send it."
)
#: What a message sent while the agent still answers is told: it waits in this tab's box (the
#: run may end in decisions, which hold it then, and say so at its next Send).
RUNNING_NOTICE = (
    "The agent is still answering — your message stays in the box; send it once the answer "
    "ends."
)
#: The tab's sessionStorage key of `ChatState.unconfirmed`.
UNCONFIRMED_KEY = "chat_app_unconfirmed"
#: How long a page's live loop waits for a notice before looking at the database anyway.
WATCH_SECONDS = 10.0
#: How often the live loop asks a page showing its owner's conversation whether it is in
#: view: a tab put in the background stops holding their notices back within this.
LOOK_SECONDS = 5.0
IN_VIEW = "document.visibilityState"
#: How `remember_click` notes an answer in the tab (`UNCONFIRMED_KEY`), unless it is a draft.
STORE_NOTE = "((key, note, draft) => draft === '1' ? undefined : sessionStorage.setItem(key, note))"

_log = logging.getLogger(__name__)

#: A decision's form on the page, by the decision's id and the form's name (`id`, `name`).
_FIND_FORM = """[...document.querySelectorAll('form.decision-form')].find((f) =>
  f.elements.__interrupt && f.elements.__interrupt.value === id &&
  f.elements.__form && f.elements.__form.value === name)"""

#: Once a decision's form is drawn (`%s`: its decision's id, the form's name and which field,
#: as JSON): the first field of it, or the first in error after a refused Submit, takes the
#: focus, scrolled into view (a keyboard's next key goes where the person looks). A form just
#: opened leaves the focus where it is if the person already went into a decision's field,
#: and a refused one if they went on anywhere on the page after the Submit
#: (`MOVED_ON_SCRIPT`).
FOCUS_IN_FORM = """
setTimeout(() => {
  const [id, name, which] = %s;
  const typing = document.activeElement;
  if (which === 'first' && typing && typing.closest('form.decision-form')) return;
  const sent = window.__decisionSubmit;
  if (which === 'error' && sent && sent.id === id && sent.name === name && sent.movedOn) return;
  const form = FIND_FORM;
  const field = form && form.querySelector(which === 'error'
    ? '.form-field:has(.field-error)' : '.form-field');
  const control = field && field.querySelector('input:not([type=hidden]), textarea, button');
  if (!control) return;
  control.focus({preventScroll: true});
  field.scrollIntoView({block: 'center'});
  // A draft goes on where it ends: at its start, what is typed next would go before it.
  try { control.setSelectionRange(control.value.length, control.value.length); } catch (e) {}
}, 50)
""".replace("FIND_FORM", _FIND_FORM)


#: A page opened with a decision's form open (`%s`: the decision's id and the form's name,
#: as JSON): its first field takes the focus once it shows (a conversation opened at its
#: address is hidden until the tab's state has caught up), at the end of its draft, unless
#: the person has put the focus somewhere, or scrolled, clicked or typed, meanwhile. Looked
#: at for 5 s.
BACK_IN_FORM = """
(() => {
  const [id, name] = %s;
  const free = () => { const at = document.activeElement;
    return !at || at === document.body || at.getAttribute('role') === 'log'; };
  let moved = false;
  for (const type of ['wheel', 'touchstart', 'pointerdown', 'keydown']) {
    document.addEventListener(type, () => { moved = true; }, {once: true, capture: true});
  }
  const shows = (element) => typeof element.checkVisibility === 'function'
    ? element.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true})
    : element.getClientRects().length > 0;
  let looks = 100;
  const look = setInterval(() => {
    if (moved || --looks < 0 || !free()) return clearInterval(look);
    const form = FIND_FORM;
    const field = form && form.querySelector('.form-field');
    const control = field && field.querySelector('input:not([type=hidden]), textarea, button');
    if (!control || !shows(control)) return;
    control.focus({preventScroll: true});
    if (document.activeElement !== control) return;
    clearInterval(look);
    field.scrollIntoView({block: 'center'});
    try { control.setSelectionRange(control.value.length, control.value.length); } catch (e) {}
  }, 50);
})()
""".replace("FIND_FORM", _FIND_FORM)


@dataclass
class InFlightRecord:
    """When a run's page stores the answer in flight on the desk (`ChatState._follow`).

    Stored so that a page taking the conversation over after this worker died shows the
    answer applied or failed, not open. The write (its JSON, then a commit in a thread:
    15-35 ms at 2,000 messages) holds up a flush it runs beside, so it waits for the
    continuation's first words to go out, and starts a flush after them, or
    `RECORD_WAIT_SECONDS` after the answer left if none came. A worker that dies before
    that leaves the answer open in the stored conversation; answering it again is refused by
    the ledger ("already answered; nothing ran"), so nothing runs twice.
    """

    due: bool = False
    #: The continuation's first words went out since the answer left.
    spoke: bool = False
    #: When it is stored even without words (`time.monotonic()`).
    by: float = 0.0

    def resuming_changed(self, now: float) -> None:
        """An answer left (or its continuation settled)."""
        if not self.due:
            self.due, self.spoke, self.by = True, False, now + RECORD_WAIT_SECONDS

    def words_out(self) -> None:
        """A new message's first words went out in this flush."""
        self.spoke = self.due

    def take(self, now: float, *, first_words: bool) -> bool:
        """Whether to start the write in this flush (then it is no longer due)."""
        if self.due and not first_words and (self.spoke or now >= self.by):
            self.due = False
            return True
        return False


def browser_call(script: str, call_id: str) -> str:
    """The JavaScript that runs a browser tool's `script` and answers `{id, value}`."""
    return f"Promise.resolve({script}).then(v => ({{id: {json.dumps(call_id)}, value: v}}))"


def remember_click(
    answer: str,
    interrupt_id: rx.Var[str] | str = "",
    form_data: rx.Var[Any] | None = None,
    draft: rx.Var[Any] | None = None,
) -> EventSpec:
    """What a decision's control does first, in the browser: note in the tab's sessionStorage
    the answer it is about to send: `approve`, `reject` or `cancel` with the decision's id,
    `form` with its fields, or the batch bar's `approve_all`, `reject_all`, `cancel_all` and
    `retry`.

    The handler that receives the click clears the note (`ChatState._clicked`). A note still
    there when the page connects again (the page sends its sessionStorage then) is an answer
    the server never received: its event was sent on a socket that was already dead, as when
    the tab's worker dies, and Reflex neither acknowledges events nor sends one again. The
    page then gives that answer once more (`ChatState.on_load`), as Reflex itself sends a
    click made while the socket is known to be down once it is up. A function, not a script
    to evaluate: the id and the fields are never pasted into code. A form's `draft` flag, when
    set, notes nothing: a draft (`DRAFT_SCRIPT`) is no answer, and must not take the place of
    one the server has not received.
    """
    note = rx.Var.create({"answer": answer, "id": interrupt_id, "form": form_data}).to_string()
    store: FunctionStringVar[Any] = FunctionStringVar.create(STORE_NOTE)
    return rx.run_script(store.call(UNCONFIRMED_KEY, note, draft if draft is not None else ""))


class ChatState(IdentityState):
    """Transcript, decisions and composer for one browser tab."""

    #: The transcript in three parts, each assigned (so sent) only when it changes: see
    #: `chat_app.ui.views.Transcript`. The archive goes in its blocks (`ArchiveBlock`).
    archive: list[ArchiveBlock] = []
    recent: list[MessageView] = []
    turn: list[MessageView] = []
    loose_decisions: list[DecisionView] = []
    streaming_id: str = ""
    #: The client's request is out and nothing of its reply shows yet.
    awaiting_words: bool = False
    streaming_text: str = ""
    streaming_tools: list[str] = []
    running: bool = False
    resuming: bool = False
    open_count: int = 0
    #: Of those, how many hold an answer a failed send kept (`Views.unsent`).
    unsent: int = 0
    batch_size: int = 0
    bulk_ok: bool = False
    cancel_all_ok: bool = True
    batch_errors: list[str] = []
    can_retry: bool = False
    #: The last message's run failed (the agent answered an error, the stream broke, …):
    #: Retry runs the same message again (`retry_send`); or the reply after applied answers
    #: failed, and Retry asks the agent to go on from the tools' results.
    can_resend: bool = False
    run_error: str = ""
    #: What the person should know about the agent this page talks to (its tool manifest
    #: could not be read, entries were left out), each shown once until dismissed.
    notices: list[str] = []
    draft: str = ""
    #: Why the message sent was held back rather than sent (the notice shown; "": it was
    #: not): decisions to answer first, or one someone else makes.
    held: str = ""
    #: The held message the desk keeps for the conversation shown, as this tab last knew it
    #: ("" for none): see `_keep_held`.
    _held_kept: str = ""

    #: The client token this tab's conversation was last shown under, kept in the tab's
    #: sessionStorage. Reflex gives a reconnecting tab a new token, and so an empty state,
    #: when the old token's socket record outlived its worker (a killed worker;
    #: reflex-dev/reflex#6345); `on_load` then takes the conversation over from the old state.
    shown_under: str = rx.SessionStorage("", name="chat_app_shown_under")
    #: An answer the tab clicked and the server has not received (yet): see `remember_click`.
    unconfirmed: str = rx.SessionStorage("", name=UNCONFIRMED_KEY)
    #: An answer the server never received, read from `unconfirmed` when the page connected
    #: again: `on_load` gives it again.
    _lost_click: str = ""

    #: This token's state has shown a conversation (its own, or one taken over): it never
    #: takes another over, whatever `shown_under` the browser sends later.
    _loaded: bool = False
    #: Whose conversation this tab holds (the email that started it; "" for none yet).
    _owner: str = ""
    _client_json: str = ""
    #: Which process's page saved `_client_json` (`sessions.BOOT`; "" for a stored copy).
    _saved_by: str = ""
    _memory: dict[str, FormMemory] = {}
    _stop: bool = False
    #: Every notice shown in this tab (a session made again reads the same manifest).
    _noticed: list[str] = []
    #: Of `notices`, those about the conversation shown (an answer that lost a race).
    _about_shown: list[str] = []
    #: The decisions the tab showed open when the stored conversation replaced its own, and
    #: has not answered itself since (id -> how a notice names it): a click on one of them
    #: that finds it answered says so (`_tell_beaten`).
    _open_before: dict[str, str] = {}
    #: The person's requests in other conversations that someone else settled (or that
    #: expired) while this tab was open, oldest first, each until dismissed or opened.
    settled: list[SettledRow] = []
    #: How many more of them came than the list keeps (`SETTLED_SHOWN`): the page points to
    #: the Conversations page for those.
    settled_more: int = 0
    #: Since when the desk is asked for them (the desk's clock, from when this tab's live
    #: loop started; then the newest read), and for whom (whoever signs in next in the tab
    #: starts afresh).
    _settled_since: datetime | None = None
    _settled_for: str = ""
    #: Those read within `SETTLED_OVERLAP` before `_settled_since`, by id, and the floor no
    #: read goes below (when the tab started): each read looks that far back again.
    _settled_seen: dict[str, datetime] = {}
    _settled_from: datetime | None = None

    #: The stored conversation this tab shows ("" until its first message is stored).
    thread_shown: str = ""
    #: Someone else's conversation (opened from the inbox or a link): the viewer decides what
    #: is theirs to decide in it, and does not write in it.
    read_only: bool = False
    #: The address names no conversation at all (read-only too: nothing to write in).
    missing: bool = False
    owner_name: str = ""
    #: What the desk says about this tab's conversation: why it is not shown, or why a
    #: message cannot be sent in it ("" for nothing).
    desk_notice: str = ""
    #: Who used this tab last (their email): whoever signs in next in it starts afresh.
    _person: str = ""
    #: What the person had typed when the tab found them signed out (`_hide_signed_out`):
    #: the box's text and the decision forms' (open panels, drafts), and whose they are.
    #: They come back when that person signs in here again, for nobody else.
    _kept_draft: str = ""
    _kept_forms: dict[str, FormMemory] = {}
    _kept_for: str = ""
    #: The stored version this tab shows, and whom it was last checked for.
    _desk_version: int = 0
    _shown_to: str = ""
    #: That version was stored mid-run by a run going on elsewhere (the desk's, another
    #: tab's): the tab shows it streaming, and sends nothing until the next version.
    _desk_running: bool = False
    #: The conversation address (`/c/<id>`) this page load has already shown.
    _route_taken: str = ""
    #: The desk's database did not answer the last time this tab asked (`desk_notice` says so).
    _desk_down: bool = False
    #: Quorum votes on this conversation's items: item id -> [progress, voter emails...].
    _votes: dict[str, list[str]] = {}
    #: Who answered the conversation's tool calls, when not the person looking alone: item
    #: id -> "Approved by Ada" (`answered.answered_by`).
    _deciders: dict[str, str] = {}
    #: The conversation's answers given at the desk (from an inbox, the person looking's
    #: too): item id -> "Approved by Ada" (`answered.given_at_desk`). A failed continuation that
    #: holds one is the desk's to send again.
    _at_desk: dict[str, str] = {}
    #: What approvals with changes changed: item id -> ["amount: 5000 → 4000"] (`answered.edits`).
    _changes: dict[str, list[str]] = {}
    #: The same for this tab's own answers, marked as they go (`_note_own_edits`): the desk's
    #: record of them is read only with the next stored version.
    _own_changes: dict[str, list[str]] = {}
    #: This tab's own withdrawals: item id -> "Withdrawn by you" (`_note_withdrawals`).
    _own_withdrawals: dict[str, str] = {}
    #: Pending items of this conversation the desk escalated: item id -> "escalated to admin
    #: after 2 h" (their cards say so, and the people escalated to may decide them).
    _escalated: dict[str, str] = {}

    # --- reading ------------------------------------------------------------------------

    @rx.var
    def has_messages(self) -> bool:
        # Not the streamed words: a reply streams after the message it answers, which is in
        # the transcript already, and reading them would send this var in each frame.
        return len(self.archive) > 0 or len(self.recent) > 0 or len(self.turn) > 0 or self.running

    @rx.var
    def working(self) -> bool:
        """The status row's "Working…": a run's request is out with no reply showing yet (a
        model thinking, an agent slow to answer); resuming says so itself. Not between a
        run's end and the page's (the line would come and go in the log's layout)."""
        return self.running and self.awaiting_words and not self.resuming

    @rx.var
    def resuming_quiet(self) -> bool:
        """The status row's "Resuming the run…": until the continuation's reply shows."""
        return self.resuming and self.awaiting_words

    @rx.var
    def may_retry(self) -> bool:
        """The batch bar's Retry: a failed continuation, in the viewer's own conversation."""
        return self.can_retry and not self.read_only

    @rx.var
    def may_resend(self) -> bool:
        """The status row's Retry: a failed message, in the viewer's own conversation."""
        return self.can_resend and not self.read_only

    @rx.var
    def batch_title(self) -> str:
        if self.open_count == self.unsent and self.can_retry:  # answered, the sending failed
            return "Not sent"
        return f"{self.open_count} decision{'s' if self.open_count != 1 else ''} needed"

    def _session(self, viewer: Identity | None = None) -> sessions.Session:
        """The tab's live session, for whoever is signed in now (read again at every event:
        a demo visitor may have switched person)."""
        viewer = viewer or self._viewer()
        return sessions.session_for(
            self.router.session.client_token, self._client_json, viewer,
            running=self._desk_running, saved_by=self._saved_by,
        )  # fmt: skip

    def _refresh(self, session: sessions.Session, *, save: bool = True) -> None:
        """Copy the client's state into the page's vars, and save it (`_save`) unless `save`
        is false (then the caller saves it soon after).

        Reflex sends every var assigned to, so each part of the transcript is assigned only
        when it differs: answering a decision sends the turn, not the history.
        """
        client = session.client
        state = client.state
        self._note_own_edits(state)
        views = build_views(
            state,
            self._memory,
            focus=not self.held,
            cache=session.views,
            who_decides=self._who_decides(session),
            asked_by=sessions.asked_by(session.identity),
            decided_by=self._own_withdrawals | self._deciders,
            quorum={item: given[0] for item, given in self._votes.items()},
            changes=self._own_changes | self._changes,
            can_retry=not self.read_only,
            retry_by=self.owner_name,
            at_desk=self._at_desk,
            edits=sessions.edit_limits,
        )
        streaming = client.status == "streaming"
        messages = views.messages
        if streaming and messages and messages[-1].role == "assistant":
            # The message being streamed is shown by the small streaming vars instead.
            messages = messages[:-1]
        parts = split_transcript(messages)
        archive = archive_blocks(parts.archive)
        if archive != self.archive:
            self.archive = archive
        if parts.recent != self.recent:
            self.recent = parts.recent
        if parts.turn != self.turn:
            self.turn = parts.turn
        self._assign(
            loose_decisions=views.loose_decisions, open_count=views.open_count,
            unsent=views.unsent, batch_size=views.batch_size, bulk_ok=views.bulk_ok,
            cancel_all_ok=views.cancel_all_ok, batch_errors=views.batch_errors,
            can_retry=state.can_retry, can_resend=state.can_resend or state.can_go_on,
            resuming=state.resuming,
            # A refused continuation is shown on its decisions, not again as a run error;
            # but a refusal as a replay is over, with nothing left to decide: said here.
            run_error=(ANSWERED_BEFORE if state.answered_before
                       else "" if state.refused else state.error or ""),
        )  # fmt: skip
        if self.held == RUNNING_NOTICE:  # until the run ends: Send is back then
            if not self.running:
                self.held = ""
        elif self.held and not client.manager.has_open_items:  # nothing holds it back now
            self.held = ""
        elif self.held and views.open_count == views.unsent and state.can_retry:  # not sent
            self.held = NOT_SENT_NOTICE
        elif self.held and not views.open_count:  # the person's own answered: others' remain
            self.held = WAITING_NOTICE
        elif self.held and views.open_count:  # theirs to answer first (one kept, restored)
            self.held = HELD_NOTICE
        self._refresh_streaming(client)
        if save:
            self._save(session, state)
        fresh = [notice for notice in session.take_notices() if notice not in self._noticed]
        if fresh:
            self._noticed = [*self._noticed, *fresh]
            self.notices = [*self.notices, *fresh]

    def _assign(self, **values: Any) -> None:
        """Assign the vars whose value differs: Reflex sends every var assigned to, and every
        computed var reading one, in the event's delta, changed or not."""
        for name, value in values.items():
            if getattr(self, name) != value:
                setattr(self, name, value)

    def _save(self, session: sessions.Session, state: ClientState | None = None) -> None:
        """Save the client's state (`state`, read from it when not given) in the tab's
        (`_client_json`): what a page or worker taking the conversation over starts from."""
        if state is None:
            state = session.client.state
        self._client_json = session.state_json.dump(state)
        self._saved_by = sessions.BOOT
        # The session holds what was just saved: the next event need not compare the two.
        session.saved = self._client_json

    def _show_failure(self, message: str) -> bool:
        """A handler failed (`chat_app.ui.guard`): the chat's status row says so."""
        self.run_error = message
        return True

    def _may_see(self, owner: str, viewer: Identity | None) -> bool:
        """Whether `viewer` may see the conversation `owner` started in this tab: their own,
        one nobody started yet, or any in the demo (whose point is to switch people in one
        tab). Nobody signed in keeps the tab as it is (a person's own things went when the
        tab found them signed out, `_hide_signed_out`): it cannot act, and signs in first."""
        if not owner or viewer is None or not self._tells_people_apart:
            return True
        return viewer.email == owner or (self.read_only and self._shown_to == viewer.email)

    def _give_back(self, text: str) -> None:
        """A message that never reached the client goes back into the composer."""
        if text and not self.draft.strip():
            self.draft = text

    def _refresh_streaming(self, client: ChatClient) -> bool:
        """Update only the streamed message; return whether the transcript needs rebuilding.

        Each var is assigned only when it differs (`_assign`): assigned regardless, they and
        the computed vars reading them (`working`, `resuming_quiet`) were about 170 of a
        streamed frame's ~370 bytes beside its words (the browser benchmark's websocket
        bytes per streamed token: 412, now about 310)."""
        streaming = client.status == "streaming"
        message_id, text, tools = streaming_preview(client.messages) if streaming else ("", "", [])
        rebuild = message_id != self.streaming_id or tools != self.streaming_tools
        self._assign(streaming_id=message_id, streaming_tools=tools, streaming_text=text,
                     awaiting_words=streaming and message_id == "")  # fmt: skip
        return rebuild

    # --- page lifecycle -----------------------------------------------------------------

    async def _loaded_session(self) -> sessions.Session:
        """The tab's session, after taking its conversation over from the tab's old token.

        Every handler that reads or changes the conversation starts here: a click made while
        the socket was down is sent as soon as it is up again, and reaches the new token
        before `on_load` does (its answer used to find an empty conversation: a Cancel or
        Approve all was lost, and the conversation with it). An answer the server never
        received, which the page sent back as `unconfirmed`, is kept for `on_load`.
        """
        token = self.router.session.client_token
        viewer = self._viewer()
        took_over = not self._loaded and self.shown_under not in ("", token)
        if took_over:
            saved, memory, owner, saved_by = await _saved_conversation(self.shown_under)
            # Not someone's conversation for a tab where nobody is signed in: it would go out
            # with every page load until someone signed in.
            nobody = viewer is None and self._tells_people_apart
            took_over = self._may_see(owner, viewer) and not (owner and nobody)
            if took_over:
                self._client_json, self._memory, self._owner = saved, memory, owner
                self._saved_by = saved_by  # a run it saved mid-stream before a restart is cut
            sessions.forget(token)  # an event may have made an empty session already
        if self._someone_else(viewer):
            self._forget_person()
            took_over = True
        elif not self._may_see(self._owner, viewer):
            # Signed in as someone else in this tab: their conversation is not yours to see.
            self._show_nothing(thread=self.thread_shown, shown_to=self._shown_to)
            took_over = True
        if viewer is not None:
            self._person = viewer.email
            self._give_back_kept(viewer)
        self._loaded = True
        self.shown_under = token
        if self.unconfirmed:
            self._lost_click, self.unconfirmed = self.unconfirmed, ""
        if await self._sync_from_desk(viewer):
            took_over = True
        session = self._session(viewer)
        if took_over:
            self._refresh(session)
        return session

    def _hide_signed_out(self, viewer: Identity | None) -> bool:
        """Nobody is signed in at the tab any more (they signed out in another tab, or their
        session ended) while something of theirs is still on the page: it goes, as at a
        sign-out here, so that whoever comes to the screen next reads nothing of it. What
        they had typed, in the box and in the decisions' forms, is kept for them
        (`_give_back_kept`); the conversation is the desk's, and the address still names it.
        True when the page was emptied.

        Not when nobody could tell who is here (the accounts database did not answer). Only
        at a page load and at the live loop's look: a click in between is refused where it
        was made ("Nothing was sent."), with the page as it was.

        What was kept already for the same person (the page was emptied before, and loaded
        again since) is added to, never replaced."""
        if viewer is not None or self._identity_unknown or not self._person:
            return False
        return self._keep_typed_and_forget()

    def _keep_typed_and_forget(self) -> bool:
        """`_hide_signed_out` once it is known that the tab's person left: nothing of theirs
        stays on the page, what they had typed is kept for them. False when nothing of
        theirs was there."""
        shown = (
            self.thread_shown or self.archive or self.recent or self.turn or self.settled
            or self.draft.strip() or self._memory or self.loose_decisions
            or self.streaming_text or self.notices or self.run_error or self.desk_notice
            or self.held
        )  # fmt: skip
        if not shown:
            return False
        if self._kept_for != self._person:
            self._kept_draft, self._kept_forms = "", {}
        if self._person:  # a visitor without sign-in is nobody to give it back to
            self._kept_draft = self.draft if self.draft.strip() else self._kept_draft
            self._kept_forms = {**self._kept_forms, **self._memory}
            self._kept_for = self._person
        self._forget_person()
        self._route_taken = ""  # their next look here reads the address again
        return True

    def _forget_shown(self) -> None:
        """`IdentityState.forget_who_left`, for the chat page: as `_hide_signed_out`, and
        so also when someone else is signed in at the tab now."""
        if self._keep_typed_and_forget():
            self._refresh(self._session())

    def _give_back_kept(self, viewer: Identity) -> None:
        """What `viewer` had typed when the tab found them signed out comes back: the box's
        text (unless they typed anew) and the forms' drafts (those of decisions shown again).
        It is dropped for anyone else, and given once."""
        text, forms, owner = self._kept_draft, self._kept_forms, self._kept_for
        if not owner:
            return
        self._kept_draft, self._kept_forms, self._kept_for = "", {}, ""
        if owner != viewer.email:
            return
        if text and not self.draft.strip():
            self.draft = text
        self._memory = {**forms, **self._memory}

    @rx.event
    @guarded
    def storage_changed(self, key: str, _old: str | None, _new: str | None, _url: str) -> Any:
        """`IdentityState.look_again`, for the chat page: what the tab showed of its person
        is forgotten here (`_hide_signed_out`) before the page leaves, so that nothing of
        it goes out again with the tab's next page load, whoever signs in at it."""
        if not self._signed_out_elsewhere(key):
            return None
        if self._hide_signed_out(None):
            self._refresh(self._session())
        return self._leave_signed_out()

    @rx.event
    @guarded
    def sign_out(self) -> None:
        """Before the sign-out route: the tab forgets whoever signed out, so that nothing of
        theirs shows, even for a moment, to whoever signs in next. (`_person` stays: a run
        of theirs that ends meanwhile is forgotten again when someone else signs in.)"""
        self._forget_person()
        self._refresh(self._session())  # what the page shows, emptied too

    def _show_nothing(self, *, thread: str = "", shown_to: str = "", version: int = 0) -> None:
        """Nothing of a conversation on the page any more, nor in the tab's session: `thread`
        (for `shown_to`, at `version`) is the conversation the tab still stands for, if any
        (one the viewer was refused, which the next person, or this one later, may see)."""
        sessions.forget(self.router.session.client_token)
        self._client_json, self._memory, self._owner = "", {}, ""
        self._saved_by = ""
        self.owner_name, self.read_only, self.desk_notice = "", False, ""
        self.missing = False
        self._drop_conversation_notices()
        self.thread_shown, self._shown_to, self._desk_version = thread, shown_to, version
        self._desk_running = False
        self._own_changes, self._own_withdrawals = {}, {}
        self._held_kept, self._open_before = "", {}
        self._take_marks((), shown_to)

    def _nothing_sent(self) -> str:
        """What an answer or message refused because nobody is signed in reads (once
        `_viewer()` found nobody): why, and that nothing went."""
        return f"{self.auth_error} Nothing was sent."

    def _drop_conversation_notices(self) -> None:
        """Another conversation is shown: the notices about the last one go (the agent's
        own, such as an unreadable tool manifest, stay)."""
        if self._about_shown:
            self.notices = [n for n in self.notices if n not in self._about_shown]
            self._about_shown = []

    def _shows(self, session: sessions.Session) -> bool:
        """Whether the page still shows `session`'s conversation: not once the person who
        ran it signed out, or someone else signed in (`_forget_person`)."""
        return sessions.current(self.router.session.client_token) is session

    def _someone_else(self, viewer: Identity | None) -> bool:
        """Whether `viewer` is not the person this tab was last used by, with a sign-in that
        tells people apart (`_tells_people_apart`)."""
        if viewer is None or not self._tells_people_apart:
            return False
        return self._person not in ("", viewer.email)

    def _forget_person(self) -> None:
        """Nothing of the person who used this tab stays for the next one: their
        conversation (stored still, theirs to open again), their draft, a click of theirs
        still to give again, what the page told them. A run of theirs stops, as Stop stops
        it, and is stored as it ended without touching the page (`_shows`). The address
        may still name a conversation, which the next person sees if it is theirs to see."""
        self._stop_live_run()
        self._show_nothing()
        self.draft, self.held, self.run_error = "", "", ""
        self._lost_click = self.unconfirmed = ""
        self.notices, self._noticed, self._about_shown = [], [], []
        self._settled_to(None)

    # --- the desk: stored conversations -------------------------------------------------

    def _route_thread(self) -> str:
        """The thread id in the address (`/c/<thread id>`), else ""."""
        path = str(self.router.url.path or "")
        if not path.startswith(CONVERSATION_PREFIX):
            return ""
        return unquote(path[len(CONVERSATION_PREFIX) :]).strip("/")

    async def _sync_from_desk(self, viewer: Identity | None) -> bool:
        """Show the stored conversation when the address names another than the one shown,
        when the desk moved it on (an approver decided, another worker ran it), or when
        someone else is now looking; True when the tab's conversation was replaced.

        Nothing is replaced while this tab runs the conversation itself (it is ahead)."""
        desk = sessions.desk()
        if desk is None or viewer is None or self.running:
            return False
        route = self._route_thread()
        if route and route != self._route_taken:
            # An address honoured once: New conversation leaves it for good, even while the
            # page's router still reports it.
            self._route_taken = wanted = route
        else:
            wanted = self.thread_shown
        if not wanted:
            return False
        token = self.router.session.client_token
        live = sessions.current(token)
        if live is not None and live.busy:
            return False
        same = wanted == self.thread_shown and self._shown_to == viewer.email
        try:
            stored = await desk.version(wanted) if same else 0
            if self._desk_down:  # it answers again
                self._desk_down, self.desk_notice = False, ""
            # Unchanged, unless a run elsewhere was going on in it: one that died stores no
            # more versions, and its lease's end is what says it is over.
            if same and stored <= self._desk_version and not self._desk_running:
                return False
            view = await desk.view(wanted, viewer)
        except DeskError as error:
            if error.code == "unavailable":  # shown; the tab keeps what it has
                self._desk_down, self.desk_notice = True, error.message
                return False
            if self.read_only or wanted != self.thread_shown or self._shown_to != viewer.email:
                # Not theirs to see, or no longer (an admin's role taken away, a tab of
                # someone else's after a switch): nothing of it stays on screen, nor whose it
                # is. The version read is kept: it is asked again only once it changes.
                try:
                    seen = stored or await desk.version(wanted)
                except DeskError:
                    seen = 0
                self._show_nothing(thread=wanted, shown_to=viewer.email, version=seen)
                self.read_only, self.desk_notice = True, error.message
                self.missing = error.code == "unknown"
                return True
            return False
        if wanted != self.thread_shown:
            self._drop_conversation_notices()
            self._open_before = {}
        elif live is not None:
            self._open_before = {
                **self._open_before,
                **{
                    item.id: what_is_asked(item) for item in live.client.interrupts
                    if item.status in (*OPEN_STATUSES, "staged")
                },
            }  # fmt: skip
        self._drop_settled(wanted)
        self._client_json, self._saved_by = view.state, ""
        self._owner = view.summary.owner_email
        self.owner_name = view.summary.owner_name or view.summary.owner_email
        self.read_only = view.read_only
        self.thread_shown = wanted
        self._shown_to = viewer.email
        self._desk_version, self._desk_running = view.summary.version, view.running
        self._take_marks(view.decisions, viewer.email)
        if view.held and not self.draft.strip():  # held back in another tab, or before
            self.draft, self.held = view.held, WAITING_NOTICE  # `_refresh` words it
        elif self._held_kept and not view.held and self.draft == self._held_kept:
            self.draft, self.held = "", ""  # sent (or emptied) in another tab: not twice
        self._held_kept = view.held
        self.desk_notice = ""
        sessions.forget(token)
        return True

    def _tell_beaten(self, interrupt_id: str) -> bool:
        """A click on a decision the tab showed open when the stored conversation replaced
        its own (`_open_before`), answered since: in another tab of the person's, or by
        someone else, a moment before. Nothing is sent, and the card turns to how it ended,
        which would not say this click went nowhere. False when the tab never showed it."""
        asked = self._answering(interrupt_id)
        if asked is None:
            return False
        # Who, when the cards know and it was someone else ("Approved by Ada"), as the desk's
        # own refusal of a late click names them.
        how = self._deciders.get(interrupt_id, "")
        if how and not how.endswith(" you"):
            ended = f"was {mid_sentence(how)} before your answer arrived"
        else:
            ended = "was answered before your answer arrived, in another tab or by someone else"
        self._note_lost(f"“{asked}” {ended}. {NOTHING_RAN}")
        return True

    def _answering(self, interrupt_id: str) -> str | None:
        """A click of this tab's answers `interrupt_id`: it is no longer one the tab saw
        open (`_open_before`), and how a notice names it if it was."""
        if interrupt_id not in self._open_before:
            return None
        rest = dict(self._open_before)
        asked = rest.pop(interrupt_id)
        self._open_before = rest
        return asked

    def _note_lost(self, notice: str) -> None:
        """An answer of the person's that went nowhere, shown above the conversation until
        dismissed (or another conversation is shown), as each loss is."""
        if notice not in self.notices:
            self.notices = [*self.notices, notice]
            self._about_shown = [*self._about_shown, notice]

    def _own_thread(self) -> str:
        """The conversation shown, when it is the viewer's own to run ("" otherwise): the desk
        holds its owner's notices back while it is on screen."""
        return self.thread_shown if self.thread_shown and not self.read_only else ""

    async def _record(self, session: sessions.Session) -> Any:
        """Store the conversation this tab runs itself (the desk lists it, its decisions go to
        the inbox); the first time, the address becomes the conversation's own."""
        pending = session.recording  # a write `_follow` let go on: this one lands after it
        if pending is not None:
            await asyncio.wait([pending])
            went = pending.result()
            if isinstance(went.outcome, int) and went.thread_id == self.thread_shown:
                # The version this tab stored last: a write stored only over the tab's own
                # version (`if_version`) is not refused for the tab's own write just before.
                self._desk_version = went.outcome
        task = self._start_record(session) or pending
        session.recording = None
        if task is None:
            return None
        # The newest outcome stands for both (its state is the newer one).
        recorded = await task
        if isinstance(recorded.outcome, DeskError) and recorded.outcome.code == "stale":
            # Answers the ledger held already, and another tab's run of them stored since:
            # theirs went, so the tab shows it, as a race lost before the run is shown.
            await self._show_stored(self._client_json)
            self._note_lost(f"{sessions.ANSWERED_MEANWHILE} {NOTHING_RAN}")
            return None
        return self._recorded(recorded)

    def _start_record(self, session: sessions.Session) -> asyncio.Task[_Recorded] | None:
        """Start storing the conversation as it is now (read here, under the state's lock);
        the write itself needs no lock, so a caller may let it go on while the page streams
        (`_take_recorded`). `None` when nothing is stored.

        One write at a time per tab (`_record` waits for a pending one, `_follow` starts one
        only when none is pending), so an older state never lands over a newer one."""
        desk = sessions.desk()
        state = session.client.state
        if desk is None or not state.messages or self.read_only:
            return None
        if session.client.running_elsewhere:  # the desk's own, as it stored it
            return None
        viewer = session.identity
        owner = viewer
        if self._owner and self._owner != viewer.email:
            owner = Identity(email=self._owner, method=viewer.method, name=self.owner_name)
        state_json = session.state_json.dump(state)
        # Answers refused as a replay are over (`ClientState.answered_before`) only if no run
        # of them was stored since this tab's copy: one of another tab's that went, say.
        if_version = self._desk_version if state.answered_before and self._desk_version else None

        async def write() -> _Recorded:
            try:
                version = await desk.record(
                    state.thread_id, owner, viewer, state, state_json, if_version=if_version
                )
            except DeskError as error:
                return _Recorded(state.thread_id, owner, viewer, error)
            return _Recorded(state.thread_id, owner, viewer, version)

        task = session.recording = asyncio.ensure_future(write())
        return task

    def _take_recorded(self, session: sessions.Session) -> Any:
        """The outcome of a write `_follow` let go on, once it has finished (else `None`),
        taken into the page as `_record` takes it."""
        task = session.recording
        if task is None or not task.done():
            return None
        session.recording = None
        return self._recorded(task.result())

    def _recorded(self, recorded: _Recorded) -> Any:
        """A finished write taken into the page (under the state's lock)."""
        if isinstance(recorded.outcome, DeskError):
            _log.warning("Could not store the conversation: %s", recorded.outcome.message)
            self.desk_notice = f"{recorded.outcome.message} The conversation was not saved."
            return None
        self._desk_version, self._desk_running = recorded.outcome, False
        thread = recorded.thread_id
        first = self.thread_shown != thread
        self.thread_shown, self._shown_to = thread, recorded.viewer.email
        self.owner_name = self.owner_name or recorded.owner.name
        if first and self._route_thread() != thread:
            return replace_address(address(thread), on=CHAT_PATHS, under=CONVERSATION_PREFIX)
        return None

    def _through_desk(self, session: sessions.Session, item: InterruptItem, form: str) -> bool:
        """Whether an answer goes to the desk rather than this tab's own run: someone else's
        conversation, a batch that also waits for someone else, or an approval that counts
        towards a quorum."""
        if sessions.desk() is None or not self.thread_shown:
            return False
        if self._owner and self._owner != session.identity.email:
            return True
        # A batch that waits for someone else too: the desk sends it once all have answered.
        others = sessions.who_decides(session.identity, self._votes, self._escalated)
        if any(
            other.id != item.id and other.can_resolve and other.status in OPEN_STATUSES
            and others(other) != ""
            for other in session.client.interrupts
        ):  # fmt: skip
            return True
        # Part of the batch is decided at the desk (the person's own Inbox, say): the desk
        # holds those answers and sends the batch once the rest is decided there too.
        if answered_at_desk(session.client.interrupts, self._at_desk) - {item.id}:
            return True
        shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
        quorum = shown.get("quorum") if isinstance(shown, dict) else None
        return isinstance(quorum, int) and quorum > 1 and form not in ("cancel", "reject")

    async def _desk_answer(
        self, session: sessions.Session, interrupt_id: str, form: str, value: Any
    ) -> None:
        """Give the answer of whoever is signed in now to the desk, which runs the
        continuation; the page follows it through the desk's notices. A refusal shows on the
        card, the draft kept."""
        desk = sessions.desk()
        assert desk is not None
        memory = self._memory.setdefault(interrupt_id, FormMemory())
        # Not the session's person, which it keeps between runs: a tab signed out in another
        # (or expired) must send nothing as whoever it showed.
        viewer = self._viewer()
        if viewer is None:
            memory.message = self._nothing_sent()
            self._refresh(session)
            return
        try:
            result = await desk.decide(
                decision_id_of(self.thread_shown, interrupt_id),
                viewer,
                _answer_of(form, value),
            )
        except DeskError as error:
            memory.message = error.message
            memory.replies += 1  # the same refusal again would leave the card as it was
            by = error.details.get("decidedBy")
            if error.code == "already-decided" and by and by != viewer.email:
                # Someone else decided it a moment before this click landed (not this
                # person's own vote, counted already, nor their other tab): the card turns to
                # how it ended at the next sync, and would not say this answer went nowhere.
                what = _ANSWER_WORDS.get(form, "answer")
                self._note_lost(f"{error.message} Your {what} was not used.")
            self._refresh(session)
            return
        memory.message = ""
        item = result.item
        if result.status == "waiting":
            self._votes = {**self._votes, **_votes_of([item], viewer.email)}
        self._refresh(session)

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[Any]:
        """While the tab is open: follow the stored conversation and the inbox count live;
        once its person is found signed out, forget what it showed (`_hide_signed_out`) and
        go to the sign-in page (`_leave_signed_out`)."""
        desk = sessions.desk()
        token = self.router.session.client_token
        if desk is None or not sessions.start_watching(token):
            return
        try:
            mark: tuple[int, ...] | None = None
            leave: Any = None  # where the tab goes once its person is found signed out
            asked = -math.inf  # when the page was last asked whether it is in view
            while sessions.connected(token):
                async with self:
                    thread, own = self.thread_shown, self._own_thread()
                    if self._settled_since is None:
                        self._settled_since = self._settled_from = desk.clock()
                if own and time.monotonic() - asked >= LOOK_SECONDS:
                    asked = time.monotonic()
                    yield rx.call_script(IN_VIEW, callback=ChatState.presence)
                topics = {inbox_topic()} | ({thread_topic(thread)} if thread else set())
                if mark is not None and len(mark) != len(topics):
                    mark = None  # another conversation: a mark of other topics
                wait = WATCH_SECONDS
                if own:  # woken in time to ask again, even when nothing happens meanwhile
                    wait = min(wait, max(asked + LOOK_SECONDS - time.monotonic(), 0.0))
                changed = await desk.fanout.wait(topics, wait, since=mark)
                mark = desk.fanout.mark(topics)  # before reading: nothing after it is missed
                async with self:
                    viewer = self._viewer()
                    if self._hide_signed_out(viewer):  # signed out elsewhere, or ran out
                        self._refresh(self._session(viewer))
                    if viewer is None and self._person and not self._identity_unknown:
                        # Whoever was here is gone, whether the page showed them anything
                        # (an empty chat) or not: to the sign-in page, saying why.
                        leave = self._leave_signed_out()
                    synced = await self._sync_from_desk(viewer)
                    if not synced and thread and thread_topic(thread) in changed:
                        # A notice without a new version: a timer escalated an item, or
                        # someone approved one that needs more approvals.
                        synced = await self._sync_marks(thread)
                    if synced:
                        self._refresh(self._session(viewer))
                    if viewer is not None and (inbox_topic() in changed or not changed):
                        await self._count_inbox(viewer)
                        await self._read_settled(viewer)
                if leave is not None:
                    yield leave
                    return
                yield
        finally:
            sessions.stop_watching(token)

    async def _read_settled(self, viewer: Identity) -> None:
        """List the viewer's requests that someone settled since the last look, in
        conversations other than the one shown (that one's cards say so themselves)."""
        desk = sessions.desk()
        if desk is None:
            return
        since, floor = self._settled_since, self._settled_from
        if not self._settled_to(viewer) or since is None or floor is None:
            self._settled_since = self._settled_from = desk.clock()
            return
        try:
            found = await desk.settled_for(viewer, max(floor, since - SETTLED_OVERLAP))
        except DeskError:  # the next notice or look tries again from the same moment
            return
        fresh, newest, seen = settled_news(found, since, self._settled_seen, SETTLED_OVERLAP)
        if not fresh:
            return
        self._settled_since, self._settled_seen = newest, seen
        rows = [
            _settled_row(settled, viewer.email)
            for settled in fresh
            if settled.item.thread_id != self.thread_shown
        ]
        if rows:
            listed = [*self.settled, *rows]
            self.settled = listed[-SETTLED_SHOWN:]
            self.settled_more += len(listed) - len(self.settled)

    def _settled_to(self, viewer: Identity | None) -> bool:
        """The list is `viewer`'s: False (and it is emptied, to be read afresh from now on)
        when it was someone else's (a demo switch, a sign-in, nobody now), so that nothing of
        theirs shows to whoever is at the tab now, even until the next look."""
        email = viewer.email if viewer is not None else ""
        if self._settled_for == email:
            return True
        if self.settled or self.settled_more:
            self.settled, self.settled_more = [], 0
        self._settled_for, self._settled_since, self._settled_seen = email, None, {}
        return False

    def _drop_settled(self, thread: str) -> None:
        """The conversation `thread` is shown: what the list said of it, its cards say."""
        shown = address(thread)
        if any(row.href == shown for row in self.settled):
            self._keep_settled([row for row in self.settled if row.href != shown])

    def _keep_settled(self, rows: list[SettledRow]) -> None:
        """The list is now `rows`: once it is empty, what it left out is forgotten too."""
        self.settled = rows
        if not rows:
            self.settled_more = 0

    async def _sync_marks(self, thread: str) -> bool:
        """Read what the desk marks on the conversation's items beyond their state: which are
        escalated, and the approvals a quorum's have so far. True when that changed: the
        cards then say so (an admin escalated to gets the buttons without a reload; whoever
        asked reads "1 of 2: Sam approved")."""
        desk = sessions.desk()
        if desk is None or self.running or thread != self.thread_shown:
            return False
        try:
            decisions = await desk.decisions_of(thread)
        except DeskError:  # the next notice or load tries again
            return False
        return self._take_marks(decisions, self._shown_to)

    def _note_own_edits(self, state: ClientState) -> None:
        """Mark what this tab's own answers change, as they stand (staged, or going with the
        continuation in flight; one changed before it goes changes its mark), so the card
        says so once it has gone (the desk's record says the same when read again)."""
        submission = state.manager.active_submission
        if not state.interrupts and submission is None:
            return
        open_ids = {item.id for item in state.interrupts}
        if submission is not None:
            open_ids.update(submission.interrupt_ids)
        kept = {key: lines for key, lines in self._own_changes.items() if key not in open_ids}
        changes = (
            kept | answered_edits(state.interrupts) | submitted_edits(submission, state.messages)
        )
        if changes != self._own_changes:
            self._own_changes = changes

    def _who_decides(self, session: sessions.Session) -> WhoDecides:
        return sessions.who_decides(
            session.identity, self._votes, self._escalated, {self._owner: self.owner_name}
        )

    def _note_withdrawals(self, session: sessions.Session, items: Sequence[InterruptItem]) -> None:
        """Of `items`, cancelled in this tab, those its person asked for and someone else
        decides are withdrawals: their cards say so at once (the desk's record of them, which
        says the same, is read only with the next stored version)."""
        who_decides, asked = self._who_decides(session), sessions.asked_by(session.identity)
        withdrawn = {
            item.id: f"{WITHDRAWN} by you" for item in items if who_decides(item) and asked(item)
        }
        if withdrawn:
            self._own_withdrawals = self._own_withdrawals | withdrawn

    def _take_marks(self, decisions: Sequence[InboxItem], viewer_email: str) -> bool:
        """Keep what the cards say of the conversation's `decisions` beyond the client's
        state: escalations, a quorum's approvals so far, who answered each (as `viewer_email`
        reads it). True when that changed; no decisions forget it all."""
        marks = (
            _escalations(decisions),
            _votes_of(decisions, viewer_email),
            answered_by(decisions, viewer_email),
            edits(decisions),
            given_at_desk(decisions, viewer_email),
        )
        if marks == (self._escalated, self._votes, self._deciders, self._changes, self._at_desk):
            return False
        self._escalated, self._votes, self._deciders, self._changes, self._at_desk = marks
        return True

    async def _clicked(self) -> sessions.Session:
        """A decision's click reached the server: the conversation (taken over first if need
        be), and the tab's note of the click cleared (`remember_click`)."""
        session = await self._loaded_session()
        self.unconfirmed = ""
        return session

    def _lost_answer(self, client: ChatClient) -> Any:
        """The event that gives again the answer the server never received (`_lost_click`), if
        it still applies: its decision is still open (answered meanwhile, nothing is lost)."""
        note, self._lost_click = self._lost_click, ""
        try:
            click = json.loads(note)
            answer, interrupt_id = str(click["answer"]), str(click["id"])
        except (ValueError, KeyError, TypeError):
            _log.warning("Ignoring an unreadable note of a click: %r", note[:200])
            return None
        state = client.state
        open_ids = {i.id for i in state.interrupts if i.status in OPEN_STATUSES}
        if client.resuming or not open_ids:
            return None
        batch = {
            "approve_all": (state.can_approve_all, ChatState.approve_all),
            "reject_all": (state.can_reject_all, ChatState.reject_all),
            "cancel_all": (True, ChatState.cancel_all),
            "retry": (state.can_retry, ChatState.retry),
        }
        if answer in batch:
            applies, handler = batch[answer]
            return handler() if applies else None
        if interrupt_id not in open_ids:
            return None
        form = click.get("form")
        if answer == "form" and isinstance(form, dict):
            return ChatState.submit_form(form)
        one = {
            "approve": ChatState.approve,
            "reject": ChatState.reject,
            "cancel": ChatState.cancel_decision,
        }
        return one[answer](interrupt_id) if answer in one else None

    @rx.event
    @guarded
    async def on_load(self) -> Any:
        """Show the tab's conversation, pending decisions included (also after a reload);
        forget what it showed of someone no longer signed in (`_hide_signed_out`); send a
        visitor who must sign in to the sign-in page."""
        self._route_taken = ""  # a page load: its address says which conversation to show
        self._hide_signed_out(self._viewer())
        if self.read_only and not self._route_thread():
            # "Chat" (`/`) is the viewer's own: someone else's conversation, opened from the
            # Inbox or a link, is shown at its address only. What was typed stays, in the
            # box and in its forms (for when they go back to it).
            typed = self._memory
            self._show_nothing()
            self._memory = typed
        if self.read_only and not self._client_json:
            self._desk_version = 0  # refused before: asked again (roles change, not versions)
        session = await self._loaded_session()
        redirect = self._sign_in_first(str(self.router.url.path or "/"))
        if redirect is not None:
            return redirect
        self._refresh(session)
        self.running = session.busy
        viewer = self._viewer()
        if viewer is not None:
            await self._count_inbox(viewer)
        self._settled_to(viewer)
        lost = self._lost_answer(session.client) if self._lost_click else None
        return [event for event in (lost, self._back_in_form(session), ChatState.watch)
                if event is not None]  # fmt: skip

    def _back_in_form(self, session: sessions.Session) -> Any:
        """The first open decision with a form open, if the tab had one (a reload, the
        person back from another page): the focus goes into it, at the end of its draft,
        where the person left off. No Approve takes the focus then (`DecisionView.focus`):
        Enter would approve beside a half-written rejection."""
        for item in session.client.interrupts:
            memory = self._memory.get(item.id)
            if item.answerable and memory is not None and memory.panel:
                return rx.call_script(BACK_IN_FORM % json.dumps([item.id, memory.panel]))
        return None

    # --- composer -----------------------------------------------------------------------

    @rx.event
    @guarded
    async def set_draft(self, value: str) -> None:
        self.draft = value
        if not value.strip():
            self.held = ""
            await self._keep_held("")  # emptied: nothing kept for later either

    async def _keep_held(self, text: str, *, again: bool = False) -> None:
        """Have the desk keep `text` ("": nothing) as the message held back in the person's
        own conversation shown, for their box wherever they open it. Written when it differs
        from what this tab knows the desk keeps, or `again` (a Send that holds it: another
        tab may have let it go meanwhile); a desk that does not answer leaves it in this
        tab's box alone."""
        desk = sessions.desk()
        if desk is None or not self.thread_shown or self.read_only:
            return
        if text == self._held_kept and not again:
            return
        viewer = self._viewer()
        if viewer is None:
            return
        try:
            await desk.hold(self.thread_shown, viewer, text)
        except DeskError:
            return
        self._held_kept = text

    @rx.event
    @guarded
    async def send(self, _: dict[str, Any] | None = None) -> Any:
        session = await self._loaded_session()  # its decisions hold a message back
        text = self.draft.strip()
        if not text:
            return None
        if self.running:  # Enter while the agent answers: kept, and why it did not go
            self.held = RUNNING_NOTICE
            return None
        if self.read_only:
            who = self.owner_name or "someone else"
            # As the bar over it says: only while a decision in it waits for them.
            yours = " decide what is yours here;" if self.open_count else ""
            self.desk_notice = (
                f"This is {who}'s conversation:{yours} your message is kept in the box. New "
                "conversation starts your own."
            )
            return None
        if self.open_count and (self.open_count > self.unsent or not self.can_retry):
            # Held back, not lost: the person answers the decisions, then sends.
            self.held = HELD_NOTICE
            await self._keep_held(text, again=True)
            return None
        client = session.client  # its state, a snapshot, read only when something is open
        if client.manager.has_open_items and not client.state.answered_before:
            # Someone else's to decide, or to send.
            self.held = NOT_SENT_NOTICE if self.can_retry else WAITING_NOTICE
            await self._keep_held(text, again=True)
            return None
        self.held = ""
        self.draft = ""
        self.run_error = ""
        await self._keep_held("")
        return ChatState.run(text)

    @rx.event
    @guarded
    def use_suggestion(self, text: str) -> Any:
        self.draft = text
        return ChatState.send(None)

    @rx.event
    @guarded
    def stop(self) -> None:
        self._stop = True

    # --- decisions ----------------------------------------------------------------------

    @rx.event
    @guarded
    async def toggle_panel(self, interrupt_id: str, panel: str) -> Any:
        session = await self._loaded_session()
        memory = self._memory.setdefault(interrupt_id, FormMemory())
        memory.panel = "" if memory.panel == panel else panel
        self._refresh(session)
        if not memory.panel:
            return None
        return rx.call_script(FOCUS_IN_FORM % json.dumps([interrupt_id, panel, "first"]))

    @rx.event
    @guarded
    async def approve(self, interrupt_id: str) -> Any:
        return await self._decide(interrupt_id, "approve", {})

    @rx.event
    @guarded
    async def reject(self, interrupt_id: str) -> Any:
        return await self._decide(interrupt_id, "reject", {})

    @rx.event
    @guarded
    async def submit_form(self, submitted: rx.form.FormData) -> Any:
        """Every decision form posts here; hidden inputs say which decision and which form."""
        form_data = _fields_of(submitted)
        interrupt_id = str(form_data.pop("__interrupt", ""))
        form = str(form_data.pop("__form", ""))
        if form_data.pop(DRAFT_FIELD, "") == "1":
            await self._keep_draft(interrupt_id, form, form_data)
            return None
        return await self._decide(interrupt_id, form, form_data)

    async def _keep_draft(self, interrupt_id: str, form: str, data: dict[str, Any]) -> None:
        """What is typed in a form, kept for the next time it is drawn; nothing is checked or
        sent. A field changed since the last Submit loses that Submit's error. The page's
        vars follow (a form already drawn keeps what is typed in it: its values are its
        defaults), so a page shown again draws the draft at once, not before the reload's
        answer comes, which a mounted form would no longer take."""
        session = await self._loaded_session()  # after a takeover, not overwritten by it
        memory = self._memory.setdefault(interrupt_id, FormMemory())
        before = memory.drafts.get(form, {})
        errors = memory.errors.get(form)
        if errors:
            # The whole form's problem (`FORM_ERROR_KEY`) goes with any change to it.
            memory.errors[form] = {
                path: error for path, error in errors.items()
                if (before == data if path == FORM_ERROR_KEY
                    else before.get(path) == data.get(path))
            }  # fmt: skip
        memory.drafts[form] = dict(data)
        self._memory = dict(self._memory)  # stored with the state, wherever it is kept
        self._refresh(session)

    async def _decide(self, interrupt_id: str, form: str, data: dict[str, Any]) -> Any:
        session = await self._clicked()
        client = session.client
        item = next((i for i in client.interrupts if i.id == interrupt_id), None)
        if item is None:
            self._tell_beaten(interrupt_id)
        if item is None or self.resuming:
            return None
        memory = self._memory.setdefault(interrupt_id, FormMemory())
        memory.drafts[form] = dict(data)
        memory.message = ""
        limits = sessions.edit_limits(item)
        schema, initial = form_schema(item, form, limits)
        value: Any = None
        if schema:
            result = read_form(schema, form_fields(schema, initial), data)
            memory.errors[form] = result.errors
            if not result.ok:
                memory.replies += 1  # the same errors again would leave the card as it was
                # Nothing is sent; the fields show their errors and keep what was typed, and
                # the first of them takes the focus (on a long form it may be out of view).
                self._refresh(session)
                return rx.call_script(FOCUS_IN_FORM % json.dumps([interrupt_id, form, "error"]))
            value = result.value
            if form == "edit":
                value = edited_arguments(item, value, limits)
        memory.errors.pop(form, None)
        self._answering(interrupt_id)
        if self._through_desk(session, item, form):
            await self._desk_answer(session, interrupt_id, form, value)
            return None
        # Not refreshed here: the answer's own run refreshes the page as it starts (the form's
        # cleared errors with it), and a refresh here stood between the click and that run
        # (3.3 ms at 2,000 messages, 0.7 at 10).
        return ChatState.resolve(interrupt_id, form, value)

    @rx.event
    @guarded
    async def start_over(self) -> Any:
        """Leave an expired pause behind: a new conversation, the last request in the box."""
        client = (await self._loaded_session()).client
        last = next((m.text for m in reversed(client.messages) if m.role == "user"), "")
        return self._leave_conversation(draft=last)

    @rx.event
    @guarded
    async def new_conversation(self) -> Any:
        """An empty conversation; the one shown stays stored (Conversations lists it)."""
        await self._loaded_session()
        return self._leave_conversation(draft="")

    def _stop_live_run(self) -> None:
        """The tab's run, if one goes, stops as Stop stops it, and is stored as it ended
        without touching the page (`_shows`): the page shows something else now."""
        live = sessions.current(self.router.session.client_token)
        if live is not None and live.task is not None and not live.task.done():
            live.task.cancel()
        self.running = False

    def _leave_conversation(self, *, draft: str) -> Any:
        had_address = bool(self.thread_shown or self._route_thread())
        self._stop_live_run()  # else the new, empty chat waits on Stop for it
        self._show_nothing()
        self.held = ""
        self.draft = draft
        self.run_error = ""
        self._refresh(self._session())
        if had_address:
            return replace_address("/", on=CHAT_PATHS, under=CONVERSATION_PREFIX)
        return None

    @rx.event
    @guarded
    async def change_answer(self, interrupt_id: str) -> None:
        """Take back a staged answer while the rest of the batch is still open."""
        session = await self._loaded_session()
        if not self.resuming and any(i.id == interrupt_id for i in session.client.interrupts):
            session.client.clear_resolution(interrupt_id)
        self._refresh(session)

    # The answers below run in the background (`resolve`, `resolve_all`), which reads the
    # conversation saved here: each loads it first, under the state's lock.

    @rx.event
    @guarded
    async def cancel_decision(self, interrupt_id: str) -> Any:
        session = await self._clicked()
        item = next((i for i in session.client.interrupts if i.id == interrupt_id), None)
        if item is None and self._tell_beaten(interrupt_id):
            return None
        if item is not None:
            self._answering(interrupt_id)
            self._note_withdrawals(session, [item])
        if item is not None and self._through_desk(session, item, "cancel"):
            await self._desk_answer(session, interrupt_id, "cancel", None)
            return None
        return ChatState.resolve(interrupt_id, "cancel", None)

    @rx.event
    @guarded
    async def approve_all(self) -> Any:
        return await self._answer_all("approve")

    @rx.event
    @guarded
    async def reject_all(self) -> Any:
        return await self._answer_all("reject")

    @rx.event
    @guarded
    async def cancel_all(self) -> Any:
        return await self._answer_all("cancel")

    async def _answer_all(self, how: str) -> Any:
        """The batch bar: in this tab's own run, or item by item through the desk."""
        session = await self._clicked()
        items = [
            item
            for item in session.client.interrupts
            if item.can_resolve and item.status in OPEN_STATUSES
        ]
        for item in items:
            self._answering(item.id)
        if how == "cancel":
            self._note_withdrawals(session, items)
        if items and all(self._through_desk(session, item, how) for item in items):
            for item in items:
                await self._desk_answer(session, item.id, how, None)
            return None
        return ChatState.resolve_all(how, _batch_of(session.client))

    @rx.event
    @guarded
    async def retry(self) -> Any:
        """The batch bar's Retry: the failed continuation again, from this tab, or by the
        desk when it holds answers given there (someone else's, from their inbox)."""
        session = await self._clicked()
        desk = sessions.desk()
        held = session.client.state.manager.retry_submission
        if (
            desk is None
            or not self.thread_shown
            or held is None
            or not await desk.carries(self.thread_shown, list(held.interrupt_ids))
        ):
            return ChatState.resolve_all("retry", _batch_of(session.client))
        viewer = self._viewer()
        if viewer is None:
            self.run_error = self._nothing_sent()
            return None
        try:
            await desk.retry(self.thread_shown, viewer)
        except DeskError as error:
            self.run_error = error.message
            return None
        self.run_error = ""
        return None

    @rx.event
    @guarded
    async def retry_send(self) -> Any:
        """Run the last message again after its run failed (the status row's Retry)."""
        await self._loaded_session()
        if self.running or not self.can_resend:
            return None
        self.run_error = ""
        return ChatState.resend()

    @rx.event
    @guarded
    def dismiss_notice(self, notice: str) -> None:
        self.notices = [shown for shown in self.notices if shown != notice]

    @rx.event
    @guarded
    def dismiss_settled(self, decision_id: str) -> None:
        self._keep_settled([row for row in self.settled if row.decision_id != decision_id])

    @rx.event(background=True)
    @guarded_task
    async def presence(self, visibility: str) -> AsyncIterator[Any]:
        """The page's answer to "are you in view?" (`document.visibilityState`), asked every
        `LOOK_SECONDS` while it shows its owner's conversation: the desk holds the owner's
        own notices back while they look, and not while the tab is in the background. The
        desk's write holds no lock of the page (its clicks and stream go on meanwhile)."""
        async with self:
            own = self._own_thread()
            token = self.router.session.client_token
            live = sessions.current(token)
            viewer = self._viewer()
            # Only while its person is still signed in here: a tab signed out elsewhere (or
            # expired) shows them nothing new, so nothing of theirs is held back for it.
            signed_in = viewer is not None and live is not None and (
                viewer.email == live.identity.email
            )
        await _say_presence(token, own, looking=visibility == "visible" and signed_in)
        yield

    @rx.event
    @guarded
    def browser_result(self, result: dict[str, Any]) -> None:
        """A JavaScript client tool finished in the page."""
        call_id = str(result.get("id", ""))
        self._session().bridge.settle(call_id, result.get("value"))

    # --- background work ----------------------------------------------------------------

    @rx.event(background=True)
    @guarded_task
    async def run(self, text: str) -> AsyncIterator[Any]:
        async for event in self._work(lambda client: client.send(text), text=text):
            yield event

    @rx.event(background=True)
    @guarded_task
    async def resend(self) -> AsyncIterator[Any]:
        """The status row's Retry: the failed message's run again, or, where its answers
        were applied and only the reply after them failed, that reply."""

        async for event in self._work(lambda client: client.run_again()):
            yield event

    @rx.event(background=True)
    @guarded_task
    async def resolve(self, interrupt_id: str, form: str, value: Any) -> AsyncIterator[Any]:
        def action(client: ChatClient) -> Awaitable[None]:
            if form == "cancel":
                return client.cancel(interrupt_id)
            if form == "response":
                return client.resolve_interrupt(interrupt_id, response=value)
            if form == "edit":
                return client.resolve_interrupt(interrupt_id, approved=True, edited_args=value)
            approved = form == "approve"
            if value is None:
                return client.resolve_interrupt(interrupt_id, approved=approved)
            return client.resolve_interrupt(interrupt_id, approved=approved, payload=value)

        def still(client: ChatClient) -> bool:
            return any(
                item.id == interrupt_id and item.status in OPEN_STATUSES
                for item in client.interrupts
            )

        async for event in self._work(action, still=still, answering=True):
            yield event

    @rx.event(background=True)
    @guarded_task
    async def resolve_all(self, how: str, batch: str = "") -> AsyncIterator[Any]:
        """The batch bar's `how` for the batch of the paused run `batch` (what the click saw)."""

        def action(client: ChatClient) -> Awaitable[None]:
            if how == "cancel":
                return client.cancel_interrupts()
            if how == "retry":
                return client.retry_interrupts()
            return client.resolve_interrupts(how == "approve")

        def still(client: ChatClient) -> bool:
            return any(item.interrupted_run_id == batch for item in client.interrupts)

        async for event in self._work(action, still=still, answering=True):
            yield event

    async def _work(
        self,
        action: Callable[[ChatClient], Awaitable[None]],
        *,
        text: str = "",
        still: Callable[[ChatClient], bool] | None = None,
        answering: bool = False,
    ) -> AsyncIterator[Any]:
        """Run one client action, streaming its progress into the page, as whoever is signed
        in now (nothing runs for a visitor who is not).

        Whatever fails ends the run here, visibly: the client's own errors (the agent's
        answer, a broken stream) show in the status row with Retry; an exception on this side
        is logged with its traceback and shown too; `running` is always reset, so the page
        stays usable; and `text`, a message being sent, goes back into the composer if it
        never reached the client.

        An action clicked while the tab's last one ends (a batch's answers tapped one after
        another: each is staged at once, then the conversation is stored) waits for it, and
        for any waiting before it, rather than being lost. After a wait it runs only if it
        still applies (`still`: what it answers is still open; and the same person is at the
        tab): a double click on Approve all must not approve the next batch, which nobody has
        seen. Answers cannot be clicked while the agent runs (nothing is open then), so a
        wait that outlasts `ENDING_WAIT_SECONDS` says the action was not sent.
        """
        waited, who = False, ""
        give_up = time.monotonic() + ENDING_WAIT_SECONDS
        while True:
            async with self:
                ending = self._ending()
                if ending is None:
                    gone = waited and (self._person != who or not self._applies(still))
                    # Answered meanwhile: the tab took over the stored conversation between
                    # the click and now (another tab's answer was stored), so what it answers
                    # is no longer open. Said as a lost race is, rather than run and refused.
                    live = sessions.current(self.router.session.client_token) is not None
                    beaten = not gone and answering and live and not self._applies(still)
                    if beaten:
                        self._note_lost(f"{sessions.ANSWERED_MEANWHILE} {NOTHING_RAN}")
                    session = None if gone or beaten or self.running else self._begin(text)
                    saved_before = self._client_json
                    break
                if not waited:
                    who = self._person
            left = give_up - time.monotonic()
            if left <= 0:
                _log.warning("An action was not run: the tab's last one had not ended")
                async with self:
                    self._note_lost(STILL_BUSY)
                    self._give_back(text)
                return
            waited = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ending.wait(), left)
        if session is None:
            return
        done = session.idle
        try:
            async for event in self._run(session, action, text, saved_before, done, answering):
                yield event
        finally:
            done.set()

    def _ending(self) -> asyncio.Event | None:
        """Under the state's lock: while an action of the tab's runs, what says it has ended
        (`None` when none runs, or none can be waited for). A `running` whose action is over
        without having said so (its task cancelled with the page's events) is reset here;
        one whose client task still goes on without it is not waited for."""
        if not self.running:
            return None
        live = sessions.current(self.router.session.client_token)
        if live is not None and not live.idle.is_set():
            return live.idle
        if live is None or not live.busy:
            self.running = False
        return None

    def _applies(self, still: Callable[[ChatClient], bool] | None) -> bool:
        """Under the state's lock: whether an action that waited still applies to the tab's
        conversation as it is now."""
        if still is None:
            return True
        live = sessions.current(self.router.session.client_token)
        return live is not None and still(live.client)

    def _begin(self, text: str) -> sessions.Session | None:
        """Under the state's lock: the session an action runs in, marked running; `None` when
        nothing may run here (the page says why, and `text` goes back into the box)."""
        if self.read_only:  # someone else's: only the desk acts on it, for its owner
            who = self.owner_name or "someone else"
            self.desk_notice = f"This is {who}'s conversation: nothing runs here for you."
            self._give_back(text)
            return None
        viewer = self._viewer()
        if viewer is None:
            self.run_error = self._nothing_sent()
            self._give_back(text)
            return None
        self._owner = self._owner or viewer.email
        try:
            session = self._session(viewer)
        except Exception as error:  # e.g. the client could not be made
            _log.exception("Starting a run failed")
            self.run_error = failure_message(error)
            self._give_back(text)
            return None
        if session.client.running_elsewhere:  # the next stored version ends it
            self.desk_notice = RUNNING_ELSEWHERE + _kept(text)
            self._give_back(text)
            return None
        self.running = True
        self._stop = False
        session.idle = asyncio.Event()  # this action's own: set once it has ended
        return session

    async def _run(
        self,
        session: sessions.Session,
        action: Callable[[ChatClient], Awaitable[None]],
        text: str,
        saved_before: str,
        done: asyncio.Event,
        answering: bool,
    ) -> AsyncIterator[Any]:
        """`_work`, once it runs: the action, followed into the page, and its end (`done`
        set as `running` is reset, under the same lock)."""
        client = session.client
        before = len(client.messages)
        task: asyncio.Task[None] | None = None
        failure: Exception | None = None
        try:
            task = session.task = asyncio.ensure_future(action(client))
            async for event in self._follow(session, task):
                yield event
        except Exception as error:  # the page's side of the run failed: stop the run too
            failure = error
            if task is not None and not task.done():
                task.cancel()
        if failure is None and task is not None and task.done() and not task.cancelled():
            failure = cast(Exception | None, task.exception())
        async with self:
            if not self._shows(session):  # its person signed out: stored for them, unseen
                done.set()
                await _store_unseen(session)
                return
            self.running = False
            done.set()
            if isinstance(client.error, sessions.ConversationBusy | sessions.DecidedElsewhere):
                await self._behind(saved_before, client.error, text, answering)
                return
            try:
                self._refresh(session)
            except Exception as error:
                failure = failure or error
            if isinstance(failure, UsageError | ClientError):
                self.run_error = str(failure)
            elif failure is not None:
                _log.error("A run failed in the app", exc_info=failure)
                self.run_error = failure_message(failure)
            elif client.error is not None:
                _log.warning("A run ended with an error: %s", client.error.message)
            if self._stop:
                self.run_error = "Stopped."
                self._stop = False
            sent = any(m.role == "user" and m.text == text for m in client.messages[before:])
            if text and not sent:
                self._give_back(text)
            address = await self._record(session)
        if address is not None:
            yield address

    async def _behind(
        self, shown: str, refusal: ClientError, text: str, answering: bool
    ) -> None:
        """The tab's run was refused before it started: a run elsewhere holds the
        conversation, or one of its answers' decisions was decided a moment before
        (`DecidedElsewhere`), which the tab had not seen yet. Nothing of the tab's went, so it
        shows the stored conversation again, not a failed copy of its own (storing that would
        overwrite the other run's), and the message goes back into the composer."""
        await self._show_stored(shown)
        if isinstance(refusal, sessions.DecidedElsewhere):  # said above the conversation
            if not refusal.own:  # their own answer from elsewhere: the card shows it stands
                self._note_lost(f"{refusal.message} {NOTHING_RAN}")
            self._give_back(text)
            return
        self.desk_notice = refusal.message + _kept(text)
        self._give_back(text)
        if answering:  # the cards turn to the other run's once it is stored
            self._note_lost(
                "Your answer arrived while the conversation was running elsewhere (another "
                f"tab, or someone else's answer). {NOTHING_RAN}"
            )

    async def _show_stored(self, shown: str) -> None:
        """Show the stored conversation in place of the tab's copy (`shown`, its JSON), which
        is behind it."""
        self._client_json, self._desk_version = shown, 0  # read the stored one again
        self._saved_by = ""
        sessions.forget(self.router.session.client_token)
        await self._sync_from_desk(self._viewer())
        self._refresh(self._session())

    async def _follow(
        self, session: sessions.Session, task: asyncio.Task[None]
    ) -> AsyncIterator[Any]:
        """Stream the task's progress into the page until it is done (Stop cancels it)."""
        client = session.client
        last_flush = 0.0
        # The streamed message whose first words were flushed at once: to begin with, the
        # page's last reply, whose words it shows already (a continuation's first flush is
        # not its words).
        first_words_of = streaming_preview(client.messages)[0]
        record = InFlightRecord()
        # The messages the page shows: a message sent shows at once, before any reply (a
        # model may take seconds to its first word, or a remote agent say nothing for long).
        shown = len(client.messages)
        while True:
            for call in session.bridge.take_unsent():
                # A JavaScript client tool: the page evaluates it and posts the value back.
                yield rx.call_script(browser_call(call.script, call.id),
                                     callback=ChatState.browser_result)  # fmt: skip
            if task.done():
                break
            changed = asyncio.ensure_future(session.changed.wait())
            called = asyncio.ensure_future(session.bridge.wakeup.wait())
            await asyncio.wait(
                [task, changed, called], timeout=FLUSH_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            changed.cancel()
            called.cancel()
            session.bridge.wakeup.clear()
            # A message's first words go out at once; what follows is batched per interval.
            streamed_id = _first_words(client)
            first = streamed_id not in ("", first_words_of)
            if first:
                first_words_of = streamed_id
                record.words_out()
            elif time.monotonic() - last_flush < FLUSH_SECONDS and not task.done():
                continue
            last_flush = time.monotonic()
            save_after = False
            async with self:
                if self._stop:
                    task.cancel()
                if not self._shows(session):
                    continue  # its person signed out: `_forget_person` stopped it
                # The conversation's own address, when this write was its first stored.
                address = self._take_recorded(session)
                # Not after the run (`_work` stores it then), nor over a write under way.
                if (
                    not task.done() and session.recording is None
                    and record.take(time.monotonic(), first_words=first)
                ):  # fmt: skip
                    self._start_record(session)
                if session.changed.is_set():
                    session.changed.clear()
                    # An answer in flight is saved as such (`_client_json`) before its
                    # continuation gets far: a page that takes the conversation over after
                    # this worker died shows it applied or failed, with Retry
                    # (`ChatClient.restore`), not open as if nobody had answered.
                    flipped = client.resuming != self.resuming
                    grew = len(client.messages) != shown
                    shown = len(client.messages)
                    if self._refresh_streaming(client) or flipped or grew:
                        # An answer leaving and a message's first words go out before the
                        # save (the client's whole state as JSON: milliseconds at 2,000
                        # messages), which follows at once, below.
                        save_after = first or flipped
                        self._refresh(session, save=not save_after)
                    # Stored on the desk at a later flush (`InFlightRecord`), without
                    # holding the page.
                    if flipped:
                        record.resuming_changed(time.monotonic())
            if save_after:
                async with self:
                    if self._shows(session):
                        self._save(session)
            if address is not None:
                yield address


#: How a notice of an answer that went nowhere ends.
NOTHING_RAN = "Nothing ran for yours: the card shows the answer that counted."

#: A decision form's answer, as a sentence names it.
_ANSWER_WORDS = {
    "approve": "approval", "edit": "approval with changes", "reject": "rejection",
    "cancel": "cancellation", "response": "answer",
}  # fmt: skip


def _fields_of(submitted: Mapping[str, Any]) -> dict[str, Any]:
    """A form's fields by name: the value, or every value of a name several controls share
    (a set of boxes: a dict of the form would keep only the last one ticked)."""
    if not isinstance(submitted, rx.form.FormData):
        return dict(submitted)
    fields: dict[str, Any] = {}
    for name in submitted:
        values = submitted.getlist(name)
        fields[name] = values if len(values) > 1 else values[0]
    return fields


def _batch_of(client: ChatClient) -> str:
    """The paused run whose decisions `client` shows ("" when none): what a batch bar's
    click was about."""
    return next((item.interrupted_run_id for item in client.interrupts), "")


def _kept(text: str) -> str:
    """What a notice adds when the message it stopped went back into the box."""
    return " Your message is kept in the box." if text else ""


async def _store_unseen(session: sessions.Session) -> None:
    """Store a run's conversation for whoever ran it, once no page shows it (they signed out
    while it ran): as `ChatState._record` would, without the page's address or notices."""
    desk = sessions.desk()
    client = session.client
    if desk is None or not client.messages or client.running_elsewhere:
        return
    if session.recording is not None:  # a write begun while it was shown lands first
        await asyncio.wait([session.recording])
    state = client.state
    person = session.identity
    try:
        await desk.record(state.thread_id, person, person, state, session.state_json.dump(state))
    except DeskError as error:
        _log.warning("Could not store a conversation its person left: %s", error.message)


@dataclass(frozen=True)
class _Recorded:
    """A finished write of a tab's conversation: the desk's version, or why it failed."""

    thread_id: str
    owner: Identity
    viewer: Identity
    outcome: int | DeskError


def _answer_of(form: str, value: Any) -> Answer:
    """A decision form's value as the desk takes it."""
    if form == "cancel":
        return Answer(kind="cancel")
    if form == "response":
        return Answer(kind="answer", payload=value, has_payload=True)
    if form == "edit":
        return Answer(kind="approve", edited_args=value, has_edited_args=True)
    if form == "approve":
        return Answer(kind="approve", payload=value, has_payload=value is not None)
    return Answer(kind="reject", payload=value, has_payload=value is not None)


def _settled_row(settled: SettledRequest, viewer_email: str) -> SettledRow:
    outcome, what = settled_elsewhere(settled, viewer_email)
    return SettledRow(
        decision_id=settled.item.decision_id,
        outcome=outcome,
        what=what,
        href=address(settled.item.thread_id),
    )


def _votes_of(items: Iterable[InboxItem], viewer_email: str) -> dict[str, list[str]]:
    """The pending quorum items' approvals so far: item id -> [progress as `viewer_email`
    reads it, voter emails...]."""
    return {
        item.item_id: [item.progress_for(viewer_email), *(vote.email for vote in item.approvals)]
        for item in items
        if item.status == "pending" and item.quorum > 1
    }


def _escalations(items: Iterable[InboxItem]) -> dict[str, str]:
    """The pending items the desk escalated: item id -> "escalated to admin after 2 h"."""
    return {
        item.item_id: item.escalation
        for item in items
        if item.status == "pending" and item.escalation
    }


async def _say_presence(token: str, thread: str, *, looking: bool) -> None:
    """Tell the desk whether the tab's owner looks at their conversation `thread`: when that
    changes, and every `PRESENCE_SECONDS` while they look (the desk counts it a while longer).
    The person is the one the tab's last event verified."""
    desk, live = sessions.desk(), sessions.current(token)
    if not thread or desk is None or live is None:
        return
    said, now = sessions.presence(token), time.monotonic()
    # When this tab last said its owner looks at `thread` (None: it has not, or looked away).
    looked = said.at if said is not None and said.thread == thread and said.looking else None
    if looking and looked is not None and now - looked < PRESENCE_SECONDS:
        return
    if not looking and looked is None:
        return  # nothing was held back for this tab
    try:
        await desk.watching(thread, live.identity, looking=looking)
    except DeskError as error:  # a notice may go meanwhile; said again at the next look
        _log.info("Could not say whether the page shows %s: %s", thread, error.message)
        return
    sessions.record_presence(token, sessions.Presence(thread, now, looking))


def _first_words(client: ChatClient) -> str:
    """The id of the message being streamed once it has text, else ""."""
    if client.status != "streaming":
        return ""
    message_id, text, _ = streaming_preview(client.messages)
    return message_id if text else ""


async def _saved_conversation(token: str) -> tuple[str, dict[str, FormMemory], str, str]:
    """The client state, form memory and owner saved in another token's `ChatState`, and
    which process saved the state (`ChatState._saved_by`)."""
    root = await get_state_manager().get_state(rx.BaseStateToken(ident=token, cls=ChatState))
    saved = root.get_substate(ChatState.get_full_name().split("."))
    assert isinstance(saved, ChatState)
    return saved._client_json, dict(saved._memory), saved._owner, saved._saved_by
