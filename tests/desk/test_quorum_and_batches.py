"""A quorum (`key-rotation`: two of ops, not the requester) collected one approval per person,
and a batch (`pay invoices`: three approvals) sent as one continuation once all are decided."""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from chat_app.client import ClientState
from chat_app.demo import POLICY_PATH
from chat_app.desk import Answer, DeskError, DeskStore, InboxItem, Vote
from chat_app.trust import Policy
from chat_app.ui.answered import edits, given_at_desk
from chat_app.ui.views import build_views
from tests.desk.world import ADA, OLIVE, RITA, SAM, THEO, World, texts


async def rotation(world: World) -> tuple[str, InboxItem]:
    thread = await world.start(RITA, "rotate production keys")
    return thread, await world.only_item(SAM)


async def test_two_of_ops_approve_and_the_keys_rotate_once(world: World) -> None:
    thread, item = await rotation(world)

    first = await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert first.status == "waiting"
    assert first.item.progress == "1 of 2: Sam approved"
    assert first.message == "Approved: 1 of 2: Sam approved."
    assert [vote.email for vote in first.item.approvals] == ["sam@example.com"]
    # In the trail at once, though it decided nothing yet: who approved, as verified.
    [approval] = world.records("approval")
    assert approval.actor == "sam@example.com"
    assert approval.data["progress"] == "1 of 2: Sam approved"
    assert (approval.data["toolName"], approval.data["rule"]) == ("rotate_keys", "key-rotation")
    assert (approval.data["decisionId"], approval.data["verifiedBy"]) == (
        item.decision_id, SAM.method)
    await world.desk.wait_idle()
    assert (await world.desk.view(thread, RITA)).summary.status == "waiting"
    assert world.continuations == [] and world.executions() == []
    # Olive finds it with Sam's approval counted.
    assert (await world.only_item(OLIVE)).progress == "1 of 2: Sam approved"

    with pytest.raises(DeskError) as again:
        await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert again.value.code == "already-decided"
    assert again.value.message.startswith("You already approved this (1 of 2: Sam approved)")
    assert len(_votes(world, item.decision_id)) == 1

    with pytest.raises(DeskError) as requester:
        await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    assert requester.value.code == "forbidden"
    with pytest.raises(DeskError) as finance:
        await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert finance.value.code == "forbidden"

    second = await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    assert second.status == "decided"
    assert (second.item.decided_by, second.item.outcome) == ("olive@example.com", "approved")
    await world.desk.wait_idle()

    [run] = world.executions()
    assert run["toolName"] == "rotate_keys"
    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert (
        texts(view)[-1] == f"Rotated the production keys; the new key is {run['result']['keyId']}."
    )
    # The engine checked the quorum itself: Olive decided, with Sam as cosigner.
    [decision] = world.records("decision")
    assert decision.actor == "olive@example.com"
    assert [c["actor"] for c in decision.data["cosigners"]] == ["sam@example.com"]
    assert len(world.records("approval")) == 1  # the approval that completed it decided
    assert await world.desk.inbox(SAM) == ([], 0)


async def test_keys_one_of_ops_asks_to_rotate_are_rotated_by_the_other_two(world: World) -> None:
    """The demo has three of ops, so Sam's own request can be met without him."""
    thread = await world.start(SAM, "rotate production keys")
    item = await world.only_item(OLIVE)
    assert [i.decision_id for i in (await world.desk.inbox(THEO))[0]] == [item.decision_id]
    assert await world.desk.inbox(SAM) == ([], 0)
    with pytest.raises(DeskError) as own:
        await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert own.value.code == "forbidden"
    assert (await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))).status == (
        "waiting"
    )
    done = await world.desk.decide(item.decision_id, THEO, Answer("approve"))
    assert done.status == "decided" and list(done.item.deciders) == [
        "olive@example.com", "theo@example.com"]  # fmt: skip
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
    assert (await world.desk.view(thread, SAM)).summary.status == "done"


async def test_two_approvals_completing_the_quorum_at_once_are_both_told_it_is_decided(
    world: World,
) -> None:
    """Sam and Olive approve at the same moment (on two workers): each stores an approval,
    each sees two, each decides. Olive's is stored as deciding; Sam, whose approval is counted
    in it, is told it is decided, not that someone else decided it."""
    thread, item = await rotation(world)
    store, real_decide = world.desk.store, world.desk.store.decide
    assert store.vote(item.decision_id, email=OLIVE.email, name=OLIVE.name,
                      verified_by=OLIVE.method, token_name="", roles=sorted(OLIVE.roles),
                      approved=True, answer={}, now=world.desk.clock())  # fmt: skip

    def olive_decides_first(decision_id: str, **given: Any) -> bool:
        assert real_decide(decision_id, **{**given, "email": OLIVE.email, "name": OLIVE.name})
        return real_decide(decision_id, **given)

    store.decide = olive_decides_first  # type: ignore[method-assign]
    try:
        result = await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    finally:
        store.decide = real_decide  # type: ignore[method-assign]
    assert (result.status, result.message) == ("decided", "Approved.")
    assert (result.item.decided_by, result.item.outcome) == ("olive@example.com", "approved")
    assert {vote.email for vote in result.item.approvals} == {SAM.email, OLIVE.email}
    # A rejection given at that moment is still told someone else decided first.
    with pytest.raises(DeskError) as late:
        await world.desk.decide(item.decision_id, SAM, Answer("reject"))
    assert late.value.code == "already-decided"
    # Olive's worker carries it (here nobody does): nothing ran for Sam's call.
    await world.desk.wait_idle()
    assert world.executions("rotate_keys") == []
    assert (await world.desk.view(thread, RITA)).summary.status == "waiting"


async def test_an_approval_the_rule_in_force_no_longer_allows_does_not_count(
    world: World,
) -> None:
    """Sam approved as one of ops; the app came back with key rotation for finance and admin.
    His approval stays on record but counts for nothing (the engine would refuse him as a
    cosigner, and with him the whole answer): Olive's is the first of two, Ada's decides."""
    thread, item = await rotation(world)
    assert (await world.desk.decide(item.decision_id, SAM, Answer("approve"))).status == "waiting"
    text = POLICY_PATH.read_text().replace(
        'approvers = ["role:ops"]', 'approvers = ["role:finance", "role:admin"]'
    )
    assert text != POLICY_PATH.read_text()
    world.desk.policy = world.agent.policy = Policy.parse(text, "policy.toml")

    second = await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    assert second.status == "waiting", second.item.to_json()
    assert second.item.progress == "1 of 2: Olive approved"
    assert [vote.email for vote in second.item.approvals] == ["olive@example.com"]
    await world.desk.wait_idle()
    assert (await world.desk.view(thread, RITA)).summary.status == "waiting"
    assert world.continuations == [] and world.executions() == []
    shown = await world.desk.decision(item.decision_id)
    assert shown is not None and shown.progress == "1 of 2: Olive approved"
    assert await world.desk.inbox(SAM) == ([], 0)
    assert len(_votes(world, item.decision_id)) == 2  # Sam's vote is still on record

    third = await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert third.status == "decided"
    assert (third.item.decided_by, third.item.outcome) == ("ada@example.com", "approved")
    await world.desk.wait_idle()

    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
    view = await world.desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("done", None)
    [decision] = world.records("decision")
    assert decision.actor == "ada@example.com"
    assert [c["actor"] for c in decision.data["cosigners"]] == ["olive@example.com"]
    assert len(_votes(world, item.decision_id)) == 3
    # Settled, it names who decided it as the trail does, even once the policy allows Sam again.
    assert list(third.item.deciders) == ["olive@example.com", "ada@example.com"]
    world.desk.policy = world.agent.policy = Policy.parse(POLICY_PATH.read_text(), "policy.toml")
    settled = await world.desk.decision(item.decision_id)
    assert settled is not None and list(settled.deciders) == list(third.item.deciders)
    assert [vote.email for vote in settled.votes if not vote.counts] == ["sam@example.com"]


async def test_a_quorum_raised_while_waiting_needs_the_new_count(world: World) -> None:
    """The app came back with key rotation needing three of ops and finance: two approvals
    (one given before, one after) leave it waiting, "2 of 3", and the third decides it."""
    thread, item = await rotation(world)
    assert (await world.desk.decide(item.decision_id, SAM, Answer("approve"))).status == "waiting"
    text = POLICY_PATH.read_text().replace(
        'approvers = ["role:ops"]', 'approvers = ["role:ops", "role:finance"]'
    )
    raised = re.sub(r'(?ms)(name = "key-rotation".*?)^quorum = 2\b', r"\1quorum = 3", text)
    assert raised != text
    world.desk.policy = world.agent.policy = Policy.parse(raised, "policy.toml")

    second = await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))
    assert second.status == "waiting", second.item.to_json()
    assert second.item.progress.startswith("2 of 3")
    await world.desk.wait_idle()
    assert world.continuations == [] and world.executions() == []

    third = await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert third.status == "decided"
    await world.desk.wait_idle()
    assert [run["toolName"] for run in world.executions()] == ["rotate_keys"]
    assert (await world.desk.view(thread, RITA)).summary.status == "done"


@pytest.mark.parametrize("approved_first", [False, True], ids=["alone", "after-an-approval"])
async def test_any_rejection_decides_alone(world: World, approved_first: bool) -> None:
    thread, item = await rotation(world)
    if approved_first:
        waiting = await world.desk.decide(item.decision_id, SAM, Answer("approve"))
        assert waiting.status == "waiting"

    result = await world.desk.decide(item.decision_id, OLIVE, Answer("reject"))
    assert result.status == "decided"
    assert (result.item.decided_by, result.item.outcome) == ("olive@example.com", "rejected")
    await world.desk.wait_idle()

    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert texts(view)[-1] == "Understood — rotate keys was not run; no reason was given."
    assert world.executions() == []
    # Sam's approval, rejected after, stays in the trail as what he did.
    assert [r.actor for r in world.records("approval")] == ["sam@example.com"] * approved_first
    with pytest.raises(DeskError) as late:
        await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    assert late.value.code == "already-decided"


async def test_an_approver_who_then_rejects_acted_when_they_rejected(world: World) -> None:
    """Sam approves, then rejects (any rejection decides): his history lists it rejected, at
    the rejection, not at the approval it followed."""
    _, item = await rotation(world)
    await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    await world.desk.decide(item.decision_id, SAM, Answer("reject"))
    settled = await world.desk.decision(item.decision_id)
    assert settled is not None
    [approval] = settled.votes  # his approval, on record
    [past] = await world.desk.decided(SAM)
    assert past.item.outcome == "rejected"
    assert past.acted_at > approval.at


async def test_edited_arguments_do_not_count_towards_a_quorum(world: World) -> None:
    """Each approval of a quorum is of the arguments as shown: an edit is refused before
    anything is stored (the engine would refuse the continuation, and the conversation would
    wait for approvals already given)."""
    thread, item = await rotation(world)
    edited = Answer.read({"approved": True, "editedArgs": {"environment": "staging"}})
    for person in (SAM, OLIVE):
        with pytest.raises(DeskError) as refused:
            await world.desk.decide(item.decision_id, person, edited)
        assert refused.value.code == "invalid" and "key-rotation" in refused.value.message
    # Arguments the tool would refuse get the same answer: no edit counts, whatever it is.
    with pytest.raises(DeskError) as invalid_edit:
        await world.desk.decide(
            item.decision_id, SAM, Answer.read({"approved": True, "editedArgs": {}})
        )
    assert invalid_edit.value.message == refused.value.message
    assert _votes(world, item.decision_id) == ()

    assert (await world.desk.decide(item.decision_id, SAM, Answer("approve"))).status == "waiting"
    with pytest.raises(DeskError) as refused:
        await world.desk.decide(item.decision_id, OLIVE, edited)
    assert refused.value.code == "invalid"
    assert (await world.only_item(OLIVE)).progress == "1 of 2: Sam approved"

    assert (await world.desk.decide(item.decision_id, OLIVE, Answer("approve"))).status == "decided"
    await world.desk.wait_idle()
    [run] = world.executions()
    assert run["args"] == {"environment": "production"}
    assert (await world.desk.view(thread, RITA)).summary.status == "done"


async def test_two_last_approvals_at_once_rotate_the_keys_once(world: World) -> None:
    """Sam has approved; Olive approves on two pages (two workers) at once."""
    thread, item = await rotation(world)
    await world.desk.decide(item.decision_id, SAM, Answer("approve"))
    other = world.new_desk(worker="worker-2")
    results = await asyncio.gather(
        world.desk.decide(item.decision_id, OLIVE, Answer("approve")),
        other.decide(item.decision_id, OLIVE, Answer("approve")),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["DecideResult", "DeskError"], results
    for desk in (world.desk, other):
        await desk.wait_idle()
    assert len(world.executions("rotate_keys")) == 1
    assert (await world.desk.view(thread, RITA)).summary.status == "done"


async def invoices(world: World) -> tuple[str, list[InboxItem]]:
    thread = await world.start(RITA, "pay invoices")
    items, total = await world.desk.inbox(RITA)
    assert total == 3 and {item.name for item in items} == {"pay_invoice"}
    assert {item.rule for item in items} == {None}
    return thread, sorted(items, key=lambda item: item.args["invoice"])


async def test_the_inbox_lists_each_batch_as_the_agent_asked_it(world: World) -> None:
    """A batch's decisions share their time: newest batch first, each in the agent's order,
    from a person's route (Rita's own) and from every decision (an admin's)."""
    first = await world.start(RITA, "pay invoices")
    second = await world.start(RITA, "pay invoices")
    asked = ["INV-1001", "INV-1002", "INV-1003"]
    for viewer in (RITA, OLIVE):
        items, total = await world.desk.inbox(viewer, everyone=True)
        assert total == 6
        assert [(item.thread_id, item.args["invoice"]) for item in items] == [
            *((second, invoice) for invoice in asked), *((first, invoice) for invoice in asked)
        ]  # fmt: skip


async def test_a_batch_runs_once_every_item_is_decided(world: World) -> None:
    thread, items = await invoices(world)
    assert [item.args["invoice"] for item in items] == ["INV-1001", "INV-1002", "INV-1003"]

    edited = {**items[0].args, "amount": items[0].args["amount"] - 1}
    first = await world.desk.decide(
        items[0].decision_id, RITA, Answer.read({"approved": True, "editedArgs": edited})
    )
    body = {"approved": False}
    second = await world.desk.decide(items[1].decision_id, RITA, Answer.read(body))
    assert (first.status, second.status) == ("decided", "decided")
    # Said to whoever answered, and put in the trail: the decision records come with the batch.
    assert second.message == (
        "Rejected. The answer goes to the agent with the rest of its batch, once they are "
        "decided."
    )
    assert first.message.startswith("Approved with changes. The answer goes to the agent")
    held = world.records("held")
    assert [(r.actor, r.data["interruptId"], r.data["outcome"]) for r in held] == [
        (RITA.email, items[0].item_id, "edited"), (RITA.email, items[1].item_id, "rejected"),
    ]  # fmt: skip
    await world.desk.wait_idle()
    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "waiting"
    assert world.continuations == [] and world.executions() == []
    assert [item.decision_id for item in (await world.desk.inbox(RITA))[0]] == [
        items[2].decision_id
    ]
    # Every page shows the two decided as decided, with nothing left to click on them, and
    # one decision still needed.
    for viewer in (RITA, ADA):
        shown = build_views(ClientState.from_json(view.state), {},
                            at_desk=given_at_desk(view.decisions, viewer.email),
                            changes=edits(view.decisions))  # fmt: skip
        cards = {t.decision.id: t for m in shown.messages for t in m.tools if t.has_decision}
        assert shown.open_count == 1
        decided = [cards[item.item_id] for item in items[:2]]
        assert [(c.status_label, c.decision.held_only) for c in decided] == [("Decided", True)] * 2
        who = "you" if viewer is RITA else "Rita"
        assert decided[0].decision.held == (
            f"Approved with changes by {who}; the desk sends this answer with the rest of the "
            "batch."
        )
        # What the approval changes, beside the arguments proposed, as once it has run.
        amount = items[0].args["amount"]
        assert decided[0].changes == [f"amount: {amount} → {amount - 1}"]
        assert decided[1].changes == []
        assert (cards[items[2].item_id].status_label, cards[items[2].item_id].decision.held) == (
            "Awaiting approval", ""
        )

    last = await world.desk.decide(items[2].decision_id, RITA, Answer("approve"))
    assert last.message == "Approved."  # the batch goes: nothing is held
    await world.desk.wait_idle()
    assert len(world.records("held")) == 2

    [continuation] = world.continuations
    assert continuation.resume is not None and len(continuation.resume) == 3
    ran = sorted((run["args"]["invoice"], run["args"]["amount"]) for run in world.executions())
    assert ran == [("INV-1001", edited["amount"]), ("INV-1003", items[2].args["amount"])]
    view = await world.desk.view(thread, RITA)
    assert view.summary.status == "done"
    assert len(world.records("decision")) == 3
    assert await world.desk.inbox(RITA) == ([], 0)
    # Its conversation's summary holds the whole pause, not the latest decision alone.
    [listed] = [c for c in await world.desk.conversations(RITA) if c.thread_id == thread]
    assert listed.last_decision is not None and listed.last_decision in listed.last_pause
    assert sorted((item.args["invoice"], item.outcome) for item in listed.last_pause) == [
        ("INV-1001", "edited"), ("INV-1002", "rejected"), ("INV-1003", "approved")]  # fmt: skip


@pytest.mark.parametrize("workers", [1, 2])
async def test_the_last_two_of_a_batch_decided_at_once_send_one_continuation(
    world: World, workers: int
) -> None:
    thread, items = await invoices(world)
    await world.desk.decide(items[0].decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    desks = [world.desk, world.new_desk(worker="worker-2") if workers == 2 else world.desk]
    results = await asyncio.gather(
        desks[0].decide(items[1].decision_id, RITA, Answer("approve")),
        desks[1].decide(items[2].decision_id, RITA, Answer("approve")),
    )
    assert [result.status for result in results] == ["decided", "decided"]
    for desk in desks:
        await desk.wait_idle()

    assert len(world.continuations) == 1, [run.resume for run in world.continuations]
    assert len(world.executions("pay_invoice")) == 3
    view = await world.desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("done", None)
    assert texts(view)[-1].startswith("Paid INV-1001")


class SlowClaim(DeskStore):
    """A worker that is slow to take a conversation's lease, once: its next `claim` waits
    (in the desk's database thread) until the test lets it go on."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.reached = threading.Event()
        self.go = threading.Event()
        self._armed = True
        self._lock = threading.Lock()

    def claim(self, thread_id: str, runner: str, *, now: datetime, until: datetime) -> bool:
        with self._lock:
            armed, self._armed = self._armed, False
        if armed:
            self.reached.set()
            assert self.go.wait(30), "the test never let the claim go on"
        return super().claim(thread_id, runner, now=now, until=until)


async def decided_meanwhile(world: World) -> str:
    """Every invoice decided while another worker holds the conversation's lease (so no
    continuation starts); then that worker lets go. Returns the thread id."""
    thread, items = await invoices(world)
    now = datetime.now(UTC)
    assert world.store.claim(thread, "worker-busy", now=now, until=now + timedelta(minutes=5))
    for item in items:
        await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    assert world.continuations == [] and len(world.store.answers_to_apply(thread)) == 3
    world.store.release(thread, "worker-busy")
    return thread


@pytest.mark.parametrize("same_worker", [True, False], ids=["one-worker", "two-workers"])
async def test_a_slow_worker_does_not_carry_answers_another_carried(
    world: World, same_worker: bool
) -> None:
    """Two looks for decided answers (`recover`, as `keep_recovering` makes) find the same
    batch; the first is slow to take the lease, and the second carries the batch meanwhile.
    The slow one must not send it again once it has the lease (nor store what that did)."""
    thread = await decided_meanwhile(world)
    slow_store = SlowClaim(world.engine)
    slow = world.new_desk(worker="worker-1" if same_worker else "worker-slow", store=slow_store)
    fast = slow if same_worker else world.desk

    await slow.recover()  # finds the batch, and waits to take the lease
    await asyncio.to_thread(slow_store.reached.wait, 30)
    await fast.recover()
    if not same_worker:
        await fast.wait_idle()  # the other worker carries the batch
    slow_store.go.set()
    for desk in (slow, world.desk):
        await desk.wait_idle()

    assert len(world.continuations) == 1, [run.resume for run in world.continuations]
    assert len(world.executions("pay_invoice")) == 3
    view = await world.desk.view(thread, RITA)
    assert (view.summary.status, view.summary.error) == ("done", None)
    assert texts(view)[-1].startswith("Paid INV-1001")
    assert world.store.answers_to_apply(thread) == []


def _votes(world: World, decision_id: str) -> tuple[Vote, ...]:
    """Every vote stored for the decision, counting or not."""
    found = world.store.decision(decision_id)
    assert found is not None
    return found.votes
