"""The desk's clock: first notices, reminders, escalations and expiry of pending decisions.

Owns `Timers` and `PeopleFor`. Each timer is a due time stored with its decision
(`notify_at`, `remind_at`, `escalate_at`, `expires_at`), so it survives restarts, and every
worker looks for due ones (a round every few seconds, and at once when a pause adds
decisions). What a due timer does is idempotent up to the moment it is marked fired —
notices go to the outbox under a key per decision, event, channel and recipient; routes are
added only once — and the mark is a conditional UPDATE that one worker wins: the winner alone
writes the trail and the trace. A timer never fires twice however many workers look or however
the clock jumps: it is a state, not a sleeping task.

- **Notice**: to the people whose inbox lists the decision — its stored routes, the rule's
  approvers when it was filed or opened again (roles resolved to people by `PeopleFor`; a
  rule naming nobody is `*`: only the webhook is told); with no rule, to the requester,
  `Desk.notify_idle_seconds` after the pause and only if their page is not open on the
  conversation then (it waits while it is).
- **Reminder** (`remind_after`): the people its stored routes name again (with those an
  escalation added, once it has; not those who approved a quorum's already), and the trail
  says so. None of these three goes out for a decision past its expiry (the app was down):
  it expires in the same look.
- **Escalation** (`escalate_after`, `escalate_to`): those people may decide too (their
  inboxes list it; the engine's gate, by the same clock, lets them), are told, and the trail
  and the item say "escalated to admin after 2 h".
- **Expiry**: `Desk.expire` resolves it as expired and the conversation goes on.
- **Outcome**: once someone other than whoever asked settled it, or it expired, whoever asked
  is told how it ended (`decided`: "Rejected by Ada: not this quarter."), unless their page
  showed the conversation after it was settled (they saw it there: `looked_at`). A page whose
  last word came before is waited for until that word lapses: a page that has closed or
  moved on meanwhile says nothing more, and they are told then.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from chat_app.interrupts import edited_args_of
from chat_app.notify import OUTCOME_HEADINGS, Notice, NotifySettings, Outbox, OutboxError, Recipient
from chat_app.observe import decision_span
from chat_app.trust import describe_duration, escalation_note
from chat_app.trust.ledger import AuditEntry
from chat_app.trust.policy import all_of

from .desk import Desk, inbox_topic, thread_topic
from .records import DeskError, InboxItem, arguments_line, expiry_note_of
from .store import Due, answered_value, rejection_reason, route_of

__all__ = ["AuditSink", "PeopleFor", "Timers"]

_log = logging.getLogger(__name__)

#: Who the routes (`role:<role>`, `user:<email>`) name, as people with an email.
PeopleFor = Callable[[Sequence[str]], Sequence[Recipient]]
#: Where the trail's records go (`Ledger.append_async`).
AuditSink = Callable[[list[AuditEntry]], Awaitable[Any]]

#: How often every worker looks for due timers (a pause on this worker wakes it at once).
EVERY_SECONDS = 5.0


class Timers:
    """The desk's timers, run by every worker (see the module's docstring)."""

    def __init__(
        self,
        desk: Desk,
        *,
        people: PeopleFor,
        outbox: Outbox | None = None,
        settings: NotifySettings | None = None,
        audit: AuditSink | None = None,
        every_seconds: float = EVERY_SECONDS,
        on_enqueued: Callable[[], None] | None = None,
    ) -> None:
        self.desk = desk
        self.people = people
        self.outbox = outbox
        self.settings = settings
        self.audit = audit
        self.every_seconds = every_seconds
        #: Called when notices were queued (the deliverer sends them at once).
        self.on_enqueued = on_enqueued
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- running ------------------------------------------------------------------------

    async def run(self) -> None:
        """Look for due timers every `every_seconds`, and when woken, for as long as the app
        runs. A database that is away is logged and tried again next round."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self.desk.on_new_decisions = self.wake
        while True:
            try:
                await self.desk.refiled()
                await self.tick()
            except (DeskError, OutboxError, SQLAlchemyError) as error:
                _log.warning("The desk's timers could not run: %s", error)
            except Exception:  # a bug here must not stop every notice and expiry for good
                _log.exception("The desk's timers failed; they look again next round")
            try:
                await asyncio.wait_for(self._event.wait(), timeout=self.every_seconds)
            except TimeoutError:
                pass
            self._event.clear()

    def wake(self) -> None:
        """Look now (from any thread)."""
        if self._loop is not None and self._event is not None:
            self._loop.call_soon_threadsafe(self._event.set)

    async def tick(self) -> None:
        """One look: everything due now fires (once, whichever worker gets it). A decision
        whose timer fails is logged and tried again next round; the others go on."""
        now = self.desk.clock()
        # An escalation before a reminder due in the same look (after a restart, say): the
        # reminder goes to those the escalation added too.
        for timer, fire in (
            ("notify", self._notice),
            ("escalate", self._escalation),
            ("remind", self._reminder),
            ("expire", self._expiry),
            ("tell", self._outcome),
        ):
            for due in await self._due(timer, now):
                try:
                    await fire(due, now)
                except (DeskError, OutboxError, SQLAlchemyError):
                    raise  # the database is away: this round is over
                except Exception:
                    _log.exception("The %s timer of decision %s failed", timer, due.decision.id)

    # --- the timers ---------------------------------------------------------------------

    async def _notice(self, due: Due, now: datetime) -> None:
        row = due.decision
        if row.rule is None and due.watched:  # the requester is looking at it
            later = now + timedelta(seconds=self.desk.notify_idle_seconds)
            await self._db(self.desk.store.postpone_notice, row.id, later)
            return
        await self._tell(row, "decision-needed", due.routes, note="")
        await self._db(lambda: self.desk.store.fire("notify", row.id, now, as_read=row))

    async def _reminder(self, due: Due, now: datetime) -> None:
        row = due.decision
        after = row.remind_at - row.created_at
        waited = describe_duration(after)
        # The rule's time, unless the reminder is well past it (the app was down, the policy
        # changed after it was due): then how long it has waited by now, in whole minutes
        # past the first (a look's few seconds late, or a tenth of the rule's time, are no
        # news).
        so_far, by_now = waited, now - row.created_at
        if now - row.remind_at > max(timedelta(seconds=2 * self.every_seconds), after / 10):
            if by_now >= timedelta(minutes=1):
                by_now = timedelta(minutes=round(by_now.total_seconds() / 60))
            so_far = describe_duration(by_now)
        note = f"Reminder: waiting for a decision for {so_far}"
        told = await self._tell(row, "reminder", due.routes, note=note)
        if await self._db(lambda: self.desk.store.fire("remind", row.id, now, as_read=row)):
            _log.info("Decision %s: its approvers reminded after %s%s", row.id, so_far,
                      f" (emailed: {', '.join(told)})" if told else "",
                      extra={"decision": row.id, "rule": row.rule or ""})  # fmt: skip
            await self._record(row, "reminded", {"after": waited, "told": told}, now)
            await self._announce(row)

    async def _escalation(self, due: Due, now: datetime) -> None:
        row = due.decision
        to = json.loads(row.escalate_to or "[]")
        added = [route_of(person) for person in to]
        after = row.escalate_at - row.created_at
        said = escalation_note(to, after)
        said = f"{said[:1].upper()}{said[1:]}"
        # A sentence of its own, to the people it now lets in; when it lets in nobody (the
        # only admin is who asked), the webhook reads that it was escalated, not "you may".
        told = await self._tell(
            row, "escalated", added, note=f"{said}: you may decide it now.",
            note_to_nobody=f"{said}, which lets nobody else decide it.",
        )  # fmt: skip
        fire = partial(self.desk.store.fire, "escalate", row.id, now, routes=added, as_read=row)
        if await self._db(fire):
            _log.info("Decision %s: %s%s", row.id, said,
                      f" (emailed: {', '.join(told)})" if told else "",
                      extra={"decision": row.id, "rule": row.rule or ""})  # fmt: skip
            data = {"to": to, "after": describe_duration(after), "told": told}
            await self._record(row, "escalated", data, now)
            await self._announce(row)

    async def _expiry(self, due: Due, now: datetime) -> None:
        item = await self.desk.decision(due.decision.id)
        if item is not None and item.status == "pending":
            await self.desk.expire(item)
        self.wake()  # its requester is told next

    async def _outcome(self, due: Due, now: datetime) -> None:
        row = due.decision
        # Seen if their page showed the conversation after it was settled (it shows it
        # live). Still open by an earlier word, it is not known yet: the page says so again
        # within its word's time, or has gone, and they are told then.
        seen = row.looked_at is not None and row.decided_at is not None and (
            row.looked_at >= row.decided_at
        )
        if not seen and self.outbox is not None and self.settings is not None:
            if due.watched:
                await self._db(self.desk.store.postpone_telling, row.id, row.watched_until)
                return
            requester = Recipient(email=row.requester_email, name=row.requester_name)
            people = [requester] if requester.email else []
            # An expiry was nobody's decision, though someone had approved in time.
            expired = row.outcome == "expired"
            decided_by = "" if expired else row.decided_by_name or row.decided_by or ""
            reason = rejection_reason(row.answer) if row.outcome == "rejected" else ""
            if expired:  # a quorum's, with who approved short of it (its votes are read)
                note = expiry_note_of(await self._with_votes(row) or row)
            else:
                heading = OUTCOME_HEADINGS.get(row.outcome or "", "Decided")
                who = await self._approvers(row, decided_by)
                # What a question was answered with is what the one who asked wants to know.
                given = answered_value(row.answer) if row.outcome == "answered" else None
                said = reason or (arguments_line(given) if given is not None else "")
                note = f"{heading} by {who}" + (f": {said}" if said else "")
                note += "" if note.endswith((".", "!", "?")) else "."
            notice = replace(
                self._notice_of(row, "decided", note, people),
                outcome=row.outcome or "", decided_by=decided_by, reason=reason,
                decided_by_email="" if expired else row.decided_by or "",
            )  # fmt: skip
            edited = edited_args_of(json.loads(row.answer or "{}"))
            if row.outcome == "edited" and edited is not None:
                notice = self._as_run(notice, edited, row.summary)
            await self._enqueue(notice, people)
        await self._db(self.desk.store.told, row.id)

    # --- helpers ------------------------------------------------------------------------

    @staticmethod
    def _as_run(notice: Notice, edited: Any, asked_line: str) -> Notice:
        """How an approval with changes really ended: the arguments that ran (in the order
        the call had them; the stored answer's keys are sorted), and what was asked."""
        asked = notice.args
        if isinstance(asked, dict) and isinstance(edited, dict):
            edited = {key: edited[key] for key in asked if key in edited} | edited
        note = notice.note
        if edited != asked and asked_line:
            stop = "" if asked_line.endswith((".", "…", "!", "?")) else "."
            note = f"{note} Changed from {asked_line}{stop}"
        return replace(notice, args=edited, summary=arguments_line(edited), note=note)

    async def _approvers(self, row: Any, decided_by: str) -> str:
        """Who settled it, as its cards name them ("Sam and Olive": `InboxItem.deciders`);
        the votes are read only for a quorum's."""
        item = await self._with_votes(row)
        return all_of(list(item.deciders.values())) if item is not None else decided_by

    async def _with_votes(self, row: Any) -> InboxItem | None:
        """A quorum's decision with its votes (who approved so far), read for it alone; None
        for one a single answer decides, or one gone."""
        return await self.desk.decision(row.id) if row.quorum > 1 else None

    async def _due(self, timer: str, now: datetime) -> list[Due]:
        store = self.desk.store
        found: list[Due] = await (
            self._db(store.untold, now) if timer == "tell" else self._db(store.due, timer, now)
        )
        return found

    async def _tell(
        self, row: Any, event: str, routes: Sequence[str], *, note: str,
        note_to_nobody: str | None = None,
    ) -> list[str]:  # fmt: skip
        """Queue the notice for the people `routes` name (not the requester, when the rule
        keeps them from deciding) and for the webhook, even when nobody here has an email (its
        receiver, a team's channel, may know them); returns who was told by email. The
        notice says `note_to_nobody` (when given) where `routes` name nobody but the
        requester."""
        if not routes or self.outbox is None or self.settings is None:
            return []
        people: Sequence[Recipient] = await asyncio.to_thread(self.people, routes)
        if row.requester_name:  # as the conversation knows them (a proxy's name header)
            people = [
                replace(person, name=row.requester_name)
                if person.email.lower() == row.requester_email.lower() else person
                for person in people
            ]  # fmt: skip
        if row.rule is not None:
            # Nobody is told to approve their own request where someone else may (they asked;
            # their page shows it). Where the rule lets only them, they are, as without one.
            asked = row.requester_email.lower()
            others = [person for person in people if person.email.lower() != asked]
            people = others if others or row.not_requester else people
        approved_by: tuple[str, ...] = ()
        if (item := await self._with_votes(row)) is not None:
            # Who approved already waits for the others: their inbox has it not.
            voted = {vote.email.lower() for vote in item.votes}
            people = [person for person in people if person.email.lower() not in voted]
            approved_by = item.approved_by
        if not people and note_to_nobody is not None:
            note = note_to_nobody
        notice = replace(self._notice_of(row, event, note, people), quorum=row.quorum,
                         approved_by=approved_by)  # fmt: skip
        await self._enqueue(notice, people)
        return [person.email for person in people] if "email" in self.settings.channels else []

    def _notice_of(
        self, row: Any, event: str, note: str, people: Sequence[Recipient]
    ) -> Notice:
        assert self.settings is not None
        return Notice(
            event=event,  # type: ignore[arg-type]
            decision_id=row.id, thread_id=row.thread_id, kind=row.kind, name=row.name,
            summary=row.summary, args=json.loads(row.args), requester_email=row.requester_email,
            requester_name=row.requester_name, rule=row.rule,
            link=self.settings.link(row.thread_id), expires_at=row.expires_at,
            waiting_since=row.created_at, note=note, recipients=tuple(people),
        )  # fmt: skip

    async def _enqueue(self, notice: Notice, people: Sequence[Recipient]) -> None:
        outbox = self.outbox
        assert outbox is not None
        now = self.desk.clock()
        added = await self._db(lambda: outbox.enqueue(notice, people, now=now))
        if added and self.on_enqueued is not None:
            self.on_enqueued()

    async def _record(self, row: Any, kind: str, data: dict[str, Any], now: datetime) -> None:
        decision_span(row.id, kind, start=now, attributes={"rule": row.rule or ""})
        if self.audit is None:
            return
        entry = AuditEntry(
            kind=kind, thread_id=row.thread_id, run_id=row.run_id or "", actor=None,
            data={"decisionId": row.id, "interruptId": row.item_id, "toolName": row.name,
                  "rule": row.rule, **data},
        )  # fmt: skip
        try:
            await self.audit([entry])
        except Exception:  # the trail's store is away: the timer has fired all the same
            _log.exception("Could not record %s of decision %s in the trail", kind, row.id)

    async def _announce(self, row: Any) -> None:
        await self.desk.fanout.publish(inbox_topic(), thread_topic(row.thread_id))

    async def _db(self, function: Callable[..., Any], *args: Any) -> Any:
        return await self.desk._db(function, *args)

