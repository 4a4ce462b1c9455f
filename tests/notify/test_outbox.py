"""The outbox on each database: one row per recipient and event however often (and by however
many workers) it is queued, claims that never overlap, and the retry schedule."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import TypeVar

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.exc import OperationalError

from chat_app.notify import (
    NotifySettings,
    Outbox,
    OutboxError,
    Recipient,
    SmtpServer,
    delivery_key,
    webhook_addressees,
)
from chat_app.trust.store import create_database_engine
from chat_app.trust.tables import deliveries
from tests.live_server import free_port
from tests.notify.notices import ADA, SAM, START, Clock, make_notice

T = TypeVar("T")

BOTH = NotifySettings(
    webhook_url="http://127.0.0.1:9/hook",
    webhook_secret=b"k",
    smtp=SmtpServer(host="127.0.0.1", port=25, implicit_tls=False),
    mail_from="approvals@example.com",
    attempts=4,
    backoff_seconds=0.05,
    gather_seconds=0,  # these look at claims one by one
)


def keys(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.execute(select(deliveries.c.key)).scalars())


def at_once(*calls: Callable[[], T]) -> list[T]:
    """Run the calls in threads released together."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_enqueue_makes_a_row_per_channel_and_recipient_once(engine: Engine) -> None:
    outbox = Outbox(engine, BOTH, clock=Clock())
    notice = make_notice()
    people = [ADA, SAM, Recipient("ADA@example.com ", "Ada again"), Recipient("", "Nobody")]
    assert outbox.enqueue(notice, people, now=START) == 3
    assert outbox.enqueue(notice, people, now=START) == 0
    assert keys(engine) == sorted(
        [
            delivery_key(notice.decision_id, "decision-needed", "webhook",
                         webhook_addressees(["ada@example.com", "sam@example.com"])),
            delivery_key(notice.decision_id, "decision-needed", "email", "ada@example.com"),
            delivery_key(notice.decision_id, "decision-needed", "email", "sam@example.com"),
        ]
    )
    # Another event of the same decision is another notice.
    assert outbox.enqueue(make_notice(event="reminder"), [ADA], now=START) == 2
    assert outbox.pending_count() == 5


def test_a_notice_for_other_people_is_news_to_the_webhook_and_to_them_alone(
    engine: Engine,
) -> None:
    """The decision filed again for other approvers (a policy changed while it waited): its
    "approval needed" goes to the webhook again, naming them, and by email to the new ones;
    the same people again are no news."""
    outbox = Outbox(engine, BOTH, clock=Clock())
    assert outbox.enqueue(make_notice(), [ADA], now=START) == 2
    assert outbox.enqueue(make_notice(), [ADA, SAM], now=START) == 2  # webhook, Sam
    assert outbox.enqueue(make_notice(), [SAM, ADA], now=START) == 0
    webhooks = [row for row in outbox.recent() if row.channel == "webhook"]
    assert len(webhooks) == 2 and {row.recipient for row in webhooks} == {""}


def test_one_decisions_notices_reach_each_receiver_in_the_order_they_were_queued(
    engine: Engine,
) -> None:
    """The receiver was down: "approval needed" waits for its next attempt, and the reminder
    queued since waits behind it (each on its own backoff, the reminder went first); another
    decision's notices, and another receiver's, do not wait."""
    outbox = Outbox(engine, BOTH, clock=Clock())
    outbox.enqueue(make_notice(), [ADA], now=START)
    [webhook, email] = outbox.claim_due("w", now=START)
    for row in (webhook, email):
        assert outbox.mark_failed(row.id, "w", now=START, error="down") is not None
    later = START + timedelta(milliseconds=20)
    outbox.enqueue(make_notice(event="reminder"), [ADA], now=later)
    outbox.enqueue(make_notice(decision_id="e" * 32), [SAM], now=later)
    claimed = outbox.claim_due("w", now=later)
    assert sorted((str(row.decision_id)[:1], row.event, row.channel) for row in claimed) == [
        ("e", "decision-needed", "email"), ("e", "decision-needed", "webhook")
    ]  # fmt: skip
    for row in claimed:
        outbox.mark_sent(row.id, "w", now=later)
    retried = START + timedelta(seconds=1)
    first = outbox.claim_due("w", now=retried)
    assert sorted((row.event, row.channel) for row in first) == [
        ("decision-needed", "email"), ("decision-needed", "webhook")
    ]  # fmt: skip
    for row in first:
        outbox.mark_sent(row.id, "w", now=retried)
    then = outbox.claim_due("w", now=retried)
    assert sorted((row.event, row.channel) for row in then) == [
        ("reminder", "email"), ("reminder", "webhook")
    ]  # fmt: skip


def test_only_the_configured_channels(engine: Engine) -> None:
    notice = make_notice()
    assert Outbox(engine, NotifySettings()).enqueue(notice, [ADA], now=START) == 0
    webhook_only = NotifySettings(webhook_url="http://127.0.0.1:9/hook", webhook_secret=b"k")
    assert Outbox(engine, webhook_only).enqueue(notice, [ADA, SAM], now=START) == 1
    [row] = Outbox(engine, webhook_only).recent()
    assert (row.channel, row.recipient, row.status, row.attempts) == ("webhook", "", "pending", 0)
    assert row.notice == notice and row.created_at == START == row.next_attempt_at


def test_two_workers_enqueueing_the_same_notice_make_one_row_per_key(
    database_url: str, engine: Engine
) -> None:
    # As two processes would: each its own engine and connections.
    other = create_database_engine(database_url)
    try:
        first, second = Outbox(engine, BOTH), Outbox(other, BOTH)
        for n in range(10):
            notice = make_notice(decision_id=f"d{n:031d}")
            added = at_once(
                partial(first.enqueue, notice, [ADA, SAM], now=START),
                partial(second.enqueue, notice, [SAM, ADA], now=START),
            )
            assert sum(added) == 3, added  # each key added by one of them
        assert len(keys(engine)) == 30 == len(set(keys(engine)))
    finally:
        other.dispose()


def test_claims_take_due_unheld_rows_and_never_overlap(engine: Engine) -> None:
    clock = Clock()
    outbox = Outbox(engine, BOTH, clock=clock)
    for n in range(15):
        outbox.enqueue(make_notice(decision_id=f"d{n:031d}"), [ADA], now=START)
    assert outbox.claim_due("w1", now=START - timedelta(seconds=1)) == []  # not due yet
    one, two = at_once(
        lambda: outbox.claim_due("w1", now=START, limit=20),
        lambda: outbox.claim_due("w2", now=START, limit=20),
    )
    assert len(one) + len(two) == 30
    assert not {row.id for row in one} & {row.id for row in two}
    assert outbox.claim_due("w3", now=START + timedelta(seconds=59)) == []  # all held
    # A worker that died: its claims lapse with the lease, and another takes its rows.
    lapsed = outbox.claim_due("w3", now=START + timedelta(seconds=60), limit=50)
    assert len(lapsed) == 30
    assert outbox.mark_sent(one[0].id, "w1", now=START) is None  # no longer w1's
    sent = outbox.mark_sent(one[0].id, "w3", now=START + timedelta(seconds=61))
    assert sent is not None and (sent.status, sent.attempts) == ("sent", 1)
    assert sent.sent_at == START + timedelta(seconds=61)
    assert outbox.mark_sent(one[0].id, "w3", now=START) is None  # settled already


def test_a_batchs_emails_are_claimed_together_once_the_first_is_due(engine: Engine) -> None:
    """A look of the timers queues a batch's notices one decision at a time: each email
    waits `gather_seconds`, and once the first is due the others of its person, conversation
    and event are taken with it, due or not; not another person's, nor one another worker
    holds, nor one waiting out a failure's backoff."""
    settings = replace(BOTH, webhook_url=None, gather_seconds=2)
    outbox = Outbox(engine, settings)
    # Earlier, two of Ada's for the same conversation: one another worker holds, one that
    # failed and waits out its backoff (until 5 s).
    for name in ("d-held", "d-failed"):
        outbox.enqueue(make_notice(decision_id=name), [ADA], now=START - timedelta(seconds=9))
    held, failing = outbox.claim_due("w-other", now=START - timedelta(seconds=7))  # in one
    with engine.begin() as connection:
        connection.execute(
            update(deliveries).where(deliveries.c.id == failing.id)
            .values(claimed_by=None, claimed_until=None, attempts=1,
                    next_attempt_at=START + timedelta(seconds=5))
        )  # fmt: skip
    for n, after in ((1, 0.0), (2, 0.4), (3, 0.8)):
        notice = make_notice(decision_id=f"d-{n}", summary=f"n={n}")
        told = [ADA, SAM] if n == 3 else [ADA]
        outbox.enqueue(notice, told, now=START + timedelta(seconds=after))
    elsewhere = make_notice(decision_id="d-other", thread_id="t-other")
    outbox.enqueue(elsewhere, [ADA], now=START + timedelta(seconds=1))
    assert outbox.claim_due("w1", now=START + timedelta(seconds=1.9)) == []  # gathering
    claimed = outbox.claim_due("w1", now=START + timedelta(seconds=2))
    assert [(row.decision_id, row.recipient) for row in claimed] == [
        ("d-1", ADA.email), ("d-2", ADA.email), ("d-3", ADA.email)
    ]  # fmt: skip
    # Sam's is due at 2.8 s, Ada's other conversation's at 3 s: each then, on its own.
    later = outbox.claim_due("w2", now=START + timedelta(seconds=3))
    assert sorted((row.decision_id, row.recipient) for row in later) == [
        ("d-3", SAM.email), ("d-other", ADA.email)
    ]  # fmt: skip
    assert held.decision_id == "d-held"  # still the other worker's
    [retried] = outbox.claim_due("w2", now=START + timedelta(seconds=5))
    assert retried.decision_id == "d-failed"  # at its own time


def test_failures_back_off_doubling_then_fail(engine: Engine) -> None:
    settings = NotifySettings(
        webhook_url="http://127.0.0.1:9/hook", webhook_secret=b"k", attempts=4, backoff_seconds=2
    )
    outbox = Outbox(engine, settings)
    outbox.enqueue(make_notice(), [], now=START)
    now, waits = START, []
    for attempt in (1, 2, 3):
        [row] = outbox.claim_due("w", now=now)
        failed = outbox.mark_failed(row.id, "w", now=now, error=f"boom {attempt}")
        assert failed is not None
        assert (failed.status, failed.attempts, failed.last_error) == (
            "pending",
            attempt,
            f"boom {attempt}",
        )
        waits.append((failed.next_attempt_at - now).total_seconds())
        assert outbox.claim_due("w", now=failed.next_attempt_at - timedelta(milliseconds=1)) == []
        now = failed.next_attempt_at
    assert waits == [2, 4, 8]
    [row] = outbox.claim_due("w", now=now)
    assert outbox.mark_failed(row.id, "someone else", now=now, error="x") is None
    last = outbox.mark_failed(row.id, "w", now=now, error="boom 4")
    assert last is not None and (last.status, last.attempts) == ("failed", 4)
    assert outbox.claim_due("w", now=now + timedelta(days=1)) == []
    assert outbox.pending_count() == 0


def test_recent_is_newest_first(engine: Engine) -> None:
    outbox = Outbox(engine, BOTH)
    for n in range(3):
        outbox.enqueue(make_notice(decision_id=f"d{n}"), [], now=START + timedelta(minutes=n))
    assert [row.decision_id for row in outbox.recent()] == ["d2", "d1", "d0"]
    assert [row.decision_id for row in outbox.recent(limit=2)] == ["d2", "d1"]


def test_a_database_that_does_not_answer_is_an_outbox_error() -> None:
    # A PostgreSQL server where nothing listens: every method says so in its own error type
    # (the Deliveries page shows the message), with the driver's error kept as the cause.
    engine = create_database_engine(f"postgresql://ops:hunter2@127.0.0.1:{free_port()}/app")
    outbox = Outbox(engine, BOTH, clock=Clock())
    calls: list[Callable[[], object]] = [
        outbox.recent,
        outbox.pending_count,
        partial(outbox.enqueue, make_notice(), [ADA]),
        partial(outbox.claim_due, "w1"),
        partial(outbox.mark_sent, 1, "w1"),
        partial(outbox.mark_failed, 1, "w1", error="x"),
        partial(outbox.mark_skipped, 1, "w1", reason="x"),
    ]
    try:
        for call in calls:
            with pytest.raises(OutboxError) as raised:
                call()
            message = str(raised.value)
            assert message.startswith("The database is not answering: ")
            assert "127.0.0.1" in message and "hunter2" not in message
            assert isinstance(raised.value.__cause__, OperationalError)
    finally:
        engine.dispose()
