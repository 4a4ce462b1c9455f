"""An approval given while the ledger's Redis is down, and the requester's Retry once it is back.

The app is served as `make run` serves it, with its ledger in a Redis of its own
(`CHAT_APP_LEDGER_URL`; Reflex keeps its state in memory, so only the ledger goes away). Rita
asks for a transfer that finance decides; the Redis stops; Ada approves it from her inbox.
The desk's continuation cannot start, so nothing runs and nobody is told it was approved.
Rita's card names Ada's answer as held, not a wait for finance; her Retry goes to the desk,
which sends Ada's answer again as Ada's: refused while the Redis is still down (the page says
so), run once when it is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from chat_app.trust.redis_ledger import RedisLedger
from chat_app.ui.audit_state import LEDGER_SILENT
from tests.live_server import free_port
from tests.redis_server import redis_server
from tests.ui.app_server import AppDidNotStart, app_env, copy_app, served_app
from tests.ui.conftest import thread_of
from tests.ui.test_desk_ui import (
    ADA,
    RITA,
    WAITING_FOR_FINANCE,
    asked_and_opened,
    people,
    tool_card,
)

pytestmark = pytest.mark.browser
#: The protocol's words for a continuation that failed before the agent took it.
NOT_STARTED = "Interrupt continuation could not be started."
OLIVE = "olive@example.com"  # an admin: she reads the audit trail
#: What the desk says of a Retry it could not put in the trail.
NOTHING_SENT = (
    "Nothing was sent: the approval ledger could not be reached. Retry once it is back."
)
#: What the agent says of a continuation whose answers the ledger could not record.
LEDGER_DOWN = (
    "Nothing ran: the approval ledger could not be reached to record the answers. "
    "Retry once it is back."
)


@dataclass
class LedgerRedis:
    """The ledger's Redis, which the test stops and starts again on its port and files."""

    workdir: Path
    port: int
    running: ExitStack = field(default_factory=ExitStack)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.running.enter_context(redis_server(self.workdir, port=self.port))

    def stop(self) -> None:
        self.running.close()


@dataclass
class OutageApp:
    url: str
    ledger: LedgerRedis
    log: Path

    def refusals(self) -> int:
        """How often the app has logged that the ledger's Redis refused a connection."""
        return self.log.read_text(errors="replace").count("Connection refused")


@pytest.fixture(scope="module")
def outage_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutageApp]:
    root = tmp_path_factory.mktemp("ledger-outage")
    (root / "redis").mkdir()
    ledger = LedgerRedis(root / "redis", free_port())
    ledger.start()
    try:
        copy_app(root / "app")
        env = app_env()
        env.update(CHAT_APP_LEDGER_URL=ledger.url, CHAT_APP_DATA_DIR=str(root / "data"))
        try:
            log = root / "reflex-run.log"
            with served_app(root / "app", env, log) as (url, _):
                yield OutageApp(url, ledger, log)
        except AppDidNotStart as error:
            pytest.fail(f"The app did not start: {error}", pytrace=False)
    finally:
        ledger.stop()


def test_an_approval_given_while_the_ledger_is_down_is_sent_by_the_requesters_retry(
    browser: Browser, outage_app: OutageApp, screenshot_dir: Path
) -> None:
    with people(browser, outage_app.url, RITA, ADA, OLIVE) as (rita, ada, olive):
        card = asked_and_opened(rita, ada, "transfer 5000 to Ada")
        mine = tool_card(rita, "transfer")
        expect(mine.locator(".waiting-label")).to_contain_text(WAITING_FOR_FINANCE)
        thread = thread_of(rita)

        outage_app.ledger.stop()
        card.locator("button.approve").click()
        # Nothing ran, and Rita is not told it was approved: her card holds Ada's answer for
        # her Retry, and no longer waits for finance (nor offers to withdraw it).
        held = mine.locator(".card-held")
        expect(held).to_have_text("Approved by Ada, not sent: Retry sends it again.")
        expect(mine.locator(".waiting-label")).to_have_count(0)
        expect(mine.get_by_role("button", name="Withdraw")).to_have_count(0)
        expect(rita.get_by_text("Sent 5,000 to Ada")).to_have_count(0)
        expect(rita.locator("#batch-title")).to_have_text("Not sent")
        expect(mine.get_by_text("Awaiting approval")).to_have_count(0)
        expect(mine.get_by_text("Not sent", exact=True)).to_be_visible()  # its badge
        # A message typed meanwhile waits for her Retry, not for finance.
        rita.locator("#composer-input").fill("what time is it")
        rita.locator("#composer-input").press("Enter")
        expect(rita.get_by_text("The decisions are made, but they were not sent")).to_be_visible()
        # Ada's card says the same of her answer, and offers nothing to click again.
        theirs = card.locator(".card-held")
        expect(theirs).to_have_text("Approved by you, not sent: Rita's Retry sends it again.")
        expect(card.locator("button.approve")).to_have_count(0)
        expect(card).not_to_contain_text("Sending…")
        expect(ada.locator("#batch-title")).to_have_text("Not sent")
        ada.screenshot(path=str(screenshot_dir / "ledger-outage-approver.png"))
        # The trail lives in the same Redis: its page says it cannot read it, and why.
        olive.goto("/audit")
        expect(olive.locator("#audit-unreadable")).to_have_text(LEDGER_SILENT)
        expect(olive.get_by_role("columnheader")).to_have_count(0)  # no empty trail under it
        rita.screenshot(path=str(screenshot_dir / "ledger-outage-held.png"))

        expect(rita.locator("#run-error")).to_have_text(LEDGER_DOWN)
        # Still down: the desk, asked to send Ada's answer again, cannot put in the trail who
        # asked (the app logs the ledger's refusal once more), so it sends nothing and says
        # so at once. Ada's answer is still held, and the conversation still failed.
        refused = outage_app.refusals()
        retry = rita.locator("#retry")
        retry.click()
        expect(rita.locator("#run-error")).to_have_text(NOTHING_SENT)
        assert outage_app.refusals() > refused, "the Retry did not reach the desk"
        expect(held).to_be_visible()
        expect(rita.get_by_role("alert").filter(has_text=NOT_STARTED)).to_have_count(1)
        rita.screenshot(path=str(screenshot_dir / "ledger-outage-still-down.png"))
        expect(rita.get_by_text("Already decided")).to_have_count(0)

        outage_app.ledger.start()
        retry.click()
        expect(rita.get_by_text("Sent 5,000 to Ada")).to_have_count(1)
        expect(rita.locator("#composer-input")).to_have_value("what time is it")  # kept
        expect(mine).to_contain_text("Approved by Ada")
        expect(held).to_have_count(0)
        expect(tool_card(ada, "transfer")).to_contain_text("Approved by you")
        rita.screenshot(path=str(screenshot_dir / "ledger-outage-retried.png"))
        olive.locator("#audit-refresh").click()
        expect(olive.locator("#audit-chain")).to_contain_text("Intact")
        expect(olive.locator("#audit-unreadable")).to_have_count(0)
        expect(olive.locator(".audit-row").first).to_be_visible()

    records = RedisLedger(outage_app.ledger.url).records()
    ran = [record for record in records if record.kind == "execution"]
    assert [record.thread_id for record in ran] == [thread]
