"""Notifications, timers and what operators watch, end to end against the real server process
(issue 18's proofs): `python -m chat_app.server` in child processes, signed in to by a
trusted proxy (`CHAT_APP_AUTH=proxy`, `X-Forwarded-Email` from 127.0.0.1), the desk on
PostgreSQL (and SQLite where a case runs on both), notices going to a real webhook receiver
and a real SMTP server (aiosmtpd) on loopback (`tests/notify/servers.py`).

Most cases share one pair of workers on one PostgreSQL database, one Redis (the desk's live
notices and the ledger, so the trail is one) and one data folder (one sealing secret), each
with its timers every 0.3 s, traces to an OTLP collector stand-in and JSON log lines; the
policy is the demo's with `large-transfers` reminding after 2 s, escalating to admin after
4 s and expiring after 12 s (room between the escalation and the expiry to look at an
escalated inbox on a busy machine). Each case keeps to its own conversations and decision
ids.

- A pause tells Ada once: one email (text and HTML, each with the link) and one signed
  webhook, whatever two workers' timers do; the signature verifies, an old or altered request
  does not; Rita, who asked, is told nothing.
- A receiver that fails three times then answers is sent the notice once successfully, across
  a SIGKILL and restart, and the trail (persisted) has the three failures.
- Two workers: the reminder and the escalation each happen once (one webhook, one email to
  the right person, one trail record); Olive (admin) then sees the item, with its note. An
  expiry resolves the decision and the conversation goes on: the tool never ran.
- `/metrics` follows: pending 1 then 0, outcomes and notices grow; Rita is refused; the
  metrics token works.
- A decided transfer is one trace named by its decision id: paused, notified, decided,
  executed (linked to the continuation's own trace) under the root "decision".
- Every line the servers log is a JSON object with a level and a message.
- A bad webhook or SMTP URL stops the start naming the variable; a receiver that is down does
  not hold up a run, and its delivery stays pending with the error.

Nothing here reads the clock to decide: each wait polls with a generous bound and fails
saying what it waited for and what it saw.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from sqlalchemy import Engine, select

from chat_app.client import DeskRequestError
from chat_app.notify import verify
from chat_app.observe import decision_root, decision_trace_id
from chat_app.trust.store import open_database
from chat_app.trust.tables import deliveries
from tests.live_server import free_port
from tests.notify.servers import (
    Mail,
    Received,
    SmtpReceiver,
    WebhookReceiver,
    closed_url,
    smtp_server,
    webhook_receiver,
)
from tests.observe.test_tracing import Collector
from tests.pg_server import PostgresServer
from tests.redis_server import redis_server
from tests.server.process_app import (
    ADA,
    ASK,
    OLIVE,
    RITA,
    Server,
    Worker,
    as_person,
    figure,
    poll,
    server_env,
    start_log,
    timed_policy,
)

# One event loop for the module: the shared workers are started from it.
pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
SECRET = "process-tests-webhook-secret-0123456789"
PUBLIC_URL = "https://desk.example.com"
MAIL_FROM = "Approvals <approvals@example.com>"
METRICS_TOKEN = "process-tests-metrics-token-0123456789"
TOKEN = {"Authorization": f"Bearer {METRICS_TOKEN}"}
SIGNATURE, TIMESTAMP = "X-Chat-App-Signature", "X-Chat-App-Timestamp"

T = TypeVar("T")

INVOICES_RULE = """
[[rules]]
name = "invoices"
tool = "pay_invoice"
approvers = ["role:finance"]
not_requester = true
remind_after = "2s"
"""


@dataclass
class Pair:
    """Two workers on one database, one Redis and one data folder, and where they send."""

    a: Worker
    b: Worker
    hooks: WebhookReceiver
    smtp: SmtpReceiver
    collector: Collector


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    found = Collector()
    try:
        yield found
    finally:
        found.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pair(
    postgres_server: PostgresServer,
    tmp_path_factory: pytest.TempPathFactory,
    collector: Collector,
) -> AsyncIterator[Pair]:
    root = tmp_path_factory.mktemp("notify_pair")
    database_url = postgres_server.create_database("notify_pair")
    policy = timed_policy(root / "policy.toml", remind="2s", escalate="4s", expire="12s")
    with policy.open("a") as text:  # Rita's invoices go to finance too, a batch of three
        text.write(INVOICES_RULE)
    (root / "redis").mkdir()
    try:
        with (
            redis_server(root / "redis") as redis_url,
            webhook_receiver() as hooks,
            smtp_server() as smtp,
        ):
            env = server_env(
                CHAT_APP_DATABASE_URL=database_url,
                CHAT_APP_DATA_DIR=str(root / "data"),
                CHAT_APP_POLICY=str(policy),
                CHAT_APP_FANOUT_URL=redis_url,
                CHAT_APP_LEDGER_URL=redis_url,
                CHAT_APP_TIMER_SECONDS="0.3",
                CHAT_APP_NOTIFY_BACKOFF_SECONDS="0.5",
                CHAT_APP_WEBHOOK_URL=hooks.url,
                CHAT_APP_WEBHOOK_SECRET=SECRET,
                CHAT_APP_SMTP_URL=smtp.url,
                CHAT_APP_MAIL_FROM=MAIL_FROM,
                CHAT_APP_PUBLIC_URL=PUBLIC_URL,
                CHAT_APP_METRICS_TOKEN=METRICS_TOKEN,
                CHAT_APP_LOG_FORMAT="json",
                OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
                OTEL_SERVICE_NAME="desk-process-test",
                OTEL_BSP_SCHEDULE_DELAY="100",
            )
            a = Worker(Server(env, root / "a.log"))
            b = Worker(Server(env, root / "b.log"))
            try:
                await a.start()  # migrates the database
                await b.start()
                yield Pair(a, b, hooks, smtp, collector)
            finally:
                await a.close()
                await b.close()
    finally:
        postgres_server.drop_database(database_url)


# --- what reached the receivers ------------------------------------------------------------


def hooks_for(receiver: WebhookReceiver, decision_id: str, event: str) -> list[Received]:
    """Every webhook request about `decision_id`'s `event`, whatever it was answered."""
    with receiver.lock:
        received = list(receiver.received)
    return [
        request
        for request in received
        if request.json()["decisionId"] == decision_id and request.json()["event"] == event
    ]


HEADINGS = {
    "decision-needed": "Approval needed: ",
    "reminder": "Reminder: ",
    "escalated": "Escalated: ",
}


def mails_for(smtp: SmtpReceiver, thread_id: str, event: str) -> list[Mail]:
    """The emails about the conversation's `event` (by the link in the text and the
    subject's heading)."""
    link = f"{PUBLIC_URL}/c/{thread_id}"
    return [
        mail
        for mail in list(smtp.messages)
        if link in mail.part("text/plain")
        and str(mail.message["Subject"]).startswith(HEADINGS[event])
    ]


def reading(read: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    """`read` (of what the receivers recorded, in their threads) as `poll` calls it."""

    async def now() -> T:
        return read()

    return now


def records_of(trail: list[dict[str, Any]], kind: str, decision_id: str) -> list[dict[str, Any]]:
    return [r for r in trail if r["kind"] == kind and r["data"].get("decisionId") == decision_id]


def transfer_call(conversation: dict[str, Any]) -> dict[str, Any]:
    [call] = [
        c for m in conversation["messages"] for c in m["toolCalls"] if c["name"] == "transfer"
    ]
    found: dict[str, Any] = call
    return found


# --- 1. a pause tells Ada once -------------------------------------------------------------


async def test_a_pause_tells_ada_once_signed(pair: Pair) -> None:
    thread_id = await pair.a.desk(RITA).start(ASK)
    decision_id = (await pair.a.paused(thread_id))["decisionId"]

    # Both workers' timers look every 0.3 s. Once the reminder (2 s later) is out, they have
    # looked many times since the first notice: it still went once.
    await poll(
        "Ada's email and the webhook, then the reminder",
        reading(lambda: (hooks_for(pair.hooks, decision_id, "reminder"),
                         mails_for(pair.smtp, thread_id, "decision-needed"))),
        lambda seen: bool(seen[0]) and bool(seen[1]),
    )  # fmt: skip
    [hook] = hooks_for(pair.hooks, decision_id, "decision-needed")
    [mail] = mails_for(pair.smtp, thread_id, "decision-needed")
    assert hook.status == 200

    link = f"{PUBLIC_URL}/c/{thread_id}"
    assert mail.rcpt_tos == (ADA,)
    assert mail.message["Subject"] == "Approval needed: transfer (recipient=Ada, amount=5000)"
    assert link in mail.part("text/plain") and link in mail.part("text/html")
    body = hook.json()
    assert (body["event"], body["threadId"], body["link"]) == ("decision-needed", thread_id, link)
    assert body["rule"] == "large-transfers"
    assert [r["email"] for r in body["recipients"]] == [ADA]
    # Nothing to Rita, who asked: no email, in no webhook's recipients.
    assert not [m for m in pair.smtp.messages if RITA in m.rcpt_tos]
    with pair.hooks.lock:
        told = [r["email"] for h in pair.hooks.received for r in h.json()["recipients"]]
    assert RITA not in told

    # The signature, as a receiver checks it.
    key = SECRET.encode()
    timestamp, signature = hook.headers[TIMESTAMP], hook.headers[SIGNATURE]
    assert signature.startswith("sha256=")
    assert verify(key, timestamp, hook.body, signature, now=time.time())
    # The same request replayed ten minutes later, or with its timestamp moved: refused.
    sent_at = int(timestamp)
    assert not verify(key, timestamp, hook.body, signature, now=sent_at + 600)
    assert not verify(key, str(sent_at - 600), hook.body, signature, now=time.time())
    assert not verify(key, str(sent_at + 600), hook.body, signature, now=sent_at + 600)
    # An altered body: refused.
    tampered = hook.body.replace(b'"amount":5000', b'"amount":50000')
    assert tampered != hook.body
    assert not verify(key, timestamp, tampered, signature, now=sent_at)
    assert not verify(b"another-secret", timestamp, hook.body, signature, now=sent_at)


async def test_a_batch_is_one_email_to_ada_and_its_reminder_one_more(pair: Pair) -> None:
    """Three invoices asked together, two workers' timers looking every 0.3 s and queueing
    one decision at a time: Ada gets one email naming the three, then one reminder for
    them; the webhook one request per decision and event."""
    thread_id = await pair.a.desk(RITA).start("pay invoices")
    await poll(
        "the three invoices' reminders, by webhook",
        reading(lambda: [r for r in pair.hooks.received if r.json()["threadId"] == thread_id
                         and r.json()["event"] == "reminder"]),
        lambda seen: len(seen) == 3,
    )  # fmt: skip
    await poll(  # each after its gathering wait
        "the approval-needed and the reminder emails",
        reading(lambda: (mails_for(pair.smtp, thread_id, "decision-needed"),
                         mails_for(pair.smtp, thread_id, "reminder"))),
        lambda seen: bool(seen[0]) and bool(seen[1]),
    )  # fmt: skip
    await asyncio.sleep(1.5)  # room for any split-off email to arrive, to be counted
    for event, heading in (("decision-needed", "Approval needed"), ("reminder", "Reminder")):
        [mail] = mails_for(pair.smtp, thread_id, event)
        assert mail.rcpt_tos == (ADA,)
        assert mail.message["Subject"] == (
            f"{heading}: pay_invoice (invoice=INV-1001, supplier=Acme Paper, amount=120.5) "
            "and 2 more"
        )
        text = mail.part("text/plain")
        assert all(f"INV-100{n}" in text for n in (1, 2, 3)), text
        hooks = [r for r in pair.hooks.received
                 if r.json()["threadId"] == thread_id and r.json()["event"] == event]  # fmt: skip
        assert sorted(r.json()["args"]["invoice"] for r in hooks) == [
            "INV-1001", "INV-1002", "INV-1003"
        ]  # fmt: skip


# --- 3. two workers: reminder, escalation and expiry each once ----------------------------


async def test_two_workers_remind_escalate_and_expire_once(pair: Pair) -> None:
    a, b = pair.a, pair.b
    first = await a.desk(RITA).start(ASK)  # reminded, then escalated
    second = await b.desk(RITA).start(ASK)  # left to expire
    first_id = (await a.paused(first))["decisionId"]
    second_id = (await b.paused(second))["decisionId"]

    # Escalated: Olive (admin) may decide it now, and her inbox says why.
    shown = await poll(
        "Olive to see the escalated transfer",
        lambda: b.item_for(OLIVE, first),
        lambda item: item is not None,
    )
    assert shown is not None and shown["decisionId"] == first_id
    assert shown["note"] == "escalated to admin after 4 s"
    assert shown["waitingFor"] == "Waiting for finance; escalated to admin"
    assert shown["escalatedTo"] == ["role:admin"] and shown["escalatedAt"]

    # The second expires; the conversation goes on by itself.
    settled = await a.settled(second)

    # By now the first's timers were due long ago on both workers: each fired once.
    [reminder] = hooks_for(pair.hooks, first_id, "reminder")
    [escalated] = hooks_for(pair.hooks, first_id, "escalated")
    assert [r["email"] for r in reminder.json()["recipients"]] == [ADA]
    assert [r["email"] for r in escalated.json()["recipients"]] == [OLIVE]
    assert escalated.json()["note"] == "Escalated to admin after 4 s: you may decide it now."
    assert [m.rcpt_tos for m in mails_for(pair.smtp, first, "reminder")] == [(ADA,)]
    assert [m.rcpt_tos for m in mails_for(pair.smtp, first, "escalated")] == [(OLIVE,)]
    trail = await b.trail()
    [reminded] = records_of(trail, "reminded", first_id)
    [escalation] = records_of(trail, "escalated", first_id)
    assert reminded["data"]["after"] == "2 s" and reminded["data"]["told"] == [ADA]
    assert escalation["data"]["to"] == ["role:admin"] and escalation["data"]["told"] == [OLIVE]

    # The expiry: the tool never ran, the model says it expired, nobody can decide it.
    assert settled["error"] is None, f"the expiry's continuation failed: {settled['error']}"
    assert settled["status"] == "done", settled
    reply = settled["messages"][-1]["text"]
    assert "expired" in reply.lower() and "denied" not in reply.lower(), reply
    assert transfer_call(settled)["status"] == "expired"
    assert await a.item_for(ADA, second) is None
    with pytest.raises(DeskRequestError) as late:
        await a.desk(ADA).decide(second_id, True)
    assert (late.value.status, late.value.code) == (410, "expired"), late.value
    trail = await a.trail()
    assert not [r for r in trail if r["kind"] == "execution" and r["thread_id"] == second]
    expired = [
        r
        for r in trail
        if r["kind"] == "decision" and r["thread_id"] == second and r["data"]["status"] == "expired"
    ]
    assert len(expired) == 1, expired


# --- 4. /metrics ---------------------------------------------------------------------------


async def test_metrics_follow_the_decisions(pair: Pair) -> None:
    a, b = pair.a, pair.b
    assert (await a.scrape(as_person(RITA))).status_code == 403  # not an admin
    assert (await a.scrape({})).status_code == 401  # nobody: the proxy named no one
    assert (await a.scrape(as_person(OLIVE))).status_code == 200
    assert (await a.scrape({"Authorization": "Bearer not-the-token"})).status_code == 401

    def pending(figures: dict[Any, float]) -> float:
        return figure(figures, "chat_app_pending_decisions", kind="tool", tool="transfer",
                      rule="large-transfers")  # fmt: skip

    # Whatever earlier cases left waiting expires within 12 s.
    before = await poll(
        "no transfer to be pending", lambda: b.figures(TOKEN), lambda f: pending(f) == 0
    )
    approved0 = figure(before, "chat_app_decisions_total", outcome="approved")
    expired0 = figure(before, "chat_app_decisions_total", outcome="expired")
    sent0 = {
        channel: figure(before, "chat_app_notifications_total", channel=channel, status="sent")
        for channel in ("webhook", "email")
    }

    thread_id = await a.desk(RITA).start(ASK)
    decision_id = (await a.paused(thread_id))["decisionId"]
    waiting = await b.figures(TOKEN)
    assert pending(waiting) == 1
    told = await poll(
        "the notices to be counted as sent",
        lambda: b.figures(TOKEN),
        lambda f: all(
            figure(f, "chat_app_notifications_total", channel=channel, status="sent")
            > sent0[channel]
            for channel in ("webhook", "email")
        ),
    )
    assert pending(told) == 1

    result = await a.desk(ADA).decide(decision_id, True)
    assert result["status"] == "decided"
    decided = await b.figures(as_person(OLIVE))
    assert pending(decided) == 0
    assert figure(decided, "chat_app_decisions_total", outcome="approved") == approved0 + 1

    expiring = await b.desk(RITA).start(ASK)
    await b.paused(expiring)
    assert pending(await a.figures(TOKEN)) == 1
    # Gone from the pending transfers undecided: expired. What an earlier case left waiting
    # may expire meanwhile and count too (the counter has no tool label).
    after = await poll(
        "the second transfer to expire",
        lambda: a.figures(TOKEN),
        lambda f: pending(f) == 0
        and figure(f, "chat_app_decisions_total", outcome="expired") > expired0,
    )
    assert figure(after, "chat_app_decisions_total", outcome="approved") == approved0 + 1
    assert figure(after, "chat_app_notification_failures_total", channel="webhook") == 0


# --- 5. traces -----------------------------------------------------------------------------


async def test_a_decided_transfer_is_one_trace(pair: Pair) -> None:
    a, b = pair.a, pair.b
    thread_id = await a.desk(RITA).start(ASK)
    decision_id = (await a.paused(thread_id))["decisionId"]
    await poll(
        "Ada to be told",
        reading(lambda: (hooks_for(pair.hooks, decision_id, "decision-needed"),
                         mails_for(pair.smtp, thread_id, "decision-needed"))),
        lambda seen: bool(seen[0]) and bool(seen[1]),
    )  # fmt: skip
    assert (await b.desk(ADA).decide(decision_id, True))["status"] == "decided"
    done = await b.settled(thread_id)
    assert done["status"] == "done", done

    trace_id = decision_trace_id(decision_id).to_bytes(16, "big")
    wanted = {"paused", "notified", "decided", "executed", "decision"}

    def spans() -> list[Any]:
        return [r.span for r in list(pair.collector.spans) if r.span.trace_id == trace_id]

    def notified_by(found: list[Any]) -> set[tuple[str, str]]:
        return {
            (kv["notice.channel"], kv["notice.recipient"])
            for span in found
            if span.name == "notified"
            for kv in [{a.key: a.value.string_value for a in span.attributes}]
        }

    told = {("webhook", ""), ("email", ADA)}
    # Each worker exports its spans in batches of its own: the email's "notified" span can
    # come after the webhook's, so wait for every span expected, not for every name.
    await poll(
        "the decision's spans at the collector",
        reading(spans),
        lambda found: wanted <= {span.name for span in found} and told <= notified_by(found),
    )
    found = spans()
    [root] = [span for span in found if span.name == "decision"]
    assert root.parent_span_id == b""
    assert root.span_id == decision_root(decision_id).span_id.to_bytes(8, "big")
    for span in found:
        if span is not root:
            assert span.parent_span_id == root.span_id, span.name
    attributes = {
        span.name: {kv.key: kv.value.string_value for kv in span.attributes} for span in found
    }
    assert attributes["decided"]["decided.by"] == ADA
    assert attributes["decided"]["verified.by"] == "proxy"
    assert attributes["decision"]["decision.outcome"] == "approved"
    assert attributes["executed"]["thread.id"] == thread_id
    assert told <= notified_by(found)

    # "executed" links to the continuation, a trace of its own.
    [executed] = [span for span in found if span.name == "executed"]
    [link] = executed.links
    assert link.trace_id != trace_id
    await poll(
        "the continuation's span at the collector",
        reading(lambda: [r.span for r in list(pair.collector.spans)
                         if r.span.span_id == link.span_id]),
        bool,
    )  # fmt: skip
    [continuation] = [r.span for r in list(pair.collector.spans) if r.span.span_id == link.span_id]
    assert continuation.name == "continuation" and continuation.trace_id == link.trace_id
    assert {r.service for r in pair.collector.spans} == {"desk-process-test"}


# --- 6. JSON logs --------------------------------------------------------------------------


async def test_every_log_line_is_json(pair: Pair) -> None:
    for worker in (pair.a, pair.b):
        lines = [line for line in worker.log_lines() if line.strip()]
        assert lines, worker.server.log
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                pytest.fail(f"not JSON in {worker.server.log.name}: {line!r}")
            assert isinstance(entry, dict), line
            assert isinstance(entry.get("level"), str) and entry["level"], line
            assert isinstance(entry.get("message"), str), line
        messages = [json.loads(line)["message"] for line in lines]
        assert any(m.startswith("sign-in: proxy") for m in messages), messages[:5]
        [said] = [m for m in messages if m.startswith("notifications: ")]
        assert said.startswith("notifications: webhook to http://127.0.0.1:") and (
            f"(json, signed); email from {MAIL_FROM} via 127.0.0.1:" in said
        ), said
        assert SECRET not in said


# --- 2. fails three times, then succeeds, across a restart ---------------------------------


async def test_a_failing_receiver_is_retried_across_a_restart(
    database_url: str, tmp_path: Path
) -> None:
    with webhook_receiver(fail_first=3) as hooks:
        env = server_env(
            CHAT_APP_DATABASE_URL=database_url,
            CHAT_APP_DATA_DIR=str(tmp_path / "data"),  # its SQLite ledger: the trail
            CHAT_APP_TIMER_SECONDS="0.3",
            # 1 s, then 2 s, then 4 s: the kill lands between attempts, never in one.
            CHAT_APP_NOTIFY_BACKOFF_SECONDS="1",
            CHAT_APP_WEBHOOK_URL=hooks.url,
            CHAT_APP_WEBHOOK_SECRET=SECRET,
            CHAT_APP_PUBLIC_URL=PUBLIC_URL,
            CHAT_APP_METRICS_TOKEN=METRICS_TOKEN,
        )
        worker = Worker(Server(env, tmp_path / "server.log"))
        try:
            await worker.start()
            thread_id = await worker.desk(RITA).start(ASK)
            decision_id = (await worker.paused(thread_id))["decisionId"]

            async def failures() -> list[dict[str, Any]]:
                return records_of(await worker.trail(), "delivery-failed", decision_id)

            [first] = await poll("the first failed attempt in the trail", failures, bool)
            await worker.restart_after_kill()

            await poll(
                "the webhook to be accepted",
                reading(lambda: [h for h in hooks.accepted
                                 if h.json()["decisionId"] == decision_id]),
                bool,
            )  # fmt: skip
            failed = await poll("three failures in the trail", failures, lambda f: len(f) >= 3)
            figures = await worker.figures(TOKEN)
        finally:
            await worker.close()

        # One success for the notice, after exactly the three refusals.
        answers = [h.status for h in hooks_for(hooks, decision_id, "decision-needed")]
        assert answers == [500, 500, 500, 200], answers
        assert len(hooks.received) == 4
        # The trail outlived the kill: the first process's record is there, and the rest.
        assert failed[0] == first
        assert [f["data"]["attempt"] for f in failed] == [1, 2, 3]
        assert all(f["data"]["willRetry"] and f["data"]["channel"] == "webhook" for f in failed)
        assert all("500" in f["data"]["error"] for f in failed)
        assert (
            figure(figures, "chat_app_notifications_total", channel="webhook", status="sent") == 1
        )
        assert figure(figures, "chat_app_notification_failures_total", channel="webhook") == 3


# --- 7. bad input --------------------------------------------------------------------------


def start_refused(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chat_app.server", "--port", str(free_port())],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


async def test_a_bad_url_stops_the_start(tmp_path: Path) -> None:
    common = {"CHAT_APP_DATA_DIR": str(tmp_path / "data")}
    webhook = server_env(**common, CHAT_APP_WEBHOOK_URL="notaurl", CHAT_APP_WEBHOOK_SECRET=SECRET)
    smtp = server_env(**common, CHAT_APP_SMTP_URL="smtp//x", CHAT_APP_MAIL_FROM=MAIL_FROM)
    done = await asyncio.gather(
        asyncio.to_thread(start_refused, webhook), asyncio.to_thread(start_refused, smtp)
    )
    for variable, result in zip(("CHAT_APP_WEBHOOK_URL", "CHAT_APP_SMTP_URL"), done, strict=True):
        assert result.returncode != 0, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"chat_app.server: {variable}="), result.stderr


async def test_the_standalone_server_says_where_links_lead_without_a_public_url(
    tmp_path: Path,
) -> None:
    """It serves the HTTP API alone, so a notice's default link leads nowhere useful: the
    start says so, naming the variable; given the app's address, it says nothing."""
    hook = {"CHAT_APP_WEBHOOK_URL": "http://127.0.0.1:9/hook", "CHAT_APP_WEBHOOK_SECRET": SECRET}
    [warning] = [line for line in start_log(tmp_path / "a", hook) if "has no pages" in line]
    assert "CHAT_APP_PUBLIC_URL is not set" in warning and "http://localhost:" in warning
    given = start_log(tmp_path / "b", {**hook, "CHAT_APP_PUBLIC_URL": "https://chat.example.com"})
    assert any("notifications: webhook" in line for line in given)
    assert not any("has no pages" in line for line in given)


async def test_a_receiver_that_is_down_holds_up_nothing(tmp_path: Path) -> None:
    database_url = f"sqlite:///{(tmp_path / 'app.sqlite3').as_posix()}"
    env = server_env(
        CHAT_APP_DATABASE_URL=database_url,
        CHAT_APP_DATA_DIR=str(tmp_path / "data"),
        CHAT_APP_TIMER_SECONDS="0.3",
        CHAT_APP_WEBHOOK_URL=closed_url(),
        CHAT_APP_WEBHOOK_SECRET=SECRET,
    )
    worker = Worker(Server(env, tmp_path / "server.log"))
    engine: Engine | None = None
    try:
        await worker.start()
        thread_id = await worker.desk(RITA).start(ASK)
        decision_id = (await worker.paused(thread_id))["decisionId"]
        assert (await worker.desk(ADA).decide(decision_id, True))["status"] == "decided"
        done = await worker.settled(thread_id)
        assert done["status"] == "done" and done["error"] is None, done
        assert transfer_call(done)["result"]["receipt"].startswith("rcpt-")

        engine = open_database(database_url)
        database = engine

        def webhook_rows(event: str) -> list[Any]:
            with database.connect() as connection:
                return list(connection.execute(
                    select(deliveries).where(deliveries.c.decision_id == decision_id,
                                             deliveries.c.event == event)
                ))  # fmt: skip

        for event in ("decision-needed", "decided"):  # Rita is told how it ended, too
            [row] = await poll(
                f"the failed attempt of {event} to be recorded",
                partial(asyncio.to_thread, webhook_rows, event),
                lambda rows: len(rows) == 1 and rows[0].attempts >= 1,
            )
            # Pending (to try again), or not sent once the decision was settled: either way
            # it held nothing up.
            assert (row.channel, row.status) in (("webhook", "pending"), ("webhook", "skipped"))
            assert "could not be reached" in row.last_error, row.last_error
        # The log says so with its level, naming the webhook up to its path.
        failed = [line for line in worker.log_lines() if "delivery" in line and "failed" in line]
        host = env["CHAT_APP_WEBHOOK_URL"].rsplit("/", 1)[0]
        assert failed and all(line.startswith("WARNING:") for line in failed), failed
        assert f"to {host}/… failed" in failed[0], failed
    finally:
        await worker.close()
        if engine is not None:
            engine.dispose()
