"""A worker that dies mid-run: its conversation is left `running` under a lease nobody renews.
Once the lease lapses, `recover()` (any worker) shows it failed: with Retry when the answer in
flight may not have reached the agent (Retry sends it again, as who decided, and the agent's
ledger runs each tool once), saying the reply was cut off when its result had come back.
Answers decided but never carried (the worker died between deciding and continuing) are
carried by `recover()`. The crash is the row as the dying worker last stored it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest
from ag_ui.core import (
    EventType,
    RunAgentInput,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
)
from sqlalchemy import Row, select, update

from chat_app.client import (
    ANSWERED_BEFORE,
    INTERRUPTED,
    LEFT_BEHIND,
    ChatClient,
    ChatMessage,
    ClientState,
    MockConnection,
    TextPart,
    ToolCallPart,
)
from chat_app.desk import LEASE_SECONDS, Answer, Desk, DeskError, thread_topic
from chat_app.desk import desk as desk_module
from chat_app.trust import RedisLedger
from chat_app.trust.tables import conversation_states, conversations, decisions
from chat_app.ui.answered import IN_THE_LEDGER
from chat_app.ui.views import build_views
from tests.desk.world import ADA, RITA, World, state_of, texts
from tests.live_server import free_port

Stop = Literal["before-the-agent", "after-the-tools-ran", "after-the-results-came"]


class Stall:
    """Holds a continuation at `stop` until `go`, then breaks it (the connection dies with
    its worker). `held` once it is holding."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop
        self.held = asyncio.Event()
        self.go = asyncio.Event()

    def __call__(self, given: RunAgentInput, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return self._run(events) if given.resume else events

    async def _run(self, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        if self.stop == "before-the-agent":
            await self._hold()
        results = 0
        async for event in events:
            if event.type == EventType.TOOL_CALL_RESULT:
                if self.stop == "after-the-tools-ran":
                    await self._hold()
                results += 1
            elif results and self.stop == "after-the-results-came":
                await self._hold()
            yield event

    async def _hold(self) -> None:
        self.held.set()
        await self.go.wait()
        raise ConnectionError("the worker died")


async def until(
    world: World, desk: Desk, thread: str, done: Callable[[Row[Any]], bool]
) -> Row[Any]:
    """The conversation's row once `done` says so, waiting for the desk's change notices."""
    seen: list[str] = []
    for _ in range(200):
        row = world.store.load(thread)
        assert row is not None
        if done(row):
            return row
        seen.append(row.status)
        await desk.fanout.wait([thread_topic(thread)], timeout=10)
    raise AssertionError(f"the conversation never got there: {seen}")


async def crash_while_continuing(world: World, stop: Stop) -> str:
    """Ada approves Rita's large transfer on a worker that dies at `stop` during the
    continuation: the conversation's row is left as it was while it ran (`running`, the
    continuation in flight, that worker's lease). Returns the thread id."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    stall = Stall(stop)
    doomed = world.new_desk(worker="worker-doomed", wrap=stall)
    await doomed.decide(item.decision_id, ADA, Answer("approve"))
    await stall.held.wait()

    def mid_run(row: Row[Any]) -> bool:
        state = ClientState.from_json(row.state)
        if row.status != "running" or not state.resuming:
            return False
        has_results = any(p.has_output for m in state.messages for p in m.tool_calls)
        return has_results == (stop == "after-the-results-came")

    crashed = await until(world, doomed, thread, mid_run)
    assert crashed.runner == "worker-doomed" and crashed.runner_until is not None
    with world.engine.connect() as connection:
        carried = connection.execute(
            select(decisions.c.id, decisions.c.applied, decisions.c.tell_at).where(
                decisions.c.thread_id == thread
            )
        ).all()
    # The worker dies: nothing it does afterwards reaches the database. (Its task is let go
    # to end, and what it stored on the way out is put back as the crash left it.)
    stall.go.set()
    await doomed.wait_idle()
    with world.engine.begin() as connection:
        connection.execute(
            update(conversations)
            .where(conversations.c.thread_id == thread)
            .values(
                {
                    column: getattr(crashed, column)
                    for column in (
                        "status",
                        "waiting_for",
                        "error",
                        "runner",
                        "runner_until",
                        "updated_at",
                    )
                }
            )  # fmt: skip
        )
        connection.execute(
            update(conversation_states)
            .where(conversation_states.c.thread_id == thread)
            .values(state=crashed.state)
        )
        for decision_id, applied, tell_at in carried:
            connection.execute(
                update(decisions)
                .where(decisions.c.id == decision_id)
                .values(applied=applied, tell_at=tell_at)
            )
    return thread


def after_the_lease() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS + 5)


async def recovered(world: World, thread: str) -> Desk:
    """Another worker, once the dead one's lease has lapsed, runs `recover()`: the
    conversation is failed, with the INTERRUPTED message when Retry applies, or, when only
    the model's reply was lost, it goes on."""
    # While the dead worker's lease holds, nobody takes the conversation over.
    assert await world.desk.recover() == []
    await world.desk.wait_idle()
    assert (await world.desk.view(thread, RITA)).summary.status == "running"

    later = world.new_desk(worker="worker-2", clock=after_the_lease)
    assert await later.recover() == [thread]
    row = world.store.load(thread)  # as `recover` left it, or going on already
    assert row is not None
    state = ClientState.from_json(row.state)
    if any(call.has_output for message in state.messages for call in message.tool_calls):
        # A reply lost after its answers were applied: it goes on (or has gone on already).
        assert row.status in ("failed", "running", "done")
    else:
        assert row.status == "failed" and row.runner is None
    return later


@pytest.mark.parametrize("stop", ["before-the-agent", "after-the-tools-ran"])
async def test_an_interrupted_continuation_is_failed_then_retried_once(
    world: World, stop: Stop
) -> None:
    thread = await crash_while_continuing(world, stop)
    assert len(world.executions()) == (0 if stop == "before-the-agent" else 1)
    later = await recovered(world, thread)
    row = world.store.load(thread)
    assert row is not None and row.error == INTERRUPTED
    assert ClientState.from_json(row.state).can_retry  # the client cannot tell it was applied

    await later.retry(thread, RITA)
    await later.wait_idle()
    [run] = world.executions()  # once, whatever was sent twice
    assert run["toolName"] == "transfer"
    view = await later.view(thread, RITA)
    if stop == "before-the-agent":  # Retry carried the answer the agent never got
        assert (view.summary.status, view.summary.error) == ("done", None)
        assert texts(view)[-1] == f"Sent 5,000 to Ada. Receipt id: {run['result']['receipt']}."
        [decision] = world.records("decision")
        assert decision.actor == "ada@example.com"  # as Ada, who decided; not Rita
        return
    # The agent had applied it (its reply was lost with the worker): it refuses the replay,
    # and the conversation says so rather than waiting for finance, which has nothing left.
    assert (view.summary.status, view.summary.waiting_for) == ("failed", "")
    assert view.summary.error == ANSWERED_BEFORE
    assert await later.inbox(ADA) == ([], 0)
    await later.post(thread, RITA, "delete project apollo")  # and it goes on
    await later.wait_idle()
    view = await later.view(thread, RITA)
    assert (view.summary.status, view.summary.waiting_for) == ("waiting", "Waiting for Rita")
    assert [item.name for item in (await later.inbox(RITA))[0]] == ["delete_project"]


async def test_a_continuation_cut_off_after_its_results_is_completed_by_recover(
    world: World,
) -> None:
    """The worker died after the transfer's result was stored, before the model's reply: the
    client knows it was applied, so recovery asks the model to go on from the result (a plain
    run: nothing answered again, nothing run twice) and the conversation ends with the
    receipt."""
    thread = await crash_while_continuing(world, "after-the-results-came")
    later = await recovered(world, thread)
    await later.wait_idle()
    view = await later.view(thread, RITA)
    assert view.summary.status == "done"
    assert "Receipt id" in state_of(view).messages[-1].text
    assert len(world.executions()) == 1
    # Carried by the run that died: Rita is due to be told how Ada's approval ended.
    with world.engine.connect() as connection:
        carried = connection.execute(
            select(decisions.c.applied, decisions.c.tell_at).where(decisions.c.thread_id == thread)
        ).one()
    assert carried.applied and carried.tell_at is not None
    with pytest.raises(DeskError) as refused:
        await later.retry(thread, RITA)
    assert refused.value.code == "invalid"
    await later.post(thread, RITA, "hello")
    await later.wait_idle()
    assert (await later.view(thread, RITA)).summary.status == "done"
    assert len(world.executions()) == 1


async def test_answers_decided_but_never_carried_are_carried_by_recover(world: World) -> None:
    """The worker that decided died before its continuation began (here: the conversation's
    lease is another's, which dies): the answer is stored, decided and not applied."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    now = datetime.now(UTC)
    assert world.store.claim(thread, "worker-dead", now=now,
                             until=now + timedelta(seconds=LEASE_SECONDS))  # fmt: skip
    result = await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert result.status == "decided"
    await world.desk.wait_idle()
    assert world.continuations == [] and world.executions() == []
    assert [row.id for row in world.store.answers_to_apply(thread)] == [item.decision_id]
    assert (await world.desk.view(thread, RITA)).summary.status == "waiting"

    later = world.new_desk(worker="worker-2", clock=after_the_lease)
    assert await later.recover() == []  # nothing was running
    await later.wait_idle()
    view = await later.view(thread, RITA)
    assert view.summary.status == "done"
    [run] = world.executions()
    assert texts(view)[-1] == f"Sent 5,000 to Ada. Receipt id: {run['result']['receipt']}."
    assert world.store.answers_to_apply(thread) == []
    await later.recover()
    await later.wait_idle()
    assert len(world.continuations) == 1 and len(world.executions()) == 1


async def test_a_lease_that_has_not_lapsed_is_not_taken(world: World) -> None:
    """A short lease and clocks: while a worker's lease holds (it may be alive), its running
    conversation is left alone; once it lapses, another worker recovers it."""
    thread = await world.start(RITA, "hello")
    start = datetime.now(UTC)
    assert world.store.claim(thread, "worker-alive", now=start,
                             until=start + timedelta(seconds=5))  # fmt: skip
    with world.engine.begin() as connection:
        connection.execute(
            update(conversations)
            .where(conversations.c.thread_id == thread)
            .values(status="running")
        )
    soon = world.new_desk(worker="worker-2", clock=lambda: start + timedelta(seconds=4),
                          lease_seconds=5)  # fmt: skip
    assert await soon.recover() == []
    late = world.new_desk(worker="worker-3", clock=lambda: start + timedelta(seconds=6),
                          lease_seconds=5)  # fmt: skip
    assert await late.recover() == [thread]
    row = world.store.load(thread)
    assert row is not None and row.status != "running" and row.runner is None


class FailsFirst:
    """The continuations' way to the agent breaks before the agent sees them, once."""

    def __init__(self) -> None:
        self.broke = False

    def __call__(self, given: RunAgentInput, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return self._broken() if given.resume and not self.broke else events

    async def _broken(self) -> AsyncIterator[Any]:
        self.broke = True
        raise ConnectionError("the ledger did not answer")
        yield  # an async generator that fails at its first step


class NeverEnds:
    """The agent's reply to a message: a word, then nothing but the wait, for ever (a remote
    agent that sends keep-alive comments alone), once; then as the agent answers."""

    def __init__(self) -> None:
        self.hung = False

    def __call__(self, given: RunAgentInput, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return events if given.resume or self.hung else self._hung(given)

    async def _hung(self, given: RunAgentInput) -> AsyncIterator[Any]:
        self.hung = True
        yield RunStartedEvent(thread_id=given.thread_id, run_id=given.run_id)
        yield TextMessageStartEvent(message_id="m-hung", role="assistant")
        yield TextMessageContentEvent(message_id="m-hung", delta="Thinking")
        await asyncio.Event().wait()


async def test_a_run_that_never_ends_is_stopped_in_time_and_may_be_run_again(
    world: World,
) -> None:
    """The agent never ends its reply: the desk stops the run once its time is up
    (`Desk.run_seconds`), says so, and the conversation takes a Retry (which runs the
    message again) and new messages; it no longer holds it for ever."""
    desk = world.new_desk(worker="worker-2", wrap=NeverEnds())
    desk.run_seconds = 1
    thread = await desk.start(RITA, "hello")
    await desk.wait_idle()
    view = await desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("failed", (
        "The agent did not finish within 1 s, so its run was stopped. Retry sends it again."
    ))  # fmt: skip
    assert not view.running
    await desk.retry(thread, RITA)
    await desk.wait_idle()
    again = await desk.view(thread, RITA)
    assert again.summary.status == "done"
    assert texts(again)[-1].startswith("I'm the ops desk demo agent.")
    assert [m for m in texts(again) if m == "Thinking"] == []  # the cut-off reply went


async def test_an_answer_the_agent_never_took_is_not_told_as_carried(world: World) -> None:
    """The continuation fails before the agent gives anything back (its ledger down, say):
    nothing ran, so Rita is not told it was approved. The desk does not send it again by
    itself (behind an agent without a ledger that could run the tool twice): her Retry
    does, once."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    broken = FailsFirst()
    desk = world.new_desk(worker="worker-2", wrap=broken)
    result = await desk.decide(item.decision_id, ADA, Answer("approve"))
    assert result.status == "decided"
    await desk.wait_idle()
    assert broken.broke and world.executions() == []
    with world.engine.connect() as connection:
        row = connection.execute(select(decisions).where(decisions.c.thread_id == thread)).one()
    assert row.tell_at is None
    assert (await desk.view(thread, RITA)).summary.status == "failed"
    await desk.recover()  # a later look sends nothing by itself
    await desk.wait_idle()
    assert world.executions() == []

    failed = world.store.load(thread)
    assert failed is not None
    await desk.retry(thread, RITA)
    # A second click, before the first Retry's run has even started, runs nothing more.
    with pytest.raises(DeskError, match="The conversation is running; wait for its reply."):
        await desk.retry(thread, RITA)
    await desk.wait_idle()
    assert len(world.executions()) == 1
    assert (await desk.view(thread, RITA)).summary.status == "done"
    # Nor one that read the failure before the first Retry ran, and comes once it is over:
    # the run stored its end since (under load, the two clicks can come so).
    assert not world.store.begin_run(thread, desk.clock(), if_version=failed.version)
    assert world.store.begin_run(thread, desk.clock())  # a new message may go on
    world.store.undo_begin_run(thread, "done")
    # The trail says who sent Ada's answer again; the decision record stays hers.
    [resent] = world.records("resent")
    assert (resent.actor, resent.thread_id) == (RITA.email, thread)
    assert resent.data == {
        "answers": [{"interruptId": item.item_id, "name": "transfer", "outcome": "approved",
                     "decidedBy": ADA.email}],
        "verifiedBy": RITA.method,
    }  # fmt: skip
    [decided] = world.records("decision")
    assert decided.actor == ADA.email
    # Ada's answer has gone now: Rita is due to be told how it ended, once.
    with world.engine.connect() as connection:
        row = connection.execute(select(decisions).where(decisions.c.thread_id == thread)).one()
    assert row.tell_at is not None and row.status == "decided" and row.decided_by == ADA.email


def test_a_run_going_on_from_results_that_a_dead_worker_cut_goes_on_again() -> None:
    """A worker died while a conversation went on from applied answers (or ran a tool by
    itself): recovery goes on from the results again. Running the message again would ask
    for the transfer again, and run it twice once approved."""
    user = ChatMessage(id="m1", role="user", parts=(TextPart(content="transfer 5000 to Ada"),))
    ran = ToolCallPart(id="c1", name="transfer", status="done", has_output=True, output={})
    assistant = ChatMessage(id="m2", role="assistant", parts=(ran,))
    going = ClientState(thread_id="t", messages=(user, assistant), status="streaming")
    nowhere = MockConnection(lambda body: [])
    restored = ChatClient.restore(going, nowhere, died=True).state
    assert (restored.can_go_on, restored.can_resend, restored.error) == (True, False, INTERRUPTED)
    assert desk_module._reply_lost(restored)
    # Without a result since the message, its own run is sent again, as before.
    asked = replace(going, messages=(user,))
    again = ChatClient.restore(asked, nowhere, died=True).state
    assert (again.can_go_on, again.can_resend) == (False, True)


async def test_an_answer_the_ledger_took_too_late_ends_its_batch_and_a_message_goes_on(
    world: World,
) -> None:
    """Ada's approval does not get through: the ledger answered too late, and took it after
    all (its write ran once it woke). Rita's Retry is refused as a replay: the batch is
    over, and says that what it approved may not have run; the transfer never runs, and
    her next message goes on."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    desk = world.new_desk(worker="worker-2", wrap=FailsFirst())
    await desk.decide(item.decision_id, ADA, Answer("approve"))
    await desk.wait_idle()
    world.in_the_ledger(thread, item.item_id, ADA)

    await desk.retry(thread, RITA)
    await desk.wait_idle()
    view = await desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("failed", ANSWERED_BEFORE)
    state = ClientState.from_json(view.state)
    assert state.answered_before
    shown = build_views(state, {})
    [card] = [t.decision for m in shown.messages for t in m.tools if t.has_decision]
    assert (card.held, card.held_only, shown.open_count) == (IN_THE_LEDGER, True, 0)
    assert (await desk.inbox(ADA))[1] == (await desk.inbox(RITA))[1] == 0  # nothing to answer

    await desk.post(thread, RITA, "what time is it")
    await desk.wait_idle()
    assert world.executions("transfer") == []
    went_on = await desk.view(thread, RITA)
    assert went_on.summary.status == "done"
    # Its card no longer reads as waiting for anyone: the conversation went on without it.
    [transfer] = [t for m in build_views(ClientState.from_json(went_on.state), {}).messages
                  for t in m.tools if t.name == "transfer"]  # fmt: skip
    assert (transfer.status_label, transfer.reason, transfer.has_decision) == (
        "No result", LEFT_BEHIND, False
    )
    # The transfer left behind is no part of the next pause: that one is answered alone.
    await desk.post(thread, RITA, "delete project apollo")
    await desk.wait_idle()
    mine = await world.only_item(RITA)
    assert (await desk.decide(mine.decision_id, RITA, Answer("approve"))).status == "decided"
    await desk.wait_idle()
    assert len(world.executions("delete_project")) == 1
    assert world.executions("transfer") == []
    assert (await desk.view(thread, RITA)).summary.status == "done"


async def test_a_retry_the_trail_cannot_record_sends_nothing_and_may_be_tried_again(
    world: World,
) -> None:
    """The worker Rita's Retry reaches writes its trail to a Redis that does not answer:
    it cannot say who sent Ada's answer again, so it sends nothing (503), and the
    conversation is as it was; a Retry that can, sends it, once."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    desk = world.new_desk(worker="worker-2", wrap=FailsFirst())
    await desk.decide(item.decision_id, ADA, Answer("approve"))
    await desk.wait_idle()
    silent = RedisLedger(f"redis://127.0.0.1:{free_port()}/0")
    cut_off = world.new_desk(worker="worker-3", audit=silent.append_async)
    with pytest.raises(DeskError) as refused:
        await cut_off.retry(thread, RITA)
    assert (refused.value.code, refused.value.http_status) == ("unavailable", 503)
    assert refused.value.message.startswith("Nothing was sent: the approval ledger")
    assert (await desk.view(thread, RITA)).summary.status == "failed"
    assert world.executions() == [] and world.records("resent") == []

    await desk.retry(thread, RITA)
    await desk.wait_idle()
    assert len(world.executions("transfer")) == 1
    assert len(world.records("resent")) == 1
