"""A batch decided by several people: Rita answers her own items, Ada (finance) the one only
finance may approve; the continuation carries each answer as its own decider's."""

from __future__ import annotations

from pathlib import Path

from chat_app.client import read_manifest
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.desk import Answer, DeskStore
from chat_app.trust import Policy, Sealer, SQLiteLedger
from chat_app.trust.store import open_database
from tests.desk.world import ADA, RITA, World, texts
from tests.trust.policies import BIG_INVOICES


async def test_each_person_answers_their_own_part_of_a_batch(
    database_url: str, tmp_path: Path
) -> None:
    engine = open_database(database_url)
    policy = Policy.parse(POLICY_PATH.read_text() + BIG_INVOICES)
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(b"m" * 32), ledger=ledger, policy=policy)
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    world = World(engine, DeskStore(engine), agent, policy, tuple(tools))
    try:
        thread = await world.start(RITA, "pay invoices")
        mine, _ = await world.desk.inbox(RITA)
        assert len(mine) == 2  # her own two; the big one is finance's
        for item in mine:
            result = await world.desk.decide(item.decision_id, RITA, Answer("approve"))
            assert result.status == "decided"
        await world.desk.wait_idle()
        assert world.executions() == []  # the batch still waits for finance
        big = await world.only_item(ADA)
        assert big.summary.startswith("invoice=INV-1002")
        await world.desk.decide(big.decision_id, ADA, Answer("approve"))
        await world.desk.wait_idle()
        view = await world.desk.view(thread, RITA)
        assert view.summary.status == "done", view.summary
        assert len(world.executions("pay_invoice")) == 3
        actors = sorted(r.actor or "" for r in world.records("decision"))
        assert actors == [ADA.email, RITA.email, RITA.email]
        assert texts(view)[-1]
    finally:
        for desk in world.desks:
            await desk.wait_idle()
            await desk.fanout.aclose()
        ledger.close()
        engine.dispose()
