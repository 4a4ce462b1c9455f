"""The desk's rows: conversations, their decisions, inbox routes and votes (SQLAlchemy Core).

Owns `DeskStore`, `DecisionDraft` and `Filing`. Every method is one short transaction on the app's
database (`chat_app.trust.store`: SQLite by default, PostgreSQL for many workers); the
async desk calls them in a worker thread. The exactly-once parts are the database's own:
a decision leaves `pending` by a conditional UPDATE (two deciders: one row changes), a
person's vote is a primary key (the same person cannot count twice), and a conversation's
runner is a lease taken by a conditional UPDATE.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from sqlalchemy import (
    Connection,
    Engine,
    Row,
    and_,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    true,
    union,
    union_all,
    update,
)
from sqlalchemy.exc import IntegrityError

from chat_app.interrupts import ABSENT, Decision, edited_args_of, read_decision
from chat_app.trust.accounts import find_accounts
from chat_app.trust.store import read_snapshot, write_transaction
from chat_app.trust.tables import (
    conversation_states,
    conversations,
    decision_reopenings,
    decision_routes,
    decision_votes,
    decisions,
)

from .records import (
    ConversationStatus,
    ConversationSummary,
    InboxItem,
    PastDecision,
    SettledRequest,
    Vote,
    waiting_now,
)

__all__ = [
    "INBOX_COUNT_CAP",
    "AutoDecision",
    "DecisionDraft",
    "DeskStore",
    "Due",
    "Filing",
    "decision_id_of",
]

#: A person's inbox is counted exactly up to this many pending decisions; beyond, its total
#: is one more, which means "more than this" (counting them all costs time that grows with
#: them).
INBOX_COUNT_CAP = 500


def route_of(approver: str) -> str:
    """The inbox route of a rule's approver (`role:finance`, `ada@example.com`)."""
    return approver if approver.startswith("role:") else f"user:{approver.lower()}"


def decision_id_of(thread_id: str, item_id: str) -> str:
    """A decision's id: the same on every worker for the same item (so two workers that
    store one pause store one decision)."""
    digest = hashlib.sha256(f"{thread_id}\0{item_id}".encode()).hexdigest()
    return "d" + digest[:31]


class Saved(NamedTuple):
    """What `DeskStore.save` did: the conversation's new version, and whether any of its
    decisions came or went (the inbox is told only then)."""

    version: int
    decisions_changed: bool
    #: The ids of the decisions this save added (a new pause's).
    added: tuple[str, ...] = ()
    #: Those of the calls a rule decided alone that it stored first.
    auto_added: tuple[AutoDecision, ...] = ()


@dataclass(frozen=True, slots=True)
class Filing:
    """Where a pending decision is filed: who may decide it and how many must, what it is
    waiting for, who finds it in their inbox, and its timers. Its rule's, or with no rule,
    the person who asked (`Judge.filing`)."""

    rule: str | None
    approvers: tuple[str, ...]
    not_requester: bool
    quorum: int
    waiting_for: str
    #: Who finds it in their inbox: `role:<role>`, `user:<email>`, `*` (everyone).
    routes: tuple[str, ...]
    #: When, after the pause, its first notice, reminder and escalation are due (`None`:
    #: never), and who the escalation adds (as `approvers`).
    notify_after: timedelta | None = None
    remind_after: timedelta | None = None
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DecisionDraft:
    """A pending item of a pause, as the desk stores it."""

    item_id: str
    kind: str
    name: str
    summary: str
    args: Any
    requester_email: str
    requester_name: str
    expires_at: datetime | None
    filing: Filing
    #: The run that paused for it.
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class AutoDecision:
    """A tool call a policy rule decided alone: stored decided, for the figures."""

    call_id: str
    name: str
    summary: str
    args: Any
    requester_email: str
    requester_name: str
    rule: str
    outcome: str  # approved, rejected: stored as `auto`


class Due(NamedTuple):
    """A decision whose timer is due (pending; or settled, for its requester to be told how
    it ended), with what its notice needs."""

    decision: Row[Any]
    #: The owner's page is open on its conversation now.
    watched: bool
    #: Its inbox routes as stored (`role:<role>`, `user:<email>`, `*`): those it was filed
    #: with and those an escalation added. Its notices go to the people they name.
    routes: tuple[str, ...]


class DeskStore:
    """The desk's tables over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # --- conversations ------------------------------------------------------------------

    def create(
        self, thread_id: str, *, owner_email: str, owner_name: str, title: str, state: str,
        now: datetime, status: ConversationStatus = "done",
    ) -> None:  # fmt: skip
        with write_transaction(self.engine) as connection:
            connection.execute(
                insert(conversations).values(
                    thread_id=thread_id,
                    owner_email=owner_email,
                    owner_name=owner_name,
                    title=title[:200],
                    status=status,
                    waiting_for="",
                    error=None,
                    version=1,
                    runner=None,
                    runner_until=None,
                    created_at=now,
                    updated_at=now,
                )  # fmt: skip
            )
            connection.execute(insert(conversation_states).values(thread_id=thread_id, state=state))

    def undo_create(self, thread_id: str) -> None:
        """Take back a conversation `create`d a moment ago whose first run did not start (its
        worker was stopping): while nothing has stored into it, nobody runs it."""
        with write_transaction(self.engine) as connection:
            untouched = connection.execute(
                select(conversations.c.thread_id).where(
                    conversations.c.thread_id == thread_id,
                    conversations.c.version == 1,
                    conversations.c.runner.is_(None),
                )
            ).first()
            if untouched is None:
                return
            connection.execute(
                delete(conversation_states).where(conversation_states.c.thread_id == thread_id)
            )
            connection.execute(delete(conversations).where(conversations.c.thread_id == thread_id))

    def begin_run(self, thread_id: str, now: datetime, *, if_version: int | None = None) -> bool:
        """Mark a settled conversation running (a message was posted); False when it is
        running or waiting already (of two messages posted at once, one runs), or, with
        `if_version`, when a run stored anything since that version was read (a Retry read
        a failure that the run before it, started and finished meanwhile, has mended). From
        `now`: until a worker takes it, recovery counts the wait from then (`interrupted`)."""
        where = [
            conversations.c.thread_id == thread_id,
            conversations.c.status.in_(("done", "failed")),
            conversations.c.runner.is_(None),  # nobody runs it (a page, a worker)
        ]
        if if_version is not None:
            where.append(conversations.c.version == if_version)
        with write_transaction(self.engine) as connection:
            changed = connection.execute(
                update(conversations).where(*where).values(status="running", updated_at=now)
            ).rowcount
        return bool(changed)

    def undo_begin_run(self, thread_id: str, status: ConversationStatus) -> None:
        """Put back the `status` a conversation had before `begin_run`, while no worker has
        taken it (what was to run did not start)."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(conversations)
                .where(
                    conversations.c.thread_id == thread_id,
                    conversations.c.status == "running",
                    conversations.c.runner.is_(None),
                )
                .values(status=status)
            )

    def load(self, thread_id: str) -> Row[Any] | None:
        """The conversation's row with its `state`."""
        with self.engine.connect() as connection:
            return connection.execute(
                select(conversations, conversation_states.c.state)
                .join(conversation_states,
                      conversation_states.c.thread_id == conversations.c.thread_id)
                .where(conversations.c.thread_id == thread_id)
            ).first()  # fmt: skip

    def hold(self, thread_id: str, owner_email: str, text: str | None) -> None:
        """Keep `text` as the message the owner sent while decisions were pending (`None`:
        none any more). Not a change of the conversation: its version stays."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(conversations)
                .where(
                    conversations.c.thread_id == thread_id,
                    conversations.c.owner_email == owner_email,
                )
                .values(held_message=text)
            )

    def owner(self, thread_id: str) -> tuple[str, str] | None:
        """The conversation's owner (email, name), or None when it is not stored: `load`
        without its state, which at 2,000 messages is half a megabyte."""
        with self.engine.connect() as connection:
            found = connection.execute(
                select(conversations.c.owner_email, conversations.c.owner_name).where(
                    conversations.c.thread_id == thread_id
                )
            ).first()
        return None if found is None else (found.owner_email, found.owner_name)

    def version(self, thread_id: str) -> int:
        with self.engine.connect() as connection:
            found = connection.execute(
                select(conversations.c.version).where(conversations.c.thread_id == thread_id)
            ).scalar()
        return int(found or 0)

    def save(
        self,
        thread_id: str,
        *,
        state: str,
        status: ConversationStatus,
        waiting_for: str,
        error: str | None,
        now: datetime,
        title: str | None = None,
        drafts: Sequence[DecisionDraft] = (),
        open_items: Iterable[str] = (),
        closed_by: tuple[str, str] | None = None,
        auto: Sequence[AutoDecision] = (),
        if_version: int | None = None,
    ) -> Saved | None:
        """Store the conversation's new state; add the pause's new decisions (`drafts`) and
        close those still pending that are no longer open (`open_items`: answered in the
        chat, withdrawn, replaced by a new run), by `closed_by` (email, name). Returns the
        new version, and whether any decision came or went; with `if_version`, `None` (and
        nothing written) when the stored version is another by now."""
        with write_transaction(self.engine) as connection:
            values: dict[str, Any] = dict(
                status=status, waiting_for=waiting_for[:300], error=error,
                updated_at=now, version=conversations.c.version + 1,
            )  # fmt: skip
            if title is not None:
                values["title"] = title[:200]
            where = [conversations.c.thread_id == thread_id]
            if if_version is not None:
                where.append(conversations.c.version == if_version)
            written = connection.execute(update(conversations).where(*where).values(values))
            if if_version is not None and written.rowcount == 0:
                return None
            connection.execute(
                update(conversation_states)
                .where(conversation_states.c.thread_id == thread_id)
                .values(state=state)
            )
            open_ids = set(open_items)
            pending = connection.execute(
                select(decisions.c.id, decisions.c.item_id).where(
                    decisions.c.thread_id == thread_id, decisions.c.status == "pending"
                )
            ).all()
            gone = [row.id for row in pending if row.item_id not in open_ids]
            if gone:
                # Withdrawn, or left behind by a new message: nobody decided it.
                who = closed_by or ("", "")
                for decision_id in gone:
                    connection.execute(
                        update(decisions)
                        .where(decisions.c.id == decision_id)
                        .values(
                            status="closed", outcome="cancelled",
                            decided_by=who[0] or None, decided_by_name=who[1] or None,
                            decided_at=now, applied=True,
                            wait_seconds=_waited(connection, decision_id, now),
                        )  # fmt: skip
                    )
                connection.execute(
                    delete(decision_routes).where(decision_routes.c.decision_id.in_(gone))
                )
            known = {
                row.item_id: row.status
                for row in connection.execute(
                    select(decisions.c.item_id, decisions.c.status).where(
                        decisions.c.thread_id == thread_id
                    )
                )
            }
            changed = bool(gone)
            added: list[str] = []
            for position, draft in enumerate(drafts):  # in the order the agent asked
                stored = known.get(draft.item_id)
                if stored is None:
                    self._add(connection, thread_id, draft, now, position)
                    added.append(decision_id_of(thread_id, draft.item_id))
                    changed = True
                elif stored == "closed":  # an answer given in the chat was refused: open again
                    self._reopen(connection, thread_id, draft, now)
                    changed = True
            auto_added = []
            for decided in auto:
                if decided.call_id not in known:
                    self._add_auto(connection, thread_id, decided, now)
                    known[decided.call_id] = "decided"
                    auto_added.append(decided)
            escalated = select(decisions.c.id).where(
                decisions.c.thread_id == thread_id, decisions.c.status == "pending",
                decisions.c.escalated_at.is_not(None),
            ).limit(1)  # fmt: skip
            if status == "waiting" and connection.execute(escalated).first() is not None:
                _rewait(connection, thread_id)  # `waiting_for` as filed: without who was added
            found = connection.execute(
                select(conversations.c.version).where(conversations.c.thread_id == thread_id)
            ).scalar()
        return Saved(int(found or 0), changed, tuple(added), tuple(auto_added))

    @staticmethod
    def _add(
        connection: Any, thread_id: str, draft: DecisionDraft, now: datetime, position: int
    ) -> None:
        decision_id = decision_id_of(thread_id, draft.item_id)
        connection.execute(
            insert(decisions).values(
                id=decision_id,
                thread_id=thread_id,
                item_id=draft.item_id,
                kind=draft.kind,
                name=draft.name[:200],
                summary=draft.summary[:500],
                args=_dumps(draft.args),
                requester_email=draft.requester_email,
                requester_name=draft.requester_name,
                status="pending",
                outcome=None,
                decided_by=None,
                decided_by_name=None,
                answer=None,
                applied=False,
                created_at=now,
                position=position,
                expires_at=draft.expires_at,
                decided_at=None,
                run_id=draft.run_id,
                **_governed(draft.filing, paused=now, now=now),
            )  # fmt: skip
        )
        _add_routes(connection, decision_id, draft.filing.routes, now)

    @staticmethod
    def _add_auto(connection: Any, thread_id: str, decided: AutoDecision, now: datetime) -> None:
        connection.execute(
            insert(decisions).values(
                id=decision_id_of(thread_id, decided.call_id),
                thread_id=thread_id,
                item_id=decided.call_id,
                kind="tool",
                name=decided.name[:200],
                summary=decided.summary[:500],
                args=_dumps(decided.args),
                requester_email=decided.requester_email,
                requester_name=decided.requester_name,
                rule=decided.rule,
                approvers="[]",
                not_requester=False,
                quorum=1,
                waiting_for="",
                status="decided",
                outcome="auto",
                decided_by=None,
                decided_by_name=f"policy {decided.rule}",
                # The verdict, as an approval's entry holds it: the lists say which it was.
                answer=_dumps(
                    Decision.approval(decided.call_id, decided.outcome == "approved")
                    .resume_entry()
                ),
                applied=True,
                created_at=now,
                expires_at=None,
                decided_at=now,
            )  # fmt: skip
        )

    def reopen_refused(
        self, thread_id: str, drafts: Sequence[DecisionDraft], *, now: datetime
    ) -> list[str]:
        """Open decided decisions again whose answers the agent refused (nothing ran), each
        under its draft. Their votes go: the agent refused what they came to (a quorum's
        cosigner it does not allow, say), and counted again they would be refused again; its
        trail keeps the refusal. One decided again meanwhile, or already carried, is left
        alone. Returns the ones opened."""
        opened: list[str] = []
        with write_transaction(self.engine) as connection:
            for draft in drafts:
                decision_id = decision_id_of(thread_id, draft.item_id)
                found = connection.execute(
                    select(decisions.c.id)
                    .where(decisions.c.id == decision_id, decisions.c.status == "decided",
                           decisions.c.applied.is_(False))  # fmt: skip
                    .with_for_update()
                ).first()
                if found is None:
                    continue
                connection.execute(
                    delete(decision_votes).where(decision_votes.c.decision_id == decision_id)
                )
                self._reopen(connection, thread_id, draft, now)
                opened.append(decision_id)
        return opened

    @staticmethod
    def _reopen(connection: Any, thread_id: str, draft: DecisionDraft, now: datetime) -> None:
        """Open a closed or decided decision again (the agent refused the chat's answer to it,
        or the desk's), as the rule in force now has it: `draft` is its pause filed again under
        the policy of now, so who may decide, how many must and its timers are that rule's, as
        if it had paused under it."""
        decision_id = decision_id_of(thread_id, draft.item_id)
        stored = connection.execute(select(decisions).where(decisions.c.id == decision_id)).one()
        if stored.outcome is not None:  # counted as it had ended, whatever ends it next
            connection.execute(
                insert(decision_reopenings).values(
                    decision_id=decision_id, outcome=stored.outcome, at=now
                )
            )
        connection.execute(
            update(decisions)
            .where(decisions.c.id == decision_id)
            .values(
                status="pending",
                outcome=None,
                decided_by=None,
                decided_by_name=None,
                decided_at=None,
                applied=False,
                tell_at=None,  # pending again: nothing to tell whoever asked yet
                # Told again: its notice may have been skipped while it was closed.
                notified_at=None,
                # Closing took it out of the escalated people's inboxes too: escalated again
                # when due (this rule's `escalate_to` find it, and may decide, once it fires).
                **{**_regoverned(draft.filing, stored, now=now), "escalated_at": None},
            )  # fmt: skip
        )
        # Its routes keep the decision's own time: the inbox reads them newest first.
        _add_routes(connection, decision_id, draft.filing.routes, stored.created_at)

    def pending(
        self, *, after: tuple[datetime, str] | None = None, limit: int = 500
    ) -> list[InboxItem]:
        """Pending decisions, oldest first: a page of `limit` after the one paused at `after`
        (its `created_at`, `decision_id`)."""
        where = [decisions.c.status == "pending"]
        if after is not None:
            # Each side compared with its column, so the time is bound as the column stores
            # it (a row value of Python values would go to PostgreSQL as a zoned timestamp).
            paused, last = after
            where.append(
                or_(
                    decisions.c.created_at > paused,
                    and_(decisions.c.created_at == paused, decisions.c.id > last),
                )
            )
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions)
                .where(*where)
                .order_by(decisions.c.created_at, decisions.c.id)
                .limit(limit)
            ).all()
            return self._items(connection, rows)

    def refile(self, filings: Mapping[str, Filing], *, now: datetime) -> list[str]:
        """File pending decisions (by id) again, each as its filing says, in one transaction (as
        `_reopen` does, but it stays pending): who finds it in their inbox is its rule's
        approvers, and its `escalate_to` while it stands escalated; its notice is due again
        when that adds someone. A decision decided meanwhile is left alone. Returns the ones
        that changed: filing again the same way changes nothing."""
        changed: list[str] = []
        ids = list(filings)
        if not ids:
            return changed
        with write_transaction(self.engine) as connection:
            pending = decisions.c.status == "pending"
            # Locked (PostgreSQL) until it is filed: a timer firing meanwhile waits, then finds
            # it filed again. In id order, so two workers refiling at once take turns. One
            # decided since the page was read is skipped below.
            rows = connection.execute(
                select(decisions)
                .where(decisions.c.id.in_(ids))
                .order_by(decisions.c.id)
                .with_for_update()
            ).all()
            have: dict[str, set[str]] = {}
            for route in connection.execute(
                select(decision_routes.c.decision_id, decision_routes.c.route).where(
                    decision_routes.c.decision_id.in_(ids)
                )
            ):
                have.setdefault(route.decision_id, set()).add(route.route)
            for row in rows:
                if row.status != "pending":
                    continue
                values = _regoverned(filings[row.id], row, now=now)
                wanted = {route[:400] for route in filings[row.id].routes}
                if values["escalated_at"] is not None:
                    wanted |= {route_of(p) for p in json.loads(values["escalate_to"])}
                stored = have.get(row.id, set())
                if wanted - stored:
                    # Its notice (again), for those it names now (the outbox tells nobody twice);
                    # a notice being given to the routes it had fails to mark it fired.
                    values["notified_at"] = None
                else:
                    del values["notify_at"]  # given to whom it names, or due when it was filed
                if wanted == stored and all(
                    getattr(row, column) == value for column, value in values.items()
                ):
                    continue
                if not connection.execute(
                    update(decisions).where(decisions.c.id == row.id, pending).values(values)
                ).rowcount:
                    continue  # decided meanwhile (PostgreSQL): out of every inbox already
                if stored - wanted:
                    connection.execute(
                        delete(decision_routes).where(
                            decision_routes.c.decision_id == row.id,
                            decision_routes.c.route.in_(sorted(stored - wanted)),
                        )
                    )
                _insert_routes(connection, row.id, wanted - stored, row.created_at)
                changed.append(row.id)
            moved = {row.thread_id for row in rows if row.id in changed}
            for thread_id in sorted(moved):
                _rewait(connection, thread_id)
        return changed

    def conversations_of(self, owner_email: str, *, limit: int = 100) -> list[ConversationSummary]:
        """The owner's conversations, newest first, each finished one with how its latest
        settled decision ended (one more statement for them all)."""
        with read_snapshot(self.engine) as connection:
            rows = connection.execute(
                select(conversations)
                .where(conversations.c.owner_email == owner_email)
                .order_by(conversations.c.updated_at.desc())
                .limit(limit)
            ).all()
            # Only a finished conversation shows it: its newest settled decision, one a thread.
            finished = [row.thread_id for row in rows if row.status in ("done", "failed")]
            found: list[Row[Any]] = []
            if finished:
                newest = func.row_number().over(
                    partition_by=decisions.c.thread_id,
                    order_by=(decisions.c.decided_at.desc(), decisions.c.id.desc()),
                )
                ranked = (
                    select(decisions, newest.label("newest"))
                    .where(decisions.c.thread_id.in_(finished), decisions.c.status != "pending",
                           decisions.c.decided_at.is_not(None))
                    .subquery()
                )  # fmt: skip
                found = list(connection.execute(select(ranked).where(ranked.c.newest == 1)))
            items = self._items(connection, found)
            last = {row.thread_id: item for row, item in zip(found, items, strict=True)}
            pauses = self._pauses_of(connection, found, items)
        return [
            replace(summary_of(row), last_decision=last.get(row.thread_id),
                    last_pause=pauses.get(row.thread_id, ()))
            for row in rows
        ]  # fmt: skip

    def _pauses_of(
        self, connection: Any, newest: Sequence[Row[Any]], items: Sequence[InboxItem]
    ) -> dict[str, tuple[InboxItem, ...]]:
        """The settled decisions of the pause each of `newest` (a thread's latest settled
        decision, read as `items`) belongs to, oldest first, by thread; a decision stored
        without its run is a pause of its own."""
        pairs = list(zip(newest, items, strict=True))
        runs = {(row.thread_id, row.run_id) for row in newest if row.run_id}
        if runs:
            others = [
                row
                for row in connection.execute(
                    select(decisions).where(
                        decisions.c.thread_id.in_(sorted({thread for thread, _ in runs})),
                        decisions.c.run_id.in_(sorted({run for _, run in runs})),
                        decisions.c.id.not_in([row.id for row in newest]),
                        decisions.c.status != "pending", decisions.c.decided_at.is_not(None),
                    )
                )
                if (row.thread_id, row.run_id) in runs
            ]  # fmt: skip
            pairs += zip(others, self._items(connection, others), strict=True)
        pairs.sort(key=lambda pair: (pair[0].decided_at, pair[0].id))
        pauses: dict[str, tuple[InboxItem, ...]] = {}
        for row, item in pairs:
            pauses[row.thread_id] = (*pauses.get(row.thread_id, ()), item)
        return pauses

    def claim(self, thread_id: str, runner: str, *, now: datetime, until: datetime) -> bool:
        """Take the right to run the conversation (a lease); False while another worker
        holds a lease that has not lapsed."""
        with write_transaction(self.engine) as connection:
            return _claim(connection, thread_id, runner, now=now, until=until)

    def lapse(self, thread_id: str, runner: str, *, now: datetime) -> None:
        """`runner`'s lease on the conversation, lapsed now rather than released: `recover`
        takes a conversation left running under a lapsed lease for one whose worker is gone,
        at once (one left running with no runner waits out its grace first)."""
        self.claim(thread_id, runner, now=now, until=now)

    def lease_for_page(
        self, thread_id: str, runner: str, item_ids: Sequence[str], *, email: str, name: str,
        now: datetime, until: datetime, entries: Mapping[str, Mapping[str, Any]] | None = None,
        closed: list[tuple[str, str, str]] | None = None,
    ) -> Literal["new", "busy", "taken"] | InboxItem:  # fmt: skip
        """A page's run on a stored conversation, in one transaction: `new` when it is not
        stored (nothing is done), `busy` when another holds its lease; else the lease is
        `runner`'s and, for a continuation, its answers' decisions are taken (`_take_answers`):
        `taken`, or the decision another person decided already (the lease is still taken).
        `closed` is given each decision taken, with its outcome and rule ("" for none)."""
        with write_transaction(self.engine) as connection:
            if not _claim(connection, thread_id, runner, now=now, until=until):
                stored = connection.execute(
                    select(conversations.c.version).where(conversations.c.thread_id == thread_id)
                ).scalar()
                return "busy" if stored else "new"
            if not item_ids:
                return "taken"
            taken: list[tuple[str, str, str]] = []
            decided = self._take_answers(connection, thread_id, item_ids, email=email,
                                         name=name, now=now, entries=entries,
                                         closed=taken)  # fmt: skip
        if closed is not None:  # committed
            closed.extend(taken)
        return "taken" if decided is None else decided

    def decided_among(
        self, thread_id: str, item_ids: Sequence[str], email: str
    ) -> InboxItem | None:
        """The first of these items someone else has decided already, if any (what a page's
        answers would be refused for, once it holds the lease)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions).where(
                    decisions.c.thread_id == thread_id, decisions.c.item_id.in_(list(item_ids))
                )
            ).all()
            taken = _decided_by_another(rows, email)
            return self._items(connection, taken[:1])[0] if taken else None

    def _take_answers(
        self, connection: Any, thread_id: str, item_ids: Sequence[str], *, email: str,
        name: str, now: datetime, entries: Mapping[str, Mapping[str, Any]] | None,
        closed: list[tuple[str, str, str]],
    ) -> InboxItem | None:  # fmt: skip
        rows = connection.execute(
            select(decisions).where(
                decisions.c.thread_id == thread_id, decisions.c.item_id.in_(list(item_ids))
            )
        ).all()
        taken = _decided_by_another(rows, email)
        if taken:
            return self._items(connection, taken[:1])[0]
        given = entries or {}
        ids = [row.id for row in rows if row.status == "pending"]
        for row in rows:
            if row.status != "pending":
                continue
            entry = given.get(row.item_id)
            outcome = entry_outcome(entry, row.kind)
            closed.append((row.id, outcome, row.rule or ""))
            connection.execute(
                update(decisions)
                .where(decisions.c.id == row.id)
                .values(
                    status="closed",
                    outcome=outcome,
                    answer=None if entry is None else _dumps(dict(entry)),
                    decided_by=email or None,
                    decided_by_name=name or None,
                    decided_at=now,
                    applied=True,
                    wait_seconds=max(0.0, (now - row.created_at).total_seconds()),
                )  # fmt: skip
            )
        if ids:
            connection.execute(
                delete(decision_routes).where(decision_routes.c.decision_id.in_(ids))
            )
        return None

    def release(self, thread_id: str, runner: str) -> None:
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(conversations)
                .where(conversations.c.thread_id == thread_id, conversations.c.runner == runner)
                .values(runner=None, runner_until=None)
            )

    def interrupted(self, now: datetime, *, grace: timedelta) -> list[str]:
        """Conversations whose runner's lease lapsed while running (a worker died), and those
        marked running that no worker took within `grace` (one died between the two)."""
        with self.engine.connect() as connection:
            return list(
                connection.execute(
                    select(conversations.c.thread_id).where(
                        conversations.c.status == "running",
                        or_(
                            conversations.c.runner_until < now,
                            and_(
                                conversations.c.runner.is_(None),
                                conversations.c.updated_at < now - grace,
                            ),
                        ),
                    )
                ).scalars()
            )

    # --- decisions ----------------------------------------------------------------------

    def decision(self, decision_id: str) -> InboxItem | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(decisions).where(decisions.c.id == decision_id)).first()
            if row is None:
                return None
            return self._items(connection, [row])[0]

    def settled(self, decision_ids: Iterable[str]) -> dict[str, str]:
        """Of `decision_ids`, those no longer pending, each with how it ended in words
        ("approved", "expired", …; "removed" when it is gone with its conversation): the
        outbox's deliverer sends no notice asking for them."""
        wanted = set(decision_ids)
        if not wanted:
            return {}
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions.c.id, decisions.c.status, decisions.c.outcome).where(
                    decisions.c.id.in_(wanted)
                )
            ).all()
        found = {row.id: row for row in rows}
        ended = {
            id_: _ENDED.get(row.outcome or "", row.outcome or "settled")
            for id_, row in found.items()
            if row.status != "pending"
        }
        return ended | {id_: "removed" for id_ in wanted - found.keys()}

    def decisions_of(
        self, thread_id: str, item_ids: Sequence[str] | None = None
    ) -> list[InboxItem]:
        """The conversation's decisions (those of `item_ids` alone, when given: a long
        conversation has hundreds), in the order they paused."""
        where = [decisions.c.thread_id == thread_id]
        if item_ids is not None:
            where.append(decisions.c.item_id.in_(list(item_ids)))
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions)
                .where(*where)
                .order_by(decisions.c.created_at, decisions.c.position, decisions.c.item_id)
            ).all()
            return self._items(connection, rows)

    def inbox(
        self,
        routes: Sequence[str],
        *,
        viewer_email: str,
        everyone: bool = False,
        tool: str | None = None,
        requester: str | None = None,
        limit: int = 50,
        now: datetime | None = None,
    ) -> tuple[list[InboxItem], int]:
        """Pending decisions routed to any of `routes` (all of them when `everyone`), newest
        first, but not those a `not_requester` rule keeps from `viewer_email`, those they
        approved already (a quorum's) nor, given `now`, those expired; and how many there are
        in all, counted up to `INBOX_COUNT_CAP` (`INBOX_COUNT_CAP + 1` means more).

        A person's page is read from the route index (`_newest_routed`): its cost follows
        the page, not the number of pending decisions. All its statements read one state of
        the database, so that none can find what another's finding has changed since."""
        if not everyone and not routes:
            return [], 0
        where = _inbox_where(viewer_email, everyone=everyone, tool=tool, requester=requester,
                             now=now)  # fmt: skip
        # Newest first; a batch's decisions, which share their time, as the agent asked them.
        order = (decisions.c.created_at.desc(), decisions.c.position, decisions.c.id)
        with read_snapshot(self.engine) as connection:
            if limit <= 0:
                rows: list[Row[Any]] = []
            elif everyone:
                found = select(decisions).where(where).order_by(*order).limit(limit)
                rows = list(connection.execute(found).all())
            else:
                rows = _newest_routed(connection, routes, where, limit)
            capped = _matching(routes, where, decisions.c.id, everyone=everyone)
            counted = select(func.count()).select_from(capped.limit(INBOX_COUNT_CAP + 1).subquery())
            return self._items(connection, rows), int(connection.execute(counted).scalar() or 0)

    def decided_by(self, email: str, *, limit: int = 50) -> list[PastDecision]:
        """What `email` decided, newest first, each with when they acted: the decisions they
        made (approved, rejected, edited, cancelled or withdrew, answered) and the approvals
        they gave towards a quorum, once it is no longer pending.

        Each half read from its own index, (decided_by, decided_at) and (voter_email, at),
        newest `limit` each, and merged: an OR of the two reads every decision ever made."""
        if not email or limit <= 0:
            return []
        own = (
            select(decisions, decisions.c.decided_at.label("acted_at"))
            .where(decisions.c.decided_by == email, decisions.c.decided_at.is_not(None))
            .order_by(decisions.c.decided_at.desc())
            .limit(limit)
        )
        voted = (
            select(decisions, decision_votes.c.at.label("acted_at"))
            .join(decision_votes, decision_votes.c.decision_id == decisions.c.id)
            .where(decision_votes.c.voter_email == email, decisions.c.status != "pending")
            .order_by(decision_votes.c.at.desc())
            .limit(limit)
        )
        with read_snapshot(self.engine) as connection:
            acted: dict[str, Row[Any]] = {}
            # The decision first: whoever decided acted last when they decided (an approver
            # who then rejected); a quorum's last approver voted as they decided, and acted once.
            for row in [*connection.execute(own).all(), *connection.execute(voted).all()]:
                acted.setdefault(row.id, row)
            newest = sorted(acted.values(), key=lambda row: (row.acted_at, row.id), reverse=True)
            rows = newest[:limit]
            items = self._items(connection, rows)
            return [
                PastDecision(item, row.acted_at, reason=_reason_of(row))
                for item, row in zip(items, rows, strict=True)
            ]

    def settled_for(self, email: str, since: datetime, *, limit: int = 50) -> list[SettledRequest]:
        """`email`'s requests settled after `since` by someone else (or by nobody: expired),
        oldest first, each with its conversation's title. Read from the index
        (requester_email, decided_at): a range of that person's newest."""
        if not email or limit <= 0:
            return []
        query = (
            select(decisions, conversations.c.title.label("thread_title"))
            .join(conversations, conversations.c.thread_id == decisions.c.thread_id)
            .where(
                decisions.c.requester_email == email,
                decisions.c.decided_at > since,
                decisions.c.status != "pending",
                # Someone else's decision, or an expiry: not their own withdrawal or answer
                # (they know), nor a rule's at the pause (the run they watched went on with
                # it), nor a pause a new message left behind with nobody deciding.
                or_(
                    and_(decisions.c.decided_by.is_not(None), decisions.c.decided_by != email),
                    decisions.c.outcome == "expired",
                ),
                decisions.c.outcome != "auto",
            )
            .order_by(decisions.c.decided_at, decisions.c.id)
            .limit(limit)
        )
        with read_snapshot(self.engine) as connection:
            rows = connection.execute(query).all()
            items = self._items(connection, rows)
        return [
            SettledRequest(
                item, row.decided_at, row.thread_title,
                reason=_reason_of(row),
            )  # fmt: skip
            for item, row in zip(items, rows, strict=True)
        ]

    def inbox_choices(
        self, routes: Sequence[str], *, viewer_email: str, everyone: bool = False,
        now: datetime | None = None,
    ) -> tuple[list[str], list[tuple[str, str]]]:  # fmt: skip
        """The tools (and questions) and the requesters (email, name) of the pending
        decisions `inbox` would list, for its filters: among the first `INBOX_COUNT_CAP`
        route entries it reads (a decision reached by two of `routes` takes two)."""
        if not everyone and not routes:
            return [], []
        where = _inbox_where(viewer_email, everyone=everyone, now=now)
        # Not made distinct, nor read as `id IN (the first ids)`: distinct, the database
        # ordered everything it read; by id, PostgreSQL scanned every decision (50,000
        # pending: 28 ms for the statement, against 5.6-8.4 ms this way).
        found = _matching(
            routes, where, decisions.c.name, decisions.c.requester_email,
            decisions.c.requester_name, everyone=everyone, distinct=False,
        ).limit(INBOX_COUNT_CAP)  # fmt: skip
        with self.engine.connect() as connection:
            rows = connection.execute(found).all()
        tools = sorted({row.name for row in rows})
        people: dict[str, str] = {}
        for row in rows:
            people.setdefault(row.requester_email, row.requester_name)
        return tools, sorted(people.items())

    def vote(
        self, decision_id: str, *, email: str, name: str, verified_by: str, token_name: str,
        roles: Sequence[str], approved: bool, answer: dict[str, Any], now: datetime,
    ) -> bool:  # fmt: skip
        """Record one person's approval towards a decision still pending; False when they
        gave one already, or it is pending no more (the row is locked meanwhile, so a vote
        never lands after the decision it would count towards)."""
        try:
            with write_transaction(self.engine) as connection:
                pending = connection.execute(
                    select(decisions.c.id)
                    .where(decisions.c.id == decision_id, decisions.c.status == "pending")
                    .with_for_update()
                ).first()
                if pending is None:
                    return False
                connection.execute(
                    insert(decision_votes).values(
                        decision_id=decision_id,
                        voter_email=email,
                        voter_name=name,
                        verified_by=verified_by,
                        token_name=token_name,
                        roles=_dumps(sorted(roles)),
                        approved=approved,
                        answer=_dumps(answer),
                        at=now,
                    )  # fmt: skip
                )
        except IntegrityError:
            return False
        return True

    def decide(
        self, decision_id: str, *, email: str, name: str, outcome: str,
        answer: dict[str, Any], now: datetime, vote: dict[str, Any] | None = None,
        uncounted: Collection[str] = (),
    ) -> bool:  # fmt: skip
        """Move a pending decision to `decided`; False when it was not pending any more (the
        other of two deciders got there first). `vote` (the `vote` method's fields but the
        decision's id and time) is the decider's, stored with it when this call wins and the
        decider has none yet. `uncounted`: the emails of approvals the policy no longer
        allowed, marked so when this call wins (`Vote.counts` of the decided item)."""
        with write_transaction(self.engine) as connection:
            changed = _settle(
                connection, decision_id, outcome=outcome, decided_by=email,
                decided_by_name=name, answer=answer, now=now,
                wait_seconds=_waited(connection, decision_id, now),
            )  # fmt: skip
            if changed and uncounted:
                connection.execute(
                    update(decision_votes)
                    .where(decision_votes.c.decision_id == decision_id,
                           decision_votes.c.voter_email.in_(sorted(uncounted)))
                    .values(counted=False)
                )  # fmt: skip
            if changed and vote is not None:
                voted = connection.execute(
                    select(decision_votes.c.voter_email).where(
                        decision_votes.c.decision_id == decision_id,
                        decision_votes.c.voter_email == vote["email"],
                    )
                ).first()
                if voted is None:
                    connection.execute(
                        insert(decision_votes).values(
                            decision_id=decision_id,
                            voter_email=vote["email"],
                            voter_name=vote["name"],
                            verified_by=vote["verified_by"],
                            token_name=vote["token_name"],
                            roles=_dumps(sorted(vote["roles"])),
                            approved=vote["approved"],
                            answer=_dumps(vote["answer"]),
                            at=now,
                        )  # fmt: skip
                    )
        return bool(changed)

    def restate_answers(
        self, thread_id: str, entries: Mapping[str, Mapping[str, Any]], *, email: str
    ) -> None:
        """The answers a page's run carried, as they went (`entries`, by item): a decision
        `email` closed with an earlier answer whose send failed records the one that ran
        (the tab answered anew), not the one that never did."""
        if not entries:
            return
        with write_transaction(self.engine) as connection:
            rows = connection.execute(
                select(decisions).where(
                    decisions.c.thread_id == thread_id,
                    decisions.c.item_id.in_(list(entries)),
                    decisions.c.status == "closed",
                    decisions.c.decided_by == (email or None),
                )
            ).all()
            for row in rows:
                entry = entries[row.item_id]
                answer = _dumps(dict(entry))
                if row.answer == answer:
                    continue
                connection.execute(
                    update(decisions)
                    .where(decisions.c.id == row.id)
                    .values(outcome=entry_outcome(entry, row.kind), answer=answer)
                )

    def mark_applied(
        self, decision_ids: Sequence[str], *, seconds: float | None = None,
        tell_at: datetime | None = None,
    ) -> None:  # fmt: skip
        """Carried by a continuation (that took `seconds`, when it was the one that ran: kept
        on one of its decisions, so each continuation counts once). With `tell_at`, whoever
        asked is due to be told then how each ended, unless they decided it themselves: its
        outcome is final now (an answer decided in time but carried past its expiry ended
        as expired)."""
        if not decision_ids:
            return
        ids = sorted(decision_ids)
        with write_transaction(self.engine) as connection:
            connection.execute(update(decisions).where(decisions.c.id.in_(ids)).values(applied=True))
            if tell_at is not None:
                connection.execute(
                    update(decisions)
                    .where(
                        decisions.c.id.in_(ids),
                        decisions.c.status == "decided",
                        decisions.c.requester_email != "",  # nobody to tell without sign-in
                        or_(decisions.c.outcome == "expired", decisions.c.decided_by.is_(None),
                            decisions.c.decided_by != decisions.c.requester_email),
                    )
                    .values(tell_at=tell_at)
                )  # fmt: skip
            if seconds is not None:
                connection.execute(
                    update(decisions)
                    .where(decisions.c.id == ids[0])
                    .values(continued_seconds=seconds)
                )

    def carried(self, thread_id: str, item_ids: Sequence[str]) -> bool:
        """Whether a continuation carrying any of these answers went through: its time is
        kept on one of its decisions (`mark_applied(seconds=…)`), which a send whose end was
        lost never reaches."""
        with self.engine.connect() as connection:
            found = connection.execute(
                select(decisions.c.id).where(
                    decisions.c.thread_id == thread_id,
                    decisions.c.item_id.in_(list(item_ids)),
                    decisions.c.continued_seconds.is_not(None),
                ).limit(1)
            ).first()
        return found is not None

    def _items(self, connection: Any, rows: Sequence[Row[Any]]) -> list[InboxItem]:
        ids = [row.id for row in rows]
        votes: dict[str, list[Vote]] = {}
        if ids:
            found = connection.execute(
                select(decision_votes)
                .where(decision_votes.c.decision_id.in_(ids))
                .order_by(decision_votes.c.at)
            ).all()
            voters = {v.voter_email for v in found if v.verified_by in _BY_ACCOUNT}
            accounts = {a.email: a for a in find_accounts(connection, voters)} if voters else {}
            for vote in found:
                by_account = vote.verified_by in _BY_ACCOUNT
                # The account as it is now; one made after the vote is another person's.
                account = accounts.get(vote.voter_email)
                if account is not None and vote.at < account.created:
                    account = None
                votes.setdefault(vote.decision_id, []).append(
                    Vote(
                        email=vote.voter_email,
                        name=vote.voter_name,
                        approved=vote.approved,
                        at=vote.at,
                        verified_by=vote.verified_by,
                        token_name=vote.token_name,
                        roles=frozenset(account.roles if account is not None else ())
                        if by_account
                        else frozenset(json.loads(vote.roles)),
                        removed=by_account and account is None,
                        counts=vote.counted is not False,
                    )  # fmt: skip
                )
        return [
            InboxItem(
                decision_id=row.id,
                thread_id=row.thread_id,
                item_id=row.item_id,
                kind=row.kind,
                name=row.name,
                summary=row.summary,
                args=json.loads(row.args),
                requester_email=row.requester_email,
                requester_name=row.requester_name,
                rule=row.rule,
                waiting_for=row.waiting_for,
                quorum=row.quorum,
                votes=tuple(votes.get(row.id, ())),
                status=row.status,
                created_at=row.created_at,
                expires_at=row.expires_at,
                decided_by=row.decided_by,
                decided_by_name=row.decided_by_name,
                outcome=row.outcome,
                reminded_at=row.reminded_at,
                escalated_at=row.escalated_at,
                escalated_to=tuple(json.loads(row.escalate_to or "[]")),
                escalate_at=row.escalate_at,
                edited_args=_edited_args(row) if row.outcome == "edited" else None,
                auto_approved=_auto_verdict(row) if row.outcome == "auto" else None,
            )  # fmt: skip
            for row in rows
        ]

    def answers_to_apply(self, thread_id: str) -> list[Row[Any]]:
        """Decided answers no continuation has carried yet."""
        with self.engine.connect() as connection:
            return list(
                connection.execute(
                    select(decisions).where(
                        decisions.c.thread_id == thread_id,
                        decisions.c.status == "decided",
                        decisions.c.applied.is_(False),
                    )
                ).all()
            )

    def decided(self, thread_id: str, item_ids: Sequence[str]) -> list[Row[Any]]:
        """The decided answers to these items of the conversation, carried or not."""
        with self.engine.connect() as connection:
            return list(
                connection.execute(
                    select(decisions).where(
                        decisions.c.thread_id == thread_id,
                        decisions.c.status == "decided",
                        decisions.c.item_id.in_(list(item_ids)),
                    )
                ).all()
            )

    def pending_beside(self, thread_id: str, decision_id: str) -> bool:
        """Whether the conversation has a pending decision besides `decision_id` (one of its
        pause's: a conversation waits on one pause at a time)."""
        with self.engine.connect() as connection:
            found = connection.execute(
                select(decisions.c.id).where(
                    decisions.c.thread_id == thread_id, decisions.c.status == "pending",
                    decisions.c.id != decision_id,
                ).limit(1)
            ).first()  # fmt: skip
        return found is not None

    def threads_with_answers(self) -> list[str]:
        """Conversations with decided answers no continuation has carried yet."""
        with self.engine.connect() as connection:
            return list(
                connection.execute(
                    select(decisions.c.thread_id)
                    .where(decisions.c.status == "decided", decisions.c.applied.is_(False))
                    .distinct()
                ).scalars()
            )

    # --- timers -------------------------------------------------------------------------

    def due(self, timer: str, now: datetime, *, limit: int = 100) -> list[Due]:
        """Pending decisions whose `timer` (`notify`, `remind`, `escalate`, `expire`) is due
        and has not fired, oldest due first, with their conversation's owner, whether the
        owner's page is open on it now and their stored routes (one query for them all).

        A pending decision always has routes (filing stores at least one); one decided
        between the two queries has none, and nobody is told of it."""
        due_at, fired = _TIMER_COLUMNS[timer]
        conditions = [decisions.c.status == "pending", due_at <= now]
        if fired is not None:
            conditions.append(fired.is_(None))
        if timer != "expire":
            # Past its expiry (the app was down meanwhile), nobody is asked to decide it:
            # it expires in this same look, and whoever asked is told that.
            conditions.append(or_(decisions.c.expires_at.is_(None), decisions.c.expires_at > now))
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions, conversations.c.watched_until)
                .join(conversations, conversations.c.thread_id == decisions.c.thread_id)
                .where(*conditions)
                .order_by(due_at)
                .limit(limit)
            ).all()
            routes: dict[str, list[str]] = {}
            if rows:
                for decision_id, route in connection.execute(
                    select(decision_routes.c.decision_id, decision_routes.c.route)
                    .where(decision_routes.c.decision_id.in_([row.id for row in rows]))
                    .order_by(decision_routes.c.route)
                ):
                    routes.setdefault(decision_id, []).append(route)
        return [
            Due(
                row,
                watched=row.watched_until is not None and row.watched_until > now,
                routes=tuple(routes.get(row.id, ())),
            )
            for row in rows
        ]

    def fire(
        self,
        timer: str,
        decision_id: str,
        now: datetime,
        *,
        routes: Sequence[str] = (),
        as_read: Row[Any] | None = None,
    ) -> bool:
        """Mark `timer` fired for a decision still pending, and add `routes` to its inbox
        routes in the same transaction (an escalation: an inbox never lists it to the
        escalated people before it says it was escalated); False when another worker did,
        it was decided meanwhile, or it was filed again under another rule since it was read
        (`as_read`: the timer moved, or whom it escalates to): whoever gets True tells the
        trail, once, and the next look tells the people of the rule it has now."""
        due, fired = _TIMER_COLUMNS[timer]
        assert fired is not None
        where = [decisions.c.id == decision_id, decisions.c.status == "pending", fired.is_(None)]
        if as_read is not None:
            where.append(due == getattr(as_read, due.name))
            if timer == "escalate":
                where.append(decisions.c.escalate_to == as_read.escalate_to)
        with write_transaction(self.engine) as connection:
            changed = connection.execute(
                update(decisions).where(*where).values({fired.name: now})
            ).rowcount
            if changed and routes:
                _add_missing_routes(connection, decision_id, routes)
        if changed and timer == "escalate":
            # Its conversation waits for them too now. In a transaction of its own: this one
            # locked the decision, and a save locks the conversation before its decisions.
            with write_transaction(self.engine) as connection:
                thread = select(decisions.c.thread_id).where(decisions.c.id == decision_id)
                _rewait(connection, connection.execute(thread).scalar_one())
        return bool(changed)

    def postpone_notice(self, decision_id: str, until: datetime) -> None:
        """The requester is looking at the conversation: their notice waits."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(decisions)
                .where(decisions.c.id == decision_id, decisions.c.notified_at.is_(None))
                .values(notify_at=until)
            )

    def expire(self, decision_id: str, *, answer: dict[str, Any], now: datetime) -> bool:
        """Resolve a pending decision whose expiry passed as `expired` (its answer the
        cancellation the agent reads as the expiry); False when it was decided meanwhile."""
        with write_transaction(self.engine) as connection:
            changed = _settle(
                connection, decision_id, outcome="expired", decided_by=None,
                decided_by_name=None, answer=answer, now=now, wait_seconds=None,
            )  # fmt: skip
        return changed

    def expire_decided(self, decision_ids: Sequence[str], *, now: datetime) -> None:
        """Decided answers not carried before their expiry: closed as expired (the agent
        takes only the expiry past it), the decider and their vote kept on record."""
        with write_transaction(self.engine) as connection:
            for row in connection.execute(
                select(decisions.c.id, decisions.c.item_id).where(
                    decisions.c.id.in_(list(decision_ids)),
                    decisions.c.status == "decided",
                    decisions.c.applied.is_(False),
                )
            ).all():
                connection.execute(
                    update(decisions)
                    .where(decisions.c.id == row.id)
                    # An expiry: out of the figures of answers' waits, as every expiry is.
                    .values(outcome="expired", answer=_dumps(expiry_entry(row.item_id)),
                            wait_seconds=None)  # fmt: skip
                )

    def untold(self, now: datetime, *, limit: int = 100) -> list[Due]:
        """Settled decisions whose requester is due to be told how they ended, oldest first,
        each with whether the requester's page is open on the conversation now (`Due.routes`
        empty: it goes to whoever asked)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(decisions, conversations.c.watched_until, conversations.c.looked_at)
                .join(conversations, conversations.c.thread_id == decisions.c.thread_id)
                .where(decisions.c.tell_at <= now, decisions.c.status != "pending")
                .order_by(decisions.c.tell_at)
                .limit(limit)
            ).all()
        return [
            Due(row, watched=row.watched_until is not None and row.watched_until > now, routes=())
            for row in rows
        ]

    def postpone_telling(self, decision_id: str, until: datetime) -> None:
        """Whoever asked is told how it ended no sooner than `until` (still to be told)."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(decisions)
                .where(decisions.c.id == decision_id, decisions.c.tell_at.is_not(None))
                .values(tell_at=until)
            )

    def told(self, decision_id: str) -> bool:
        """Mark the requester told of a decision (a conditional UPDATE: one worker wins)."""
        with write_transaction(self.engine) as connection:
            changed = connection.execute(
                update(decisions)
                .where(decisions.c.id == decision_id, decisions.c.tell_at.is_not(None))
                .values(tell_at=None)
            ).rowcount
        return bool(changed)

    def watching(
        self, thread_id: str, owner_email: str, until: datetime, *, looked_at: datetime
    ) -> None:
        """The owner's page is open on the conversation until `until` (renewed while it is),
        and showed it at `looked_at`."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                update(conversations)
                .where(conversations.c.thread_id == thread_id,
                       conversations.c.owner_email == owner_email)
                .values(watched_until=until, looked_at=looked_at)
            )  # fmt: skip


_TIMER_COLUMNS: dict[str, tuple[Any, Any]] = {
    "notify": (decisions.c.notify_at, decisions.c.notified_at),
    "remind": (decisions.c.remind_at, decisions.c.reminded_at),
    "escalate": (decisions.c.escalate_at, decisions.c.escalated_at),
    "expire": (decisions.c.expires_at, None),
}


def _claim(connection: Any, thread_id: str, runner: str, *, now: datetime, until: datetime) -> bool:
    changed = connection.execute(
        update(conversations)
        .where(
            conversations.c.thread_id == thread_id,
            or_(
                conversations.c.runner.is_(None),
                conversations.c.runner == runner,
                conversations.c.runner_until < now,
            ),
        )
        .values(runner=runner, runner_until=until)
    ).rowcount
    return bool(changed)


def _after(now: datetime, span: timedelta | None) -> datetime | None:
    return None if span is None else now + span


def _governed(filing: Filing, *, paused: datetime, now: datetime) -> dict[str, Any]:
    """A decision's columns that its rule decides: who may decide and how many must, what it
    is waiting for, and its timers, counted from its pause (`paused`) but its first notice,
    from when it is filed (`now`)."""
    return dict(
        rule=filing.rule,
        approvers=_dumps(list(filing.approvers)),
        not_requester=filing.not_requester,
        quorum=filing.quorum,
        waiting_for=filing.waiting_for[:300],
        notify_at=_after(now, filing.notify_after),
        remind_at=_after(paused, filing.remind_after),
        escalate_at=_after(paused, filing.escalate_after),
        escalate_to=_dumps(list(filing.escalate_to)),
    )  # fmt: skip


def waiting_line(waits: Iterable[str]) -> str:
    """A conversation's "what it waits for": each of its open decisions' own, once each."""
    return "; ".join(sorted({wait for wait in waits if wait}))[:300]


def _rewait(connection: Any, thread_id: str) -> None:
    """A waiting conversation's "what it waits for" read again from its pending decisions,
    once they were filed again (under another rule, they wait for someone else) or one was
    escalated (someone else may decide it too)."""
    rows = connection.execute(
        select(decisions.c.waiting_for, decisions.c.escalated_at, decisions.c.escalate_to).where(
            decisions.c.thread_id == thread_id, decisions.c.status == "pending"
        )
    ).all()
    waits = (
        waiting_now(row.waiting_for, json.loads(row.escalate_to or "[]") if row.escalated_at
                    else ())
        for row in rows
    )  # fmt: skip
    connection.execute(
        update(conversations)
        .where(conversations.c.thread_id == thread_id, conversations.c.status == "waiting")
        .values(waiting_for=waiting_line(waits))
    )


def _regoverned(filing: Filing, stored: Row[Any], *, now: datetime) -> dict[str, Any]:
    """The columns of a stored decision filed again under `filing` (what the policy of now
    says of it), as if it had paused under that rule: its reminder and escalation due as
    long after its pause as the rule says (as the engine's gate counts an escalation), its
    notice from `now`. A reminder given stands if it is the one this rule asks for, an
    escalation made if this rule makes the same one; otherwise each is still to be given."""
    governed = _governed(filing, paused=stored.created_at, now=now)
    remind_at = governed["remind_at"]
    reminded = stored.reminded_at
    if remind_at is None or reminded is None or reminded < remind_at:
        reminded = None
    escalated = stored.escalated_at
    if (governed["escalate_at"], governed["escalate_to"]) != (
        stored.escalate_at,
        stored.escalate_to,
    ):
        escalated = None
    return {**governed, "reminded_at": reminded, "escalated_at": escalated}


def _add_missing_routes(connection: Any, decision_id: str, routes: Sequence[str]) -> None:
    """Add to a pending decision the inbox `routes` it has not got yet, dated its pause (so
    it sorts in the inbox where it paused)."""
    row = connection.execute(
        select(decisions.c.created_at, decisions.c.status).where(decisions.c.id == decision_id)
    ).first()
    if row is None or row.status != "pending":
        return
    have = set(
        connection.execute(
            select(decision_routes.c.route).where(decision_routes.c.decision_id == decision_id)
        ).scalars()
    )
    _insert_routes(connection, decision_id, set(routes) - have, row.created_at)


def _insert_routes(connection: Any, decision_id: str, routes: Iterable[str], at: datetime) -> None:
    """Add routes a decision had not got a moment ago, dated `at` (its pause)."""
    for route in sorted(routes):
        try:
            with connection.begin_nested():
                connection.execute(
                    insert(decision_routes).values(
                        decision_id=decision_id, route=route[:400], created_at=at
                    )
                )
        except IntegrityError:  # another worker added it meanwhile
            pass


def _add_routes(connection: Any, decision_id: str, routes: Sequence[str], at: datetime) -> None:
    """Store a pending decision's inbox routes, dated `at` (its pause)."""
    for route in sorted(set(routes)):
        connection.execute(
            insert(decision_routes).values(
                decision_id=decision_id, route=route[:400], created_at=at
            )
        )


def expiry_entry(item_id: str) -> dict[str, Any]:
    """The resume entry that closes an item as expired: its cancellation (past its expiry,
    the agent reads it as the expiry)."""
    return {"interruptId": item_id, "status": "cancelled"}


#: A decision's `outcome` in words, where the word alone would not do.
_ENDED = {"edited": "approved with edited arguments", "auto": "decided by its policy rule"}


def entry_outcome(entry: Mapping[str, Any] | None, kind: str) -> str:
    """How the figures name an answer given as a resume `entry` to a `kind` item."""
    if entry is None or entry.get("status") == "cancelled":
        return "cancelled"
    if kind != "tool":
        return "answered"
    envelope = entry.get("payload")
    if not isinstance(envelope, Mapping) or envelope.get("approved") is not True:
        return "rejected"
    return "edited" if "editedArgs" in envelope else "approved"


def _settle(
    connection: Any, decision_id: str, *, outcome: str, decided_by: str | None,
    decided_by_name: str | None, answer: dict[str, Any], now: datetime,
    wait_seconds: float | None,
) -> bool:  # fmt: skip
    """Move a pending decision to `decided` (a conditional UPDATE: of two, one wins) and take
    it out of every inbox."""
    changed = connection.execute(
        update(decisions)
        .where(decisions.c.id == decision_id, decisions.c.status == "pending")
        .values(
            status="decided", outcome=outcome, decided_by=decided_by,
            decided_by_name=decided_by_name, answer=_dumps(answer), decided_at=now,
            wait_seconds=wait_seconds,
        )  # fmt: skip
    ).rowcount
    if changed:
        connection.execute(
            delete(decision_routes).where(decision_routes.c.decision_id == decision_id)
        )
    return bool(changed)


def _waited(connection: Any, decision_id: str, now: datetime) -> float | None:
    """Seconds from the decision's pause to `now`."""
    paused = connection.execute(
        select(decisions.c.created_at).where(decisions.c.id == decision_id)
    ).scalar()
    return None if paused is None else max(0.0, (now - paused).total_seconds())


def _inbox_where(
    viewer_email: str,
    *,
    everyone: bool,
    tool: str | None = None,
    requester: str | None = None,
    now: datetime | None = None,
) -> Any:
    """What an inbox lists of the decisions its routes reach (see `DeskStore.inbox`)."""
    # Only pending decisions have routes: a person's inbox needs no status condition (and
    # without one, SQLite reads it from the route index rather than every pending one).
    conditions: list[Any] = [decisions.c.status == "pending"] if everyone else []
    if now is not None:
        conditions.append(or_(decisions.c.expires_at.is_(None), decisions.c.expires_at > now))
    if tool:
        conditions.append(decisions.c.name == tool)
    if requester:
        conditions.append(decisions.c.requester_email == requester.lower())
    if not everyone:
        conditions.append(
            or_(decisions.c.not_requester.is_(False), decisions.c.requester_email != viewer_email)
        )
        # An approval given towards a quorum is theirs no more to give.
        conditions.append(
            ~exists().where(
                decision_votes.c.decision_id == decisions.c.id,
                decision_votes.c.voter_email == viewer_email,
            )
        )
    return and_(true(), *conditions)


def _matching(
    routes: Sequence[str], where: Any, *columns: Any, everyone: bool, distinct: bool = True
) -> Any:
    """`columns` of the decisions an inbox lists, unordered (a SELECT to limit and count):
    one row each, or (not `distinct`) one for each of `routes` that reaches it."""
    if everyone:
        return select(*columns).where(where)
    routed = (
        select(*columns)
        .select_from(
            decision_routes.join(decisions, decisions.c.id == decision_routes.c.decision_id)
        )
        .where(decision_routes.c.route.in_(list(routes)), where)
    )
    return routed.distinct() if distinct else routed


def _newest_routed(
    connection: Connection, routes: Sequence[str], where: Any, limit: int
) -> list[Row[Any]]:
    """The newest `limit` decisions meeting `where` among those routed to `routes`: from
    each route's newest entries (a margin more than `limit`, as some may not meet `where`),
    widened until the result is known to be complete.

    Two statements a round, whatever the number of routes: where the routes were read short
    of all their entries, then the decisions, their candidates read inside it. Only pending
    decisions have routes, and a decision leaves `pending` in the transaction that drops
    them, so what the second joins is pending without a status condition (one would have
    SQLite walk every pending decision by its status index)."""
    margin = limit * 2
    while True:
        # Older than a route's oldest entry read, newer ones of that route may be unread.
        cut = union_all(*(_route_entries(decision_routes.c.created_at, route, limit=1,
                                         offset=margin - 1) for route in routes))  # fmt: skip
        cutoff = max(connection.execute(cut).scalars(), default=None)
        heads = union(*(_route_entries(decision_routes.c.decision_id, route, limit=margin)
                        for route in routes)).subquery()  # fmt: skip
        page = select(decisions).where(where)
        if cutoff is not None:
            page = page.where(decisions.c.created_at > cutoff)
        found = _candidates(page, heads, connection.dialect.name).limit(limit)
        rows = list(connection.execute(found).all())
        if cutoff is None or len(rows) == limit:
            return rows
        margin *= 4


def _route_entries(column: Any, route: str, *, limit: int, offset: int = 0) -> Any:
    """`column` of `route`'s newest entries, `offset` on, as a member of a compound SELECT
    (SQLite takes an ORDER BY and a LIMIT there only inside a subquery)."""
    entries = (
        select(column)
        .where(decision_routes.c.route == route)
        .order_by(decision_routes.c.created_at.desc())
        .limit(limit)
    )
    return (entries.offset(offset) if offset else entries).subquery().select()


def _candidates(page: Any, heads: Any, dialect: str) -> Any:
    """`page` (decisions, filtered) restricted to the ids `heads` holds, newest first."""
    if dialect == "postgresql":
        # Each candidate looked up by its key. Joined, PostgreSQL hashed the candidates
        # and scanned every decision for them (50,000 pending, vacuumed: 20 ms for the
        # statement, against 3.7 ms); OFFSET 0 keeps it from planning this as that join.
        one = page.where(decisions.c.id == heads.c.decision_id).offset(0).lateral()
        return (
            select(one)
            .select_from(heads)
            .join(one, true())
            .order_by(one.c.created_at.desc(), one.c.position, one.c.id)
        )
    return page.join(heads, heads.c.decision_id == decisions.c.id).order_by(
        decisions.c.created_at.desc(), decisions.c.position, decisions.c.id
    )


def summary_of(row: Row[Any]) -> ConversationSummary:
    return ConversationSummary(
        thread_id=row.thread_id, title=row.title, status=row.status,
        waiting_for=row.waiting_for, owner_email=row.owner_email, owner_name=row.owner_name,
        updated_at=row.updated_at, created_at=row.created_at, error=row.error,
        version=row.version,
    )  # fmt: skip


def rejection_reason(answer: str | None) -> str:
    """The reason a rejection gave (its payload's `reason`, read from the stored resume entry
    as the wire reads one), "" for none."""
    decision = read_decision(json.loads(answer or "{}"), "approval")
    payload = decision.payload if isinstance(decision, Decision) else None
    reason = payload.get("reason") if isinstance(payload, Mapping) else None
    return reason.strip() if isinstance(reason, str) else ""


def _reason_of(row: Row[Any]) -> str:
    """A decision row's rejection reason ("" for any other end)."""
    return rejection_reason(row.answer) if row.outcome == "rejected" else ""


def answered_value(answer: str | None) -> Any:
    """What an answer to a question gave, read from its stored resume entry as the wire
    reads one; `None` for none."""
    decision = read_decision(json.loads(answer or "{}"), "generic")
    given = decision.payload if isinstance(decision, Decision) else None
    return None if given is ABSENT else given


def _auto_verdict(row: Row[Any]) -> bool | None:
    """Whether a rule's own decision approved (`None` when stored without its verdict)."""
    if row.answer is None:
        return None
    decision = read_decision(json.loads(row.answer), "approval")
    return decision.approved if isinstance(decision, Decision) else None


def _edited_args(row: Row[Any]) -> Any:
    """The arguments a decision's answer approved instead of those proposed (`None`: it
    changed none), read from its stored resume entry as the wire reads one."""
    return edited_args_of(json.loads(row.answer or "{}"))


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _decided_by_another(rows: Sequence[Any], email: str) -> list[Any]:
    """The decisions among `rows` already decided, or closed by someone other than `email`
    (closed by the same person before: their own answer, sent again by a Retry)."""
    return [
        row for row in rows
        if row.status == "decided" or (row.status == "closed" and (row.decided_by or "") != email)
    ]  # fmt: skip


#: The ways of signing in whose roles are an account's: read again from it, as every request is.
_BY_ACCOUNT = ("password", "token")
