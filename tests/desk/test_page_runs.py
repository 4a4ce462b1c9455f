"""A page running a stored conversation itself (`Desk.page_run`): it holds the conversation
while it runs, and an answer given in the chat and one given from the inbox cannot both go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from sqlalchemy import update

from chat_app.client import ANSWERED_BEFORE, ChatClient, Connection
from chat_app.desk import Answer, DeskError, DeskStats, InboxItem, RunAs, inbox_topic
from chat_app.desk import desk as desk_module
from chat_app.trust import Identity
from chat_app.trust.tables import conversations
from chat_app.ui.session import ANSWERED_MEANWHILE, DecidedElsewhere, PageRunConnection
from tests.desk.world import ADA, RITA, World


async def test_an_answer_from_the_inbox_first_refuses_the_chats(world: World) -> None:
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    assert (await world.desk.decide(item.decision_id, ADA, Answer("approve"))).status == (
        "decided"
    )
    with pytest.raises(DeskError) as refused:
        async with world.desk.page_run(thread, [item.item_id], RITA):
            raise AssertionError("the chat's withdrawal must not be sent")
    assert refused.value.code == "already-decided"
    assert refused.value.message == "Already decided by Ada (approved)."
    await world.desk.wait_idle()
    assert len(world.executions("transfer")) == 1


async def test_an_answer_from_the_inbox_first_is_named_while_its_run_holds_the_lease(
    world: World,
) -> None:
    """Ada's approval sets off the desk's run, which holds the conversation: Rita's tab,
    answering the same item meanwhile, is told who decided it, not to wait."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    assert world.store.claim(thread, "another-worker", now=world.desk.clock(),
                             until=world.desk.clock().replace(year=2100))  # fmt: skip
    assert (await world.desk.decide(item.decision_id, ADA, Answer("approve"))).status == (
        "decided"
    )
    with pytest.raises(DeskError) as refused:
        async with world.desk.page_run(thread, [item.item_id], RITA):
            raise AssertionError("the chat's withdrawal must not be sent")
    assert (refused.value.code, refused.value.message) == (
        "already-decided", "Already decided by Ada (approved)."
    )
    # Nothing of its own to answer: still busy.
    with pytest.raises(DeskError) as busy:
        async with world.desk.page_run(thread, [], RITA):
            raise AssertionError("nothing runs while another worker holds it")
    assert busy.value.code == "busy"


async def test_an_answer_from_the_chat_first_refuses_the_inboxs(world: World) -> None:
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    async with world.desk.page_run(thread, [item.item_id], RITA):
        with pytest.raises(DeskError) as refused:
            await world.desk.decide(item.decision_id, ADA, Answer("approve"))
        assert refused.value.code == "already-decided"
        assert refused.value.message == "Already answered in the conversation by Rita."
        # While the page runs it, nobody else does: a message posted meanwhile waits.
        with pytest.raises(DeskError) as busy:
            await world.desk.post(thread, RITA, "hello")
        assert busy.value.code == "busy"
    assert (await world.desk.inbox(ADA))[1] == 0
    await world.desk.wait_idle()
    assert world.executions("transfer") == []


async def test_a_page_run_waits_for_the_desks_own(world: World) -> None:
    thread = await world.start(RITA, "transfer 5000 to Ada")
    await world.only_item(ADA)
    assert world.store.claim(thread, "another-worker", now=world.desk.clock(),
                             until=world.desk.clock().replace(year=2100))  # fmt: skip
    with pytest.raises(DeskError) as busy:
        async with world.desk.page_run(thread, [], RITA):
            raise AssertionError("nothing runs while another worker holds it")
    assert busy.value.code == "busy"


async def test_a_page_takes_the_lease_and_its_answers_in_one_transaction(world: World) -> None:
    """`DeskStore.lease_for_page`: what `page_run` used to ask in three (the version, the
    claim, the answers), each with its own trip to a database thread."""
    now = world.desk.clock()
    until = now.replace(year=2100)
    lease = world.store.lease_for_page
    assert lease("unknown", "page-1", ["x"], email="r", name="R", now=now, until=until) == "new"
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    assert world.store.claim(thread, "another-worker", now=now, until=until)
    assert lease(thread, "page-1", [], email="r", name="R", now=now, until=until) == "busy"
    world.store.release(thread, "another-worker")
    assert lease(thread, "page-1", [item.item_id], email=RITA.email, name=RITA.name, now=now,
                 until=until) == "taken"  # fmt: skip
    assert (await world.desk.inbox(ADA))[1] == 0  # answered in the chat: off the inbox
    # The same person again (a Retry) takes them again; the lease is the page's already.
    assert lease(thread, "page-1", [item.item_id], email=RITA.email, name=RITA.name, now=now,
                 until=until) == "taken"  # fmt: skip
    world.store.release(thread, "page-1")
    taken = lease(thread, "page-2", [item.item_id], email=ADA.email, name=ADA.name, now=now,
                  until=until)  # fmt: skip
    assert not isinstance(taken, str) and taken.item_id == item.item_id
    world.store.release(thread, "page-2")


async def test_answers_a_page_takes_are_announced_to_the_inboxes_at_once(world: World) -> None:
    """A page's own approval takes its decision when the run starts: the inboxes (and the
    headers' counts) hear of it then, not at their next poll once the run is over."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    fanout = world.desk.fanout
    mark = fanout.mark([inbox_topic()])
    async with world.desk.page_run(thread, [item.item_id], RITA):
        changed = await fanout.wait([inbox_topic()], 5.0, since=mark)
        assert changed == {inbox_topic()}  # while the run is still going
        assert (await world.desk.inbox(ADA))[1] == 0


async def test_the_view_says_whether_a_run_is_going_on_in_the_conversation(world: World) -> None:
    """`ConversationView.running`: a tab showing a version stored mid-run shows it running
    (`ChatClient.restore(running=True)`), not as a send it lost. A page's run holds the
    lease and its writes on the way carry the status they would end with; the desk's runs
    are stored `running` until their last write."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    await world.only_item(ADA)
    assert not (await world.desk.view(thread, RITA)).running
    async with world.desk.page_run(thread, [], RITA):
        assert (await world.desk.view(thread, RITA)).running
        assert (await world.desk.view(thread, ADA)).running  # read-only, as she sees it
    await world.desk.wait_idle()
    assert not (await world.desk.view(thread, RITA)).running

    # Another worker's lease alone is no run of a page: the desk's own say so by status.
    assert world.store.claim(thread, "another-worker", now=world.desk.clock(),
                             until=world.desk.clock().replace(year=2100))  # fmt: skip
    assert not (await world.desk.view(thread, RITA)).running
    with world.store.engine.begin() as connection:  # as `Desk._save` stores a run's steps
        connection.execute(
            update(conversations).where(conversations.c.thread_id == thread)
            .values(status="running")
        )  # fmt: skip
    assert (await world.desk.view(thread, RITA)).running


async def test_a_page_run_longer_than_a_lease_keeps_it(world: World) -> None:
    """A reply can take longer than a lease: the page renews it while it runs, so no other
    worker takes the conversation, and tabs watching it still read it as running."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    # Renewed every third of a lease: a second leaves a renewal 0.67 s to reach the database
    # (0.3 s, 0.2 s of slack, lapsed once in CI with the machine busy).
    desk = world.new_desk(worker="worker-2", lease_seconds=1.0)
    async with desk.page_run(thread, [], RITA):
        await asyncio.sleep(2.5)  # over two leases
        assert (await desk.view(thread, RITA)).running
        now = desk.clock()
        assert not world.store.claim(thread, "worker-3", now=now, until=now.replace(year=2100))
    assert not (await desk.view(thread, RITA)).running


async def test_an_answer_a_page_takes_is_kept_with_what_it_changed(world: World) -> None:
    thread = await world.start(RITA, "delete project apollo")  # no rule: Rita decides
    item = await world.only_item(RITA)
    entry = {"interruptId": item.item_id, "status": "resolved",
             "payload": {"approved": True, "editedArgs": {"name": "hermes"}}}  # fmt: skip
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}):
        pass
    [taken] = await world.desk.decisions_of(thread)
    assert (taken.outcome, taken.decided_by) == ("edited", RITA.email)
    assert (taken.args, taken.edited_args) == ({"name": "apollo"}, {"name": "hermes"})


@pytest.mark.parametrize(
    ("answer", "outcome", "step"),
    [
        ({"status": "resolved", "payload": {"approved": True}}, "approved", "executed"),
        ({"status": "cancelled"}, "cancelled", "continued"),  # nothing was to run
    ],
)
async def test_a_page_runs_answer_is_traced_and_timed_as_a_desk_continuations(
    world: World, monkeypatch: pytest.MonkeyPatch, answer: dict[str, Any], outcome: str,
    step: str,
) -> None:  # fmt: skip
    """Carried by the page's own run, a decision has its "executed" (or "continued") step
    and its whole trace, and the run counts in `chat_app_continuation_seconds`, as the
    desk's runs do."""
    steps: list[tuple[str, str]] = []
    closed: list[tuple[str, str, str]] = []
    monkeypatch.setattr(
        desk_module, "decision_span", lambda decision, name, **_: steps.append((decision, name))
    )
    monkeypatch.setattr(
        desk_module, "close_decision",
        lambda decision_id, *, attributes, error="", **_: closed.append(
            (decision_id, str(attributes["decision.outcome"]), error)
        ),
    )  # fmt: skip
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    entry = {"interruptId": item.item_id, **answer}
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}) as end:
        end.finished = True  # the page's client ran the continuation here, to its end

    assert [name for id_, name in steps if id_ == item.decision_id] == [
        "paused", "decided", step
    ]  # fmt: skip
    assert closed == [(item.decision_id, outcome, "")]
    assert DeskStats(world.engine).histogram("continued_seconds", [60.0]).count == 1


async def test_a_page_run_cut_off_before_its_end_carried_nothing_anyone_knows_of(
    world: World,
) -> None:
    """The stream ended without `RUN_FINISHED` or `RUN_ERROR` (a proxy closed it): whether
    the agent took the answers is not known, so they are not counted as carried, and a
    Retry the ledger refuses as a replay ends the batch rather than being told "Already
    answered, in another tab"."""
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    entry = {"interruptId": item.item_id, "status": "resolved", "payload": {"approved": True}}
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}):
        pass  # cut off: neither end came
    assert not await world.desk.carried(thread, [item.item_id])


async def test_a_continuation_that_fails_marks_its_run_and_its_decision_failed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[tuple[str, str]] = []
    failed: list[str] = []
    monkeypatch.setattr(
        desk_module, "close_decision",
        lambda decision_id, *, error="", **_: closed.append((decision_id, error)),
    )  # fmt: skip
    monkeypatch.setattr(desk_module, "fail_current_span", failed.append)

    def down(given: Any, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async def run() -> AsyncIterator[Any]:
            if given.resume:
                raise ConnectionError("the model is down")
            async for event in events:
                yield event

        return run()

    world.desk = world.new_desk(worker="worker-down", wrap=down)
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()

    assert len(failed) == 1 and "the model is down" in failed[0]
    assert closed == [(item.decision_id, failed[0])]


async def test_a_page_run_that_ended_in_an_error_is_not_traced_as_carried(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent refused the page's answer, or the model failed (the page saw `RUN_ERROR`):
    nothing ran, so no "executed" step, no closed trace (a refused one waits again and is
    decided later) and no continuation time."""
    steps: list[str] = []
    closed: list[str] = []
    monkeypatch.setattr(desk_module, "decision_span", lambda _, name, **__: steps.append(name))
    monkeypatch.setattr(desk_module, "close_decision", lambda given, **_: closed.append(given))
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    entry = {"interruptId": item.item_id, "status": "cancelled"}
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}) as end:
        end.errored = True

    assert steps[-1] == "decided" and "executed" not in steps
    assert closed == []
    assert DeskStats(world.engine).histogram("continued_seconds", [60.0]).count == 0


async def test_an_answer_the_ledger_holds_already_ends_the_batch_unless_a_run_was_stored(
    world: World,
) -> None:
    """The engine's ledger holds Rita's answer already, from a send whose end was lost (a
    ledger that answered too late, a worker that died): her tab's continuation is refused as
    a replay, which reaches her client as the engine says it (the batch is over: it asks no
    more, and a new message goes on). Stored over the version her tab had, it says so; over
    a version another tab's run stored since, it is refused (`stale`) and writes nothing."""
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    world.in_the_ledger(thread, item.item_id, RITA)
    row = world.store.load(thread)
    assert row is not None
    page = PageRunConnection(world.connection_for()(RunAs(RITA)), world.desk, lambda: RITA)
    tab = ChatClient.restore(row.state, page, tools=list(world.tools))
    await tab.resolve_interrupt(item.item_id, approved=True)
    assert tab.state.answered_before and tab.state.error_code == "conflict"
    async with world.desk.page_run(thread, [], RITA):  # the lease went back: not "busy"
        pass

    # Another tab's run stored since this tab's copy: its write is refused, nothing changes.
    moved = world.store.version(thread)
    with pytest.raises(DeskError) as stale:
        await world.desk.record(thread, RITA, RITA, tab.state, if_version=moved - 1)
    assert (stale.value.code, world.store.version(thread)) == ("stale", moved)
    # Over its own version, it stands: the batch is over, and says why.
    await world.desk.record(thread, RITA, RITA, tab.state, if_version=moved)
    view = await world.desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("failed", ANSWERED_BEFORE)
    await tab.send("what time is it")
    assert world.executions("delete_project") == []


async def test_an_answer_another_tabs_run_carried_is_said_as_decided_elsewhere(
    world: World,
) -> None:
    """Rita approved in one tab, and its run went through but is not stored yet; her other
    tab, still showing the question, approves too. The desk lets it through (only another
    person's decision refuses it), the engine's ledger refuses it, and the tab hears it as
    the desk's refusal: answered elsewhere, not a batch whose end was lost."""
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    row = world.store.load(thread)
    assert row is not None

    def tab() -> ChatClient:
        page = PageRunConnection(world.connection_for()(RunAs(RITA)), world.desk, lambda: RITA)
        return ChatClient.restore(row.state, page, tools=list(world.tools))

    first, second = tab(), tab()
    await first.resolve_interrupt(item.item_id, approved=True)
    assert first.state.error is None
    await second.resolve_interrupt(item.item_id, approved=True)
    assert isinstance(second.error, DecidedElsewhere)
    assert (second.error.message, second.error.own) == (ANSWERED_MEANWHILE, False)
    assert len(world.executions("delete_project")) == 1


class _Unrecorded(Connection):
    """The engine's answer to a continuation whose answers its ledger could not record (as
    `agent.run` ends one while the ledger's Redis does not answer)."""

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[dict[str, object]]:
        yield {"type": "RUN_ERROR", "message": "Nothing ran: the approval ledger could not be "
               "reached to record the answers. Retry once it is back.",
               "code": "ledger-unavailable"}  # fmt: skip


async def ritas_tab_unrecorded(
    world: World, phrase: str, decider: Identity
) -> tuple[str, InboxItem, ChatClient]:
    """Rita's conversation paused on what `phrase` asks `decider` for, and her tab's client
    on it, whose continuations the ledger does not record."""
    thread = await world.start(RITA, phrase)
    item = await world.only_item(decider)
    row = world.store.load(thread)
    assert row is not None
    down = PageRunConnection(_Unrecorded(), world.desk, lambda: RITA)
    return thread, item, ChatClient.restore(row.state, down, tools=list(world.tools))


async def test_a_withdrawal_that_did_not_go_holds_its_decision_for_the_requesters_retry(
    world: World,
) -> None:
    """Rita withdraws her request from the chat and the answer does not get through: her
    withdrawal stands, held for her Retry. Finance's inbox no longer offers the request (Ada
    could approve it, and Rita's Retry would then send Ada's approval); her Retry sends the
    withdrawal, and nothing runs."""
    thread, item, tab = await ritas_tab_unrecorded(world, "transfer 5000 to Ada", ADA)
    await tab.cancel(item.item_id)
    assert tab.state.can_retry
    await world.desk.record(thread, RITA, RITA, tab.state)

    assert (await world.desk.inbox(ADA))[1] == 0
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert refused.value.message == "Already answered in the conversation by Rita."

    up = PageRunConnection(world.connection_for()(RunAs(RITA)), world.desk, lambda: RITA)
    again = ChatClient.restore(tab.state, up, tools=list(world.tools))
    await again.retry_interrupts()
    await world.desk.record(thread, RITA, RITA, again.state)
    await world.desk.wait_idle()
    assert world.executions("transfer") == []
    [decided] = world.records("decision")
    assert (decided.actor, decided.data["decision"]) == (RITA.email, "cancelled")


async def test_an_answer_given_anew_after_a_failed_send_is_the_one_recorded(
    world: World,
) -> None:
    """Rita approves, the send fails, and she withdraws instead: the decision records the
    withdrawal that went, not the approval that never did."""
    thread, item, tab = await ritas_tab_unrecorded(world, "delete project apollo", RITA)
    await tab.resolve_interrupt(item.item_id, approved=True)
    await world.desk.record(thread, RITA, RITA, tab.state)
    held = await world.desk.decision(item.decision_id)
    assert held is not None and (held.status, held.outcome) == ("closed", "approved")

    up = PageRunConnection(world.connection_for()(RunAs(RITA)), world.desk, lambda: RITA)
    again = ChatClient.restore(tab.state, up, tools=list(world.tools))
    await again.cancel(item.item_id)
    await world.desk.record(thread, RITA, RITA, again.state)
    await world.desk.wait_idle()
    went = await world.desk.decision(item.decision_id)
    assert went is not None and (went.status, went.outcome) == ("closed", "cancelled")
    assert world.executions("delete_project") == []


async def test_an_answer_in_the_page_is_a_log_line_as_one_at_the_desk_is(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Rita answers her own small transfer in the chat (no rule: it is hers to decide): the
    log says so, with the same keys as a decision at the desk (it had no line of it)."""
    thread = await world.start(RITA, "transfer 25 to Ada")
    item = await world.only_item(RITA)
    entry = {"interruptId": item.item_id, "status": "resolved", "payload": {"approved": True}}
    with caplog.at_level("INFO", logger=desk_module.__name__):
        async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}):
            pass
    [line] = [r for r in caplog.records if r.getMessage().startswith("Decision ")]
    assert line.getMessage() == (
        f"Decision {item.decision_id} approved by {RITA.email} ({RITA.method}), in the "
        "conversation"
    )
    logged = tuple(getattr(line, key) for key in ("decision", "outcome", "by", "verified_by",
                                                   "rule"))  # fmt: skip
    assert logged == (item.decision_id, "approved", RITA.email, RITA.method, "")
