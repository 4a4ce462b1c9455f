"""A policy changed while decisions waited (the app restarted with another policy file): at
start the desk files every pending decision again under the rule the engine's gate will judge
its answer by, so the inbox, the reminders and the quorum agree with the engine.

On SQLite and PostgreSQL (the `world` fixture's `database_url`)."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest
from sqlalchemy import event, select

from chat_app.demo import POLICY_PATH
from chat_app.desk import Answer, DeskError, InboxItem
from chat_app.desk import desk as desk_module
from chat_app.trust import Policy
from chat_app.trust.tables import decision_routes, decisions
from tests.desk.world import ADA, OLIVE, RITA, SAM, World
from tests.trust.policies import deciding_alone

DEMO = POLICY_PATH.read_text()
#: Key rotation for finance and admin rather than ops.
MOVED = DEMO.replace('approvers = ["role:ops"]', 'approvers = ["role:finance", "role:admin"]')


def _use(world: World, text: str) -> Policy:
    assert text != DEMO
    return world.use_policy(text)


def _routes(world: World, decision_id: str) -> list[str]:
    with world.engine.connect() as connection:
        found = connection.execute(
            select(decision_routes.c.route).where(decision_routes.c.decision_id == decision_id)
        ).scalars()
        return sorted(found)


def _row(world: World, decision_id: str) -> object:
    with world.engine.connect() as connection:
        return connection.execute(select(decisions).where(decisions.c.id == decision_id)).one()


async def _inbox_once_filled(world: World) -> list[InboxItem]:
    """Ada's inbox, as soon as it lists something (or after 5 s: the caller's assert says)."""
    for _ in range(250):
        items, _ = await world.desk.inbox(ADA)
        if items:
            break
        await asyncio.sleep(0.02)
    return items


async def _rotation_approved_by_sam(world: World) -> tuple[str, InboxItem]:
    thread = await world.start(RITA, "rotate production keys")
    items, _ = await world.desk.inbox(SAM)
    [item] = items
    assert (await world.desk.decide(item.decision_id, SAM, Answer("approve"))).status == "waiting"
    await world.desk.wait_idle()
    return thread, item


async def test_new_approvers_find_a_waiting_decision_and_the_old_ones_lose_it(
    world: World,
) -> None:
    """Key rotation moved from ops to finance and admin while one waited with Sam's approval:
    Ada and Olive find it in their inbox, Sam no longer does, it waits for two of the new
    approvers (Sam's vote no longer counts), and their two approvals run it once."""
    thread, item = await _rotation_approved_by_sam(world)
    policy = _use(world, MOVED)
    # Filed under the old rule, only ops' routes lead to it.
    assert await world.desk.inbox(ADA) == ([], 0)
    before = (await world.desk.view(thread, RITA)).summary.waiting_for

    assert await world.desk.refile() == [item.decision_id]
    # The conversation says whom it waits for now, as its decision does.
    after = (await world.desk.view(thread, RITA)).summary.waiting_for
    assert after != before and after == (await world.only_item(ADA)).waiting_for

    assert _routes(world, item.decision_id) == ["role:admin", "role:finance"]
    for approver in (ADA, OLIVE):
        shown = await world.only_item(approver)
        assert (shown.decision_id, shown.rule, shown.progress) == (
            item.decision_id, "key-rotation", "0 of 2",
        )  # fmt: skip
    assert await world.desk.inbox(SAM) == ([], 0)
    rule = policy.rule_named("key-rotation")
    assert rule is not None
    assert (await world.only_item(ADA)).waiting_for == policy.waiting_for(
        rule, viewer_is_requester=False
    )
    # Filed again under the same policy, nothing moves.
    assert await world.desk.refile() == []

    assert (await world.desk.decide(item.decision_id, ADA, Answer("approve"))).status == "waiting"
    assert (await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
    [decision] = world.records("decision")
    assert decision.actor == "olive@example.com"
    assert [c["actor"] for c in decision.data["cosigners"]] == ["ada@example.com"]


async def test_a_renamed_rule_is_found_again_by_what_it_governs(world: World) -> None:
    """The rule was renamed: the desk found rules by the name stored with the decision, and
    with no rule of that name it took the decision for the requester's own (Sam's inbox lost
    it, Rita could not decide either: the engine matches the call to the renamed rule). Filed
    again, it is the renamed rule's: Sam's approval still counts and Olive's decides."""
    _, item = await _rotation_approved_by_sam(world)
    _use(world, DEMO.replace('name = "key-rotation"', 'name = "production-keys"'))

    assert await world.desk.refile() == [item.decision_id]

    shown = await world.only_item(OLIVE)
    assert (shown.rule, shown.progress) == ("production-keys", "1 of 2: Sam approved")
    assert _routes(world, item.decision_id) == ["role:ops"]
    with pytest.raises(DeskError) as own:
        await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    assert own.value.code == "forbidden"
    assert (await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
    [decision] = world.records("decision")
    assert decision.data["rule"] == "production-keys"


async def test_a_rule_taken_out_leaves_the_decision_to_whoever_asked(world: World) -> None:
    """With key rotation's rule gone, the engine lets whoever asked decide, so the desk does
    too: it is in Rita's inbox (and no longer in ops'), and her approval runs it."""
    _, item = await _rotation_approved_by_sam(world)
    without = re.sub(r'(?ms)^\[\[rules\]\]\nname = "key-rotation".*\Z', "", DEMO)
    assert "rotate_keys" not in without
    _use(world, without)

    assert await world.desk.refile() == [item.decision_id]

    assert _routes(world, item.decision_id) == ["user:rita@example.com"]
    assert await world.desk.inbox(SAM) == ([], 0)
    shown = await world.only_item(RITA)
    assert (shown.rule, shown.quorum, shown.waiting_for) == (None, 1, "Waiting for Rita")
    assert (await world.desk.decide(item.decision_id, RITA, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]


async def test_reminders_go_to_the_new_approvers_and_an_escalation_made_stands(
    world: World,
) -> None:
    """A large transfer, escalated to admin, waited while its approvers moved from finance
    to ops: its reminder is due to ops and no longer to finance, and it stays escalated (the
    new rule escalates it the same way), so admin keeps it too."""
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    paused = item.created_at
    assert world.store.fire("escalate", item.decision_id, paused, routes=["role:admin"])
    _use(world, DEMO.replace('approvers = ["role:finance"]', 'approvers = ["role:ops"]'))

    assert await world.desk.refile() == [item.decision_id]

    assert _routes(world, item.decision_id) == ["role:admin", "role:ops"]
    [due] = world.store.due("remind", paused + timedelta(hours=1))
    assert sorted(due.routes) == ["role:admin", "role:ops"]
    row = _row(world, item.decision_id)
    assert row.escalated_at == paused  # type: ignore[attr-defined]
    assert await world.desk.inbox(ADA) == ([], 0)
    assert (await world.only_item(SAM)).escalation.startswith("escalated to admin")
    assert await world.desk.refile() == []


async def test_the_app_files_them_again_as_it_starts(world: World) -> None:
    """`keep_recovering`, which every worker runs from its start, files pending decisions
    again before anything else."""
    _, item = await _rotation_approved_by_sam(world)
    _use(world, MOVED)
    running = asyncio.create_task(world.desk.keep_recovering())
    try:
        assert [shown.decision_id for shown in await _inbox_once_filled(world)] == [
            item.decision_id
        ]
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_every_page_is_filed_whatever_the_database_clock_zone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five waiting key rotations, filed again two to a transaction, on a PostgreSQL whose
    sessions keep time in Tokyo (the times are stored as UTC without a zone: each page ends
    at one, and the next starts after it, as stored)."""
    for _ in range(5):
        await world.start(RITA, "rotate production keys")
    if world.engine.dialect.name == "postgresql":
        world.engine.dispose()

        @event.listens_for(world.engine, "connect")
        def in_tokyo(connection: object, _: object) -> None:
            with connection.cursor() as cursor:  # type: ignore[attr-defined]
                cursor.execute("SET TIME ZONE 'Asia/Tokyo'")
            connection.commit()  # type: ignore[attr-defined]

    monkeypatch.setattr(desk_module, "REFILE_PAGE", 2)
    _use(world, MOVED)

    moved = await world.desk.refile()

    items, total = await world.desk.inbox(ADA)
    assert total == 5 and sorted(moved) == sorted(item.decision_id for item in items)


async def test_what_a_worker_on_the_old_policy_files_moves_to_the_new_one(world: World) -> None:
    """A rolling restart: this worker started on the new policy (key rotation for finance
    and admin) while another, still on the old one, filed Rita's request for ops. This
    worker files it again at its next round, and Ada finds it."""
    old = world.new_desk(worker="worker-old")
    old.policy = Policy.parse(DEMO, "policy.toml")
    _use(world, MOVED)
    await world.desk.refiled()
    await world.start(RITA, "rotate production keys", desk=old)
    [filed] = world.store.pending()
    assert _routes(world, filed.decision_id) == ["role:ops"]
    # Its rounds from now (started before, one could have come before the look above).
    world.desk.refile_every_seconds = 0.05
    running = asyncio.create_task(world.desk.keep_recovering())
    try:
        items = await _inbox_once_filled(world)
        assert [item.decision_id for item in items] == [filed.decision_id]
        assert _routes(world, filed.decision_id) == ["role:admin", "role:finance"]
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_a_question_keeps_its_rule_and_takes_its_new_settings(world: World) -> None:
    """A question the policy gives to Ada (the shipping speed) is in her inbox, and filing
    it again under the same policy moves nothing. The rule then names admin: filed again,
    it is Olive's. (The desk's client knows no question definitions, so a question's rule
    is the one named at its pause.)"""
    rule = (
        '\n[[rules]]\nname = "shipping-by-ada"\ninterrupt = "shipping-speed"\n'
        'approvers = ["ada@example.com"]\n'
    )
    _use(world, DEMO + rule)
    await world.start(RITA, "ship order 42")
    shown = await world.only_item(ADA)
    assert (shown.kind, shown.rule) == ("question", "shipping-by-ada")
    assert await world.desk.inbox(RITA) == ([], 0)
    assert await world.desk.refile() == []

    _use(world, DEMO + rule.replace('["ada@example.com"]', '["role:admin"]'))
    assert await world.desk.refile() == [shown.decision_id]
    assert (await world.only_item(OLIVE)).decision_id == shown.decision_id
    assert await world.desk.inbox(ADA) == ([], 0)
    body = {"value": {"speed": "express", "giftWrap": False}}
    result = await world.desk.decide(shown.decision_id, OLIVE, Answer.read(body))
    assert result.item.outcome == "answered"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["ship_order"]


@pytest.mark.parametrize("agent_reads_policy", [True, False])
async def test_a_remote_agents_rule_is_the_one_its_pause_named(
    world: World, agent_reads_policy: bool
) -> None:
    """Large transfers start above 10,000 now. A desk whose agent reads its policy moves a
    5,000 transfer waiting for finance to Rita, as that agent's gate will judge it; a desk
    in front of a remote agent (whose rules are its own) keeps the rule its pause named."""
    world.desk.agent_reads_policy = agent_reads_policy
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    _use(world, DEMO.replace("exclusiveMinimum = 1000 ", "exclusiveMinimum = 10000 "))

    moved = await world.desk.refile()

    if agent_reads_policy:
        assert moved == [item.decision_id]
        assert (await world.only_item(RITA)).rule is None
    else:
        assert moved == []
        assert (await world.only_item(ADA)).rule == "large-transfers"


@pytest.mark.parametrize("agent_reads_policy", [True, False])
async def test_a_call_the_policy_now_decides_alone_is_left_to_whoever_asked(
    world: World, agent_reads_policy: bool
) -> None:
    """Key rotation is approved by the policy itself now. Nobody is asked under such a rule,
    so a call that paused before is Rita's, who asked (as the engine's gate and the page
    have it), whether the desk matches the call or goes by the rule its pause names; Sam,
    who approved it under the old rule, no longer may, and Rita's approval runs it."""
    world.desk.agent_reads_policy = agent_reads_policy
    _, item = await _rotation_approved_by_sam(world)
    _use(world, deciding_alone("key-rotation", "approve", DEMO))

    assert await world.desk.refile() == [item.decision_id]

    shown = await world.only_item(RITA)
    assert (shown.rule, shown.waiting_for) == (None, "Waiting for Rita")
    assert await world.desk.inbox(SAM) == ([], 0)
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert refused.value.code == "forbidden"
    assert (await world.desk.decide(item.decision_id, RITA, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
