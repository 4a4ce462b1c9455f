"""Restarts lose nothing (issue point 7), end to end, on SQLite and on PostgreSQL: the real
`python -m chat_app.server` in a child process, SIGKILLed and started again over the same
database and data folder (its secret, so the demo sign-in cookies stay valid, and its SQLite
ledger).

- A decision pending when the server dies is in the approver's inbox after the restart, and
  deciding it then completes the conversation.
- A continuation the server was running when it died is taken over by the restarted
  server's sweep once the dead server's lease lapses (`CHAT_APP_DESK_LEASE_SECONDS=2`).
  Killed after Ada's decision was stored and before its continuation began (so before the
  tool ran; the conversation's lease is held by another worker that dies too, as in a
  many-worker deployment), the sweep carries the answer: done, with the receipt. Killed
  while the reply streams after the tool's result came back, the sweep has the model go on
  from that result (nothing is answered again, the tool does not run again): done, with the
  receipt. Either way the decision is not pending again.
- A first run killed while its reply streams (before any pause) is failed with Retry, and
  Retry runs the message again.

In every case the ledger (the SQLite file in the data folder) holds exactly one execution of
the approved transfer, its hash chain intact: nothing ran twice and nothing ran unasked.
Nothing here reads the clock: each wait polls over HTTP or the database with a generous bound
and fails saying what it waited for and what it saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
import pytest
from sqlalchemy import Engine

from chat_app.client import INTERRUPTED, DeskClient, DeskRequestError
from chat_app.desk import DeskStore
from chat_app.trust import SQLiteLedger
from chat_app.trust.ledger import AuditRecord, verify_chain
from chat_app.trust.store import open_database
from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
RITA, ADA = "rita@example.com", "ada@example.com"
ASK = "transfer 5000 to Ada"
LEASE_SECONDS = 2
#: Slow enough that a reply streams for a second or two (the first turn has 8 words, the
#: continuation's 7), so a kill lands in the middle of it.
TOKEN_DELAY_MS = 250
#: Generous bounds for a machine running other tests at the same time.
START_TIMEOUT = 120.0
SETTLE_TIMEOUT = 90.0
#: Slow enough that the continuation's reply (7 words) outlasts the few seconds a stopping
#: server gives its runs to end on their own.
HANDED_OVER_TOKEN_DELAY_MS = 900
#: Another worker, which holds a conversation's lease and dies with the server.
ELSEWHERE = "worker-elsewhere"

T = TypeVar("T")
Conversation = dict[str, Any]


class Server:
    """`python -m chat_app.server` in a child process, on one port, started again after a
    kill over the same environment (database, data folder, lease)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    async def start(self) -> None:
        """Start it (from this thread: it dies with the thread that started it) and wait
        until it answers."""
        assert self.proc is None, "already running"
        self.starts += 1
        with self.log.open("ab") as log:
            log.write(f"\n--- start {self.starts} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "chat_app.server", "--port", str(self.port)],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent(),
            )  # fmt: skip
        proc = self.proc
        deadline = time.monotonic() + START_TIMEOUT
        async with httpx.AsyncClient(base_url=self.base, timeout=5) as http:
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"The server exited with {proc.returncode}:\n{self.tail()}")
                try:
                    if (await http.get("/api/tools")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"The server did not answer in {START_TIMEOUT:.0f} s:\n{self.tail()}"
                    )
                await asyncio.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: nothing of it runs after this (no shutdown, no lifespan's end)."""
        assert self.proc is not None, "not running"
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL, self.tail()
        self.proc = None

    def terminate(self) -> int:
        """SIGTERM, as a deploy stops it; its exit status, once it has stopped by itself."""
        assert self.proc is not None, "not running"
        self.proc.terminate()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"The server did not stop within 30 s of SIGTERM:\n{self.tail()}")
        self.proc = None
        return code

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
        self.proc = None

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _die_with_parent() -> Callable[[], None] | None:
    """For `preexec_fn`: the server gets SIGKILL when the test process dies. Linux only."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    set_parent_death_signal = 1  # PR_SET_PDEATHSIG

    def preexec() -> None:
        prctl(set_parent_death_signal, signal.SIGKILL)

    return preexec


class App:
    """The served desk, its database (read directly to see what a kill left) and its ledger."""

    def __init__(self, server: Server, database_url: str, data_dir: Path) -> None:
        self.server = server
        self.database_url = database_url
        self.data_dir = data_dir
        self.engine: Engine | None = None
        self.cookies: dict[str, str] = {}
        self._clients: dict[str, DeskClient] = {}

    @property
    def store(self) -> DeskStore:
        assert self.engine is not None, "not started"
        return DeskStore(self.engine)

    async def start(self) -> None:
        for client in self._clients.values():  # of the server before
            await client.aclose()
        self._clients.clear()
        await self.server.start()
        if self.engine is None:  # the server has created and migrated the database
            self.engine = open_database(self.database_url)
        for email in (RITA, ADA):
            if email not in self.cookies:  # signed in once: the secret survives restarts
                self.cookies[email] = await self._sign_in(email)

    async def kill(self) -> None:
        self.server.kill()

    async def restart_after_kill(self) -> None:
        await self.kill()
        await self.start()

    def desk(self, email: str) -> DeskClient:
        """A `DeskClient` of the running server, as `email` (demo sign-in cookie)."""
        if email not in self._clients:
            self._clients[email] = DeskClient(
                self.server.base, headers={"Cookie": self.cookies[email]}, timeout=30
            )
        return self._clients[email]

    async def close(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        self.server.stop()
        if self.engine is not None:
            self.engine.dispose()

    async def _sign_in(self, email: str) -> str:
        async with httpx.AsyncClient(base_url=self.server.base, timeout=30) as http:
            answer = await http.post("/api/signin/demo", data={"email": email})
        assert answer.status_code == 303, answer.text
        return answer.headers["set-cookie"].split(";")[0]

    # --- what is stored -----------------------------------------------------------------

    def records(self) -> list[AuditRecord]:
        ledger = SQLiteLedger(self.data_dir / "ledger.db")
        try:
            found = ledger.records()
        finally:
            ledger.close()
        check = verify_chain(found)
        assert check.ok, f"the ledger's chain is broken: {check}"
        return found

    def executions(self, thread_id: str) -> list[dict[str, Any]]:
        """The executions of tools the ledger holds for the conversation."""
        return [r.data for r in self.of_kind("execution", thread_id)]

    def of_kind(self, kind: str, thread_id: str) -> list[AuditRecord]:
        return [r for r in self.records() if r.kind == kind and r.thread_id == thread_id]

    def claim_elsewhere(self, thread_id: str, lasting: timedelta) -> bool:
        """The conversation's lease, for the other worker (`lasting` from now)."""
        now = datetime.now(UTC)
        return self.store.claim(thread_id, ELSEWHERE, now=now, until=now + lasting)

    def status(self, thread_id: str) -> str:
        row = self.store.load(thread_id)
        assert row is not None
        return str(row.status)

    # --- the story ----------------------------------------------------------------------

    async def paused(self) -> tuple[str, dict[str, Any]]:
        """Rita asks for a large transfer; once it waits for finance, Ada's inbox item."""
        thread_id = await self.desk(RITA).start(ASK)
        await poll(
            "the transfer to wait for finance",
            lambda: self.desk(RITA).conversation(thread_id),
            lambda c: c["status"] == "waiting" and bool(c["decisions"]),
        )
        return thread_id, await self.inbox_item(thread_id)

    async def inbox_item(self, thread_id: str) -> dict[str, Any]:
        items = await self.desk(ADA).inbox(tool="transfer")
        [item] = [item for item in items if item["threadId"] == thread_id]
        assert (item["status"], item["summary"]) == ("pending", "recipient=Ada, amount=5000")
        return item

    async def in_ada_inbox(self, decision_id: str) -> bool:
        return any(item["decisionId"] == decision_id for item in await self.desk(ADA).inbox())

    async def settled(self, thread_id: str, decision_id: str) -> Conversation:
        """The conversation once the restarted server has done with it: not running, and not
        waiting on an answer that was decided (the sweep carries those)."""

        async def read() -> tuple[Conversation, bool]:
            conversation = await self.desk(RITA).conversation(thread_id)
            return conversation, await self.in_ada_inbox(decision_id)

        found, _ = await poll(
            "the restarted server to finish or fail the conversation",
            read,
            lambda seen: (
                seen[0]["status"] in ("done", "failed")
                or (seen[0]["status"] == "waiting" and seen[1])
            ),
        )
        return found


async def poll(
    what: str,
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    timeout: float = SETTLE_TIMEOUT,
    interval: float = 0.05,
) -> T:
    """`read()` until `done` says so; fails naming `what` and the last thing read."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await read()
        if done(seen):
            return seen
        if time.monotonic() > deadline:
            pytest.fail(f"Waited {timeout:.0f} s for {what}; last seen: {_short(seen)}")
        await asyncio.sleep(interval)


def _short(seen: object) -> str:
    text = repr(seen)
    return text if len(text) < 3000 else text[:3000] + "…"


@contextlib.asynccontextmanager
async def serving(
    database_url: str, tmp_path: Path, *, lease_seconds: float = LEASE_SECONDS,
    token_delay_ms: int = TOKEN_DELAY_MS,
) -> AsyncIterator[App]:  # fmt: skip
    data_dir = tmp_path / "data"
    # Nothing of the developer's shell: the app's variables are these alone.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CHAT_APP_") and k != "REFLEX_REDIS_URL"}  # fmt: skip
    env.update(
        CHAT_APP_DATABASE_URL=database_url,
        CHAT_APP_DATA_DIR=str(data_dir),
        CHAT_APP_AUTH="demo",
        CHAT_APP_DESK_LEASE_SECONDS=str(lease_seconds),
        CHAT_APP_DEMO_TOKEN_DELAY_MS=str(token_delay_ms),
        PYTHONUNBUFFERED="1",
    )
    served = App(Server(env, tmp_path / "server.log"), database_url, data_dir)
    try:
        await served.start()
        yield served
    finally:
        await served.close()


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[App]:
    async with serving(database_url, tmp_path) as served:
        yield served


# --- the checks every outcome must pass ----------------------------------------------------


def transfer_call(conversation: Conversation) -> dict[str, Any]:
    calls = [c for m in conversation["messages"] for c in m["toolCalls"]]
    [call] = [c for c in calls if c["name"] == "transfer"]
    found: dict[str, Any] = call
    return found


def last_text(conversation: Conversation) -> str:
    text: str = conversation["messages"][-1]["text"]
    return text


def ran_once(app: App, thread_id: str, conversation: Conversation) -> str:
    """The transfer ran exactly once, as the call the conversation shows; its receipt."""
    runs = app.executions(thread_id)
    assert [run["toolName"] for run in runs] == ["transfer"], runs
    [run] = runs
    call = transfer_call(conversation)
    assert run["toolCallId"] == call["id"] and run["error"] is False
    # One decision, Ada's (a continuation the sweep carries runs as who decided).
    decisions = app.of_kind("decision", thread_id)
    assert [(d.actor, d.data["toolCallId"]) for d in decisions] == [(ADA, call["id"])]
    receipt: str = run["result"]["receipt"]
    return receipt


async def nothing_lost(app: App, thread_id: str, decision_id: str) -> Conversation:
    """What the restarted server shows must not lose the transfer: done with the receipt in
    the reply; or failed, saying why, and if Retry applies, retrying completes it; or failed
    saying the answer was applied (then Retry refuses, nothing runs again) with the receipt
    in the call's result. Never the decision back in the inbox; the transfer ran once."""
    conversation = await app.settled(thread_id, decision_id)
    assert conversation["status"] != "waiting", f"waiting again after its decision: {conversation}"
    assert not await app.in_ada_inbox(decision_id), "the decided transfer is pending again"
    if conversation["status"] == "failed":
        assert conversation["error"], f"failed without saying why: {conversation}"
        try:
            await app.desk(RITA).retry(thread_id)
        except DeskRequestError as refused:
            # Nothing to run again: only when the answer had been applied (the tool ran),
            # which the error says, and the call shows its result.
            assert (refused.status, refused.code) == (400, "invalid"), refused
            assert "applied" in conversation["error"], conversation["error"]
            call = transfer_call(conversation)
            assert call["hasResult"] and call["result"]["receipt"].startswith("rcpt-")
            assert ran_once(app, thread_id, conversation) == call["result"]["receipt"]
            return conversation
        conversation = await app.settled(thread_id, decision_id)
        assert conversation["status"] == "done", f"Retry did not complete it: {conversation}"
    assert conversation["status"] == "done", conversation
    receipt = ran_once(app, thread_id, conversation)
    assert last_text(conversation) == f"Sent 5,000 to Ada. Receipt id: {receipt}."
    assert conversation["error"] is None
    return conversation


# --- the cases -----------------------------------------------------------------------------


async def test_a_pending_decision_survives_a_kill(app: App) -> None:
    thread_id, item = await app.paused()
    await app.restart_after_kill()

    # After the restart (and its sweep, which leaves a waiting conversation alone): the same
    # decision, still Ada's to make.
    assert await app.inbox_item(thread_id) == item
    conversation = await app.desk(RITA).conversation(thread_id)
    assert conversation["status"] == "waiting", conversation
    assert conversation["waitingFor"].startswith("Waiting for finance"), conversation
    assert [d["decisionId"] for d in conversation["decisions"]] == [item["decisionId"]]
    assert app.executions(thread_id) == []

    result = await app.desk(ADA).decide(item["decisionId"], True)
    assert (result["status"], result["decision"]["decidedBy"]) == ("decided", ADA)
    done = await app.settled(thread_id, item["decisionId"])
    assert done["status"] == "done", done
    receipt = ran_once(app, thread_id, done)
    assert last_text(done) == f"Sent 5,000 to Ada. Receipt id: {receipt}."
    assert not await app.in_ada_inbox(item["decisionId"])


Moment = Literal["decided-not-carried", "mid-reply"]


@pytest.mark.parametrize("moment", ["decided-not-carried", "mid-reply"])
async def test_a_continuation_killed_midway_is_completed_or_failed_never_lost(
    app: App, moment: Moment
) -> None:
    thread_id, item = await app.paused()
    decision_id = item["decisionId"]
    if moment == "decided-not-carried":
        # Another worker holds the conversation (its lease, long), so the continuation waits
        # for it; the server dies once Ada's answer is stored, her request still unanswered.
        await poll(  # once the run that paused has let go of it
            "the conversation's lease",
            lambda: asyncio.to_thread(app.claim_elsewhere, thread_id, timedelta(hours=1)),
            bool,
        )
        deciding = asyncio.ensure_future(app.desk(ADA).decide(decision_id, True))
        await poll(
            "Ada's answer to be stored",
            lambda: asyncio.to_thread(app.store.decision, decision_id),
            lambda found: found is not None and found.status == "decided",
        )
        await app.kill()
        with pytest.raises(DeskRequestError) as cut:
            await deciding
        assert (cut.value.status, cut.value.code) == (0, "transport")
        # The other worker died too: its lease lapses (as it would, unrenewed).
        assert app.claim_elsewhere(thread_id, timedelta())
        assert app.status(thread_id) == "waiting"
        assert [row.id for row in app.store.answers_to_apply(thread_id)] == [decision_id]
        assert app.executions(thread_id) == []  # killed before the tool ran
    else:
        result = await app.desk(ADA).decide(decision_id, True)
        assert result["status"] == "decided"

        def replying(conversation: Conversation) -> bool:
            call = transfer_call(conversation)
            return conversation["status"] == "running" and bool(call["hasResult"])

        await poll(
            "the transfer's result, the reply streaming",
            lambda: app.desk(RITA).conversation(thread_id),
            replying,
        )
        await app.kill()
        assert app.status(thread_id) == "running"  # as the dead server left it
        assert len(app.executions(thread_id)) == 1  # killed after the tool ran

    await app.start()
    conversation = await nothing_lost(app, thread_id, decision_id)
    if moment == "decided-not-carried":
        # The sweep carried the stored answer: nobody had to do anything.
        assert conversation["status"] == "done"
        assert app.store.answers_to_apply(thread_id) == []
    else:
        # The transfer had run; its reply was cut off. The sweep asks the model to go on from
        # the result (a plain run: nothing answered again, the tool not run again): done.
        assert conversation["status"] == "done"


async def test_a_first_run_killed_while_streaming_is_failed_with_retry(app: App) -> None:
    thread_id = await app.desk(RITA).start(ASK)
    await poll(
        "the first reply to stream",
        lambda: app.desk(RITA).conversation(thread_id),
        lambda c: c["status"] == "running" and len(c["messages"]) == 2 and bool(last_text(c)),
    )
    await app.kill()
    assert app.status(thread_id) == "running"
    await app.start()

    conversation = await poll(
        "the restarted server to fail the interrupted run",
        lambda: app.desk(RITA).conversation(thread_id),
        lambda c: c["status"] != "running",
    )
    assert conversation["status"] == "failed", f"not failed: {conversation}"
    assert conversation["error"] == INTERRUPTED, conversation
    await app.desk(RITA).retry(thread_id)  # 202: the message runs again
    again = await poll(
        "Retry to bring the transfer's approval",
        lambda: app.desk(RITA).conversation(thread_id),
        lambda c: c["status"] not in ("running", "failed"),
    )
    assert again["status"] == "waiting" and again["error"] is None, again
    # The message once, its reply whole: what the killed run had streamed is gone.
    assert [(m["role"], m["text"]) for m in again["messages"]] == [
        ("user", ASK), ("assistant", "I'll send 5,000 to Ada once it is approved.")
    ]  # fmt: skip
    item = await app.inbox_item(thread_id)
    await app.desk(ADA).decide(item["decisionId"], True)
    await nothing_lost(app, thread_id, item["decisionId"])


async def test_a_server_stopped_mid_reply_hands_its_run_over_to_the_next_start(
    database_url: str, tmp_path: Path
) -> None:
    """SIGTERM while a continuation's reply streams, after the transfer ran: the server stops
    by itself, leaving the conversation running with its lease let go, and the next start goes
    on from the transfer's result at once. The lease here is an hour: nothing waits for it."""
    async with serving(database_url, tmp_path, lease_seconds=3600,
                       token_delay_ms=HANDED_OVER_TOKEN_DELAY_MS) as app:  # fmt: skip
        thread_id, item = await app.paused()
        await app.desk(ADA).decide(item["decisionId"], True)
        await poll(
            "the transfer's result, the reply streaming",
            lambda: app.desk(RITA).conversation(thread_id),
            lambda c: c["status"] == "running" and bool(transfer_call(c)["hasResult"]),
        )
        # uvicorn raises the signal again once it has shut down: the status says SIGTERM.
        assert app.server.terminate() in (0, -signal.SIGTERM)
        stopped = app.server.tail()
        assert "1 conversation running: " + thread_id in stopped
        assert "Application shutdown complete." in stopped
        row = app.store.load(thread_id)
        assert row is not None and row.status == "running"
        assert row.runner_until is not None
        assert row.runner_until.replace(tzinfo=UTC) <= datetime.now(UTC)

        await app.start()
        conversation = await nothing_lost(app, thread_id, item["decisionId"])
        assert conversation["status"] == "done"
        assert "its reply goes on from the tools' results" in app.server.tail()
