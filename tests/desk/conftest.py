"""The desk's tests run on each kind of the app's database (`database_url`, tests/conftest.py:
`test_x[sqlite]`, `test_x[postgresql]`), with the demo agent in this process (`World`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chat_app.client import read_manifest
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.desk import DeskStore
from chat_app.trust import Policy, Sealer, SQLiteLedger
from chat_app.trust.store import open_database
from tests.desk.world import World

SECRET = b"desk-tests-secret-desk-tests-secret"


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


@pytest.fixture
async def world(database_url: str, tmp_path: Path) -> AsyncIterator[World]:
    """A desk over a new, migrated database, the demo agent (its ledger in `tmp_path`) and the
    demo policy. At the end every desk's tasks are awaited, then the database is closed."""
    engine = open_database(database_url)
    policy = Policy.load(POLICY_PATH)
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(SECRET), ledger=ledger, policy=policy)
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    world = World(engine, DeskStore(engine), agent, policy, tuple(tools))
    try:
        yield world
        for desk in world.desks:
            await desk.wait_idle()
    finally:
        for desk in world.desks:
            await desk.fanout.aclose()
        ledger.close()
        engine.dispose()
