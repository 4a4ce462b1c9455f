"""An answer in flight is stored while its continuation runs, not only once the run ends.

The page stores its conversation on the desk after each run and once more as an answer
leaves (`ChatState._follow`): a worker that dies mid-continuation leaves the stored
conversation with the answer in flight, which a page or `Desk.recover` taking it over shows
applied or failed, with Retry, rather than open as if nobody had answered. That write goes on
without holding the page, after the continuation's first words (which do not wait for it);
this checks it still lands early: words stream every 300 ms here, and the stored state shows
the answer in flight while the reply is still streaming.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from chat_app.client import ClientState
from chat_app.ui.state import RUNNING_NOTICE
from tests.ui.conftest import (
    app_with_database,
    ask,
    eventually,
    fresh_page,
    hydrated,
    sign_in_as_demo,
    thread_of,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def slow_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    slow = {"CHAT_APP_DEMO_TOKEN_DELAY_MS": "300"}
    with app_with_database(tmp_path_factory, "in-flight", **slow) as served:
        yield served


@pytest.fixture(scope="module")
def unhurried_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Words every 1.5 s: a continuation's four words leave a test seconds to act while it
    runs, where 300 ms left it under one, which a busy machine's browser can overrun."""
    unhurried = {"CHAT_APP_DEMO_TOKEN_DELAY_MS": "1500"}
    with app_with_database(tmp_path_factory, "unhurried", **unhurried) as served:
        yield served


def stored_states(database: Path, thread: str = "") -> list[ClientState]:
    """The conversations stored on the app's database (`thread`: that one only)."""
    query = "SELECT state FROM conversation_states"
    with sqlite3.connect(database) as connection:
        if thread:
            rows = connection.execute(f"{query} WHERE thread_id = ?", (thread,)).fetchall()
        else:
            rows = connection.execute(query).fetchall()
    return [ClientState.from_json(state) for (state,) in rows]


def delete_approved(page: Page) -> None:
    """A new conversation whose deletion the person approves in their own chat."""
    page.goto("/")
    hydrated(page)
    ask(page, "delete project apollo")
    page.locator(".approval-card button.approve").click()


def test_the_answer_is_stored_in_flight_before_the_reply_ends(
    browser: Browser, slow_app: tuple[str, Path]
) -> None:
    url, database = slow_app
    with fresh_page(browser, url) as page:
        delete_approved(page)
        streaming = page.locator(".chat-message.streaming")
        expect(streaming).to_contain_text("Project", timeout=10_000)

        thread = thread_of(page)
        # Written a flush after the first words: read until it is there, while the reply
        # still streams (so not the run's last write).
        (stored,) = stored_states(database, thread)
        while not stored.resuming and streaming.count():
            page.wait_for_timeout(20)
            (stored,) = stored_states(database, thread)
        assert stored.resuming, "the answer in flight was not stored while the reply streamed"
        assert stored.manager.active_submission is not None
        expect(streaming).to_be_visible()

        expect(page.get_by_text("Project apollo is deleted.")).to_be_visible(timeout=20_000)
        expect(streaming).to_have_count(0)

        # The run's last write follows the reply's end on the page (after the write in
        # flight, if that one is still going).
        def finished() -> ClientState | None:
            (state,) = stored_states(database, thread)
            return None if state.resuming else state

        done = eventually(finished, "the run's last write")
        assert not done.resuming and done.status == "ready"


#: Notes, on every change to the page, whether it ever showed a run error, a Retry, or the
#: reply streaming: what a tab watching a conversation shows while someone else's answer
#: runs in it.
WATCH_FOR_FAILURE = """() => {
  window.__failure_shown = '';
  window.__streaming_shown = false;
  const seen = (selector) => {
    const found = document.querySelector(selector);
    return found !== null && found.checkVisibility({visibilityProperty: true});
  };
  new MutationObserver(() => {
    for (const selector of ['#run-error', '#retry', '#retry-send', '.batch-error']) {
      if (seen(selector)) window.__failure_shown ||= document.querySelector(selector).innerText;
    }
    if (seen('.chat-message.streaming')) window.__streaming_shown = true;
  }).observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


def test_a_tab_watching_an_answer_run_elsewhere_shows_it_running_not_failed(
    browser: Browser, slow_app: tuple[str, Path]
) -> None:
    """Rita's tab is open on her transfer while Ada approves it from her own: the desk runs
    the continuation and stores it as it streams, and Rita's tab shows each stored version.
    A version stored mid-run is a run still going on elsewhere, not a send this tab lost:
    no error, no Retry, the reply streaming, then the reply whole."""
    url, _ = slow_app
    with fresh_page(browser, url) as rita, fresh_page(browser, url) as ada:
        rita.goto("/")
        hydrated(rita)
        ask(rita, "transfer 5000 to Ada")
        card = rita.locator('.tool-card[data-tool="transfer"]').last
        expect(card.locator(".waiting-label")).to_be_visible(timeout=20_000)
        rita.wait_for_url(lambda address: "/c/" in address)
        conversation = rita.url.rsplit("/", 1)[1]
        rita.evaluate(WATCH_FOR_FAILURE)

        ada.goto("/")
        hydrated(ada)
        sign_in_as_demo(ada, "ada@example.com")
        ada.goto(f"/c/{conversation}")
        ada_card = ada.locator('.tool-card[data-tool="transfer"]').last
        ada_card.locator("button.approve").click()

        receipt = rita.get_by_text(re.compile(r"Sent 5,000 to Ada\. Receipt id: rcpt-"))
        expect(receipt).to_be_visible(timeout=30_000)
        assert rita.evaluate("window.__failure_shown") == ""
        assert rita.evaluate("window.__streaming_shown") is True
        expect(rita.locator("#run-error")).to_have_count(0)


def hold_the_lease(database: Path, thread: str, runner: str | None) -> None:
    """Another worker takes the conversation's lease (`None`: lets it go), as the desk's own
    run does before its first stored step."""
    until = "2100-01-01 00:00:00.000000" if runner else None
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE conversations SET runner = ?, runner_until = ? WHERE thread_id = ?",
            (runner, until, thread),
        )


def test_a_message_sent_while_a_run_elsewhere_holds_the_conversation_goes_back_to_the_box(
    browser: Browser, slow_app: tuple[str, Path]
) -> None:
    """The tab had not seen that a run elsewhere took its conversation: its run is refused
    before anything went. It neither shows its message as failed nor stores its copy over
    the other run's: the message goes back into the box, with the reason, to send after."""
    url, database = slow_app
    with fresh_page(browser, url) as page:
        delete_approved(page)
        expect(page.get_by_text("Project apollo is deleted.")).to_be_visible(timeout=20_000)
        expect(page.locator("#composer-send")).to_be_enabled(timeout=20_000)
        thread = thread_of(page)
        before = [(s.messages, s.status) for s in stored_states(database, thread)]
        hold_the_lease(database, thread, "another-worker")
        hello = page.locator('.chat-message[data-role="user"]', has_text="hello")
        try:
            ask(page, "hello")
            expect(page.locator("#desk-notice")).to_contain_text("running on the server")
            expect(page.locator("#desk-notice")).to_contain_text("kept in the box")
            expect(page.locator("#composer-input")).to_have_value("hello")
            expect(page.locator("#run-error")).to_have_count(0)
            expect(hello).to_have_count(0)
            assert [(s.messages, s.status) for s in stored_states(database, thread)] == before
        finally:
            hold_the_lease(database, thread, None)
        page.locator("#composer-input").press("Enter")  # its run is over: it goes now
        expect(hello).to_have_count(1)
        expect(page.locator("#composer-input")).to_have_value("")


def test_enter_during_a_continuation_is_told_why_nothing_went(
    browser: Browser, unhurried_app: tuple[str, Path]
) -> None:
    """A continuation has no Stop, and Send reads as off while it runs; Enter then (or a
    click on Send) still reaches the page, which keeps the message and says why."""
    url, _ = unhurried_app
    with fresh_page(browser, url) as page:
        delete_approved(page)
        expect(page.locator(".chat-message.streaming")).to_contain_text("Project")
        send = page.locator("#composer-send")
        expect(send).to_have_attribute("aria-disabled", "true")
        page.locator("#composer-input").fill("what time is it")
        page.locator("#composer-input").press("Enter")
        expect(page.locator("#held-notice")).to_have_text(RUNNING_NOTICE)
        expect(page.locator("#composer-input")).to_have_value("what time is it")
        page.locator("#composer-input").fill("what time is it now")
        send.click(force=True)  # a click reaches it too (Playwright would wait for "enabled")
        expect(page.locator("#held-notice")).to_have_text(RUNNING_NOTICE)
        expect(page.locator("#composer-input")).to_have_value("what time is it now")
        expect(page.locator(".chat-message.streaming")).to_have_count(1)  # all while it ran
        expect(page.get_by_text("Project apollo is deleted.")).to_be_visible(timeout=20_000)
        expect(send).to_be_enabled(timeout=20_000)
        expect(page.locator("#held-notice")).to_have_count(0)
        sent = page.locator('.chat-message[data-role="user"]', has_text="what time is it")
        expect(sent).to_have_count(0)
        expect(page.locator("#composer-input")).to_have_value("what time is it now")
