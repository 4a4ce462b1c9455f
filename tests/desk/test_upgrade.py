"""Decisions stored by an earlier release of the app, decided by this one. A release may change
a tool's approval form (a limit on the reason, say): the pause keeps the form it was made with
(its schemas and their hashes are sealed in it), so the desk's client, which knows the tool as
it is now, holds it as an item to answer with the value its own schema describes. The desk
answers it that way, and the run goes on."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chat_app.client import read_manifest
from chat_app.demo import build_demo_agent
from chat_app.demo import tools as demo_tools
from chat_app.desk import Answer, DeskError
from chat_app.trust import Sealer
from tests.desk.conftest import SECRET
from tests.desk.world import ADA, RITA, World, texts

#: The transfer's reject form before its reason had a limit.
EARLIER_REJECT = {
    "type": "object",
    "properties": {"reason": {"type": "string", "minLength": 1, "title": "Reason"}},
    "required": ["reason"],
    "additionalProperties": False,
}


async def paused_by_the_earlier_release(
    world: World, monkeypatch: pytest.MonkeyPatch, text: str
) -> str:
    """`text` from Rita, run to its pause by an agent whose transfer has the earlier form;
    then the app as it is now (agent and the desk's tools) takes over."""
    now_agent, now_tools = world.agent, world.tools
    earlier = replace(demo_tools.TRANSFER, approval_schema={"reject": EARLIER_REJECT})
    monkeypatch.setattr(
        "chat_app.demo.DEMO_TOOLS",
        [earlier if t.name == "transfer" else t for t in demo_tools.DEMO_TOOLS],
    )
    world.agent = build_demo_agent(
        sealer=Sealer(SECRET), ledger=now_agent.ledger, policy=world.policy
    )
    world.tools = tuple(read_manifest({"tools": world.agent.tool_manifest()}).tools)
    try:
        return await world.start(RITA, text)
    finally:
        world.agent, world.tools = now_agent, now_tools


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Answer("approve"), "Sent 5,000 to Ada."),
        (
            Answer("reject", payload={"reason": "not this month"}, has_payload=True),
            "not this month",
        ),
    ],
)
async def test_an_approval_paused_before_its_tool_changed_is_decided(
    world: World, monkeypatch: pytest.MonkeyPatch, answer: Answer, said: str
) -> None:
    thread = await paused_by_the_earlier_release(world, monkeypatch, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    assert (item.kind, item.name) == ("tool", "transfer")
    await world.desk.decide(item.decision_id, ADA, answer)
    await world.desk.wait_idle()
    view = await world.desk.view(thread, RITA)
    assert any(said in text for text in texts(view)), texts(view)
    ran: list[dict[str, Any]] = world.executions("transfer")
    assert len(ran) == (1 if answer.kind == "approve" else 0)


async def test_an_earlier_pause_is_checked_against_its_own_form(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form the pause was made with decides what is valid: no reason is refused as
    before, and nothing is sent."""
    await paused_by_the_earlier_release(world, monkeypatch, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(
            item.decision_id, ADA, Answer("reject", payload={}, has_payload=True)
        )
    assert refused.value.code == "invalid"
    assert world.continuations == []


async def test_an_earlier_pause_shows_the_form_its_answer_is_checked_against(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's `answerSchemas` of such a pause is its approval's whole envelope, as sealed
    then (the earlier reject form in it); a pause of this release has each branch's own."""
    earlier = await paused_by_the_earlier_release(world, monkeypatch, "transfer 5000 to Ada")
    [item] = (await world.desk.view(earlier, RITA)).pending
    [(item_id, schemas)] = world.desk.answer_schemas(await world.desk.view(earlier, RITA)).items()
    assert item_id == item.item_id and list(schemas) == ["approval"]
    assert EARLIER_REJECT in _schemas_within(schemas["approval"])
    assert demo_tools.TRANSFER.approval.reject not in _schemas_within(schemas["approval"])

    now = await world.start(RITA, "transfer 6000 to Ada")
    assert list(world.desk.answer_schemas(await world.desk.view(now, RITA)).values()) == [{
        "approvePayload": None,
        "rejectPayload": demo_tools.TRANSFER.approval.reject,
        "editedArgs": demo_tools.TRANSFER.input_schema,
        "editable": ["amount"],
    }]  # fmt: skip


def _schemas_within(schema: Any) -> list[Any]:
    """Every value nested in `schema` (itself included): where a branch's form sits in an
    envelope is the envelope's business."""
    found = [schema]
    children = schema.values() if isinstance(schema, dict) else schema if isinstance(
        schema, list) else ()  # fmt: skip
    for child in children:
        found += _schemas_within(child)
    return found
