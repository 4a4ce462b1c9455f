"""The worker side of the outbox: `Deliverer` sends what is due, and retries what failed.

One runs in every worker (`run`, a task for the life of the process). Nothing it meets
stops it: a receiver that refuses, hangs or is gone is a failed attempt, recorded with its
reason and tried again after the backoff; a database that is unreachable is logged and tried
again next round. Each send is a task of its own under the timeout, and a round does not wait
for the sends it started: a receiver that hangs holds up only its own notices, not the next
round's (another person's email, a reminder); at most `MAX_SENDING` are under way at once. A
worker that stops gives back the claims of the sends it had under way and its receiver had
not taken, so they go out at once after a restart or from another worker, not when their
lease lapses (rows it was still claiming wait for their lease).

A notice that asks for a decision (`Notice.asks_for_decision`) is checked just before it is
sent: one can wait long in the outbox (a receiver down, its retries), and telling someone to
decide what was approved or expired meanwhile only misleads them. Such a delivery is
`skipped`, with the reason, and the Deliveries page shows it.

Emails claimed in one round for one person about one conversation and one event (a batch's
decisions, filed together; their reminders; how they ended) go as one message
(`email.render_together`): a batch of ten invoices is one email to each approver, not ten;
so do Slack messages (a channel is one reader). A JSON webhook gets each decision alone.
Each delivery is still its own row, sent, retried or skipped on its own record; a batch's
rows fail and are retried together, so they stay together.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

import httpx

from chat_app.trust.ledger import AuditEntry

from . import email, webhook
from .notice import DeliveryError, iso_utc, one_line
from .outbox import Delivery, Outbox, OutboxError
from .settings import NotifySettings

__all__ = ["Deliverer", "SettledDecisions"]

_log = logging.getLogger(__name__)

#: Of some decision ids, those no longer pending, each with how it ended in words
#: ("approved", "expired"; `DeskStore.settled`). Blocking: called in a thread.
SettledDecisions = Callable[[Collection[str]], Mapping[str, str]]

#: A claim outlives the slowest send by far: a worker that is alive never loses a row to
#: another mid-send, one that died gives its rows back within this.
_MIN_LEASE_SECONDS = 60.0
#: At most this many of `run`'s sends under way at once (a backlog behind a slow receiver
#: would otherwise open a connection per row, and SMTP servers refuse that many).
MAX_SENDING = 20


class Deliverer:
    """Sends `outbox`'s due deliveries as `worker` (unique among the workers sharing the
    database: it names the claims).

    `audit` is given each failed attempt as a `delivery-failed` entry; `on_sent` is told of
    each delivery sent (for figures); `http` is the client for webhooks (one of its own,
    closed by `aclose`, when not given); `settled` says which decisions are no longer
    pending (without it, every notice is sent).
    """

    def __init__(
        self,
        outbox: Outbox,
        settings: NotifySettings,
        *,
        worker: str,
        audit: Callable[[Sequence[AuditEntry]], Awaitable[None]] | None = None,
        on_sent: Callable[[Delivery], None] | None = None,
        http: httpx.AsyncClient | None = None,
        settled: SettledDecisions | None = None,
    ) -> None:
        self.outbox = outbox
        self.settings = settings
        self.worker = worker
        self._audit = audit
        self._on_sent = on_sent
        self._http = http
        self._owns_http = http is None
        self._settled = settled
        self._lease_seconds = max(_MIN_LEASE_SECONDS, 3 * settings.timeout_seconds)
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sending: dict[int, asyncio.Task[int]] = {}  # `run`'s sends under way, by row
        # Rows whose send reached its receiver, being recorded: never given back.
        self._delivered: set[int] = set()
        #: Since when claiming has failed (the database away), for one log line of it.
        self._claims_failing_since: float | None = None

    async def deliver_due(self) -> int:
        """Claim what is due and try each once, waiting for every send; returns how many
        were sent. Never raises for a receiver's or the database's failure."""
        rows = await self._claim()
        if not rows:
            return 0
        sent = await asyncio.gather(*(self._deliver(group) for group in self._messages(rows)))
        return sum(sent)

    async def _start_due(self) -> None:
        """Claim what is due, up to `MAX_SENDING` under way, and start a send for each,
        without waiting for them."""
        room = MAX_SENDING - len(self._sending)
        if room <= 0:
            return
        claimed = await self._claim(limit=room)
        # A row whose lease lapsed mid-send is claimed again: that send still runs.
        for group in self._messages([row for row in claimed if row.id not in self._sending]):
            task = asyncio.create_task(self._deliver(group))
            for row in group:
                self._sending[row.id] = task
                task.add_done_callback(functools.partial(self._forget, row.id))

    def _messages(self, rows: Sequence[Delivery]) -> list[list[Delivery]]:
        return _together(rows, slack=self.settings.webhook_format == "slack")

    def _forget(self, key: int, task: asyncio.Task[int]) -> None:
        if self._sending.get(key) is task:
            del self._sending[key]
        if not task.cancelled() and task.exception() is not None:
            _log.error("notify: delivery %s failed in the deliverer", key,
                       exc_info=task.exception())  # fmt: skip

    async def _claim(self, limit: int = 20) -> list[Delivery]:
        """The due deliveries this worker now holds (at most `limit`), less those settled
        without sending."""
        try:
            rows = await asyncio.to_thread(
                self.outbox.claim_due,
                self.worker,
                now=self.outbox.clock(),
                limit=limit,
                lease_seconds=self._lease_seconds,
            )
        except OutboxError as error:
            # One line when the database goes away, not one a round (a second) while it is
            # away, and one when it is back.
            if self._claims_failing_since is None:
                self._claims_failing_since = time.monotonic()
                _log.warning("notify: could not claim deliveries (%s); trying again each "
                             "round, quietly until it works", one_line(str(error)))  # fmt: skip
            return []
        if self._claims_failing_since is not None:
            away = time.monotonic() - self._claims_failing_since
            self._claims_failing_since = None
            _log.warning("notify: claiming deliveries again, after %.0f s", away)
        return await self._skip_settled(rows)

    async def run(self, wake: asyncio.Event | None = None, *, poll_seconds: float = 1.0) -> None:
        """Rounds until cancelled, each starting a send for every due delivery: again after
        `poll_seconds`, or as soon as `wake` is set or `wake()` called (after queueing, so a
        notice does not wait for the poll). Cancelled, it stops its sends under way and gives
        their claims back."""
        if wake is not None:
            self._wake = wake
        wake = self._wake
        self._loop = asyncio.get_running_loop()
        try:
            while True:
                wake.clear()  # before the round: a wake during it starts the next
                try:
                    await self._start_due()
                except Exception:  # a bug here must not end delivery for the process
                    _log.exception("notify: a delivery round failed")
                await self._pause(wake, poll_seconds)
        finally:
            self._loop = None
            await self._stop_sending()
            await self.aclose()

    async def _stop_sending(self) -> None:
        """Cancel the sends under way and give their rows back to the outbox, unsent. One
        that its receiver took is not given back: its record (`mark_sent`, in a thread the
        cancel does not stop) settles it, or its lease lapses. One cut off mid-request may
        still have arrived, and may arrive twice, as after a crash."""
        sending = dict(self._sending)
        if not sending:
            return
        for task in sending.values():
            task.cancel()
        await asyncio.wait(set(sending.values()))
        unsent = [
            key for key, task in sending.items() if task.cancelled() and key not in self._delivered
        ]
        try:
            released = await asyncio.to_thread(self.outbox.release, unsent, self.worker)
        except OutboxError:
            _log.exception("notify: could not give back %d deliveries; they wait for their lease",
                           len(unsent))  # fmt: skip
            return
        if released:
            _log.info("notify: stopping; %d deliveries under way given back, unsent", released)

    def wake(self) -> None:
        """Start the next round of `run` now rather than at the poll. Safe from any thread;
        before `run` starts, its first round (which is immediate anyway) takes it."""
        loop = self._loop
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is None or loop is here or loop.is_closed():
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    async def aclose(self) -> None:
        """Close the HTTP client if it is this deliverer's own."""
        if self._owns_http and self._http is not None:
            client, self._http = self._http, None
            await client.aclose()

    @staticmethod
    async def _pause(wake: asyncio.Event, seconds: float) -> None:
        try:
            await asyncio.wait_for(wake.wait(), seconds)
        except TimeoutError:
            pass

    async def _skip_settled(self, rows: list[Delivery]) -> list[Delivery]:
        """`rows` less those asking for a decision that is no longer pending, which are
        settled as `skipped` with the reason. When the decisions cannot be read, every row
        is sent: a stale notice misleads less than a lost one."""
        asking = {row.decision_id or "" for row in rows if _asks(row)}
        if not asking or self._settled is None:
            return rows
        try:
            settled = await asyncio.to_thread(self._settled, asking)
        except Exception:  # the desk's database, or its code: neither stops a notice
            _log.exception("notify: could not read which decisions are settled; sending all")
            return rows
        keep = []
        for row in rows:
            how = settled.get(row.decision_id or "") if _asks(row) else None
            if how is None:
                keep.append(row)
                continue
            reason = f"not sent: the decision was {how} before it went out"
            try:
                await asyncio.to_thread(
                    self.outbox.mark_skipped,
                    row.id,
                    self.worker,
                    now=self.outbox.clock(),
                    reason=reason,
                )
            except OutboxError:  # its claim lapses, and the next look skips it again
                _log.exception("notify: could not record that delivery %s is skipped", row.id)
                continue
            _log.info("notify: %s delivery %s %s", row.channel, row.id, reason)
        return keep

    async def _deliver(self, rows: Sequence[Delivery]) -> int:
        """Send `rows` (one message: `_together`) once; how many of them were sent."""
        try:
            await asyncio.wait_for(self._send(rows), self.settings.timeout_seconds)
        except DeliveryError as error:
            failure = str(error)
        except TimeoutError:
            failure = f"{rows[0].channel}: no answer within {self.settings.timeout_seconds:g} s"
        except Exception as error:  # a notice a channel cannot render is a failure too
            _log.exception("notify: delivery %s failed unexpectedly",
                           ", ".join(str(row.id) for row in rows))  # fmt: skip
            failure = f"{type(error).__name__}: {error}"
        else:
            # Taken by its receiver: from here a cancel (the worker stopping) leaves them to
            # their records, which their thread finishes anyway, not to `_stop_sending`.
            self._delivered.update(row.id for row in rows)
            await self._sent(rows)
            return len(rows)
        for row in rows:
            await self._failed(row, failure)
        return 0

    async def _sent(self, rows: Sequence[Delivery]) -> None:
        """Record `rows` sent, all in one trip to a thread: a cancel while it runs stops the
        wait, not the recording (one row at a time, a cancel after the first left the rest
        held, unsent to the record, until their claims lapsed: sent again then)."""
        now = self.outbox.clock()

        def record() -> list[Delivery | None | OutboxError]:
            done: list[Delivery | None | OutboxError] = []
            for row in rows:
                try:
                    done.append(self.outbox.mark_sent(row.id, self.worker, now=now,
                                                      sent_to=self._sent_to(row)))  # fmt: skip
                except OutboxError as error:
                    done.append(error)
            return done

        for row, done in zip(rows, await asyncio.to_thread(record), strict=True):
            self._delivered.discard(row.id)
            if isinstance(done, OutboxError):
                # Sent, but not recorded: once the claim lapses it is sent again (at least
                # once).
                _log.error("notify: delivery %s was sent but could not be recorded: %s",
                           row.id, done)  # fmt: skip
            elif done is None:
                _log.warning("notify: delivery %s was sent after its claim lapsed", row.id)
            elif self._on_sent is not None:
                try:
                    self._on_sent(done)
                except Exception:
                    _log.exception("notify: on_sent failed for delivery %s", row.id)

    async def _send(self, rows: Sequence[Delivery]) -> None:
        first = rows[0]
        if first.channel == "webhook":
            await webhook.post(
                self._client(), self.settings, [row.notice for row in rows],
                now=self.outbox.clock().timestamp(), delivery_id=first.key,
            )  # fmt: skip
        elif first.channel == "email":
            if not self.settings.mail_from:
                raise DeliveryError("no sender is configured (CHAT_APP_MAIL_FROM)")
            message = email.render_together([row.notice for row in rows], first.to,
                                            mail_from=self.settings.mail_from)  # fmt: skip
            await email.send(self.settings, message)
        else:
            raise DeliveryError(f"unknown channel {first.channel!r}")

    def _sent_to(self, row: Delivery) -> str | None:
        """Where `row` goes now: a webhook's address as the log names it; None for an email
        (its recipient says where)."""
        return self.settings.webhook_shown if row.channel == "webhook" else None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient()
        return self._http

    async def _failed(self, row: Delivery, error: str) -> None:
        try:
            after = await asyncio.to_thread(
                partial(self.outbox.mark_failed, row.id, self.worker, now=self.outbox.clock(),
                        error=error, sent_to=self._sent_to(row))  # fmt: skip
            )
        except OutboxError:
            _log.exception("notify: could not record the failure of delivery %s", row.id)
            return
        if after is None:
            return
        retry = after.status == "pending"
        recipient = row.recipient or self.settings.webhook_shown  # a webhook's is its address
        _log.warning(
            "notify: %s delivery %s to %s failed (attempt %d%s): %s",
            row.channel,
            row.id,
            recipient,
            after.attempts,
            f", next at {iso_utc(after.next_attempt_at)}" if retry else ", giving up",
            error,
        )
        if self._audit is None:
            return
        data: dict[str, Any] = {
            "decisionId": row.decision_id,
            "event": row.event,
            "channel": row.channel,
            "recipient": recipient,
            "attempt": after.attempts,
            "error": error,
            "willRetry": retry,
            "nextAttemptAt": iso_utc(after.next_attempt_at) if retry else None,
        }
        entry = AuditEntry(
            kind="delivery-failed", thread_id=row.thread_id or "", run_id="", actor=None, data=data
        )
        try:
            await self._audit([entry])
        except Exception:
            _log.exception("notify: could not audit the failure of delivery %s", row.id)


def _together(rows: Sequence[Delivery], *, slack: bool) -> list[list[Delivery]]:
    """`rows` as the messages they go in: one for each person (a Slack channel is one
    reader), conversation and event, in the order claimed; each JSON webhook delivery alone
    (a receiver keys on one decision)."""
    groups: dict[tuple[str, ...] | int, list[Delivery]] = {}
    for row in rows:
        key: tuple[str, ...] | int = row.id
        if row.thread_id and (row.channel == "email" or slack):
            key = (row.channel, row.recipient, row.thread_id, row.event, row.notice.link)
        groups.setdefault(key, []).append(row)
    return list(groups.values())


def _asks(row: Delivery) -> bool:
    return bool(row.decision_id) and row.notice.asks_for_decision
