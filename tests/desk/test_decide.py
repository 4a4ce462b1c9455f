"""Deciding from the inbox: refusals (unknown, forbidden, already decided, invalid, expired)
that store nothing, and answers that run the continuation as the person who gave them."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from chat_app.desk import Answer, DecideResult, Desk, DeskError, InboxItem
from chat_app.desk import desk as desk_module
from chat_app.trust import WITHDRAWAL_ONLY, verify_chain
from chat_app.ui.answered import answered_by
from chat_app.ui.views import build_views
from tests.desk.world import ADA, OLIVE, RITA, SAM, World, state_of, texts


async def large_transfer(world: World) -> tuple[str, InboxItem]:
    """Rita asks to send 5000 to Ada: the pause waits for finance (Ada)."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    return thread, await world.only_item(ADA)


async def refused(desk: Desk, item: InboxItem, who: Any, body: dict[str, Any]) -> DeskError:
    with pytest.raises(DeskError) as caught:
        await desk.decide(item.decision_id, who, Answer.read(body))
    return caught.value


async def assert_still_pending(world: World, item: InboxItem) -> None:
    """Nothing was stored: the decision is pending, in Ada's inbox, with no vote, and the
    conversation waits, nothing run."""
    await world.desk.wait_idle()
    fresh = await world.desk.decision(item.decision_id)
    assert fresh is not None and fresh.status == "pending" and fresh.votes == ()
    assert (await world.only_item(ADA)).decision_id == item.decision_id
    [summary] = await world.desk.conversations(RITA)
    assert summary.status == "waiting"
    assert world.continuations == [] and world.executions() == []


async def test_an_unknown_decision(world: World) -> None:
    with pytest.raises(DeskError) as caught:
        await world.desk.decide("d" + "0" * 31, ADA, Answer("approve"))
    assert (caught.value.code, caught.value.http_status) == ("unknown", 404)


async def test_only_finance_may_approve_a_large_transfer(world: World) -> None:
    _, item = await large_transfer(world)
    error = await refused(world.desk, item, RITA, {"approved": True})
    assert (error.code, error.http_status) == ("forbidden", 403)
    assert "finance" in error.message
    error = await refused(world.desk, item, SAM, {"approved": False, "payload": {"reason": "x"}})
    assert error.code == "forbidden" and "finance" in error.message
    error = await refused(world.desk, item, OLIVE, {"approved": True})  # an admin looks only
    assert error.code == "forbidden" and "finance" in error.message
    await assert_still_pending(world, item)
    # The trail says who tried, how they were verified, and what they were told.
    trail = world.records("refusal")
    assert [(r.actor, r.thread_id, r.data["interruptId"]) for r in trail] == [
        (person.email, item.thread_id, item.item_id) for person in (RITA, SAM, OLIVE)
    ]
    assert all(r.data["verifiedBy"] == "demo" and "finance" in r.data["reason"] for r in trail)
    assert {r.data["decisionId"] for r in trail} == {item.decision_id}
    assert world.agent.ledger is not None
    assert verify_chain(world.agent.ledger.records()).ok


async def test_the_requester_may_withdraw_it(world: World) -> None:
    thread, item = await large_transfer(world)
    result = await world.desk.decide(item.decision_id, RITA, Answer.read({"cancelled": True}))
    assert result.status == "decided" and result.item.outcome == "cancelled"
    assert result.item.decided_by == "rita@example.com"
    await world.desk.wait_idle()

    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert texts(view)[-1] == "Cancelled: transfer did not run."
    assert world.executions() == []
    assert await world.desk.inbox(ADA) == ([], 0)


async def test_an_approver_rejects_rather_than_cancels(world: World) -> None:
    """Cancel is the requester's withdrawal: finance says no by rejecting, with the reason
    the rule asks for. The refused cancel decides nothing and is in the trail."""
    _, item = await large_transfer(world)
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(item.decision_id, ADA, Answer.read({"cancelled": True}))
    assert (refused.value.code, refused.value.message) == ("forbidden", WITHDRAWAL_ONLY)
    assert (await world.only_item(ADA)).status == "pending"
    [record] = world.records("refusal")
    assert (record.actor, record.data["toolName"], record.data["rule"]) == (
        ADA.email, "transfer", "large-transfers"
    )  # fmt: skip
    # Someone who may not reject either is told why they may not decide, not to reject.
    with pytest.raises(DeskError) as not_theirs:
        await world.desk.decide(item.decision_id, SAM, Answer.read({"cancelled": True}))
    assert not_theirs.value.message == "Needs approval from role finance, not the requester."
    # Rita may neither approve nor reject what she asked for: she is told what she may do.
    no = Answer.read({"approved": False, "payload": {"reason": "x"}})
    for answer in (Answer("approve"), no):
        with pytest.raises(DeskError) as own:
            await world.desk.decide(item.decision_id, RITA, answer)
        assert own.value.message == (
            "Needs approval from role finance, not the requester. You may withdraw your own "
            "request: cancel it."
        )
    withdrawn = await world.desk.decide(item.decision_id, RITA, Answer.read({"cancelled": True}))
    assert withdrawn.status == "decided"


async def test_edited_args_given_as_null_are_none(world: World) -> None:
    """An item's JSON shows `"editedArgs": null` when nobody edited it: an answer copying
    that shape approves (or rejects) the arguments as shown, rather than a 400 about null."""
    _, item = await large_transfer(world)
    no = {"approved": False, "editedArgs": None, "payload": {"reason": "Not now."}}
    assert Answer.read(no) == Answer.read({"approved": False, "payload": {"reason": "Not now."}})
    approve = Answer.read({"approved": True, "editedArgs": None})
    assert not approve.has_edited_args
    result = await world.desk.decide(item.decision_id, ADA, approve)
    assert (result.status, result.item.outcome) == ("decided", "approved")
    await world.desk.wait_idle()
    [run] = world.executions()
    assert run["args"] == {"recipient": "Ada", "amount": 5000}


async def test_finance_approves_and_the_transfer_runs_once(world: World) -> None:
    thread, item = await large_transfer(world)
    result = await world.desk.decide(item.decision_id, ADA, Answer.read({"approved": True}))
    assert (result.status, result.message) == ("decided", "Approved.")
    assert (result.item.status, result.item.outcome) == ("decided", "approved")
    assert (result.item.decided_by, result.item.decided_by_name) == ("ada@example.com", "Ada")
    await world.desk.wait_idle()

    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done" and view.summary.waiting_for == ""
    [run] = world.executions()
    assert run["toolName"] == "transfer" and run["args"] == {"recipient": "Ada", "amount": 5000}
    receipt = run["result"]["receipt"]
    assert texts(view)[-1] == f"Sent 5,000 to Ada. Receipt id: {receipt}."
    [decision] = world.records("decision")
    assert decision.actor == "ada@example.com"
    assert await world.desk.inbox(ADA) == ([], 0)

    error = await refused(world.desk, item, ADA, {"approved": True})
    assert (error.code, error.http_status) == ("already-decided", 409)
    assert error.message == "You already decided this (approved)."  # said to Ada herself
    assert error.details["decidedBy"] == "ada@example.com"
    error = await refused(world.desk, item, RITA, {"cancelled": True})
    assert (error.code, error.message) == ("already-decided", "Already decided by Ada (approved).")
    # Olive, whom the escalation would let in, is told it is closed (not to come back in 2 h);
    # Sam, whom nothing lets in, is refused as before, and not told how it ended.
    error = await refused(world.desk, item, OLIVE, {"approved": True})
    assert (error.code, error.message) == ("already-decided", "Already decided by Ada (approved).")
    error = await refused(world.desk, item, SAM, {"approved": True})
    assert error.code == "forbidden" and "Ada" not in error.message
    assert [r.actor for r in world.records("refusal")] == [SAM.email]
    await world.desk.wait_idle()
    assert len(world.executions()) == 1 and len(world.continuations) == 1


async def test_a_rejection_carries_its_reason_to_the_model(world: World) -> None:
    thread, item = await large_transfer(world)
    body = {"approved": False, "payload": {"reason": "Not in this quarter's budget"}}
    result = await world.desk.decide(item.decision_id, ADA, Answer.read(body))
    assert result.item.outcome == "rejected"
    await world.desk.wait_idle()

    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert texts(view)[-1] == (
        "Understood — transfer was not run. Reason: Not in this quarter's budget."
    )
    assert world.executions() == []


async def test_edited_arguments_run_as_edited(world: World) -> None:
    thread, item = await large_transfer(world)
    body = {"approved": True, "editedArgs": {"recipient": "Ada", "amount": 4000}}
    result = await world.desk.decide(item.decision_id, ADA, Answer.read(body))
    assert result.item.outcome == "edited"
    await world.desk.wait_idle()

    [run] = world.executions()
    assert run["args"] == {"recipient": "Ada", "amount": 4000}
    view = await world.desk.view(thread, RITA)
    assert texts(view)[-1].startswith("Sent 4,000 to Ada. Receipt id: rcpt-")
    # The decision keeps both: what the model proposed, and what ran instead.
    [decided] = view.decisions
    assert (decided.args, decided.edited_args) == (
        {"recipient": "Ada", "amount": 5000}, {"recipient": "Ada", "amount": 4000}
    )  # fmt: skip
    assert decided.to_json()["editedArgs"] == {"recipient": "Ada", "amount": 4000}
    assert item.edited_args is None and item.to_json()["editedArgs"] is None


#: Answers the item's schemas refuse, and the problem each gets (code, message, path).
INVALID: list[tuple[dict[str, Any], tuple[str, str, list[str]]]] = [
    (  # the transfer's reject branch has a schema: a reason is required
        {"approved": False},
        ("invalid-payload", 'A rejection of transfer needs a payload: {"approved": false, '
         '"payload": {"reason": …}}, as answerSchemas.rejectPayload of GET '
         '/api/conversations/{thread} describes.', []),
    ),
    (  # a payload written as null is none: the same hint, not "None is not of type…"
        {"approved": False, "payload": None},
        ("invalid-payload", 'A rejection of transfer needs a payload: {"approved": false, '
         '"payload": {"reason": …}}, as answerSchemas.rejectPayload of GET '
         '/api/conversations/{thread} describes.', []),
    ),
    (
        {"approved": False, "payload": {"reason": ""}},
        ("invalid-payload", "'' should be non-empty", ["reason"]),
    ),
    (
        {"approved": True, "editedArgs": {"recipient": "Ada", "amount": -5}},
        ("invalid-edited-args", "-5 is less than or equal to the minimum of 0", ["amount"]),
    ),
    (
        {"approved": True, "editedArgs": {"recipient": "Ada"}},
        ("invalid-edited-args", "'amount' is a required property", ["amount"]),
    ),
]


async def test_an_invalid_answer_is_refused_and_nothing_is_stored(world: World) -> None:
    _, item = await large_transfer(world)
    for body, (code, said, path) in INVALID:
        message = said.replace("{thread}", item.thread_id)
        error = await refused(world.desk, item, ADA, body)
        assert (error.code, error.http_status, error.message) == ("invalid", 400, message)
        assert error.details["errors"] == [{"code": code, "message": message, "path": path}]
    error = await refused(world.desk, item, ADA, {"value": {"a": 1}})
    assert (error.code, error.http_status, error.message) == (
        "invalid", 400,
        'This is a tool approval: give {"approved": true|false}, or {"cancelled": true}.',
    )  # fmt: skip
    # Every problem at once, one of the whole object's (a field it does not have) too.
    body = {"approved": True, "editedArgs": {"recipient": "Ada", "amount": "x", "extra": 1}}
    error = await refused(world.desk, item, ADA, body)
    assert sorted((e["path"], e["code"]) for e in error.details["errors"]) == [
        ([], "invalid-edited-args"), (["amount"], "invalid-edited-args")
    ]  # fmt: skip
    assert error.message.endswith(" (1 more problem: see errors)")
    await assert_still_pending(world, item)
    # And a valid answer is taken afterwards.
    body = {"approved": False, "payload": {"reason": "Wrong account"}}
    assert (await world.desk.decide(item.decision_id, ADA, Answer.read(body))).status == "decided"


def test_a_payloads_field_beside_approved_is_told_where_it_goes() -> None:
    """The usual slip, a reason next to `approved`: the refusal shows the body as it
    should be, without echoing what was sent."""
    with pytest.raises(DeskError) as caught:
        Answer.read({"approved": False, "reason": "Not this quarter", "note": 1})
    assert caught.value.message == (
        "Unknown field(s): note, reason. What a tool asks with a decision goes in \"payload\" "
        '({"approved": false, "payload": {"note": …, "reason": …}}), where the '
        "conversation's answerSchemas say it takes one."
    )


@pytest.mark.parametrize(
    "body",
    [[], {"approved": "yes"}, {"cancelled": True, "approved": True}, {"approved": True, "x": 1}],
    ids=["not-an-object", "not-a-boolean", "cancel-and-more", "unknown-field"],
)
def test_a_body_that_is_no_answer(body: Any) -> None:
    with pytest.raises(DeskError) as caught:
        Answer.read(body)
    assert caught.value.code == "invalid"


async def test_an_expired_decision_is_refused_and_nothing_is_stored(world: World) -> None:
    _, item = await large_transfer(world)
    assert item.expires_at is not None
    later = item.expires_at + timedelta(seconds=1)
    desk = world.new_desk(worker="worker-later", clock=lambda: later)
    error = await refused(desk, item, ADA, {"approved": True})
    assert (error.code, error.http_status) == ("expired", 410)
    assert error.message.startswith("Expired at ")
    await assert_still_pending(world, item)
    # Just before it expires, it is still Ada's to decide.
    before = item.expires_at - timedelta(seconds=1)
    desk = world.new_desk(worker="worker-before", clock=lambda: before)
    result = await desk.decide(item.decision_id, ADA, Answer("approve"))
    assert result.status == "decided"


@pytest.mark.parametrize("deciders", [2, 20])
async def test_of_concurrent_deciders_exactly_one_decides(world: World, deciders: int) -> None:
    """Ada clicks Approve on several pages (two workers) at once: one decision, one run."""
    thread, item = await large_transfer(world)
    other = world.new_desk(worker="worker-2")
    desks = [world.desk, other]
    results = await asyncio.gather(
        *(desks[n % 2].decide(item.decision_id, ADA, Answer("approve")) for n in range(deciders)),
        return_exceptions=True,
    )
    decided = [r for r in results if isinstance(r, DecideResult)]
    refusals = [r for r in results if isinstance(r, DeskError)]
    assert len(decided) == 1 and len(refusals) == deciders - 1, results
    assert {error.code for error in refusals} == {"already-decided"}
    for desk in desks:
        await desk.wait_idle()

    assert len(world.executions("transfer")) == 1
    assert len(world.records("decision")) == 1
    assert len(world.continuations) == 1
    assert (await world.desk.view(thread, RITA)).summary.status == "done"


async def test_a_decision_without_a_rule_is_the_requesters(world: World) -> None:
    thread = await world.start(RITA, "delete project apollo")
    item = await world.only_item(RITA)
    error = await refused(world.desk, item, ADA, {"approved": True})
    assert error.code == "forbidden" and "Rita" in error.message
    result = await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    assert result.status == "decided"
    await world.desk.wait_idle()
    view = await world.desk.view(thread, RITA)
    assert texts(view)[-1] == "Project apollo is deleted."
    assert [run["toolName"] for run in world.executions()] == ["delete_project"]


async def test_a_question_is_answered_from_the_inbox(world: World) -> None:
    """A generic interrupt (the shipping speed) is the requester's; its answer is checked
    against the question's schema, then the order ships with it."""
    thread = await world.start(RITA, "ship order 42")
    item = await world.only_item(RITA)
    assert (item.kind, item.name) == ("question", "How should order 42 ship?")
    with pytest.raises(DeskError) as invalid:
        body = {"value": {"speed": "teleport", "giftWrap": False}}
        await world.desk.decide(item.decision_id, RITA, Answer.read(body))
    assert invalid.value.code == "invalid" and "teleport" in invalid.value.message
    # Two fields wrong: both told at once (the first in the message too).
    with pytest.raises(DeskError) as both:
        body = {"value": {"speed": "teleport", "giftWrap": "yes"}}
        await world.desk.decide(item.decision_id, RITA, Answer.read(body))
    errors = both.value.details["errors"]
    assert sorted((e["path"], e["code"]) for e in errors) == [
        (["giftWrap"], "invalid-payload"), (["speed"], "invalid-payload")
    ]  # fmt: skip
    assert "'yes' is not of type 'boolean'" in [e["message"] for e in errors]
    assert both.value.message.startswith(errors[0]["message"])
    assert both.value.message.endswith(" (1 more problem: see errors)")
    # Someone it is not for is refused as such first (the item's kind is not theirs to learn).
    with pytest.raises(DeskError) as stranger:
        await world.desk.decide(item.decision_id, SAM, Answer.read({"approved": True}))
    assert stranger.value.code == "forbidden"
    for wrong in ({"approved": True}, {"approved": False, "payload": {"reason": "no"}}):
        with pytest.raises(DeskError) as invalid:
            await world.desk.decide(item.decision_id, RITA, Answer.read(wrong))
        assert (invalid.value.code, invalid.value.http_status, invalid.value.message) == (
            "invalid", 400,
            'This is a question: answer it with {"value": …}, or {"cancelled": true}.',
        )  # fmt: skip
    body = {"value": {"speed": "express", "giftWrap": True}}
    result = await world.desk.decide(item.decision_id, RITA, Answer.read(body))
    assert result.item.outcome == "answered"
    await world.desk.wait_idle()

    [run] = world.executions()
    assert run["args"] == {"order": "42", "speed": "express", "giftWrap": True}
    view = await world.desk.view(thread, RITA)
    assert texts(view)[-1] == (
        f"Order 42 ships express, gift-wrapped. Tracking number: {run['result']['tracking']}."
    )


async def test_a_question_answered_by_someone_else_stays_in_the_conversation(
    world: World,
) -> None:
    """Sam answers Rita's question from his inbox: her conversation keeps the question and
    the answer where it was asked, and says Sam answered it."""
    world.use_policy(
        '[roles]\nops = ["sam@example.com"]\n\n'
        '[[rules]]\nname = "shipping-by-ops"\ninterrupt = "shipping-speed"\n'
        'approvers = ["role:ops"]\n'
    )
    thread = await world.start(RITA, "ship order 42")
    item = await world.only_item(SAM)
    body = {"value": {"speed": "overnight", "giftWrap": False}}
    await world.desk.decide(item.decision_id, SAM, Answer.read(body))
    await world.desk.wait_idle()

    view = await world.desk.view(thread, RITA)
    [kept] = state_of(view).answered
    assert (kept.item.id, kept.item.message) == (item.item_id, "How should order 42 ship?")
    assert kept.resolution["payload"] == {"speed": "overnight", "giftWrap": False}
    decided = answered_by(view.decisions, RITA.email)
    rows = build_views(state_of(view), {}, decided_by=decided).messages
    question = next(row for row in rows if row.role == "question")
    assert (question.answer, question.note) == (
        ["Shipping speed: overnight", "Gift wrap: no"], "Answered by Sam",
    )  # fmt: skip
    assert rows.index(question) == 1  # after "ship order 42", before the reply


async def test_each_decision_refusal_approval_and_expiry_is_a_log_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """For an operator's alerts: who decided what, who was refused, what expired, each one
    line with its fields (`CHAT_APP_LOG_FORMAT=json` writes them as keys)."""
    caplog.set_level("INFO", logger="chat_app.desk")
    _, transfer = await large_transfer(world)
    await refused(world.desk, transfer, SAM, {"approved": True})
    await world.desk.decide(transfer.decision_id, ADA, Answer("approve"))
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)
    await world.desk.decide(rotation.decision_id, SAM, Answer("approve"))
    assert await world.desk.expire(await world.only_item(OLIVE))
    await world.desk.wait_idle()

    lines = [
        (r.levelname, getattr(r, "decision", None), getattr(r, "outcome", None),
         getattr(r, "by", None))
        for r in caplog.records if r.name == "chat_app.desk.desk" and hasattr(r, "decision")
    ]  # fmt: skip
    assert lines == [
        ("WARNING", transfer.decision_id, "refused", SAM.email),
        ("INFO", transfer.decision_id, "approved", ADA.email),
        ("INFO", rotation.decision_id, "approval", SAM.email),
        ("INFO", rotation.decision_id, "expired", None),
    ]
    said = [r.getMessage() for r in caplog.records if r.name == "chat_app.desk.desk"]
    assert f"Decision {rotation.decision_id} approved by sam@example.com (demo), 1 of 2" in said[2]


async def test_a_run_that_carried_a_rejection_is_no_execution_in_the_trace(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[tuple[str, str]] = []
    monkeypatch.setattr(
        desk_module, "decision_span", lambda decision, name, **_: steps.append((decision, name))
    )
    _, rejected = await large_transfer(world)
    no = Answer("reject", payload={"reason": "Not this quarter."}, has_payload=True)
    await world.desk.decide(rejected.decision_id, ADA, no)
    await world.desk.wait_idle()
    await world.start(RITA, "transfer 6000 to Ada")
    approved = next(item for item in (await world.desk.inbox(ADA))[0])
    await world.desk.decide(approved.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()
    assert [name for id_, name in steps if id_ == rejected.decision_id] == [
        "paused", "decided", "continued"
    ]
    assert [name for id_, name in steps if id_ == approved.decision_id] == [
        "paused", "decided", "executed"
    ]


async def test_a_refusal_a_quorums_approval_and_a_rules_own_decision_are_traced(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[tuple[str, str]] = []
    closed: list[tuple[str, str]] = []
    monkeypatch.setattr(
        desk_module, "decision_span", lambda decision, name, **_: steps.append((decision, name))
    )
    monkeypatch.setattr(
        desk_module, "close_decision",
        lambda decision, *, attributes, **_: closed.append(
            (decision, str(attributes["decision.outcome"]))
        ),
    )  # fmt: skip
    _, transfer = await large_transfer(world)
    await refused(world.desk, transfer, SAM, {"approved": True})
    await world.start(RITA, "rotate production keys")
    rotation = await world.only_item(SAM)
    await world.desk.decide(rotation.decision_id, SAM, Answer("approve"))
    refund = await world.start(RITA, "refund 20 to order 42")  # the policy approves it alone
    await world.desk.wait_idle()

    assert [name for id_, name in steps if id_ == transfer.decision_id] == ["paused", "forbidden"]
    assert [name for id_, name in steps if id_ == rotation.decision_id] == ["paused", "approved"]
    [auto] = [id_ for id_, name in steps if name == "decided"]
    assert closed == [(auto, "auto")]  # the rule's is over; the others are still open
    assert [item.outcome for item in await world.desk.decisions_of(refund)] == ["auto"]
    assert [item.decision_id for item in await world.desk.decisions_of(refund)] == [auto]
