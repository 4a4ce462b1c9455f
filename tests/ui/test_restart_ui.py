"""A restart of the app, in Chromium: what a person had typed into a decision form is there
when the page comes back.

The app is served as `make run` serves it (`python -m chat_app.launch`), stopped as an
operator stops it, and started again on the same port (a tab's state is found by the page's
origin and the token in its session storage).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from chat_app.client import INTERRUPTED
from tests.live_server import free_port
from tests.ui.app_server import LAUNCHER, AppDidNotStart, app_env, copy_app, served_app
from tests.ui.conftest import ask, eventually, fresh_page, hydrated, run_ended

pytestmark = pytest.mark.browser

REASON = "Wrong account: this goes to savings"


class Restarted:
    """The app in its own copy and data folder, served on one port each time it is started
    (`serve`), and the tabs' states as it stores them on disk (`saved`)."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.tmp_path = tmp_path
        self.root = tmp_path / "app"
        copy_app(self.root)
        self.env = {**app_env(), "CHAT_APP_DATA_DIR": str(tmp_path / "data"), **env}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    @contextmanager
    def serve(self, log: str, **env: str) -> Iterator[None]:
        """Started with its environment, `env` changed for this start."""
        try:
            with served_app(self.root, {**self.env, **env}, self.tmp_path / log,
                            module=LAUNCHER, port=self.port):  # fmt: skip
                yield
        except AppDidNotStart as error:
            pytest.fail(str(error), pytrace=False)

    def saved(self) -> list[bytes]:
        return [path.read_bytes() for path in (self.root / ".states").glob("*.pkl")]


def test_a_reason_typed_before_a_restart_is_there_after_it(
    browser: Browser, tmp_path: Path, screenshot_dir: Path
) -> None:
    """Rita starts rejecting her transfer and types why; the app is stopped and started
    again: after a reload the form is open with her reason, and submitting it rejects."""
    app = Restarted(tmp_path)

    def stored() -> bool:  # the tab's state, on disk, holds the reason
        return any(REASON.encode() in data for data in app.saved())

    with fresh_page(browser, app.url) as page:
        with app.serve("first.log"):
            page.goto("/")
            hydrated(page)
            ask(page, "transfer 25 to Ada")
            card = page.locator(".approval-card")
            card.locator("button.reject").click()
            card.locator('.form-reject [name="reason"]').fill(REASON)
            eventually(stored, "the reason to be in the tab's state on disk")
        with app.serve("again.log"):
            page.reload()
            hydrated(page)
            reason = page.locator('.approval-card .form-reject [name="reason"]')
            expect(reason).to_have_value(REASON)
            page.screenshot(path=str(screenshot_dir / "restart-reason-kept.png"))
            page.locator(".approval-card .form-reject button[type=submit]").click()
            expect(page.get_by_text(f"Reason: {REASON}.")).to_be_visible()


@pytest.mark.parametrize("before", ["", "refund 20 to order 42"], ids=["new", "stored"])
def test_a_reply_a_restart_cut_is_shown_cut_off_and_retry_runs_it(
    browser: Browser, tmp_path: Path, screenshot_dir: Path, before: str
) -> None:
    """Rita's own reply is streaming in her page when the app is stopped and started again,
    in a new conversation or one stored already (whose lease the stopping app lets go): the
    page says the run was cut off, with Retry, rather than showing the words it had as a
    reply that ended; Retry runs her message again, its reply whole, once."""
    app = Restarted(tmp_path, CHAT_APP_DEMO_TOKEN_DELAY_MS="150")

    def mid_reply() -> bool:  # the tab's state on disk holds the first words, not the end
        return any(b"the ops desk demo agent" in data and b"two people from ops" not in data
                   for data in app.saved())  # fmt: skip

    with fresh_page(browser, app.url) as page:
        with app.serve("first.log"):
            page.goto("/")
            hydrated(page)
            if before:  # a short reply: the conversation is stored once it ends
                ask(page, before)
                expect(page.get_by_text("Refunded 20 to order 42")).to_be_visible()
                page.wait_for_url("**/c/**")
            ask(page, "hello")
            expect(page.locator("#composer-stop")).to_be_visible()
            eventually(mid_reply, "the first words of the reply in the tab's state on disk")
        # Started again with quick words: only the first start's reply had to be caught
        # mid-way.
        with app.serve("again.log", CHAT_APP_DEMO_TOKEN_DELAY_MS="5"):
            page.reload()
            hydrated(page)
            expect(page.locator("#run-error-text")).to_have_text(INTERRUPTED)
            page.screenshot(path=str(screenshot_dir / f"restart-reply-cut-{len(before)}.png"))
            page.locator("#retry-send").click()
            expect(page.locator("#run-error")).to_have_count(0)
            replies = page.locator('.chat-message[data-role="assistant"]')
            expect(replies.last).to_contain_text("two people from ops must approve")
            run_ended(page)
            greetings = replies.filter(has_text="the ops desk demo agent")
            expect(greetings).to_have_count(1)  # the cut words went with the Retry
