"""The approval desk in Chromium: the Inbox and Conversations pages, live across people.

Demo sign-in against the session's app, one browser context per person (the demo policy:
Rita asks, Ada is finance, Sam and Olive are ops, Olive is admin). What one person does
reaches the others' open pages without a reload: a decision appears in the approver's inbox
and the header's count, the approver decides on the conversation's own card, the
requester's chat goes on, and the item leaves the inbox. Other tests share the app, so
each test finds its own items by their conversation's id and counts relative to before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from chat_app.client import ANSWERED_BEFORE
from chat_app.desk import ConversationSummary, DeskStore, InboxItem, SettledRequest, Vote
from chat_app.trust import DEMO_PEOPLE, AuditEntry, Identity, SQLiteLedger
from chat_app.trust.store import open_database
from chat_app.ui.answered import IN_THE_LEDGER, settled_elsewhere, settled_news
from chat_app.ui.conversations_state import ago, conversation_row, expiry, how_long
from chat_app.ui.inbox_state import inbox_row, requester_choices, tool_choices
from chat_app.ui.state import NOTHING_RAN
from tests.ui.conftest import (
    app_with_database,
    ask,
    eventually,
    fresh_page,
    hydrated,
    run_ended,
    sign_in_as_demo,
    thread_of,
)
from tests.ui.test_chat_flows import HeldNews

pytestmark = pytest.mark.browser

RITA, ADA = "rita@example.com", "ada@example.com"
SAM, OLIVE = "sam@example.com", "olive@example.com"
WAITING_FOR_FINANCE = "Waiting for finance — you asked for this, so someone else approves it"


@contextmanager
def signed_in(browser: Browser, app_url: str, email: str) -> Iterator[Page]:
    """A context of its own (its own tab token and cookie) signed in as a demo person."""
    with fresh_page(browser, app_url) as page:
        page.goto("/")
        hydrated(page)
        if email != RITA:  # the demo signs a new visitor in as Rita
            sign_in_as_demo(page, email)
        yield page


@contextmanager
def people(browser: Browser, app_url: str, *emails: str) -> Iterator[list[Page]]:
    with ExitStack() as stack:
        yield [stack.enter_context(signed_in(browser, app_url, email)) for email in emails]


def open_page(page: Page, link: str, ready: str) -> None:
    """Go to a page with the header's link (as a person would), and wait until it has read
    its list."""
    page.locator(link).click()
    expect(page.locator(ready)).to_be_visible()


def open_inbox(page: Page) -> None:
    open_page(page, "#nav-inbox", "#inbox-total")


def open_conversations(page: Page) -> None:
    open_page(page, "#nav-conversations", "#conversation-list, #conversations-empty")


def header_count(page: Page) -> int:
    """The header's pending count (its badge is hidden at 0)."""
    badge = page.locator("#inbox-count")
    return int(badge.inner_text()) if badge.count() else 0


def expect_count(page: Page, count: int) -> None:
    if count:
        expect(page.locator("#inbox-count")).to_have_text(str(count))
    else:
        expect(page.locator("#inbox-count")).to_have_count(0)
    # Read as what the number counts.
    said = f"Inbox, {count} pending" if count else "Inbox"
    expect(page.locator("#nav-inbox")).to_have_accessible_name(said)


def inbox_item(page: Page, thread: str) -> Locator:
    return page.locator(f'.inbox-item[data-thread-id="{thread}"]')


def decided_item(page: Page, thread: str) -> Locator:
    return page.locator(f'.decided-item[data-thread-id="{thread}"]')


def conversation(page: Page, thread: str) -> Locator:
    return page.locator(f'.conversation-row[data-thread-id="{thread}"]')


def texts(page: Page, selector: str) -> list[str]:
    """The text of every element `selector` matches, as they are now."""
    return [text.strip() for text in page.locator(selector).all_inner_texts()]


def tool_card(page: Page, tool: str) -> Locator:
    return page.locator(f'.tool-card[data-tool="{tool}"]').last


def asked_and_waiting(page: Page, text: str, tool: str, other_than: str = "") -> str:
    """The requester asks for `text` and it waits for someone else: its conversation
    (`other_than` the one shown before)."""
    ask(page, text)
    expect(tool_card(page, tool).locator(".waiting-label")).to_be_visible()
    return thread_of(page, other_than=other_than)


def asked_and_opened(requester: Page, approver: Page, text: str) -> Locator:
    """The requester asks for a transfer; the approver opens it from their inbox: its card
    on the approver's page."""
    ask(requester, text)
    thread = thread_of(requester)
    open_inbox(approver)
    inbox_item(approver, thread).locator(".inbox-open").click()
    return tool_card(approver, "transfer")


def new_conversation(page: Page) -> None:
    page.locator("#new-conversation").click()
    expect(page.locator("#transcript-empty")).to_be_visible()


def shot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / f"desk-{name}.png"), full_page=True)


# --- what the rows say (no browser) -----------------------------------------------------------


NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_times_in_words() -> None:
    assert [how_long(s) for s in (0, 59, 60, 300, 3599, 3600, 23.9 * 3600, 50 * 3600)] == [
        "<1 min", "<1 min", "1 min", "5 min", "59 min", "1 h", "23 h", "2 d",
    ]  # fmt: skip
    assert ago(NOW - timedelta(seconds=20), NOW) == "just now"
    assert ago(NOW - timedelta(minutes=2), NOW) == "2 min ago"
    assert expiry(NOW + timedelta(hours=23, minutes=59), NOW) == "in 23 h"
    assert expiry(NOW - timedelta(seconds=1), NOW) == "already passed"
    assert expiry(None, NOW) == "never"


def summary(status: str, **extra: str) -> ConversationSummary:
    return ConversationSummary(
        thread_id="t 1/x", title="transfer 5000 to Ada", status=status,  # type: ignore[arg-type]
        waiting_for=extra.get("waiting_for", ""), owner_email=RITA, owner_name="Rita",
        updated_at=NOW - timedelta(minutes=3), created_at=NOW - timedelta(hours=1),
        error=extra.get("error"),
    )  # fmt: skip


def test_a_conversation_row_says_its_status_and_last_activity() -> None:
    waiting = conversation_row(summary("waiting", waiting_for="Waiting for finance"), NOW)
    assert (waiting.href, waiting.status_label, waiting.error) == (
        "/c/t%201%2Fx", "Waiting for finance", ""
    )  # fmt: skip
    assert (waiting.activity, waiting.activity_title) == (
        "3 min ago", "Last activity 2025-06-01 11:57:00 UTC"
    )  # fmt: skip
    failed = conversation_row(summary("failed", error="The agent did not answer."), NOW)
    assert (failed.status_label, failed.error, failed.status_color) == (
        "Failed", "The agent did not answer.", "red"
    )  # fmt: skip
    assert conversation_row(summary("done"), NOW).status_label == "Done"
    # Gray, not green: the run ended; whether what was asked ran is its last decision's to say.
    assert conversation_row(summary("done"), NOW).status_color == "gray"
    assert conversation_row(summary("running"), NOW).status_label == "Running"
    # A decision no rule governs is whoever asked's: to them it waits for "you".
    own = replace(summary("waiting"), waiting_for="Waiting for Rita", owner_name="Rita",
                  owner_email=RITA)  # fmt: skip
    assert conversation_row(own, NOW, RITA).status_label == "Waiting for you"
    assert conversation_row(own, NOW, OLIVE).status_label == "Waiting for Rita"
    # Done, it says how its latest decision ended (the person looking is "you").
    rejected = item(status="decided", outcome="rejected", decided_by=OLIVE, decided_by_name="Olive")
    done = replace(summary("done"), last_decision=rejected)
    assert conversation_row(done, NOW, RITA).last_decision == "rotate_keys: Rejected by Olive"
    assert conversation_row(done, NOW, OLIVE).last_decision == "rotate_keys: Rejected by you"
    expired = replace(summary("done"), last_decision=item(status="decided", outcome="expired"))
    assert conversation_row(expired, NOW, RITA).last_decision == "rotate_keys: Expired"
    auto = item(status="decided", outcome="auto", rule="small-refunds", name="refund")
    assert conversation_row(replace(summary("done"), last_decision=auto), NOW).last_decision == (
        "refund: Decided by policy small-refunds"  # stored before the verdict was kept
    )
    for verdict, said in ((True, "Approved"), (False, "Rejected")):
        ruled = replace(summary("done"), last_decision=replace(auto, auto_approved=verdict))
        ended = conversation_row(ruled, NOW).last_decision
        assert ended == f"refund: {said} by policy small-refunds"
    question = item(status="decided", outcome="answered", kind="question", rule=None,
                    name="How should order 42 ship?", decided_by=RITA, decided_by_name="Rita")
    answered = replace(summary("done"), last_decision=question)  # its sentence, then the end
    assert conversation_row(answered, NOW, RITA).last_decision == (
        "How should order 42 ship? Answered by you"
    )  # fmt: skip
    asked_again = replace(summary("waiting"), last_decision=rejected)  # its status says it all
    assert conversation_row(asked_again, NOW, RITA).last_decision == ""
    # A pause of several: each end counted, alike ones together, not the latest alone.
    by_rita = {"decided_by": RITA, "decided_by_name": "Rita", "name": "pay_invoice"}
    approved = item(status="decided", outcome="approved", **by_rita)
    edited = item(status="decided", outcome="edited", **by_rita)
    batch = replace(summary("done"), last_decision=edited, last_pause=(approved, rejected, edited))
    assert conversation_row(batch, NOW, OLIVE).last_decision == (
        "pay_invoice, rotate_keys: 1 approved by Rita, 1 rejected by you,"
        " 1 approved with changes by Rita"
    )
    twice = replace(summary("done"), last_decision=approved, last_pause=(approved, approved))
    assert conversation_row(twice, NOW, RITA).last_decision == "pay_invoice ×2: Approved by you"
    alone = replace(summary("done"), last_decision=rejected, last_pause=(rejected,))
    assert conversation_row(alone, NOW, RITA).last_decision == "rotate_keys: Rejected by Olive"
    many = [replace(approved, name=name) for name in ("deploy", "refund", "transfer")]
    listed = replace(summary("done"), last_decision=many[-1], last_pause=(*many, approved))
    assert conversation_row(listed, NOW, RITA).last_decision == "deploy, refund +2: Approved by you"


def item(**extra: object) -> InboxItem:
    fields: dict[str, object] = dict(
        decision_id="d1", thread_id="t1", item_id="i1", kind="tool", name="rotate_keys",
        summary="", args={}, requester_email=RITA, requester_name="Rita", rule="key-rotation",
        waiting_for="Waiting for ops (2 approvals needed)", quorum=2, votes=(),
        status="pending", created_at=NOW - timedelta(minutes=5),
        expires_at=NOW + timedelta(hours=23, minutes=30),
    )  # fmt: skip
    fields.update(extra)
    return InboxItem(**fields)  # type: ignore[arg-type]


def test_a_request_settled_elsewhere_says_how_it_ended_then_which_it_was() -> None:
    rejected = item(status="decided", outcome="rejected", decided_by=OLIVE, decided_by_name="Olive")
    assert settled_elsewhere(SettledRequest(rejected, NOW, "rotate the keys"), RITA) == (
        "Rejected by Olive.", "Your rotate_keys request in “rotate the keys”."
    )  # fmt: skip
    said = SettledRequest(rejected, NOW, "rotate the keys", reason="not this quarter")
    assert settled_elsewhere(said, RITA)[0] == "Rejected by Olive: not this quarter."
    asked = SettledRequest(rejected, NOW, "rotate the keys", reason="Why now?")
    assert settled_elsewhere(asked, RITA)[0] == "Rejected by Olive: Why now?"
    # An expiry says how long nobody decided, as the email and the webhook say it.
    day = NOW - timedelta(minutes=5) + timedelta(days=1)  # from its pause
    expired = item(status="closed", outcome="expired", expires_at=day)
    assert settled_elsewhere(SettledRequest(expired, NOW, ""), RITA) == (
        "Expired: nobody decided within 1 day.",
        "Your rotate_keys request in “Untitled conversation”.",
    )
    question = item(
        status="closed", outcome="answered", kind="question", rule=None,
        name="How should order 42 ship?", decided_by=SAM, decided_by_name="Sam",
    )  # fmt: skip
    assert settled_elsewhere(SettledRequest(question, NOW, "ship order 42"), RITA) == (
        "Answered by Sam.", "The question “How should order 42 ship?” in “ship order 42”."
    )  # fmt: skip


def test_a_decision_committed_late_is_still_news_and_none_is_news_twice() -> None:
    """Each read looks `overlap` back again: a decision whose time (taken before its commit)
    is older than the newest read so far still comes, once."""
    overlap = timedelta(seconds=30)

    def settled(key: str, seconds: int) -> SettledRequest:
        at = NOW + timedelta(seconds=seconds)
        return SettledRequest(replace(item(), decision_id=key), at, "t")

    first, newest, seen = settled_news([settled("a", 10)], NOW, {}, overlap)
    assert ([s.item.decision_id for s in first], newest, set(seen)) == (
        ["a"], NOW + timedelta(seconds=10), {"a"}
    )  # fmt: skip
    # "b" was decided at 5 s but committed after "a" was read: the next read finds it.
    again, newest, seen = settled_news([settled("b", 5), settled("a", 10)], newest, seen, overlap)
    assert [s.item.decision_id for s in again] == ["b"] and newest == NOW + timedelta(seconds=10)
    # Much later, what is older than the overlap is forgotten (no read looks that far back).
    later, newest, seen = settled_news([settled("c", 100)], newest, seen, overlap)
    assert [s.item.decision_id for s in later] == ["c"] and set(seen) == {"c"}


def test_an_inbox_row_says_who_asked_since_when_until_when_and_the_quorum() -> None:
    sam = Identity(email=SAM, method="demo", name="Sam")
    olive = Identity(email=OLIVE, method="demo", name="Olive")
    voted = item(votes=(Vote(SAM, "Sam", True, NOW),))
    row = inbox_row(voted, olive, NOW, yours=True)
    assert (row.href, row.progress, row.waiting_since, row.expires, row.expired) == (
        "/c/t1", "1 of 2: Sam approved", "5 min", "in 23 h", False
    )  # fmt: skip
    assert not row.you_approved
    mine = inbox_row(voted, sam, NOW, yours=True)
    assert (mine.you_approved, mine.progress) == (True, "1 of 2")  # not "Sam approved" to Sam
    three = item(quorum=3, votes=(Vote(SAM, "Sam", True, NOW), Vote(OLIVE, "Olive", True, NOW)))
    assert three.progress_for(OLIVE) == "2 of 3, with Sam"
    assert three.progress_for(RITA) == three.progress == "2 of 3: Sam, Olive approved"
    assert inbox_row(item(), olive, NOW, yours=True).progress == "0 of 2"
    # A question no rule governs waits for whoever asked: to them, for "you".
    question = item(kind="question", rule=None, requester_email=OLIVE, requester_name="Olive",
                    waiting_for="Waiting for Olive", quorum=1)  # fmt: skip
    assert inbox_row(question, olive, NOW, yours=True).waiting_for == "Waiting for you"
    assert inbox_row(question, sam, NOW, yours=False).waiting_for == "Waiting for Olive"
    # An approver reads that it waits for them too, until they have approved; others, for whom.
    assert inbox_row(voted, olive, NOW, yours=True).waiting_for == (
        "You — waiting for ops (2 approvals needed)"
    )
    assert inbox_row(voted, sam, NOW, yours=True).waiting_for == voted.waiting_for
    assert inbox_row(voted, olive, NOW, yours=False).waiting_for == voted.waiting_for
    late = inbox_row(item(expires_at=NOW - timedelta(minutes=1)), olive, NOW, yours=False)
    assert (late.expires, late.expired, late.yours) == ("already passed", True, False)
    assert tool_choices(["transfer", "rotate_keys"], "") == ["rotate_keys", "transfer"]
    assert tool_choices(["rotate_keys"], "deploy") == ["deploy", "rotate_keys"]
    # A request made with sign-in off names nobody: no choice of its own ("" is everyone).
    assert requester_choices([(SAM, "Sam"), (RITA, "Rita"), ("", "Anonymous")], "") == [
        [RITA, "Rita (rita@example.com)"], [SAM, "Sam (sam@example.com)"]
    ]  # fmt: skip
    assert requester_choices([], "x@example.com") == [["x@example.com", "x@example.com"]]


def test_a_past_decision_says_how_it_ended_by_whom_and_when_you_acted() -> None:
    from chat_app.desk import PastDecision
    from chat_app.ui.decided_state import past_row

    approved_at = NOW - timedelta(minutes=3)
    sam_voted = Vote(SAM, "Sam", True, NOW - timedelta(minutes=9))
    quorum = item(status="decided", outcome="approved", decided_by=OLIVE, decided_by_name="Olive",
                  votes=(sam_voted, Vote(OLIVE, "Olive", True, approved_at)))  # fmt: skip
    sams = past_row(PastDecision(quorum, sam_voted.at), SAM, NOW)
    assert (sams.outcome, sams.tone, sams.yours, sams.acted) == (
        "Approved by you and Olive", "green", "", "9 min ago"
    )  # fmt: skip
    assert (sams.href, sams.requester, sams.acted_title) == (
        "/c/t1", "Rita", f"You acted {NOW - timedelta(minutes=9):%Y-%m-%d %H:%M:%S} UTC"
    )  # fmt: skip
    # Olive rejected after Sam's approval: he reads who decided, and what he did.
    vetoed = item(status="decided", outcome="rejected", decided_by=OLIVE,
                  decided_by_name="Olive", votes=(sam_voted,))  # fmt: skip
    row = past_row(PastDecision(vetoed, sam_voted.at), SAM, NOW)
    assert (row.outcome, row.tone, row.yours) == ("Rejected by Olive", "red", "You approved")
    expired = item(status="decided", outcome="expired", votes=(sam_voted,))
    row = past_row(PastDecision(expired, sam_voted.at), SAM, NOW)
    assert (row.outcome, row.tone, row.yours) == ("Expired", "gray", "You approved")
    # Whoever asked, withdrawing their own request.
    withdrawn = item(status="closed", outcome="cancelled", decided_by=RITA, decided_by_name="Rita")
    row = past_row(PastDecision(withdrawn, NOW), RITA, NOW)
    assert (row.outcome, row.requester, row.acted) == ("Withdrawn by you", "you", "just now")
    edited = item(
        status="decided", outcome="edited", decided_by=SAM, decided_by_name="Sam",
        args={"environment": "production"}, edited_args={"environment": "staging"},
    )  # fmt: skip
    row = past_row(PastDecision(edited, NOW), SAM, NOW)
    assert (row.outcome, row.changes) == (
        "Approved with changes by you", "environment: production → staging"
    )  # fmt: skip


# --- in the browser ---------------------------------------------------------------------------


def test_a_decision_reaches_the_approvers_inbox_live_and_leaves_it_once_decided(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        open_inbox(ada)  # before Rita asks: the item must arrive without a reload
        before = header_count(ada)
        ada.evaluate("window.__not_reloaded = true")

        ask(rita, "transfer 5000 to Ada")
        card = tool_card(rita, "transfer")
        expect(card.locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
        thread = thread_of(rita)

        item = inbox_item(ada, thread)
        expect(item).to_be_visible()
        assert ada.evaluate("window.__not_reloaded") is True
        expect(item.locator(".inbox-name")).to_have_text("transfer")
        expect(item.locator(".inbox-summary")).to_have_text("recipient=Ada, amount=5000")
        expect(item.locator(".inbox-requester")).to_have_text("Rita")
        expect(item.locator(".inbox-rule")).to_have_text("large-transfers")
        expect(item.locator(".inbox-waiting-for")).to_have_text(
            "You — waiting for finance"
        )
        expect(item.locator(".inbox-waiting-since")).to_have_text("<1 min")
        expect(item.locator(".inbox-waiting-since")).to_have_attribute("title", re.compile("UTC"))
        expect(item.locator(".inbox-expires")).to_have_text(re.compile(r"^in \d+ h$"))
        expect(item.locator(".quorum-progress")).to_have_count(0)  # one approval decides
        expect_count(ada, before + 1)
        shot(ada, screenshot_dir, "inbox-live-item")

        item.locator(".inbox-open").click()
        expect(ada).to_have_url(re.compile(r"/c/" + re.escape(quote(thread, safe="")) + "$"))
        note = ada.locator("#read-only-note")
        expect(note).to_have_text("Rita's conversation — you decide what is yours to decide here")
        card = tool_card(ada, "transfer")
        expect(card.locator(".waiting-label")).to_have_count(0)
        # Cancel is Rita's withdrawal; Ada says no by rejecting, saying why.
        expect(card.locator("button.reject")).to_be_visible()
        expect(card.locator("button.cancel")).to_have_count(0)
        shot(ada, screenshot_dir, "inbox-opened-card")
        card.locator("button.approve").click()

        receipt = rita.get_by_text(re.compile(r"Sent 5,000 to Ada\. Receipt id: rcpt-"))
        expect(receipt).to_be_visible()  # Rita's chat moved on by itself
        expect_count(ada, before)  # the chat page's own loop keeps the count live
        expect(note).to_have_text("Rita's conversation — nothing here waits for you")

        # "Chat" is Ada's own: not Rita's conversation, which she opened at its address.
        ada.locator("#nav-chat").click()
        expect(ada.locator("#composer-input")).to_be_visible()
        expect(ada.locator("#read-only-note")).to_have_count(0)
        expect(ada.get_by_text("What can the ops desk do for you?")).to_be_visible()
        expect(ada).to_have_url(re.compile(r"/$"))
        ada.go_back()
        expect(ada.locator("#read-only-note")).to_contain_text("Rita's conversation")

        open_inbox(ada)
        expect(inbox_item(ada, thread)).to_have_count(0)
        expect_count(ada, before)

        open_conversations(rita)
        row = conversation(rita, thread)
        expect(row).to_have_attribute("data-status", "done")
        expect(row.locator(".conversation-status")).to_have_text("Done")
        expect(row.locator(".conversation-title")).to_have_text("transfer 5000 to Ada")
        shot(rita, screenshot_dir, "conversations-done")

        sign_in_as_demo(ada, OLIVE)
        ada.locator("#nav-audit").click()
        expect(ada.locator("#audit-chain")).to_contain_text("Intact")
        decision = ada.locator('.audit-row[data-kind="decision"]').first
        cells = decision.locator("td")
        expect(cells.nth(3)).to_have_text(ADA)  # Who
        expect(cells.nth(5)).to_have_text("large-transfers")  # Rule
        expect(decision).to_contain_text("Approved transfer")
        # On a phone each record is a block of its cells, each named by its column: nothing
        # of it is off to the side.
        ada.set_viewport_size({"width": 390, "height": 844})
        expect(ada.locator("#audit-table thead")).to_be_hidden()
        assert cells.nth(5).evaluate("td => getComputedStyle(td, '::before').content") == (
            '"Rule"'
        )
        for cell in (cells.nth(3), cells.nth(5), cells.nth(7)):  # Who, Rule, Hash
            cell.scroll_into_view_if_needed()
            expect(cell).to_be_in_viewport()
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert ada.evaluate("document.documentElement.scrollWidth") <= 390
        shot(ada, screenshot_dir, "audit-phone")


#: Notes, on every change to the page, whether a refund card (only in Ada's own
#: conversation) is on screen on a conversation's address: what the page shows there
#: before the conversation it names has come.
#: Notes whether the page, at the address of the conversation `thread` (the argument), ever
#: shows the viewer's own refund card, or the bar of a conversation of their own (New
#: conversation, without the note that the conversation is someone else's).
WATCH_FOR_OWN_CONVERSATION = """(thread) => {
  window.__own_card_shown = window.__own_bar_shown = false;
  const seen = (selector) => {
    const found = document.querySelector(selector);
    return found !== null && found.checkVisibility({visibilityProperty: true});
  };
  new MutationObserver(() => {
    if (location.pathname !== '/c/' + thread) return;
    if (seen('#transcript .tool-card[data-tool="refund"]')) window.__own_card_shown = true;
    if (seen('#new-conversation') && !seen('#read-only-note')) window.__own_bar_shown = true;
  }).observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


def test_opening_a_conversation_from_the_inbox_never_shows_the_one_before(
    browser: Browser, app_url: str
) -> None:
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        ask(ada, "refund 20 to order 42")  # decided by the policy alone: her own chat
        expect(tool_card(ada, "refund").locator(".tool-status")).to_have_text("Done")
        ask(rita, "transfer 5000 to Ada")
        expect(tool_card(rita, "transfer").locator(".waiting-label")).to_be_visible()
        thread = thread_of(rita)

        open_inbox(ada)
        ada.evaluate(WATCH_FOR_OWN_CONVERSATION, thread)
        inbox_item(ada, thread).locator(".inbox-open").click()
        expect(tool_card(ada, "transfer").locator("button.approve")).to_be_visible()
        expect(ada.locator("#read-only-note")).to_contain_text("Rita's conversation")
        assert ada.evaluate("window.__own_card_shown") is False
        assert ada.evaluate("window.__own_bar_shown") is False
        # Whose it is is said in the message box before anything is typed, and Send is off.
        box, send = ada.locator("#composer-input"), ada.locator("#composer-send")
        expect(box).to_have_attribute("placeholder", "Only Rita writes here")
        expect(send).to_be_disabled()

        # Her own conversation, opened by its address, shows again, hers to write in.
        open_conversations(ada)
        ada.locator(".conversation-title", has_text="refund 20 to order 42").first.click()
        expect(tool_card(ada, "refund")).to_be_visible()
        expect(box).to_have_attribute("placeholder", "Ask the ops desk…")
        expect(send).to_be_enabled()


def test_a_rejection_typed_in_someone_elses_conversation_survives_going_to_chat_and_back(
    browser: Browser, app_url: str
) -> None:
    """Ada starts rejecting Rita's transfer, goes to her own Chat, and comes back: the
    reason she typed is still there (Chat empties the page, not what she had typed)."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        ask(rita, "transfer 5000 to Ada")
        thread = thread_of(rita)
        open_inbox(ada)
        inbox_item(ada, thread).locator(".inbox-open").click()
        card = tool_card(ada, "transfer")
        card.locator("button.reject").click()
        card.locator('.form-reject [name="reason"]').fill("Wrong account")
        # Sent to the server as the form's draft once typing pauses: the tab's own copy,
        # which would bring it back by itself, is let go then.
        held = "sessionStorage.getItem('chat_app_unsent_drafts')"
        eventually(lambda: ada.evaluate(held) is None, "the draft sent")
        ada.locator("#nav-chat").click()
        expect(ada.locator("#read-only-note")).to_have_count(0)
        ada.go_back()
        expect(ada.locator("#read-only-note")).to_contain_text("Rita's conversation")
        reason = tool_card(ada, "transfer").locator('.form-reject [name="reason"]')
        expect(reason).to_have_value("Wrong account")


def test_a_half_written_rejection_keeps_the_keyboard_after_a_reload(
    browser: Browser, app_url: str
) -> None:
    """Ada half-writes a rejection and reloads. The focus goes back into the reason, at
    the end of what she typed (not on Approve, where Enter approved the transfer); closed
    with Escape and opened again, typing goes on after the draft, not before it."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        card = asked_and_opened(rita, ada, "transfer 5000 to Ada")
        card.locator("button.reject").click()
        reason = card.locator('.form-reject [name="reason"]')
        reason.fill("Needs PO")
        held = "sessionStorage.getItem('chat_app_unsent_drafts')"
        eventually(lambda: ada.evaluate(held) is None, "the draft sent")
        ada.reload()
        ada.wait_for_selector('#app-root[data-hydrated="true"]')
        reason = tool_card(ada, "transfer").locator('.form-reject [name="reason"]')
        expect(reason).to_have_value("Needs PO")
        expect(reason).to_be_focused()
        expect(tool_card(ada, "transfer").locator("button.approve")).not_to_be_focused()
        ada.keyboard.type(" 123")
        expect(reason).to_have_value("Needs PO 123")

        ada.keyboard.press("Escape")
        reject = tool_card(ada, "transfer").locator("button.reject")
        expect(reject).to_be_focused()
        ada.keyboard.press("Enter")
        expect(reason).to_be_focused()
        ada.keyboard.type("4")
        expect(reason).to_have_value("Needs PO 1234")
        submit = tool_card(ada, "transfer").locator(".form-reject button[type=submit]")
        for _ in range(5):  # past the reason's counter, if any, to the form's Reject
            ada.keyboard.press("Tab")
            if submit.evaluate("(button) => button === document.activeElement"):
                break
        expect(submit).to_be_focused()
        ada.keyboard.press("Enter")
        expect(tool_card(rita, "transfer").locator(".tool-status")).to_have_text("Rejected")
        expect(tool_card(rita, "transfer")).to_contain_text("Needs PO 1234")
        # Someone else's conversation: nothing to type in it, so the card that says how it
        # went has the keyboard, not the message box.
        expect(ada.locator("#composer-input")).not_to_be_focused()
        expect(tool_card(ada, "transfer")).to_be_focused()


def test_a_decision_opened_from_the_inbox_by_keyboard_takes_the_focus(
    browser: Browser, app_url: str
) -> None:
    """Ada works from her Inbox with the keyboard: Enter on a row's Open puts her on the
    decision's Approve (the card mounts while the conversation loads hidden, when it could
    not take the focus), and Enter there approves it."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        ask(rita, "transfer 5000 to Ada")
        expect(tool_card(rita, "transfer").locator(".waiting-label")).to_be_visible()
        thread = thread_of(rita)
        open_inbox(ada)
        inbox_item(ada, thread).locator(".inbox-open").focus()
        ada.keyboard.press("Enter")
        approve = tool_card(ada, "transfer").locator("button.approve")
        expect(approve).to_be_focused()
        ada.keyboard.press("Enter")
        expect(tool_card(rita, "transfer").locator(".tool-decided-by")).to_have_text(
            "Approved by Ada"
        )


def test_an_approver_edits_only_what_the_rule_lets_change(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    """The demo's large transfers let finance change the amount, not who is paid: Ada's edit
    form for Rita's transfer to Bob holds the amount alone and says why, and what she sends
    pays Bob the lower amount."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        card = asked_and_opened(rita, ada, "transfer 5000 to Bob")
        card.locator("button.edit").click()
        form = card.locator(".form-edit")
        expect(form.locator(".form-note")).to_have_text(
            "Rule large-transfers lets an approver change only Amount."
        )
        expect(form.locator("input:not([type=hidden]), textarea")).to_have_count(1)
        expect(form.locator('input[name="recipient"]')).to_have_count(0)
        form.locator('input[name="amount"]').fill("4000")
        shot(ada, screenshot_dir, "edit-amount-only")
        form.locator("button[type=submit]").click()
        paid = rita.get_by_text(re.compile(r"Sent 4,000 to Bob\. Receipt id: rcpt-"))
        expect(paid).to_be_visible()
        expect(card.locator(".tool-status")).to_have_text("Done")


def test_an_edit_only_the_requester_could_run_is_refused_on_the_card_with_the_draft_kept(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    """Ada, of finance, cuts Rita's transfer of 5,000 down to 500 from her inbox. No rule
    covers 500, so only Rita could run it so: the card says why, Ada's draft stays, nothing
    runs, and her approval as shown then does."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        card = asked_and_opened(rita, ada, "transfer 5000 to Ada")
        card.locator("button.edit").click()
        form = card.locator(".form-edit")
        # A comma is read as typed (a browser's number field would send "5,00" as 500).
        amount = form.locator('input[name="amount"]')
        amount.fill("5,00")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-field="amount"] .field-error')).to_have_text(
            "Use a point for decimals (9.99) and no thousands separators."
        )
        expect(amount).to_have_value("5,00")
        expect(amount).to_have_attribute("inputmode", "decimal")
        amount.fill("500")
        form.locator("button[type=submit]").click()

        expect(card.locator(".decision-error")).to_have_text(
            "Edited, the call falls under no rule: only the person who asked (Rita) runs it so."
        )
        expect(form.locator('input[name="amount"]')).to_have_value("500")  # the draft kept
        shot(ada, screenshot_dir, "edit-refused")
        expect(tool_card(rita, "transfer").locator(".waiting-label")).to_have_text(
            WAITING_FOR_FINANCE
        )

        card.locator("button.approve").click()
        receipt = rita.get_by_text(re.compile(r"Sent 5,000 to Ada\. Receipt id: rcpt-"))
        expect(receipt).to_be_visible()
        expect(rita.get_by_text(re.compile(r"Sent 500 to Ada"))).to_have_count(0)
        # Rita's card names who approved; Ada's, in Rita's conversation, names her part.
        expect(tool_card(rita, "transfer").locator(".tool-decided-by")).to_have_text(
            "Approved by Ada"
        )
        expect(card.locator(".tool-status")).to_have_text("Done")
        expect(card.locator(".tool-decided-by")).to_have_text("Approved by you")

        # The trail holds the refused edit, as Ada's, with what she was told.
        sign_in_as_demo(ada, OLIVE)
        ada.locator("#nav-audit").click()
        refusal = ada.locator('.audit-row[data-kind="refusal"]').first
        expect(refusal).to_contain_text("only the person who asked (Rita) runs it so")
        expect(refusal).to_contain_text("Refused transfer:")  # the tool, not the item's id
        expect(refusal).to_contain_text("large-transfers")  # the rule it was filed under
        expect(refusal.locator("td").nth(3)).to_have_text(ADA)  # Who
        expect(refusal.locator("td").nth(4)).to_have_text("demo (finance)")  # Verified by


def test_an_approval_with_changes_shows_what_changed_to_everyone(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    """Ada cuts Rita's transfer from 5,000 to 4,000 and approves it: both cards keep the
    arguments the model proposed and say what ran instead; Ada's Decided list says so too."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        card = asked_and_opened(rita, ada, "transfer 5000 to Ada")
        thread = thread_of(rita)
        card.locator("button.edit").click()
        form = card.locator(".form-edit")
        form.locator('input[name="amount"]').fill("4000")
        form.locator("button[type=submit]").click()

        sent = rita.get_by_text(re.compile(r"Sent 4,000 to Ada\. Receipt id: rcpt-"))
        expect(sent).to_be_visible()
        mine = tool_card(rita, "transfer")
        expect(mine.locator(".tool-decided-by")).to_have_text("Approved with changes by Ada")
        expect(mine.locator(".tool-change")).to_have_text(["amount: 5000 → 4000"])
        # The JSON folded below is what was proposed, and says so; what ran is above.
        expect(mine.locator(".tool-arguments .fold-summary")).to_have_text("Arguments proposed")
        shot(rita, screenshot_dir, "approved-with-changes")
        # Ada is not told her own name, but what ran is no less worth saying.
        expect(card.locator(".tool-status")).to_have_text("Done")
        expect(card.locator(".tool-change")).to_have_text(["amount: 5000 → 4000"])

        open_page(ada, "#nav-inbox", "#inbox-total")
        open_page(ada, "#inbox-tab-decided", "#decided-list")
        past = decided_item(ada, thread)
        expect(past.locator(".decided-outcome")).to_have_text("Approved with changes by you")
        expect(past.locator(".decided-changes")).to_have_text("Changed: amount: 5000 → 4000")


def test_a_quorum_is_collected_from_the_inbox(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with people(browser, app_url, SAM, OLIVE, RITA) as (sam, olive, rita):
        open_inbox(sam)
        open_inbox(olive)
        ask(rita, "rotate production keys")
        thread = thread_of(rita)

        first = inbox_item(sam, thread)
        expect(first.locator(".quorum-progress")).to_have_text("0 of 2")
        expect(first.locator(".inbox-rule")).to_have_text("key-rotation")
        first.locator(".inbox-open").click()
        card = tool_card(sam, "rotate_keys")
        expect(card.locator("button.approve")).to_be_visible()
        expect(card.locator(".card-quorum-progress")).to_have_text("Approvals: 0 of 2")
        # Each approver approves the arguments as shown: no edit is offered.
        expect(card.locator("button.edit")).to_have_count(0)
        card.locator("button.approve").click()
        expect(card.locator(".waiting-label")).to_have_text(
            "You approved (1 of 2); waiting for another approver"
        )

        second = inbox_item(olive, thread)  # Olive's inbox, open all along
        expect(second.locator(".quorum-progress")).to_have_text("1 of 2: Sam approved")
        expect(rita.get_by_text("Rotated the production keys")).to_have_count(0)
        # Rita, who asked, reads how far it has got on her card.
        expect(tool_card(rita, "rotate_keys").locator(".waiting-label")).to_contain_text(
            "1 of 2: Sam approved"
        )
        shot(olive, screenshot_dir, "inbox-quorum-progress")

        open_inbox(sam)  # approved once, it is not his to give again: gone from his inbox
        expect(inbox_item(sam, thread)).to_have_count(0)
        # Nor among what he decided, until the quorum is complete; his page stays open.
        open_page(sam, "#inbox-tab-decided", "#decided-list, #decided-empty")
        expect(sam.locator("#inbox-tab-decided")).to_have_attribute("aria-current", "page")
        expect(sam.locator("#nav-inbox")).to_have_attribute("aria-current", "page")
        expect(decided_item(sam, thread)).to_have_count(0)
        sam.evaluate("window.__not_reloaded = true")

        second.locator(".inbox-open").click()
        card = tool_card(olive, "rotate_keys")
        # Olive, still to approve, reads on the card too how far it has got.
        expect(card.locator(".card-quorum-progress")).to_have_text(
            "Approvals: 1 of 2: Sam approved"
        )
        card.locator("button.approve").click()
        expect(rita.get_by_text(re.compile("Rotated the production keys"))).to_have_count(1)
        expect(tool_card(rita, "rotate_keys").locator(".tool-status")).to_have_text("Done")
        open_inbox(olive)
        expect(inbox_item(olive, thread)).to_have_count(0)  # decided: in nobody's inbox

        # Olive's approval completed it: it reaches Sam's list without a reload, and hers.
        past = decided_item(sam, thread)
        expect(past.locator(".decided-outcome")).to_have_text("Approved by you and Olive")
        expect(past.locator(".decided-requester")).to_have_text("Rita")
        assert sam.evaluate("window.__not_reloaded") is True
        shot(sam, screenshot_dir, "decided-by-you")
        open_page(olive, "#inbox-tab-decided", "#decided-list")
        expect(decided_item(olive, thread).locator(".decided-outcome")).to_have_text(
            "Approved by Sam and you"
        )
        past.locator(".decided-open").click()
        expect(sam).to_have_url(re.compile(r"/c/" + re.escape(quote(thread, safe="")) + "$"))
        expect(tool_card(sam, "rotate_keys").locator(".tool-status")).to_have_text("Done")


def test_an_admin_reading_a_conversation_sees_whoever_asked_named(
    browser: Browser, app_url: str
) -> None:
    """No rule governs deleting a project: Rita, who asked, decides; Olive (admin) may read
    the conversation and is told whose it is, by name."""
    with people(browser, app_url, RITA, OLIVE) as (rita, olive):
        ask(rita, "delete project apollo")
        expect(tool_card(rita, "delete_project").locator("button.approve")).to_be_visible()
        thread = thread_of(rita)
        olive.goto("/c/" + quote(thread, safe=""))
        hydrated(olive)
        card = tool_card(olive, "delete_project")
        expect(card.locator(".waiting-label")).to_have_text("Waiting for Rita, who decides this")
        expect(card.locator("button.approve")).to_have_count(0)


def test_the_inbox_filters_by_tool_and_requester_and_an_admin_sees_everything(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with people(browser, app_url, RITA, SAM, OLIVE) as (rita, sam, olive):
        rita_keys = asked_and_waiting(rita, "rotate production keys", "rotate_keys")
        new_conversation(rita)
        rita_transfer = asked_and_waiting(rita, "transfer 5000 to Ada", "transfer", rita_keys)
        ask(sam, "rotate production keys")
        expect(tool_card(sam, "rotate_keys").locator(".waiting-label")).to_be_visible()
        sam_keys = thread_of(sam)

        open_inbox(olive)
        expect(inbox_item(olive, rita_keys)).to_be_visible()
        expect(inbox_item(olive, sam_keys)).to_be_visible()
        expect(inbox_item(olive, rita_transfer)).to_have_count(0)  # finance's, not hers

        olive.locator(".inbox-filter-requester").select_option(SAM)
        expect(inbox_item(olive, rita_keys)).to_have_count(0)
        expect(inbox_item(olive, sam_keys)).to_be_visible()
        assert set(texts(olive, ".inbox-item .inbox-requester")) == {"Sam"}
        olive.locator(".inbox-filter-requester").select_option("")
        expect(inbox_item(olive, rita_keys)).to_be_visible()

        switch = olive.locator("#inbox-all")
        expect(switch).to_be_visible()
        switch.click()
        transfer = inbox_item(olive, rita_transfer)
        expect(transfer).to_be_visible()
        not_yours = transfer.locator(".inbox-not-yours")
        expect(not_yours).to_have_text("Not yours to decide: shown among all pending.")
        expect(transfer.locator(".inbox-waiting-for")).to_have_text("Waiting for finance")
        expect(inbox_item(olive, rita_keys).locator(".inbox-not-yours")).to_have_count(0)
        olive.locator(".inbox-filter-tool").select_option("transfer")
        expect(transfer).to_be_visible()
        expect(inbox_item(olive, rita_keys)).to_have_count(0)
        expect(inbox_item(olive, sam_keys)).to_have_count(0)
        expect(olive.locator(".inbox-item")).not_to_have_count(0)
        assert set(texts(olive, ".inbox-item .inbox-name")) == {"transfer"}
        shot(olive, screenshot_dir, "inbox-admin-all-filtered")
        # The address holds the filters: a new tab, or the link sent on, shows the same list.
        expect(olive).to_have_url(re.compile(r"/inbox\?tool=transfer&all=1$"))
        again = olive.context.new_page()
        again.goto(olive.url)
        hydrated(again)
        expect(again.locator(".inbox-filter-tool")).to_have_value("transfer")
        expect(again.locator("#inbox-all")).to_be_checked()
        expect(inbox_item(again, rita_transfer)).to_be_visible()
        expect(inbox_item(again, rita_keys)).to_have_count(0)
        again.close()
        olive.locator(".inbox-filter-requester").select_option(SAM)
        expect(olive.locator("#inbox-empty")).to_contain_text("Nothing pending matches")
        expect(olive).to_have_url(re.compile(r"/inbox\?tool=transfer&requester=sam%40[^&]+&all=1$"))
        olive.locator("#inbox-clear").click()
        expect(inbox_item(olive, rita_keys)).to_be_visible()
        expect(olive).to_have_url(re.compile(r"/inbox\?all=1$"))
        olive.set_viewport_size({"width": 390, "height": 844})  # on a phone, in the dark
        olive.emulate_media(color_scheme="dark")
        shot(olive, screenshot_dir, "inbox-phone-dark")

        open_inbox(sam)  # not an admin: no such switch
        expect(sam.locator(".inbox-filter-tool")).to_be_visible()
        expect(sam.locator("#inbox-all")).to_have_count(0)
        expect(inbox_item(sam, rita_keys)).to_be_visible()
        expect(inbox_item(sam, sam_keys)).to_have_count(0)  # he asked: someone else decides
        # Sent an admin's link, he sees his own list, filtered as it says.
        sam.goto("/inbox?tool=transfer&all=1")
        hydrated(sam)
        expect(sam).to_have_url(re.compile(r"/inbox\?tool=transfer$"))
        expect(sam.locator(".inbox-filter-tool")).to_have_value("transfer")
        expect(sam.locator("#inbox-empty")).to_contain_text("Nothing pending matches")
        expect(inbox_item(sam, rita_keys)).to_have_count(0)
        # A link whose filter no tool could have is said to be unreadable; his stay.
        sam.goto("/inbox?tool=transfer%00")
        expect(sam.locator("#inbox-problem")).to_have_text(
            "The tool filter holds a control character: nothing matches it."
        )
        expect(sam).to_have_url(re.compile(r"/inbox\?tool=transfer$"))
        sam.locator(".inbox-filter-tool").select_option("")
        expect(inbox_item(sam, rita_keys)).to_be_visible()
        expect(sam).to_have_url(re.compile(r"/inbox$"))

        # Leave nothing pending for the tests that follow: whoever asked withdraws.
        for page, thread, tool in (
            (rita, rita_transfer, "transfer"),
            (sam, sam_keys, "rotate_keys"),
            (rita, rita_keys, "rotate_keys"),
        ):
            page.goto(f"/c/{thread}")
            hydrated(page)
            tool_card(page, tool).locator("button.withdraw").click()
            expect(tool_card(page, tool).locator(".tool-status")).to_have_text("Withdrawn")


def test_the_conversations_page_lists_them_newest_first_and_each_has_its_own_address(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with people(browser, app_url, RITA, ADA) as (rita, ada):
        ask(rita, "refund 20 to order 42")
        expect(rita.get_by_text("Refunded 20 to order 42")).to_be_visible()
        refund = thread_of(rita)
        new_conversation(rita)
        ask(rita, "transfer 5000 to Ada")
        expect(tool_card(rita, "transfer").locator(".waiting-label")).to_be_visible()
        transfer = thread_of(rita, other_than=refund)

        open_conversations(rita)
        rows = rita.locator(".conversation-row")
        expect(rows.nth(0)).to_have_attribute("data-thread-id", transfer)  # newest first
        expect(rows.nth(1)).to_have_attribute("data-thread-id", refund)
        waiting, done = conversation(rita, transfer), conversation(rita, refund)
        expect(waiting.locator(".conversation-title")).to_have_text("transfer 5000 to Ada")
        expect(waiting.locator(".conversation-status")).to_have_text("Waiting for finance")
        expect(waiting.locator(".conversation-activity")).to_have_text("just now")
        expect(waiting.locator(".conversation-activity")).to_have_attribute(
            "title", re.compile(r"^Last activity \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
        )
        expect(done.locator(".conversation-title")).to_have_text("refund 20 to order 42")
        expect(done.locator(".conversation-status")).to_have_text("Done")
        shot(rita, screenshot_dir, "conversations")

        # The address opens it on another device once signed in (Ada decides it there), and
        # Rita's open list follows without a reload.
        ada.goto(f"/c/{transfer}")
        hydrated(ada)
        tool_card(ada, "transfer").locator("button.approve").click()
        expect(waiting).to_have_attribute("data-status", "done")
        expect(waiting.locator(".conversation-status")).to_have_text("Done")
        expect(rows.nth(0)).to_have_attribute("data-thread-id", transfer)

        done.locator(".conversation-title").click()
        expect(rita).to_have_url(re.compile(r"/c/" + re.escape(refund) + "$"))
        expect(rita.get_by_text("Refunded 20 to order 42")).to_be_visible()
        rita.reload()
        hydrated(rita)
        expect(rita).to_have_url(re.compile(r"/c/" + re.escape(refund) + "$"))
        expect(rita.get_by_text("Refunded 20 to order 42")).to_be_visible()
        expect(tool_card(rita, "refund").locator(".tool-status")).to_have_text("Done")

        open_conversations(rita)
        rita.locator("#new-conversation").click()
        expect(rita).to_have_url(re.compile(r"/$"))
        expect(rita.locator("#transcript-empty")).to_be_visible()

        # On a phone, in the dark.
        rita.set_viewport_size({"width": 390, "height": 844})
        rita.emulate_media(color_scheme="dark")
        open_conversations(rita)
        shot(rita, screenshot_dir, "conversations-phone-dark")


def test_the_sign_in_page_of_the_demo_lists_its_people(browser: Browser, app_url: str) -> None:
    """`/signin` in the demo: a button per person, which signs in as them and goes on to
    the page asked for (not the password form's "this app does not sign in with a
    password")."""
    with fresh_page(browser, app_url) as page:
        page.goto("/signin?next=/decided")
        hydrated(page)
        people = page.locator(".demo-person-choice")
        expect(people).to_have_count(len(DEMO_PEOPLE))
        for person in DEMO_PEOPLE:
            expect(page.locator(f'.demo-person-choice[data-email="{person.email}"]')).to_be_visible()
        expect(page.locator("#signin-not-password")).to_have_count(0)
        # Where to go is read from the address as the click happens, not from the page's
        # state (which arrives a round trip after the page loads: a quick click went to /).
        page.evaluate("history.replaceState(null, '', '/signin?next=/inbox')")
        with page.expect_navigation():
            page.locator(f'.demo-person-choice[data-email="{ADA}"]').click()
        expect(page).to_have_url(re.compile(r"/inbox/?$"))
        hydrated(page)
        expect(page.locator("#demo-person")).to_have_value(ADA)


def test_a_withdrawal_reaches_the_approvers_open_card(browser: Browser, app_url: str) -> None:
    """Ada has Rita's transfer open; Rita withdraws it: Ada's card stops offering Approve
    without a reload, and says who withdrew it."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        card = asked_and_opened(rita, ada, "transfer 8000 to Ada")
        expect(card.locator("button.approve")).to_be_visible()
        ada.evaluate("window.__not_reloaded = true")

        tool_card(rita, "transfer").locator("button.withdraw").click()
        # Named as the button and the lists name it, on both cards.
        expect(tool_card(rita, "transfer").locator(".tool-status")).to_have_text("Withdrawn")
        expect(tool_card(rita, "transfer").locator(".tool-decided-by")).to_have_text(
            "Withdrawn by you"
        )
        expect(card.locator("button.approve")).to_have_count(0)
        expect(card.locator(".tool-status")).to_have_text("Withdrawn")
        expect(card.locator(".tool-decided-by")).to_have_text("Withdrawn by Rita")
        assert ada.evaluate("window.__not_reloaded") is True


def test_a_row_withdrawn_under_the_keyboard_leaves_the_focus_on_the_list_not_the_next(
    browser: Browser, app_url: str
) -> None:
    """Ada's keyboard is on the Open of Rita's transfer of 5200 when Rita withdraws it: the
    row goes from her Inbox live, and the focus goes to the list (read out by its name), not
    onto the next row's Open, where Enter would open another request. Each Open is named
    with what it asks."""
    with people(browser, app_url, ADA, RITA) as (ada, rita):
        first = asked_and_waiting(rita, "transfer 5100 to Ada", "transfer")
        new_conversation(rita)
        second = asked_and_waiting(rita, "transfer 5200 to Ada", "transfer", other_than=first)
        open_inbox(ada)
        going = inbox_item(ada, second).locator(".inbox-open")
        expect(going).to_have_accessible_name(
            "Open transfer (recipient=Ada, amount=5200) from Rita"
        )
        going.focus()
        tool_card(rita, "transfer").locator("button.withdraw").click()
        expect(inbox_item(ada, second)).to_have_count(0)
        expect(ada.locator("#inbox-list")).to_be_focused()
        expect(inbox_item(ada, first).locator(".inbox-open")).not_to_be_focused()


def test_a_held_message_waits_in_the_box_wherever_its_owner_opens_the_conversation(
    browser: Browser, app_url: str
) -> None:
    """Rita's message, sent while her transfer waits for finance, is kept for her: another
    browser (her laptop, after her phone) opens the conversation with it in the box, saying
    why. Once Ada has approved, Rita sends it from there, once: the phone's box lets it go."""
    with people(browser, app_url, RITA, ADA) as (phone, ada):
        ask(phone, "transfer 6300 to Ada")
        thread = thread_of(phone)
        expect(tool_card(phone, "transfer").locator(".waiting-label")).to_be_visible()
        ask(phone, "and 10 to Sam")
        expect(phone.locator("#held-notice")).to_contain_text(
            "wherever you open this conversation"
        )
        with signed_in(browser, app_url, RITA) as laptop:
            laptop.goto("/c/" + quote(thread, safe=""))
            box = laptop.locator("#composer-input")
            expect(box).to_have_value("and 10 to Sam")
            expect(laptop.locator("#held-notice")).to_contain_text("a decision someone else makes")

            open_inbox(ada)
            inbox_item(ada, thread).locator(".inbox-open").click()
            tool_card(ada, "transfer").locator("button.approve").click()
            expect(laptop.get_by_text(re.compile(r"Sent 6,300 to Ada\."))).to_be_visible()
            expect(laptop.locator("#held-notice")).to_have_count(0)  # nothing holds it back
            expect(box).to_have_value("and 10 to Sam")
            run_ended(laptop)
            box.press("Enter")
            sent = '.chat-message[data-role="user"]'
            expect(laptop.locator(sent, has_text="and 10 to Sam")).to_have_count(1)
            expect(box).to_have_value("")

            expect(phone.locator(sent, has_text="and 10 to Sam")).to_have_count(1)
            expect(phone.locator("#composer-input")).to_have_value("")  # not to be sent twice
        with signed_in(browser, app_url, RITA) as later:
            later.goto("/c/" + quote(thread, safe=""))
            expect(later.locator(sent, has_text="and 10 to Sam")).to_have_count(1)
            expect(later.locator("#composer-input")).to_have_value("")


# --- a click that lost to someone else's, on an app whose database the test reads ------------


@pytest.fixture(scope="module")
def race_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with app_with_database(tmp_path_factory, "race") as served:
        yield served


def test_an_answer_someone_else_beat_says_it_was_not_used(
    browser: Browser, race_app: tuple[str, Path], screenshot_dir: Path
) -> None:
    """Rita withdraws her transfer a moment before Ada's Approve lands (the withdrawal is
    written as the desk writes a decision, so no page hears of it first): Ada is told whose
    answer stands and that hers went nowhere, where she looks; nothing ran."""
    url, database = race_app
    with people(browser, url, RITA, ADA) as (rita, ada):
        card = asked_and_opened(rita, ada, "transfer 5000 to Ada")
        approve = card.locator("button.approve")
        expect(approve).to_be_visible()
        thread = thread_of(rita)
        store = DeskStore(open_database(f"sqlite:///{database}"))
        [pending] = [item for item in store.decisions_of(thread) if item.status == "pending"]
        withdrawn = {"interruptId": pending.item_id, "status": "cancelled"}
        assert store.decide(
            pending.decision_id, email=RITA, name="Rita", outcome="cancelled", answer=withdrawn,
            now=datetime.now(UTC),
        )  # fmt: skip
        store.engine.dispose()

        approve.click()
        # Above the conversation, apart from the card: the card turns to how it ended once
        # the withdrawal is carried, and its own message goes with its buttons.
        notices = ada.locator("#agent-notices")
        expect(notices).to_contain_text(
            "Already decided by Rita (cancelled). Your approval was not used."
        )
        shot(ada, screenshot_dir, "lost-to-another")
        assert "transfer" not in executions(database)
        # It is about that conversation: another one opened in the tab does not show it.
        ada.locator("#new-conversation").click()
        expect(ada).not_to_have_url(re.compile(re.escape(thread)))
        expect(notices).to_have_count(0)


def test_a_withdrawal_an_approval_beat_says_it_was_not_used(
    browser: Browser, race_app: tuple[str, Path], screenshot_dir: Path
) -> None:
    """Ada approves Rita's transfer a moment before Rita's Withdraw lands (the approval is
    written as the desk writes a decision, so Rita's page has not heard of it): Rita is told
    whose answer stands and that her withdrawal went nowhere, and her card turns to how it
    ended, with no failed state left on it; the transfer runs once, as Ada approved it."""
    url, database = race_app
    ran = executions(database).count("transfer")  # the module's app: earlier tests' too
    with people(browser, url, RITA) as [rita]:
        withdrawn_late(rita, database, "transfer 5000 to Ada", ADA, "approved")
        expect(rita.locator("#agent-notices")).to_contain_text(
            "Already decided by Ada (approved). Nothing ran for yours: the card shows the"
            " answer that counted."
        )
        card = tool_card(rita, "transfer")
        expect(card).to_contain_text("Approved by Ada")
        expect(rita.get_by_text(re.compile(r"Sent 5,000 to Ada\."))).to_be_visible()
        expect(card.locator("button.withdraw")).to_have_count(0)
        expect(rita.locator("#run-error-text")).to_have_count(0)
        expect(card).not_to_contain_text("not sent")
        shot(rita, screenshot_dir, "withdrawal-lost")
        assert executions(database).count("transfer") == ran + 1


def test_a_withdrawal_of_ones_own_from_elsewhere_is_not_told_as_lost(
    browser: Browser, race_app: tuple[str, Path]
) -> None:
    """Rita withdrew her transfer in another tab a moment before she clicks Withdraw in this
    one: her withdrawal stands, so this tab shows it, with no notice of an answer lost."""
    url, database = race_app
    ran = executions(database).count("transfer")  # the module's app: earlier tests' too
    with people(browser, url, RITA) as [rita]:
        withdrawn_late(rita, database, "transfer 5100 to Ada", RITA, "cancelled")
        card = tool_card(rita, "transfer")
        expect(card).to_contain_text("Withdrawn by you")
        expect(card.locator("button.withdraw")).to_have_count(0)
        run_ended(rita)
        expect(rita.locator("#agent-notices")).to_have_count(0)
        expect(rita.locator("#run-error-text")).to_have_count(0)
        assert executions(database).count("transfer") == ran


def test_a_click_on_a_card_decided_unseen_names_who_decided(
    browser: Browser, race_app: tuple[str, Path]
) -> None:
    """Rita's page is slow to hear news (its socket's messages held back) when Ada approves
    her transfer from the Inbox: her Withdraw, on the card she still sees open, is told as
    lost, naming Ada, and nothing runs for it (the transfer runs once, Ada's)."""
    url, database = race_app
    ran = executions(database).count("transfer")  # the module's app: earlier tests' too
    with people(browser, url, RITA, ADA) as [rita, ada]:
        card = asked_and_opened(rita, ada, "transfer 5200 to Ada")
        news = HeldNews(rita)  # on the socket of the page as loaded again
        rita.reload()
        hydrated(rita)
        withdraw = tool_card(rita, "transfer").locator("button.withdraw")
        expect(withdraw).to_be_visible()
        run_ended(rita)
        news.hold()
        card.locator("button.approve").click()
        expect(ada.get_by_text(re.compile(r"Sent 5,200 to Ada\."))).to_be_visible()
        withdraw.click()
        rita.wait_for_timeout(1_500)  # the click reaches the server; its answer is held
        news.release()
        # Whichever saw it first, the tab or the desk, names Ada.
        expect(rita.locator("#agent-notices")).to_contain_text(
            re.compile(r"(was approved by Ada|Already decided by Ada \(approved\))\.? .*"
                       + re.escape(NOTHING_RAN))
        )  # fmt: skip
        expect(tool_card(rita, "transfer")).to_contain_text("Approved by Ada")
        assert executions(database).count("transfer") == ran + 1


def test_an_answer_the_ledger_held_from_a_lost_send_ends_the_batch_and_a_message_goes_on(
    browser: Browser, race_app: tuple[str, Path], screenshot_dir: Path
) -> None:
    """The ledger holds Rita's approval already, from a send whose end was lost (a ledger
    that answered too late, a worker that died; written here as the engine writes it): her
    Approve is refused as a replay. The batch is over and says so, where before every click
    read "Already answered, in another tab" for ever; her next message goes on, the call
    left behind reads "No result", and nothing ran."""
    url, database = race_app
    with people(browser, url, RITA) as [rita]:
        ask(rita, "delete project apollo")
        card = tool_card(rita, "delete_project")
        approve = card.locator("button.approve")
        expect(approve).to_be_visible()
        run_ended(rita)
        thread = thread_of(rita)
        store = DeskStore(open_database(f"sqlite:///{database}"))
        [pending] = [item for item in store.decisions_of(thread) if item.status == "pending"]
        store.engine.dispose()
        ledger = SQLiteLedger(database.with_name("ledger.db"))
        answer = {"interruptId": pending.item_id, "decision": "approved"}
        lost = AuditEntry(kind="decision", thread_id=thread, run_id="lost", actor=RITA, data=answer)
        try:
            assert ledger.commit_batch(
                thread_id=thread, interrupt_ids=[pending.item_id], entries=[lost]
            ) == []
        finally:
            ledger.close()

        approve.click()
        expect(rita.locator("#run-error")).to_contain_text(ANSWERED_BEFORE)
        expect(card.locator(".card-held")).to_have_text(IN_THE_LEDGER)
        expect(card.locator("button.approve")).to_have_count(0)
        expect(rita.get_by_text("Already answered, in another tab")).to_have_count(0)
        shot(rita, screenshot_dir, "answered-before")
        ask(rita, "what time is it")
        expect(rita.get_by_text("where you are")).to_be_visible()
        left = rita.locator('.tool-card[data-tool="delete_project"]').first
        expect(left.locator(".tool-status")).to_have_text("No result")
        rita.reload()
        hydrated(rita)
        expect(left.locator(".tool-status")).to_have_text("No result")
        assert "delete_project" not in executions(database)


def test_a_batch_decided_in_part_at_the_desk_is_finished_from_the_chat(
    browser: Browser, race_app: tuple[str, Path], screenshot_dir: Path
) -> None:
    """Rita decided two of her three invoices from the desk (its API, as her Inbox does; the
    desk holds those answers until the batch is complete): her chat shows them decided, live,
    with nothing to click and no Approve all, and her Approve of the third goes to the desk,
    which sends the batch. It was staged in the tab, which waited for the two it still took
    for open: nothing went."""
    url, database = race_app
    with people(browser, url, RITA) as [rita]:
        ask(rita, "pay invoices")
        expect(rita.locator(".approval-card button.approve")).to_have_count(3)
        run_ended(rita)
        thread = thread_of(rita)
        store = DeskStore(open_database(f"sqlite:///{database}"))
        try:
            pending = sorted(store.decisions_of(thread), key=lambda i: str(i.args["invoice"]))
        finally:
            store.engine.dispose()
        for item in pending[:2]:
            status = rita.evaluate(
                """async (id) => (await fetch(`/api/inbox/${id}`, {method: 'POST',
                     headers: {'Content-Type': 'application/json'},
                     body: JSON.stringify({approved: true})})).status""",
                item.decision_id,
            )
            assert status == 200
        decided = rita.locator('.tool-card[data-tool="pay_invoice"] .tool-status')
        expect(decided.filter(has_text="Decided")).to_have_count(2)
        expect(rita.locator(".approval-card button.approve")).to_have_count(1)
        expect(rita.locator("#approve-all")).to_have_count(0)
        expect(rita.locator("#batch-title")).to_have_count(0)  # one left: no batch bar
        shot(rita, screenshot_dir, "batch-decided-in-part")
        rita.locator(".approval-card button.approve").click()
        expect(rita.get_by_text(re.compile(r"Paid INV-1003"))).to_be_visible()
        expect(rita.get_by_text(re.compile(r"Paid INV-1001"))).to_be_visible()


def withdrawn_late(rita: Page, database: Path, text: str, email: str, outcome: str) -> None:
    """Rita asks for `text`; `email` decides it (`decided_meanwhile`) while her card still
    offers Withdraw, which she then clicks."""
    ask(rita, text)
    withdraw = tool_card(rita, "transfer").locator("button.withdraw")
    expect(withdraw).to_be_visible()
    run_ended(rita)
    decided_meanwhile(database, thread_of(rita), email, outcome)
    withdraw.click()


def decided_meanwhile(database: Path, thread: str, email: str, outcome: str) -> None:
    """The conversation's pending decision decided by `email`, written as the desk writes a
    decision (so no page hears of it first): Ada approving, or Rita withdrawing."""
    store = DeskStore(open_database(f"sqlite:///{database}"))
    try:
        [pending] = [i for i in store.decisions_of(thread) if i.status == "pending"]
        entry: dict[str, Any] = {"interruptId": pending.item_id, "status": outcome}
        if outcome == "approved":
            entry = {"interruptId": pending.item_id, "status": "resolved", "payload": True}
        person = {ADA: ("Ada", ["finance"]), RITA: ("Rita", [])}[email]
        assert store.decide(
            pending.decision_id, email=email, name=person[0], outcome=outcome, answer=entry,
            now=datetime.now(UTC), vote=dict(email=email, name=person[0], verified_by="demo",
            token_name="", roles=person[1], approved=outcome == "approved", answer=entry),
        )  # fmt: skip
    finally:
        store.engine.dispose()


#: A reason longer than a phone's two lines, with a link longer than a wide screen's line.
REASON = (
    "Not this quarter: the budget for transfers to staff is spent until January, see "
    "https://wiki.example.com/finance/" + "budgets2026q4stafftransfers" * 8
)
#: Whether an element's words run past the right edge of the box `selector` names around
#: it (a word that does not break): measured on the text itself, not the element's box.
OVERFLOWS = """(e, selector) => {
  const range = document.createRange();
  range.selectNodeContents(e);
  const box = e.closest(selector).getBoundingClientRect();
  return range.getBoundingClientRect().right > box.right + 1;
}"""


def test_a_request_settled_in_another_conversation_is_told_with_a_link_to_it(
    browser: Browser, race_app: tuple[str, Path], screenshot_dir: Path
) -> None:
    """Rita asks for four transfers, one in each of four conversations. Ada approves the one
    Rita looks at (its card says so; nothing more), rejects one with a reason and approves
    the other two: Rita's page says how each ended, where; it dismisses one and opens another
    from the keyboard. Whoever is at the tab next is shown none of it."""
    # An app of this module's own: other tests' requests of Rita's, settled meanwhile on the
    # shared one, would be her news too.
    with people(browser, race_app[0], RITA, ADA) as (rita, ada):
        threads: list[str] = []
        for amount in (6000, 6100, 6300, 6200):
            if threads:
                new_conversation(rita)
            ask(rita, f"transfer {amount} to Ada")
            threads.append(thread_of(rita, other_than=threads[-1] if threads else ""))
            expect(tool_card(rita, "transfer").locator(".waiting-label")).to_be_visible()
        rejected, approved, extra, shown = threads
        rita.evaluate("window.__not_reloaded = true")
        told = rita.locator("#settled-requests .settled-request")

        for thread in (shown, rejected, approved, extra):
            open_inbox(ada)
            inbox_item(ada, thread).locator(".inbox-open").click()
            card = tool_card(ada, "transfer")
            if thread == rejected:
                card.locator("button.reject").click()
                card.locator('.form-reject [name="reason"]').fill(REASON)
                card.locator(".form-reject button[type=submit]").click()
            else:
                card.locator("button.approve").click()
            expect(card.locator(".tool-decided-by")).to_be_visible()
            if thread == shown:  # the conversation Rita looks at: its card tells her
                expect(rita.get_by_text(re.compile(r"Sent 6,200 to Ada\."))).to_be_visible()
                expect(told).to_have_count(0)

        expect(told.locator(".settled-text")).to_have_text([
            f"Rejected by Ada: {REASON}. Your transfer request in “transfer 6000 to Ada”.",
            "Approved by Ada. Your transfer request in “transfer 6100 to Ada”.",
            "Approved by Ada. Your transfer request in “transfer 6300 to Ada”.",
        ])  # fmt: skip
        # Ada's "Decided by you" says why she rejected it.
        open_page(ada, "#nav-inbox", "#inbox-total")
        open_page(ada, "#inbox-tab-decided", "#decided-list")
        expect(decided_item(ada, rejected).locator(".decided-reason")).to_have_text(
            f"Reason: {REASON}"
        )
        expect(decided_item(ada, approved).locator(".decided-reason")).to_have_count(0)
        assert rita.evaluate("window.__not_reloaded") is True
        for row in told.locator(".settled-text").all():  # the link breaks, in the notice
            assert row.evaluate(OVERFLOWS, ".settled-request") is False
        shot(rita, screenshot_dir, "settled-elsewhere")
        # On a phone each row is at most two lines of words, how it ended first; tapped, the
        # words show whole (a reason is read where it is told), and short again.
        rita.set_viewport_size({"width": 390, "height": 844})
        lines = "e => e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)"
        for row in told.locator(".settled-text").all():
            assert row.evaluate(lines) <= 2.05
        shot(rita, screenshot_dir, "settled-elsewhere-phone")
        reason = told.locator(".settled-text").first
        cut = "e => e.scrollHeight > e.clientHeight + 1"
        assert reason.evaluate(cut) is True
        reason.click()
        assert reason.evaluate(cut) is False and reason.evaluate(lines) > 2.5
        shot(rita, screenshot_dir, "settled-elsewhere-phone-whole")
        reason.click()
        assert reason.evaluate(lines) <= 2.05
        rita.set_viewport_size({"width": 1200, "height": 800})

        # Dismissed from the keyboard, the keyboard goes on to the conversation shown.
        dismissing = "Dismiss: Your transfer request in “transfer 6300 to Ada”."
        told.get_by_role("button", name=dismissing).press("Enter")
        expect(told).to_have_count(2)
        expect(rita.locator("#transcript")).to_be_focused()

        opening = "Open: Your transfer request in “transfer 6100 to Ada”."
        told.get_by_role("link", name=opening).press("Enter")
        expect(rita).to_have_url(re.compile(r"/c/" + re.escape(quote(approved, safe="")) + "$"))
        expect(rita.locator("#transcript")).to_be_focused()  # the keyboard goes on there
        expect(rita.get_by_text(re.compile(r"Sent 6,100 to Ada\."))).to_be_visible()
        # Its card says it now; the other stays until dismissed or opened.
        expect(told).to_have_count(1)
        expect(told).to_contain_text("transfer 6000 to Ada")
        # The rejected request's card, on a phone: the reason's link breaks inside the card.
        rita.set_viewport_size({"width": 390, "height": 844})
        rita.goto(f"/c/{quote(rejected, safe='')}")
        reason_line = tool_card(rita, "transfer").locator(".tool-reason")
        expect(reason_line).to_contain_text("budgets2026q4")
        assert reason_line.evaluate(OVERFLOWS, ".tool-card") is False
        rita.set_viewport_size({"width": 1200, "height": 800})

        sign_in_as_demo(rita, SAM)
        assert told.count() == 0  # gone as the page shows Sam, not at its next look


def executions(database: Path) -> list[str]:
    """The tools the app's ledger says ran (its audit trail's execution records)."""
    ledger = SQLiteLedger(database.with_name("ledger.db"))
    try:
        records = ledger.records()
    finally:
        ledger.close()
    return [r.data.get("toolName", "") for r in records if r.kind == "execution"]


def test_the_keyboard_skips_the_header_to_the_pages_content(browser: Browser, app_url: str) -> None:
    """The first Tab on a page reaches "Skip to content", shown only then; Enter on it puts
    the focus at the start of the page's own content, and the next Tab goes on from there,
    past the header's links. The page is not loaded again."""
    with signed_in(browser, app_url, ADA) as ada:
        ada.goto("/inbox")
        hydrated(ada)
        expect(ada.locator("#inbox-total")).to_be_visible()
        skip = ada.locator("a.skip-link")
        box = skip.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 0  # out of sight
        ada.keyboard.press("Tab")
        expect(skip).to_be_focused()
        box = skip.bounding_box()
        assert box is not None and box["y"] >= 0  # shown while focused
        ada.evaluate("window.__kept = true")
        ada.keyboard.press("Enter")
        expect(ada.locator("#main")).to_be_focused()
        ada.keyboard.press("Tab")
        inside = ada.evaluate(
            "() => document.getElementById('main').contains(document.activeElement)"
        )
        assert inside, ada.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
        assert ada.evaluate("window.__kept === true")  # the same page, not loaded again
        assert "#" not in ada.url, ada.url  # nor its address changed


#: Starts `count` conversations as the page's person, the first alone, then six at a time:
#: `POST /api/conversations` with the page's own cookie (same origin), each a transfer of
#: 5001, 5002, … waiting for finance.
START_TRANSFERS = """async (count) => {
  const start = (i) => fetch("/api/conversations", {
    method: "POST", credentials: "include", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({message: `transfer ${5001 + i} to Bob`})}).then((r) => r.status);
  const statuses = [await start(0)];  // the oldest, for certain
  for (let i = 1; i < count; i += 6) {
    const group = [];
    for (let j = i; j < Math.min(i + 6, count); j++) group.push(start(j));
    statuses.push(...await Promise.all(group));
  }
  return statuses;
}"""


def test_the_inbox_shows_the_newest_hundred_then_more_on_asking(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory, screenshot_dir: Path
) -> None:
    """More pending than the list's first page (100, newest first): it says it shows the
    newest, and Show more brings the older ones, the oldest (first to escalate and expire)
    among them. Live updates keep the longer list."""
    with (
        app_with_database(tmp_path_factory, "more") as (url, _),
        people(browser, url, RITA, ADA) as (rita, ada),
    ):
        assert rita.evaluate(START_TRANSFERS, 102) == [201] * 102
        open_page(ada, "#nav-inbox", "#inbox-list")
        items = ada.locator(".inbox-item")
        expect(ada.locator("#inbox-total")).to_have_text(
            "Showing the newest 100 of 102 pending", timeout=60_000
        )
        expect(items).to_have_count(100)
        expect(items.filter(has_text="amount=5001")).to_have_count(0)  # the oldest
        more = ada.locator("#inbox-more")
        expect(more).to_have_text("Show 2 more")
        more.click()
        expect(ada.locator("#inbox-total")).to_have_text("102 pending")
        expect(items).to_have_count(102)
        expect(items.last).to_contain_text("amount=5001")
        expect(more).to_have_count(0)
        # One more from Rita: the list, read again live, keeps its length and says so.
        assert rita.evaluate(START_TRANSFERS, 1) == [201]
        expect(ada.locator("#inbox-total")).to_have_text("103 pending")
        expect(items).to_have_count(103)
        shot(ada, screenshot_dir, "inbox-shown-more")
        # Another list (a filter) starts again at its first page.
        ada.locator(".inbox-filter-tool").select_option("transfer")
        expect(ada.locator("#inbox-total")).to_have_text("Showing the newest 100 of 103 pending")
        expect(more).to_have_text("Show 3 more")


def test_the_header_keeps_its_shape_from_page_to_page(browser: Browser, app_url: str) -> None:
    """An admin's header holds every page's link: going from page to page of one width, it
    keeps its height and its links their places (the page shown is underlined, not bolder:
    a bolder link is wider, and the header wrapped on one page and not the next)."""
    with signed_in(browser, app_url, OLIVE) as olive:
        olive.set_viewport_size({"width": 1200, "height": 800})
        shapes = []
        for link in ("#nav-conversations", "#nav-inbox", "#nav-chat"):
            olive.locator(link).click()
            expect(olive.locator(link)).to_have_attribute("aria-current", "page")
            shapes.append(olive.locator("#header nav").evaluate(
                "nav => [nav.closest('header').offsetHeight,"
                " ...[...nav.querySelectorAll('a')].map((a) => Math.round(a.offsetLeft))]"
            ))  # fmt: skip
        assert shapes[0] == shapes[1] == shapes[2], shapes
