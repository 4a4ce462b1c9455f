"""A worker that stops (SIGTERM, a deploy) hands its runs over (`Desk.hand_over`): they get a
few seconds to end on their own; those still going stop where they are, stored as running, and
the worker lets go of their leases at once. Another worker's `recover` (or this one's, once
started again) takes them over then, as it would a dead worker's, without waiting for the
lease to lapse: a reply cut after its tools' results goes on from them, a first reply cut off
is failed with Retry, an answer decided but not carried is carried. Nothing runs twice."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from ag_ui.core import EventType, RunAgentInput

from chat_app.client import INTERRUPTED, ChatClient
from chat_app.desk import Answer, Desk, DeskError, DeskStore
from chat_app.desk.desk import STOPPING, RunAs
from chat_app.ui import session as session_module
from chat_app.ui.session import PageRunConnection
from tests.desk.world import ADA, RITA, RunWrapper, World, texts


class Hold:
    """Holds a run's reply once it has begun (`held`): a continuation's once its tools'
    results came, a first run's after its first words; it goes on when `go` is set."""

    def __init__(self, *, continuation: bool) -> None:
        self.continuation = continuation
        self.held = asyncio.Event()
        self.go = asyncio.Event()

    def __call__(self, given: RunAgentInput, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return self._run(events) if bool(given.resume) == self.continuation else events

    async def _run(self, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        results = 0
        async for event in events:
            if event.type == EventType.TOOL_CALL_RESULT:
                results += 1
            elif event.type == EventType.TEXT_MESSAGE_CONTENT and (
                results or not self.continuation
            ):
                yield event
                self.held.set()
                await self.go.wait()
                continue
            yield event


def stopped_and_let_go(world: World, thread: str, worker: str) -> None:
    """As the stopping worker left it: running, its lease its own and lapsed already."""
    row = world.store.load(thread)
    assert row is not None
    assert (row.status, row.runner) == ("running", worker)
    assert row.runner_until is not None
    assert row.runner_until.replace(tzinfo=UTC) <= datetime.now(UTC)


async def stopping_mid_continuation(world: World) -> tuple[str, Desk, Hold]:
    """Ada approves Rita's large transfer on a worker whose continuation's reply holds once
    the transfer's result came back."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    hold = Hold(continuation=True)
    stopping = world.new_desk(worker="worker-stopping", wrap=hold)
    await stopping.decide(item.decision_id, ADA, Answer("approve"))
    await hold.held.wait()
    return thread, stopping, hold


async def test_a_continuation_cut_after_its_results_is_taken_over_at_once(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    thread, stopping, _ = await stopping_mid_continuation(world)
    with caplog.at_level(logging.WARNING, logger="chat_app.desk.desk"):
        assert await stopping.hand_over(drain_seconds=0) == [thread]
    assert f"Stopping with 1 conversation running: {thread}; handed over" in caplog.text
    await stopping.wait_idle()  # nothing of it goes on
    stopped_and_let_go(world, thread, "worker-stopping")
    assert len(world.executions()) == 1

    # Another worker, now (its lease as long as ever): no lapse to wait for.
    other = world.new_desk(worker="worker-2")
    assert await other.recover() == [thread]
    await other.wait_idle()
    view = await other.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("done", None)
    [run] = world.executions()  # the transfer once: the reply went on from its result
    assert texts(view)[-1] == f"Sent 5,000 to Ada. Receipt id: {run['result']['receipt']}."
    row = world.store.load(thread)
    assert row is not None and row.runner is None


async def test_runs_that_end_within_the_drain_are_not_handed_over(world: World) -> None:
    thread, stopping, hold = await stopping_mid_continuation(world)
    handing = asyncio.ensure_future(stopping.hand_over(drain_seconds=60))
    await asyncio.sleep(0)
    assert not handing.done()  # waiting for the run
    hold.go.set()
    assert await handing == []
    view = await stopping.view(thread, RITA)
    assert view.summary.status == "done"
    assert texts(view)[-1].startswith("Sent 5,000 to Ada.")
    row = world.store.load(thread)
    assert row is not None and row.runner is None  # released, not handed over
    assert len(world.executions()) == 1


async def test_a_first_reply_cut_off_is_failed_with_retry_by_the_next_worker(
    world: World,
) -> None:
    hold = Hold(continuation=False)
    stopping = world.new_desk(worker="worker-stopping", wrap=hold)
    thread = await stopping.start(RITA, "transfer 5000 to Ada")
    await hold.held.wait()
    assert await stopping.hand_over(drain_seconds=0) == [thread]
    stopped_and_let_go(world, thread, "worker-stopping")

    other = world.new_desk(worker="worker-2")
    assert await other.recover() == [thread]
    view = await other.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("failed", INTERRUPTED)
    await other.retry(thread, RITA)
    await other.wait_idle()
    again = await other.view(thread, RITA)
    assert again.summary.status == "waiting"
    assert texts(again) == ["transfer 5000 to Ada", "I'll send 5,000 to Ada once it is approved."]
    assert world.executions() == []


async def test_nothing_begins_on_a_worker_that_has_handed_over(world: World) -> None:
    """An answer given at a worker that is stopping is stored, and its continuation left to
    the next worker, which carries it at once."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    stopping = world.new_desk(worker="worker-stopping")
    assert await stopping.hand_over(drain_seconds=0) == []
    await stopping.decide(item.decision_id, ADA, Answer("approve"))
    await stopping.wait_idle()
    assert world.executions() == []
    assert [row.id for row in world.store.answers_to_apply(thread)] == [item.decision_id]

    other = world.new_desk(worker="worker-2")
    await other.recover()
    await other.wait_idle()
    view = await other.view(thread, RITA)
    assert view.summary.status == "done"
    assert len(world.executions()) == 1


async def test_a_stopping_worker_takes_no_message_and_says_so(world: World) -> None:
    """From the moment it begins to stop, a message, a new conversation or a Retry is
    refused (503 over HTTP), nothing stored: the person sends it again, to a worker that
    runs it."""
    thread = await world.start(RITA, "hello")
    stopping = world.new_desk(worker="worker-stopping")
    assert await stopping.hand_over(drain_seconds=0) == []
    for attempt in (
        stopping.start(RITA, "transfer 5000 to Ada"),
        stopping.post(thread, RITA, "transfer 5000 to Ada"),
    ):
        with pytest.raises(DeskError) as refused:
            await attempt
        assert (refused.value.code, refused.value.http_status) == ("unavailable", 503)
        assert refused.value.message == STOPPING
    assert [row.thread_id for row in world.store.conversations_of(RITA.email)] == [thread]
    row = world.store.load(thread)
    assert row is not None and row.status == "done"
    assert texts(await stopping.view(thread, RITA))[-1].startswith("I'm the ops desk demo agent")


class SlowBegin(DeskStore):
    """A store whose `begin_run` and `create` wait until the test lets them go (they run in
    a thread)."""

    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.entered = threading.Event()
        self.go = threading.Event()

    def _held(self) -> None:
        self.entered.set()
        assert self.go.wait(30)

    def begin_run(self, thread_id: str, now: datetime, *, if_version: int | None = None) -> bool:
        self._held()
        return super().begin_run(thread_id, now, if_version=if_version)

    def create(self, thread_id: str, **row: Any) -> None:
        self._held()
        super().create(thread_id, **row)


async def test_a_message_begun_as_the_worker_hands_over_is_refused_not_lost(
    world: World,
) -> None:
    """The hand-over runs while a message's begin is on its way to the database: the message
    is refused (its words are nowhere else), and the conversation is as it was."""
    thread = await world.start(RITA, "hello")
    store = SlowBegin(world.engine)
    stopping = world.new_desk(worker="worker-stopping", store=store)
    posting = asyncio.ensure_future(stopping.post(thread, RITA, "transfer 5000 to Ada"))
    assert await asyncio.to_thread(store.entered.wait, 30)
    assert await stopping.hand_over(drain_seconds=0) == []
    store.go.set()
    with pytest.raises(DeskError) as refused:
        await posting
    assert refused.value.code == "unavailable"
    await stopping.wait_idle()
    row = world.store.load(thread)
    assert row is not None and row.status == "done"
    assert "transfer 5000 to Ada" not in texts(await stopping.view(thread, RITA))


async def test_a_conversation_begun_as_the_worker_hands_over_is_refused_and_not_kept(
    world: World,
) -> None:
    """A new conversation whose row was on its way to the database as the hand-over ran is
    refused, and taken back: Rita's list does not gain an empty conversation."""
    store = SlowBegin(world.engine)
    stopping = world.new_desk(worker="worker-stopping", store=store)
    starting = asyncio.ensure_future(stopping.start(RITA, "transfer 5000 to Ada"))
    assert await asyncio.to_thread(store.entered.wait, 30)
    assert await stopping.hand_over(drain_seconds=0) == []
    store.go.set()
    with pytest.raises(DeskError) as refused:
        await starting
    assert (refused.value.code, refused.value.message) == ("unavailable", STOPPING)
    await stopping.wait_idle()
    assert world.store.conversations_of(RITA.email) == []
    assert world.executions() == []


async def test_a_pages_run_lets_go_of_its_lease_when_the_worker_stops(world: World) -> None:
    """A page's own run on a stored conversation holds its lease while its tab streams; the
    stopping worker waits for it, then lets the lease go, so the next page (here, another
    worker's) runs the conversation at once, not told it is busy for a minute."""
    thread = await world.start(RITA, "hello")
    stopping = world.new_desk(worker="worker-stopping")
    other = world.new_desk(worker="worker-2")
    inside, leave = asyncio.Event(), asyncio.Event()

    async def a_page_streaming() -> None:
        async with stopping.page_run(thread, [], RITA):
            inside.set()
            await leave.wait()  # the tab's handler, cut with the process

    page = asyncio.ensure_future(a_page_streaming())
    await inside.wait()
    with pytest.raises(DeskError) as busy:
        async with other.page_run(thread, [], RITA):
            pass
    assert busy.value.code == "busy"
    assert await stopping.hand_over(drain_seconds=0) == []
    row = world.store.load(thread)
    assert row is not None and row.runner is None
    async with other.page_run(thread, [], RITA):  # not busy
        pass
    leave.set()
    await page


async def test_a_pages_run_that_ends_within_the_drain_is_waited_for(world: World) -> None:
    thread = await world.start(RITA, "hello")
    stopping = world.new_desk(worker="worker-stopping")
    inside, leave = asyncio.Event(), asyncio.Event()

    async def a_page_streaming() -> None:
        async with stopping.page_run(thread, [], RITA):
            inside.set()
            await leave.wait()

    page = asyncio.ensure_future(a_page_streaming())
    await inside.wait()
    handing = asyncio.ensure_future(stopping.hand_over(drain_seconds=60))
    await asyncio.sleep(0.05)
    assert not handing.done()  # waiting for the page's run
    leave.set()
    assert await handing == []
    row = world.store.load(thread)  # its lease let go before the worker goes on stopping
    assert row is not None and row.runner is None
    await page


async def a_tab_streaming_at_a_stop(
    world: World, thread: str, hold: Hold, wrap: RunWrapper
) -> tuple[ChatClient, asyncio.Future[None], list[str]]:
    """Rita's tab sends a message in her stored conversation, on a worker that hands over
    while the reply holds (`hold`; `wrap` is the agent's stream): the tab, its send, and the
    words it had."""
    stopping = world.new_desk(worker="worker-stopping")
    row = world.store.load(thread)
    assert row is not None
    page = PageRunConnection(world.connection_for(wrap)(RunAs(RITA)), stopping, lambda: RITA)
    tab = ChatClient.restore(row.state, page, tools=list(world.tools))
    sending = asyncio.ensure_future(tab.send("transfer 5000 to Ada"))
    await hold.held.wait()
    shown = [m.text for m in tab.messages]
    assert await stopping.hand_over(drain_seconds=0) == []
    return tab, sending, shown


async def test_a_pages_stream_goes_no_further_once_its_lease_is_let_go(world: World) -> None:
    """With its lease let go, another worker may run the conversation: the stopping worker's
    page stream stops at the event it is at, passing nothing more to its tab and reading the
    agent's stream no further, until the process ends (cancelled here)."""
    thread = await world.start(RITA, "hello")
    hold = Hold(continuation=False)
    read_after: list[Any] = []

    def counted(given: RunAgentInput, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async def run() -> AsyncIterator[Any]:
            async for event in hold(given, events):
                if hold.go.is_set():
                    read_after.append(event)
                yield event

        return run()

    tab, sending, shown = await a_tab_streaming_at_a_stop(world, thread, hold, counted)
    hold.go.set()  # the agent's next words come
    while not read_after:
        await asyncio.sleep(0.01)
    for _ in range(100):
        await asyncio.sleep(0)
    assert len(read_after) == 1  # the one it was at, and no more
    assert [m.text for m in tab.messages] == shown and not sending.done()
    row = world.store.load(thread)
    assert row is not None and row.runner is None  # let go, for another worker to run it
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sending


async def test_a_stopped_page_stream_in_a_process_that_goes_on_ends_cut_off(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its process did not end after all (a hand-over outside a stop): the stopped stream
    ends once the wait is over, the tab's reply cut off with Retry, not streaming for good."""
    monkeypatch.setattr(session_module, "STOPPED_WAIT_SECONDS", 0.0)
    thread = await world.start(RITA, "hello")
    hold = Hold(continuation=False)
    tab, sending, _ = await a_tab_streaming_at_a_stop(world, thread, hold, hold)
    hold.go.set()
    await sending
    assert (tab.state.error, tab.state.can_resend) == (INTERRUPTED, True)


async def test_a_pages_run_begun_as_the_leases_are_let_go_is_refused_not_kept(
    world: World,
) -> None:
    """A page's run that takes the lease once the worker has let the others go would keep it
    (nothing lets it go after): it is refused, the lease given back, nothing sent."""
    thread = await world.start(RITA, "hello")
    stopping = world.new_desk(worker="worker-stopping")
    await stopping.hand_over(drain_seconds=0)
    with pytest.raises(DeskError) as refused:
        async with stopping.page_run(thread, [], RITA):
            raise AssertionError("nothing runs on a worker that has handed over")
    assert (refused.value.code, refused.value.message) == ("unavailable", STOPPING)
    row = world.store.load(thread)
    assert row is not None and row.runner is None
    # A continuation's answers are not taken either: nothing was sent, as it says.
    asked = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    with pytest.raises(DeskError) as refused:
        async with stopping.page_run(asked, [item.item_id], RITA):
            raise AssertionError("nothing runs on a worker that has handed over")
    assert refused.value.message == STOPPING
    assert (await world.only_item(ADA)).status == "pending"
