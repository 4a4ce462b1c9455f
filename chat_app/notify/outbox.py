"""The outbox: deliveries waiting in the app's database (`chat_app.trust.tables.deliveries`).

Owns `Outbox` and `Delivery`. A notice is queued in the caller's time, inside no run, and
sent later by any worker's `Deliverer`, so a receiver that is slow or down never holds up a
decision, and what was queued survives a restart. Each method is one short transaction
(blocking; async callers use a thread).

Once per recipient and event: a delivery's `key` names its decision, event, channel and
recipient, and is unique, so a notice queued twice, by one worker or by two at once, is one
row. Once at a time: a worker sends only rows it claimed by a conditional UPDATE under a
lease; a worker that dies mid-send leaves its claim to lapse, and the row is sent again by
another. That is the one way a notice can arrive twice: sent, then the worker died before
`mark_sent`.

A database that does not answer is an `OutboxError` (its message says so, for a person), so
callers need not know the outbox is SQLAlchemy underneath.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Engine, Row, and_, exists, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from chat_app.trust.store import database_trouble, write_transaction
from chat_app.trust.tables import deliveries

from .notice import Event, Notice, Recipient
from .settings import Channel, NotifySettings

__all__ = [
    "Delivery",
    "DeliveryStatus",
    "Outbox",
    "OutboxError",
    "delivery_key",
    "webhook_addressees",
]

_log = logging.getLogger(__name__)

#: `skipped`: not sent, and never will be; `Delivery.reason` says why.
DeliveryStatus = Literal["pending", "sent", "failed", "skipped"]

#: The longest address the table holds (RFC 5321's limit).
_EMAIL_LIMIT = 320
#: A failure's message as stored; the rest is noise for the admin page.
_ERROR_LIMIT = 1000

_INSERTS: dict[str, Callable[..., Any]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


class OutboxError(Exception):
    """The outbox's database did not answer (or refused): the message says so, for a person
    to read; the SQLAlchemy error is its `__cause__`, for the logs."""


@contextmanager
def _answering() -> Iterator[None]:
    try:
        yield
    except SQLAlchemyError as error:
        # For the Deliveries page (admins) and the logs: the driver's own words.
        raise OutboxError(f"The database is not answering: {database_trouble(error)}") from error


def _utc_now() -> datetime:
    return datetime.now(UTC)


def delivery_key(decision_id: str, event: Event, channel: Channel, recipient: str) -> str:
    """What makes a delivery one of a kind: `decision:event:channel:recipient` (for the
    webhook, whom the notice addresses: `webhook_addressees`)."""
    return f"{decision_id}:{event}:{channel}:{recipient}"


def webhook_addressees(addresses: Sequence[str]) -> str:
    """The webhook's part of a delivery key: whom its notice addresses ("" for nobody, else
    a digest of their addresses). A decision filed again for other people (a policy changed
    while it waited) is news to the webhook's channel too; the same people again are not."""
    if not addresses:
        return ""
    joined = "\n".join(sorted(address.lower() for address in addresses))
    return "to-" + hashlib.sha256(joined.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notice on one channel to one recipient ("" for the webhook), as stored."""

    id: int
    key: str
    decision_id: str | None
    thread_id: str | None
    event: str
    channel: str
    recipient: str
    notice: Notice
    status: DeliveryStatus
    #: Attempts made so far, the successful one included.
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None
    #: Why it was not sent (`skipped`); None otherwise.
    reason: str | None = None
    #: Where a webhook's was last tried (its address, no secret); None for an email.
    sent_to: str | None = None

    @classmethod
    def from_row(cls, row: Row[Any]) -> Delivery:
        return cls(
            id=row.id,
            key=row.key,
            decision_id=row.decision_id,
            thread_id=row.thread_id,
            event=row.event,
            channel=row.channel,
            recipient=row.recipient,
            notice=Notice.from_json(row.notice),
            status=row.status,
            attempts=row.attempts,
            next_attempt_at=row.next_attempt_at,
            last_error=row.last_error,
            created_at=row.created_at,
            sent_at=row.sent_at,
            reason=row.reason,
            sent_to=row.sent_to,
        )

    @property
    def to(self) -> Recipient:
        """The email recipient, named as the notice names them (or by address alone)."""
        for person in self.notice.recipients:
            if person.email.strip().lower() == self.recipient:
                return Recipient(email=self.recipient, name=person.name)
        return Recipient(email=self.recipient, name="")


def _address(recipient: Recipient) -> str | None:
    """The address a delivery is keyed and sent by, or None when there is none to send to.
    Lower case: `Ada@Example.com` and `ada@example.com` are one person's inbox, told once."""
    address = recipient.email.strip().lower()
    local, at, domain = address.rpartition("@")
    if not (at and local and domain) or len(address) > _EMAIL_LIMIT:
        return None
    if any(c.isspace() or c in '<>,;"' for c in address):
        return None
    return address


#: At most this many rows are taken with a due one into its message (a batch's decisions):
#: a claim's `limit` is the room its worker has for sends, not a message's size.
GATHERED_AT_MOST = 50


class Outbox:
    """Deliveries over one engine. `clock` gives the time when a method is not told it
    (tests pass a fake one and move it). Every method raises `OutboxError` when the database
    does not answer."""

    def __init__(
        self,
        engine: Engine,
        settings: NotifySettings,
        *,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock

    def enqueue(
        self, notice: Notice, recipients: Sequence[Recipient], *, now: datetime | None = None
    ) -> int:
        """Queue `notice` on every configured channel: the webhook once, email once per
        recipient with an address. A delivery queued before (same decision, event, channel,
        recipient) is left as it is. Returns how many rows this call added."""
        now = now if now is not None else self.clock()
        addresses = list(dict.fromkeys(a for a in map(_address, recipients) if a))
        # (channel, recipient, the key's part for it)
        targets: list[tuple[Channel, str, str]] = []
        if "webhook" in self.settings.channels:
            targets.append(("webhook", "", webhook_addressees(addresses)))
        if "email" in self.settings.channels:
            targets += [("email", address, address) for address in addresses]
        if not targets:
            return 0
        stored = notice.to_json()
        gathering = now + timedelta(seconds=self.settings.gather_seconds)
        rows = [
            {
                "key": delivery_key(notice.decision_id, notice.event, channel, keyed),
                "decision_id": notice.decision_id,
                "thread_id": notice.thread_id,
                "event": notice.event,
                "channel": channel,
                "recipient": recipient,
                "notice": stored,
                "status": "pending",
                "attempts": 0,
                "next_attempt_at": (
                    gathering if channel in self.settings.gathered and notice.thread_id else now
                ),
                "claimed_by": None,
                "claimed_until": None,
                "last_error": None,
                "created_at": now,
                "sent_at": None,
                "reason": None,
            }
            for channel, recipient, keyed in targets
        ]
        with _answering(), write_transaction(self.engine) as connection:
            insert = _INSERTS.get(connection.dialect.name)
            if insert is None:  # the app's database is one of these (`trust.store`)
                raise RuntimeError(
                    f"the outbox needs SQLite or PostgreSQL, not {connection.dialect.name}"
                )
            statement = (
                insert(deliveries)
                .values(rows)
                .on_conflict_do_nothing(index_elements=[deliveries.c.key])
                .returning(deliveries.c.id)
            )
            return len(connection.execute(statement).all())

    def claim_due(
        self,
        worker: str,
        *,
        now: datetime | None = None,
        limit: int = 20,
        lease_seconds: float = 60,
    ) -> list[Delivery]:
        """Take up to `limit` pending deliveries that are due and that nobody holds (or
        whose holder's lease lapsed), for `worker` until `now + lease_seconds`. Of two
        workers claiming at once, each row goes to one.

        With a due row of a channel that gathers (`NotifySettings.gathered`), the pending
        rows of the same channel, recipient, conversation and event are taken too, due or
        still gathering (`_gathered_with`): they go in its message (`Deliverer`), not one by
        one as each comes due."""
        now = now if now is not None else self.clock()
        # One decision's notices reach each receiver in the order they were queued: one
        # waits while an earlier one to the same receiver is still to go (after an outage
        # a reminder went before its "approval needed", each on its own backoff). Read
        # among the pending rows, which the status index finds.
        earlier = deliveries.alias("earlier")
        behind = exists().where(
            earlier.c.status == "pending",
            earlier.c.decision_id == deliveries.c.decision_id,
            earlier.c.channel == deliveries.c.channel,
            earlier.c.recipient == deliveries.c.recipient,
            earlier.c.id < deliveries.c.id,
        )
        claimable = and_(
            deliveries.c.status == "pending",
            deliveries.c.next_attempt_at <= now,
            or_(deliveries.c.claimed_until.is_(None), deliveries.c.claimed_until <= now),
            ~behind,
        )
        # SKIP LOCKED: on PostgreSQL a second worker takes the next rows rather than
        # queueing behind the first's; SQLite's write lock serialises claims anyway.
        due = (
            select(deliveries.c.id)
            .where(claimable)
            .order_by(deliveries.c.next_attempt_at, deliveries.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        with _answering(), write_transaction(self.engine) as connection:
            ids = list(connection.execute(due).scalars())
            if not ids:
                return []
            ids += self._gathered_with(connection, ids, behind, now)
            # The condition is checked again row by row: a row another worker claimed
            # since the SELECT is not taken twice (a row gathered in need not be due).
            claimed = connection.execute(
                update(deliveries)
                .where(
                    deliveries.c.id.in_(ids),
                    deliveries.c.status == "pending",
                    or_(deliveries.c.claimed_until.is_(None), deliveries.c.claimed_until <= now),
                    ~behind,
                )
                .values(claimed_by=worker, claimed_until=now + timedelta(seconds=lease_seconds))
                .returning(*deliveries.c)
            ).all()
        found = []
        for row in claimed:
            try:
                found.append(Delivery.from_row(row))
            except ValueError as error:
                # Most likely written by a newer version of the app: left held until the
                # lease lapses, so a worker that reads it (and no retry of ours) takes it.
                _log.warning("delivery %s: unreadable notice, skipped: %s", row.id, error)
        return sorted(found, key=lambda delivery: (delivery.next_attempt_at, delivery.id))

    def _gathered_with(
        self, connection: Any, ids: list[int], behind: Any, now: datetime
    ) -> list[int]:
        """The pending, unheld rows that go in one message with one of `ids` (same gathering
        channel, recipient, conversation and event): still gathering, or due; not one waiting
        out a failure's backoff, which keeps its own time. At most `GATHERED_AT_MOST`."""
        gathered = list(self.settings.gathered)
        heads = connection.execute(
            select(deliveries.c.channel, deliveries.c.recipient, deliveries.c.thread_id,
                   deliveries.c.event)
            .where(deliveries.c.id.in_(ids), deliveries.c.channel.in_(gathered),
                   deliveries.c.thread_id.is_not(None))
            .distinct()
        ).all()  # fmt: skip
        if not heads:
            return []
        same = or_(*(
            and_(deliveries.c.channel == channel, deliveries.c.recipient == recipient,
                 deliveries.c.thread_id == thread_id, deliveries.c.event == event)
            for channel, recipient, thread_id, event in heads
        ))  # fmt: skip
        more = (
            select(deliveries.c.id)
            .where(
                same,
                deliveries.c.id.not_in(ids),
                deliveries.c.status == "pending",
                or_(deliveries.c.attempts == 0, deliveries.c.next_attempt_at <= now),
                or_(deliveries.c.claimed_until.is_(None), deliveries.c.claimed_until <= now),
                ~behind,
            )
            .order_by(deliveries.c.id)
            .limit(GATHERED_AT_MOST)
            .with_for_update(skip_locked=True)
        )
        return list(connection.execute(more).scalars())

    def mark_sent(
        self, delivery_id: int, worker: str, *, now: datetime | None = None,
        sent_to: str | None = None,
    ) -> Delivery | None:  # fmt: skip
        """Record a successful attempt by `worker` (to `sent_to`, a webhook's address). None
        when the row is no longer its to record (its lease lapsed and another worker claimed
        it, or it is settled)."""
        now = now if now is not None else self.clock()
        return self._settle(
            delivery_id, worker,
            status="sent", attempts=deliveries.c.attempts + 1, sent_at=now, last_error=None,
            sent_to=sent_to,
        )  # fmt: skip

    def mark_failed(
        self, delivery_id: int, worker: str, *, now: datetime | None = None, error: str,
        sent_to: str | None = None,
    ) -> Delivery | None:  # fmt: skip
        """Record a failed attempt by `worker` (to `sent_to`): tried again after the backoff,
        or `failed` when that was the last attempt. None when the row is no longer its to
        record."""
        now = now if now is not None else self.clock()
        with _answering(), write_transaction(self.engine) as connection:
            attempts = connection.execute(
                select(deliveries.c.attempts).where(_held_by(delivery_id, worker)).with_for_update()
            ).scalar_one_or_none()
            if attempts is None:
                return None
            attempts += 1
            last = attempts >= self.settings.attempts
            retry_at = now + timedelta(seconds=self.settings.backoff(attempts))
            row = connection.execute(
                update(deliveries)
                .where(deliveries.c.id == delivery_id)
                .values(
                    status="failed" if last else "pending",
                    attempts=attempts,
                    next_attempt_at=now if last else retry_at,
                    last_error=error[:_ERROR_LIMIT],
                    claimed_by=None,
                    claimed_until=None,
                    sent_to=sent_to,
                )
                .returning(*deliveries.c)
            ).one()
        return Delivery.from_row(row)

    def mark_skipped(
        self, delivery_id: int, worker: str, *, now: datetime | None = None, reason: str
    ) -> Delivery | None:
        """Settle a delivery `worker` holds without sending it: `skipped`, with `reason` (for
        the admin page), never tried again. None when the row is no longer its to record."""
        now = now if now is not None else self.clock()
        return self._settle(
            delivery_id, worker,
            status="skipped", reason=reason[:_ERROR_LIMIT], next_attempt_at=now,
        )  # fmt: skip

    def release(self, delivery_ids: Sequence[int], worker: str) -> int:
        """Give back deliveries `worker` holds, unsent and with no attempt counted (a worker
        stopping mid-send): due again at once for any worker, rather than when the lease
        lapses. Returns how many it held."""
        if not delivery_ids:
            return 0
        with _answering(), write_transaction(self.engine) as connection:
            released = connection.execute(
                update(deliveries)
                .where(
                    deliveries.c.id.in_(list(delivery_ids)),
                    deliveries.c.status == "pending",
                    deliveries.c.claimed_by == worker,
                )
                .values(claimed_by=None, claimed_until=None)
            )
        return int(released.rowcount)

    def _settle(self, delivery_id: int, worker: str, **values: Any) -> Delivery | None:
        """Write `values` to a delivery `worker` holds, and let it go; None when the row is
        no longer its to record."""
        with _answering(), write_transaction(self.engine) as connection:
            row = connection.execute(
                update(deliveries)
                .where(_held_by(delivery_id, worker))
                .values(**values, claimed_by=None, claimed_until=None)
                .returning(*deliveries.c)
            ).first()
        return Delivery.from_row(row) if row is not None else None

    def recent(self, limit: int = 100) -> list[Delivery]:
        """The newest deliveries first, whatever their status."""
        with _answering(), self.engine.connect() as connection:
            rows = connection.execute(
                select(deliveries)
                .order_by(deliveries.c.created_at.desc(), deliveries.c.id.desc())
                .limit(limit)
            ).all()
        return [Delivery.from_row(row) for row in rows]

    def pending_count(self) -> int:
        """Deliveries not yet sent that will still be tried."""
        with _answering(), self.engine.connect() as connection:
            count = connection.execute(
                select(func.count()).select_from(deliveries).where(deliveries.c.status == "pending")
            ).scalar_one()
        return int(count)


def _held_by(delivery_id: int, worker: str) -> Any:
    return and_(
        deliveries.c.id == delivery_id,
        deliveries.c.status == "pending",
        deliveries.c.claimed_by == worker,
    )
