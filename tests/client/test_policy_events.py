"""The client shows what the policy decided: the rule on the tool call, and the refusal of an
answer someone may not give, with who may."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from chat_app.agent import event_to_wire
from chat_app.client import ChatClient, ClientTool, InProcessConnection, ToolCallPart
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger

RITA, ADA, _, _ = DEMO_PEOPLE[:4]


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


def client_for(who: Identity, tmp_path: Path) -> ChatClient:
    agent = build_demo_agent(
        demo_model(),
        sealer=Sealer(b"client-policy-secret-client-policy"),
        ledger=SQLiteLedger(tmp_path / "ledger.db"),
        policy=Policy.load(POLICY_PATH),
    )
    connection = InProcessConnection(partial(agent.run, identity=who), encode=event_to_wire)
    return ChatClient(connection, tools=ClientTool.from_manifest(
        {"tools": agent.tool_manifest()}, {}))  # fmt: skip


def calls(client: ChatClient) -> list[ToolCallPart]:
    return [part for message in client.messages for part in message.tool_calls]


async def test_a_call_the_policy_approved_names_its_rule(tmp_path: Path) -> None:
    client = client_for(RITA, tmp_path)
    await client.send("refund 20 to order 42")
    [call] = calls(client)
    assert (call.name, call.decided_by_rule, call.decision, call.status) == (
        "refund", "small-refunds", "approved", "done"
    )  # fmt: skip
    assert not client.interrupts


async def test_the_requester_is_refused_on_the_item_and_it_stays_open(tmp_path: Path) -> None:
    client = client_for(RITA, tmp_path)
    await client.send("transfer 5000 to Ada")
    [item] = client.interrupts
    assert item.metadata is not None
    policy = item.metadata["chat_app:policy"]
    assert isinstance(policy, dict) and policy["rule"] == "large-transfers"
    await client.resolve_interrupt(item.id, approved=True)
    [item] = client.interrupts
    assert item.error is not None and item.error.code == "forbidden"
    assert item.error.message == "Needs approval from role finance, not the requester."
    assert not client.state.can_retry
    [call] = calls(client)
    # The refused approval did not stand: the call waits again, for someone who may decide.
    assert (call.status, call.decision) == ("awaiting-approval", None)
