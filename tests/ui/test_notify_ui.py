"""Notices in Chromium (issue 18): the email's link, escalation on the card and in the inbox,
the Deliveries page, and a requester who is looking not being emailed.

One app copy with password sign-in (Rita asks, Ada is finance, Olive is admin), a real SMTP
server (aiosmtpd) and a webhook receiver (`tests/notify/servers.py`), timers every 0.5 s, and
the demo's policy with `large-transfers` escalating to admin after a few seconds rather than
2 h (and no reminder, so Ada is told once). The proof of the issue: `transfer 5000 to Ada`
sends Ada one email; its link, opened in a fresh browser, goes to sign-in (the link grants
nothing) and, signed in as Ada, to the conversation with the transfer's card, which she
approves. The words of the inbox, the audit trail and the Deliveries page are also checked
in-process, without a browser.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect
from sqlalchemy import select

from chat_app.client import ToolApprovalInterrupt
from chat_app.demo import POLICY_PATH
from chat_app.desk import InboxItem
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.notify import Delivery, Notice, NotifySettings, Recipient, SmtpServer, verify
from chat_app.trust import DEMO_PEOPLE, Policy
from chat_app.trust.store import database_url, open_database
from chat_app.trust.tables import conversations, decisions
from chat_app.ui import session
from chat_app.ui.audit_state import questions_asked, summarize
from chat_app.ui.deliveries_state import NOTHING_CONFIGURED, channels_line, delivery_row
from chat_app.ui.inbox_state import inbox_row
from tests.live_server import free_port
from tests.notify.servers import Mail, SmtpReceiver, WebhookReceiver, smtp_server, webhook_receiver
from tests.ui import app_server
from tests.ui.app_server import REPO_ROOT, app_env
from tests.ui.conftest import app_copy, ask, eventually, fresh_page, hydrated, thread_of

pytestmark = pytest.mark.browser

RITA, ADA, OLIVE = "rita@example.com", "ada@example.com", "olive@example.com"
SAM = "sam@example.com"
PASSWORD = "correct horse battery staple"
SECRET = "notify-ui-test-webhook-secret"
#: How long after the pause the copy's `large-transfers` escalates to admin.
ESCALATE_AFTER = "4s"
WAITING_FOR_FINANCE = "Waiting for finance — you asked for this, so someone else approves it"
ESCALATED = "escalated to admin after 4 s"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


# --- the words, in-process --------------------------------------------------------------------


def inbox_item(**extra: object) -> InboxItem:
    fields: dict[str, object] = dict(
        decision_id="d1", thread_id="t1", item_id="i1", kind="tool", name="transfer",
        summary="recipient=Ada, amount=5000", args={}, requester_email=RITA,
        requester_name="Rita", rule="large-transfers", waiting_for="Waiting for finance",
        quorum=1, votes=(), status="pending", created_at=NOW - timedelta(hours=3),
        expires_at=NOW + timedelta(hours=21),
    )  # fmt: skip
    fields.update(extra)
    return InboxItem(**fields)  # type: ignore[arg-type]


def test_an_inbox_row_says_when_it_was_reminded_and_escalated() -> None:
    olive = DEMO_PEOPLE[3]
    plain = inbox_row(inbox_item(), olive, NOW, yours=True)
    assert (plain.escalation, plain.reminded, plain.reminded_title) == ("", "", "")
    later = inbox_item(
        reminded_at=NOW - timedelta(hours=2, minutes=30, seconds=7),
        escalated_at=NOW - timedelta(hours=1, seconds=3),
        escalate_at=NOW - timedelta(hours=1),
        escalated_to=("role:admin",),
    )
    row = inbox_row(later, olive, NOW, yours=True)
    assert row.escalation == "escalated to admin after 2 h"
    # Who may decide now names the escalation, once it happened, as the card does.
    assert plain.waiting_for == "You — waiting for finance"
    planned = inbox_item(escalate_at=NOW + timedelta(hours=1), escalated_to=("role:admin",))
    assert inbox_row(planned, olive, NOW, yours=True).waiting_for == plain.waiting_for
    assert row.waiting_for == "You — waiting for finance; escalated to admin"
    assert inbox_row(later, DEMO_PEOPLE[0], NOW, yours=False).waiting_for == (
        "Waiting for finance; escalated to admin"
    )
    assert row.reminded == "09:29 UTC"
    assert row.reminded_title == "Reminder sent 2025-06-01 09:29:53 UTC"
    assert row.reminded_iso == "2025-06-01T09:29:53Z"


def test_the_audit_trail_says_what_the_timers_and_the_notices_did() -> None:
    policy = Policy.load(POLICY_PATH)
    reminded = {"kind": "reminded", "data": {"toolName": "transfer", "rule": "large-transfers",
                                             "after": "30 min", "told": [ADA]}}  # fmt: skip
    assert summarize(reminded, policy) == "Reminded finance about transfer after 30 min"
    assert summarize(reminded) == f"Reminded {ADA} about transfer after 30 min"
    escalated = {"kind": "escalated", "data": {"toolName": "transfer", "rule": "large-transfers",
                                               "after": "2 h", "to": ["role:admin"],
                                               "told": [OLIVE]}}  # fmt: skip
    assert summarize(escalated, policy) == "Escalated transfer to admin after 2 h"
    failed = {"kind": "delivery-failed", "data": {"channel": "email", "recipient": ADA,
                                                  "attempt": 2, "error": "connection refused",
                                                  "willRetry": True}}  # fmt: skip
    assert summarize(failed) == (
        f"Delivery of the email to {ADA} failed (attempt 2): connection refused; will retry"
    )
    last = {"kind": "delivery-failed", "data": {"channel": "webhook", "recipient": "",
                                                "attempt": 8, "error": "HTTP 500",
                                                "willRetry": False}}  # fmt: skip
    assert summarize(last) == "Delivery of the webhook failed (attempt 8): HTTP 500; gave up"
    held = {"kind": "held", "data": {"interruptId": "approval_c2", "toolName": "pay_invoice",
                                     "outcome": "approved"}}  # fmt: skip
    assert summarize(held) == "Approved pay_invoice: held for the rest of its batch"
    expired = {"kind": "decision", "data": {"interruptId": "approval_c1",
                                            "status": "expired", "toolName": "transfer",
                                            "decision": "expired"}}  # fmt: skip
    assert summarize(expired) == "Expired transfer: nobody decided"
    short = {"kind": "decision", "data": {"interruptId": "approval_c1", "status": "expired",
                                          "toolName": "transfer", "decision": "expired",
                                          "approvedBy": [SAM], "quorum": 2}}  # fmt: skip
    assert summarize(short) == f"Expired transfer: 1 of 2 approvals ({SAM})"
    approved = {"kind": "decision", "data": {"toolName": "transfer", "status": "resolved",
                                             "decision": "approved"}}  # fmt: skip
    assert summarize(approved) == "Approved transfer"
    counted = {"kind": "decision", "data": {"toolName": "rotate_keys", "status": "resolved",
                                            "decision": "approved",
                                            "cosigners": [{"actor": SAM}]}}  # fmt: skip
    assert summarize(counted) == f"Approved rotate_keys, after {SAM} approved"
    pause = {"kind": "pause", "data": {"interrupts": [
        {"interruptId": "interrupt-1", "message": "How should order 42 ship?"},
        {"interruptId": "approval_c2", "message": "Approve?", "toolName": "transfer"},
    ]}}  # fmt: skip
    answered = {"kind": "decision",
                "data": {"interruptId": "interrupt-1", "decision": "answered"}}  # fmt: skip
    asked = questions_asked([pause, answered])
    assert asked == {"interrupt-1": "How should order 42 ship?"}
    assert summarize(answered, None, asked) == "Answered How should order 42 ship?"
    assert summarize(answered) == "Answered interrupt-1"  # its pause not in the trail read


def test_the_card_of_an_escalated_item_names_the_escalation_and_lets_admins_decide() -> None:
    session.configure(lambda _: None, lambda: {"tools": []},  # type: ignore[arg-type,return-value]
                      policy=Policy.load(POLICY_PATH))  # fmt: skip
    try:
        rita, ada, sam, olive = DEMO_PEOPLE[:4]
        item = ToolApprovalInterrupt(
            id="approval_c1", reason="tool_call", thread_id="t", interrupted_run_id="r",
            binding={}, tool_name="transfer", tool_call_id="c1",
            metadata={POLICY_METADATA_KEY: {"rule": "large-transfers", "requester": RITA}},
        )  # fmt: skip
        escalated = {"approval_c1": "escalated to admin after 2 h"}
        olive = olive.with_roles(frozenset({"admin", "ops"}))
        assert session.who_decides(olive)(item) == "Waiting for finance"
        assert session.who_decides(olive, None, escalated)(item) == ""  # Approve, Reject
        assert session.who_decides(rita, None, escalated)(item) == (
            f"{WAITING_FOR_FINANCE}; escalated to admin after 2 h"
        )
        assert session.who_decides(sam, None, escalated)(item) == (
            "Waiting for finance; escalated to admin after 2 h"
        )
        ada = ada.with_roles(frozenset({"finance"}))
        assert session.who_decides(ada, None, escalated)(item) == ""
    finally:
        session.configure(lambda _: None, lambda: {"tools": []})  # type: ignore[arg-type,return-value]


def delivery(**extra: Any) -> Delivery:
    notice = Notice(
        event="decision-needed", decision_id="d1", thread_id="t 1", kind="tool",
        name="transfer", summary="recipient=Ada, amount=5000", args={}, requester_email=RITA,
        requester_name="Rita", rule="large-transfers", link="http://x/c/t 1",
        expires_at=None, waiting_since=NOW, note="", recipients=(Recipient(ADA, "Ada"),),
    )  # fmt: skip
    fields: dict[str, Any] = dict(
        id=7, key="k", decision_id="d1", thread_id="t 1", event="decision-needed",
        channel="email", recipient=ADA, notice=notice, status="sent", attempts=1,
        next_attempt_at=NOW, last_error=None, created_at=NOW,
        sent_at=NOW + timedelta(seconds=2),
    )  # fmt: skip
    fields.update(extra)
    return Delivery(**fields)


def test_a_delivery_row_says_what_went_where_and_how() -> None:
    row = delivery_row(delivery())
    assert (row.at, row.event, row.what, row.channel, row.to_whom) == (
        "2025-06-01 12:00:00", "needs a decision", "transfer (recipient=Ada, amount=5000)",
        "email", "Ada (ada@example.com)",
    )  # fmt: skip
    assert (row.status, row.status_label, row.attempts, row.error, row.href) == (
        "sent", "sent 12:00:02", 1, "", "/c/t%201"
    )  # fmt: skip
    retry = delivery_row(
        delivery(status="pending", attempts=2, sent_at=None, last_error="connection refused",
                 next_attempt_at=NOW + timedelta(seconds=20), event="reminder")
    )  # fmt: skip
    assert (retry.event, retry.status_label, retry.error) == (
        "reminder", "pending, next try at 12:00:20", "connection refused"
    )  # fmt: skip
    assert delivery_row(delivery(status="pending", attempts=0)).status_label == "pending"
    assert delivery_row(delivery(status="failed", event="escalated")).status_label == "failed"
    why = "not sent: the decision was approved before it went out"
    skipped = delivery_row(delivery(status="skipped", sent_at=None, reason=why))
    assert (skipped.status_label, skipped.status_color, skipped.reason, skipped.error) == (
        "not sent", "gray", "the decision was approved before it went out", ""
    )  # fmt: skip
    slack = NotifySettings(webhook_url="https://hooks.slack.com/services/T0/B0/secret",
                           webhook_format="slack")  # fmt: skip
    hook = delivery_row(delivery(channel="webhook", recipient=""), slack)
    assert hook.to_whom == "webhook at hooks.slack.com"  # never the URL's path: it is the secret


def test_the_page_says_which_channels_are_configured() -> None:
    assert channels_line(None) == channels_line(NotifySettings()) == NOTHING_CONFIGURED
    assert NOTHING_CONFIGURED.startswith(
        "No notifications are configured: set CHAT_APP_WEBHOOK_URL or CHAT_APP_SMTP_URL"
    )
    smtp = SmtpServer(host="mail.example.com", port=587, implicit_tls=False)
    both = NotifySettings(
        webhook_url="https://hooks.slack.com/services/T0/B0/secret", webhook_format="slack",
        smtp=smtp, mail_from="approvals@example.com",
    )  # fmt: skip
    assert channels_line(both) == (
        "Webhook (Slack, to hooks.slack.com) and email to the people who decide "
        "(from approvals@example.com, through mail.example.com:587)."
    )
    mail = NotifySettings(smtp=smtp, mail_from="Approvals <approvals@example.com>")
    assert channels_line(mail) == (
        "Email to the people who decide (from Approvals <approvals@example.com>, "
        "through mail.example.com:587)."
    )


# --- in the browser ---------------------------------------------------------------------------


@dataclass
class NotifyApp:
    url: str
    smtp: SmtpReceiver
    webhook: WebhookReceiver
    env: dict[str, str]

    def mails_to(self, email: str) -> list[Mail]:
        return [mail for mail in list(self.smtp.messages) if email in mail.rcpt_tos]

    def webhooks(self, thread: str) -> list[dict[str, Any]]:
        found = []
        for request in self.webhook.accepted:
            body = request.json()
            if body.get("threadId") == thread:
                found.append(body)
        return found

    def watched(self, thread: str) -> bool:
        """Whether the conversation's owner has a page open on it now, as the desk reads it."""
        url = database_url(
            self.env.get("CHAT_APP_DATABASE_URL"), Path(self.env["CHAT_APP_DATA_DIR"])
        )
        engine = open_database(url)
        try:
            with engine.connect() as connection:
                until = connection.execute(
                    select(conversations.c.watched_until)
                    .where(conversations.c.thread_id == thread)
                ).scalar()  # fmt: skip
        finally:
            engine.dispose()
        return until is not None and until.replace(tzinfo=UTC) > datetime.now(UTC)

    def decision_row(self, thread: str, name: str) -> Any:
        """The desk's row of a decision, read from the app's database."""
        url = database_url(
            self.env.get("CHAT_APP_DATABASE_URL"), Path(self.env["CHAT_APP_DATA_DIR"])
        )
        engine = open_database(url)
        try:
            with engine.connect() as connection:
                return connection.execute(
                    select(decisions).where(decisions.c.thread_id == thread,
                                            decisions.c.name == name)
                ).first()  # fmt: skip
        finally:
            engine.dispose()


def add_account(env: dict[str, str], email: str, name: str, *roles: str) -> None:
    role_args = [arg for role in roles for arg in ("--role", role)]
    added = subprocess.run(
        [sys.executable, "-m", "chat_app", "users", "add", email, "--name", name, *role_args,
         "--password-stdin"],
        input=PASSWORD + "\n", env=env, cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr


@pytest.fixture(scope="module")
def notify_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotifyApp]:
    """The app copy, with its mail server and webhook receiver, and three accounts."""
    data = tmp_path_factory.mktemp("notify-data")
    policy = POLICY_PATH.read_text(encoding="utf-8")
    policy = re.sub(r'(?m)^remind_after = "30m".*\n', "", policy)
    policy = re.sub(r'(?m)^escalate_after = "2h"', f'escalate_after = "{ESCALATE_AFTER}"', policy)
    assert f'escalate_after = "{ESCALATE_AFTER}"' in policy and "remind_after" not in policy
    policy_path = data / "policy.toml"
    policy_path.write_text(policy, encoding="utf-8")
    # The copy's own address goes into the notices' links, so its port is chosen here.
    port = free_port()
    with smtp_server() as smtp, webhook_receiver() as webhook, ExitStack() as stack:
        extra = {
            "CHAT_APP_AUTH": "password",
            "CHAT_APP_DATA_DIR": str(data),
            "CHAT_APP_POLICY": str(policy_path),
            "CHAT_APP_SMTP_URL": smtp.url,
            "CHAT_APP_MAIL_FROM": "Approvals <approvals@example.com>",
            "CHAT_APP_WEBHOOK_URL": webhook.url,
            "CHAT_APP_WEBHOOK_SECRET": SECRET,
            "CHAT_APP_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "CHAT_APP_TIMER_SECONDS": "0.5",
            # A requester's own decision is sent 1 s after the pause unless they look at it.
            "CHAT_APP_NOTIFY_IDLE_SECONDS": "1",
        }
        env = {**app_env(), **extra}
        add_account(env, RITA, "Rita")
        add_account(env, ADA, "Ada", "finance")
        add_account(env, OLIVE, "Olive", "admin")
        # Only while the copy starts: the session's app, started later, needs a port of its own.
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(app_server, "free_port", lambda: port)
            url = stack.enter_context(app_copy(tmp_path_factory.mktemp("notify-app"), extra))
        assert url == extra["CHAT_APP_PUBLIC_URL"]
        yield NotifyApp(url=url, smtp=smtp, webhook=webhook, env=env)


def sign_in_here(page: Page, email: str, name: str) -> None:
    """Fill in the sign-in page the tab is on, and wait until the next page has loaded as
    that person."""
    hydrated(page)
    page.locator("#signin-email").fill(email)
    page.locator("#signin-password").fill(PASSWORD)
    page.locator("#signin-submit").click()
    expect(page).not_to_have_url(re.compile(r"/signin\b"))
    hydrated(page)
    expect(page.locator("#viewer-name")).to_have_text(name)


def sign_in(page: Page, email: str, name: str) -> None:
    page.goto("/signin")
    sign_in_here(page, email, name)


def tool_card(page: Page, tool: str) -> Locator:
    return page.locator(f'.tool-card[data-tool="{tool}"]').last


def shot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / f"notify-{name}.png"), full_page=True)


def test_the_email_link_signs_ada_in_to_the_decision_and_the_admin_sees_it_delivered(
    browser: Browser, notify_app: NotifyApp, screenshot_dir: Path
) -> None:
    app = notify_app
    with fresh_page(browser, app.url) as rita:
        sign_in(rita, RITA, "Rita")
        expect(rita.locator("#nav-deliveries")).to_have_count(0)  # not an admin
        ask(rita, "transfer 5000 to Ada")
        card = tool_card(rita, "transfer")
        expect(card.locator(".waiting-label")).to_contain_text(WAITING_FOR_FINANCE)
        thread = thread_of(rita)

        # Ada is emailed, once; the webhook is told, signed.
        (mail,) = eventually(lambda: app.mails_to(ADA), "an email to Ada")
        assert mail.rcpt_tos == (ADA,)
        text = mail.part("text/plain")
        assert "transfer" in text and "recipient=Ada, amount=5000" in text
        (link,) = re.findall(r"https?://\S+/c/\S+", text)
        assert link == f"{app.url}/c/{thread}"
        (request,) = eventually(
            lambda: [r for r in app.webhook.accepted if r.json().get("threadId") == thread],
            "the webhook",
        )
        headers = {name.lower(): value for name, value in request.headers.items()}
        assert verify(SECRET.encode(), headers["x-chat-app-timestamp"], request.body,
                      headers["x-chat-app-signature"], now=time.time())  # fmt: skip
        assert request.json()["event"] == "decision-needed"
        assert request.json()["link"] == link

        # A few seconds on, the rule escalates it to admin: Rita's open card says so, live.
        expect(card.locator(".waiting-label")).to_have_text(f"{WAITING_FOR_FINANCE}; {ESCALATED}")
        shot(rita, screenshot_dir, "escalated-card")

        # Olive (admin) finds it in her inbox, escalated, and may approve it on its card.
        with fresh_page(browser, app.url) as olive:
            sign_in(olive, OLIVE, "Olive")
            olive.locator("#nav-inbox").click()
            item = olive.locator(f'.inbox-item[data-thread-id="{thread}"]')
            expect(item.locator(".inbox-escalation")).to_have_text(ESCALATED)
            shot(olive, screenshot_dir, "escalated-inbox")
            item.locator(".inbox-open").click()
            expect(tool_card(olive, "transfer").locator("button.approve")).to_be_visible()
            expect(tool_card(olive, "transfer").locator(".waiting-label")).to_have_count(0)

        # The link, in a browser nobody is signed in to: it grants nothing by itself.
        with fresh_page(browser, app.url) as ada:
            ada.goto(link)
            expect(ada).to_have_url(re.compile(r"/signin\?next=" + re.escape(f"/c/{thread}")))
            sign_in_here(ada, ADA, "Ada")
            expect(ada).to_have_url(link)
            transfer = tool_card(ada, "transfer")
            expect(transfer.locator("button.approve")).to_be_visible()
            shot(ada, screenshot_dir, "ada-from-the-email")
            transfer.locator("button.approve").click()
            expect(ada.get_by_text("Sent 5,000 to Ada. Receipt id: rcpt-")).to_be_visible()
            expect(transfer.locator(".tool-status")).to_have_text("Done")
        expect(card.locator(".tool-status")).to_have_text("Done")  # Rita's page followed

        # Rita's own decision, while her page shows it: the desk holds its notice back (it
        # is due 1 s after the pause, and is put off again at each look while she looks).
        ask(rita, "delete project apollo")
        expect(tool_card(rita, "delete_project").locator("button.approve")).to_be_visible()

        def put_off() -> bool:
            row = app.decision_row(thread, "delete_project")
            return row is not None and row.notify_at - row.created_at > timedelta(seconds=2)

        eventually(put_off, "the requester's notice put off while she looks")
        row = app.decision_row(thread, "delete_project")
        assert row.notified_at is None
        assert app.mails_to(RITA) == []

        # What was sent: one email to Ada, one to Olive (the escalation), nothing to Rita.
        assert len(app.mails_to(ADA)) == 1
        assert len(app.mails_to(OLIVE)) == 1
        assert [body["event"] for body in app.webhooks(thread)] == [
            "decision-needed", "escalated"
        ]  # fmt: skip
        for received in app.webhook.accepted:
            headers = {name.lower(): value for name, value in received.headers.items()}
            assert verify(SECRET.encode(), headers["x-chat-app-timestamp"], received.body,
                          headers["x-chat-app-signature"], now=time.time())  # fmt: skip

        # The Deliveries page is for admins.
        rita.goto("/deliveries")
        hydrated(rita)
        expect(rita.locator("#deliveries-refused")).to_contain_text("for admins")
        expect(rita.locator(".delivery-row")).to_have_count(0)

    with fresh_page(browser, app.url) as olive:
        sign_in(olive, OLIVE, "Olive")
        olive.locator("#nav-deliveries").click()
        expect(olive).to_have_url(re.compile(r"/deliveries$"))
        expect(olive.locator("#deliveries-channels")).to_have_text(
            f"Webhook (signed JSON, to {app.webhook.url.split('/')[2]}) and email to the people "
            f"who decide (from Approvals <approvals@example.com>, through "
            f"{app.smtp.host}:{app.smtp.port})."
        )
        to_ada = olive.locator(
            '.delivery-row[data-channel="email"][data-recipient="ada@example.com"]'
        )
        expect(to_ada).to_have_count(1)
        expect(to_ada).to_have_attribute("data-status", "sent")
        expect(to_ada.locator(".event")).to_have_text("needs a decision")
        expect(to_ada.locator(".status")).to_contain_text("sent")
        expect(to_ada.locator(".attempts")).to_have_text("1")
        expect(to_ada.locator("a.open")).to_have_attribute("href", f"/c/{thread}")
        to_olive = olive.locator('.delivery-row[data-recipient="olive@example.com"]')
        expect(to_olive.locator(".event")).to_have_text("escalated")
        expect(olive.locator('.delivery-row[data-channel="webhook"]')).to_have_count(2)
        shot(olive, screenshot_dir, "deliveries")
        olive.set_viewport_size({"width": 390, "height": 844})  # each delivery a block
        lines = []
        for cell in (".event", ".to", ".status", ".attempts"):
            to_ada.locator(cell).scroll_into_view_if_needed()
            expect(to_ada.locator(cell)).to_be_in_viewport()
            box = to_ada.locator(cell).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, cell
            lines.append(box)
        # One under the other, each named; a cell with nothing to say (no error) left out.
        assert len({box["x"] for box in lines}) == 1
        assert [box["y"] for box in lines] == sorted({box["y"] for box in lines})
        label = "td => getComputedStyle(td, '::before').content"
        assert to_ada.locator(".status").evaluate(label) == '"Status"'
        expect(to_ada.locator('td[data-label="Last error or reason"]')).to_be_hidden()
        assert olive.evaluate("document.documentElement.scrollWidth") <= 390
        shot(olive, screenshot_dir, "deliveries-phone")
        olive.set_viewport_size({"width": 1200, "height": 800})

        # The audit trail names the escalation.
        olive.locator("#nav-audit").click()
        escalated = olive.locator('.audit-row[data-kind="escalated"]').first
        expect(escalated).to_contain_text("Escalated transfer to admin after 4 s")


def test_a_requester_whose_tab_goes_to_the_background_is_emailed(
    browser: Browser, notify_app: NotifyApp
) -> None:
    """Looking holds the requester's own notice back; a tab in the background is not looking
    (the page is asked every few seconds whether it is in view), so the email goes out."""
    app = notify_app

    def mails_about(thread: str) -> list[Mail]:
        return [mail for mail in app.mails_to(RITA) if f"/c/{thread}" in mail.part("text/plain")]

    with fresh_page(browser, app.url) as rita:
        sign_in(rita, RITA, "Rita")
        ask(rita, "delete project apollo")
        expect(tool_card(rita, "delete_project").locator("button.approve")).to_be_visible()
        thread = thread_of(rita)

        def put_off() -> bool:
            row = app.decision_row(thread, "delete_project")
            return row is not None and row.notify_at - row.created_at > timedelta(seconds=2)

        eventually(put_off, "the requester's notice put off while she looks")
        assert mails_about(thread) == []

        # What a browser says of a tab behind another one or of a minimised window.
        rita.evaluate(
            "Object.defineProperty(document, 'visibilityState', "
            "{value: 'hidden', configurable: true})"
        )
        (mail,) = eventually(lambda: mails_about(thread), "the email once the tab is hidden")
        assert "delete_project" in mail.part("text/plain")
        row = app.decision_row(thread, "delete_project")
        assert row.notified_at is not None and row.outcome is None  # told, still undecided


def test_a_requester_not_looking_is_emailed_how_it_ended(
    browser: Browser, notify_app: NotifyApp, screenshot_dir: Path
) -> None:
    """Ada rejects Rita's transfer, with a reason, while Rita's tab is in the background:
    Rita is emailed that it was rejected, by whom and why; the webhook hears `decided`."""
    app = notify_app
    with fresh_page(browser, app.url) as rita:
        sign_in(rita, RITA, "Rita")
        ask(rita, "transfer 5000 to Ada")
        expect(tool_card(rita, "transfer").locator(".waiting-label")).to_be_visible()
        thread = thread_of(rita)
        eventually(lambda: app.watched(thread), "her page said it shows the conversation")
        rita.evaluate(
            "Object.defineProperty(document, 'visibilityState', "
            "{value: 'hidden', configurable: true})"
        )
        eventually(lambda: not app.watched(thread), "her hidden tab no longer counted")

        with fresh_page(browser, app.url) as ada:
            sign_in(ada, ADA, "Ada")
            ada.goto(f"{app.url}/c/{thread}")
            card = tool_card(ada, "transfer")
            card.locator("button.reject").click()
            card.locator('.form-reject [name="reason"]').fill("Not this quarter.")
            card.locator(".form-reject button[type=submit]").click()
            expect(card.locator(".tool-status")).to_have_text("Rejected")

        def told() -> list[Mail]:
            return [mail for mail in app.mails_to(RITA)
                    if mail.part("text/plain").find("Rejected by Ada") >= 0
                    and f"/c/{thread}" in mail.part("text/plain")]  # fmt: skip

        (mail,) = eventually(told, "the email telling Rita how it ended")
        text = mail.part("text/plain")
        assert "Rejected: transfer (recipient=Ada, amount=5000)" in text
        assert "Rejected by Ada: Not this quarter." in text
        assert f"Open the conversation: {app.url}/c/{thread}" in text
        # The webhook is a delivery of its own: it may land after the email.
        [ended] = eventually(
            lambda: [body for body in app.webhooks(thread) if body["event"] == "decided"],
            "the webhook telling the decision",
        )
        assert (ended["outcome"], ended["reason"]) == ("rejected", "Not this quarter.")


def test_the_deliveries_page_says_when_nothing_is_configured(
    browser: Browser, app_url: str
) -> None:
    """The session's app (demo sign-in, no notification settings): Olive is admin there."""
    with fresh_page(browser, app_url) as page:
        page.goto("/deliveries")
        hydrated(page)
        expect(page.locator("#deliveries-refused")).to_contain_text("for admins")  # Rita
        expect(page.locator("#nav-deliveries")).to_have_count(0)
        with page.expect_navigation():
            page.locator("#demo-person").select_option(OLIVE)
        hydrated(page)
        expect(page.locator("#deliveries-channels")).to_have_text(NOTHING_CONFIGURED)
        expect(page.locator("#nav-deliveries")).to_be_visible()
        expect(page.locator("#deliveries-empty")).to_be_visible()
