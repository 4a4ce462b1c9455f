"""The deliverer against real receivers (an HTTP server, aiosmtpd) on each database: sent
once, retried with backoff across failures and restarts, never raising, never twice at once.
The outbox's clock is moved by hand; nothing sleeps for a backoff."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from chat_app.notify import Deliverer, Delivery, NotifySettings, Outbox, Recipient, email, verify
from chat_app.notify import deliverer as deliverer_module
from chat_app.trust.ledger import AuditEntry
from chat_app.trust.store import open_database
from chat_app.ui.deliveries_state import delivery_row
from tests.live_server import free_port
from tests.notify.notices import ADA, SAM, Clock, make_notice
from tests.notify.servers import SmtpReceiver, closed_url, smtp_server, webhook_receiver

SECRET = b"notify-tests-secret"
#: Sent as soon as queued (`gather_seconds=0`): these tests move the outbox's clock by hand.
FAST = NotifySettings(
    webhook_secret=SECRET, attempts=5, backoff_seconds=0.05, timeout_seconds=5, gather_seconds=0
)


class Audit:
    """Collects what the deliverer audits."""

    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    async def __call__(self, entries: Sequence[AuditEntry]) -> None:
        self.entries.extend(entries)


def webhook(url: str, **changes: object) -> NotifySettings:
    return replace(FAST, webhook_url=url, **changes)  # type: ignore[arg-type]


def up_and_down(smtp: SmtpReceiver) -> tuple[NotifySettings, NotifySettings]:
    """Settings sending to `smtp`, and the same with its server down (a port nobody has)."""
    up = replace(FAST, smtp=smtp.server, mail_from="approvals@example.com")
    return up, replace(up, smtp=replace(smtp.server, port=free_port()))


async def until(condition: Callable[[], bool], *, rounds: int = 500) -> None:
    """Yield to the loop until `condition` holds (a bounded number of short waits)."""
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def test_a_webhook_notice_is_posted_once_signed(engine: Engine) -> None:
    clock = Clock()
    sent: list[Delivery] = []
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=clock)
        deliverer = Deliverer(outbox, settings, worker="w1", on_sent=sent.append)
        try:
            assert outbox.enqueue(make_notice(), [ADA, SAM]) == 1
            assert await deliverer.deliver_due() == 1
            assert await deliverer.deliver_due() == 0
        finally:
            await deliverer.aclose()
    [request] = receiver.received
    assert request.status == 200 and request.path == "/hook"
    timestamp = request.headers["X-Chat-App-Timestamp"]
    assert timestamp == str(int(clock.now.timestamp()))
    signature = request.headers["X-Chat-App-Signature"]
    assert verify(SECRET, timestamp, request.body, signature, now=clock.now.timestamp())
    body = request.json()
    assert body["event"] == "decision-needed" and body["tool"] == "transfer"
    assert request.headers["User-Agent"] == "chat_app-notify"
    assert body["link"] == "http://chat.example.com/c/t-transfer"
    assert body["requester"] == {"email": "rita@example.com", "name": "Rita"}
    assert [r["email"] for r in body["recipients"]] == ["ada@example.com", "sam@example.com"]
    [row] = outbox.recent()
    assert (row.status, row.attempts, row.sent_at) == ("sent", 1, clock.now)
    assert [delivery.id for delivery in sent] == [row.id]


async def test_slack_gets_text_and_blocks_with_the_link(engine: Engine) -> None:
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url, webhook_format="slack", webhook_secret=None)
        outbox = Outbox(engine, settings, clock=Clock())
        deliverer = Deliverer(outbox, settings, worker="w1")
        try:
            outbox.enqueue(make_notice(event="reminder"), [])
            assert await deliverer.deliver_due() == 1
        finally:
            await deliverer.aclose()
    [request] = receiver.accepted
    body = request.json()
    assert body["text"].startswith("Reminder: transfer")
    assert "http://chat.example.com/c/t-transfer" in body["text"]
    urls = [e["url"] for block in body["blocks"] for e in block.get("elements", [])]
    assert urls == ["http://chat.example.com/c/t-transfer"]


async def test_email_reaches_each_recipient_with_text_and_html(engine: Engine) -> None:
    with smtp_server() as smtp:
        settings = replace(FAST, smtp=smtp.server, mail_from="Approvals <approvals@example.com>")
        assert settings.channels == ("email",)
        outbox = Outbox(engine, settings, clock=Clock())
        deliverer = Deliverer(outbox, settings, worker="w1")
        assert outbox.enqueue(make_notice(), [ADA, SAM]) == 2
        assert await deliverer.deliver_due() == 2
        assert await deliverer.deliver_due() == 0
    assert sorted(mail.rcpt_tos for mail in smtp.messages) == [
        ("ada@example.com",),
        ("sam@example.com",),
    ]
    for mail in smtp.messages:
        assert mail.mail_from == "approvals@example.com"
        assert mail.message["Subject"].startswith("Approval needed: transfer")
        for kind in ("text/plain", "text/html"):
            assert "http://chat.example.com/c/t-transfer" in mail.part(kind)
    ada = next(mail for mail in smtp.messages if mail.rcpt_tos == ("ada@example.com",))
    assert "Hello Ada Lovelace" in ada.part("text/plain")
    assert {row.status for row in outbox.recent()} == {"sent"}


async def test_a_password_is_never_sent_without_tls(engine: Engine) -> None:
    # aiosmtpd here offers no STARTTLS: with credentials the deliverer refuses to log in.
    with smtp_server() as smtp:
        server = replace(smtp.server, username="ops", password="hunter2")
        settings = replace(FAST, smtp=server, mail_from="approvals@example.com")
        outbox = Outbox(engine, settings, clock=Clock())
        audit = Audit()
        deliverer = Deliverer(outbox, settings, worker="w1", audit=audit)
        outbox.enqueue(make_notice(), [ADA])
        assert await deliverer.deliver_due() == 0
    assert smtp.messages == []
    [entry] = audit.entries
    assert "STARTTLS" in entry.data["error"] and "hunter2" not in entry.data["error"]


async def test_three_refusals_then_success(engine: Engine) -> None:
    clock = Clock()
    audit = Audit()
    with webhook_receiver(fail_first=3) as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=clock)
        deliverer = Deliverer(outbox, settings, worker="w1", audit=audit)
        try:
            outbox.enqueue(make_notice(), [])
            results = []
            for _ in range(4):
                results.append(await deliverer.deliver_due())
                assert await deliverer.deliver_due() == 0  # not due again until the backoff
                clock.advance(1)
        finally:
            await deliverer.aclose()
    assert results == [0, 0, 0, 1]
    assert [request.status for request in receiver.received] == [500, 500, 500, 200]
    assert len(receiver.accepted) == 1
    [row] = outbox.recent()
    assert (row.status, row.attempts) == ("sent", 4)
    assert [entry.kind for entry in audit.entries] == ["delivery-failed"] * 3
    first = audit.entries[0]
    assert (first.thread_id, first.run_id, first.actor) == ("t-transfer", "", None)
    assert first.data["decisionId"] == make_notice().decision_id
    # A webhook's recipient is its address up to the path (a Slack URL's path is its key).
    host = receiver.url.rsplit("/", 1)[0]
    assert (first.data["event"], first.data["channel"], first.data["recipient"]) == (
        "decision-needed",
        "webhook",
        f"{host}/…",
    )
    assert [entry.data["attempt"] for entry in audit.entries] == [1, 2, 3]
    assert all(entry.data["willRetry"] for entry in audit.entries)
    assert "500" in first.data["error"] and "receiver says no" in first.data["error"]
    assert first.data["nextAttemptAt"] == "2030-01-01T09:00:00.050000Z"


async def test_a_restart_between_attempts_still_delivers_once(database_url: str) -> None:
    clock = Clock()
    with webhook_receiver(fail_first=1) as receiver:
        settings = webhook(receiver.url)
        engine = open_database(database_url)
        outbox = Outbox(engine, settings, clock=clock)
        deliverer = Deliverer(outbox, settings, worker="before")
        outbox.enqueue(make_notice(), [])
        assert await deliverer.deliver_due() == 0
        await deliverer.aclose()
        del outbox, deliverer
        engine.dispose()  # the worker is gone

        clock.advance(1)
        engine = open_database(database_url)
        try:
            outbox = Outbox(engine, settings, clock=clock)
            # The new worker queues the same notice again (as the desk might on start).
            assert outbox.enqueue(make_notice(), []) == 0
            deliverer = Deliverer(outbox, settings, worker="after")
            assert await deliverer.deliver_due() == 1
            assert await deliverer.deliver_due() == 0
            await deliverer.aclose()
            [row] = outbox.recent()
        finally:
            engine.dispose()
    assert [request.status for request in receiver.received] == [500, 200]
    assert (row.status, row.attempts) == ("sent", 2)
    # Both attempts name the one delivery, so a receiver can drop a repeat: in the signed
    # body, and in a header.
    assert [r.json()["deliveryId"] for r in receiver.received] == [row.key] * 2
    assert [r.headers["X-Chat-App-Delivery"] for r in receiver.received] == [row.key] * 2
    assert row.key.startswith(make_notice().decision_id)  # random per decision: unique anywhere


async def test_a_delivery_says_where_it_went_after_the_webhook_moved(engine: Engine) -> None:
    """Sent to one receiver, then the app restarted with another: the Deliveries page names
    the first for what went there, and the one set now for what has not gone yet."""
    clock = Clock()
    with webhook_receiver() as first, webhook_receiver() as second:
        before, after = webhook(first.url), webhook(second.url)
        outbox = Outbox(engine, before, clock=clock)
        deliverer = Deliverer(outbox, before, worker="w1")
        try:
            outbox.enqueue(make_notice(), [ADA])
            assert await deliverer.deliver_due() == 1
        finally:
            await deliverer.aclose()
        outbox.enqueue(make_notice(decision_id="d-later", thread_id="t-later"), [ADA])
        sent, waiting = sorted(Outbox(engine, after, clock=clock).recent(), key=lambda r: r.id)
    assert sent.sent_to == before.webhook_shown and waiting.sent_to is None
    assert delivery_row(sent, after).to_whom == f"webhook at {urlsplit(first.url).netloc}"
    assert delivery_row(waiting, after).to_whom == f"webhook at {urlsplit(second.url).netloc}"
    assert first.received and not second.received


async def test_a_receiver_that_is_down_is_retried_then_given_up(engine: Engine) -> None:
    clock = Clock()
    audit = Audit()
    settings = webhook(closed_url())
    outbox = Outbox(engine, settings, clock=clock)
    deliverer = Deliverer(outbox, settings, worker="w1", audit=audit)
    try:
        outbox.enqueue(make_notice(), [])
        assert await deliverer.deliver_due() == 0  # returns normally
        [row] = outbox.recent()
        assert (row.status, row.attempts) == ("pending", 1)
        assert row.next_attempt_at > clock.now
        assert "could not be reached" in (row.last_error or "")
        for _ in range(settings.attempts - 1):
            clock.advance(MAX_WAIT)
            assert await deliverer.deliver_due() == 0
    finally:
        await deliverer.aclose()
    [row] = outbox.recent()
    assert (row.status, row.attempts) == ("failed", settings.attempts)
    assert [entry.data["willRetry"] for entry in audit.entries] == [True] * 4 + [False]
    assert audit.entries[-1].data["nextAttemptAt"] is None
    clock.advance(MAX_WAIT)
    assert await deliverer.deliver_due() == 0 and len(audit.entries) == 5
    assert outbox.pending_count() == 0


MAX_WAIT = 1000.0


async def test_two_deliverers_at_once_send_it_once(database_url: str, engine: Engine) -> None:
    other = open_database(database_url)
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        clock = Clock()
        one = Deliverer(Outbox(engine, settings, clock=clock), settings, worker="w1")
        two = Deliverer(Outbox(other, settings, clock=clock), settings, worker="w2")
        try:
            for n in range(5):
                one.outbox.enqueue(make_notice(decision_id=f"d{n}"), [])
            sent = await asyncio.gather(one.deliver_due(), two.deliver_due())
        finally:
            await one.aclose()
            await two.aclose()
            other.dispose()
    assert sum(sent) == 5
    assert sorted(request.json()["decisionId"] for request in receiver.received) == [
        f"d{n}" for n in range(5)
    ]


async def test_run_delivers_when_woken(engine: Engine) -> None:
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=Clock())
        wake = asyncio.Event()
        # An hour's poll: only the wake can make it deliver within the test.
        task = asyncio.create_task(
            Deliverer(outbox, settings, worker="w1").run(wake, poll_seconds=3600)
        )
        try:
            await asyncio.sleep(0)  # its first round finds nothing
            outbox.enqueue(make_notice(), [])
            wake.set()
            await until(lambda: len(receiver.accepted) == 1)
            assert not task.done()
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert len(receiver.received) == 1


async def test_wake_starts_a_round_from_any_thread(engine: Engine) -> None:
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=Clock())
        deliverer = Deliverer(outbox, settings, worker="w1")
        task = asyncio.create_task(deliverer.run(poll_seconds=3600))
        try:
            await asyncio.sleep(0)
            outbox.enqueue(make_notice(decision_id="d-here"), [])
            deliverer.wake()  # from the loop, as the desk's timers call it
            await until(lambda: len(receiver.accepted) == 1)
            outbox.enqueue(make_notice(decision_id="d-there"), [])
            await asyncio.to_thread(deliverer.wake)  # from a worker thread
            await until(lambda: len(receiver.accepted) == 2)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert [request.json()["decisionId"] for request in receiver.received] == ["d-here", "d-there"]


async def test_run_goes_on_while_the_receiver_is_down(engine: Engine) -> None:
    clock = Clock()
    settings = webhook(closed_url())
    outbox = Outbox(engine, settings, clock=clock)
    task = asyncio.create_task(Deliverer(outbox, settings, worker="w1").run(poll_seconds=0.01))
    try:
        outbox.enqueue(make_notice(), [])
        for attempt in (1, 2, 3):
            await until(lambda: outbox.recent()[0].attempts == attempt)  # noqa: B023
            clock.advance(MAX_WAIT)
        assert not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    [row] = outbox.recent()
    assert row.status == "pending" and row.attempts >= 3


class Settled:
    """The desk's answer to "which of these decisions are no longer pending?", set by the
    test; records what it was asked."""

    def __init__(self) -> None:
        self.ended: dict[str, str] = {}
        self.asked: list[set[str]] = []

    def __call__(self, decision_ids: Collection[str]) -> dict[str, str]:
        self.asked.append(set(decision_ids))
        return {id_: how for id_, how in self.ended.items() if id_ in decision_ids}


async def test_a_notice_asking_for_a_decision_settled_while_smtp_was_down_is_not_sent(
    engine: Engine,
) -> None:
    clock = Clock()
    settled = Settled()
    with smtp_server() as smtp:
        up, down = up_and_down(smtp)
        outbox = Outbox(engine, up, clock=clock)
        outbox.enqueue(make_notice(decision_id="d-approved"), [ADA])
        outbox.enqueue(make_notice(decision_id="d-open", event="reminder"), [SAM])
        failing = Deliverer(outbox, down, worker="w1", settled=settled)
        assert await failing.deliver_due() == 0  # refused: both wait for their retry
        assert {row.status for row in outbox.recent()} == {"pending"}

        settled.ended["d-approved"] = "approved"  # decided meanwhile
        clock.advance(60)
        deliverer = Deliverer(outbox, up, worker="w1", settled=settled)
        assert await deliverer.deliver_due() == 1
        clock.advance(3600)
        assert await deliverer.deliver_due() == 0  # a skipped delivery is never tried again
    assert [mail.rcpt_tos for mail in smtp.messages] == [("sam@example.com",)]
    rows = {row.decision_id: row for row in outbox.recent()}
    skipped, sent = rows["d-approved"], rows["d-open"]
    assert (skipped.status, skipped.attempts, skipped.sent_at) == ("skipped", 1, None)
    assert skipped.reason == "not sent: the decision was approved before it went out"
    assert (sent.status, sent.reason) == ("sent", None)
    assert settled.asked[-1] == {"d-approved", "d-open"}


async def test_notices_are_sent_when_the_decisions_cannot_be_read(engine: Engine) -> None:
    def unreadable(decision_ids: Collection[str]) -> dict[str, str]:
        raise OperationalError("SELECT", {}, Exception("the database is away"))

    with smtp_server() as smtp:
        settings = replace(FAST, smtp=smtp.server, mail_from="approvals@example.com")
        outbox = Outbox(engine, settings, clock=Clock())
        outbox.enqueue(make_notice(), [ADA])
        deliverer = Deliverer(outbox, settings, worker="w1", settled=unreadable)
        assert await deliverer.deliver_due() == 1  # a stale notice misleads less than none
    assert [mail.rcpt_tos for mail in smtp.messages] == [("ada@example.com",)]


async def test_a_hanging_receiver_holds_up_no_later_notice(engine: Engine) -> None:
    """A webhook that never answers delays only its own notice: an email queued while it
    hangs goes out at once, well inside the hanging send's timeout."""
    with webhook_receiver() as receiver, smtp_server() as smtp:
        settings = replace(
            webhook(receiver.url), smtp=smtp.server, mail_from="approvals@example.com",
            timeout_seconds=60,
        )  # fmt: skip
        outbox = Outbox(engine, settings, clock=Clock())
        deliverer = Deliverer(outbox, settings, worker="w1")
        receiver.hold()
        task = asyncio.create_task(deliverer.run(poll_seconds=3600))
        try:
            outbox.enqueue(make_notice(decision_id="d-first"), [])  # the webhook alone
            deliverer.wake()
            await until(lambda: len(receiver.received) == 1)  # taken, not answered
            outbox.enqueue(make_notice(decision_id="d-later", event="decided"), [ADA])
            deliverer.wake()
            await until(lambda: len(smtp.messages) == 1)
            assert [mail.rcpt_tos for mail in smtp.messages] == [("ada@example.com",)]
            first = next(row for row in outbox.recent() if row.decision_id == "d-first")
            assert first.status == "pending" and first.attempts == 0  # still hanging
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


async def test_a_stopping_worker_gives_back_what_it_was_sending(engine: Engine) -> None:
    """Stopped mid-send (a restart), the worker lets go of its claim at once, no attempt
    counted: the next worker sends it without waiting for the lease to lapse."""
    clock = Clock()
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=clock)
        receiver.hold()
        task = asyncio.create_task(Deliverer(outbox, settings, worker="w1").run(poll_seconds=3600))
        outbox.enqueue(make_notice(), [])
        try:
            await until(lambda: len(receiver.received) == 1)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        [row] = outbox.recent()
        assert (row.status, row.attempts) == ("pending", 0)
        receiver.let_go()
        after = Deliverer(outbox, settings, worker="w2")
        try:
            assert await after.deliver_due() == 1  # the clock has not moved: no lease lapsed
        finally:
            await after.aclose()
    [row] = outbox.recent()
    assert row.status == "sent"


@pytest.mark.parametrize("batch", [1, 3], ids=["alone", "a-batch-in-one-message"])
async def test_a_send_its_receiver_took_is_not_given_back_when_the_worker_stops(
    engine: Engine, batch: int
) -> None:
    """Stopped while recording a send its receiver took, the worker does not give the rows
    back: the record, which its thread finishes anyway, settles them all as sent (a batch
    in one Slack message too), and no other worker sends them again."""
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        if batch > 1:
            settings = replace(settings, webhook_format="slack", webhook_secret=None)
        outbox = Outbox(engine, settings, clock=Clock())
        recording, recorded = threading.Event(), threading.Event()
        mark_sent = outbox.mark_sent

        def slow_mark_sent(*args: Any, **kwargs: Any) -> Delivery | None:
            recording.set()
            recorded.wait(timeout=30)
            return mark_sent(*args, **kwargs)

        outbox.mark_sent = slow_mark_sent  # type: ignore[method-assign]
        for n in range(batch):
            outbox.enqueue(make_notice(decision_id=f"d-{n}"), [])
        task = asyncio.create_task(Deliverer(outbox, settings, worker="w1").run(poll_seconds=3600))
        try:
            await until(recording.is_set)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        recorded.set()
        await until(lambda: {row.status for row in outbox.recent()} == {"sent"})
        assert len(outbox.recent()) == batch
        after = Deliverer(outbox, settings, worker="w2")
        try:
            assert await after.deliver_due() == 0
        finally:
            await after.aclose()
    assert len(receiver.received) == 1


async def test_run_keeps_at_most_max_sending_sends_under_way(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deliverer_module, "MAX_SENDING", 2)
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url, timeout_seconds=60)
        outbox = Outbox(engine, settings, clock=Clock())
        deliverer = Deliverer(outbox, settings, worker="w1")
        receiver.hold()
        task = asyncio.create_task(deliverer.run(poll_seconds=0.01))
        try:
            for n in range(5):
                outbox.enqueue(make_notice(decision_id=f"d{n}"), [])
            await until(lambda: len(receiver.received) == 2)
            for _ in range(20):  # rounds keep coming; none starts a third send
                deliverer.wake()
                await asyncio.sleep(0.01)
            assert len(receiver.received) == 2
            receiver.let_go()
            await until(lambda: len(receiver.accepted) == 5)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert sorted(r.json()["decisionId"] for r in receiver.accepted) == [f"d{n}" for n in range(5)]


async def test_a_database_away_for_many_rounds_is_one_log_line_and_one_when_back(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """The outbox's table cannot be read for five rounds (a real failure of the real
    database: it is renamed away, then back): one WARNING says so, not one a round (an
    operator saw 38 lines in 40 s), and one says it works again; then the notice goes."""
    clock = Clock()
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url)
        outbox = Outbox(engine, settings, clock=clock)
        deliverer = Deliverer(outbox, settings, worker="w1")
        try:
            assert outbox.enqueue(make_notice(), [ADA]) == 1
            with engine.begin() as connection:
                connection.exec_driver_sql("ALTER TABLE deliveries RENAME TO deliveries_away")
            with caplog.at_level("WARNING", logger=deliverer_module.__name__):
                for _ in range(5):
                    assert await deliverer.deliver_due() == 0
                with engine.begin() as connection:
                    connection.exec_driver_sql(
                        "ALTER TABLE deliveries_away RENAME TO deliveries"
                    )
                assert await deliverer.deliver_due() == 1
        finally:
            await deliverer.aclose()
    said = [record.getMessage() for record in caplog.records]
    assert len([line for line in said if "could not claim deliveries" in line]) == 1
    assert len([line for line in said if "claiming deliveries again" in line]) == 1
    assert len(receiver.received) == 1


async def test_emails_of_one_conversation_and_event_go_as_one_message(engine: Engine) -> None:
    """Three decisions of one conversation asked of Ada and Sam, and one of another: each
    gets one email for the three and one for the other; each delivery is still its own
    row, sent; the webhook hears of each decision alone."""
    clock = Clock()
    sent: list[Delivery] = []
    invoices = [
        make_notice(decision_id=f"d-{n}", name="pay_invoice", summary=f"invoice=INV-{n}",
                    args={"invoice": f"INV-{n}"})  # fmt: skip
        for n in (1001, 1002, 1003)
    ]
    other = make_notice(decision_id="d-other", thread_id="t-other",
                        link="http://chat.example.com/c/t-other")  # fmt: skip
    with smtp_server() as smtp, webhook_receiver() as hook:
        settings = replace(webhook(hook.url), smtp=smtp.server, mail_from="desk@example.com")
        outbox = Outbox(engine, settings, clock=clock)
        for notice in [*invoices, other]:
            outbox.enqueue(notice, [ADA, SAM])
        deliverer = Deliverer(outbox, settings, worker="w1", on_sent=sent.append)
        try:
            assert await deliverer.deliver_due() == 12  # 8 emails' rows and 4 webhooks
        finally:
            await deliverer.aclose()
    by_person = sorted((mail.rcpt_tos[0], mail.message["Subject"]) for mail in smtp.messages)
    assert by_person == [
        ("ada@example.com", "Approval needed: pay_invoice (invoice=INV-1001) and 2 more"),
        ("ada@example.com", "Approval needed: transfer (recipient=Ada, amount=5000)"),
        ("sam@example.com", "Approval needed: pay_invoice (invoice=INV-1001) and 2 more"),
        ("sam@example.com", "Approval needed: transfer (recipient=Ada, amount=5000)"),
    ]
    together = next(m for m in smtp.messages if "and 2 more" in m.message["Subject"])
    for kind in ("text/plain", "text/html"):
        body = together.part(kind)
        assert [body.index(f"INV-{n}") for n in (1001, 1002, 1003)] == sorted(
            body.index(f"INV-{n}") for n in (1001, 1002, 1003)
        )
        assert body.count("http://chat.example.com/c/t-transfer") == (
            1 if kind == "text/plain" else 2  # the link, and the address to paste
        )
    assert sorted(r.json()["decisionId"] for r in hook.accepted) == [
        "d-1001", "d-1002", "d-1003", "d-other"
    ]  # fmt: skip
    assert {row.status for row in outbox.recent()} == {"sent"}
    assert len(sent) == 12


async def test_a_message_of_several_that_fails_is_retried_as_one(engine: Engine) -> None:
    """The SMTP server is down: each of the three rows records the failed attempt (and the
    trail each); once it is back, the three go again, in one message. One decided meanwhile
    is left out of it, skipped."""
    clock = Clock()
    audit = Audit()
    settled = Settled()
    with smtp_server() as smtp:
        up, down = up_and_down(smtp)
        outbox = Outbox(engine, up, clock=clock)
        for n in (1, 2, 3):
            outbox.enqueue(make_notice(decision_id=f"d-{n}", summary=f"n={n}"), [ADA])
        assert await Deliverer(outbox, down, worker="w1", audit=audit).deliver_due() == 0
        assert [(row.status, row.attempts) for row in outbox.recent()] == [("pending", 1)] * 3
        assert sorted(entry.data["decisionId"] for entry in audit.entries) == [
            "d-1", "d-2", "d-3"
        ]  # fmt: skip

        settled.ended["d-2"] = "rejected"
        clock.advance(60)
        deliverer = Deliverer(outbox, up, worker="w1", settled=settled)
        assert await deliverer.deliver_due() == 2
    [mail] = smtp.messages
    assert mail.message["Subject"] == "Approval needed: transfer (n=1) and 1 more"
    text = mail.part("text/plain")
    assert "n=1" in text and "n=3" in text and "n=2" not in text
    statuses = {row.decision_id: row.status for row in outbox.recent()}
    assert statuses == {"d-1": "sent", "d-2": "skipped", "d-3": "sent"}


def test_a_message_of_several_says_whose_they_are_to_whoever_reads_it() -> None:
    """An approver reads who waits on them; whoever asked, where no rule asks anyone else,
    reads that their own decisions wait for them (not "Rita is waiting for" to Rita)."""
    notices = [make_notice(decision_id=f"d-{n}", summary=f"n={n}") for n in (1, 2, 3)]
    rita = Recipient(email="Rita@example.com", name="Rita")
    for reader, said in (
        (ADA, "Rita (rita@example.com) is waiting for 3 decisions in one conversation, "
              "asked together:"),
        (rita, "3 decisions in your conversation wait for you, asked together:"),
    ):  # fmt: skip
        message = email.render_together(notices, reader, mail_from="desk@example.com")
        for kind in ("plain", "html"):
            body = message.get_body(preferencelist=(kind,))
            assert body is not None and said in str(body.get_content()), (reader, kind)
    reminded = [replace(notice, event="reminder") for notice in notices]
    message = email.render_together(reminded, rita, mail_from="desk@example.com")
    plain = message.get_body(preferencelist=("plain",))
    assert plain is not None
    assert "3 decisions in your conversation still wait for you" in str(plain.get_content())


def test_a_message_of_several_escapes_what_the_agent_wrote() -> None:
    notices = [
        make_notice(decision_id=f"d-{n}", summary=f"<b>{n}</b>", note="<script>x</script>",
                    requester_name="Rita <admin>")  # fmt: skip
        for n in (1, 2)
    ]
    message = email.render_together(notices, ADA, mail_from="desk@example.com")
    html_body = message.get_body(preferencelist=("html",))
    assert html_body is not None
    text = str(html_body.get_content())
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "<b>1</b>" not in text and "&lt;b&gt;1&lt;/b&gt;" in text
    assert "Rita &lt;admin&gt;" in text
    assert "\n" not in str(message["Subject"]).strip()


async def test_slack_gets_one_message_for_a_batch(engine: Engine) -> None:
    """A Slack channel is one reader: a batch of three is one message (who asks once, a
    section for each, one button), another conversation's decision one of its own."""
    invoices = [
        make_notice(decision_id=f"d-{n}", name="pay_invoice", summary=f"invoice=INV-{n}",
                    requester_name="Rita <ops>")  # fmt: skip
        for n in (1001, 1002, 1003)
    ]
    other = make_notice(decision_id="d-other", thread_id="t-other",
                        link="http://chat.example.com/c/t-other")  # fmt: skip
    with webhook_receiver() as receiver:
        settings = webhook(receiver.url, webhook_format="slack", webhook_secret=None)
        outbox = Outbox(engine, settings, clock=Clock())
        for notice in [*invoices, other]:
            outbox.enqueue(notice, [])
        deliverer = Deliverer(outbox, settings, worker="w1")
        try:
            assert await deliverer.deliver_due() == 4
        finally:
            await deliverer.aclose()
    bodies = sorted((r.json() for r in receiver.accepted), key=lambda body: len(body["blocks"]))
    single, together = bodies
    assert single["text"].startswith("Approval needed: transfer (recipient=Ada, amount=5000) <")
    assert together["text"] == (
        "Approval needed: pay_invoice (invoice=INV-1001) and 2 more "
        "<http://chat.example.com/c/t-transfer|Open the approvals>"
    )
    sections = [block["text"]["text"] for block in together["blocks"] if block["type"] == "section"]
    assert sections[0] == (
        "Rita &lt;ops&gt; (rita@example.com) is waiting for 3 decisions in one conversation, "
        "asked together:"
    )
    assert [section.splitlines()[0] for section in sections[1:]] == [
        f"*Approval needed: pay_invoice (invoice=INV-{n})*" for n in (1001, 1002, 1003)
    ]
    [actions] = [block for block in together["blocks"] if block["type"] == "actions"]
    assert [e["url"] for e in actions["elements"]] == ["http://chat.example.com/c/t-transfer"]
    assert {row.status for row in outbox.recent()} == {"sent"}
