"""The approval desk across two workers on PostgreSQL: Rita asks on one, Ada decides on the other.

The app is served as `make run` serves it (`python -m chat_app.launch`), with two granian
backend workers behind one port (`GRANIAN_WORKERS=2`): Reflex keeps every tab's state in Redis
(`REFLEX_REDIS_URL`), the desk's live notices go through the same Redis (`CHAT_APP_FANOUT_URL`
defaults to it), the ledger is in it too (`CHAT_APP_LEDGER_URL`), and the app's database (the
stored conversations and their pending decisions) is a fresh PostgreSQL database of the
session's `postgres_server` (`CHAT_APP_DATABASE_URL`). One data folder: one sealing secret.

Which worker a tab is on: the workers share one listening socket and whichever accepts first
takes a connection, so the worker of a tab's socket is not chosen by the test. The test asks
Reflex: each worker's token manager has an `instance_id` of its own (a new one in every worker
process, at its start), and when a tab's socket connects, the worker that accepted it writes
`token_manager_socket_record_<tab token>` = `SocketRecord(instance_id, sid)` into Redis, which
is how Reflex itself routes a tab's updates to the worker holding its socket. The tab's token
is in its `sessionStorage`. (test_many_workers counts the established connections each worker
pid holds in /proc; that tells which workers are busy, not which browser context a connection
belongs to, since every context's sockets are opened by the same Chromium network process. It
is kept here as a sanity check: with the two tabs open, both workers hold connections.) Ada's
page is reloaded (a new socket, accepted by whichever worker is first) until her socket is on
the other worker than Rita's; the owners are read again when Ada decides and when Rita's
receipt has come, so neither tab moved over in between.

Then the issue's proof: Ada has her inbox open; Rita sends `transfer 5000 to Ada` and sees
"Waiting for finance"; the item appears in Ada's inbox without a reload; Ada opens it and
approves; Rita's chat shows the receipt without a reload; Ada's inbox no longer has it; the
ledger says Ada approved it under `large-transfers`, and it ran once. On the way, no two of the
app's processes share a connection to PostgreSQL (they did: see `open_database`).
"""

from __future__ import annotations

import pickle
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import make_url

from chat_app.trust.ledger import AuditRecord, verify_chain
from chat_app.trust.redis_ledger import RedisLedger
from chat_app.trust.store import shown_url
from tests.pg_server import PostgresServer
from tests.redis_server import redis_server
from tests.ui.app_server import LAUNCHER, AppDidNotStart, app_env, copy_app, served_app
from tests.ui.conftest import ask, hydrated, thread_of
from tests.ui.test_desk_ui import (
    ADA,
    RITA,
    WAITING_FOR_FINANCE,
    expect_count,
    header_count,
    inbox_item,
    open_inbox,
    people,
    tool_card,
)
from tests.ui.test_many_workers import (
    ManyWorkersApp,
    _connections_per_worker,
    _socket_inodes,
    _wait_for,
)

pytestmark = pytest.mark.browser

WORKERS = 2
#: What a live update (a desk notice through Redis, then a read of PostgreSQL) may take.
LIVE_MS = 5_000
#: Reloads of Ada's page to get her socket onto the other worker (each is a coin toss or so).
MOVES = 20
SOCKET_RECORD = "token_manager_socket_record_"
TOKEN_JS = "sessionStorage.getItem('token')"
RECEIPT = re.compile(r"Sent 5,000 to Ada\. Receipt id: (rcpt-[0-9a-f]+)")


@dataclass
class DeskWorkersApp(ManyWorkersApp):
    database_url: str = ""


@pytest.fixture(scope="module")
def desk_workers_app(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[DeskWorkersApp]:
    root = tmp_path_factory.mktemp("desk-workers")
    (root / "redis").mkdir()
    database_url = postgres_server.create_database("desk_workers")
    try:
        with redis_server(root / "redis") as redis_url:
            app_root = root / "app"
            copy_app(app_root)
            env = app_env()
            env.update(
                REFLEX_REDIS_URL=redis_url,
                GRANIAN_WORKERS=str(WORKERS),
                GRANIAN_LOG_LEVEL="info",  # granian logs each worker it spawns, with its pid
                CHAT_APP_LEDGER_URL=redis_url,
                CHAT_APP_DATABASE_URL=database_url,
                CHAT_APP_DATA_DIR=str(root / "data"),
                CHAT_APP_DEMO_TOKEN_DELAY_MS="0",
            )
            env.pop("CHAT_APP_FANOUT_URL", None)  # the desk's notices: REFLEX_REDIS_URL
            env.pop("CHAT_APP_AUTH", None)  # the app's default: demo sign-in
            log_path = root / "reflex-run.log"
            started = time.monotonic()
            try:
                with served_app(app_root, env, log_path, module=LAUNCHER) as (url, proc):
                    port = int(url.rsplit(":", 1)[1])
                    app = DeskWorkersApp(url, redis_url, proc, port, log_path, database_url)
                    _wait_for(f"{WORKERS} workers", lambda: len(app.workers()) == WORKERS, app, 60)
                    sys.stderr.write(
                        f"\n[desk-workers] app up at {url} after "
                        f"{time.monotonic() - started:.1f}s, workers {app.workers()}\n"
                    )
                    yield app
            except AppDidNotStart as error:
                pytest.fail(f"The desk-workers app did not start: {error}", pytrace=False)
    finally:
        postgres_server.drop_database(database_url)


def socket_owner(page: Page, redis_url: str) -> str:
    """The `instance_id` of the worker holding this tab's socket, from Reflex's socket record
    in Redis (written by the worker that accepted the socket, under the tab's token)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + 10
        while True:
            token = page.evaluate(TOKEN_JS)
            raw = cast("bytes | None", client.get(SOCKET_RECORD + token) if token else None)
            if raw is not None:
                record: Any = pickle.loads(raw)  # reflex.utils.token_manager.SocketRecord
                return str(record.instance_id)
            if time.monotonic() > deadline:
                pytest.fail(f"No socket record in Redis for the tab's token {token!r}")
            time.sleep(0.1)
    finally:
        client.close()


def database_connections(pids: list[int], database_url: str) -> dict[int, set[int]]:
    """The TCP connections (socket inodes) to the database's port that each process holds."""
    port = make_url(database_url).port
    to_database: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                to_database.add(int(fields[9]))  # 01: ESTABLISHED
    return {pid: _socket_inodes(pid) & to_database for pid in pids}


def about_transfer(records: list[AuditRecord], kind: str, thread: str) -> list[AuditRecord]:
    def transfer(data: dict[str, Any]) -> bool:
        if kind == "pause":
            return any(item.get("toolName") == "transfer" for item in data.get("interrupts", []))
        return data.get("toolName") == "transfer"

    return [r for r in records if r.kind == kind and r.thread_id == thread and transfer(r.data)]


def test_rita_asks_on_one_worker_and_ada_approves_on_the_other(
    desk_workers_app: DeskWorkersApp, browser: Browser, screenshot_dir: Path
) -> None:
    app = desk_workers_app
    redis_url = app.redis_url
    timings: dict[str, float] = {}
    started = time.monotonic()
    with people(browser, app.url, RITA, ADA) as (rita, ada):
        rita_worker = socket_owner(rita, redis_url)
        reloads = 0
        while (ada_worker := socket_owner(ada, redis_url)) == rita_worker:
            reloads += 1
            assert reloads <= MOVES, f"Ada's socket stayed on Rita's worker {rita_worker}"
            ada.reload()
            hydrated(ada)
        expect(ada.locator("#demo-person")).to_have_value(ADA)
        timings["two workers"] = time.monotonic() - started
        per_worker = _connections_per_worker(app.workers(), app.port)
        assert len(per_worker) == WORKERS and all(per_worker.values()), per_worker
        # Each worker talks to PostgreSQL on connections of its own. (They once shared the one
        # the supervisor opened when it imported the app, before forking them: a worker's
        # query then read the other's answers, and PostgreSQL closed the connection.)
        held = database_connections([app.proc.pid, *app.workers()], app.database_url)
        assert not held[app.proc.pid], f"the supervisor holds database connections: {held}"
        assert not set.intersection(*(held[pid] for pid in app.workers())), held

        open_inbox(ada)  # before Rita asks: the item must arrive without a reload
        before = header_count(ada)
        for page in (rita, ada):
            page.evaluate("window.__not_reloaded = true")

        asked = time.monotonic()
        ask(rita, "transfer 5000 to Ada")
        card = tool_card(rita, "transfer")
        expect(card.locator(".waiting-label")).to_have_text(WAITING_FOR_FINANCE)
        thread = thread_of(rita)

        item = inbox_item(ada, thread)
        expect(item).to_be_visible(timeout=LIVE_MS)  # live, from Rita's worker through Redis
        timings["asked -> in Ada's inbox"] = time.monotonic() - asked
        assert ada.evaluate("window.__not_reloaded") is True
        expect(item.locator(".inbox-summary")).to_have_text("recipient=Ada, amount=5000")
        expect(item.locator(".inbox-requester")).to_have_text("Rita")
        expect(item.locator(".inbox-rule")).to_have_text("large-transfers")
        expect_count(ada, before + 1)
        ada.screenshot(path=str(screenshot_dir / "desk-workers-ada-inbox.png"), full_page=True)

        item.locator(".inbox-open").click()
        expect(ada).to_have_url(re.compile(r"/c/" + re.escape(quote(thread, safe="")) + "$"))
        expect(ada.locator("#read-only-note")).to_contain_text("Rita's conversation")
        approve = tool_card(ada, "transfer").locator("button.approve")
        expect(approve).to_be_enabled()
        assert (socket_owner(rita, redis_url), socket_owner(ada, redis_url)) == (
            rita_worker, ada_worker
        ), "a tab's socket moved to another worker before Ada decided"  # fmt: skip
        approved = time.monotonic()
        approve.click()

        receipt = rita.get_by_text(RECEIPT)
        expect(receipt).to_be_visible(timeout=LIVE_MS)  # Rita's chat moved on by itself
        timings["approved -> Rita's receipt"] = time.monotonic() - approved
        expect(tool_card(rita, "transfer").locator(".tool-status")).to_have_text("Done")
        assert rita.evaluate("window.__not_reloaded") is True
        shown = RECEIPT.findall(rita.locator("#app-root").inner_text())
        assert len(shown) == 1, shown
        rita.screenshot(path=str(screenshot_dir / "desk-workers-rita-receipt.png"), full_page=True)

        expect_count(ada, before)  # live on Ada's open page
        open_inbox(ada)
        expect(inbox_item(ada, thread)).to_have_count(0)
        assert ada.evaluate("window.__not_reloaded") is True  # Ada's pages: no reload either
        assert (socket_owner(rita, redis_url), socket_owner(ada, redis_url)) == (
            rita_worker, ada_worker
        ), "a tab's socket moved to another worker"  # fmt: skip
        ada.screenshot(path=str(screenshot_dir / "desk-workers-ada-inbox-empty.png"))
    timings["whole flow"] = time.monotonic() - started

    # The trail (the ledger, shared by both workers in Redis): Ada approved it under
    # large-transfers, and it ran once, with the receipt Rita was shown.
    records = RedisLedger(redis_url).records()
    check = verify_chain(records)
    assert check.ok, check
    assert len(about_transfer(records, "pause", thread)) == 1
    decisions = about_transfer(records, "decision", thread)
    assert len(decisions) == 1, decisions
    decision = decisions[0]
    assert (decision.actor, decision.data["decision"]) == (ADA, "approved"), decision
    assert decision.data.get("rule") == "large-transfers", decision.data
    executions = about_transfer(records, "execution", thread)
    assert len(executions) == 1, executions
    assert executions[0].data["args"] == {"recipient": "Ada", "amount": 5000}
    assert executions[0].data["error"] is False
    assert executions[0].data["result"]["receipt"] == shown[0]

    sys.stderr.write(
        f"\n[desk-workers] Rita on worker {rita_worker[:8]}, Ada on {ada_worker[:8]} after "
        f"{reloads} reload(s) of Ada's page; connections per worker pid {per_worker}; "
        + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in timings.items())
        + "\n"
    )


def test_each_worker_says_what_it_runs_with_as_it_starts(
    desk_workers_app: DeskWorkersApp,
) -> None:
    """Every worker's log names its sign-in, policy, agent, database, trail, live updates and
    notifications, passwords hidden, as the HTTP server's start does."""
    app = desk_workers_app
    log = app.log_path.read_text(errors="replace")
    redis_shown = shown_url(app.redis_url)
    expected = [
        "sign-in: demo (visitors are signed in as demo people; not for real use; 12 h sessions)",
        "agent: in this process, the scripted demo model (offline)",
        f"database: {shown_url(app.database_url)}",
        f"audit trail and ledger: Redis at {redis_shown}",
        f"live updates: Redis at {redis_shown}",
        "notifications: none",
    ]
    for line in expected:
        assert log.count(line) == WORKERS, (line, log[-3000:])
    assert log.count("policy: ") >= WORKERS and "policy.toml" in log
    password = make_url(app.database_url).password
    assert not password or password not in log
