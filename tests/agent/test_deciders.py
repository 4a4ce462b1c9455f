"""A batch decided by several people: each answer checked, and recorded, as its own decider's
(`Agent.run(deciders=)`, which only the approval desk, in the same process, passes)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput

from chat_app.agent import event_to_wire
from chat_app.demo import build_demo_agent, demo_model
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger
from tests.agent.builders import collect, run_input

RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]
#: The middle invoice (980) is finance's to approve, never the requester's; the others Rita's.
POLICY = (
    '[roles]\nfinance = ["ada@example.com"]\n\n'
    '[[rules]]\nname = "big-invoices"\ntool = "pay_invoice"\n'
    "when = { properties = { amount = { exclusiveMinimum = 500 } } }\n"
    'approvers = ["role:finance"]\nnot_requester = true\n'
)


async def paused_batch(ledger: SQLiteLedger) -> tuple[Any, list[dict[str, Any]], list[Any]]:
    agent = build_demo_agent(
        demo_model(), sealer=Sealer(b"d" * 32), ledger=ledger, policy=Policy.parse(POLICY)
    )
    body = {"threadId": "t", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "pay invoices"}]}  # fmt: skip
    paused = await collect(agent, body, RITA)
    items = paused[-1]["outcome"]["interrupts"]
    assert [i["metadata"]["chat_app:policy"]["rule"] for i in items] == [None, "big-invoices", None]
    return agent, paused, items


async def continue_as(
    agent: Any, paused: list[dict[str, Any]], items: list[Any], who: Identity,
    deciders: dict[str, Identity] | None,
) -> list[dict[str, Any]]:  # fmt: skip
    resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
              for i in items]  # fmt: skip
    given: RunAgentInput = run_input(threadId="t", runId="r2", parentRunId="r1",
                                     messages=paused[-2]["messages"], resume=resume)  # fmt: skip
    return [event_to_wire(e) async for e in agent.run(given, identity=who, deciders=deciders)]


async def test_each_answer_of_a_batch_is_its_own_deciders(ledger: SQLiteLedger) -> None:
    agent, paused, items = await paused_batch(ledger)
    mine = {items[0]["id"]: RITA, items[2]["id"]: RITA}
    done = await continue_as(agent, paused, items, ADA, mine)
    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
    decisions = {r.data["interruptId"]: r.actor for r in ledger.records() if r.kind == "decision"}
    assert decisions == {items[0]["id"]: RITA.email, items[1]["id"]: ADA.email,
                         items[2]["id"]: RITA.email}  # fmt: skip
    assert len([r for r in ledger.records() if r.kind == "execution"]) == 3


async def test_without_them_one_person_answers_the_whole_batch(ledger: SQLiteLedger) -> None:
    agent, paused, items = await paused_batch(ledger)
    refused = await continue_as(agent, paused, items, ADA, None)
    assert refused[-1]["type"] == "RUN_ERROR"
    codes = {e["interruptId"]: e["code"]
             for e in refused[-1]["metadata"]["tanstack"]["interruptErrors"]
             if "interruptId" in e}  # fmt: skip
    assert codes == {items[0]["id"]: "forbidden", items[2]["id"]: "forbidden"}
    assert [r for r in ledger.records() if r.kind == "execution"] == []
