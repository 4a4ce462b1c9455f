"""A page running a stored conversation itself (`Desk.page_run`): it holds the conversation
while it runs, and an answer given in the chat and one given from the inbox cannot both go."""

from __future__ import annotations

import pytest

from chat_app.desk import Answer, DeskError
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
