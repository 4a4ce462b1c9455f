"""`ChatClient.go_on`: after a reply cut off once its answers were applied, the model goes on
from the tools' results, and nothing that was answered runs again."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from ag_ui.core import BaseEvent, RunAgentInput

from chat_app.agent import Agent, Model, ModelEvent, ModelRequest, ScriptedModel, event_to_wire
from chat_app.agent.models import ModelError
from chat_app.client import (
    ChatClient,
    ClientTool,
    InProcessConnection,
    TextPart,
    TransportError,
    UsageError,
    read_manifest,
)
from chat_app.demo import build_demo_agent
from chat_app.demo.script import demo_script
from chat_app.trust import DEMO_PEOPLE, Sealer, SQLiteLedger

RITA = DEMO_PEOPLE[0]


def _demo(ledger: SQLiteLedger, model: Model | None = None) -> tuple[Agent, list[ClientTool]]:
    """The demo agent as a sealed server runs it, and the tools its client types."""
    agent = build_demo_agent(model, sealer=Sealer(b"k" * 32), ledger=ledger)
    return agent, list(read_manifest({"tools": agent.tool_manifest()}).tools)


def _in_process(agent: Agent) -> InProcessConnection:
    return InProcessConnection(
        lambda run_input: agent.run(run_input, identity=RITA), encode=event_to_wire
    )


async def _transfer_approved(
    ledger: SQLiteLedger,
) -> tuple[ChatClient, InProcessConnection, list[ClientTool]]:
    """Rita's transfer of 25, approved and run on the demo agent: the client, its connection
    and its tools."""
    agent, tools = _demo(ledger)
    connection = _in_process(agent)
    client = ChatClient(connection, tools=tools)
    await client.send("transfer 25 to Ada")
    await client.resolve_interrupt(client.interrupts[0].id, approved=True)
    return client, connection, tools


async def test_a_reply_lost_after_its_tool_ran_is_written_from_the_result(
    tmp_path: Path,
) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    client, connection, tools = await _transfer_approved(ledger)
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


async def test_a_reply_cut_mid_sentence_is_replaced_not_kept_above_the_new_one(
    tmp_path: Path,
) -> None:
    """The worker died as the reply streamed: "Sent 25 to" was stored. Going on, the model
    writes the reply again from the result, and the half sentence goes (it stayed as a
    bubble of its own above the whole reply, and in the history the model read)."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    client, connection, tools = await _transfer_approved(ledger)
    whole = client.messages[-1]
    assert whole.text.startswith("Sent 25 to Ada. Receipt id: rcpt-")

    half = dataclasses.replace(whole, parts=(TextPart(content="Sent 25 to"),))
    state = client.state
    cut = ChatClient.restore(
        dataclasses.replace(state, messages=(*state.messages[:-1], half)), connection,
        tools=tools,
    )  # fmt: skip
    await cut.go_on()

    assert cut.error is None
    assert [m.text for m in cut.messages[-2:]] == [client.messages[-2].text, whole.text]
    assert all(m.text != "Sent 25 to" for m in cut.messages)
    kinds = [record.kind for record in ledger.records()]
    assert kinds.count("execution") == 1


async def test_going_on_needs_a_conversation_and_no_open_decision(tmp_path: Path) -> None:
    agent, tools = _demo(SQLiteLedger(tmp_path / "l.db"))
    connection = _in_process(agent)
    client = ChatClient(connection, tools=tools)
    with pytest.raises(UsageError, match="no conversation"):
        await client.go_on()
    await client.send("transfer 25 to Ada")
    with pytest.raises(UsageError, match="pending interrupts"):
        await client.go_on()


class FailsOnce(Model):
    """The demo's scripted model, but its first turn that `when` picks fails, as a
    provider's 500 would."""

    name = "fails-once"

    def __init__(self, when: Callable[[ModelRequest], bool]) -> None:
        self.inner = ScriptedModel(demo_script, token_delay=0)
        self.when = when
        self.failed = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if not self.failed and self.when(request):
            self.failed = True
            raise ModelError(
                "Provider failed with HTTP 500.", code="provider-error", provider="Provider"
            )
        async for event in self.inner.stream(request):
            yield event


async def test_a_reply_that_fails_after_its_tool_ran_goes_on_rather_than_answering_again(
    tmp_path: Path,
) -> None:
    """The model fails on the turn after an approved tool ran: the approval was applied (its
    result came back), so it is not open again nor sent again (that is a replay the server
    refuses); the client goes on from the result, and nothing runs twice."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    model = FailsOnce(lambda request: request.messages[-1].role == "tool")  # the tool ran
    agent, tools = _demo(ledger, model)
    connection = _in_process(agent)
    client = ChatClient(connection, tools=tools)
    await client.send("transfer 25 to Ada")
    await client.resolve_interrupt(client.interrupts[0].id, approved=True)

    state = client.state
    assert model.failed and state.error == "Provider failed with HTTP 500."
    assert (state.can_go_on, state.can_retry, state.can_resend) == (True, False, False)
    assert [item.status for item in client.interrupts] == []  # nothing to answer again
    [call] = client.messages[-1].tool_calls
    assert call.has_output
    # Kept across a reload, as every other way out of a failure is.
    restored = ChatClient.restore(state.to_json(), connection, tools=tools)
    assert restored.state.can_go_on and restored.error is not None

    await restored.go_on()
    assert restored.error is None and not restored.state.can_go_on
    assert restored.messages[-1].text.startswith("Sent 25 to Ada. Receipt id: rcpt-")
    kinds = [record.kind for record in ledger.records()]
    assert kinds.count("execution") == 1 and kinds.count("decision") == 1


async def test_going_on_that_fails_again_may_go_on_again(tmp_path: Path) -> None:
    """A `go_on` whose own run fails leaves the way on, not a resend: running the message
    again would ask for the tool again."""
    agent, tools = _demo(SQLiteLedger(tmp_path / "l.db"))
    down = False

    def run(run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        if down:
            raise TransportError("connection refused")
        return agent.run(run_input, identity=RITA)

    connection = InProcessConnection(run, encode=event_to_wire)
    client = ChatClient(connection, tools=tools)
    await client.send("transfer 25 to Ada")
    await client.resolve_interrupt(client.interrupts[0].id, approved=True)
    state = client.state
    cut = ChatClient.restore(
        dataclasses.replace(state, messages=state.messages[:-1]), connection, tools=tools
    )
    down = True
    await cut.go_on()
    assert cut.error is not None and "connection refused" in cut.error.message
    assert (cut.state.can_go_on, cut.state.can_resend) == (True, False)
    down = False
    await cut.go_on()
    assert cut.error is None and cut.messages[-1].text.startswith("Sent 25 to Ada.")


async def test_a_reply_that_fails_after_a_question_was_answered_goes_on(tmp_path: Path) -> None:
    """A question's answer leaves no tool result to show it was applied: the model's failure
    (`RUN_ERROR` code `model-…`) does, since the agent asks its model only after applying the
    answers. The answer is not sent again (the agent would refuse it as a replay); going on,
    the agent asks the question again."""
    model = FailsOnce(lambda request: True)
    agent, tools = _demo(SQLiteLedger(tmp_path / "l"), model)
    connection = _in_process(agent)
    client = ChatClient(connection, tools=tools)
    await client.send("ship order 12")  # asks the shipping form before the model's turn
    assert not model.failed
    await client.resolve_interrupt(
        client.interrupts[0].id, response={"speed": "overnight", "giftWrap": False}
    )
    assert model.failed and client.state.error_code == "model-provider-error"
    assert (client.state.can_go_on, client.state.can_retry) == (True, False)
    assert client.interrupts == ()

    first = client.state.answered[-1].item.id
    # The answer was for the failed run alone (its hooks read it there): going on, the agent
    # asks again, as a new question, and the second answer gets the reply.
    await client.go_on()
    assert client.error is None
    [again] = client.interrupts
    assert again.id != first and again.status == "pending"
    await client.resolve_interrupt(again.id, response={"speed": "overnight", "giftWrap": False})
    assert client.error is None
    assert "overnight" in client.messages[-1].text
