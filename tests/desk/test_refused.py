"""Answers the engine's gate would not run: refused at the desk when it reads the same policy
(before anything is stored as decided), and, when the agent refuses one all the same (its rules
are its own), the decision waits again with the agent's reason, nothing lost."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.demo import POLICY_PATH
from chat_app.desk import Answer, DeskError, DeskStats
from chat_app.desk import desk as desk_module
from chat_app.observe import decision_span
from chat_app.trust import Identity, Policy
from tests.desk.world import ADA, OLIVE, RITA, SAM, World, state_of, texts
from tests.trust.policies import BIG_INVOICES, deciding_alone


def _edited(args: dict[str, object]) -> Answer:
    return Answer("approve", edited_args=args, has_edited_args=True)


async def _refused(world: World, decision_id: str, answer: Answer, who: Identity) -> str:
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(decision_id, who, answer)
    assert refused.value.code == "forbidden"
    return refused.value.message


async def test_an_edit_into_a_rule_that_does_not_allow_the_decider_is_refused_up_front(
    world: World,
) -> None:
    """Rita's transfer of 25 is hers to decide; raised to 5,000 it would be finance's, so the
    desk refuses her edit with the engine's reason, and her approval as shown runs it. Ada,
    of finance, cannot cut Rita's 5,000 down to 500 either: no rule covers that, so it is
    Rita's alone."""
    await world.start(RITA, "transfer 25 to Ada")
    small = await world.only_item(RITA)
    to_ada = {"recipient": "Ada", "amount": 5000}
    message = await _refused(world, small.decision_id, _edited(to_ada), RITA)
    assert message == (
        "Edited, the call falls under rule large-transfers: Needs approval from role finance, "
        "not the requester."
    )
    assert (await world.only_item(RITA)).status == "pending"
    await world.start(RITA, "transfer 5000 to Ada")
    large = await world.only_item(ADA)
    message = await _refused(world, large.decision_id, _edited({**to_ada, "amount": 500}), ADA)
    assert message == (
        "Edited, the call falls under no rule: only the person who asked (Rita) runs it so."
    )
    assert world.executions() == []

    assert (await world.desk.decide(small.decision_id, RITA, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["args"]["amount"] for run in world.executions("transfer")] == [25]


async def test_an_edit_of_an_argument_the_rule_keeps_is_refused_up_front(world: World) -> None:
    """The demo's large transfers let finance change the amount alone: Ada's approval of
    Rita's transfer to Bob as one to herself is refused before anything is stored, with the
    engine's words, in the trail as her refusal; her lower amount to Bob runs."""
    await world.start(RITA, "transfer 5000 to Bob")
    item = await world.only_item(ADA)
    to_herself = _edited({"recipient": "Ada", "amount": 5000})
    message = await _refused(world, item.decision_id, to_herself, ADA)
    assert message == "Rule large-transfers lets an approver change only amount, not recipient."
    [refusal] = world.records("refusal")
    assert refusal.actor == ADA.email and refusal.data["reason"] == message
    assert (await world.only_item(ADA)).status == "pending"
    assert world.executions() == []

    # Paid to herself and lowered under any rule: what she may not change is said first, as
    # the engine says it (tests/agent/test_policy_gate.py).
    both = _edited({"recipient": "Ada", "amount": 500})
    assert await _refused(world, item.decision_id, both, ADA) == message

    lower = _edited({"recipient": "Bob", "amount": 4000})
    assert (await world.desk.decide(item.decision_id, ADA, lower)).status == "decided"
    await world.desk.wait_idle()
    assert [run["args"] for run in world.executions("transfer")] == [
        {"recipient": "Bob", "amount": 4000}
    ]


async def test_under_editable_empty_the_desk_takes_no_edit_and_says_so(world: World) -> None:
    """A client that builds its own form reads which arguments it may change; with none, no
    edit schema, and an edit of anything is refused (an approval as shown runs)."""
    thread = await world.start(RITA, "transfer 5000 to Bob")
    [schemas] = world.desk.answer_schemas(await world.desk.view(thread, ADA)).values()
    assert (schemas["editable"], schemas["editedArgs"] is not None) == (["amount"], True)
    world.use_policy(POLICY_PATH.read_text().replace('editable = ["amount"]', "editable = []"))
    [schemas] = world.desk.answer_schemas(await world.desk.view(thread, ADA)).values()
    assert (schemas["editable"], schemas["editedArgs"]) == ([], None)
    item = await world.only_item(ADA)
    message = await _refused(world, item.decision_id, _edited({"recipient": "Bob", "amount": 1}),
                             ADA)  # fmt: skip
    assert message == (
        "Rule large-transfers lets nobody change the arguments: approve them as shown, or reject."
    )
    assert (await world.desk.decide(item.decision_id, ADA, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert [run["args"]["amount"] for run in world.executions("transfer")] == [5000]


async def test_a_call_the_policy_came_to_reject_is_refused_an_approval_at_the_desk(
    world: World,
) -> None:
    """Large transfers are rejected by policy now: Rita, whose it is, cannot approve hers
    (she reads why), and may reject it."""
    await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    world.use_policy(deciding_alone("large-transfers", "reject"))

    message = await _refused(world, item.decision_id, Answer("approve"), RITA)
    assert message == "Rejected by policy large-transfers: frozen for the audit."
    no = Answer("reject", payload={"reason": "frozen"}, has_payload=True)
    assert (await world.desk.decide(item.decision_id, RITA, no)).status == "decided"
    await world.desk.wait_idle()
    assert world.executions() == []
    assert (await world.desk.decision(item.decision_id)).outcome == "rejected"  # type: ignore[union-attr]


async def test_an_answer_the_agent_refuses_waits_again_with_its_reason(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the agent elsewhere the desk cannot judge an edit by its rules: Rita's edit of
    her 25 to 5,000 is stored as decided, the agent refuses it and runs nothing, and the
    decision is pending again in her inbox (her refused vote gone), the card saying why,
    its trace a `refused` step and no `executed` one; her approval as shown then runs it
    once."""
    steps: list[tuple[str, str]] = []
    traced = decision_span

    def step(decision_id: str, name: str, **given: Any) -> None:
        steps.append((decision_id, name))
        traced(decision_id, name, **given)

    monkeypatch.setattr(desk_module, "decision_span", step)
    failed: list[str] = []
    monkeypatch.setattr(desk_module, "fail_current_span", failed.append)
    world.desk.agent_reads_policy = False
    thread = await world.start(RITA, "transfer 25 to Ada")
    item = await world.only_item(RITA)

    edited = _edited({"recipient": "Ada", "amount": 5000})
    assert (await world.desk.decide(item.decision_id, RITA, edited)).status == "decided"
    await world.desk.wait_idle()

    assert world.executions() == []
    again = await world.only_item(RITA)
    assert (again.decision_id, again.status, again.votes) == (item.decision_id, "pending", ())
    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "waiting"
    [card] = state_of(view).interrupts
    assert card.error is not None
    assert card.error.message == (
        "Edited, the call falls under rule large-transfers: Needs approval from role finance, "
        "not the requester."
    )
    assert [r.actor for r in world.records("refusal")] == [RITA.email]
    # A script reads it too: the conversation's JSON says why it waits again.
    shown = view.to_json([], world.desk.answer_schemas(view), world.desk.refusals(view))
    assert [d["refusal"] for d in shown["decisions"]] == [
        {"code": card.error.code, "message": card.error.message}
    ]
    assert [name for id_, name in steps if id_ == item.decision_id] == [
        "paused", "decided", "refused"
    ]  # fmt: skip
    assert failed == []  # a refusal is the agent's answer, not a failed run

    # The metrics' count by outcome keeps the edit it had counted: a counter never goes down.
    assert dict(DeskStats(world.engine).outcomes()) == {"edited": 1}

    other = await world.start(RITA, "transfer 30 to Ada")  # never answered: refused nothing
    assert world.desk.refusals(await world.desk.view(other, RITA)) == {}
    assert (await world.desk.decide(item.decision_id, RITA, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    assert dict(DeskStats(world.engine).outcomes()) == {"edited": 1, "approved": 1}
    assert [name for id_, name in steps if id_ == item.decision_id][-2:] == ["decided", "executed"]
    assert [run["args"]["amount"] for run in world.executions("transfer")] == [25]
    assert (await world.desk.view(thread, RITA)).summary.status == "done"
    assert "Sent 25 to Ada" in " ".join(texts(await world.desk.view(thread, RITA)))


async def test_the_rest_of_a_refused_batch_stays_decided_and_goes_with_it(
    world: World,
) -> None:
    """Three invoices, the middle one finance's. Rita raises the first into finance's reach;
    the agent (its rules unread by the desk) refuses the batch when Ada's approval completes
    it. Only Rita's refused answer waits again; Ada's and Rita's others are carried with her
    second answer, each as its own decider's."""
    world.use_policy(POLICY_PATH.read_text() + BIG_INVOICES)
    world.desk.agent_reads_policy = False
    thread = await world.start(RITA, "pay invoices")
    mine, _ = await world.desk.inbox(RITA)
    first, third = sorted(mine, key=lambda item: item.summary)
    raised = {"invoice": "INV-1001", "supplier": "Acme Paper", "amount": 900}
    await world.desk.decide(first.decision_id, RITA, _edited(raised))
    await world.desk.decide(third.decision_id, RITA, Answer("approve"))
    middle = await world.only_item(ADA)
    await world.desk.decide(middle.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()

    assert world.executions() == []
    assert (await world.only_item(RITA)).decision_id == first.decision_id
    # The trail names whose answer was refused: Rita's, though Ada's approval sent the batch.
    [refusal] = world.records("refusal")
    assert (refusal.actor, refusal.data["verifiedBy"]) == (RITA.email, RITA.method)
    statuses = {d.decision_id: d.status for d in await world.desk.decisions_of(thread)}
    assert statuses == {first.decision_id: "pending", middle.decision_id: "decided",
                        third.decision_id: "decided"}  # fmt: skip

    await world.desk.decide(first.decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    assert sorted(run["args"]["amount"] for run in world.executions("pay_invoice")) == [
        64.25, 120.5, 980
    ]  # fmt: skip
    actors = sorted(r.actor or "" for r in world.records("decision"))
    assert actors == [ADA.email, RITA.email, RITA.email]
    assert (await world.desk.view(thread, RITA)).summary.status == "done"


async def test_a_quorum_the_agent_refuses_a_cosigner_of_starts_again(world: World) -> None:
    """Key rotation needs two of ops. The agent (elsewhere, its rules its own) leaves it to
    finance and admin now; the desk still to ops, so Sam's and Olive's approvals complete it
    and the agent refuses Sam as a cosigner. Nothing runs, and the decision waits again with
    no approvals: counted again, Sam's would be refused again."""
    world.desk.agent_reads_policy = False
    thread = await world.start(RITA, "rotate production keys")
    moved = 'approvers = ["role:finance", "role:admin"]'
    world.agent.policy = Policy.parse(
        POLICY_PATH.read_text().replace('approvers = ["role:ops"]', moved)
    )
    item = await world.only_item(SAM)
    assert (await world.desk.decide(item.decision_id, SAM, Answer("approve"))).status == "waiting"
    assert (await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))).status == (
        "decided"
    )
    await world.desk.wait_idle()

    assert world.executions() == []
    again = await world.only_item(OLIVE)
    assert (again.status, again.votes, again.progress) == ("pending", (), "0 of 2")
    [card] = state_of(await world.desk.view(thread, RITA)).interrupts
    assert card.error is not None and card.error.message.startswith(
        "Cosigner sam@example.com may not approve (rule key-rotation)"
    )
