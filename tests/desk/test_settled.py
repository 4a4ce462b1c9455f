"""How a person's requests ended, as they end (`Desk.settled_for`): what the chat page tells
them of when it shows another conversation. Settled by someone else or by nobody (expired),
never by the person themselves; from a moment on; each with its conversation's title."""

from __future__ import annotations

from datetime import timedelta

from chat_app.desk import Answer, SettledRequest
from chat_app.trust import ANONYMOUS
from tests.desk.world import ADA, OLIVE, RITA, SAM, World


def listed(found: list[SettledRequest]) -> list[tuple[str, str, str | None, str | None]]:
    return [(s.title, s.item.name, s.item.outcome, s.item.decided_by) for s in found]


async def test_what_others_settled_comes_oldest_first_and_the_persons_own_never(
    world: World,
) -> None:
    since = world.desk.clock()
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)
    await world.start(RITA, "delete project apollo")
    apollo = await world.only_item(RITA)

    # An approval towards a quorum settles nothing yet.
    await world.desk.decide(rotation.decision_id, SAM, Answer("approve"))
    assert await world.desk.settled_for(RITA, since) == []

    no = Answer("reject", payload={"reason": "Not this quarter."}, has_payload=True)
    await world.desk.decide(transfer.decision_id, ADA, no)
    await world.desk.decide(apollo.decision_id, RITA, Answer("reject"))  # her own: she knows
    await world.desk.decide(rotation.decision_id, OLIVE, Answer("approve"))
    await world.desk.wait_idle()

    found = await world.desk.settled_for(RITA, since)
    assert listed(found) == [
        ("transfer 5000 to Ada", "transfer", "rejected", ADA.email),
        ("rotate production keys", "rotate_keys", "approved", OLIVE.email),
    ]
    assert [vote.email for vote in found[1].item.approvals] == [SAM.email, OLIVE.email]
    assert found[0].settled_at <= found[1].settled_at
    # From the last one read on, nothing more; and nothing of Rita's is anyone else's.
    assert await world.desk.settled_for(RITA, found[-1].settled_at) == []
    assert listed(await world.desk.settled_for(RITA, found[0].settled_at)) == [
        ("rotate production keys", "rotate_keys", "approved", OLIVE.email)
    ]
    assert await world.desk.settled_for(ADA, since) == []
    assert await world.desk.settled_for(ANONYMOUS, since) == []


async def test_a_withdrawal_is_not_told_and_an_expiry_is(world: World) -> None:
    since = world.desk.clock()
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)

    await world.desk.decide(transfer.decision_id, RITA, Answer.read({"cancelled": True}))
    assert await world.desk.expire(rotation)
    await world.desk.wait_idle()

    assert listed(await world.desk.settled_for(RITA, since)) == [
        ("rotate production keys", "rotate_keys", "expired", None)
    ]


async def test_only_what_was_settled_after_the_moment_is_listed(world: World) -> None:
    await world.start(RITA, "transfer 5000 to Ada")
    transfer = await world.only_item(ADA)
    await world.desk.decide(transfer.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()
    [settled] = await world.desk.settled_for(RITA, world.desk.clock() - timedelta(hours=1))

    assert settled.item.outcome == "approved"
    assert await world.desk.settled_for(RITA, settled.settled_at) == []
    assert await world.desk.settled_for(RITA, world.desk.clock()) == []


async def test_a_rules_own_decision_is_not_told(world: World) -> None:
    """A refund the policy approves at the pause went on in the run Rita watched: no news
    from someone else."""
    since = world.desk.clock()
    thread = await world.start(RITA, "refund 20 to order 42")
    await world.desk.wait_idle()

    assert [item.outcome for item in await world.desk.decisions_of(thread)] == ["auto"]
    assert await world.desk.settled_for(RITA, since) == []
