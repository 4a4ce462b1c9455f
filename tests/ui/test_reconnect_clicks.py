"""Clicks are never lost: a decision clicked while the tab's worker dies or is down.

A copy of the app runs as deployed with several workers (`python -m chat_app.launch`, Reflex
state and the ledger in Redis), here with ONE worker, so the test decides when the app is up:
it SIGKILLs the worker, and to hold the app down it first stops (SIGSTOP) the supervisor that
would respawn it.

What a tab goes through (Reflex 0.10.1): its socket closes; the frontend keeps the events of
clicks made meanwhile in its queue and sends them once it has connected again; the dead
worker's socket record outlives it in Redis, so the reconnecting tab is given a NEW client
token with an empty state (reflex-dev/reflex#6345) and the page takes the conversation over
from the old token's state (`ChatState.shown_under`). A queued click reaches the new token
before the page's `on_load` does.

Three ways a click used to be lost, each reproduced here deterministically:

- clicked as the worker died (`page.route_web_socket` swallows the click's frame, as a socket
  that is already dead does, then the worker is killed): the server never saw it, and the card
  came back awaiting approval with nothing said (in the 50-tab test, a tab whose renderer had
  not yet seen its socket close when the test clicked would wait for its receipt in vain);
- clicked while the app was down (Cancel, Approve all, Cancel all): the queued event reached
  the new token's empty state before the conversation was taken over, found nothing to
  answer, and the tab lost its whole conversation ("InterruptManager is not hydrated.");
- answered just before the worker died while applying it: the conversation taken over showed
  the card open again (or, restored as in flight, a Retry that the ledger refused as already
  answered, though the tool had run).

Now each click is applied, once, and an answer the server applied shows as applied. The
ledger in Redis counts the executions.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, WebSocketRoute, expect

from chat_app.trust.ledger import AuditRecord, verify_chain
from chat_app.trust.redis_ledger import RedisLedger
from tests.redis_server import redis_server
from tests.ui.app_server import (
    LAUNCHER,
    AppDidNotStart,
    app_env,
    copy_app,
    log_tail,
    served_app,
)

pytestmark = pytest.mark.browser

SPAWNED = re.compile(r"Spawning worker-(\d+) with PID: (\d+)")
RECEIPT = re.compile(r"Receipt id: (rcpt-[0-9a-f]+)")
TOKEN_JS = "sessionStorage.getItem('token')"
WAIT_MS = 60_000
#: Slow enough that the worker is killed mid-reply: after "Sent", the transfer's reply has six
#: tokens left (2.4 s), which the page may show late on two loaded cores (at 150 ms, 0.9 s, a
#: fresh-clone run once saw the reply end before the kill).
TOKEN_DELAY_MS = 400
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"


@dataclass
class OneWorkerApp:
    url: str
    redis_url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def worker(self, timeout: float = 120) -> int:
        """The live worker's pid, once there is one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spawned = [int(pid) for _, pid in SPAWNED.findall(self.log())]
            live = [pid for pid in spawned if _alive(pid)]
            if live:
                return live[-1]
            time.sleep(0.2)
        pytest.fail(f"No live worker.\nLog tail:\n{log_tail(self.log_path)}")

    def records(self) -> list[AuditRecord]:
        return RedisLedger(self.redis_url).records()

    @contextmanager
    def down(self) -> Iterator[None]:
        """The worker killed and not respawned until the block ends (its supervisor is
        stopped meanwhile), then a new one serving again."""
        victim = self.worker()
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            os.kill(victim, signal.SIGKILL)
            yield
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.worker()

    def kill_worker(self) -> None:
        """SIGKILL the worker; the supervisor respawns it."""
        os.kill(self.worker(), signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running (a zombie, which only waits to be reaped, is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "zombie" not in state and "dead" not in state


@pytest.fixture(scope="module")
def one_worker_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneWorkerApp]:
    root = tmp_path_factory.mktemp("reconnect-clicks")
    (root / "redis").mkdir()
    with redis_server(root / "redis") as redis_url:
        app_root = root / "app"
        copy_app(app_root)
        env = app_env()
        env.update(
            REFLEX_REDIS_URL=redis_url,
            GRANIAN_WORKERS="1",
            GRANIAN_LOG_LEVEL="info",  # granian logs each worker it spawns, with its pid
            CHAT_APP_LEDGER_URL=redis_url,
            CHAT_APP_DATA_DIR=str(root / "data"),
            # Slow enough to kill the worker while a reply streams (see the last test).
            CHAT_APP_DEMO_TOKEN_DELAY_MS=str(TOKEN_DELAY_MS),
        )
        log_path = root / "reflex-run.log"
        try:
            with served_app(app_root, env, log_path, module=LAUNCHER) as (url, proc):
                app = OneWorkerApp(url, redis_url, proc, log_path)
                app.worker()
                yield app
        except AppDidNotStart as error:
            pytest.fail(f"The app did not start: {error}", pytrace=False)


@dataclass
class Tab:
    """A browser tab whose socket frames pass through `page.route_web_socket`, so the test
    sees when a socket closes and can swallow a frame the page sends."""

    page: Page
    #: A substring of the next frame to swallow (as a socket that is already dead would).
    swallow: str = ""
    swallowed: list[str] = field(default_factory=list)
    closed: int = 0
    errors: list[str] = field(default_factory=list)

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            text = message if isinstance(message, str) else message.decode(errors="replace")
            if self.swallow and self.swallow in text:
                self.swallow = ""
                self.swallowed.append(text)
                return
            server.send(message)

        def server_closed(code: int | None, reason: str | None) -> None:
            self.closed += 1
            ws.close(code=code or 1006, reason=reason or "")

        ws.on_message(from_page)
        server.on_close(server_closed)

    def wait(self, what: str, check: Callable[[], bool], timeout_ms: int = WAIT_MS) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        while not check():
            if time.monotonic() > deadline:
                pytest.fail(f"Timed out waiting for {what}.")
            self.page.wait_for_timeout(50)

    def token(self) -> str:
        return str(self.page.evaluate(TOKEN_JS))


@pytest.fixture
def open_tab(browser: Browser, one_worker_app: OneWorkerApp) -> Iterator[Callable[[], Tab]]:
    contexts: list[Any] = []
    tabs: list[Tab] = []

    def open_one() -> Tab:
        context = browser.new_context(
            base_url=one_worker_app.url, viewport={"width": 1100, "height": 800}
        )
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        page = context.new_page()
        tab = Tab(page)
        page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
        page.route_web_socket(re.compile(r"/_event"), tab.route)
        page.goto("/")
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        tabs.append(tab)
        return tab

    try:
        yield open_one
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for number, tab in enumerate(tabs):
            tab.page.screenshot(path=str(SCREENSHOTS / f"reconnect-tab{number}.png"))
        for context in contexts:
            context.close()
    errors = {number: tab.errors for number, tab in enumerate(tabs) if tab.errors}
    assert not errors, f"JavaScript errors on the pages: {errors}"


def ask(tab: Tab, text: str) -> None:
    tab.page.locator("#composer-input").fill(text)
    tab.page.locator("#composer-input").press("Enter")


def executions(records: list[AuditRecord], tool: str) -> list[AuditRecord]:
    return [r for r in records if r.kind == "execution" and r.data.get("toolName") == tool]


#: The end of a click's event name in its socket frame.
EVENT = 'chat_state.{}"'
#: A decision form's Submit (`submit_form` with its draft flag unset), as the socket sends it.
SUBMITTED = '["__draft",""]'


def test_clicks_swallowed_as_the_worker_dies_are_given_again_once_the_page_is_back(
    one_worker_app: OneWorkerApp, open_tab: Callable[[], Tab]
) -> None:
    """The frames of an Approve, an Approve all and a Reject with its reason go nowhere (the
    socket they were sent on is dead), then the worker dies. Nothing on the server knew of
    them; the tabs noted them (`remember_click`) and give them again once they are back, under
    a new token, so each is applied, once."""
    app = one_worker_app
    approve, approve_all, reject = tabs = [open_tab() for _ in range(3)]
    ask(approve, "transfer 31 to Ada")
    ask(approve_all, "pay invoices")
    ask(reject, "transfer 32 to Ada")
    expect(approve.page.locator(".approval-card button.approve")).to_be_enabled()
    expect(approve_all.page.locator("#approve-all")).to_be_enabled()
    reject.page.locator(".approval-card button.reject").click()
    reject.page.locator('.form-reject [name="reason"]').fill("Wrong account")
    tokens = [tab.token() for tab in tabs]
    paid_before = len(executions(app.records(), "pay_invoice"))

    approve.swallow = EVENT.format("approve")
    approve.page.locator(".approval-card button.approve").click()
    approve_all.swallow = EVENT.format("approve_all")
    approve_all.page.locator("#approve-all").click()
    # Its Submit, not a draft of the reason: the draft goes 0.7 s after typing stops, and on a
    # busy machine that fell on the click (the draft swallowed, the Submit through).
    reject.swallow = SUBMITTED
    reject.page.locator(".form-reject button[type=submit]").click()
    for tab in tabs:
        tab.wait("the click's frame", lambda tab=tab: bool(tab.swallowed))  # type: ignore[misc]
    assert executions(app.records(), "transfer") == [] or all(
        r.data["args"]["amount"] not in (31, 32) for r in executions(app.records(), "transfer")
    )
    app.kill_worker()

    for tab, token in zip(tabs, tokens, strict=True):
        tab.wait("a new token", lambda tab=tab, token=token: tab.token() != token)  # type: ignore[misc]
    expect(approve.page.get_by_text(RECEIPT)).to_be_visible()
    for invoice in ("INV-1001", "INV-1002", "INV-1003"):
        expect(approve_all.page.get_by_text(f"Paid {invoice}")).to_be_visible()
    expect(reject.page.get_by_text("Reason: Wrong account.")).to_be_visible()
    for tab in tabs:
        expect(tab.page.locator(".approval-card")).to_have_count(0)
        assert tab.page.evaluate("sessionStorage.getItem('chat_app_unconfirmed')") in ("", None)

    records = app.records()
    amounts = [r.data["args"]["amount"] for r in executions(records, "transfer")]
    assert amounts.count(31) == 1 and 32 not in amounts, amounts
    assert len(executions(records, "pay_invoice")) - paid_before == 3
    decided = [
        r.data for r in records
        if r.kind == "decision" and (r.data.get("shownArgs") or {}).get("amount") == 32
    ]  # fmt: skip
    assert [(d["decision"], d["payload"]) for d in decided] == [
        ("rejected", {"reason": "Wrong account"})
    ], decided
    assert verify_chain(records).ok


def test_clicks_made_while_the_app_is_down_are_applied_once_it_is_back(
    one_worker_app: OneWorkerApp, open_tab: Callable[[], Tab]
) -> None:
    app = one_worker_app
    approve, cancel, approve_all, cancel_all = (open_tab() for _ in range(4))
    ask(approve, "transfer 41 to Ada")
    ask(cancel, "transfer 42 to Ada")
    ask(approve_all, "pay invoices")
    ask(cancel_all, "pay invoices")
    for tab in (approve, cancel):
        expect(tab.page.locator(".approval-card button.approve")).to_be_enabled()
    for tab in (approve_all, cancel_all):
        expect(tab.page.locator("#approve-all")).to_be_enabled()
    tabs = (approve, cancel, approve_all, cancel_all)
    tokens = [tab.token() for tab in tabs]
    paid_before = len(executions(app.records(), "pay_invoice"))

    with app.down():
        for tab in tabs:
            tab.wait("the socket to close", lambda tab=tab: tab.closed > 0)  # type: ignore[misc]
        # From the keyboard: the "Cannot connect to server" toast may cover a button.
        approve.page.locator(".approval-card button.approve").press("Enter")
        cancel.page.locator(".approval-card button.cancel").press("Enter")
        approve_all.page.locator("#approve-all").press("Enter")
        cancel_all.page.locator("#cancel-all").press("Enter")

    for tab, token in zip(tabs, tokens, strict=True):
        tab.wait("a new token", lambda tab=tab, token=token: tab.token() != token)  # type: ignore[misc]
    expect(approve.page.get_by_text(RECEIPT)).to_be_visible()
    expect(cancel.page.locator(".tool-status")).to_have_text("Cancelled")
    for invoice in ("INV-1001", "INV-1002", "INV-1003"):
        expect(approve_all.page.get_by_text(f"Paid {invoice}")).to_be_visible()
    expect(cancel_all.page.locator(".tool-status")).to_have_text(["Cancelled"] * 3)
    for tab in tabs:
        expect(tab.page.locator(".approval-card")).to_have_count(0)

    records = app.records()
    amounts = [r.data["args"]["amount"] for r in executions(records, "transfer")]
    assert amounts.count(41) == 1 and 42 not in amounts, amounts
    assert len(executions(records, "pay_invoice")) - paid_before == 3
    assert verify_chain(records).ok


def test_an_answer_the_worker_died_applying_shows_as_applied_and_is_not_sent_again(
    one_worker_app: OneWorkerApp, open_tab: Callable[[], Tab]
) -> None:
    """The worker dies while the continuation runs: the tool ran, its reply is streaming.
    The page saved the answer as in flight, with the result that had come back, so the
    conversation taken over shows the transfer done and says the reply was cut off; nothing
    asks for the answer again (once a retry, which the ledger refused: "already resolved")."""
    app = one_worker_app
    tab = open_tab()
    page = tab.page
    ask(tab, "transfer 51 to Ada")
    page.locator(".approval-card button.approve").click()
    expect(page.locator(".chat-message.streaming")).to_contain_text("Sent")
    before = tab.token()
    app.kill_worker()
    tab.wait("a new token", lambda: tab.token() != before)

    expect(page.locator("#run-error")).to_contain_text("Your answer was applied")
    page.screenshot(path=str(SCREENSHOTS / "reconnect-cut-off.png"))
    card = page.locator('.tool-card[data-tool="transfer"]')
    expect(card.locator(".tool-status")).to_have_text("Done")
    expect(page.locator(".approval-card")).to_have_count(0)
    expect(page.locator(".batch-bar")).to_have_count(0)
    ran = [r for r in executions(app.records(), "transfer") if r.data["args"]["amount"] == 51]
    assert len(ran) == 1, ran
    assert ran[0].data["result"]["receipt"] in str(card.text_content())
