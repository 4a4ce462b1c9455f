"""The approval desk: stored conversations, the inbox, and continuations the server runs.

Owns `Desk` and `RunAs`. A conversation is a headless `ChatClient` whose state lives in the
database (`DeskStore`); whoever acts on it — its owner sending a message, an approver
deciding from the inbox, a script over HTTP — acts through the desk, which checks who they
are allowed to be, commits the decision exactly once, and runs what follows in a task it
owns (not a browser tab's). Each step is stored and announced (`Fanout`), so every page
looking at the conversation or the inbox moves on without reloading, on any worker.

A decision's way through: `decide` refuses what is unknown (404), no longer pending (409,
naming who decided), expired (410), not the caller's (403, saying who may) or invalid for the
item's schemas (400); a quorum rule collects one approval per allowed person (the vote's
primary key) until enough of them count (those the rule in force allows); the last one moves
the row from `pending` to `decided` with a conditional UPDATE, so of two deciders one wins.
Then `_continue` takes the conversation's lease, restores its client, stages every decided
answer of the batch and sends the continuation as the decider, with the earlier approvers
that count as the engine's `cosigners` (the engine checks the policy again, and its ledger
runs each tool once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from chat_app.client import (
    ANSWERABLE_STATUSES,
    ANSWERED_BEFORE,
    INTERRUPTED,
    ChatClient,
    ClientState,
    ClientTool,
    Connection,
    InterruptItem,
    ToolApprovalInterrupt,
)
from chat_app.interrupts import (
    ABSENT,
    Decision,
    DecisionProblem,
    SchemaProblem,
    UnusableSchemaError,
    read_decision,
    schema_problem,
    schema_problems,
)
from chat_app.observe import close_decision, decision_span, fail_current_span, run_span
from chat_app.trust import (
    ANONYMOUS,
    AuditEntry,
    Identity,
    LedgerUnavailable,
    Policy,
    approval_record,
    describe_duration,
    held_record,
    refusal_record,
    verified_by,
)
from chat_app.trust.identity import spelled_out

from .fanout import Fanout
from .judge import Judge
from .records import (
    Answer,
    ConversationStatus,
    ConversationSummary,
    ConversationView,
    DecideResult,
    DeskError,
    InboxItem,
    PastDecision,
    SettledRequest,
    arguments_line,
    expiry_note_of,
)
from .store import (
    AutoDecision,
    DeskStore,
    Saved,
    decision_id_of,
    expiry_entry,
    summary_of,
    waiting_line,
)

__all__ = [
    "ANSWERABLE",
    "LEASE_SECONDS",
    "RUN_SECONDS",
    "ConnectionFor",
    "Desk",
    "RunAs",
    "ToolSource",
    "inbox_topic",
    "owner_topic",
    "thread_topic",
]

_log = logging.getLogger(__name__)
#: What an answer of the other kind is told (`Answer.read` takes either shape).
_WRONG_KIND = {
    "question": 'This is a question: answer it with {"value": …}, or {"cancelled": true}.',
    "tool": 'This is a tool approval: give {"approved": true|false}, or {"cancelled": true}.',
}

#: Item statuses a person can still act on (`InterruptItem.answerable`).
ANSWERABLE = ANSWERABLE_STATUSES
#: How long a worker's right to run a conversation lasts without being renewed.
LEASE_SECONDS = 60.0
#: What names a page's run in the lease's runner (`worker:page:random`).
PAGE_RUNNER = ":page:"
#: What a message or a Retry is told while the worker stops (`Desk.hand_over`).
STOPPING = "This server is restarting: nothing was sent. Send it again in a moment."
#: A page's answers taken just as its worker stopped: the next worker's recovery sends them.
ANSWERS_KEPT = "This server is restarting: your answers are kept, and go on once it is back."
#: How long a stopping worker lets its runs end on their own before it hands the rest over
#: (`Desk.hand_over`): of the 5 s the app's shutdown gives its background tasks, the rest is
#: for storing and letting go of what is left.
DRAIN_SECONDS = 3.0
#: How long the runs stopped at a hand-over have to store themselves and let go.
HAND_OVER_SECONDS = 1.5
#: How often a running conversation is stored (and announced) at most.
SAVE_EVERY_SECONDS = 0.1
#: How often text being streamed is stored (and announced) at most: a watcher's page shows
#: a continuation's reply growing at this pace.
STREAM_SAVE_SECONDS = 0.5
#: How often a page says its owner is looking at a conversation.
WATCH_SECONDS = 20.0
#: How long such a word holds: they count as looking until then (slack for a late one).
LOOK_HOLDS = timedelta(seconds=WATCH_SECONDS * 1.5)
#: How many pending decisions `Desk.refile` files again in one transaction.
REFILE_PAGE = 500
#: How often a worker files pending decisions again after its start: during a rolling
#: restart, a worker still on the old policy files its pauses under it.
REFILE_EVERY_SECONDS = 600.0
#: How long one run of the desk's may take before it is stopped: an agent that never ends
#: its stream (words forever, or keep-alive comments alone) would hold the conversation,
#: and nobody could send to it, retry it or stop it.
RUN_SECONDS = 1800.0


def thread_topic(thread_id: str) -> str:
    return f"thread:{thread_id}"


def inbox_topic() -> str:
    return "inbox"


def owner_topic(email: str) -> str:
    """Any conversation of this person moved on (or began)."""
    return f"owner:{email.lower()}"


class _HandedOver(Exception):
    """A run stopped because its worker is stopping (`Desk.hand_over`), stored as running;
    or not begun, its answers left for the next worker."""


@dataclass(slots=True)
class PageRunEnd:
    """How a page's own run ended, as the page tells `Desk.page_run`: its answers count as
    carried (traced, timed, `carried`) only when the run `finished` (`RUN_FINISHED`) and
    without an error event (the agent refused its answers, or the model failed: a refused
    one waits again once the page stores it). A stream cut off before its end carried
    nothing that anyone knows of."""

    errored: bool = False
    finished: bool = False
    #: Set by the desk when its worker stops (`Desk.hand_over`) and lets the run's lease go:
    #: another worker may run the conversation now, so the page's stream goes no further.
    stopped: bool = False


@dataclass(frozen=True, slots=True)
class _PageLease:
    """A page's run under way, as the desk holds its lease."""

    thread_id: str
    end: PageRunEnd
    #: Stops the renewing (`kept`).
    done: asyncio.Event
    kept: asyncio.Task[None]
    #: Set once the run has let go of its lease.
    ended: asyncio.Event


@dataclass(frozen=True, slots=True)
class RunAs:
    """Whom a run acts for: the verified person, and for a quorum, who approved before."""

    identity: Identity
    cosigners: Mapping[str, tuple[Identity, ...]] = field(default_factory=dict)
    #: Who answered each item of a batch decided by several people (by interrupt id).
    deciders: Mapping[str, Identity] = field(default_factory=dict)


#: How the desk reaches the agent for a run: a connection acting for that person.
ConnectionFor = Callable[[RunAs], Connection]
#: The tools the desk's clients know (typed approvals; client tools with their functions).
ToolSource = Callable[[], Sequence[ClientTool]]


#: A page's write refused because the stored conversation changed since the tab's copy.
STORED_SINCE = "The conversation was stored from elsewhere since this tab's copy of it."


class Desk:
    """Stored conversations, the inbox and server-run continuations."""

    def __init__(
        self,
        store: DeskStore,
        *,
        connection_for: ConnectionFor,
        tools: ToolSource = tuple,
        policy: Policy | None = None,
        fanout: Fanout | None = None,
        worker: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        lease_seconds: float = LEASE_SECONDS,
        run_seconds: float = RUN_SECONDS,
        notify_idle_seconds: float = 60.0,
        refile_every_seconds: float = REFILE_EVERY_SECONDS,
        agent_reads_policy: bool = True,
        audit: Callable[[Sequence[AuditEntry]], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.connection_for = connection_for
        self.tools = tools
        #: Who may see and decide what, by `policy` (the settings below write through to it).
        self.judge = Judge(
            policy, agent_reads_policy=agent_reads_policy, clock=clock,
            notify_idle_seconds=notify_idle_seconds,
        )  # fmt: skip
        self.fanout = fanout or Fanout()
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_seconds = lease_seconds
        self.run_seconds = run_seconds
        self.refile_every_seconds = refile_every_seconds
        #: Writes to the audit trail (the agent's ledger): an answer the desk refused is put
        #: in it, as the agent puts the ones it refuses.
        self.audit = audit
        #: Called when decisions came, or were carried (the timers look at once rather than at
        #: their next round: a notice, or whoever asked told how it ended).
        self.on_new_decisions: Callable[[], None] | None = None
        #: The runs going on in this process, by conversation.
        self._live: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: One run or continuation at a time per conversation in this process: the lease is
        #: this worker's, so two of its tasks would both hold it.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        #: `refiled`: done (until `keep_recovering` says it is due again), and one at a time
        #: (the timers and the recovery both ask).
        self._refiled = False
        self._refiling = asyncio.Lock()
        #: This worker is stopping (`hand_over`): it takes no new message or Retry. Once
        #: `_handing`, its runs stop where they are, each told by its future here, stored
        #: as running with the lease let go at once; those it stopped are `_handed`.
        self._stopping = False
        self._handing = False
        self._stop_run: dict[str, asyncio.Future[None]] = {}
        self._handed: list[str] = []
        #: The pages' runs under way here, by their runner.
        self._page_runs: dict[str, _PageLease] = {}

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.judge.clock

    @clock.setter
    def clock(self, clock: Callable[[], datetime]) -> None:
        self.judge.clock = clock

    @property
    def policy(self) -> Policy | None:
        return self.judge.policy

    @policy.setter
    def policy(self, policy: Policy | None) -> None:
        self.judge.policy = policy

    @property
    def agent_reads_policy(self) -> bool:
        return self.judge.agent_reads_policy

    @agent_reads_policy.setter
    def agent_reads_policy(self, reads: bool) -> None:
        self.judge.agent_reads_policy = reads

    @property
    def notify_idle_seconds(self) -> float:
        return self.judge.notify_idle_seconds

    @notify_idle_seconds.setter
    def notify_idle_seconds(self, seconds: float) -> None:
        self.judge.notify_idle_seconds = seconds

    # --- reading ------------------------------------------------------------------------

    async def conversations(self, viewer: Identity) -> list[ConversationSummary]:
        found: list[ConversationSummary] = await self._db(self.store.conversations_of, viewer.email)
        return found

    async def view(self, thread_id: str, viewer: Identity) -> ConversationView:
        """A conversation for `viewer`: theirs, or (read-only) one with a decision they may
        make or have made, or any for an admin. `DeskError` unknown or forbidden."""
        row = await self._db(self.store.load, thread_id)
        if row is None:
            raise DeskError("unknown", f"There is no conversation {thread_id}.")
        items = await self.decisions_of(thread_id)
        summary = summary_of(row)
        running = _running(row, self.clock())
        # With sign-in off everyone is the anonymous visitor, whose conversations (those the
        # list shows them) are theirs: to open in a new tab, and to go on with.
        if viewer.email == row.owner_email:
            return ConversationView(
                summary, row.state, tuple(items), running=running, held=row.held_message or ""
            )
        judge = self.judge
        if judge.is_admin(viewer) or any(judge.may_see_item(item, viewer) for item in items):
            return ConversationView(
                summary, row.state, tuple(items), read_only=True, running=running
            )
        raise DeskError(
            "forbidden", "This conversation is someone else's, with no decision of yours in it."
        )

    def current(self, view: ConversationView) -> list[InboxItem]:
        """`view`'s pause as a script reads it: its pending decisions, and those decided at
        the desk whose answers it holds until the rest of their batch is decided (open still
        in the stored conversation, which no run is carrying), in the order the agent asked
        them."""
        asked = [item.id for item in ClientState.from_json(view.state).interrupts
                 if item.answerable and not view.running]  # fmt: skip
        order = {item_id: n for n, item_id in enumerate(asked)}
        listed = [
            item for item in view.decisions
            if item.status == "pending" or (item.status == "decided" and item.item_id in order)
        ]  # fmt: skip
        return sorted(listed, key=lambda item: (order.get(item.item_id, len(order)),
                                                item.created_at))  # fmt: skip

    def refusals(self, view: ConversationView) -> dict[str, dict[str, str]]:
        """Why the agent refused the last answer to each of `view`'s pending decisions that
        waits again because of it, by interrupt id: `{"code", "message"}` as the engine said
        it (an approver the agent's own policy does not know, say). A decision answered at
        the desk is open again then, and a script would read only that it waits."""
        pending = {item.item_id for item in view.pending}
        if not pending:
            return {}
        state = ClientState.from_json(view.state)
        return {
            item.id: {"code": item.error.code, "message": item.error.message}
            for item in state.interrupts
            if item.id in pending and item.answerable and item.error is not None
        }

    def answer_schemas(self, view: ConversationView) -> dict[str, dict[str, Any]]:
        """What the answer to each of `view`'s pending decisions is checked against, by
        interrupt id, read as `decide` reads it (the conversation restored with the tools as
        they are now), for a client that builds its own form:

        - a question: `value`, its response schema (`None`: any value);
        - a tool call: `approvePayload` and `rejectPayload` (`None`: that decision takes no
          payload), `editedArgs`, the tool's input schema (`None`: edits are not taken,
          as the engine takes none without one, nor a quorum, whose approvals are of the
          arguments as shown, nor a rule whose `editable` is empty), and `editable`, the
          arguments its rule lets an approver change (`None`: any);
        - a tool call paused before a release changed its tool, held as an item answered
          with the approval's envelope: `approval`, the schema the whole `{"approved",
          "payload", "editedArgs"}` answer is checked against.
        """
        pending = {item.item_id: item for item in view.pending}
        if not pending:
            return {}
        found: dict[str, dict[str, Any]] = {}
        for item in self._client(view.state, RunAs(ANONYMOUS)).interrupts:
            decision = pending.get(item.id)
            if decision is None or not item.answerable:
                continue
            if isinstance(item, ToolApprovalInterrupt):
                editable = self.judge.editable(item)
                edits = None if decision.quorum > 1 or editable == () else item.input_schema
                found[item.id] = {
                    "approvePayload": item.approve_schema,
                    "rejectPayload": item.reject_schema,
                    "editedArgs": edits,
                    "editable": None if editable is None else list(editable),
                }
            elif decision.kind == "tool":
                found[item.id] = {"approval": item.response_schema}
            else:
                found[item.id] = {"value": item.response_schema}
        return found

    async def inbox(
        self,
        viewer: Identity,
        *,
        tool: str | None = None,
        requester: str | None = None,
        everyone: bool = False,
        limit: int = 50,
    ) -> tuple[list[InboxItem], int]:
        """The pending decisions `viewer` may make (every pending one, for an admin asking
        for `everyone`), newest first, and how many there are in all."""
        if viewer.anonymous and self.policy is not None:
            return [], 0
        everyone = everyone and self.judge.is_admin(viewer)
        items, total = await self._db(
            lambda: self.store.inbox(
                self.judge.routes(viewer),
                viewer_email=viewer.email,
                everyone=everyone,
                tool=tool,
                requester=requester,
                limit=limit,
                now=self.clock(),
            )  # fmt: skip
        )
        items = [self.judge.judged(item) for item in items]
        if everyone:
            return items, total
        allowed = [item for item in items if self.judge.refusal(item, viewer, "approve") is None]
        return allowed, total - (len(items) - len(allowed))

    async def inbox_choices(
        self, viewer: Identity, *, everyone: bool = False
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """The tools and the requesters (email, name) among the decisions `inbox` lists, for
        its filters."""
        if viewer.anonymous and self.policy is not None:
            return [], []
        everyone = everyone and self.judge.is_admin(viewer)
        found: tuple[list[str], list[tuple[str, str]]] = await self._db(
            lambda: self.store.inbox_choices(
                self.judge.routes(viewer),
                viewer_email=viewer.email,
                everyone=everyone,
                now=self.clock(),
            )  # fmt: skip
        )
        return found

    async def decided(self, viewer: Identity, *, limit: int = 50) -> list[PastDecision]:
        """What `viewer` decided, newest first: their answers, and their approvals towards a
        quorum once it is settled (`DeskStore.decided_by`)."""
        if viewer.anonymous or not viewer.email:
            return []
        found: list[PastDecision] = await self._db(
            lambda: self.store.decided_by(viewer.email, limit=limit)
        )
        return found

    async def settled_for(
        self, viewer: Identity, since: datetime, *, limit: int = 50
    ) -> list[SettledRequest]:
        """`viewer`'s requests that someone else settled after `since`, or that expired,
        oldest first (`DeskStore.settled_for`): what their page tells them of."""
        if viewer.anonymous or not viewer.email:
            return []
        found: list[SettledRequest] = await self._db(
            partial(self.store.settled_for, viewer.email, since, limit=limit)
        )
        return found

    def may_decide(self, item: InboxItem, viewer: Identity) -> bool:
        """Whether `viewer` may approve `item` (the inbox marks the rest in an admin's view
        of everything)."""
        return self.judge.refusal(item, viewer, "approve") is None

    async def version(self, thread_id: str) -> int:
        """The stored conversation's version (0: none): it grows at every stored change."""
        found: int = await self._db(self.store.version, thread_id)
        return found

    async def decisions_of(self, thread_id: str) -> list[InboxItem]:
        """Every decision of a conversation, pending or past, with its votes."""
        found: list[InboxItem] = await self._db(self.store.decisions_of, thread_id)
        return [self.judge.judged(item) for item in found]

    async def carried(self, thread_id: str, item_ids: Sequence[str]) -> bool:
        """Whether a run carrying any of these answers went through (`DeskStore.carried`)."""
        found: bool = await self._db(self.store.carried, thread_id, item_ids)
        return found

    async def decision(self, decision_id: str) -> InboxItem | None:
        found: InboxItem | None = await self._db(self.store.decision, decision_id)
        return None if found is None else self.judge.judged(found)

    # --- acting -------------------------------------------------------------------------

    async def start(self, owner: Identity, text: str) -> str:
        """A new stored conversation, started by `owner` with `text`; the run goes on in the
        background. Returns its thread id."""
        text = text.strip()
        if not text:
            raise DeskError("invalid", "The message is empty.")
        self._refuse_if_stopping()
        client = self._client(None, RunAs(owner))
        now = self.clock()
        await self._db(
            lambda: self.store.create(
                client.thread_id,
                owner_email=owner.email,
                owner_name=owner.name,
                title=_title(text),
                state=client.state.to_json(),
                now=now,
                status="running",
            )  # fmt: skip
        )
        if self._handing:  # begun as the worker handed over: not run, and not kept empty
            await self._db(self.store.undo_create, client.thread_id)
            raise DeskError("unavailable", STOPPING)
        self._spawn(self._run(client.thread_id, RunAs(owner), lambda c: c.send(text)))
        return client.thread_id

    async def post(self, thread_id: str, sender: Identity, text: str) -> None:
        """Add a message to a stored conversation (its owner only), and run it."""
        text = text.strip()
        if not text:
            raise DeskError("invalid", "The message is empty.")
        row = await self._db(self.store.load, thread_id)
        if row is None:
            raise DeskError("unknown", f"There is no conversation {thread_id}.")
        if sender.email != row.owner_email:
            raise DeskError("forbidden", "Only the person who started a conversation writes in it.")
        self._refuse_if_stopping()
        if row.status == "waiting":
            raise DeskError(
                "busy", "Answer or withdraw the pending decisions first; then send the message."
            )
        # Of two messages posted at once, one runs: the other is told to wait. Only over
        # the version read above: a run that stored since (another tab's message, a Retry)
        # goes first, and this one is told to wait too.
        if self._busy(thread_id) or not await self._begin_run(thread_id, if_version=row.version):
            raise DeskError("busy", "The conversation is running; wait for its reply.")
        await self._refuse_if_handing(thread_id, row.status)
        self._spawn(self._run(thread_id, RunAs(sender), lambda client: client.send(text)))

    async def retry(self, thread_id: str, viewer: Identity) -> None:
        """Run again what failed: the last continuation, or the last message."""
        row = await self._db(self.store.load, thread_id)
        if row is None:
            raise DeskError("unknown", f"There is no conversation {thread_id}.")
        if viewer.email != row.owner_email and not self.judge.is_admin(viewer):
            raise DeskError(
                "forbidden", "Only the person who started it, or an admin, retries a conversation."
            )
        state = ClientState.from_json(row.state)

        async def again(client: ChatClient) -> None:
            if client.state.can_retry or client.state.can_resend or client.can_go_on:
                await client.run_again()
            elif _reply_lost(client.state):  # stored before the client said so
                await _go_on(client)
            # Else a run before this one (another worker's) has done it meanwhile.

        if not (state.can_retry or state.can_resend or _reply_lost(state)):
            raise DeskError("invalid", "Nothing failed here that could run again.")
        self._refuse_if_stopping()
        # A message runs again as whoever wrote it (an admin's Retry does not make it theirs).
        owner = _owner_of(row)
        run_as = RunAs(viewer if viewer.email == row.owner_email else owner)
        in_flight = state.manager.retry_submission
        decided: Sequence[Any] = ()  # the answers given at the desk that it sends again
        if state.can_retry and in_flight is not None:
            # The same answers again, so as the people who gave them (the engine checks the
            # policy again), not as whoever clicks Retry.
            ids = list(in_flight.interrupt_ids)
            decided = await self._db(self.store.decided, thread_id, ids)
            if decided:
                run_as = await self._db(self._run_as, decided, owner)
        # Of two Retries at once (a double click, two tabs), one runs: the other is told to
        # wait, as a second message is.
        # Only over the version read above: a Retry a moment before may have run and stored
        # its end since, mending what this one read as failed.
        if self._busy(thread_id) or not await self._begin_run(thread_id, if_version=row.version):
            raise DeskError("busy", "The conversation is running; wait for its reply.")
        # Before the trail says it was sent again. (What a Retry sends is stored: one the
        # worker begins to hand over after this is shown failed again by the next.)
        await self._refuse_if_handing(thread_id, row.status)
        if decided:
            try:
                await self._audit_resent(thread_id, viewer, decided)
            except Exception:  # nothing runs: the conversation is as it was
                await self._db(self.store.undo_begin_run, thread_id, row.status)
                raise
        given = [answer.id for answer in decided]
        self._spawn(self._run(thread_id, run_as, again, carrying=given))

    def _refuse_if_stopping(self) -> None:
        """A message or a Retry is not taken while this worker stops: it would be cut off, or
        (once its runs are handed over) never begun."""
        if self._stopping:
            raise DeskError("unavailable", STOPPING)

    async def _refuse_if_handing(self, thread_id: str, status: ConversationStatus) -> None:
        """After a message's or a Retry's begin: one the worker began handing over meanwhile
        is not run (what it would send is not stored), and its conversation is put back as it
        was (`status`). One taken while it drains is run, and waited for."""
        if self._handing:
            await self._db(self.store.undo_begin_run, thread_id, status)
            raise DeskError("unavailable", STOPPING)

    async def _begin_run(self, thread_id: str, *, if_version: int | None = None) -> bool:
        """`DeskStore.begin_run`, now."""
        begun: bool = await self._db(
            partial(self.store.begin_run, thread_id, self.clock(), if_version=if_version)
        )
        return begun

    async def _audit_resent(self, thread_id: str, viewer: Identity, rows: Sequence[Any]) -> None:
        """Put in the trail who sent others' answers again, and whose they are: the decision
        records that follow are their deciders', timed when the run applies them. The trail
        is the ledger the run needs: one that does not answer sends nothing, and says so."""
        if self.audit is None:
            return
        data: dict[str, Any] = {
            # Each answer with how it ended and who decided it (nobody for an expiry; a
            # quorum's earlier approvers are in the decision record that follows).
            "answers": [
                {"interruptId": row.item_id, "name": row.name, "outcome": row.outcome,
                 "decidedBy": row.decided_by}
                for row in rows
            ],
            **verified_by(viewer),
        }  # fmt: skip
        entry = AuditEntry(kind="resent", thread_id=thread_id, run_id="",
                           actor=viewer.email or None, data=data)  # fmt: skip
        try:
            await self.audit([entry])
        except LedgerUnavailable:
            _log.warning("Retry of %s: the ledger does not answer", thread_id, exc_info=True)
            raise DeskError(
                "unavailable",
                "Nothing was sent: the approval ledger could not be reached. Retry once it is "
                "back.",
            ) from None

    async def carries(self, thread_id: str, item_ids: Sequence[str]) -> bool:
        """Whether any of these answers was given at the desk, not in a page's own run: then
        sending them again is the desk's (`retry`, as the people who gave them), since a
        page can only send answers as its own person, and the desk refuses those."""
        return bool(await self._db(self.store.decided, thread_id, list(item_ids)))

    async def decide(self, decision_id: str, decider: Identity, answer: Answer) -> DecideResult:
        """Give `answer` to a pending decision, as `decider` (see the module's docstring)."""
        item = await self._db(self.store.decision, decision_id)
        if item is None:
            raise DeskError("unknown", f"There is no decision {decision_id}.")
        refusal = self.judge.refusal(item, decider, answer.kind)
        if refusal is not None and item.status != "pending" and (
            self.judge.refusal(item, decider, answer.kind, escalated=True) is None
        ):  # one the escalation would let in is told it is closed, not when to come back
            self.judge.check_open(item, decider)
        if refusal is not None:  # before saying who decided it: that is not theirs to know
            if answer.kind != "cancel" and item.kind == "tool" and (
                decider.email == item.requester_email
                and self.judge.refusal(item, decider, "cancel") is None
            ):  # their own request, which they may not approve nor reject: what they may do
                refusal += " You may withdraw your own request: cancel it."
            raise await self._audited_refusal(item, decider, refusal)
        if answer.kind != "cancel" and (answer.kind == "answer") != (item.kind == "question"):
            raise DeskError("invalid", _WRONG_KIND[item.kind])
        self.judge.check_open(item, decider)
        rule = self.judge.rule(item)
        counts = rule is not None and rule.quorum > 1 and answer.kind in ("approve", "answer")
        if counts and answer.has_edited_args:
            # Every approval of a quorum is of the arguments as shown (the engine refuses
            # edited ones: the conversation would wait for approvals already given), whatever
            # the arguments sent: said before they are checked.
            assert rule is not None
            raise DeskError(
                "invalid",
                f"Approve the arguments as shown, or reject: edited arguments cannot count "
                f"towards the {rule.quorum} approvals rule {rule.name} needs.",
            )
        entry = await self._checked_entry(item, answer)
        now = self.clock()
        refusal = self.judge.run_refusal(item, decider, answer)
        if refusal is not None:
            raise await self._audited_refusal(item, decider, refusal)
        judged = self.judge.judged(item)  # a quorum's, read again once this approval is stored
        if counts:
            voted = await self._db(
                lambda: self.store.vote(
                    decision_id,
                    email=decider.email,
                    name=decider.name,
                    verified_by=decider.method,
                    token_name=decider.token_name,
                    roles=sorted(decider.roles),
                    approved=True,
                    answer=entry,
                    now=now,
                )  # fmt: skip
            )
            if not voted:
                fresh = await self.decision(decision_id)
                assert fresh is not None
                self.judge.check_open(fresh)
                raise DeskError(
                    "already-decided",
                    f"You already approved this ({fresh.progress}); someone else must too.",
                    decidedBy=None,
                    outcome=None,
                )
            fresh = await self.decision(decision_id)
            assert fresh is not None
            judged = fresh
            if len(fresh.approvals) < fresh.quorum:
                await self._audit_act("approval", item, decider, approval_record(
                    item.item_id, fresh.progress, tool_name=item.name, rule=item.rule))  # fmt: skip
                decision_span(decision_id, "approved", start=now, attributes={
                    "approved.by": decider.email, "verified.by": decider.method,
                    "quorum.progress": fresh.progress, "rule": item.rule or ""})  # fmt: skip
                _log.info(
                    "Decision %s approved by %s (%s), %s", decision_id, decider.email,
                    decider.method, fresh.progress, extra=_logged(item, decider, "approval"),
                )  # fmt: skip
                await self.fanout.publish(inbox_topic(), thread_topic(item.thread_id))
                return DecideResult("waiting", fresh, f"Approved: {fresh.progress}.")
        # Who decided is stored with the decision, in its transaction: of two deciders at
        # once, only the winner is recorded (a quorum's approvals are stored above).
        vote = None if counts else dict(
            email=decider.email, name=decider.name, verified_by=decider.method,
            token_name=decider.token_name, roles=sorted(decider.roles),
            approved=answer.kind in ("approve", "answer"), answer=entry,
        )  # fmt: skip
        # Approvals the policy no longer allows stay on record, marked: the decided item names
        # as its deciders only those that counted when it was settled.
        uncounted = {v.email for v in judged.votes if v.approved and not v.counts}
        won = await self._db(
            lambda: self.store.decide(
                decision_id,
                email=decider.email,
                name=decider.name,
                outcome=_outcome(answer),
                answer=entry,
                now=now,
                vote=vote,
                uncounted=uncounted - {decider.email},
            )  # fmt: skip
        )
        held = False
        if won:  # committed: its continuation goes, whatever happens to this answer
            _log.info(
                "Decision %s %s by %s (%s)", decision_id, _outcome(answer), decider.email,
                decider.method, extra=_logged(item, decider, _outcome(answer)),
            )  # fmt: skip
            decision_span(decision_id, "decided", start=now, attributes={
                "decision.outcome": _outcome(answer), "decided.by": decider.email,
                "verified.by": decider.method, "rule": item.rule or ""})  # fmt: skip
            self._spawn(self._continue(item.thread_id))
            held = await self._held_for_batch(item)
            if held:  # the trail's decision comes when the batch goes, if it ever does
                await self._audit_act("held", item, decider, held_record(
                    item.item_id, _outcome(answer), tool_name=item.name if item.kind == "tool"
                    else None, rule=item.rule))  # fmt: skip
        fresh = await self.decision(decision_id)
        assert fresh is not None
        # Two approvals completing a quorum at once each see it complete and both decide:
        # one is stored as deciding, and the other's approval is counted in it all the same.
        # Only a plain approval (the arguments as shown): an answer with a value of its own
        # (a question's, a payload) was not the one sent, and is told who decided first.
        counted = (
            counts and answer.kind == "approve" and not answer.has_payload
            and fresh.outcome == "approved"
            and any(vote.email == decider.email for vote in fresh.approvals)
        )  # fmt: skip
        if not won and not counted:
            self.judge.check_open(fresh, decider)
        await self.fanout.publish(inbox_topic(), thread_topic(item.thread_id))
        outcome = _outcome(answer)
        said = "Approved with changes." if outcome == "edited" else f"{outcome.capitalize()}."
        if held:
            said += (
                " The answer goes to the agent with the rest of its batch, once they are "
                "decided."
            )
        return DecideResult("decided", fresh, said)

    async def _held_for_batch(self, item: InboxItem) -> bool:
        """Whether the answer just given to `item` waits for others of its pause, still
        pending, before the agent takes them together. Asked after the answer is committed
        and its continuation set going: a database that does not answer now takes nothing
        back (the answer is said as not held, and the log says why)."""
        try:
            return bool(await self._db(self.store.pending_beside, item.thread_id,
                                       item.decision_id))  # fmt: skip
        except DeskError as error:
            _log.warning("Could not tell whether decision %s waits for its batch: %s",
                         item.decision_id, error.message)  # fmt: skip
            return False

    async def watching(self, thread_id: str, viewer: Identity, *, looking: bool = True) -> None:
        """The viewer's page is open on the conversation (say so every `WATCH_SECONDS`): when
        it is theirs, a decision that is theirs to make is not sent to them meanwhile.
        `looking=False`: the page is no longer in view (another tab, a minimised window), and
        the notices held back go out when next due (at most `notify_idle_seconds` on), not
        once the page has stopped saying it is open."""
        if viewer.anonymous:
            return
        now = self.clock()
        # Out of view now, it showed the conversation until about now (the page is asked
        # every few seconds): what was decided before then, they saw.
        until = now + (LOOK_HOLDS if looking else timedelta(0))
        await self._db(partial(self.store.watching, thread_id, viewer.email, until, looked_at=now))

    async def hold(self, thread_id: str, owner: Identity, text: str) -> None:
        """Keep `text` ("": forget it) as the message `owner` sent in their conversation while
        decisions were pending: `view` gives it back to them, on any device, until they send
        it or empty their box. Nobody else's message is kept in it."""
        if owner.anonymous or not owner.email:
            return
        await self._db(partial(self.store.hold, thread_id, owner.email, text or None))

    async def expire(self, item: InboxItem) -> bool:
        """Resolve a pending decision whose expiry passed, as expired, and go on: the agent
        is told it expired unanswered, the tool does not run. False when someone decided it
        (or another worker expired it) first."""
        entry = expiry_entry(item.item_id)
        now = self.clock()
        won: bool = await self._db(
            lambda: self.store.expire(item.decision_id, answer=entry, now=now)
        )
        if won:
            _log.info("Decision %s expired", item.decision_id,
                      extra={"decision": item.decision_id, "outcome": "expired"})  # fmt: skip
            decision_span(item.decision_id, "expired", start=now,
                          attributes={"rule": item.rule or ""})  # fmt: skip
            self._spawn(self._continue(item.thread_id))
            await self.fanout.publish(inbox_topic(), thread_topic(item.thread_id))
        return won

    # --- the page's own runs ------------------------------------------------------------

    @asynccontextmanager
    async def page_run(
        self, thread_id: str, answered: Sequence[str], actor: Identity,
        entries: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> AsyncIterator[PageRunEnd]:  # fmt: skip
        """A run a page makes itself on a stored conversation (its tab's own client): it holds
        the conversation's lease meanwhile (`busy` while the desk or another page runs it), and
        a continuation first takes its answers' decisions (`already-decided`, naming who, when
        someone decided one from the inbox: only one of the two answers goes). Answers decided
        meanwhile are carried once it ends. `entries` (the resume entries, by item) say how
        each was answered, for the figures. The page marks the `PageRunEnd` it is given when
        its run ends with an error."""
        end = PageRunEnd()
        if self._handing:  # its lease would be kept, and its answers taken, by nobody
            raise DeskError("unavailable", STOPPING)
        runner = f"{self.worker}{PAGE_RUNNER}{uuid.uuid4().hex[:8]}"
        now = self.clock()
        until = now + timedelta(seconds=self.lease_seconds)
        # One transaction (the lease, the answers): each more was a commit and a trip to a
        # database thread before the run could start.
        closed: list[tuple[str, str, str]] = []
        lease = await self._db(
            lambda: self.store.lease_for_page(
                thread_id, runner, answered, email=actor.email, name=actor.name, now=now,
                until=until, entries=entries, closed=closed,
            )  # fmt: skip
        )
        for decision_id, outcome, rule in closed:
            # As a decision at the desk is: in the page, whoever asked answers everything no
            # rule covers, and the log had no line of it.
            _log.info(
                "Decision %s %s by %s (%s), in the conversation", decision_id, outcome,
                actor.email, actor.method, extra={"decision": decision_id, "outcome": outcome,
                                                  "by": actor.email, "verified_by": actor.method,
                                                  "rule": rule},
            )  # fmt: skip
        if lease == "new":
            yield end  # not stored yet: its first message
            return
        if lease == "busy":
            # Someone deciding first sets off the run that holds it: say that, not "wait".
            if answered and (decided := await self._db(
                self.store.decided_among, thread_id, answered, actor.email
            )) is not None:  # fmt: skip
                self.judge.check_open(decided)
            raise DeskError("busy", "The conversation is running on the server; wait for it.")
        done, ended = asyncio.Event(), asyncio.Event()
        kept = asyncio.ensure_future(self._keep_lease(thread_id, runner, done))
        self._page_runs[runner] = _PageLease(thread_id, end, done, kept, ended)
        try:
            if self._handing:
                # Leased as the leases were let go: given back. Its answers are taken (the
                # next worker carries them), so the tab is not told that nothing was sent.
                raise DeskError("unavailable", ANSWERS_KEPT if answered else STOPPING)
            if isinstance(lease, InboxItem):
                self.judge.check_open(lease)  # says who decided it
            if answered:  # taken: gone from every inbox (and the headers' counts) now
                self._spawn(self.fanout.publish(inbox_topic()))
            for item_id in answered:
                decision_span(decision_id_of(thread_id, item_id), "decided", start=now,
                              attributes={"decided.by": actor.email,
                                          "verified.by": actor.method})  # fmt: skip
            if not answered:
                yield end
                return
            started = self.clock()
            with run_span("continuation", {"thread.id": thread_id, "run.by": "page"}) as run:
                yield end
            if end.finished and not end.errored:  # carried as a desk continuation carries them
                await self._page_carried(thread_id, answered, started, run,
                                         entries=entries or {}, by=actor.email)  # fmt: skip
        finally:
            try:
                done.set()
                await kept  # a renewal under way lands before the release, not after it
                await self._db(self.store.release, thread_id, runner)
            finally:
                # Ended once its lease is let go: a stopping worker waits for that.
                self._page_runs.pop(runner, None)
                ended.set()
            self._spawn(self._continue(thread_id))

    async def _page_carried(
        self, thread_id: str, item_ids: Sequence[str], started: datetime, run: Any, *,
        entries: Mapping[str, Mapping[str, Any]], by: str,
    ) -> None:  # fmt: skip
        """A page's own run carried these answers (`entries`, `by` whom): each decision
        records the answer that went (an earlier send of another may have failed), and gets
        its "executed" (or "continued") step and its whole trace, and the run's time for the
        figures (`chat_app_continuation_seconds`). One the agent refused waits again, and
        has neither."""
        ended = self.clock()
        try:
            await self._db(partial(self.store.restate_answers, thread_id, entries, email=by))
            found = await self._db(partial(self.store.decisions_of, thread_id, item_ids))
            carried = [item for item in found if item.status != "pending"]
            if carried:
                seconds = (ended - started).total_seconds()
                carried_ids = [item.decision_id for item in carried]
                await self._db(partial(self.store.mark_applied, carried_ids, seconds=seconds))
        except DeskError as error:  # the run went through: only its figures are lost
            _log.warning("Could not record a page's run of %s: %s", thread_id, error.message)
            return
        for item in carried:
            _trace_carried(item.decision_id, item.name, item.outcome, item.rule, thread_id,
                           started=item.created_at, ran=(started, ended), run=run)  # fmt: skip

    async def _keep_lease(self, thread_id: str, runner: str, done: asyncio.Event) -> None:
        """Renew a page's lease until `done`: a reply can take longer than a lease, and a
        lapsed one would let a worker run the conversation too, and tell the tabs watching
        it that nothing runs (`ConversationView.running`)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self.lease_seconds / 3)
            if done.is_set():
                return
            now = self.clock()
            until = now + timedelta(seconds=self.lease_seconds)
            await self._db(partial(self.store.claim, thread_id, runner, now=now, until=until))

    async def record(
        self, thread_id: str, owner: Identity, actor: Identity, state: ClientState,
        state_json: str | None = None, *, if_version: int | None = None,
    ) -> int:  # fmt: skip
        """Store a conversation a page runs itself (its tab's own client): created on first
        sight, its pause's decisions added, those it answered closed as `actor`'s. Returns
        the stored version. `state_json`, when the page has it, is `state.to_json()` (the
        page keeps each message's JSON: dumping 2,000 messages whole takes 10-30 ms). With
        `if_version`, only over that stored version: else `stale`, and nothing is written."""
        stored = await self._db(self.store.owner, thread_id)
        now = self.clock()
        if stored is None:
            first = next((m.text for m in state.messages if m.role == "user"), "")
            await self._db(
                lambda: self.store.create(
                    thread_id,
                    owner_email=owner.email,
                    owner_name=owner.name,
                    title=_title(first),
                    state=state.to_json() if state_json is None else state_json,
                    now=now,
                )  # fmt: skip
            )
            owner_email, owner_name = owner.email, owner.name
            if_version = None  # stored just now: no version of it was anyone's before
        else:
            owner_email, owner_name = stored
        return await self._save(
            thread_id, state, owner_email, owner_name, actor, busy=False, state_json=state_json,
            if_version=if_version,
        )

    # --- running ------------------------------------------------------------------------

    async def _run(
        self,
        thread_id: str,
        run_as: RunAs,
        action: Callable[[ChatClient], Awaitable[None]],
        *,
        carrying: Sequence[str] = (),
    ) -> None:
        """Run `action` on the stored conversation under this worker's lease, storing and
        announcing its progress; then carry on with answers decided meanwhile.

        `carrying`: decisions given at the desk that `action` sends again (a Retry after a
        continuation that failed before the agent took them, which told nobody): once the
        agent has taken them, whoever asked is told how they ended, as `_carry` tells."""
        async with self._lock(thread_id):
            if not await self._claim(thread_id):
                _log.warning("Conversation %s is running on another worker", thread_id)
                return
            handed = False
            try:
                ended = await self._run_claimed(thread_id, run_as, action)
                if carrying and not ended.can_retry and not ended.refused:
                    await self._mark_carried(carrying, tell=True)
            except _HandedOver:
                handed = True
            finally:
                await self._let_go(thread_id)
        if not handed:
            await self._continue(thread_id)

    async def _run_claimed(
        self, thread_id: str, run_as: RunAs, action: Callable[[ChatClient], Awaitable[None]]
    ) -> ClientState:
        """Run `action` on the conversation's client, storing its state as it streams;
        returns the state it ended with (stored too)."""
        # A message is not taken once the worker hands over (`_refuse_if_handing`), and one
        # taken before is waited for: what comes here not begun is a continuation or a
        # Retry, whose answers and sends are stored, left for the next worker.
        if self._handing:
            raise _HandedOver
        stopping = self._stop_run[thread_id] = asyncio.get_running_loop().create_future()
        try:
            row = await self._db(self.store.load, thread_id)
        except BaseException:
            self._stop_run.pop(thread_id, None)
            raise
        assert row is not None
        client = self._client(row.state, run_as)
        owner_email, owner_name = row.owner_email, row.owner_name
        task = self._live[thread_id] = asyncio.ensure_future(_without_a_browser(client, action))
        saved: tuple[int, bool, int] = (-1, False, -1)
        last_renew = last_save = time.monotonic()
        deadline, overdue, handed = last_save + self.run_seconds, None, None
        try:
            while True:
                done, _ = await asyncio.wait([task, stopping], timeout=SAVE_EVERY_SECONDS)
                if task in done:
                    break  # stored once, below
                if stopping in done:
                    handed = client.state  # stopped, and stored as it stands, below
                    break
                if time.monotonic() > deadline:
                    overdue = client.state  # stopped, and stored as a send cut off, below
                    break
                state = client.state
                mark = (len(state.messages), state.resuming, _last_text_length(state))
                streamed = mark != saved and time.monotonic() - last_save > STREAM_SAVE_SECONDS
                if mark[:2] != saved[:2] or streamed:
                    saved, last_save = mark, time.monotonic()
                    await self._save(thread_id, state, owner_email, owner_name, run_as.identity,
                                     busy=True)  # fmt: skip
                if time.monotonic() - last_renew > self.lease_seconds / 3:
                    last_renew = time.monotonic()
                    await self._claim(thread_id)
            if handed is None and overdue is None and task.exception() is not None:
                _log.error("A desk run failed", exc_info=task.exception())
        finally:
            self._stop_run.pop(thread_id, None)
            if not task.done():
                task.cancel()
                await asyncio.wait([task])  # its end, without taking on its cancellation
            self._live.pop(thread_id, None)
            state, failure = client.state, _failure(task)
            if handed is not None:
                # As a worker that died leaves it, running: whoever takes it over goes on from
                # the tools' results, or shows it failed with Retry (`recover`).
                self._handed.append(thread_id)
                await self._save(thread_id, handed, owner_email, owner_name, run_as.identity,
                                 busy=True)  # fmt: skip
                raise _HandedOver
            if overdue is not None:
                # As a worker that died mid-run leaves it: what was in flight, Retry sends
                # again (or goes on from the results, when tools ran).
                state = self._client(overdue, RunAs(ANONYMOUS), died=True).state
                took = describe_duration(timedelta(seconds=self.run_seconds))
                failure = f"The agent did not finish within {took}, so its run was stopped."
                if state.can_retry or state.can_resend or state.can_go_on:
                    failure += " Retry sends it again."
            await self._save(thread_id, state, owner_email, owner_name, run_as.identity,
                             busy=False, failure=failure)  # fmt: skip
        return state

    async def _continue(self, thread_id: str) -> None:
        """Send the continuation once every open item of the pause has a decided answer."""
        async with self._lock(thread_id):
            await self._carry(thread_id)

    async def _carry(self, thread_id: str) -> None:
        while True:
            rows = await self._db(self.store.answers_to_apply, thread_id)
            if not rows:
                return
            conversation = await self._db(self.store.load, thread_id)
            if conversation is None:
                return
            state = ClientState.from_json(conversation.state)
            open_ids = {item.id for item in state.interrupts if item.answerable}
            by_item = {row.item_id: row for row in rows if row.item_id in open_ids}
            # Answers in flight are the carrying run's to mark (or, if it died, `recover`'s),
            # with the telling of how they ended.
            stale = [row.id for row in rows if row.item_id not in open_ids | _in_flight(state)]
            if stale:  # answered another way meanwhile (the chat, a withdrawal)
                await self._db(self.store.mark_applied, stale)
            if not by_item or set(by_item) != open_ids:
                return  # the rest of the batch is still to decide
            now = self.clock()
            late = [row.id for row in by_item.values() if row.outcome != "expired"
                    and row.expires_at is not None and row.expires_at <= now]  # fmt: skip
            if late:
                # Decided in time, but the batch was complete only after it expired: the agent
                # takes no answer past its expiry but the expiry itself, so these close as
                # expired too (nothing runs; their approvers' votes stay on record).
                await self._db(partial(self.store.expire_decided, late, now=now))
                continue
            owner = _owner_of(conversation)
            run_as = await self._db(self._run_as, list(by_item.values()), owner)
            answers = {item_id: json.loads(row.answer) for item_id, row in by_item.items()}
            expired = {item_id: expiry_note_of(row)
                       for item_id, row in by_item.items() if row.outcome == "expired"}  # fmt: skip
            applied = [row.id for row in by_item.values()]

            async def apply(
                client: ChatClient,
                answers: dict[str, Any] = answers,
                expired: dict[str, str] = expired,
            ) -> None:
                for item_id, entry in answers.items():
                    if item_id in expired:  # the agent reads the cancellation as the expiry
                        await client.expire(item_id, expired[item_id])
                    else:
                        await _stage(client, item_id, entry)

            if not await self._claim(thread_id):
                return  # the worker running it picks these up when its run ends
            try:
                # Under the lease, again: another worker may have carried them between the
                # look above and the claim.
                fresh = await self._db(self.store.answers_to_apply, thread_id)
                if {row.id for row in fresh} != set(applied):
                    continue  # look again
                started = self.clock()
                with run_span("continuation", {"thread.id": thread_id}) as run:
                    try:
                        ended_with = await self._run_claimed(thread_id, run_as, apply)
                    except _HandedOver:
                        return  # in flight, or not begun: for whoever takes it over
                    # A refusal is the agent's answer, not a failure of the run.
                    failure = "" if ended_with.refused else ended_with.error or ""
                    if failure:
                        fail_current_span(failure)
                ended = self.clock()
                # Failed before the agent gave anything back (it, or the way to it, failed):
                # whether it took them is unknown, so nobody is told how they ended, and no
                # continuation time counts. They are done with as carried all the same: the
                # conversation shows the failure, and the person's Retry sends them again
                # (the agent's ledger refuses a replay; a desk sending again by itself could
                # run a tool twice behind an agent without one).
                unknown = ended_with.can_retry and not ended_with.refused
                refused = set() if unknown else _refused(ended_with, set(by_item))
                # Opened again, they wait for a person. Sent again unchanged they would be
                # refused again, so answers that could not be opened are done with as carried.
                if refused and await self._open_refused(thread_id, owner, ended_with, refused):
                    continue
                # Carried. A worker killed before this line leaves them to `recover`, which
                # finds the continuation in flight, or not sent yet, in the stored state.
                seconds = None if unknown else (ended - started).total_seconds()
                tell_at = None if unknown else ended
                await self._db(
                    partial(self.store.mark_applied, applied, seconds=seconds, tell_at=tell_at)
                )
                if tell_at is not None:
                    self._wake_timers()  # whoever asked is told how it ended
                for row in by_item.values():
                    executed = not unknown and row.item_id not in refused
                    _trace_carried(row.id, row.name, row.outcome, row.rule, thread_id,
                                   started=row.created_at, ran=(started, ended), run=run,
                                   executed=executed, error=failure)  # fmt: skip
            finally:
                await self._let_go(thread_id)

    def _wake_timers(self) -> None:
        if self.on_new_decisions is not None:
            self.on_new_decisions()

    async def _open_refused(
        self, thread_id: str, owner: Identity, state: ClientState, refused: Collection[str]
    ) -> list[str]:
        """The agent refused the continuation, for the answers to the `refused` items (a
        remote agent whose rules the desk does not read, a policy changed meanwhile): nothing
        ran. Those decisions are pending again, filed as they pause now, and the card shows
        the agent's reason; the batch's other answers stay decided, to go with theirs.
        Returns the decisions opened."""
        drafts = [self.judge.draft(item, owner.email, owner.name)
                  for item in state.interrupts if item.id in refused]  # fmt: skip
        reopened: list[str] = await self._db(
            partial(self.store.reopen_refused, thread_id, drafts, now=self.clock())
        )
        for decision_id in reopened:
            decision_span(decision_id, "refused", start=self.clock(),
                          attributes={"thread.id": thread_id})  # fmt: skip
        await self.fanout.publish(inbox_topic(), thread_topic(thread_id))
        return reopened

    def _run_as(self, rows: Sequence[Any], owner: Identity = ANONYMOUS) -> RunAs:
        """The decider of the last answer, with earlier approvers as cosigners; an expired
        item's is the conversation's `owner` (who asked withdraws it: the agent reads that
        as the expiry)."""
        last = max(rows, key=lambda row: row.decided_at)
        cosigners: dict[str, tuple[Identity, ...]] = {}
        deciders: dict[str, Identity] = {}
        final: Identity | None = None
        for row in rows:
            item = self.store.decision(row.id)
            if item is None:  # removed with its conversation meanwhile
                continue
            decider = next((v.identity() for v in item.votes if v.email == row.decided_by), None)
            if row.outcome == "expired":
                decider = owner
            if row is last:
                final = decider
            if decider is not None:
                deciders[row.item_id] = decider
            others = tuple(
                vote.identity()
                for vote in item.votes
                if vote.email != row.decided_by and self.judge.counts(item, vote)
            )
            if others:
                cosigners[row.item_id] = others
        return RunAs(final or ANONYMOUS, cosigners, deciders)

    async def recover(self) -> list[str]:
        """At start: conversations a dead worker left running are shown failed, with Retry
        (their client, restored, knows whether the answer in flight was applied); answers
        decided but never carried are carried now. Returns the threads it touched."""
        now = self.clock()
        grace = timedelta(seconds=self.lease_seconds)
        touched: list[str] = await self._db(lambda: self.store.interrupted(now, grace=grace))
        for thread_id in touched:
            if not await self._claim(thread_id):
                continue
            go_on = False
            try:
                row = await self._db(self.store.load, thread_id)
                assert row is not None
                stored = ClientState.from_json(row.state)
                state = self._client(stored, RunAs(ANONYMOUS), died=True).state
                # The answers were applied and only the model's reply was lost: it goes on
                # from the tools' results (a plain run: nothing is answered again, so nothing
                # runs twice), the conversation running all along. Otherwise it is failed:
                # with Retry when the answer in flight never reached the agent.
                go_on = _reply_lost(state)
                # The answers in flight are done with as carried here: where the agent applied
                # them, whoever asked is told how they ended, as after a continuation that
                # finished; where that is unknown, Retry sends them again, as the person's.
                await self._carried_elsewhere(thread_id, _in_flight(stored), tell=go_on)
                failure = None
                if not go_on:
                    failure = INTERRUPTED if state.can_retry or state.can_resend else None
                    await self._save(thread_id, state, row.owner_email, row.owner_name,
                                     ANONYMOUS, busy=False, failure=failure)  # fmt: skip
                _log.warning(
                    "Conversation %s was left running by a worker that stopped; %s took it "
                    "over: %s", thread_id, self.worker,
                    "its reply goes on from the tools' results" if go_on
                    else "shown failed, with Retry" if failure else "shown as it stood",
                )  # fmt: skip
            finally:
                if not go_on:
                    await self._db(self.store.release, thread_id, self.worker)
            if go_on:  # under this worker's lease, which the run takes on
                owner = _owner_of(row)
                self._spawn(self._run(thread_id, RunAs(owner), _go_on))
        for thread_id in await self._db(self.store.threads_with_answers):
            self._spawn(self._continue(thread_id))
        return touched

    async def _carried_elsewhere(
        self, thread_id: str, item_ids: Collection[str], *, tell: bool
    ) -> None:
        """Mark the thread's decided answers to `item_ids` carried (`tell`: and whoever
        asked due to be told how they ended)."""
        rows = await self._db(self.store.answers_to_apply, thread_id)
        await self._mark_carried([row.id for row in rows if row.item_id in item_ids], tell=tell)

    async def _mark_carried(self, decision_ids: Sequence[str], *, tell: bool) -> None:
        """Mark these decisions carried (`tell`: and whoever asked due to be told now how
        they ended, the timers woken to tell them)."""
        tell_at = self.clock() if tell else None
        await self._db(partial(self.store.mark_applied, decision_ids, tell_at=tell_at))
        if tell and decision_ids:
            self._wake_timers()

    async def refile(self) -> list[str]:
        """At start: file every pending decision again as if it had paused under the policy
        in force. The engine's gate judges an answer by the rule that governs the call (or
        question) and its arguments when the answer comes, so a policy changed while a
        decision waited moves it to that rule (a renamed rule is found again): who finds it
        in their inbox and is reminded, what it is waiting for, how many must approve, and
        when its reminder and escalation are due. Its notice goes to whoever that adds; a
        reminder or an escalation that rule would have given too stands. Returns the
        decisions it moved."""
        moved: list[str] = []
        threads: set[str] = set()
        after: tuple[datetime, str] | None = None
        # A page a transaction: the answers being given meanwhile wait for one page at most.
        while page := await self._db(partial(self.store.pending, after=after, limit=REFILE_PAGE)):
            filings = {item.decision_id: self.judge.filing_in_force(item) for item in page}
            refile = partial(self.store.refile, filings, now=self.clock())
            changed: set[str] = set(await self._db(refile))
            threads |= {item.thread_id for item in page if item.decision_id in changed}
            moved += sorted(changed)
            after = (page[-1].created_at, page[-1].decision_id)
        if moved:
            await self.fanout.publish(inbox_topic(), *map(thread_topic, sorted(threads)))
        return moved

    async def refiled(self) -> None:
        """`refile` if it is due (at this process's start, then as `keep_recovering` says),
        once however many ask: the timers wait for it before each look, so none tells the
        people of a rule the decision is about to leave."""
        async with self._refiling:
            if self._refiled:
                return
            try:
                moved = await self.refile()
            except DeskError:
                raise  # the database is away: the next caller tries again
            except Exception:  # a bug here must not hold the timers back for good
                _log.exception("Could not file pending decisions again; left as they were")
                moved = []
            self._refiled = True
            if moved:
                _log.info(
                    "Filed %d decision%s again under the policy in force: %s", len(moved),
                    "" if len(moved) == 1 else "s", ", ".join(moved[:20])
                    + (f" and {len(moved) - 20} more" if len(moved) > 20 else ""),
                )  # fmt: skip

    async def keep_recovering(self) -> None:
        """`refiled`, then `recover` now and then, for as long as the app runs: a worker that
        died leaves its conversations to the others once its lease lapses. Refiling is due
        again every `refile_every_seconds`: what another worker filed under another policy
        (a rolling restart) moves to this one's. Cancelled (the app stops), it hands its runs
        over (`hand_over`)."""
        refiled_at = time.monotonic()
        try:
            while True:
                if time.monotonic() - refiled_at >= self.refile_every_seconds:
                    refiled_at = time.monotonic()
                    self._refiled = False
                try:
                    await self.refiled()
                    await self.recover()
                except DeskError as error:  # the database is away: try again later
                    _log.warning("The desk could not look for interrupted runs: %s", error)
                except Exception:  # a bug here must not end recovery for good
                    _log.exception("The desk's look for interrupted runs failed; trying again")
                await asyncio.sleep(min(self.lease_seconds / 2, self.refile_every_seconds))
        except asyncio.CancelledError:  # the app stops (its lifespan's end)
            await self.hand_over()
            raise

    async def hand_over(self, drain_seconds: float = DRAIN_SECONDS) -> list[str]:
        """As this worker stops: its runs get `drain_seconds` to end on their own; those
        still going then stop where they are, stored as running, and their leases are let go
        at once, so that another worker's `recover` (or this one's, once started again) takes
        them over now rather than once the lease lapses. Nothing begins here after this.
        Returns the conversations handed over."""
        self._stopping = True
        deadline = time.monotonic() + drain_seconds
        # Every task the desk started, those it starts meanwhile too (a run's continuation),
        # and the pages' runs.
        while (self._tasks or self._page_runs) and (left := deadline - time.monotonic()) > 0:
            ending = [asyncio.ensure_future(run.ended.wait()) for run in self._page_runs.values()]
            await asyncio.wait([*self._tasks, *ending], timeout=left,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            for waiting in ending:
                waiting.cancel()
        self._handing = True
        for stop in self._stop_run.values():
            if not stop.done():
                stop.set_result(None)
        await self._let_pages_go()
        if self._tasks:  # each stops, stores and lets go in a database round or two
            await asyncio.wait(list(self._tasks), timeout=HAND_OVER_SECONDS)
        handed = sorted(set(self._handed))
        if handed:
            _log.warning(
                "Stopping with %d conversation%s running: %s; handed over (the lease let go) "
                "for another worker, or this one once started again, to go on with",
                len(handed), "" if len(handed) == 1 else "s", ", ".join(handed),
            )  # fmt: skip
        return handed

    async def _let_pages_go(self) -> None:
        """The leases of the pages' runs still going as this worker stops, let go: the run in
        its tab's handler stops with the process, and the conversation's next page, here or
        on another worker, would be told it is busy until the lease lapsed (its page shows
        the reply cut off, with Retry: `chat_app.ui.session`). Each run's stream is told to
        stop first (`PageRunEnd.stopped`): with the lease gone, another worker may run the
        conversation, and this one's stream goes no further than the event it is at."""
        async def let_go(runner: str, run: _PageLease) -> None:
            run.end.stopped = True
            run.done.set()
            await asyncio.wait([run.kept])
            try:
                await self._db(self.store.release, run.thread_id, runner)
            except Exception as error:  # its lease lapses, as a dead worker's does
                _log.warning("Could not let go of %s's lease: %s", run.thread_id, error)

        going = [asyncio.ensure_future(let_go(runner, run))
                 for runner, run in list(self._page_runs.items())]  # fmt: skip
        if going:  # all at once, in the time the runs have to store themselves
            await asyncio.wait(going, timeout=HAND_OVER_SECONDS)

    async def wait_idle(self) -> None:
        """Wait for every task the desk started (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # --- helpers ------------------------------------------------------------------------

    def _client(
        self, state: ClientState | str | None, run_as: RunAs, *, died: bool = False
    ) -> ChatClient:
        connection = self.connection_for(run_as)
        # A tool the agent asks the client to run runs in a person's browser (the chat
        # page's): here there is none, so it fails saying why and the run goes on, rather
        # than waiting for a browser that will never come.
        tools = [
            tool if tool.execute is not None else replace(tool, execute=_no_browser(tool.name))
            for tool in self.tools()
        ]
        if state is None:
            return ChatClient(connection, tools=tools)
        return ChatClient.restore(state, connection, tools=tools, died=died)

    def _lock(self, thread_id: str) -> asyncio.Lock:
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = asyncio.Lock()
        return lock

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                _log.error("A desk task failed", exc_info=finished.exception())

        task.add_done_callback(done)

    def _busy(self, thread_id: str) -> bool:
        task = self._live.get(thread_id)
        return task is not None and not task.done()

    async def _let_go(self, thread_id: str) -> None:
        """The end of this worker's lease on the conversation: released; or, handing over,
        lapsed now, which `recover` takes for a worker gone (a conversation left running
        with no runner would wait out the grace first)."""
        if not self._handing:
            await self._db(self.store.release, thread_id, self.worker)
            return
        await self._db(partial(self.store.lapse, thread_id, self.worker, now=self.clock()))

    async def _claim(self, thread_id: str) -> bool:
        now = self.clock()
        until = now + timedelta(seconds=self.lease_seconds)
        return bool(
            await self._db(lambda: self.store.claim(thread_id, self.worker, now=now, until=until))
        )

    async def _save(
        self, thread_id: str, state: ClientState, owner_email: str, owner_name: str,
        actor: Identity, *, busy: bool, failure: str | None = None,
        state_json: str | None = None, if_version: int | None = None,
    ) -> int:  # fmt: skip
        # Answers a failed continuation holds stand until its Retry (or the tab's next
        # answer): their decisions are not open again, for someone else to answer otherwise.
        held = state.manager.retry_submission if state.can_retry else None
        held_ids = set(held.interrupt_ids) if held is not None else set()
        if state.answered_before:  # the ledger holds their answers: nobody answers again
            held_ids |= {item.id for item in state.interrupts if item.answerable}
        open_items = [
            item for item in state.interrupts if item.answerable and item.id not in held_ids
        ]
        status: ConversationStatus
        if busy:
            status = "running"
        elif state.can_retry:
            # The answers were given and their continuation did not get through (a broken
            # connection, a worker that died): Retry is what it waits for, not a person.
            status = "failed"
        elif state.answered_before:
            status, failure = "failed", failure or ANSWERED_BEFORE
        elif open_items:
            status = "waiting"
        elif failure is not None or (state.error is not None and not state.refused):
            status = "failed"
        else:
            status = "done"
        drafts = [self.judge.draft(item, owner_email, owner_name) for item in open_items]
        auto = _decided_by_policy(state, owner_email, owner_name)
        waiting = waiting_line(d.filing.waiting_for for d in drafts)
        waiting = waiting if status == "waiting" else ""
        error = failure or (state.error if status == "failed" else None)
        saved: Saved = await self._db(
            lambda: self.store.save(
                thread_id,
                state=state.to_json() if state_json is None else state_json,
                status=status,
                waiting_for=waiting,
                error=error,
                now=self.clock(),
                drafts=drafts,
                # Held answers are not open again, nor closed as nobody's (`held_ids`).
                open_items=[item.id for item in open_items] + sorted(held_ids),
                closed_by=(actor.email, actor.name),
                auto=auto,
                if_version=if_version,
            )  # fmt: skip
        )
        if saved is None:
            raise DeskError("stale", STORED_SINCE)
        for decision_id in saved.added:
            decision_span(decision_id, "paused", start=self.clock(),
                          attributes={"thread.id": thread_id})  # fmt: skip
        for decided in saved.auto_added:  # a trace of one moment: the rule decided at the pause
            moment, decision_id = self.clock(), decision_id_of(thread_id, decided.call_id)
            _log.info(
                "Decision %s %s by policy %s: %s, asked by %s", decision_id, decided.outcome,
                decided.rule, decided.name, decided.requester_email,
                extra={"decision": decision_id, "outcome": "auto",
                                                "by": f"policy {decided.rule}",
                                                "rule": decided.rule},
            )  # fmt: skip
            decision_span(decision_id, "decided", start=moment, attributes={
                "decision.outcome": "auto", "decided.by": f"policy {decided.rule}",
                "rule": decided.rule})  # fmt: skip
            _trace_carried(decision_id, decided.name, "auto", decided.rule, thread_id,
                           started=moment, ran=(moment, moment), run=None,
                           executed=False)  # fmt: skip
        if saved.added:
            self._wake_timers()
        topics = [thread_topic(thread_id), owner_topic(owner_email)]
        if saved.decisions_changed:  # else text streaming, a status: not the inboxes' news
            topics.append(inbox_topic())
        await self.fanout.publish(*topics)
        return saved.version

    async def _audited_refusal(
        self, item: InboxItem, decider: Identity, reason: str
    ) -> DeskError:
        """The refusal of `decider`'s answer to `item`, once the audit trail holds it: who
        tried, how they were verified, and what they were told (the trail says who tried to
        decide what was not theirs, wherever they tried)."""
        refused = refusal_record(item.item_id, reason, tool_name=item.name, rule=item.rule)
        await self._audit_act("refusal", item, decider, refused)
        decision_span(item.decision_id, "forbidden", start=self.clock(), attributes={
            "refused.by": decider.email, "verified.by": decider.method, "reason": reason,
            "rule": item.rule or ""})  # fmt: skip
        _log.warning(
            "Refused %s (%s) on decision %s: %s", decider.email or "someone unnamed",
            decider.method, item.decision_id, reason, extra=_logged(item, decider, "refused"),
        )  # fmt: skip
        return DeskError("forbidden", reason)

    async def _audit_act(
        self, kind: str, item: InboxItem, decider: Identity, data: dict[str, Any]
    ) -> None:
        """Put in the trail what `decider` did to `item` that decided nothing (a refusal, a
        quorum's approval short of it), with how they were verified. Decisions are recorded
        by the run that carries them. A trail that cannot be written does not undo the act
        (the person is told of it either way); the log says what the trail lacks."""
        if self.audit is None:
            return
        data = {**data, **verified_by(decider), "decisionId": item.decision_id}
        entry = AuditEntry(kind=kind, thread_id=item.thread_id, run_id="",
                           actor=decider.email or None, data=data)  # fmt: skip
        try:
            await self.audit([entry])
        except Exception:
            _log.exception("Could not audit the %s of %s", kind, item.decision_id)

    async def _checked_entry(self, item: InboxItem, answer: Answer) -> dict[str, Any]:
        """The resume entry for `answer`, checked against the item's schemas as a client
        checks it before sending: `DeskError("invalid")` with the field's message."""
        row = await self._db(self.store.load, item.thread_id)
        if row is None:
            raise DeskError("unknown", f"There is no conversation {item.thread_id}.")
        client = self._client(row.state, RunAs(ANONYMOUS))
        found = next((i for i in client.interrupts if i.id == item.item_id), None)
        if found is None or not found.answerable:
            raise DeskError(
                "already-decided", "Already answered in the conversation.",
                decidedBy=None, outcome=None,
            )  # fmt: skip
        manager = client.manager
        if answer.kind == "cancel":
            submission = manager.cancel_item(item.item_id)
        elif answer.kind == "answer":
            submission = manager.resolve(item.item_id, response=answer.payload)
        else:
            decision = Decision.approval(
                item.item_id,
                answer.kind == "approve",
                payload=answer.payload if answer.has_payload else ABSENT,
                edited_args=answer.edited_args if answer.has_edited_args else ABSENT,
            )
            if found.kind == "generic":
                # A tool approval paused before a release changed its tool's schemas: the
                # client, which knows the tool as it is now, holds it as an item answered with
                # the value its own (sealed) response schema describes, an approval's payload.
                submission = manager.resolve(item.item_id, response=decision.envelope())
            else:
                submission = manager.resolve(
                    item.item_id,
                    approved=decision.kind == "approve",
                    payload=decision.payload,
                    edited_args=decision.edited_args,
                )
        if submission is not None:  # the whole batch is answered: the entry is in it
            return next(
                dict(entry)
                for entry in submission.resolutions
                if entry.get("interruptId") == item.item_id
            )
        staged = next(i for i in manager.interrupts if i.id == item.item_id)
        if staged.status == "error" or staged.resolution is None:
            error = staged.error
            message = "The answer is not valid for this item." if error is None else error.message
            if (
                error is not None and error.code == "invalid-payload"
                and not answer.has_payload and isinstance(found, ToolApprovalInterrupt)
            ):  # fmt: skip
                # The client's words ("This approval branch requires a payload.") are for a
                # page's form; a script is told what to send.
                message = _payload_needed(found, answer.kind == "approve")
            errors = []
            if error is not None:
                errors = [{"code": error.code, "message": message, "path": list(error.path or ())}]
                # The client stops at the first problem (a form shows each field's own); a
                # script is told them all at once.
                errors += [
                    {"code": error.code, "message": problem.message, "path": list(problem.path)}
                    for problem in _other_problems(found, answer)
                ]  # fmt: skip
                if more := len(errors) - 1:
                    message += f" ({more} more problem{'' if more == 1 else 's'}: see errors)"
            raise DeskError("invalid", message, errors=errors)
        return dict(staged.resolution)

    async def _db(self, function: Callable[..., Any], *args: Any) -> Any:
        """A database call in a worker thread; a database that went away is `unavailable`."""
        from sqlalchemy.exc import OperationalError

        try:
            return await asyncio.to_thread(function, *args)
        except OperationalError as error:
            raise DeskError.unavailable(error) from None


def _other_problems(item: InterruptItem, answer: Answer) -> list[SchemaProblem]:
    """The problems the schema an answer is checked against finds in it (a question's
    response, a decision's payload, edited arguments) beside the first, which the client
    told; none where it has no such schema."""
    schema: object = None
    value: object = None
    if answer.kind == "answer":
        schema, value = item.response_schema, answer.payload
    elif isinstance(item, ToolApprovalInterrupt) and answer.has_edited_args:
        schema, value = item.input_schema, answer.edited_args
    elif isinstance(item, ToolApprovalInterrupt) and answer.has_payload:
        schema = item.approve_schema if answer.kind == "approve" else item.reject_schema
        value = answer.payload
    if not isinstance(schema, dict):
        return []
    try:
        first = schema_problem(schema, value)
        return [problem for problem in schema_problems(schema, value) if problem != first]
    except UnusableSchemaError:
        return []


def _payload_needed(item: ToolApprovalInterrupt, approved: bool) -> str:
    """What an answer without the payload its decision needs is told: the answer to send,
    with the payload's required fields, and where its schema is."""
    schema = item.approve_schema if approved else item.reject_schema
    required = schema.get("required") if isinstance(schema, dict) else None
    listed: list[object] = required if isinstance(required, list) else []
    names = [name for name in listed if isinstance(name, str)]
    payload = "{" + ", ".join(f"{json.dumps(name)}: …" for name in names) + "}" if names else "…"
    decision = "An approval" if approved else "A rejection"
    key = "approvePayload" if approved else "rejectPayload"
    return (
        f'{decision} of {item.tool_name} needs a payload: {{"approved": {json.dumps(approved)}, '
        f'"payload": {payload}}}, as answerSchemas.{key} of GET /api/conversations/'
        f"{item.thread_id} describes."
    )


async def _stage(client: ChatClient, item_id: str, entry: Mapping[str, Any]) -> None:
    """Give the client the decided resume entry for one item (the last one sends)."""
    item = next((i for i in client.interrupts if i.id == item_id), None)
    decision = read_decision(
        dict(entry), "approval" if isinstance(item, ToolApprovalInterrupt) else "generic"
    )
    if isinstance(decision, DecisionProblem):  # stored by `decide`, which checked it
        raise DeskError("invalid", decision.message)
    if decision.kind == "cancel":
        await client.cancel(item_id)
    elif decision.kind == "answer":
        await client.resolve_interrupt(item_id, response=decision.payload)
    else:
        await client.resolve_interrupt(
            item_id, approved=decision.kind == "approve", payload=decision.payload,
            edited_args=decision.edited_args,
        )  # fmt: skip


def _decided_by_policy(state: ClientState, email: str, name: str) -> list[AutoDecision]:
    """The calls a policy rule decided alone in the latest run (since the last message)."""
    found: list[AutoDecision] = []
    for message in reversed(state.messages):
        if message.role == "user":
            break
        for call in message.tool_calls:
            if call.decided_by_rule and call.decision in ("approved", "rejected"):
                found.append(
                    AutoDecision(
                        call_id=call.id,
                        name=call.name,
                        summary=arguments_line(call.input),
                        args=call.input,
                        requester_email=email,
                        requester_name=name,
                        rule=call.decided_by_rule,
                        outcome=call.decision,
                    )  # fmt: skip
                )
    return found


def _owner_of(row: Any) -> Identity:
    """Who started a stored conversation, for a run the desk makes on their behalf (a retried
    message, a reply to finish): as verified when they started it, nothing newer."""
    return Identity(email=row.owner_email, method="none", name=row.owner_name)


async def _without_a_browser(
    client: ChatClient, action: Callable[[ChatClient], Awaitable[None]]
) -> None:
    """`action`, then: while the batch still owes answers, each client tool call still
    waiting is cancelled: one whose tool the agent's manifest does not list (the client has
    nothing to run it with; the others failed, `_no_browser`), so the conversation goes on
    rather than wait for a browser."""
    await action(client)
    for item_id in sorted(client.manager.client_tool_item_ids()):
        if client.manager.has_open_items:
            await client.cancel(item_id)


def _no_browser(name: str) -> Callable[[Mapping[str, object]], object]:
    """What a tool that runs in the browser does when the desk's run is asked to run it: it
    fails, and the model is told why, or, where its output schema has no room for a failure,
    the client cancels the call (`ChatClient`); either way the conversation goes on rather
    than wait for a browser."""

    def refuse(_: Mapping[str, object]) -> object:
        raise RuntimeError(
            f"{name} runs in the browser of whoever asked, and this conversation went on on "
            "the server (a decision made in the Inbox, or a message sent through the API), "
            "where no browser can run it. Ask again from the chat page."
        )

    return refuse


async def _go_on(client: ChatClient) -> None:
    client.manager.reset()  # the batch is over: the agent applied its answers
    await client.go_on()


def _reply_lost(state: ClientState) -> bool:
    """The answers in flight when a worker died had been applied (their tools' results came
    back), or the agent refused them as already answered: the model has yet to reply."""
    if state.can_go_on or state.answered_before:
        return True
    if state.error_code != "transport" or state.can_retry or state.can_resend:
        return False
    return state.results_since_asked


def _refused(state: ClientState, sent: Collection[str]) -> set[str]:
    """The `sent` items whose answers the agent refused as a person could answer them
    otherwise: not theirs to give (`forbidden`) or not as the schemas have them (`invalid-…`),
    each with its reason on the item. An answer to a pause the agent no longer holds
    (`stale`, `unknown-interrupt`, a replay's `conflict`) would fare no better given again."""
    if not state.refused:
        return set()
    return {
        item.id
        for item in state.interrupts
        if item.id in sent and item.answerable and item.status == "error"
        and item.error is not None
        and (item.error.code == "forbidden" or item.error.code.startswith("invalid-"))
    }  # fmt: skip


def _in_flight(state: ClientState) -> frozenset[str]:
    """The items whose answers were being sent when `state` was stored."""
    sending = state.manager.active_submission
    return frozenset(sending.interrupt_ids if sending is not None else ())


def _running(row: Any, now: datetime) -> bool:
    """Whether a run is going on in the stored conversation: the desk's, stored as `running`
    until its last write, or a page's, whose lease it holds while it runs and lets go before
    its last write (its writes on the way are stored with the status they would end with)."""
    if row.status == "running":
        return True
    runner = row.runner or ""
    return PAGE_RUNNER in runner and row.runner_until is not None and row.runner_until > now


def _outcome(answer: Answer) -> str:
    if answer.kind == "cancel":
        return "cancelled"
    if answer.kind == "answer":
        return "answered"
    if answer.kind == "reject":
        return "rejected"
    return "edited" if answer.has_edited_args else "approved"


def _failure(task: asyncio.Task[None]) -> str | None:
    if not task.done() or task.cancelled():
        return "The run was stopped."
    error = task.exception()
    if error is None:
        return None
    return f"The run failed: {error}"


def _last_text_length(state: ClientState) -> int:
    return len(state.messages[-1].text) if state.messages else 0


#: The outcomes whose continuation ran the tool call.
RAN_OUTCOMES = frozenset({"approved", "edited"})


def _trace_carried(
    decision_id: str, name: str, outcome: str | None, rule: str | None, thread_id: str, *,
    started: datetime, ran: tuple[datetime, datetime], run: Any, executed: bool = True,
    error: str = "",
) -> None:  # fmt: skip
    """A decision's trace once a run (`ran`, linked as `run`) carried its answer: its
    "executed" step, or "continued" where nothing was to run (a rejection, a cancellation, a
    question's answer), and not for an expiry, nor without `executed` (an answer the agent
    refused, a rule's own decision inside the run the person watched); and its root from the
    pause (`started`), failed when the run did (`error`)."""
    if outcome != "expired" and executed:
        step = "executed" if outcome in RAN_OUTCOMES else "continued"
        decision_span(decision_id, step, start=ran[0], end=ran[1],
                      attributes={"thread.id": thread_id},
                      links=[run] if run is not None else [])  # fmt: skip
    close_decision(decision_id, start=started, end=ran[1], attributes={
        "decision.name": name, "decision.outcome": outcome or "", "rule": rule or "",
        "thread.id": thread_id}, error=error)  # fmt: skip


def _logged(item: InboxItem, who: Identity, outcome: str) -> dict[str, str]:
    """A decision's log line's fields (`CHAT_APP_LOG_FORMAT=json` writes them as keys)."""
    return {
        "decision": item.decision_id, "outcome": outcome, "by": who.email,
        "verified_by": who.method, "rule": item.rule or "",
    }  # fmt: skip


def _title(text: str) -> str:
    # PostgreSQL text cannot hold NUL (the state's JSON escapes it; a title does not).
    line = spelled_out(" ".join(text.replace("\x00", " ").split()))
    return line if len(line) <= 80 else line[:79] + "…"
