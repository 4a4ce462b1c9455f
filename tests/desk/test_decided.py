"""What a person decided, newest first (`Desk.decided`, the Inbox's "Decided by you"): their
answers, and their approvals towards a quorum once it is settled, whoever settled it."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from chat_app.desk import Answer, PastDecision
from chat_app.trust import ANONYMOUS
from tests.desk.world import ADA, OLIVE, RITA, SAM, World


def listed(found: list[PastDecision]) -> list[tuple[str, str | None, str | None]]:
    return [(past.item.name, past.item.outcome, past.item.decided_by) for past in found]


async def test_each_person_finds_what_they_decided_newest_first(world: World) -> None:
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)
    await world.start(RITA, "delete project apollo")
    apollo = await world.only_item(RITA)

    assert await world.desk.decided(SAM) == []
    assert (await world.desk.decide(rotation.decision_id, SAM, Answer("approve"))).status == (
        "waiting"
    )
    # An approval towards a quorum is not a decision yet: it waits in Olive's inbox.
    assert await world.desk.decided(SAM) == []

    await world.desk.decide(transfer.decision_id, ADA, Answer("approve"))
    await world.desk.decide(rotation.decision_id, OLIVE, Answer("approve"))
    await world.desk.decide(apollo.decision_id, RITA, Answer("reject"))
    await world.desk.wait_idle()

    assert listed(await world.desk.decided(ADA)) == [
        ("transfer", "approved", "ada@example.com")
    ]
    # Sam's approval counted once Olive's completed the quorum: he finds it, decided by her.
    [sams] = await world.desk.decided(SAM)
    assert listed([sams]) == [("rotate_keys", "approved", "olive@example.com")]
    assert [vote.email for vote in sams.item.approvals] == [SAM.email, OLIVE.email]
    assert sams.acted_at == sams.item.votes[0].at  # when he approved, not when she did
    [olives] = await world.desk.decided(OLIVE)
    assert olives.item.decision_id == rotation.decision_id  # once, though she voted too
    # Rita answered her own rule-less request; she never decided the others.
    assert listed(await world.desk.decided(RITA)) == [
        ("delete_project", "rejected", "rita@example.com")
    ]


async def test_a_withdrawal_and_a_rejection_after_an_approval_are_listed(world: World) -> None:
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)

    await world.desk.decide(transfer.decision_id, RITA, Answer.read({"cancelled": True}))
    await world.desk.decide(rotation.decision_id, SAM, Answer("approve"))
    await world.desk.decide(rotation.decision_id, OLIVE, Answer("reject"))
    await world.desk.wait_idle()

    assert listed(await world.desk.decided(RITA)) == [
        ("transfer", "cancelled", "rita@example.com")
    ]
    assert listed(await world.desk.decided(SAM)) == [
        ("rotate_keys", "rejected", "olive@example.com")
    ]
    assert listed(await world.desk.decided(ADA)) == []


async def test_the_newest_come_first_up_to_the_limit(world: World) -> None:
    start = datetime.now(UTC)
    ticks = itertools.count()
    # A clock that moves a millisecond at every look: no two decisions share a moment.
    world.desk = world.new_desk(
        worker="worker-ticking", clock=lambda: start + timedelta(milliseconds=next(ticks))
    )
    threads = [await world.start(RITA, f"transfer {2000 + n} to Ada") for n in range(3)]
    inbox, _ = await world.desk.inbox(ADA)
    assert {item.thread_id for item in inbox} == set(threads)
    for item in sorted(inbox, key=lambda item: item.created_at):
        await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()

    found = await world.desk.decided(ADA)
    assert [past.item.summary for past in found] == [
        "recipient=Ada, amount=2002", "recipient=Ada, amount=2001", "recipient=Ada, amount=2000"
    ]  # fmt: skip
    assert [p.acted_at for p in found] == sorted((p.acted_at for p in found), reverse=True)
    assert [past.item.summary for past in await world.desk.decided(ADA, limit=2)] == [
        "recipient=Ada, amount=2002", "recipient=Ada, amount=2001"
    ]  # fmt: skip
    # Nobody signed in decided nothing.
    assert await world.desk.decided(ANONYMOUS) == []


async def test_a_rejection_is_listed_with_its_reason(world: World) -> None:
    """Ada's "Decided by you" says why she rejected, as the requester was told; an approval
    and a rejection without a payload have none."""
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    body = {"approved": False, "payload": {"reason": "  Wrong account  "}}
    await world.desk.decide(transfer.decision_id, ADA, Answer.read(body))
    await world.start(RITA, "delete project apollo")
    apollo = await world.only_item(RITA)
    await world.desk.decide(apollo.decision_id, RITA, Answer("reject"))
    await world.desk.wait_idle()

    [adas] = await world.desk.decided(ADA)
    assert (adas.reason, adas.to_json()["reason"]) == ("Wrong account", "Wrong account")
    [ritas] = await world.desk.decided(RITA)
    assert ritas.reason == ""
