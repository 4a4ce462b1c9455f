"""Stored conversations and the inbox: who finds what, and who may look at what. The demo
policy: `large-transfers` (over 1000) needs `finance` (Ada), never the requester;
`key-rotation` needs two of `ops` (Sam, Olive); anything else is decided by whoever asked."""

from __future__ import annotations

import logging

import pytest

from chat_app.client import ToolCallPart
from chat_app.desk import Answer, DeskError
from tests.desk.world import ADA, OLIVE, RITA, SAM, World, state_of, texts


async def test_a_started_conversation_is_stored_and_listed_for_its_owner(world: World) -> None:
    large = await world.start(RITA, "transfer 5000 to Ada")
    apollo = await world.start(RITA, "  delete project apollo ")
    small = await world.start(RITA, "transfer 25 to Ada")
    own = await world.start(ADA, "transfer 25 to Rita")

    listed = await world.desk.conversations(RITA)
    assert [c.thread_id for c in listed] == [small, apollo, large]  # newest first
    by_id = {c.thread_id: c for c in listed}
    assert by_id[large].title == "transfer 5000 to Ada"
    assert by_id[large].status == "waiting"
    assert by_id[large].waiting_for == "Waiting for finance"
    assert by_id[apollo].title == "delete project apollo"
    assert by_id[apollo].waiting_for == "Waiting for Rita"
    assert {(c.owner_email, c.owner_name) for c in listed} == {("rita@example.com", "Rita")}
    assert [c.thread_id for c in await world.desk.conversations(ADA)] == [own]
    assert await world.desk.conversations(SAM) == []
    with pytest.raises(DeskError) as empty:
        await world.desk.start(SAM, "   ")
    assert empty.value.code == "invalid"
    assert await world.desk.conversations(SAM) == []

    assert by_id[large].last_decision is None  # nothing settled yet

    view = await world.desk.view(large, RITA)
    assert texts(view) == ["transfer 5000 to Ada", "I'll send 5,000 to Ada once it is approved."]
    [item] = state_of(view).interrupts
    assert item.status == "pending"
    [decision] = view.decisions
    assert (decision.item_id, decision.status) == (item.id, "pending")


async def test_who_may_view_a_conversation(world: World) -> None:
    thread = await world.start(RITA, "transfer 5000 to Ada")

    own = await world.desk.view(thread, RITA)
    assert not own.read_only
    ada = await world.desk.view(thread, ADA)  # she may decide its item
    assert ada.read_only and ada.state == own.state
    olive = await world.desk.view(thread, OLIVE)  # an admin
    assert olive.read_only
    with pytest.raises(DeskError) as refused:
        await world.desk.view(thread, SAM)  # ops, nothing of his in it
    assert (refused.value.code, refused.value.http_status) == ("forbidden", 403)
    with pytest.raises(DeskError) as unknown:
        await world.desk.view("thread-nobody-started", RITA)
    assert (unknown.value.code, unknown.value.http_status) == ("unknown", 404)

    # Once Ada has decided, she still sees it (she decided in it); Sam still does not.
    item = await world.only_item(ADA)
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    await world.desk.wait_idle()
    assert (await world.desk.view(thread, ADA)).read_only
    with pytest.raises(DeskError) as still:
        await world.desk.view(thread, SAM)
    assert still.value.code == "forbidden"


async def test_the_inbox_routes_each_decision_to_who_may_make_it(world: World) -> None:
    large = await world.start(RITA, "transfer 5000 to Ada")
    small = await world.start(RITA, "transfer 25 to Ada")
    apollo = await world.start(RITA, "delete project apollo")
    adas_own = await world.start(ADA, "transfer 2000 to Sam")

    # Ada (finance) sees Rita's large transfer, not her own (never the requester's), nor
    # Rita's small one (no rule: Rita decides it).
    ada = await world.only_item(ADA)
    assert (ada.thread_id, ada.name, ada.rule) == (large, "transfer", "large-transfers")
    assert ada.summary == "recipient=Ada, amount=5000"
    assert ada.args == {"recipient": "Ada", "amount": 5000}
    assert (ada.requester_email, ada.requester_name) == ("rita@example.com", "Rita")
    assert ada.waiting_for == "Waiting for finance"
    assert ada.quorum == 1 and ada.progress == ""

    # Rita finds what only she decides, newest first; not the large transfer she asked for.
    rita, total = await world.desk.inbox(RITA)
    assert [item.thread_id for item in rita] == [apollo, small] and total == 2
    assert [item.name for item in rita] == ["delete_project", "transfer"]
    assert {item.waiting_for for item in rita} == {"Waiting for Rita"}

    assert await world.desk.inbox(SAM) == ([], 0)
    assert await world.desk.inbox(OLIVE) == ([], 0)  # ops and admin: nothing routed to her

    # An admin asking for everyone's sees every pending decision; anyone else, their own.
    everyone, total = await world.desk.inbox(OLIVE, everyone=True)
    assert {item.thread_id for item in everyone} == {large, small, apollo, adas_own}
    assert total == 4
    assert [item.thread_id for item in (await world.desk.inbox(ADA, everyone=True))[0]] == [large]
    assert await world.desk.inbox(SAM, everyone=True) == ([], 0)

    # Filters, and a total that counts past the page.
    tools, total = await world.desk.inbox(RITA, tool="transfer")
    assert [item.thread_id for item in tools] == [small] and total == 1
    assert [i.thread_id for i in (await world.desk.inbox(RITA, tool="delete_project"))[0]] == [
        apollo
    ]
    assert await world.desk.inbox(RITA, tool="rotate_keys") == ([], 0)
    asked, total = await world.desk.inbox(OLIVE, everyone=True, requester="Ada@Example.com")
    assert [item.thread_id for item in asked] == [adas_own] and total == 1
    ritas, total = await world.desk.inbox(OLIVE, everyone=True, requester="rita@example.com")
    assert {item.thread_id for item in ritas} == {large, small, apollo} and total == 3
    page, total = await world.desk.inbox(RITA, limit=1)
    assert [item.thread_id for item in page] == [apollo] and total == 2
    page, total = await world.desk.inbox(OLIVE, everyone=True, limit=2)
    assert len(page) == 2 and total == 4


async def test_a_quorum_decision_is_in_every_approvers_inbox(world: World) -> None:
    thread = await world.start(RITA, "rotate production keys")

    for person in (SAM, OLIVE):
        item = await world.only_item(person)
        assert (item.thread_id, item.name, item.rule) == (thread, "rotate_keys", "key-rotation")
        assert item.quorum == 2 and item.progress == "0 of 2"
    assert await world.desk.inbox(RITA) == ([], 0)
    assert await world.desk.inbox(ADA) == ([], 0)


async def test_an_approver_still_sees_how_a_request_of_theirs_ended(world: World) -> None:
    """Ada had Rita's transfer to decide; Rita withdrew it. Ada, looking at it, sees it
    withdrawn rather than losing it mid-look; Sam, who never had it, still does not."""
    thread = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    await world.desk.decide(item.decision_id, RITA, Answer.read({"cancelled": True}))
    await world.desk.wait_idle()
    closed = await world.desk.decision(item.decision_id)
    assert closed is not None and closed.status != "pending"
    assert (await world.desk.view(thread, ADA)).read_only
    with pytest.raises(DeskError):
        await world.desk.view(thread, SAM)


async def test_each_listed_conversation_says_how_its_latest_decision_ended(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chat_app.desk.desk")
    rejected = await world.start(RITA, "transfer 5000 to Ada")
    item = await world.only_item(ADA)
    no = Answer("reject", payload={"reason": "Not this quarter."}, has_payload=True)
    await world.desk.decide(item.decision_id, ADA, no)
    refunded = await world.start(RITA, "refund 20 to order 42")  # a rule decides it alone
    await world.desk.wait_idle()

    by_id = {c.thread_id: c for c in await world.desk.conversations(RITA)}
    last = by_id[rejected].last_decision
    assert last is not None and (last.name, last.outcome, last.decided_by) == (
        "transfer", "rejected", ADA.email
    )  # fmt: skip
    assert by_id[rejected].to_json()["lastDecision"] == {
        "name": "transfer", "outcome": "rejected", "decidedBy": ADA.email
    }  # fmt: skip
    auto = by_id[refunded].last_decision
    assert auto is not None and (auto.outcome, auto.rule) == ("auto", "small-refunds")
    assert auto.auto_approved is True  # the verdict is kept: "Approved by policy …"
    # The log has it, as it has a person's decision.
    [line] = [r.getMessage() for r in caplog.records if "by policy" in r.getMessage()]
    assert line.endswith(" approved by policy small-refunds: refund, asked by rita@example.com")
    # Each a pause of one decision.
    assert (by_id[rejected].last_pause, by_id[refunded].last_pause) == ((last,), (auto,))


async def test_the_last_pause_of_a_conversation_is_its_latest_only(world: World) -> None:
    """Three invoices paid in one pause, then a transfer asked and rejected in the same
    conversation: its last pause is the transfer's, not the invoices' with it."""
    thread = await world.start(RITA, "pay invoices")
    for item in (await world.desk.inbox(RITA))[0]:
        await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    [paid] = [c for c in await world.desk.conversations(RITA) if c.thread_id == thread]
    assert [(i.name, i.outcome) for i in paid.last_pause] == [("pay_invoice", "approved")] * 3

    await world.desk.post(thread, RITA, "transfer 5000 to Ada")
    await world.desk.wait_idle()
    item = await world.only_item(ADA)
    no = Answer("reject", payload={"reason": "Not this quarter."}, has_payload=True)
    await world.desk.decide(item.decision_id, ADA, no)
    await world.desk.wait_idle()
    [listed] = [c for c in await world.desk.conversations(RITA) if c.thread_id == thread]
    assert [(i.name, i.outcome) for i in listed.last_pause] == [("transfer", "rejected")]


async def test_a_summary_is_one_line_whatever_the_arguments_hold(world: World) -> None:
    """The demo's email has a body of several lines; the inbox's and the notices' summary
    of it runs on one."""
    thread = await world.start(RITA, "email ada@example.com about Launch")
    [item] = [item for item in (await world.desk.inbox(RITA))[0] if item.thread_id == thread]
    assert "\n" in item.args["body"]
    assert "\n" not in item.summary
    assert item.summary.startswith("to=ada@example.com, subject=Launch, body=Hi, A quick")


async def test_direction_overrides_in_a_summary_and_a_title_are_spelled_out(
    world: World,
) -> None:
    """An override makes text read as other text ("Eve\u202eadA" reads "EveAda"): the
    inbox's line, which its notices carry too, and the conversation's title show it as it
    is stored."""
    thread = await world.start(RITA, "email ada@example.com about Pay Eve\u202eadA")
    [item] = [item for item in (await world.desk.inbox(RITA))[0] if item.thread_id == thread]
    assert item.args["subject"] == "Pay Eve\u202eadA"  # what runs is what was asked
    assert "subject=Pay Eve[U+202E]adA" in item.summary
    [mine] = [c for c in await world.desk.conversations(RITA) if c.thread_id == thread]
    assert mine.title == "email ada@example.com about Pay Eve[U+202E]adA"


async def test_a_held_message_is_kept_for_its_owner_alone_until_forgotten(world: World) -> None:
    thread = await world.start(RITA, "transfer 5000 to Ada")
    version = await world.desk.version(thread)

    await world.desk.hold(thread, RITA, "and 10 to Sam")
    assert (await world.desk.view(thread, RITA)).held == "and 10 to Sam"
    # Ada may look (the transfer is hers to decide) but the message is Rita's to send.
    assert (await world.desk.view(thread, ADA)).held == ""
    # Nobody else keeps a message in it, and keeping one is no change of the conversation.
    await world.desk.hold(thread, ADA, "mine")
    assert (await world.desk.view(thread, RITA)).held == "and 10 to Sam"
    assert await world.desk.version(thread) == version

    await world.desk.hold(thread, RITA, "")
    assert (await world.desk.view(thread, RITA)).held == ""


async def test_a_tool_that_runs_in_the_browser_fails_saying_why_when_the_desk_runs_it(
    world: World,
) -> None:
    """A conversation the desk runs (through the API, or on after an Inbox decision) has no
    browser: a browser tool's call fails saying so, the model is told, and nothing waits."""
    why = "runs in the browser of whoever asked, and this conversation went on on the server"
    # Without approval: its output schema has no room for an error, so the call is
    # cancelled after its error is recorded.
    thread = await world.start(RITA, "what time is it")
    view = await world.desk.view(thread, RITA)
    state = state_of(view)
    assert view.summary.status == "done" and state.error is None
    [call] = [
        part for message in state.messages for part in message.parts
        if isinstance(part, ToolCallPart) and part.name == "get_local_time"
    ]  # fmt: skip
    assert call.status == "error" and why in (call.error or "")
    reply = state.messages[-1].text
    assert reply.startswith("I couldn't run get local time: get_local_time " + why)
    assert not state.messages[-1].text.endswith("..")
    # Approved on the desk by whoever asked: its error is its output.
    thread = await world.start(RITA, "share my location")
    item = await world.only_item(RITA)
    await world.desk.decide(item.decision_id, RITA, Answer("approve"))
    await world.desk.wait_idle()
    view = await world.desk.view(thread, RITA)
    state = state_of(view)
    assert view.summary.status == "done" and state.error is None
    assert state.messages[-1].text.startswith("I couldn't read your location: get_location " + why)
    assert (await world.desk.inbox(RITA))[1] == 0
