"""What the page shows of a decision nobody made in time: the card muted, "Expired: nobody
decided within 1 day.", and no buttons (views only; no browser)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chat_app.agent import Agent, event_to_wire
from chat_app.client import (
    ChatClient,
    ClientTool,
    InProcessConnection,
    InterruptItem,
    TransportError,
)
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.trust import DEMO_PEOPLE, Policy, Sealer, SQLiteLedger
from chat_app.ui.views import ToolCardView, build_views
from tests.ui.app_server import run_on_own_loop

RITA = DEMO_PEOPLE[0]
NOW = 1_900_000_000.0
NOTE = "Expired: nobody decided within 1 day."


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def demo_client(tmp_path: Path, clock: Clock) -> ChatClient:
    agent: Agent = build_demo_agent(
        demo_model(),
        sealer=Sealer(b"expired-views-secret-expired-views", clock=clock),
        ledger=SQLiteLedger(tmp_path / "ledger.db"),
        policy=Policy.load(POLICY_PATH),
    )
    agent.clock = clock
    tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
    run = partial(agent.run, identity=RITA)
    return ChatClient(InProcessConnection(run, encode=event_to_wire), tools=tools)


def cards(client: ChatClient) -> list[ToolCardView]:
    return [tool for message in build_views(client.state, {}).messages for tool in message.tools]


def test_an_expired_call_in_a_pending_batch_is_muted_with_the_note(tmp_path: Path) -> None:
    async def scenario() -> None:
        client = demo_client(tmp_path, Clock())
        await client.send("pay invoices")
        first = client.interrupts[0]
        await client.expire(first.id, NOTE)
        views = build_views(client.state, {})
        card = next(c for c in cards(client) if c.decision.id == first.id)
        assert (card.status, card.status_label, card.status_color) == (
            "expired", "Expired", "gray"
        )  # fmt: skip
        assert (card.decision.expired, card.decision.expired_note) == (True, NOTE)
        assert card.reason == ""  # said once, on the decision card
        assert card.decision.staged == "" and not card.decision.focus
        # Not open: two decisions left, and Approve all still offered for them.
        assert (views.open_count, views.batch_size, views.bulk_ok) == (2, 2, True)
        others = [c for c in cards(client) if c.decision.id != first.id]
        assert [c.decision.expired_note for c in others] == ["", ""]

    run_on_own_loop(scenario())


def test_once_its_result_is_in_the_call_reads_expired_with_its_words(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        client = demo_client(tmp_path, clock)
        await client.send("transfer 5000 to Ada")
        [item] = client.interrupts
        clock.now = NOW + 86400
        await client.expire(item.id, NOTE)
        [card] = cards(client)
        assert (card.status, card.status_label, card.reason, card.has_decision) == (
            "expired", "Expired", NOTE, False
        )  # fmt: skip
        assert card.result == ""

    run_on_own_loop(scenario())


def test_a_refused_late_answer_still_offers_to_start_over(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        client = demo_client(tmp_path, clock)
        await client.send("transfer 25 to Ada")
        [item] = client.interrupts
        clock.now = NOW + 86400
        await client.resolve_interrupt(item.id, approved=True)
        [card] = cards(client)
        assert card.decision.expired and card.decision.expired_note == ""

    run_on_own_loop(scenario())


class Down(InProcessConnection):
    """The demo agent, unreachable while `down`."""

    down = False

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[dict[str, Any]]:
        if self.down:
            raise TransportError("Could not reach the agent: connection refused.")
        async for event in super().stream(body):
            yield event


async def paused_then_down(phrase: str) -> tuple[ChatClient, Down, InterruptItem]:
    """Rita's client, paused on the one decision `phrase` asks for; the agent down since."""
    agent = build_demo_agent(demo_model())
    connection = Down(partial(agent.run, identity=RITA), encode=event_to_wire)
    tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
    client = ChatClient(connection, tools=tools)
    await client.send(phrase)
    [item] = client.interrupts
    connection.down = True
    return client, connection, item


def test_an_answer_a_failed_continuation_held_says_so_until_retry_sends_it(
    tmp_path: Path,
) -> None:
    """Approved while the agent was down: the card is open again (answer anew), and says
    the approval was not sent and that Retry sends it; once sent, the note is gone."""

    async def scenario() -> None:
        client, connection, item = await paused_then_down("delete project apollo")
        await client.resolve_interrupt(item.id, approved=True)
        assert client.state.can_retry
        [card] = [c.decision for c in cards(client) if c.has_decision]
        assert card.held == "Approved, not sent: Retry sends it again, or answer anew."
        assert card.can_resolve  # the controls are open again
        # Someone else's conversation (an approver reading it): Retry is not theirs to send,
        # and the answer held is the requester's, named so, with nothing to click.
        shown = build_views(client.state, {}, can_retry=False).messages
        [theirs] = [t.decision for m in shown for t in m.tools if t.has_decision]
        assert theirs.held == "Approved, not sent: the requester's Retry sends it again."
        assert theirs.held_only
        named = build_views(client.state, {}, can_retry=False, retry_by="Rita").messages
        [rita] = [t.decision for m in named for t in m.tools if t.has_decision]
        assert rita.held == "Approved by Rita, not sent: Rita's Retry sends it again."
        # An answer given at the desk is named as its giver's, for everyone, and nobody
        # answers it anew: only Retry sends it.
        given = {item.id: "Approved by Ada"}
        for retry, note in [(True, "Retry"), (False, "Rita's Retry")]:
            views = build_views(client.state, {}, at_desk=given, can_retry=retry, retry_by="Rita")
            [held] = [t.decision for m in views.messages for t in m.tools if t.has_decision]
            assert held.held == f"Approved by Ada, not sent: {note} sends it again."
            assert held.held_only
            assert views.open_count == 0
        connection.down = False
        await client.retry_interrupts()
        assert [c for c in cards(client) if c.has_decision] == []
        assert "Project apollo is deleted." in client.messages[-1].text

    run_on_own_loop(scenario())


def test_a_withdrawal_that_did_not_go_is_held_with_no_controls(tmp_path: Path) -> None:
    """Rita withdraws what finance decides while the agent is down: her card says the
    withdrawal waits for her Retry, and offers neither "waiting for finance" nor Withdraw
    again (only Retry sends it)."""

    async def scenario() -> None:
        client, connection, item = await paused_then_down("transfer 5000 to Ada")
        await client.cancel(item.id)
        assert client.state.can_retry

        def finance(_: object) -> str:
            return "Waiting for finance"

        views = build_views(client.state, {}, who_decides=finance, asked_by=lambda _: True)
        [held] = [t.decision for m in views.messages for t in m.tools if t.has_decision]
        assert held.held == "Withdrawn, not sent: Retry sends it again."
        assert held.held_only and not held.can_withdraw
        assert views.messages[-1].tools[0].status_label == "Not sent"
        connection.down = False
        await client.retry_interrupts()
        assert client.messages[-1].text == "Cancelled: transfer did not run."

    run_on_own_loop(scenario())
