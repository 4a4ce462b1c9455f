"""The desk's timers on a real database (SQLite and PostgreSQL): first notices, reminders,
escalation and expiry, each once however many workers look and however the clock jumps.

Time is a clock the test moves (the agent's, its sealer's and every desk's), so "2 h" passes
at once; nothing here waits on the wall clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from chat_app.client import ClientState, ToolCallPart, read_manifest
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.desk import Answer, Desk, DeskError, DeskStore, InboxItem, Timers
from chat_app.desk.records import expiry_note
from chat_app.notify import Deliverer, Notice, NotifySettings, Outbox, Recipient
from chat_app.trust import Policy, Sealer, SQLiteLedger
from chat_app.trust.store import open_database
from chat_app.trust.tables import decision_routes, decisions, deliveries
from chat_app.ui.answered import answered_by
from chat_app.ui.views import build_views
from tests.desk.world import ADA, OLIVE, RITA, SAM, World, state_of
from tests.notify.servers import smtp_server, webhook_receiver

SECRET = b"desk-timers-secret-desk-timers-secret"

#: The demo policy with every timer on `large-transfers` (as its documentation shows them).
POLICY = (
    Path(POLICY_PATH)
    .read_text()
    .replace(
        'name = "large-transfers"',
        'name = "large-transfers"\nexpires_after = "1d"',
    )
)


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).timestamp()

    def time(self) -> float:
        return self.now

    def utc(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Timed:
    world: World
    clock: Clock
    ledger: SQLiteLedger
    settings: NotifySettings

    def desk(self, worker: str) -> Desk:
        desk = self.world.new_desk(worker=worker, clock=self.clock.utc)
        desk.notify_idle_seconds = 60
        return desk

    def timers(self, desk: Desk) -> Timers:
        people = {
            "role:finance": [Recipient("ada@example.com", "Ada")],
            "role:admin": [Recipient("olive@example.com", "Olive")],
            "role:ops": [
                Recipient("olive@example.com", "Olive"),
                Recipient("sam@example.com", "Sam"),
            ],
            "user:rita@example.com": [Recipient("rita@example.com", "Rita")],
        }

        def people_for(routes: Any) -> list[Recipient]:
            return [person for route in routes for person in people.get(route, [])]

        return Timers(
            desk,
            people=people_for,
            outbox=Outbox(self.world.engine, self.settings),
            settings=self.settings,
            audit=self.ledger.append_async,
        )

    def deliveries(self, event: str | None = None) -> list[Any]:
        with self.world.engine.connect() as connection:
            rows = connection.execute(select(deliveries).order_by(deliveries.c.id)).all()
        return [row for row in rows if event is None or row.event == event]

    def trail(self, kind: str) -> list[dict[str, Any]]:
        return [record.data for record in self.ledger.records() if record.kind == kind]


@pytest.fixture
async def timed(database_url: str, tmp_path: Path) -> AsyncIterator[Timed]:
    clock = Clock()
    engine = open_database(database_url)
    policy = Policy.parse(POLICY, "policy.toml")
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(SECRET, clock=clock.time), ledger=ledger, policy=policy)
    agent.clock = clock.time
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    world = World(engine, DeskStore(engine), agent, policy, tuple(tools))
    world.desk = world.new_desk(worker="worker-1", clock=clock.utc)
    settings = NotifySettings.from_env(
        {
            "CHAT_APP_WEBHOOK_URL": "http://127.0.0.1:9/hook",
            "CHAT_APP_WEBHOOK_SECRET": "s3cret",
            "CHAT_APP_SMTP_URL": "smtp://127.0.0.1:2525",
            "CHAT_APP_MAIL_FROM": "desk@example.com",
            "CHAT_APP_PUBLIC_URL": "https://desk.example.com",
        }
    )
    try:
        yield Timed(world, clock, ledger, settings)
        for desk in world.desks:
            await desk.wait_idle()
    finally:
        for desk in world.desks:
            await desk.fanout.aclose()
        ledger.close()
        engine.dispose()


async def _tick_all(timed: Timed, *desks: Desk) -> None:
    """Every worker looks at once, then their continuations end."""
    await asyncio.gather(*(timed.timers(desk).tick() for desk in desks))
    for desk in desks:
        await desk.wait_idle()


async def test_a_pause_tells_the_approvers_once_by_each_channel(timed: Timed) -> None:
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    other = timed.desk("worker-2")

    await _tick_all(timed, world.desk, other)
    await _tick_all(timed, world.desk, other)

    sent = timed.deliveries("decision-needed")
    assert sorted((row.channel, row.recipient) for row in sent) == [
        ("email", "ada@example.com"),
        ("webhook", ""),
    ]
    assert {row.decision_id for row in sent} == {item.decision_id}
    assert all(row.thread_id == thread for row in sent)
    assert all(json.loads(row.notice)["link"] == f"https://desk.example.com/c/{thread}"
               for row in sent)  # fmt: skip
    # The requester is never told to approve their own large transfer.
    assert not [row for row in timed.deliveries() if row.recipient == "rita@example.com"]


async def test_reminder_and_escalation_fire_once_with_two_workers(
    timed: Timed, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chat_app.desk.timers")
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    other = timed.desk("worker-2")
    await _tick_all(timed, world.desk, other)
    assert (await world.desk.inbox(OLIVE))[1] == 0  # not Olive's before the escalation
    assert [c.waiting_for for c in await world.desk.conversations(RITA)] == [
        "Waiting for finance"
    ]

    timed.clock.advance(30 * 60)
    await _tick_all(timed, world.desk, other)
    await _tick_all(timed, world.desk, other)
    reminded = timed.trail("reminded")
    assert len(reminded) == 1 and reminded[0]["after"] == "30 min"
    assert [row.recipient for row in timed.deliveries("reminder") if row.channel == "email"] == [
        "ada@example.com"
    ]

    # Olive (admin) may not decide before the escalation, on the desk nor in the engine.
    item = await world.only_item(ADA)
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    assert refused.value.code == "forbidden"

    timed.clock.advance(90 * 60)
    await _tick_all(timed, world.desk, other)
    timed.clock.advance(-3600)  # the clock jumps back and forth: nothing fires again
    await _tick_all(timed, world.desk, other)
    timed.clock.advance(3600)
    await _tick_all(timed, world.desk, other)
    escalated = timed.trail("escalated")
    assert len(escalated) == 1 and escalated[0]["after"] == "2 h"
    assert len(timed.trail("reminded")) == 1
    # Each is a line for an operator too, once.
    said = [r.getMessage() for r in caplog.records if r.name == "chat_app.desk.timers"]
    assert said == [
        f"Decision {item.decision_id}: its approvers reminded after 30 min "
        "(emailed: ada@example.com)",
        f"Decision {item.decision_id}: Escalated to admin after 2 h (emailed: olive@example.com)",
    ]
    assert [row.recipient for row in timed.deliveries("escalated") if row.channel == "email"] == [
        "olive@example.com"
    ]

    shown = await world.only_item(OLIVE)
    assert shown.escalation == "escalated to admin after 2 h"
    assert shown.to_json()["note"] == "escalated to admin after 2 h"
    # Rita's list of conversations says it too, as the card and the inbox do, and goes on
    # saying it when the conversation is stored again (a page's save writes it as filed).
    [listed] = await world.desk.conversations(RITA)
    assert listed.waiting_for == shown.waiting_now == "Waiting for finance; escalated to admin"
    row = world.desk.store.load(shown.thread_id)
    assert row is not None
    world.desk.store.save(
        shown.thread_id, state=row.state, status="waiting", waiting_for="Waiting for finance",
        error=None, now=timed.clock.utc(), open_items=[shown.item_id],
    )  # fmt: skip
    [listed] = await world.desk.conversations(RITA)
    assert listed.waiting_for == "Waiting for finance; escalated to admin"
    # The notice says it in the same words, as a sentence of its own, to those it lets in.
    notes = {json.loads(row.notice)["note"] for row in timed.deliveries("escalated")}
    assert notes == {"Escalated to admin after 2 h: you may decide it now."}
    result = await world.desk.decide(shown.decision_id, OLIVE, Answer("approve"))
    assert result.status == "decided"
    await world.desk.wait_idle()
    assert [data["args"]["amount"] for data in world.executions("transfer")] == [5000]


async def test_an_escalation_that_lets_in_nobody_new_does_not_say_you_may(timed: Timed) -> None:
    """Olive, the only admin, asked for the large transfer: its escalation to admin lets
    nobody else decide it. The webhook hears of the escalation, and that it adds nobody,
    not "you may decide it now" addressed to no one."""
    world = timed.world
    await world.start(OLIVE, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)
    timed.clock.advance(2 * 3600 + 1)
    await _tick_all(timed, world.desk)
    [hook] = [row for row in timed.deliveries("escalated") if row.channel == "webhook"]
    said = json.loads(hook.notice)
    assert (said["note"], said["recipients"]) == (
        "Escalated to admin after 2 h, which lets nobody else decide it.", []
    )  # fmt: skip
    assert [row.channel for row in timed.deliveries("escalated")] == ["webhook"]


async def test_the_escalated_people_never_see_it_before_it_says_it_was_escalated(
    timed: Timed,
) -> None:
    """While the escalation's notices are queued, Olive's inbox does not list the transfer
    yet; once it does, it says it was escalated (both land in one transaction). Before, Ada's
    says whom it went to nobody yet: `escalatedTo` named admin from the start."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    timers = timed.timers(world.desk)
    await timers.tick()
    before = (await world.only_item(ADA)).to_json()
    assert (before["escalatedAt"], before["escalatedTo"], before["note"]) == (None, [], "")
    seen_while_telling: list[str] = []
    tell = timers._tell

    async def telling(row: Any, event: str, routes: Any, *, note: str, **rest: Any) -> list[str]:
        if event == "escalated":
            seen_while_telling.extend(
                item.escalation for item in (await world.desk.inbox(OLIVE))[0]
            )
        return await tell(row, event, routes, note=note, **rest)

    timers._tell = telling  # type: ignore[method-assign]
    timed.clock.advance(2 * 3600)
    await timers.tick()
    await world.desk.wait_idle()
    assert len(timed.trail("escalated")) == 1
    assert seen_while_telling == []
    escalated = await world.only_item(OLIVE)
    assert escalated.escalation == "escalated to admin after 2 h"
    assert escalated.to_json()["escalatedTo"] == ["role:admin"]


async def test_a_reminder_after_the_escalation_tells_the_escalated_people_too(
    timed: Timed,
) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    later = timed.clock.utc() + timedelta(hours=3)
    with world.engine.begin() as connection:  # its reminder comes after its escalation (2 h)
        connection.execute(update(decisions).values(remind_at=later))
    timed.clock.advance(2 * 3600)
    await _tick_all(timed, world.desk)  # its notice, then the escalation: Olive may decide
    assert timed.deliveries("reminder") == []
    timed.clock.advance(3600 + 4)  # the look a few seconds after it was due
    await _tick_all(timed, world.desk)
    told = sorted(row.recipient for row in timed.deliveries("reminder") if row.channel == "email")
    assert told == ["ada@example.com", "olive@example.com"]
    notes = {json.loads(row.notice)["note"] for row in timed.deliveries("reminder")}
    assert notes == {"Reminder: waiting for a decision for 3 h"}  # the rule's time


async def test_a_reminder_a_look_late_says_the_rules_time(timed: Timed) -> None:
    """The look comes a few seconds after the reminder was due: it says "30 min", the
    rule's time, not "30 min 3 s"."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)  # its first notice, to Ada
    timed.clock.advance(30 * 60 + 3)
    await _tick_all(timed, world.desk)
    notes = {json.loads(row.notice)["note"] for row in timed.deliveries("reminder")}
    assert notes == {"Reminder: waiting for a decision for 30 min"}


async def test_an_escalation_and_a_reminder_overdue_together_fire_in_their_order(
    timed: Timed,
) -> None:
    """Both came due while the app was down (the escalation, after 2 h, first): the
    escalation fires first, so the reminder goes to those it added too, and says how long
    the decision has waited by now."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    later = timed.clock.utc() + timedelta(hours=3)
    with world.engine.begin() as connection:  # its reminder comes after its escalation (2 h)
        connection.execute(update(decisions).values(remind_at=later))
    await _tick_all(timed, world.desk)  # its first notice, to Ada
    timed.clock.advance(5 * 3600)  # down for five hours
    await _tick_all(timed, world.desk)
    told = sorted(row.recipient for row in timed.deliveries("reminder") if row.channel == "email")
    assert told == ["ada@example.com", "olive@example.com"]
    [reminded] = timed.trail("reminded")
    assert reminded["after"] == "3 h"  # as the rule set it
    notes = {json.loads(row.notice)["note"] for row in timed.deliveries("reminder")}
    assert notes == {"Reminder: waiting for a decision for 5 h"}


async def test_notices_go_to_whose_inbox_lists_the_decision(timed: Timed) -> None:
    """Who is told is who finds the decision in their inbox: the routes stored with it. An
    item opened again (the chat's answer to it refused) after the policy changed is listed for
    its new approvers, and they are told; its first approvers are not told again."""
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await _tick_all(timed, world.desk)  # finance (Ada) is told
    # Large transfers are ops' now (the app came back with a new policy).
    text = POLICY.replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]')
    assert text != POLICY
    world.desk.policy = Policy.parse(text, "policy.toml")
    await _refused_in_the_chat(world, thread, item)  # open again, for the new rule's approvers
    assert (await world.only_item(SAM)).decision_id == item.decision_id
    assert (await world.desk.inbox(ADA))[1] == 0

    await _tick_all(timed, world.desk)
    told = [row.recipient for row in timed.deliveries("decision-needed") if row.channel == "email"]
    assert told == ["ada@example.com", "olive@example.com", "sam@example.com"]


async def _refused_in_the_chat(world: World, thread: str, item: InboxItem) -> None:
    """Rita approves `item` in the chat; the answer is refused (nobody approves their own
    large transfer), and her page stores the pause as it was: the item is open again."""
    entry = {"interruptId": item.item_id, "status": "resolved", "payload": {"approved": True}}
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}):
        pass
    await world.desk.wait_idle()
    await world.desk.record(thread, RITA, RITA, state_of(await world.desk.view(thread, RITA)))


def _stored(world: World, decision_id: str) -> Any:
    with world.engine.connect() as connection:
        return connection.execute(select(decisions).where(decisions.c.id == decision_id)).one()


async def test_an_item_opened_again_takes_the_rule_in_force_now(timed: Timed) -> None:
    """An item opened again after the policy changed is the new rule's in everything: who
    may decide, how many must, what it is waiting for, its reminder and escalation (due after
    the new rule's spans, counted from its pause as the engine counts them); nothing is left
    of the rule it was filed under."""
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await _tick_all(timed, world.desk)
    timed.clock.advance(45 * 60)
    await _tick_all(timed, world.desk)  # Ada is reminded after 30 min
    assert len(timed.trail("reminded")) == 1
    # Two of ops approve large transfers now, reminded after 1 h, escalated to finance after 3 h
    # (each approves the arguments as shown: `editable` goes with a quorum of 1).
    text = (
        re.sub(r"(?m)^editable = .*\n", "", POLICY)
        .replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]\nquorum = 2')
        .replace('remind_after = "30m"', 'remind_after = "1h"')
        .replace('escalate_after = "2h"', 'escalate_after = "3h"')
        .replace('escalate_to = ["role:admin"]', 'escalate_to = ["role:finance"]')
    )
    policy = Policy.parse(text, "policy.toml")
    rule = policy.rule_named("large-transfers")
    assert rule is not None and rule.quorum == 2
    world.desk.policy = world.agent.policy = policy
    await _refused_in_the_chat(world, thread, item)

    row = _stored(world, item.decision_id)
    paused = row.created_at
    assert (row.rule, json.loads(row.approvers), row.quorum, row.not_requester) == (
        "large-transfers", ["role:ops"], 2, True,
    )  # fmt: skip
    assert row.waiting_for == policy.waiting_for(rule, viewer_is_requester=False)
    assert (row.remind_at, row.escalate_at) == (
        paused + timedelta(hours=1), paused + timedelta(hours=3),
    )  # fmt: skip
    assert json.loads(row.escalate_to) == ["role:finance"]
    # The reminder given after 30 min is not the one the new rule asks for after 1 h.
    assert (row.reminded_at, row.escalated_at) == (None, None)
    assert (await world.only_item(SAM)).quorum == 2

    await _tick_all(timed, world.desk)  # ops are told it is theirs
    timed.clock.advance(15 * 60)
    await _tick_all(timed, world.desk)  # 1 h: ops are reminded
    reminded = timed.trail("reminded")
    assert len(reminded) == 2 and reminded[1]["after"] == "1 h"
    assert sorted(reminded[1]["told"]) == ["olive@example.com", "sam@example.com"]
    timed.clock.advance(3600)
    await _tick_all(timed, world.desk)  # 2 h: the old rule's escalation is no more
    assert timed.trail("escalated") == []
    timed.clock.advance(3600)
    await _tick_all(timed, world.desk)  # 3 h: the new rule's, to finance
    assert (await world.only_item(SAM)).escalation == "escalated to finance after 3 h"

    # Two approvals, as the new rule asks: Sam's alone runs nothing.
    result = await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert result.status == "waiting"
    await world.desk.wait_idle()
    assert world.executions("transfer") == []
    result = await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    assert result.status == "decided"
    await world.desk.wait_idle()
    assert [data["args"]["amount"] for data in world.executions("transfer")] == [5000]


async def test_a_policy_changed_while_it_waited_tells_the_new_approvers_once(
    timed: Timed,
) -> None:
    """Ada (finance) was told of a large transfer; the app came back with large transfers
    for ops (and admin with them, Olive being both). Filed again at start, the notice goes to
    Sam and Olive, not to Ada again, and to the webhook again, naming them; the 30 min
    reminder goes to ops, not to Ada."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await _tick_all(timed, world.desk)
    told = [(row.channel, row.recipient) for row in timed.deliveries("decision-needed")]
    assert sorted(told) == [("email", "ada@example.com"), ("webhook", "")]
    policy = Policy.parse(
        POLICY.replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]'), "policy.toml"
    )
    world.desk.policy = world.agent.policy = policy

    assert await world.desk.refile() == [item.decision_id]
    await _tick_all(timed, world.desk)
    await _tick_all(timed, world.desk)

    told = [(row.channel, row.recipient) for row in timed.deliveries("decision-needed")]
    assert sorted(told) == [
        ("email", "ada@example.com"), ("email", "olive@example.com"),
        ("email", "sam@example.com"), ("webhook", ""), ("webhook", ""),
    ]  # fmt: skip
    hooks = [row.notice for row in timed.deliveries("decision-needed") if row.channel == "webhook"]
    assert [sorted(p["email"] for p in json.loads(hook)["recipients"]) for hook in hooks] == [
        ["ada@example.com"], ["olive@example.com", "sam@example.com"]
    ]  # fmt: skip
    timed.clock.advance(31 * 60)
    await _tick_all(timed, world.desk)
    [reminded] = timed.trail("reminded")
    assert sorted(reminded["told"]) == ["olive@example.com", "sam@example.com"]
    assert await world.desk.refile() == []


async def test_an_escalation_read_before_the_policy_changed_does_not_fire(
    timed: Timed,
) -> None:
    """Another worker's timer read an escalation due to admin; this worker, starting with
    large transfers escalated to ops, filed it again before that timer marked it fired. The
    mark fails, and the next look escalates it to ops, as the engine now allows."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    timed.clock.advance(2 * 3600)
    [due] = world.store.due("escalate", timed.clock.utc())
    world.desk.policy = world.agent.policy = Policy.parse(
        POLICY.replace('escalate_to = ["role:admin"]', 'escalate_to = ["role:ops"]'), "policy.toml"
    )
    assert await world.desk.refile() == [item.decision_id]

    stale = world.store.fire(
        "escalate", item.decision_id, timed.clock.utc(), routes=["role:admin"], as_read=due.decision
    )
    assert not stale
    assert "role:admin" not in _stored_routes(world, item.decision_id)

    await _tick_all(timed, world.desk)
    [escalated] = timed.trail("escalated")
    assert escalated["to"] == ["role:ops"]
    assert sorted(escalated["told"]) == ["olive@example.com", "sam@example.com"]
    assert (await world.only_item(SAM)).escalation == "escalated to ops after 2 h"


async def test_a_worker_files_decisions_again_before_its_timers_first_look(
    timed: Timed,
) -> None:
    """A large transfer paused and nobody was told yet; the worker starts with large
    transfers for ops. Its timers' first notice goes to ops, never to finance."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    world.desk.policy = world.agent.policy = Policy.parse(
        POLICY.replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]'), "policy.toml"
    )
    told = await _first_notices(timed, world.desk)
    assert sorted(told) == ["olive@example.com", "sam@example.com"]


async def test_a_refile_that_fails_does_not_hold_the_timers_back(
    timed: Timed, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")

    async def broken() -> list[str]:
        raise RuntimeError("a bug in refile")

    monkeypatch.setattr(world.desk, "refile", broken)
    told = await _first_notices(timed, world.desk)
    assert told == ["ada@example.com"]


async def _first_notices(timed: Timed, desk: Desk) -> list[str]:
    """Run the worker's timers (`Timers.run`, as the app does) until a first notice is
    queued (or 5 s: the caller's assert says); whom it emails."""
    running = asyncio.create_task(timed.timers(desk).run())
    try:
        for _ in range(250):
            if timed.deliveries("decision-needed"):
                break
            await asyncio.sleep(0.02)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    return [row.recipient for row in timed.deliveries("decision-needed") if row.channel == "email"]


def _stored_routes(world: World, decision_id: str) -> list[str]:
    with world.engine.connect() as connection:
        return sorted(
            connection.execute(
                select(decision_routes.c.route).where(decision_routes.c.decision_id == decision_id)
            ).scalars()
        )


async def test_an_escalated_item_opened_again_is_escalated_again(timed: Timed) -> None:
    """Closing an item takes it out of every inbox, the escalated people's too: opened again
    past its escalation, it is escalated again (the escalated people find it again; the
    outbox tells nobody twice). Its reminder, given already when its rule asks, is not."""
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await _tick_all(timed, world.desk)
    timed.clock.advance(2 * 3600)
    await _tick_all(timed, world.desk)  # reminded, escalated: Olive may decide
    assert (await world.only_item(OLIVE)).decision_id == item.decision_id
    reminded_at = _stored(world, item.decision_id).reminded_at
    assert reminded_at is not None

    await _refused_in_the_chat(world, thread, item)
    row = _stored(world, item.decision_id)
    assert (row.reminded_at, row.escalated_at) == (reminded_at, None)
    await _tick_all(timed, world.desk)
    shown = await world.only_item(OLIVE)
    assert shown.escalation == "escalated to admin after 2 h"
    assert (len(timed.trail("reminded")), len(timed.trail("escalated"))) == (1, 2)
    told = [row.recipient for row in timed.deliveries("escalated") if row.channel == "email"]
    assert told == ["olive@example.com"]
    result = await world.desk.decide(shown.decision_id, OLIVE, Answer("approve"))
    assert result.status == "decided"


async def test_expiry_closes_the_loop_once(timed: Timed) -> None:
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    other = timed.desk("worker-2")
    item = await world.only_item(ADA)

    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, world.desk, other)
    await _tick_all(timed, world.desk, other)

    # The tool did not run; the model was told it expired (not that it was denied).
    assert world.executions("transfer") == []
    view = await world.desk.view(thread, RITA)
    state: ClientState = state_of(view)
    reply = state.messages[-1].text
    assert "expired" in reply.lower() and "denied" not in reply.lower()
    call = next(
        part
        for message in state.messages
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.name == "transfer"
    )
    assert call.status == "expired"
    assert call.error == "Expired: nobody decided within 1 day."
    assert view.summary.status == "done"
    # Nobody's inbox has it; a late approval is told it expired.
    assert (await world.desk.inbox(ADA))[1] == 0
    with pytest.raises(DeskError) as late:
        await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert late.value.code == "expired"
    assert "nobody decided within 1 day" in late.value.message
    # One continuation carried it; the trail records the expiry once.
    assert len(world.continuations) == 1
    expired = [r for r in world.records("decision") if r.data.get("status") == "expired"]
    assert len(expired) == 1
    stored = world.desk.store.decision(item.decision_id)
    assert stored is not None and stored.outcome == "expired"


async def test_after_a_downtime_past_its_expiry_nobody_is_asked_to_decide_it(
    timed: Timed,
) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)
    # By email and by the webhook (whose receiver decides whom it tells).
    assert sorted(r.recipient for r in timed.deliveries("decision-needed")) == [
        "", "ada@example.com"
    ]  # fmt: skip
    # The app was down past the reminder, the escalation and the expiry: only the expiry.
    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, world.desk)
    await _tick_all(timed, world.desk)
    assert timed.deliveries("reminder") == [] and timed.deliveries("escalated") == []
    assert timed.trail("reminded") == [] and timed.trail("escalated") == []
    assert sorted(r.recipient for r in timed.deliveries("decided")) == ["", "rita@example.com"]
    [expired] = [r for r in world.records("decision") if r.data.get("status") == "expired"]
    assert (await world.desk.inbox(OLIVE))[1] == 0


async def test_an_expiry_whose_continuation_failed_is_retried_for_whoever_asked(
    timed: Timed,
) -> None:
    """The agent was away when the expiry was carried; Retry carries it again for Rita, who
    asked (the agent reads her withdrawal as the expiry), as the first time: not for nobody,
    whom an agent behind sign-in refuses."""
    world = timed.world
    cut = [True]

    def away_once(given: Any, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async def run() -> AsyncIterator[Any]:
            if given.resume and cut[0]:
                cut[0] = False
                raise ConnectionError("the agent went away")
            async for event in events:
                yield event

        return run()

    desk = world.new_desk(worker="worker-2", clock=timed.clock.utc, wrap=away_once)
    acting: list[str] = []
    connect = desk.connection_for

    def recorded(run_as: Any) -> Any:
        acting.append(run_as.identity.email)
        return connect(run_as)

    desk.connection_for = recorded
    thread = await world.start(RITA, "transfer 5000 to Ada", desk=desk)
    await world.only_item(ADA)
    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, desk)
    view = await desk.view(thread, RITA)
    assert view.summary.status == "failed" and state_of(view).can_retry
    assert acting[-1] == RITA.email

    await desk.retry(thread, RITA)
    await desk.wait_idle()
    assert acting[-1] == RITA.email
    view = await desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert "expired" in state_of(view).messages[-1].text.lower()
    assert world.executions("transfer") == []


async def test_the_requester_is_told_only_when_not_looking(timed: Timed) -> None:
    world = timed.world
    thread = await world.start(RITA, "transfer 25 to Ada")  # no rule: Rita decides
    await world.desk.watching(thread, RITA)
    timed.clock.advance(40)
    await world.desk.watching(thread, RITA)  # her page says so every 20 s
    timed.clock.advance(21)
    await _tick_all(timed, world.desk)
    assert timed.deliveries() == []  # her page is open on it

    timed.clock.advance(120)  # she left: the page stopped saying so
    await _tick_all(timed, world.desk)
    assert sorted((row.channel, row.recipient) for row in timed.deliveries()) == [
        ("email", "rita@example.com"),
        ("webhook", ""),
    ]


async def test_the_requester_who_looks_away_is_told_when_next_due(timed: Timed) -> None:
    world = timed.world
    world.desk.notify_idle_seconds = 10  # due well before her page's word lapses (30 s)
    thread = await world.start(RITA, "transfer 25 to Ada")  # no rule: Rita decides
    await world.desk.watching(thread, RITA)
    timed.clock.advance(11)  # due: her page said it shows it, in view
    await _tick_all(timed, world.desk)
    assert timed.deliveries() == []

    await world.desk.watching(thread, RITA, looking=False)  # the tab went to the background
    timed.clock.advance(11)  # due again
    await _tick_all(timed, world.desk)
    assert sorted((row.channel, row.recipient) for row in timed.deliveries()) == [
        ("email", "rita@example.com"),
        ("webhook", ""),
    ]


async def test_a_policy_decision_is_stored_as_auto(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "refund 20 to order 42")
    with world.engine.connect() as connection:
        outcomes = connection.execute(select(decisions.c.outcome, decisions.c.rule)).all()
    assert [(row.outcome, row.rule) for row in outcomes] == [("auto", "small-refunds")]


async def test_a_batch_answered_in_part_then_expired_closes_and_runs_nothing(
    timed: Timed,
) -> None:
    world = timed.world
    thread = await world.start(RITA, "pay invoices")  # three items, Rita's to decide
    items, total = await world.desk.inbox(RITA)
    assert total == 3
    for item in items[:2]:  # two approved in time; the third is left
        result = await world.desk.decide(item.decision_id, RITA, Answer("approve"))
        assert result.status == "decided"
    await world.desk.wait_idle()
    assert world.continuations == []  # the batch is not complete

    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, world.desk)

    # Past its expiry the agent takes no approval, only the expiry: all three close as
    # expired in one continuation, nothing is paid, and the conversation goes on.
    assert len(world.continuations) == 1
    assert world.executions("pay_invoice") == []
    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done", view.summary
    calls = [
        part
        for message in state_of(view).messages
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.name == "pay_invoice"
    ]
    assert [call.status for call in calls] == ["expired"] * 3
    stored = [world.desk.store.decision(item.decision_id) for item in items]
    assert [found.outcome if found else None for found in stored] == ["expired"] * 3
    # Who approved in time stays on record, and is said: "nobody decided" was not so.
    assert [found.decided_by if found else None for found in stored[:2]] == [RITA.email] * 2
    notes = [found.expiry_note if found else "" for found in stored]
    assert notes[:2] == [
        "Expired: Rita decided it in time, but the rest of its batch was not decided within "
        "1 day, so nothing ran."
    ] * 2
    assert notes[2] == "Expired: nobody decided within 1 day."
    # Rita's cards say it too, to her (the agent's result, "nobody decided", is the batch's).
    marks = answered_by(view.decisions, RITA.email)
    shown = build_views(state_of(view), {}, decided_by=marks).messages
    cards = [(t.reason, t.decided_by) for m in shown for t in m.tools if t.name == "pay_invoice"]
    to_her = [note.replace("Expired: Rita decided", "Expired: you decided") for note in notes]
    assert sorted(cards) == sorted((note, "") for note in to_her)
    # An expiry, not an answer's wait, in the figures.
    with world.engine.connect() as connection:
        waits = connection.execute(
            select(decisions.c.wait_seconds).where(decisions.c.thread_id == thread)
        ).scalars().all()
    assert waits == [None] * 3


async def test_a_timer_that_fails_leaves_the_others_and_the_next_round(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    await world.start(RITA, "transfer 6000 to Ada")
    calls: list[object] = []

    def people_for(routes: Any) -> list[Recipient]:
        calls.append(routes)
        if len(calls) == 1:
            raise RuntimeError("the directory is broken for this one")
        return [Recipient("ada@example.com", "Ada")]

    timers = timed.timers(world.desk)
    timers.people = people_for
    await timers.tick()  # the first fails, the second is told
    assert len(calls) == 2
    assert len(timed.deliveries("decision-needed")) == 2  # its email and its webhook
    await timers.tick()  # the failed one is tried again, and told this time
    assert len(timed.deliveries("decision-needed")) == 4
    await timers.tick()
    assert len(calls) == 3  # each told once


async def test_the_webhook_hears_of_a_decision_nobody_here_has_an_email_for(
    timed: Timed,
) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    timers = timed.timers(world.desk)
    timers.people = lambda routes: []  # finance's members are known only to the team's chat
    await timers.tick()
    assert [(row.channel, row.recipient) for row in timed.deliveries()] == [("webhook", "")]


async def test_answers_given_in_the_chat_count_with_their_outcome(timed: Timed) -> None:
    world = timed.world
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    timed.clock.advance(90)
    entry = {"interruptId": item.item_id, "status": "resolved", "payload": {"approved": False}}
    async with world.desk.page_run(thread, [item.item_id], RITA, {item.item_id: entry}):
        pass
    await world.desk.wait_idle()
    with world.engine.connect() as connection:
        row = connection.execute(
            select(decisions.c.status, decisions.c.outcome, decisions.c.wait_seconds).where(
                decisions.c.id == item.decision_id
            )
        ).one()
    assert (row.status, row.outcome) == ("closed", "rejected")
    assert row.wait_seconds == pytest.approx(90, abs=1)


async def test_a_rule_that_names_no_approvers_still_tells_the_webhook(timed: Timed) -> None:
    """A rule that only says "someone else decides" (no `approvers`) routes to anyone but the
    requester (`*`) in the inbox; its notice goes to the webhook (nobody here is named)."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    with world.engine.begin() as connection:  # stored as such a rule's decision is
        connection.execute(update(decisions).values(approvers="[]"))
        connection.execute(update(decision_routes).values(route="*"))
    await timed.timers(world.desk).tick()
    assert [(row.channel, row.recipient) for row in timed.deliveries()] == [("webhook", "")]


async def test_a_notice_queued_before_its_decision_is_not_sent_after_it(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)  # queued: an email to Ada, and the webhook
    item = await world.only_item(ADA)
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()

    # The receivers were down until now: the deliverer gets to the queue only after.
    timed.clock.advance(timed.settings.gather_seconds)  # the email waited for its batch
    with smtp_server() as smtp, webhook_receiver() as hook:
        settings = replace(timed.settings, smtp=smtp.server, webhook_url=hook.url)
        outbox = Outbox(world.engine, settings, clock=timed.clock.utc)
        deliverer = Deliverer(outbox, settings, worker="worker-1", settled=world.desk.store.settled)
        try:
            assert await deliverer.deliver_due() == 0
        finally:
            await deliverer.aclose()
    assert smtp.messages == [] and hook.received == []
    why = "not sent: the decision was approved before it went out"
    assert sorted((row.channel, row.status, row.reason) for row in timed.deliveries()) == [
        ("email", "skipped", why),
        ("webhook", "skipped", why),
    ]
    assert world.desk.store.settled([item.decision_id, "gone"]) == {
        item.decision_id: "approved",
        "gone": "removed",  # its conversation was deleted
    }


# --- whoever asked is told how it ended ------------------------------------------------------


def told(timed: Timed) -> list[tuple[str, str, dict[str, Any]]]:
    return [(row.channel, row.recipient, json.loads(row.notice))
            for row in timed.deliveries("decided")]  # fmt: skip


async def test_whoever_asked_is_told_once_how_someone_else_decided(timed: Timed) -> None:
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    no = Answer("reject", payload={"reason": "Not this quarter."}, has_payload=True)
    await world.desk.decide(item.decision_id, ADA, no)
    await world.desk.wait_idle()
    other = timed.desk("worker-2")

    await _tick_all(timed, world.desk, other)
    await _tick_all(timed, world.desk, other)

    sent = told(timed)
    assert sorted((channel, recipient) for channel, recipient, _ in sent) == [
        ("email", "rita@example.com"), ("webhook", "")
    ]  # fmt: skip
    notice = sent[0][2]
    assert (notice["outcome"], notice["decided_by"], notice["reason"]) == (
        "rejected", "Ada", "Not this quarter."
    )  # fmt: skip
    assert notice["decided_by_email"] == ADA.email
    assert notice["note"] == "Rejected by Ada: Not this quarter."
    assert notice["link"] == f"https://desk.example.com/c/{thread}"
    assert [r.email for r in [Recipient(**p) for p in notice["recipients"]]] == [RITA.email]
    with world.engine.connect() as connection:
        due = connection.execute(select(decisions.c.tell_at)).scalars().all()
    assert due == [None]  # told: nothing left due


async def test_nobody_is_told_of_what_they_decided_or_watched_happen(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "transfer 25 to Ada")  # no rule: Rita decides it herself
    mine = await world.only_item(RITA)
    await world.desk.decide(mine.decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    watched = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await world.desk.watching(watched, RITA)  # her page is open on it
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()

    await _tick_all(timed, world.desk)
    timed.clock.advance(120)  # she left the page afterwards: she saw it; no email now
    await _tick_all(timed, world.desk)
    assert told(timed) == []


async def _approved_after_her_page_looked(timed: Timed) -> str:
    """Rita's transfer, approved by Ada 3 s after Rita's page said it showed it: its thread."""
    world = timed.world
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await world.desk.watching(thread, RITA)
    timed.clock.advance(3)
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()
    return thread


async def test_whoever_asked_and_left_just_before_the_decision_is_told(timed: Timed) -> None:
    """Her page said it showed the conversation, then she left (closed it, went to another
    page): a decision within that word's 30 s is told once the word lapses unrenewed."""
    world = timed.world
    await _approved_after_her_page_looked(timed)  # her page's last word: she leaves after it
    await _tick_all(timed, world.desk)
    assert told(timed) == []  # her page's word still holds: she may be looking
    timed.clock.advance(28)  # it lapsed, and her page said nothing since
    await _tick_all(timed, world.desk)
    [(_, _, notice), _] = sorted(told(timed), key=lambda sent: sent[0])
    assert notice["note"] == "Approved by Ada."


async def test_whoever_asked_whose_page_stays_on_the_decision_is_not_told(timed: Timed) -> None:
    world = timed.world
    thread = await _approved_after_her_page_looked(timed)
    await _tick_all(timed, world.desk)
    timed.clock.advance(17)
    await world.desk.watching(thread, RITA)  # still open, after the decision: she saw it
    timed.clock.advance(11)
    await _tick_all(timed, world.desk)
    timed.clock.advance(120)  # she leaves later
    await _tick_all(timed, world.desk)
    assert told(timed) == []
    with world.engine.connect() as connection:
        assert connection.execute(select(decisions.c.tell_at)).scalars().all() == [None]


async def test_whoever_asked_who_saw_it_then_looked_away_is_not_told(timed: Timed) -> None:
    """Her page showed the decision live; she then put the tab in the background before
    its next word: she saw it, and no email follows."""
    world = timed.world
    thread = await _approved_after_her_page_looked(timed)
    timed.clock.advance(5)
    await world.desk.watching(thread, RITA, looking=False)  # the tab went to the background
    await _tick_all(timed, world.desk)
    timed.clock.advance(120)
    await _tick_all(timed, world.desk)
    assert told(timed) == []


@pytest.mark.parametrize(
    ("lifetime", "said"),
    [
        (90, "1 min 30 s"), (120, "2 min"), (45, "45 s"), (86400, "1 day"), (7, "7 s"),
        (150, "2 min 30 s"), (5400, "1 h 30 min"), (3 * 3600 + 45, "3 h"), (12, "12 s"),
    ],  # fmt: skip
)
def test_an_expiry_names_the_lifetime_the_engine_names(lifetime: int, said: str) -> None:
    """The seal's expiry is whole seconds, cut down, and the decision is stored a moment
    after the pause: the note still names the rule's lifetime, as the card does."""
    paused = datetime(2026, 12, 5, 12, 0, 0, 700_000, tzinfo=UTC)
    sealed_expiry = datetime.fromtimestamp(int(paused.timestamp() + lifetime), UTC)
    stored = paused + timedelta(milliseconds=60)
    assert expiry_note(stored, sealed_expiry) == f"Expired: nobody decided within {said}."


@pytest.mark.parametrize(
    ("lifetime", "said"),
    [(45, "45 s"), (90, "1 min 30 s"), (150, "2 min 30 s"), (5400, "1 h 30 min"), (86400, "1 day")],
)
def test_an_expiry_stored_late_still_names_a_lifetime_of_whole_five_seconds(
    lifetime: int, said: str
) -> None:
    """Stored 0.8 s after the pause, with the seal's cut 0.7 s: 1.5 s short."""
    paused = datetime(2026, 12, 5, 12, 0, 0, 700_000, tzinfo=UTC)
    sealed_expiry = datetime.fromtimestamp(int(paused.timestamp() + lifetime), UTC)
    stored = paused + timedelta(milliseconds=800)
    assert expiry_note(stored, sealed_expiry) == f"Expired: nobody decided within {said}."


async def test_an_expiry_is_told_to_whoever_asked(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, world.desk)  # it expires, and she is due to be told
    await _tick_all(timed, world.desk)

    [(_, _, notice), _] = sorted(told(timed), key=lambda sent: sent[0])
    assert (notice["outcome"], notice["decided_by"], notice["reason"]) == ("expired", "", "")
    assert notice["decided_by_email"] == ""  # nobody's decision
    assert notice["note"] == "Expired: nobody decided within 1 day."


async def test_whoever_asked_is_told_once_the_answer_is_carried_with_its_final_outcome(
    timed: Timed,
) -> None:
    """Decided is not yet how it ended: carried past its expiry, an approval ends expired. So
    the requester is due to be told only once a continuation carried it; never about one
    opened again; and at the time it was carried, whatever the database's own time zone."""
    world = timed.world
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    store = world.desk.store
    now = timed.clock.utc()
    answer = {"interruptId": item.item_id, "status": "resolved", "payload": {"approved": True}}
    assert store.decide(item.decision_id, email=ADA.email, name="Ada", outcome="approved",
                        answer=answer, now=now)  # fmt: skip
    assert store.untold(now + timedelta(days=1)) == []  # decided, not carried yet

    store.expire_decided([item.decision_id], now=now)  # carried only after its expiry
    later = now + timedelta(seconds=5)
    store.mark_applied([item.decision_id], tell_at=later)
    assert store.untold(later - timedelta(seconds=1)) == []  # due when it was carried
    [due] = store.untold(later)
    assert (due.decision.outcome, due.decision.tell_at) == ("expired", later)
    timed.clock.advance(5)
    await timed.timers(world.desk).tick()
    [(_, _, notice), _] = sorted(told(timed), key=lambda sent: sent[0])
    assert (notice["outcome"], notice["decided_by"]) == ("expired", "")  # nobody's decision
    assert store.untold(later + timedelta(days=1)) == []  # told once

    # A decision carried and then opened again (the agent refused it) is nobody's news.
    with world.engine.begin() as connection:
        connection.execute(update(decisions).values(tell_at=later, status="pending"))
    assert store.untold(later) == []


async def test_a_quorum_is_told_with_every_approver_as_its_cards_name_them(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "rotate production keys")
    item = await world.only_item(SAM)
    await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    timed.clock.advance(60)  # Olive a minute later: the approvals in the order given
    await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    await world.desk.wait_idle()
    await _tick_all(timed, world.desk)

    [(_, _, notice), _] = sorted(told(timed), key=lambda sent: sent[0])
    assert (notice["outcome"], notice["decided_by"]) == ("approved", "Olive")
    assert notice["note"] == "Approved by Sam and Olive."


async def test_a_quorum_that_expired_short_is_told_with_who_approved(timed: Timed) -> None:
    """Sam approved, Olive never did: Rita reads who approved and how far it got, not that
    nobody decided, and so does the model, and its reply says so."""
    world = timed.world
    thread = await world.start(RITA, "rotate production keys")
    item = await world.only_item(SAM)
    await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    timed.clock.advance(24 * 3600 + 1)
    await _tick_all(timed, world.desk)  # it expires, and she is due to be told
    await _tick_all(timed, world.desk)

    [(_, _, notice), _] = sorted(told(timed), key=lambda sent: sent[0])
    assert (notice["outcome"], notice["decided_by"]) == ("expired", "")
    assert notice["note"] == "Expired: only Sam approved (1 of 2) within 1 day, so nothing ran."
    assert world.executions() == []
    state = state_of(await world.desk.view(thread, RITA))
    [call] = [part for message in state.messages for part in message.parts
              if isinstance(part, ToolCallPart)]  # fmt: skip
    assert (call.status, call.error) == ("expired", notice["note"])
    assert state.messages[-1].text == (
        "The rotate keys expired before enough people approved: only Sam approved (1 of 2) "
        "within 1 day, so nothing ran."
    )
    [record] = [r.data for r in world.records("decision") if r.data.get("status") == "expired"]
    assert (record["approvedBy"], record["quorum"]) == ([SAM.email], 2)


async def test_a_quorums_reminder_goes_to_those_who_have_not_approved(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "rotate production keys")
    later = timed.clock.utc() + timedelta(hours=1)
    with world.engine.begin() as connection:  # the demo's rule has no reminder: one in 1 h
        connection.execute(update(decisions).values(remind_at=later))
    await _tick_all(timed, world.desk)  # both asked, as it pauses
    item = await world.only_item(SAM)
    await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    timed.clock.advance(3600)
    await _tick_all(timed, world.desk)
    emails = [row for row in timed.deliveries("reminder") if row.channel == "email"]
    assert [row.recipient for row in emails] == ["olive@example.com"]
    [reminder] = [Notice.from_json(row.notice) for row in emails]
    assert reminder.approvals == "1 of 2: Sam approved"  # as her inbox says it
    [needed] = [Notice.from_json(row.notice) for row in timed.deliveries("decision-needed")
                if row.recipient == "olive@example.com"]  # fmt: skip
    assert needed.approvals == "2 needed"
    [reminded] = timed.trail("reminded")
    assert reminded["told"] == ["olive@example.com"]


async def test_an_approval_with_changes_is_told_with_the_arguments_that_ran(timed: Timed) -> None:
    world = timed.world
    await world.start(RITA, "transfer 6000 to Ada")
    item = await world.only_item(ADA)
    changed = Answer("approve", edited_args={"recipient": "Ada", "amount": 5500},
                     has_edited_args=True)  # fmt: skip
    await world.desk.decide(item.decision_id, ADA, changed)
    await world.desk.wait_idle()
    await _tick_all(timed, world.desk)
    assert [data["args"]["amount"] for data in world.executions("transfer")] == [5500]
    notices = [notice for _, recipient, notice in told(timed) if recipient == "rita@example.com"]
    [notice] = notices
    assert notice["outcome"] == "edited"
    assert notice["args"] == {"recipient": "Ada", "amount": 5500}
    # Its one line too (the email's "Arguments", the webhook's `summary`); what was asked is
    # said beside it.
    assert notice["summary"] == "recipient=Ada, amount=5500"
    assert notice["note"] == (
        "Approved with changes by Ada. Changed from recipient=Ada, amount=6000."
    )


async def test_whoever_asked_a_question_is_told_the_answer_someone_else_gave(
    timed: Timed,
) -> None:
    world = timed.world
    world.use_policy(
        POLICY + '\n[[rules]]\nname = "shipping-by-ops"\ninterrupt = "shipping-speed"\n'
        'approvers = ["role:ops"]\n'
    )
    await world.start(RITA, "ship order 42")
    item = await world.only_item(SAM)
    body = {"value": {"speed": "overnight", "giftWrap": False}}
    await world.desk.decide(item.decision_id, SAM, Answer.read(body))
    await world.desk.wait_idle()
    await _tick_all(timed, world.desk)
    [notice] = [notice for _, recipient, notice in told(timed) if recipient == RITA.email]
    assert (notice["outcome"], notice["note"]) == (
        "answered", "Answered by Sam: giftWrap=false, speed=overnight."
    )


async def test_nobody_is_told_to_approve_their_own_request_even_where_the_rule_lets_them(
    timed: Timed,
) -> None:
    world = timed.world
    # Large transfers are ops', and the rule does not keep whoever asked from deciding.
    text = POLICY.replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]', 1)
    text = text.replace("not_requester = true         # nobody approves their own request", "", 1)
    assert text.count("not_requester") == POLICY.count("not_requester") - 1
    world.desk.policy = Policy.parse(text, "policy.toml")
    await world.start(SAM, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)
    told = [row.recipient for row in timed.deliveries("decision-needed") if row.channel == "email"]
    assert told == ["olive@example.com"]


async def test_whoever_asked_is_greeted_by_the_name_their_conversation_knows(
    timed: Timed,
) -> None:
    """Without an account (a sign-in proxy's person) the people resolver knows only the
    email; the conversation knows the name the proxy gave."""
    world = timed.world
    await world.start(RITA, "transfer 25 to Ada")  # no rule: Rita decides, and is told
    timers = timed.timers(world.desk)
    timers.people = lambda routes: [Recipient("rita@example.com", "rita")]
    timed.clock.advance(120)
    await timers.tick()
    [email] = [row for row in timed.deliveries("decision-needed") if row.channel == "email"]
    assert json.loads(email.notice)["recipients"] == [{"email": "rita@example.com", "name": "Rita"}]


async def test_whoever_asked_is_told_where_the_rule_lets_only_them_decide(timed: Timed) -> None:
    """Not telling them would leave the decision waiting unseen (a conversation started
    through the API has no page open on it)."""
    world = timed.world
    text = POLICY.replace('approvers = ["role:finance"]', 'approvers = ["rita@example.com"]', 1)
    text = text.replace("not_requester = true         # nobody approves their own request", "", 1)
    world.desk.policy = Policy.parse(text, "policy.toml")
    await world.start(RITA, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)
    told = [row.recipient for row in timed.deliveries("decision-needed") if row.channel == "email"]
    assert told == ["rita@example.com"]


# --- a batch is one email ----------------------------------------------------------------------

INVOICES_TO_FINANCE = POLICY + """
[[rules]]
name = "invoices"
tool = "pay_invoice"
approvers = ["role:finance"]
not_requester = true
"""


async def _send_due(timed: Timed, smtp: Any, hook: Any) -> int:
    """What is due once the emails queued now have waited for the rest of their batch."""
    timed.clock.advance(timed.settings.gather_seconds)
    settings = replace(timed.settings, smtp=smtp.server, webhook_url=hook.url)
    outbox = Outbox(timed.world.engine, settings, clock=timed.clock.utc)
    deliverer = Deliverer(outbox, settings, worker="worker-1",
                          settled=timed.world.desk.store.settled)  # fmt: skip
    try:
        return await deliverer.deliver_due()
    finally:
        await deliverer.aclose()


async def test_a_batch_is_one_email_to_each_person_and_one_of_how_it_ended(timed: Timed) -> None:
    """Three invoices asked together: Ada gets one email naming all three (three deliveries,
    each on its own record), and once she has decided them, Rita one telling how each ended."""
    world = timed.world
    world.use_policy(INVOICES_TO_FINANCE)
    thread = await world.start(RITA, "pay invoices")
    await _tick_all(timed, world.desk)
    with smtp_server() as smtp, webhook_receiver() as hook:
        assert await _send_due(timed, smtp, hook) == 6
    [mail] = smtp.messages
    assert mail.rcpt_tos == ("ada@example.com",)
    assert mail.message["Subject"] == (
        "Approval needed: pay_invoice (invoice=INV-1001, supplier=Acme Paper, amount=120.5) "
        "and 2 more"
    )
    text = mail.part("text/plain")
    assert "Rita (rita@example.com) is waiting for 3 decisions in one conversation" in text
    listed = [line for line in text.splitlines() if line[:3] in ("1. ", "2. ", "3. ")]
    assert [line.split("(invoice=")[1][:8] for line in listed] == [
        "INV-1001", "INV-1002", "INV-1003"
    ]  # fmt: skip
    link = f"https://desk.example.com/c/{thread}"
    assert text.count(link) == 1 and mail.part("text/html").count(f'href="{link}"') == 1
    assert "Open it to approve or reject" in text
    assert [row.status for row in timed.deliveries("decision-needed")] == ["sent"] * 6
    # The webhook's receiver keys on one decision: a post each.
    assert sorted(r.json()["args"]["invoice"] for r in hook.accepted) == [
        "INV-1001", "INV-1002", "INV-1003"
    ]  # fmt: skip

    items, _ = await world.desk.inbox(ADA)
    for item in sorted(items, key=lambda item: item.summary):
        answer = Answer("reject" if "INV-1002" in item.summary else "approve")
        await world.desk.decide(item.decision_id, ADA, answer)
    await world.desk.wait_idle()
    await _tick_all(timed, world.desk)
    with smtp_server() as smtp, webhook_receiver() as hook:
        assert await _send_due(timed, smtp, hook) == 6
    [told_rita] = smtp.messages
    assert told_rita.rcpt_tos == ("rita@example.com",)
    assert told_rita.message["Subject"].startswith("Decided: pay_invoice (")
    text = told_rita.part("text/plain")
    assert "How 3 decisions in your conversation ended:" in text
    assert "Rejected: pay_invoice (invoice=INV-1002" in text
    assert text.count("Approved: pay_invoice (") == 2
    assert "Open the conversation: " + link in text


async def test_a_short_reminder_due_long_before_its_look_says_how_long_it_waited(
    timed: Timed,
) -> None:
    """A rule reminding after 20 s meets its decision 31 s old (a policy changed while it
    waited; a look late): "31 s", not the rule's "20 s"."""
    world = timed.world
    world.use_policy(POLICY.replace('remind_after = "30m"', 'remind_after = "20s"'))
    await world.start(RITA, "transfer 5000 to Ada")
    await _tick_all(timed, world.desk)  # its first notice, to Ada
    timed.clock.advance(31)
    await _tick_all(timed, world.desk)
    notes = {json.loads(row.notice)["note"] for row in timed.deliveries("reminder")}
    assert notes == {"Reminder: waiting for a decision for 31 s"}
    [reminded] = timed.trail("reminded")
    assert reminded["after"] == "20 s"  # as the rule set it
