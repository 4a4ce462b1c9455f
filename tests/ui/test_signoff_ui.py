"""Who signed off, in Chromium (issue 16, point 7 "in the browser where the browser shows it").

Demo sign-in against the session's app (the demo policy: Rita asks, Ada is finance, Sam and
Olive are ops, Olive is admin): a card someone else decides says who and has no buttons, the
person who may decide it sees it in the same conversation and decides it, the audit page
names them, how they were verified and the rule; a call the policy decides says so; a refused
answer shows on its card and leaves it answerable. Then password sign-in and sign-out, and the
no-sign-in banner, each in an app copy of its own.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Locator, Page, WebSocket, expect

from chat_app.trust.authn import SESSION_EXPIRED, SIGNED_OUT
from tests.ui.app_server import REPO_ROOT, app_env
from tests.ui.conftest import (
    app_copy,
    ask,
    eventually,
    fresh_page,
    hydrated,
    run_ended,
    sign_in_as_demo,
)

pytestmark = pytest.mark.browser

WAITING_FOR_FINANCE = "Waiting for finance — you asked for this, so someone else approves it"
ADA_PASSWORD = "correct horse battery staple"


def tool_card(page: Page, tool: str) -> Locator:
    return page.locator(f'.tool-card[data-tool="{tool}"]').last


def shot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / f"signoff-{name}.png"), full_page=True)


# --- demo sign-in, the session's app -------------------------------------------------------


def test_a_large_transfer_waits_for_finance_and_the_trail_names_who_approved(
    page: Page, screenshot_dir: Path
) -> None:
    ask(page, "transfer 5000 to Ada")
    card = tool_card(page, "transfer")
    expect(card.locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
    expect(card.locator("button.approve")).to_have_count(0)
    expect(card.locator("button.reject")).to_have_count(0)
    expect(page.locator(".batch-bar")).to_have_count(0)  # nothing of Rita's to answer
    shot(page, screenshot_dir, "waiting-for-finance")

    sign_in_as_demo(page, "ada@example.com")
    card = tool_card(page, "transfer")  # the same conversation, now seen by finance
    expect(card.locator(".waiting-label")).to_have_count(0)
    expect(card.locator("button.approve")).to_be_visible()
    shot(page, screenshot_dir, "finance-may-approve")
    card.locator("button.approve").click()
    expect(page.get_by_text("Sent 5,000 to Ada. Receipt id: rcpt-")).to_be_visible()
    expect(card.locator(".tool-status")).to_have_text("Done")
    expect(page.locator(".approval-card")).to_have_count(0)

    sign_in_as_demo(page, "olive@example.com")
    page.locator("#nav-audit").click()
    expect(page.locator("#audit-chain")).to_contain_text("Intact")
    # Newest first: the decision this test made is the first one listed.
    decision = page.locator('.audit-row[data-kind="decision"]').first
    cells = decision.locator("td")
    expect(cells.nth(3)).to_have_text("ada@example.com")  # Who
    expect(cells.nth(4)).to_have_text("demo (finance)")  # Verified by, as what
    expect(cells.nth(5)).to_have_text("large-transfers")  # Rule
    expect(decision).to_contain_text("Approved transfer")
    shot(page, screenshot_dir, "audit-who-verified-rule")


def test_a_small_refund_is_approved_by_the_policy_and_nobody_is_asked(
    page: Page, screenshot_dir: Path
) -> None:
    ask(page, "refund 20 to order 42")
    expect(page.get_by_text("Refunded 20 to order 42")).to_be_visible()
    card = tool_card(page, "refund")
    expect(card.locator(".tool-decided-by")).to_have_text("Approved by policy small-refunds")
    expect(card.locator(".tool-status")).to_have_text("Done")
    expect(page.locator(".approval-card")).to_have_count(0)
    expect(page.locator(".decision")).to_have_count(0)
    shot(page, screenshot_dir, "refund-by-policy")


def test_without_a_rule_the_requester_decides_and_a_refused_answer_stays_answerable(
    page: Page, screenshot_dir: Path
) -> None:
    # No rule matches a small transfer: Rita, who asked, approves it as before the policy.
    ask(page, "transfer 25 to Ada")
    transfer = tool_card(page, "transfer")
    transfer.locator("button.approve").click()
    expect(page.get_by_text("Sent 25 to Ada. Receipt id: rcpt-")).to_be_visible()

    # Key rotation needs two people from ops, neither of them the requester.
    ask(page, "rotate production keys")
    rotate = tool_card(page, "rotate_keys")
    expect(rotate.locator(".waiting-label")).to_have_text(
        "Waiting for ops (2 approvals needed) — you asked for this, so someone else approves it"
    )
    expect(rotate.locator("button.approve")).to_have_count(0)

    # Sam is ops: his approval is the first of two, counted by the desk; he cannot count twice.
    sign_in_as_demo(page, "sam@example.com")
    rotate = tool_card(page, "rotate_keys")
    rotate.locator("button.approve").click()
    expect(rotate.locator(".waiting-label")).to_have_text(
        "You approved (1 of 2); waiting for another approver"
    )
    expect(rotate.locator("button.approve")).to_have_count(0)
    expect(page.get_by_text("Rotated the production keys")).to_have_count(0)
    expect(rotate.locator(".tool-status")).to_have_text("Awaiting approval")
    shot(page, screenshot_dir, "quorum-one-of-two")

    # Olive (ops) gives the second approval: the desk runs it, and the page follows live.
    sign_in_as_demo(page, "olive@example.com")
    rotate = tool_card(page, "rotate_keys")
    rotate.locator("button.approve").click()
    expect(page.get_by_text("Rotated the production keys")).to_be_visible()
    expect(rotate.locator(".tool-status")).to_have_text("Done")

    # Any rejection decides alone.
    sign_in_as_demo(page, "rita@example.com")
    ask(page, "rotate production keys")
    sign_in_as_demo(page, "sam@example.com")
    again = tool_card(page, "rotate_keys").last
    again.locator("button.reject").click()
    # One click gives no reason: none is shown, nor the protocol's stock words as one.
    expect(page.get_by_text("rotate keys was not run; no reason was given.")).to_be_visible()
    expect(again.locator(".tool-status")).to_have_text("Rejected")
    expect(again.locator(".tool-reason")).to_have_count(0)
    expect(page.get_by_text("User declined tool execution")).to_have_count(0)


def test_whoever_asked_can_withdraw_what_only_someone_else_may_approve(
    page: Page, screenshot_dir: Path
) -> None:
    # Ada is the demo's only finance person: her own large transfer nobody else can approve.
    # Without Withdraw her conversation stood still (a new message is refused while it waits).
    sign_in_as_demo(page, "ada@example.com")
    ask(page, "transfer 5000 to Bob")
    card = tool_card(page, "transfer")
    expect(card.locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
    expect(card.locator("button.approve")).to_have_count(0)
    # A message meanwhile is kept, saying what it waits for (not the client's own words).
    ask(page, "and 10 to Sam")
    expect(page.locator("#held-notice")).to_contain_text("a decision someone else makes")
    expect(page.locator("#composer-input")).to_have_value("and 10 to Sam")
    expect(page.locator("#run-error")).to_have_count(0)
    shot(page, screenshot_dir, "withdraw-offered")
    card.locator("button.withdraw").click()
    expect(page.get_by_text("Cancelled: transfer did not run.")).to_be_visible()
    expect(card.locator(".tool-status")).to_have_text("Withdrawn")
    expect(page.locator(".decision")).to_have_count(0)
    expect(page.locator("#held-notice")).to_have_count(0)  # nothing holds it back now
    ask(page, "delete project apollo")  # the conversation goes on
    expect(page.locator(".approval-card button.approve")).to_be_visible()

    # Someone who did not ask sees who decides, and nothing to click.
    tool_card(page, "delete_project").locator("button.cancel").click()
    expect(page.get_by_text("Cancelled: delete project did not run.")).to_be_visible()
    ask(page, "transfer 5000 to Bob")
    expect(tool_card(page, "transfer").locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
    # Someone with no decision in it does not see another person's conversation at all.
    sign_in_as_demo(page, "sam@example.com")
    expect(page.locator("#desk-notice")).to_contain_text("someone else's")
    expect(page.locator(".tool-card")).to_have_count(0)
    expect(page.locator(".suggestion")).to_have_count(0)  # not a new chat of his own
    # The box says whose it is before anything is typed; what is typed stays, unsent.
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", "Only its owner writes here"
    )
    # An address that names no conversation says that, in the notice and in the box alike.
    page.goto("/c/thread-nobody-ever-had")
    expect(page.locator("#desk-notice")).to_contain_text(
        "There is no conversation thread-nobody-ever-had."
    )
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", "No conversation here"
    )
    page.go_back()
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", "Only its owner writes here"
    )
    expect(page.locator("#composer-send")).to_be_disabled()
    # …and looks it (Radix's mark of a disabled button, which gives its gray look).
    expect(page.locator("#composer-send")).to_have_attribute("data-disabled", "true")
    page.locator("#composer-input").fill("hello")
    page.locator("#composer-input").press("Enter")
    expect(page.locator("#composer-input")).to_have_value("hello")
    expect(page.locator('.chat-message[data-role="user"]', has_text="hello")).to_have_count(0)
    page.locator("#composer-input").fill("")
    # An admin sees it, read-only: whose it is, and who decides.
    sign_in_as_demo(page, "olive@example.com")
    expect(page.locator("#read-only-note")).to_contain_text("Ada's conversation")
    expect(tool_card(page, "transfer").locator(".waiting-label")).to_have_text(
        "Waiting for finance"
    )
    expect(tool_card(page, "transfer").locator("button.approve")).to_have_count(0)
    sign_in_as_demo(page, "ada@example.com")
    transfer = tool_card(page, "transfer")
    expect(transfer.locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
    expect(transfer.locator("button.withdraw")).to_be_visible()


# --- password sign-in, an app copy -----------------------------------------------------------


@contextlib.contextmanager
def password_app(
    factory: pytest.TempPathFactory, name: str, **more: str
) -> Iterator[str]:
    """An app with CHAT_APP_AUTH=password (and the settings `more`) and three accounts, Ada
    (finance), Bob and Olive (admin), made beforehand with the command line on the same
    data folder."""
    data = factory.mktemp(f"{name}-data")
    extra = {"CHAT_APP_AUTH": "password", "CHAT_APP_DATA_DIR": str(data), **more}
    env = {**app_env(), **extra}
    for email, person, roles in (("ada@example.com", "Ada", ["--role", "finance"]),
                                 ("bob@example.com", "Bob", []),
                                 ("olive@example.com", "Olive", ["--role", "admin"])):
        added = subprocess.run(
            [sys.executable, "-m", "chat_app", "users", "add", email, *roles,
             "--name", person, "--password-stdin"],
            input=ADA_PASSWORD + "\n", env=env, cwd=REPO_ROOT, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
    with app_copy(factory.mktemp(f"{name}-app"), extra) as url:
        yield url


@pytest.fixture(scope="module")
def password_app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with password_app(tmp_path_factory, "password") as url:
        yield url


def sign_in(page: Page, email: str, name: str) -> None:
    """Sign in on the sign-in page, and wait until the chat has loaded as that person."""
    page.goto("/signin")
    hydrated(page)
    page.locator("#signin-email").fill(email)
    page.locator("#signin-password").fill(ADA_PASSWORD)
    page.locator("#signin-submit").click()
    expect(page).to_have_url(re.compile(r"^[^?]*/$"))
    hydrated(page)
    expect(page.locator("#viewer-name")).to_have_text(name)


def test_whoever_signs_in_next_in_a_tab_does_not_see_the_last_persons_conversation(
    browser: Browser, password_app_url: str
) -> None:
    """Ada signs out with a conversation open and a draft in the box; Bob signs in next in
    the same tab. He starts afresh: an empty chat and an empty box, nothing of hers, not
    even for a moment (the page is watched from before it loads); her conversation stays
    hers, stored."""
    with fresh_page(browser, password_app_url) as page:
        sign_in(page, "ada@example.com", "Ada")
        ask(page, "transfer 25 to Ada")
        expect(page.locator(".approval-card")).to_be_visible()
        page.wait_for_url(re.compile("/c/"))
        hers = page.url
        page.locator("#composer-input").fill("private: the vault code is 4411")
        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/signin\b"))
        page.add_init_script(WATCH_FOR_ADAS)
        sign_in(page, "bob@example.com", "Bob")
        expect(page.locator("#transcript-empty")).to_be_visible()
        expect(page.locator("#composer-input")).to_have_value("")
        expect(page.locator("#desk-notice")).to_have_count(0)
        expect(page.locator(".tool-card")).to_have_count(0)
        assert page.evaluate("window.__adas_shown") == ""

        page.goto(hers)  # hers to see, not his
        hydrated(page)
        expect(page.locator("#desk-notice")).to_contain_text("someone else's")
        expect(page.locator(".tool-card")).to_have_count(0)
        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/signin\b"))
        sign_in(page, "ada@example.com", "Ada")
        page.goto(hers)
        hydrated(page)
        expect(page.locator(".approval-card")).to_be_visible()


def test_signing_out_while_a_reply_streams_stops_it_and_shows_the_next_person_nothing(
    browser: Browser, password_app_url: str
) -> None:
    """Ada signs out while the agent's reply streams (the greeting: 160 tokens, 4 s): her
    run stops, as Stop stops it, and is stored for her; Bob, signing in next in the tab,
    never sees any of it."""
    with fresh_page(browser, password_app_url) as page:
        sign_in(page, "ada@example.com", "Ada")
        ask(page, "hello there")
        expect(page.locator(".chat-message.streaming")).to_contain_text("ops desk")
        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/signin\b"))
        page.add_init_script(WATCH_FOR_ADAS)
        sign_in(page, "bob@example.com", "Bob")
        expect(page.locator("#transcript-empty")).to_be_visible()
        page.wait_for_timeout(1500)  # what is left of her reply's 4 s would have streamed
        assert page.evaluate("window.__adas_shown") == ""
        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/signin\b"))
        sign_in(page, "ada@example.com", "Ada")
        page.locator("#nav-conversations").click()
        expect(page.locator(".conversation-row", has_text="hello there")).to_have_count(1)


#: Notes whether anything of Ada's (her transfer's card, her draft, her greeting) is ever on
#: the page.
WATCH_FOR_ADAS = """
window.__adas_shown = '';
new MutationObserver(() => {
  const box = document.querySelector('#composer-input');
  if (box && box.value.includes('vault')) window.__adas_shown ||= 'draft';
  if (document.querySelector('.tool-card')) window.__adas_shown ||= 'card at ' + location.pathname;
  const log = document.querySelector('#transcript');
  if (log && log.innerText.includes('hello there')) window.__adas_shown ||= 'her message';
}).observe(document, {childList: true, subtree: true, attributes: true});
"""


def test_password_sign_in_and_sign_out(
    browser: Browser, password_app_url: str, screenshot_dir: Path
) -> None:
    with fresh_page(browser, password_app_url) as page:
        page.goto("/")
        expect(page).to_have_url(re.compile(r"/signin\?next=/$"))
        hydrated(page)
        expect(page.locator("#signin-form")).to_be_visible()
        # A first visit is shown the form, not a refusal: there is nothing more to say.
        expect(page.locator("#signin-error")).to_have_count(0)
        expect(page.locator("#sign-out")).to_have_count(0)  # nobody to sign out yet
        expect(page.locator("#nav-inbox")).to_have_count(0)  # each would send them back here

        page.locator("#signin-email").fill("ada@example.com")
        page.locator("#signin-password").fill("not her password")
        page.locator("#signin-submit").click()
        expect(page.locator("#signin-error")).to_have_text("Wrong email or password.")
        expect(page.locator("#signin-email")).to_have_value("ada@example.com")
        # Read once: the refusal and the email leave the address (a reload would show an old
        # refusal again); where to go next stays.
        expect(page).to_have_url(re.compile(r"/signin\?next=/$"))
        expect(page.locator("#signin-form")).to_be_visible()
        assert not [c for c in page.context.cookies() if c["name"] == "chat_app_session"]
        shot(page, screenshot_dir, "signin-wrong-password")
        page.reload()
        hydrated(page)
        expect(page.locator("#signin-form")).to_be_visible()
        expect(page.locator("#signin-error")).to_have_count(0)
        # The address is anyone's to write: a message the app did not seal is not shown (a
        # link could put a phishing line in the app's own red box).
        lure = "Your password expired. Sign in at https://evil.example to reset it."
        page.goto(f"/signin?next=/&email=ada%40example.com&error={quote(lure)}&seal=forged")
        hydrated(page)
        expect(page).to_have_url(re.compile(r"/signin\?next=/$"))  # read: the page loaded
        expect(page.locator("#signin-email")).to_have_value("ada@example.com")
        expect(page.locator("#signin-error")).to_have_count(0)
        expect(page.get_by_text("evil.example")).to_have_count(0)

        page.locator("#signin-email").fill("ada@example.com")
        page.locator("#signin-password").fill(ADA_PASSWORD)
        page.locator("#signin-submit").click()
        expect(page).to_have_url(re.compile(r"^[^?]*/$"))
        hydrated(page)
        expect(page.locator("#viewer-name")).to_have_text("Ada")
        expect(page.locator("#sign-out")).to_be_visible()
        expect(page.locator("#nav-inbox")).to_be_visible()
        expect(page.locator("#composer-input")).to_be_visible()
        expect(page.locator("#auth-error")).to_have_count(0)
        (session,) = [c for c in page.context.cookies() if c["name"] == "chat_app_session"]
        assert session["httpOnly"] is True
        assert session["sameSite"] == "Lax"
        assert page.evaluate("document.cookie").find("chat_app_session") == -1
        shot(page, screenshot_dir, "signed-in-with-password")

        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/signin\b"))
        hydrated(page)
        expect(page.locator("#signin-form")).to_be_visible()
        expect(page.locator("#sign-out")).to_have_count(0)
        assert not [c for c in page.context.cookies() if c["name"] == "chat_app_session"]
        page.goto("/")
        expect(page).to_have_url(re.compile(r"/signin\b"))
        expect(page.locator("#signin-form")).to_be_visible()

        # An Inbox link with its filters, opened signed out, leads there once signed in.
        page.goto("/inbox?tool=transfer")
        expect(page).to_have_url(re.compile(r"/signin\?next=/inbox%3Ftool%3Dtransfer$"))
        hydrated(page)
        page.locator("#signin-email").fill("ada@example.com")
        page.locator("#signin-password").fill(ADA_PASSWORD)
        page.locator("#signin-submit").click()
        expect(page).to_have_url(re.compile(r"/inbox\?tool=transfer$"))
        expect(page.locator(".inbox-filter-tool")).to_have_value("transfer")


def sign_out_in_another_tab(page: Page) -> None:
    """Sign out from a second tab of `page`'s browser, and wait for its sign-in page."""
    other = page.context.new_page()
    other.goto("/")
    hydrated(other)
    other.locator("#sign-out").click()
    expect(other).to_have_url(re.compile(r"/signin\b"))


def test_signing_out_in_one_tab_sends_the_others_to_sign_in(
    browser: Browser, password_app_url: str, screenshot_dir: Path
) -> None:
    """Ada signs out in one tab of her browser. Her other tabs are told by the browser at
    once (a `storage` event, which each page sends to the server to look again) and load
    again as nobody: the sign-in page. Signing in there leads her back to her
    conversation, with what she had typed still in the box and in the card's rejection,
    and the decision to make."""
    with fresh_page(browser, password_app_url) as page:
        sent: list[str] = []
        received: list[list[str]] = []  # per socket, in the order they opened

        def watch(socket: WebSocket) -> None:
            frames: list[str] = []
            received.append(frames)
            socket.on("framesent", lambda f: sent.append(str(f)))
            socket.on("framereceived", lambda f: frames.append(str(f)))

        page.on("websocket", watch)
        sign_in(page, "ada@example.com", "Ada")
        ask(page, "transfer 25 to Ada")
        card = page.locator(".approval-card")
        expect(card.locator("button.approve")).to_be_visible()
        run_ended(page)
        # The address comes once the conversation is stored, a moment after the run ends.
        page.wait_for_url(re.compile("/c/"))
        conversation = page.url
        page.locator("#composer-input").fill("and then 10 to Sam")
        card.locator("button.reject").click()
        card.locator('.form-reject [name="reason"]').fill("Not before Friday")
        # Once typing pauses the form is sent as its draft (the server keeps it).

        def draft_sent() -> bool:
            page.wait_for_timeout(100)  # Playwright hands over the frames while it waits
            return any("Not before Friday" in frame for frame in sent)

        eventually(draft_sent, "the rejection's draft sent")
        inbox = page.context.new_page()
        inbox.goto("/inbox")
        hydrated(inbox)
        expect(inbox.locator("#viewer-name")).to_have_text("Ada")
        sockets_before = len(received)
        sign_out_in_another_tab(page)

        expect(page).to_have_url(re.compile(r"/signin/?\?next=/c/"))
        expect(page.locator("#signin-error")).to_have_text(SIGNED_OUT)
        expect(page.get_by_text("transfer 25 to Ada")).to_have_count(0)
        # Told by the browser, not found at the live loop's next look.
        assert any("storage_changed" in frame for frame in sent)
        # The sign-in page's load was sent nothing of hers (the tab forgot it first).
        hydrated(page)
        after = [frame for frames in received[sockets_before:] for frame in frames]
        assert after, "the sign-in page's own socket"
        for hers in ("transfer 25 to Ada", "and then 10 to Sam", "Not before Friday"):
            assert not any(hers in frame for frame in after), hers
        shot(page, screenshot_dir, "signed-out-in-another-tab")
        expect(inbox).to_have_url(re.compile(r"/signin/?\?next=/inbox"))

        hydrated(page)
        # A refused sign-in here leaves the Inbox tab's sign-in page as it is (what is typed
        # there stays); one that lets her in has it load again, to say who is signed in.
        hydrated(inbox)
        inbox.locator("#signin-email").fill("typed@example.com")
        page.locator("#signin-email").fill("ada@example.com")
        page.locator("#signin-password").fill("not her password")
        page.locator("#signin-submit").click()
        expect(page.locator("#signin-error")).to_be_visible()
        inbox.wait_for_timeout(1000)  # a storage event arrives at once: no load came
        expect(inbox.locator("#signin-email")).to_have_value("typed@example.com")
        hydrated(page)
        page.locator("#signin-password").fill(ADA_PASSWORD)
        page.locator("#signin-submit").click()
        expect(page).to_have_url(conversation)
        hydrated(page)
        expect(page.locator("#viewer-name")).to_have_text("Ada")
        expect(page.locator("#composer-input")).to_have_value("and then 10 to Sam")
        expect(card.locator('.form-reject [name="reason"]')).to_have_value("Not before Friday")
        card.locator("button.approve").click()
        expect(page.get_by_text("Sent 25 to Ada")).to_be_visible()

        # The Inbox tab, still on the sign-in page, finds her signed in again and leads
        # back to where it was.
        hydrated(inbox)
        expect(inbox.locator("#signed-in-as")).to_contain_text("Ada")
        inbox.locator("#signed-in-back").click()
        expect(inbox).to_have_url(re.compile(r"/inbox/?$"))
        expect(inbox.locator("#inbox-total")).to_be_visible()


@contextlib.contextmanager
def bobs_transfer(browser: Browser, url: str, to: str) -> Iterator[Page]:
    """Bob's page, signed in, in his conversation where his transfer of 5000 `to` someone
    waits for finance."""
    with fresh_page(browser, url) as bob:
        sign_in(bob, "bob@example.com", "Bob")
        ask(bob, f"transfer 5000 to {to}")
        expect(tool_card(bob, "transfer").locator(".waiting-label")).to_be_visible()
        expect(bob).to_have_url(re.compile(r"/c/"))
        yield bob


def test_an_empty_chat_tab_signed_out_on_another_device_goes_to_sign_in(
    browser: Browser, password_app_url: str
) -> None:
    """Nothing on Ada's laptop but the chat's greeting when she signs out on her phone: the
    tab goes to the sign-in page all the same, saying why, at its live loop's next look."""
    with fresh_page(browser, password_app_url) as ada:
        sign_in(ada, "ada@example.com", "Ada")
        expect(ada.get_by_text("What can the ops desk do for you?")).to_be_visible()
        with fresh_page(browser, password_app_url) as phone:
            sign_in(phone, "ada@example.com", "Ada")
            phone.locator("#sign-out").click()
            expect(phone).to_have_url(re.compile(r"/signin\b"))
        expect(ada).to_have_url(re.compile(r"/signin/?\?next=/$"))
        expect(ada.locator("#signin-error")).to_have_text(SIGNED_OUT)


def test_a_tab_signed_out_on_another_device_goes_to_sign_in(
    browser: Browser, password_app_url: str, screenshot_dir: Path
) -> None:
    """Bob's large transfer is Ada's to decide, in his conversation, through the desk. She
    starts a rejection on her laptop, then signs out on her phone, which ends her sessions
    everywhere: the laptop's tab finds it at its live loop's next look and goes to the
    sign-in page, saying why, and nothing was decided (Bob's transfer still waits for
    finance). Bob, signing in at the laptop, is not given what she had typed."""
    with bobs_transfer(browser, password_app_url, "Ada") as bob:
        with fresh_page(browser, password_app_url) as ada:
            sign_in(ada, "ada@example.com", "Ada")
            ada.goto(bob.url)
            hydrated(ada)
            card = ada.locator(".approval-card")
            card.locator("button.reject").click()
            card.locator('.form-reject [name="reason"]').fill("Not this account")
            ada.locator("#composer-input").fill("a note to myself")
            with fresh_page(browser, password_app_url) as phone:
                sign_in(phone, "ada@example.com", "Ada")
                phone.locator("#sign-out").click()
                expect(phone).to_have_url(re.compile(r"/signin\b"))

            expect(ada).to_have_url(re.compile(r"/signin/?\?next=/c/"))
            expect(ada.locator("#signin-error")).to_have_text(SIGNED_OUT)
            expect(ada.get_by_text("transfer 5000 to Ada")).to_have_count(0)
            expect(ada.get_by_text("Not this account")).to_have_count(0)
            shot(ada, screenshot_dir, "signed-out-on-another-device")

            # Bob signs in at Ada's laptop, in that tab, back to his own conversation (where
            # her rejection was typed): nothing of hers comes back.
            ada.locator("#signin-email").fill("bob@example.com")
            ada.locator("#signin-password").fill(ADA_PASSWORD)
            ada.locator("#signin-submit").click()
            expect(ada).to_have_url(bob.url)
            hydrated(ada)
            expect(ada.locator("#viewer-name")).to_have_text("Bob")
            expect(tool_card(ada, "transfer").locator(".waiting-label")).to_be_visible()
            expect(ada.locator(".form-reject")).to_have_count(0)
            expect(ada.get_by_text("Not this account")).to_have_count(0)
            expect(ada.locator("#composer-input")).to_have_value("")
        bob.reload()
        hydrated(bob)
        expect(tool_card(bob, "transfer").locator(".waiting-label")).to_be_visible()
        expect(bob.get_by_text("Rejected by Ada")).to_have_count(0)
        expect(bob.get_by_text("Not this account")).to_have_count(0)


class Frames:
    """What the server sent a page over each socket it opened (a page load opens one)."""

    def __init__(self, page: Page) -> None:
        self.sockets: list[list[str]] = []
        self.start = 0
        page.on("websocket", self._watch)

    def _watch(self, socket: WebSocket) -> None:
        frames: list[str] = []
        self.sockets.append(frames)
        socket.on("framereceived", lambda frame: frames.append(str(frame)))

    def mark(self) -> None:
        """From here on, only sockets opened later count (the page's old socket may still
        hear from a live loop while the next page loads)."""
        self.start = len(self.sockets)

    def since(self, page: Page) -> list[str]:
        page.wait_for_timeout(300)  # Playwright hands over the frames while it waits
        return [frame for frames in self.sockets[self.start :] for frame in frames]


def test_a_page_load_is_sent_nothing_of_whoever_left_the_tab(
    browser: Browser, password_app_url: str
) -> None:
    """A page load is sent the tab's whole state, every page's, before a page can look at
    who is there. Ada opened Bob's conversation, then her Inbox, where his transfer waits
    for her: the sign-in page after her sign-out is sent neither, nor a reload of the
    Inbox tab made right after she signed out on her phone (before the page noticed)."""
    with bobs_transfer(browser, password_app_url, "Quentin") as bob:
        with fresh_page(browser, password_app_url) as ada:
            frames = Frames(ada)

            def open_both() -> None:
                sign_in(ada, "ada@example.com", "Ada")
                ada.goto(bob.url)
                hydrated(ada)
                expect(ada.locator(".approval-card")).to_be_visible()
                ada.locator("#nav-inbox").click()
                expect(ada.locator(".inbox-summary").first).to_contain_text("Quentin")

            open_both()
            frames.mark()
            ada.locator("#sign-out").click()
            expect(ada).to_have_url(re.compile(r"/signin\b"))
            hydrated(ada)
            after = frames.since(ada)
            # The load's state went (each page's part where it is not as the page was built:
            # an emptied Inbox is not sent), and nothing of his transfer with it.
            assert any("identity_state" in frame for frame in after), "the sign-in page's load"
            assert not [frame for frame in after if "Quentin" in frame]

            open_both()
            with fresh_page(browser, password_app_url) as phone:
                sign_in(phone, "ada@example.com", "Ada")
                phone.locator("#sign-out").click()
                expect(phone).to_have_url(re.compile(r"/signin\b"))
            frames.mark()
            ada.reload()
            expect(ada).to_have_url(re.compile(r"/signin/?\?next=/inbox"))
            hydrated(ada)
            expect(ada.locator("#signin-error")).to_have_text(SIGNED_OUT)
            after = frames.since(ada)
            assert any("identity_state" in frame for frame in after), "the reload's load"
            assert not [frame for frame in after if "Quentin" in frame]


def test_the_audit_trail_goes_from_a_tab_signed_out_on_another_device(
    browser: Browser, password_app_url: str, screenshot_dir: Path
) -> None:
    """The trail is read once (and at Refresh); its page still looks at who is signed in
    every few seconds, and once Olive signed out on her phone it shows nothing of it. Her
    Inbox in another tab empties too. Each page says why once, in its banner (with the way
    to sign in), and what it would show: not the banner's sentence again."""
    with fresh_page(browser, password_app_url) as laptop:
        sign_in(laptop, "olive@example.com", "Olive")
        ask(laptop, "refund 20 to order 42")  # the policy approves it alone: on the trail
        expect(laptop.get_by_text("Refunded 20")).to_be_visible()
        laptop.locator("#nav-audit").click()
        expect(laptop.locator(".audit-row").first).to_be_visible()
        inbox = laptop.context.new_page()
        inbox.goto(password_app_url + "/inbox")
        expect(inbox.locator("#inbox-problem")).to_have_count(0)
        with fresh_page(browser, password_app_url) as phone:
            sign_in(phone, "olive@example.com", "Olive")
            phone.locator("#sign-out").click()
            expect(phone).to_have_url(re.compile(r"/signin\b"))
        expect(laptop.locator(".audit-row")).to_have_count(0)
        expect(laptop.locator("#auth-error")).to_contain_text(SIGNED_OUT)
        expect(laptop.locator("#audit-refused")).to_have_text("Sign in to read the audit trail.")
        expect(laptop.get_by_text(SIGNED_OUT)).to_have_count(1)
        shot(laptop, screenshot_dir, "audit-signed-out-elsewhere")
        expect(inbox.locator("#auth-error")).to_contain_text(SIGNED_OUT)
        expect(inbox.locator("#inbox-problem")).to_have_text("Sign in to see what waits for you.")
        expect(inbox.get_by_text(SIGNED_OUT)).to_have_count(1)


#: A session that ends while a test watches (its cookie as long: the browser drops it too).
SHORT_SESSION_SECONDS = 15


@pytest.mark.long
def test_a_chat_tab_whose_session_ran_out_says_so_on_the_sign_in_page(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory, screenshot_dir: Path
) -> None:
    """Ada's session runs out while her chat is open. By then the browser has dropped its
    cookie, so a page loaded again would find nobody and say nothing: the tab goes to the
    sign-in page itself, saying her session expired, and leads back with her text."""
    hours = str(SHORT_SESSION_SECONDS / 3600)
    with (
        password_app(tmp_path_factory, "short", CHAT_APP_SESSION_HOURS=hours) as url,
        fresh_page(browser, url) as page,
    ):
        sign_in(page, "ada@example.com", "Ada")
        page.locator("#composer-input").fill("before the session ends")
        expect(page).to_have_url(re.compile(r"/signin/?\?next=/"), timeout=40_000)
        expect(page.locator("#signin-error")).to_have_text(SESSION_EXPIRED)
        shot(page, screenshot_dir, "session-expired")
        page.locator("#signin-email").fill("ada@example.com")
        page.locator("#signin-password").fill(ADA_PASSWORD)
        page.locator("#signin-submit").click()
        expect(page.locator("#viewer-name")).to_have_text("Ada")
        expect(page.locator("#composer-input")).to_have_value("before the session ends")


# --- no sign-in, an app copy -----------------------------------------------------------------


@pytest.fixture(scope="module")
def no_signin_app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("none-data")
    extra = {"CHAT_APP_AUTH": "none", "CHAT_APP_DATA_DIR": str(data)}
    with app_copy(tmp_path_factory.mktemp("none-app"), extra) as url:
        yield url


def test_without_sign_in_the_page_says_anyone_can_approve(
    browser: Browser, no_signin_app_url: str, screenshot_dir: Path
) -> None:
    with fresh_page(browser, no_signin_app_url) as page:
        page.goto("/")
        hydrated(page)
        expect(page.locator("#auth-banner")).to_have_text(
            "No sign-in: anyone who can open this page can approve."
        )
        expect(page.locator("#demo-person")).to_have_count(0)
        expect(page.locator("#sign-out")).to_have_count(0)
        expect(page).not_to_have_url(re.compile(r"/signin\b"))
        shot(page, screenshot_dir, "no-signin-banner")


def test_without_sign_in_a_conversation_opened_in_another_tab_is_still_ones_own(
    browser: Browser, no_signin_app_url: str
) -> None:
    """Everyone is the anonymous visitor: the conversations page lists their conversations,
    and one opened from it elsewhere goes on there, not "someone else's"."""
    with fresh_page(browser, no_signin_app_url) as page:
        page.goto("/")
        hydrated(page)
        ask(page, "what time is it")
        expect(page).to_have_url(re.compile(r"/c/thread-"))
        run_ended(page)
        address = page.url
    with fresh_page(browser, no_signin_app_url) as other:
        other.goto(address)
        hydrated(other)
        expect(other.locator(".chat-message").first).to_contain_text("what time is it")
        expect(other.get_by_text("someone else's")).to_have_count(0)
        ask(other, "tell me a joke")
        expect(other.locator(".chat-message", has_text="tell me a joke")).to_have_count(1)
        run_ended(other)
