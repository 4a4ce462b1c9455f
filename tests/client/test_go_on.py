"""`ChatClient.go_on`: after a reply cut off once its answers were applied, the model goes on
from the tools' results, and nothing that was answered runs again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chat_app.agent import event_to_wire
from chat_app.client import ChatClient, InProcessConnection, UsageError, read_manifest
from chat_app.demo import build_demo_agent
from chat_app.trust import DEMO_PEOPLE, Sealer, SQLiteLedger

RITA = DEMO_PEOPLE[0]


async def test_a_reply_lost_after_its_tool_ran_is_written_from_the_result(
    tmp_path: Path,
) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger)
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    connection = InProcessConnection(
        lambda run_input: agent.run(run_input, identity=RITA), encode=event_to_wire
    )
    client = ChatClient(connection, tools=tools)
    await client.send("transfer 25 to Ada")
    await client.resolve_interrupt(client.interrupts[0].id, approved=True)
    reply = client.messages[-1].text
    assert reply.startswith("Sent 25 to Ada. Receipt id: rcpt-")

    # The reply is lost (a worker died as it streamed): what remains ends with the result.
    state = client.state
    cut = ChatClient.restore(
        dataclasses.replace(state, messages=state.messages[:-1]), connection, tools=tools
    )
    assert any(call.has_output for call in cut.messages[-1].tool_calls)
    await cut.go_on()

    assert cut.error is None
    assert cut.messages[-1].text == reply  # the same receipt: the tool did not run again
    kinds = [record.kind for record in ledger.records()]
    assert kinds.count("execution") == 1 and kinds.count("decision") == 1


async def test_going_on_needs_a_conversation_and_no_open_decision(tmp_path: Path) -> None:
    agent = build_demo_agent(sealer=Sealer(b"k" * 32), ledger=SQLiteLedger(tmp_path / "l.db"))
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    connection = InProcessConnection(
        lambda run_input: agent.run(run_input, identity=RITA), encode=event_to_wire
    )
    client = ChatClient(connection, tools=tools)
    with pytest.raises(UsageError, match="no conversation"):
        await client.go_on()
    await client.send("transfer 25 to Ada")
    with pytest.raises(UsageError, match="pending interrupts"):
        await client.go_on()
