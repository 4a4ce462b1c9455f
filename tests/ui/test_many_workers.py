"""Many workers: Redis as Reflex's state manager, three backend workers, 50 tabs, one kill.

A copy of the app is built in a temporary folder (a Reflex production build is tied to its
port) and started with `REFLEX_REDIS_URL` (Reflex keeps every tab's state in Redis and runs
several granian workers; `GRANIAN_WORKERS=3` sets how many, else Reflex 0.10.1 starts
`min(2 * cpus + 1, 8)`), a shared ledger in the same Redis (`CHAT_APP_LEDGER_URL`) and one data
folder (one sealing secret for every worker).

50 browser tabs each ask for a transfer of a different amount and wait for their approval
card; with all 50 paused at once, the worker holding the most connections is SIGKILLed. Every
tab then approves, whichever worker its socket lands on now. Each tab must show exactly one
receipt, the ledger must hold exactly one execution per tab (the right amount, the receipt the
tab shows) and its hash chain must verify.

What a killed worker does to its tabs (Reflex 0.10.1): the socket records of its tabs outlive
it in Redis, so a reconnecting tab is taken for a duplicate and given a NEW client token, with
an empty state (reflex-dev/reflex#6345). The page takes the conversation over from the old
token's state (`ChatState.shown_under`); before that, every tab of the dead worker lost its
conversation and its pending decision on screen.

The app runs under `python -m chat_app.launch`, as `make run` serves it: Reflex 0.10.1 does
not ask granian to replace a dead worker, so with the plain `reflex run` one killed worker
stops the whole app.

The last test is the registry half without a browser: a worker that served a tab before must
not bring back the tab's old state after another worker moved the conversation on.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chat_app.agent import event_to_wire
from chat_app.client import ChatClient, ClientState, ClientTool, InProcessConnection
from chat_app.demo import build_demo_agent
from chat_app.trust.ledger import AuditRecord, verify_chain
from chat_app.trust.redis_ledger import RedisLedger
from chat_app.ui import session as sessions
from tests.redis_server import redis_server
from tests.ui.app_server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LAUNCHER,
    AppDidNotStart,
    app_env,
    copy_app,
    log_tail,
    run_on_own_loop,
    served_app,
)

WORKERS = 3
SESSIONS = 50
#: Tabs loading, asking or approving at the same time (two cores run the browser and app).
BUSY_TABS = 8
#: Generous: 50 tabs on two cores, and a worker respawning in the middle.
WAIT_MS = 180_000
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
SPAWNED = re.compile(r"Spawning worker-(\d+) with PID: (\d+)")
RECEIPT = re.compile(r"Receipt id: (rcpt-[0-9a-f]+)")
TOKEN_JS = "sessionStorage.getItem('token')"

T = TypeVar("T")


@dataclass
class ManyWorkersApp:
    url: str
    redis_url: str
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def spawned(self) -> list[tuple[int, int]]:
        """(worker number, pid) of every worker granian has spawned, in order."""
        return [(int(n), int(pid)) for n, pid in SPAWNED.findall(self.log())]

    def workers(self) -> list[int]:
        """PIDs of the live granian workers: children of the supervisor that it spawned."""
        spawned = {pid for _, pid in self.spawned()}
        return sorted(pid for pid in _children(self.proc.pid) if pid in spawned)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return {child for child in found if _alive(child)}


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it only waits for its parent to reap it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "zombie" not in state and "dead" not in state


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _connections_per_worker(pids: list[int], port: int) -> dict[int, int]:
    """Established TCP connections to the app's port that each worker process holds."""
    established: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01":  # 01: ESTABLISHED
                established.add(int(fields[9]))
    return {pid: len(_socket_inodes(pid) & established) for pid in pids}


def _wait_for(what: str, check: Callable[[], bool], app: ManyWorkersApp, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"Timed out waiting for {what}.\nLog tail:\n{log_tail(app.log_path)}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def many_workers_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManyWorkersApp]:
    root = tmp_path_factory.mktemp("many-workers")
    (root / "redis").mkdir()
    with redis_server(root / "redis") as redis_url:
        app_root = root / "app"
        copy_app(app_root)
        env = app_env()
        env.update(
            REFLEX_REDIS_URL=redis_url,
            GRANIAN_WORKERS=str(WORKERS),
            GRANIAN_LOG_LEVEL="info",  # granian logs each worker it spawns, with its pid
            CHAT_APP_LEDGER_URL=redis_url,
            CHAT_APP_DATA_DIR=str(root / "data"),
            CHAT_APP_DEMO_TOKEN_DELAY_MS="0",
        )
        log_path = root / "reflex-run.log"
        started = time.monotonic()
        try:
            with served_app(app_root, env, log_path, module=LAUNCHER) as (url, proc):
                port = int(url.rsplit(":", 1)[1])
                app = ManyWorkersApp(url, redis_url, proc, port, log_path)
                _wait_for(f"{WORKERS} live workers", lambda: len(app.workers()) == WORKERS, app, 60)
                sys.stderr.write(
                    f"\n[many-workers] app up at {app.url} after "
                    f"{time.monotonic() - started:.1f}s, workers {app.workers()}\n"
                )
                yield app
        except AppDidNotStart as error:
            pytest.fail(f"The many-workers app did not start: {error}", pytrace=False)


@dataclass
class Tab:
    number: int
    context: Any = None
    page: Any = None
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    receipt: str = ""
    tokens: list[str] = field(default_factory=list)  # Reflex's client token: paused, done
    #: The tab's sockets as they opened and closed, and the events it sent on them: what a
    #: failure report needs to say where a click went.
    sockets: list[str] = field(default_factory=list)
    #: Frames each of those sockets received.
    received: list[int] = field(default_factory=list)

    def watch(self, socket: Any) -> None:
        number = len(self.received)
        self.received.append(0)
        self.sockets.append(f"{time.monotonic():.2f} open {number} {socket.url}")
        socket.on("framesent", lambda payload: self._sent(number, payload))
        socket.on("framereceived", lambda _: self._received(number))
        socket.on("close", lambda _: self.sockets.append(f"{time.monotonic():.2f} close {number}"))

    def _received(self, number: int) -> None:
        self.received[number] += 1

    def _sent(self, number: int, payload: str | bytes) -> None:
        text = payload if isinstance(payload, str) else payload.decode(errors="replace")
        if '"name"' in text:  # an event, not the transport's pings
            event = re.search(r'"name":\s*"([^"]+)"', text)
            self.sockets.append(
                f"{time.monotonic():.2f} sent {number} {event.group(1) if event else text[:120]}"
            )

    @property
    def amount(self) -> int:
        return self.number + 1  # one amount per tab, so the ledger says which tab it was

    @property
    def request(self) -> str:
        return f"transfer {self.amount} to Ada"


def _records(redis_url: str) -> list[AuditRecord]:
    return RedisLedger(redis_url).records()


def _transfer_records(records: list[AuditRecord], kind: str) -> list[AuditRecord]:
    """Decisions and executions of `transfer`, and pauses that ask for one."""

    def about_transfer(data: dict[str, Any]) -> bool:
        if kind == "pause":
            return any(item.get("toolName") == "transfer" for item in data.get("interrupts", []))
        return data.get("toolName") == "transfer"

    return [r for r in records if r.kind == kind and about_transfer(r.data)]


@pytest.mark.browser
@pytest.mark.long
def test_fifty_tabs_pause_and_resume_across_a_killed_worker(
    many_workers_app: ManyWorkersApp,
) -> None:
    app = many_workers_app
    workers = app.workers()
    numbers = [n for n, _ in app.spawned()]
    assert len(workers) == WORKERS and sorted(numbers) == list(range(1, WORKERS + 1)), app.spawned()
    timings: dict[str, float] = {}
    killed: dict[str, Any] = {}

    async def main() -> list[Tab]:
        from playwright.async_api import async_playwright, expect

        tabs = [Tab(number) for number in range(SESSIONS)]
        busy = asyncio.Semaphore(BUSY_TABS)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:

                async def pause(tab: Tab) -> None:
                    async with busy:
                        tab.context = await browser.new_context(
                            base_url=app.url, viewport={"width": 1000, "height": 700}
                        )
                        tab.context.set_default_timeout(WAIT_MS)
                        tab.page = page = await tab.context.new_page()
                        page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
                        page.on("websocket", tab.watch)
                        page.on(
                            "console",
                            lambda msg: tab.console.append(f"{time.monotonic():.1f} {msg.text}"),
                        )
                        await page.goto("/")
                        await page.wait_for_selector('#app-root[data-hydrated="true"]')
                        await page.locator("#composer-input").fill(tab.request)
                        await page.locator("#composer-input").press("Enter")
                        card = page.locator(".approval-card")
                        await expect(card).to_be_visible(timeout=WAIT_MS)
                        await expect(card.locator("button.approve")).to_be_enabled(timeout=WAIT_MS)
                        tab.tokens.append(await page.evaluate(TOKEN_JS))

                async def approve(tab: Tab) -> None:
                    try:
                        await _approve(tab)
                    except Exception as error:
                        name = f"many-workers-tab{tab.number}"
                        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                        await tab.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
                        text = await tab.page.locator("body").inner_text()
                        storage = await tab.page.evaluate("JSON.stringify(sessionStorage)")
                        (SCREENSHOTS / f"{name}.txt").write_text(
                            f"{error}\n--- page ---\n{text}\n--- console ---\n"
                            + "\n".join(tab.console)
                            + "\n--- sockets ---\n"
                            + "\n".join(tab.sockets)
                            + f"\nframes received per socket: {tab.received}"
                            + f"\n--- killed ---\n{killed}\n--- sessionStorage ---\n{storage}"
                        )
                        raise

                async def _approve(tab: Tab) -> None:
                    page = tab.page
                    async with busy:
                        tab.sockets.append(f"{time.monotonic():.2f} click")
                        await page.locator(".approval-card button.approve").click()
                        done = page.locator('.tool-card[data-tool="transfer"] .tool-status')
                        await expect(done).to_have_text("Done", timeout=WAIT_MS)
                        receipt = page.get_by_text(RECEIPT)
                        await expect(receipt).to_be_visible(timeout=WAIT_MS)
                    await expect(page.locator(".approval-card")).to_have_count(0)
                    text = await page.locator("#app-root").inner_text()
                    receipts = RECEIPT.findall(text)
                    assert len(receipts) == 1, f"tab {tab.number}: receipts {receipts}"
                    tab.receipt = receipts[0]
                    tab.tokens.append(await page.evaluate(TOKEN_JS))

                started = time.monotonic()
                await asyncio.gather(*(pause(tab) for tab in tabs))
                timings["50 tabs paused"] = time.monotonic() - started

                # All 50 are paused at the same time: every card is still up, nothing ran.
                for tab in tabs:
                    await expect(tab.page.locator(".approval-card")).to_have_count(1)
                    await expect(tab.page.locator(".tool-status")).to_have_text("Awaiting approval")
                before = await asyncio.to_thread(_records, app.redis_url)
                assert len(_transfer_records(before, "pause")) == SESSIONS
                assert _transfer_records(before, "execution") == []

                # Kill the worker that holds the most connections, during the pause.
                per_worker = _connections_per_worker(app.workers(), app.port)
                victim = max(per_worker, key=lambda pid: per_worker[pid])
                killed.update(
                    pid=victim, connections=dict(per_worker), at=f"{time.monotonic():.2f}"
                )
                os.kill(victim, signal.SIGKILL)
                deadline = time.monotonic() + 60
                while Path(f"/proc/{victim}").exists() and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)  # dead, then reaped by the supervisor
                assert not _alive(victim), f"worker {victim} still runs after SIGKILL"
                with pytest.raises(ProcessLookupError):
                    os.kill(victim, 0)  # the pid is gone
                timings["kill"] = time.monotonic() - started

                # Every tab approves, whichever worker its socket lands on now.
                approving = time.monotonic()
                outcomes = await asyncio.gather(
                    *(approve(tab) for tab in tabs), return_exceptions=True
                )
                failed = {n: repr(o)[:300] for n, o in enumerate(outcomes) if o is not None}
                assert not failed, f"{len(failed)} tabs did not resume: {failed}"
                timings["50 tabs approved"] = time.monotonic() - approving
                for tab in tabs:
                    await tab.context.close()
                return tabs
            finally:
                await browser.close()

    tabs = run_on_own_loop(main())

    victim = killed["pid"]
    assert killed["connections"][victim] > 0, f"the killed worker held no tab: {killed}"
    # The supervisor replaced the dead worker, and the other two kept running.
    _wait_for(f"{WORKERS} workers again", lambda: len(app.workers()) == WORKERS, app, 60)
    assert victim not in app.workers()
    assert set(workers) - {victim} <= set(app.workers())
    assert "Unexpected exit from worker" in app.log()

    # The shared ledger: one execution per tab, of that tab's amount, with that tab's receipt.
    records = _records(app.redis_url)
    check = verify_chain(records)
    assert check.ok, check
    executions = _transfer_records(records, "execution")
    assert len(executions) == SESSIONS, Counter(r.thread_id for r in executions)
    assert len({r.thread_id for r in executions}) == SESSIONS
    by_amount = {r.data["args"]["amount"]: r for r in executions}
    assert sorted(by_amount) == [tab.amount for tab in tabs]
    for tab in tabs:
        record = by_amount[tab.amount]
        assert record.data["result"]["receipt"] == tab.receipt, tab.number
        assert record.data["error"] is False
    decisions = _transfer_records(records, "decision")
    assert len(decisions) == SESSIONS
    assert {r.data["decision"] for r in decisions} == {"approved"}
    assert Counter(r.thread_id for r in _transfer_records(records, "pause")) == Counter(
        r.thread_id for r in executions
    )
    errors = {tab.number: tab.errors for tab in tabs if tab.errors}
    assert not errors, f"JavaScript errors on the pages: {errors}"

    # Informational: Reflex 0.10.1 gives a tab of the dead worker a new token when it
    # reconnects (its old socket record outlives the worker), and the page takes its
    # conversation over from the old token (ChatState.shown_under).
    new_tokens = sum(1 for tab in tabs if tab.tokens[0] != tab.tokens[-1])
    sys.stderr.write(
        f"\n[many-workers] {new_tokens} tabs came back under a new token; sockets a tab "
        f"opened: {dict(Counter(len(tab.received) for tab in tabs))}; "
        f"workers {workers}; killed {victim} holding "
        f"{killed['connections'][victim]} of {sum(killed['connections'].values())} "
        f"connections {killed['connections']}; now {app.workers()}; "
        + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in timings.items())
        + "\n"
    )


def test_a_worker_that_served_a_tab_before_picks_up_where_another_left_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Worker B's registry still holds the tab as it paused there; meanwhile the tab moved to
    worker C and approved. Back on B, the tab's saved state (from Redis) is the truth."""
    run_on_own_loop(_registry_scenario(monkeypatch))


async def _registry_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = build_demo_agent()
    manifest = {"tools": agent.tool_manifest()}
    monkeypatch.setattr(sessions, "_backend", sessions._Backend())
    monkeypatch.setattr(sessions, "_sessions", {})
    sessions.configure(
        lambda _identity: InProcessConnection(agent.run, encode=event_to_wire), lambda: manifest
    )

    on_b = sessions.session_for("tab", "")  # worker B: the tab pauses here
    await on_b.client.send("transfer 5 to Ada")
    paused = on_b.client.state.to_json()
    assert len(on_b.client.interrupts) == 1

    on_c = ChatClient.restore(  # worker C: rebuilt from the saved state, and approved
        ClientState.from_json(paused),
        InProcessConnection(agent.run, encode=event_to_wire),
        tools=ClientTool.from_manifest(manifest, {}),
    )
    await on_c.resolve_interrupt(on_c.interrupts[0].id, approved=True)
    approved = on_c.state.to_json()
    assert not on_c.interrupts

    back_on_b = sessions.session_for("tab", approved)
    assert not back_on_b.client.interrupts, "worker B shows the old pause again"
    assert back_on_b.client.state.to_json() == approved
    assert sessions.session_for("tab", approved) is back_on_b  # and keeps it from now on
