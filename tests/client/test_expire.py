"""`ChatClient.expire`: a decision nobody made in time, closed with the standard cancellation.

The item and its tool call show as expired, with the note, at once; nothing can answer it any
more; the wire carries the same cancellation as `cancel`; and the server's expired result
keeps the call `expired`, with the result's words.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from chat_app.agent import Agent, event_to_wire
from chat_app.client import (
    ChatClient,
    ClientState,
    ClientTool,
    InProcessConnection,
    ToolCallPart,
    UsageError,
)
from chat_app.client._messages import status_after_result, with_result
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.interrupts import CANCELLED_RESULT, ItemInterruptError, expired_result
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger, expiry_words
from tests.client.builders import approval, hydrated, plain_tool, typed_generic
from tests.client.conftest import Recording

RITA, ADA, _, _ = DEMO_PEOPLE[:4]
NOW = 1_900_000_000.0
DAY = 86400.0
NOTE = "Expired: nobody decided within 1 day."


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def demo_agent(tmp_path: Path, clock: Clock) -> Agent:
    agent = build_demo_agent(
        demo_model(),
        sealer=Sealer(b"expire-client-secret-expire-client", clock=clock),
        ledger=SQLiteLedger(tmp_path / "ledger.db"),
        policy=Policy.load(POLICY_PATH),
    )
    agent.clock = clock
    return agent


def client_for(agent: Agent, who: Identity = RITA) -> tuple[ChatClient, Recording]:
    connection = Recording(
        InProcessConnection(partial(agent.run, identity=who), encode=event_to_wire)
    )
    tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
    definitions = list(agent.definitions.values())
    return ChatClient(connection, tools=tools, interrupts=definitions), connection


def calls(client: ChatClient) -> list[ToolCallPart]:
    return [part for message in client.messages for part in message.tool_calls]


def last_text(client: ChatClient) -> str:
    return client.messages[-1].text


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


async def test_expire_sends_the_cancel_and_the_call_shows_expired(tmp_path: Path) -> None:
    clock = Clock()
    client, connection = client_for(demo_agent(tmp_path, clock))
    await client.send("transfer 5000 to Ada")
    [item] = client.interrupts
    clock.now = NOW + DAY
    await client.expire(item.id, NOTE)
    assert connection.requests[-1]["resume"] == [{"interruptId": item.id, "status": "cancelled"}]
    [call] = calls(client)
    assert (call.status, call.error, call.decision) == ("expired", NOTE, "expired")
    assert call.output == expired_result(error=expiry_words("within 1 day"))
    assert last_text(client) == (
        "Nobody decided on the transfer in time: the request expired unanswered, so it did "
        "not run."
    )
    assert not client.interrupts and client.error is None


async def test_expire_shows_at_once_and_nothing_answers_the_item(tmp_path: Path) -> None:
    clock = Clock()
    client, connection = client_for(demo_agent(tmp_path, clock))
    await client.send("pay invoices")
    first, second, third = client.interrupts
    sent = len(connection.requests)
    await client.expire(first.id, NOTE)
    assert len(connection.requests) == sent  # the batch is not complete: nothing sent yet
    shown = {item.id: item for item in client.interrupts}[first.id]
    assert (shown.status, shown.expiry_note, shown.expired(0)) == ("expired", NOTE, True)
    part = next(p for p in calls(client) if p.approval_id == first.id)
    assert (part.status, part.error) == ("expired", NOTE)
    with pytest.raises(UsageError, match="has expired"):
        await client.resolve_interrupt(first.id, approved=True)
    with pytest.raises(UsageError, match="has expired"):
        await client.cancel(first.id)
    # Approve all leaves it as it is; the state survives a reload.
    assert client.state.can_approve_all
    restored = ChatClient.restore(ClientState.from_json(client.state.to_json()), connection)
    again = {item.id: item for item in restored.interrupts}[first.id]
    assert (again.status, again.expiry_note) == ("expired", NOTE)
    clock.now = NOW + DAY
    await client.expire(second.id, NOTE)
    await client.expire(third.id, NOTE)
    resume = connection.requests[-1]["resume"]
    assert sorted(entry["interruptId"] for entry in resume) == sorted(
        item.id for item in (first, second, third)
    )
    assert all(entry == {"interruptId": entry["interruptId"], "status": "cancelled"}
               for entry in resume)  # fmt: skip
    assert [p.status for p in calls(client)] == ["expired"] * 3
    assert "Nobody decided on the pay invoice for INV-1001, INV-1002 and INV-1003 in time" in (
        last_text(client)
    )


async def test_approve_all_skips_an_expired_item(tmp_path: Path) -> None:
    clock = Clock()
    client, connection = client_for(demo_agent(tmp_path, clock))
    await client.send("pay invoices")
    first, _, _ = client.interrupts
    await client.expire(first.id, NOTE)
    await client.resolve_interrupts(True)
    resume = {e["interruptId"]: e for e in connection.requests[-1]["resume"]}
    assert resume[first.id] == {"interruptId": first.id, "status": "cancelled"}
    assert [e["payload"] for i, e in resume.items() if i != first.id] == [{"approved": True}] * 2
    # Not past its expiry on the server: an ordinary cancellation, still shown as closed.
    part = next(p for p in calls(client) if p.approval_id == first.id)
    assert part.output == CANCELLED_RESULT and part.status == "expired"
    assert [p.status for p in calls(client) if p.approval_id != first.id] == ["done", "done"]


async def test_expire_closes_a_question_too(tmp_path: Path) -> None:
    clock = Clock()
    client, connection = client_for(demo_agent(tmp_path, clock))
    await client.send("ship order 42")
    [item] = client.interrupts
    clock.now = NOW + DAY + 1
    await client.expire(item.id, "Expired: nobody answered within 1 day.")
    [entry] = connection.requests[-1]["resume"]
    assert (entry["interruptId"], entry["status"]) == (item.id, "cancelled")
    assert "tanstack:interruptContinuation" in entry["metadata"]
    assert last_text(client) == "Nobody answered in time, so order 42 stays where it is."


def test_the_manager_keeps_an_expired_question_expired_through_a_failed_send() -> None:
    tool = plain_tool()
    manager = hydrated(typed_generic("q1"), approval(tool, "c1"), tools=[tool])
    assert manager.expire_item("q1", NOTE) is None
    [question, _] = manager.interrupts
    assert (question.status, question.expiry_note) == ("expired", NOTE)
    assert question.resolution is not None and question.resolution["status"] == "cancelled"
    with pytest.raises(UsageError):
        manager.clear_item("q1")
    assert manager.cancel_all() is not None  # the approval is cancelled; the question stays
    submission = manager.active_submission
    assert submission is not None
    manager.submission_failed(submission, message="down")
    manager.submission_settled(submission)
    assert [i.status for i in manager.interrupts] == ["expired", "error"]
    assert manager.retry() is submission


def test_an_expiry_the_server_refuses_makes_the_item_answerable_again() -> None:
    tool = plain_tool()
    manager = hydrated(approval(tool, "c1"), tools=[tool])
    submission = manager.expire_item("approval_c1", NOTE)
    assert submission is not None
    refusal = ItemInterruptError(
        thread_id=submission.thread_id, interrupted_run_id=submission.interrupted_run_id,
        interrupt_id="approval_c1", code="forbidden", message="Not yours.",
    )  # fmt: skip
    manager.submission_failed(submission, message="refused", errors=[refusal])
    manager.submission_settled(submission)
    [item] = manager.interrupts
    assert (item.status, item.expiry_note) == ("error", None)
    assert manager.resolve("approval_c1", approved=True) is not None


def test_an_expired_result_makes_the_call_expired_whatever_was_decided() -> None:
    part = ToolCallPart(id="c1", name="transfer", status="cancelled", decision="cancelled")
    output = expired_result(error=expiry_words("within 2 h"))
    assert status_after_result(part, output, True) == "expired"
    done = with_result(part, output, True)
    assert (done.status, done.error) == ("expired", "Expired: nobody decided within 2 h.")
    # A cancellation's result stays a cancellation.
    assert with_result(part, CANCELLED_RESULT, True).status == "cancelled"
    # An error that only looks alike is not an expiry.
    assert with_result(part, {"error": "Expired: no", "expired": "yes"}, True).status == (
        "cancelled"
    )


async def test_an_answer_the_server_refuses_leaves_no_answered_question(tmp_path: Path) -> None:
    clock = Clock()
    client, connection = client_for(demo_agent(tmp_path, clock))
    await client.send("ship order 42")
    [item] = client.interrupts
    clock.now = NOW + DAY + 1  # past its expiry on the server; this client's clock is not
    await client.resolve_interrupt(item.id, response={"speed": "express", "giftWrap": False})
    assert len(connection.requests) == 2  # sent, and refused
    [refused] = client.interrupts
    assert refused.errors and refused.errors[0].code == "expired"
    assert client.state.answered == ()
