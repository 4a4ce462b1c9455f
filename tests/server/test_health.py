"""`GET /api/health` asks the app's database: 200 while it answers, 503 once it does not."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine
from starlette.applications import Starlette

import chat_app.server.health as health_module
from chat_app.server.health import health_routes
from chat_app.trust.ledger import Ledger, SQLiteLedger, open_ledger
from chat_app.trust.store import create_database_engine, open_database
from tests.live_server import free_port
from tests.redis_server import redis_server


async def health(engine: Engine | None, ledger: Ledger | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=Starlette(routes=health_routes(engine, ledger)))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        return await http.get("/api/health")


async def test_a_database_that_answers_is_healthy(database_url: str) -> None:
    engine = open_database(database_url)
    try:
        answer = await health(engine)
    finally:
        engine.dispose()
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    answer = await health(None)  # no desk: the server answering is all there is to say
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})


async def test_a_database_that_does_not_answer_is_a_503(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    sqlite = create_database_engine(f"sqlite:///{folder / 'app.sqlite3'}")
    folder.rmdir()
    folder.write_text("the folder is gone")  # its file can be opened no more
    postgresql = create_database_engine(
        f"postgresql://nobody@127.0.0.1:{free_port()}/nothing?connect_timeout=2"
    )
    for engine in (sqlite, postgresql):
        try:
            answer = await health(engine)
        finally:
            engine.dispose()
        assert answer.status_code == 503
        body = answer.json()
        assert body["status"] == "unavailable"
        assert body["error"].startswith("The app's database did not answer (")


async def test_a_database_that_takes_no_calls_is_a_503_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PostgreSQL address that accepts connections and never answers (a hung server, a
    black hole): the check says so within HEALTH_SECONDS rather than hanging."""
    monkeypatch.setattr(health_module, "HEALTH_SECONDS", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing ever answers them
        port = silent.getsockname()[1]
        engine = create_database_engine(f"postgresql://nobody@127.0.0.1:{port}/nothing")
        try:
            answer = await health(engine)
        finally:
            engine.dispose()
    assert answer.status_code == 503
    assert answer.json() == {
        "status": "unavailable", "error": "The app's database did not answer within 0.5 s."
    }  # fmt: skip


async def test_a_ledger_that_stops_answering_is_a_503(tmp_path: Path) -> None:
    """The Redis ledger gone (the database still answering): nothing can be decided, and the
    load balancer hears it."""
    with redis_server(tmp_path) as url:
        ledger = open_ledger(url, tmp_path)
        answer = await health(None, ledger)
        assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    answer = await health(None, ledger)
    assert (answer.status_code, answer.json()) == (
        503,
        {"status": "unavailable", "error": "The ledger did not answer."},
    )  # its address and the driver's words are for the log, not whoever asks


async def test_a_ledger_gone_silent_is_asked_once_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A store that takes no calls holds the thread that asked it: the checks that come
    while one is stuck wait for that one (503 in time) rather than each holding another."""
    monkeypatch.setattr(health_module, "HEALTH_SECONDS", 0.2)
    started, release = threading.Semaphore(0), threading.Event()

    class Silent(SQLiteLedger):
        def check(self) -> None:
            started.release()
            release.wait(10)

    ledger = Silent(tmp_path / "ledger.db")
    app = Starlette(routes=health_routes(None, ledger))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as http:
            for _ in range(4):
                answer = await http.get("/api/health")
                assert answer.status_code == 503
                assert answer.json()["error"] == "The ledger did not answer within 0.2 s."
        assert started.acquire(timeout=0) and not started.acquire(timeout=0)  # one thread
    finally:
        release.set()
        ledger.close()
