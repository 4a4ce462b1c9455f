"""What the page is given to show: the transcript split at the current turn, and the focus.

The chat page sends the transcript before the current turn again only when it changes, so
answering a decision must leave that part of the views equal, whatever the history holds.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from chat_app.agent import event_to_wire
from chat_app.client import (
    ChatClient,
    ChatMessage,
    ClientState,
    ClientTool,
    GenericInterrupt,
    InProcessConnection,
    TextPart,
    ToolApprovalInterrupt,
)
from chat_app.demo import build_demo_agent
from chat_app.desk import InboxItem, Vote
from chat_app.trust import RedisLedger, SQLiteLedger
from chat_app.ui.answered import (
    answered_by,
    arguments_changed,
    edits,
    given_at_desk,
    how_it_ended,
    staged_answer,
    submitted_edits,
)
from chat_app.ui.session import StateJson
from chat_app.ui.views import (
    ARCHIVE_BLOCK,
    FormMemory,
    MessageView,
    ViewCache,
    archive_blocks,
    build_views,
    decision_view,
    split_transcript,
    split_turn,
    streaming_preview,
)
from tests.live_server import free_port
from tests.redis_server import redis_server
from tests.ui.app_server import run_on_own_loop


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


def demo_client(*, questions: bool = False) -> ChatClient:
    """`questions`: the client knows the demo's question definitions too (types its forms)."""
    agent = build_demo_agent()
    # The page's client knows the server's tools; that makes their pauses approvals.
    tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
    definitions = list(agent.definitions.values()) if questions else []
    return ChatClient(
        InProcessConnection(agent.run, encode=event_to_wire), tools=tools, interrupts=definitions
    )


async def shipped_42(speed: str, gift_wrap: bool) -> ChatClient:
    """A client that asked to ship order 42 and answered how."""
    client = demo_client(questions=True)
    await client.send("ship order 42")
    answer = {"speed": speed, "giftWrap": gift_wrap}
    await client.resolve_interrupt(client.interrupts[0].id, response=answer)
    return client


def memory() -> dict[str, FormMemory]:
    return {}


def test_the_turn_starts_after_the_last_user_message() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("hello")
        await client.send("delete project apollo")
        settled, turn = split_turn(build_views(client.state, memory()).messages)
        assert [m.role for m in settled] == ["user", "assistant", "user"]
        assert settled[-1].text == "delete project apollo"
        assert [m.role for m in turn] == ["assistant"]
        assert [t.name for t in turn[0].tools] == ["delete_project"]
        assert turn[0].tools[0].has_decision

    run_on_own_loop(scenario())


def test_answering_a_decision_changes_the_turn_and_nothing_before_it() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("hello")
        await client.send("transfer 25 to Ada")
        await client.resolve_interrupts(True)
        await client.send("delete project apollo")
        before = build_views(client.state, memory()).messages
        (item,) = client.interrupts
        await client.resolve_interrupt(item.id, approved=True)
        after = build_views(client.state, memory()).messages
        assert split_turn(after)[0] == split_turn(before)[0]
        assert split_turn(after)[1] != split_turn(before)[1]
        assert split_turn(after)[1][0].tools[0].status == "done"
        assert not split_turn(after)[1][0].tools[0].has_decision

    run_on_own_loop(scenario())


def test_a_transcript_without_user_messages_is_all_turn() -> None:
    assert split_turn([]) == ([], [])


def test_the_first_open_decision_takes_the_focus_and_moves_on_when_answered() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("pay invoices")
        first, second, third = client.interrupts
        cards = [t.decision for t in build_views(client.state, memory()).messages[-1].tools]
        assert [card.focus for card in cards] == [True, False, False]

        await client.resolve_interrupt(first.id, approved=True)  # staged: the batch waits
        cards = [t.decision for t in build_views(client.state, memory()).messages[-1].tools]
        assert [card.staged for card in cards] == ["Approved", "", ""]
        assert [card.focus for card in cards] == [False, True, False]
        # Its call's badge says so too, not "Awaiting approval" beside the card's answer.
        tools = build_views(client.state, memory()).messages[-1].tools
        assert [t.status_label for t in tools] == ["Approved", *["Awaiting approval"] * 2]

        held = build_views(client.state, memory(), focus=False).messages[-1].tools
        assert not any(t.decision.focus for t in held)
        assert {second.id, third.id} == {t.decision.id for t in held[1:]}

    run_on_own_loop(scenario())


def test_a_decision_with_its_form_open_gives_its_approve_no_focus() -> None:
    """Ada half-wrote a rejection and reloaded: her card's Reject form is open with the
    draft. No Approve takes the focus (Enter would approve); the form takes it."""

    async def scenario() -> None:
        client = demo_client()
        await client.send("pay invoices")
        first, second, _ = client.interrupts
        forms = {first.id: FormMemory(panel="reject")}
        cards = [t.decision for t in build_views(client.state, forms).messages[-1].tools]
        assert [card.focus for card in cards] == [False, False, False]
        # The draft in the second card: the first's Approve takes no focus either (Enter
        # would pay invoice 1 while the person was rejecting invoice 2).
        forms = {second.id: FormMemory(panel="reject")}
        cards = [t.decision for t in build_views(client.state, forms).messages[-1].tools]
        assert [card.focus for card in cards] == [False, False, False]
        cards = [t.decision for t in build_views(client.state, memory()).messages[-1].tools]
        assert [card.focus for card in cards] == [True, False, False]

    run_on_own_loop(scenario())


def test_each_card_of_a_batch_has_a_name_of_its_own() -> None:
    """A screen reader moving through three invoices hears which one each card is."""

    async def scenario() -> None:
        client = demo_client()
        await client.send("pay invoices")
        cards = [t.decision for t in build_views(client.state, memory()).messages[-1].tools]
        labels = [card.label for card in cards]
        assert len(set(labels)) == 3
        assert all(label.startswith(cards[0].title + " ") for label in labels)
        assert "INV-1001" in labels[0] and "INV-1002" in labels[1]
        assert all(len(label) <= 160 for label in labels)

    run_on_own_loop(scenario())


def test_cached_views_equal_fresh_ones_and_only_the_turn_is_rebuilt() -> None:
    async def scenario() -> None:
        client = demo_client()
        cache = ViewCache()
        await client.send("hello")
        first = build_views(client.state, memory(), cache=cache).messages
        await client.send("delete project apollo")
        paused = build_views(client.state, memory(), cache=cache).messages
        assert paused == build_views(client.state, memory()).messages
        assert paused[0] is first[0] and paused[1] is first[1]  # "hello" and its reply: reused

        (item,) = client.interrupts
        await client.resolve_interrupt(item.id, approved=True)
        done = build_views(client.state, memory(), cache=cache).messages
        assert done == build_views(client.state, memory()).messages
        # The paused card carried a decision, so it was never cached: it shows the result now.
        card = next(m for m in done if m.id == paused[-1].id).tools[0]
        assert paused[-1].tools[0].has_decision and card.status == "done"
        assert done[0] is first[0]

    run_on_own_loop(scenario())


def test_the_archive_grows_a_whole_block_at_a_time() -> None:
    def transcript(count: int) -> list[MessageView]:
        roles = ["user", "assistant"] * count
        return [MessageView(id=f"m{i}", role=role, text=str(i)) for i, role in enumerate(roles)]

    short = split_transcript(transcript(10) + [MessageView(id="a", role="assistant", text="…")])
    assert (len(short.archive), len(short.recent), len(short.turn)) == (0, 19, 2)

    before = split_transcript(transcript(40))  # 80 messages, the last one a reply
    after = split_transcript(transcript(41))  # one exchange more
    assert len(before.archive) == len(after.archive) == ARCHIVE_BLOCK
    assert after.archive == before.archive  # not sent again
    assert len(after.recent) == 81 - ARCHIVE_BLOCK and [m.id for m in after.turn] == ["m81"]

    crossed = split_transcript(transcript(65))
    assert len(crossed.archive) == 2 * ARCHIVE_BLOCK and len(crossed.recent) == 1


def test_the_archive_is_shown_in_its_blocks() -> None:
    views = [MessageView(id=f"m{i}", role="user", text=str(i)) for i in range(3 * ARCHIVE_BLOCK)]
    blocks = archive_blocks(views)
    assert [block.id for block in blocks] == ["m0", f"m{ARCHIVE_BLOCK}", f"m{2 * ARCHIVE_BLOCK}"]
    assert [m for block in blocks for m in block.messages] == views
    assert archive_blocks(views) == blocks  # cut again alike: not sent again
    assert archive_blocks([]) == []


def test_a_refresh_reuses_the_views_of_the_unchanged_history() -> None:
    async def scenario() -> None:
        client = demo_client()
        cache = ViewCache()
        for text in ("hello", "hello", "hello"):
            await client.send(text)
        first = build_views(client.state, memory(), cache=cache).messages
        again = build_views(client.state, memory(), cache=cache).messages
        assert again == first and all(a is b for a, b in zip(again, first, strict=True))

        await client.send("delete project apollo")
        paused = build_views(client.state, memory(), cache=cache).messages
        assert paused == build_views(client.state, memory()).messages
        assert all(a is b for a, b in zip(paused, first, strict=False))
        (item,) = client.interrupts
        await client.resolve_interrupt(item.id, approved=True)
        done = build_views(client.state, memory(), cache=cache).messages
        assert done == build_views(client.state, memory()).messages

    run_on_own_loop(scenario())


def test_the_saved_state_is_the_clients_json_text_for_text() -> None:
    async def scenario() -> None:
        client = demo_client()
        saved = StateJson()
        for text in ("hello", "hello", "transfer 25 to Ada"):
            await client.send(text)
            assert saved.dump(client.state) == client.state.to_json()
        (item,) = client.interrupts  # a pending decision, in the manager's snapshot too
        await client.resolve_interrupt(item.id, approved=False, payload={"reason": "no"})
        assert saved.dump(client.state) == client.state.to_json()

        asked = await shipped_42("express", True)  # an answered question, its JSON kept
        assert saved.dump(asked.state) == asked.state.to_json()
        await asked.send("ship order 7")
        assert saved.dump(asked.state) == asked.state.to_json()
        await asked.cancel(asked.interrupts[0].id)
        await asked.send("hello")
        assert len(asked.state.answered) == 2
        assert saved.dump(asked.state) == asked.state.to_json()
        # A message before the last changed (a snapshot may bring one back changed), one
        # more, the last gone: the kept texts before it are not taken as they were.
        messages = asked.state.messages
        for changed in (
            (replace(messages[0], id="m-changed"), *messages[1:]),
            (*messages[:2], replace(messages[2], parts=()), *messages[3:]),
            messages[:-1],
            messages,
            (*messages, replace(messages[-1], id="m-more")),
        ):
            state = replace(asked.state, messages=changed)
            assert saved.dump(state) == state.to_json()
        # Whatever the agent's state holds, the texts go where the state's own fields are.
        odd = replace(asked.state, agent_state={"messages": [], "answered": []})
        assert saved.dump(odd) == odd.to_json()

    run_on_own_loop(scenario())


@pytest.mark.parametrize(
    ("status", "resolution", "answer"),
    [
        ("pending", None, ("", "")),
        ("staged", {"status": "cancelled"}, ("Cancelled", "cancelled")),
        ("staged", {"status": "resolved", "payload": False}, ("Rejected", "rejected")),
        (
            "staged",
            {"status": "resolved", "payload": {"approved": False, "payload": {"reason": "no"}}},
            ("Rejected", "rejected"),
        ),  # fmt: skip
        ("staged", {"status": "resolved", "payload": True}, ("Approved", "approved")),
        (
            "staged",
            {"status": "resolved", "payload": {"approved": True, "editedArgs": {"amount": 980}}},
            ("Approved with changes", "approved"),
        ),  # fmt: skip
        (
            "staged",
            {"status": "resolved", "payload": {"approved": True, "editedArgs": {"amount": 900}}},
            ("Approved with changes (amount: 980 → 900)", "approved"),
        ),  # fmt: skip
    ],
)
def test_a_staged_answer_reads_as_what_it_is_and_says_which_icon(
    status: Any, resolution: dict[str, object] | None, answer: tuple[str, str]
) -> None:
    item = ToolApprovalInterrupt(
        id="approval_c1", reason="tool_approval", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="pay_invoice", tool_call_id="c1", status=status,
        resolution=resolution, original_args={"amount": 980},
    )  # fmt: skip
    assert staged_answer(item) == answer


def _decided(
    outcome: str, decided_by: str | None, *voters: tuple[str, str], kind: str = "tool"
) -> InboxItem:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    return InboxItem(
        decision_id=f"d-{outcome}", thread_id="t", item_id=f"approval_{outcome}", kind=kind,  # type: ignore[arg-type]
        name="rotate_keys", summary="", args={}, requester_email="rita@example.com",
        requester_name="Rita", rule="key-rotation", waiting_for="", quorum=len(voters) or 1,
        votes=tuple(Vote(email=e, name=n, approved=True, at=at) for e, n in voters),
        status="decided", created_at=at, expires_at=None, decided_by=decided_by,
        decided_by_name=dict(voters).get(decided_by or "", "Ada"), outcome=outcome,
    )  # fmt: skip


def test_what_an_edit_changed_reads_field_by_field() -> None:
    before = {"recipient": "Ada", "amount": 5000, "memo": "rent"}
    after = {"recipient": "Ada", "amount": 4000, "note": {"why": "budget"}}
    assert arguments_changed(before, after) == [
        "amount: 5000 → 4000", "memo: rent → —", 'note: — → {"why": "budget"}'
    ]  # fmt: skip
    assert arguments_changed(before, dict(before)) == []
    assert arguments_changed([1], [2]) == ["arguments: [1] → [2]"]
    edited = replace(_decided("edited", "ada@example.com"), args=before, edited_args=after)
    unchanged = replace(_decided("edited", "ada@example.com"), args=before, edited_args=before)
    approved = replace(_decided("approved", "ada@example.com"), args=before)
    assert edits([edited, approved]) == {"approval_edited": arguments_changed(before, after)}
    assert edits([unchanged]) == {}


def test_a_continuation_in_flight_says_what_its_edits_change() -> None:
    from chat_app.client import ChatMessage, Submission, ToolCallPart

    call = ToolCallPart(id="c1", name="transfer", arguments='{"recipient":"Ada","amount":5000}',
                        approval_id="approval_c1")  # fmt: skip
    other = ToolCallPart(id="c2", name="refund", input={"amount": 5}, approval_id="approval_c2")
    messages = [ChatMessage(id="m1", role="assistant", parts=(call, other))]
    submission = Submission(
        thread_id="t", interrupted_run_id="r", canonical_resolutions="", fingerprint="",
        resolutions=(
            {"interruptId": "approval_c1", "status": "resolved",
             "payload": {"approved": True, "editedArgs": {"recipient": "Ada", "amount": 4000}}},
            {"interruptId": "approval_c2", "status": "resolved", "payload": {"approved": True}},
        ),
    )  # fmt: skip
    assert submitted_edits(submission, messages) == {"approval_c1": ["amount: 5000 → 4000"]}
    assert submitted_edits(None, messages) == {}


def test_a_card_or_question_names_who_answered_it_but_not_the_asker_who_did_alone() -> None:
    sam, olive = ("sam@example.com", "Sam"), ("olive@example.com", "Olive")
    quorum = _decided("approved", olive[0], sam, olive)
    rejected = _decided("rejected", "ada@example.com")
    edited = _decided("edited", "ada@example.com")
    by_policy = _decided("approved", None)  # a rule decided: its card names the rule
    question = _decided("answered", "ada@example.com", kind="question")
    items = [quorum, rejected, edited, by_policy, question]

    assert answered_by(items, "rita@example.com") == {
        "approval_approved": "Approved by Sam and Olive",
        "approval_rejected": "Rejected by Ada",
        "approval_edited": "Approved with changes by Ada",
        "approval_answered": "Answered by Ada",  # a question, for its line
    }
    assert answered_by(items, sam[0])["approval_approved"] == "Approved by you and Olive"
    # Ada, in Rita's conversation, reads her own part in it.
    assert answered_by(items, "ada@example.com")["approval_rejected"] == "Rejected by you"
    # Rita, who decided her own request alone, needs no telling.
    own = replace(_decided("approved", "rita@example.com"), decided_by_name="Rita")
    assert answered_by([own], "rita@example.com") == {}
    assert answered_by([own], "ada@example.com") == {"approval_approved": "Approved by Rita"}
    # A question's line says how it ended whoever looks, "by you" included.
    assert answered_by(items, "ada@example.com")["approval_answered"] == "Answered by you"
    # Cancelled by whoever asked is a withdrawal; by an approver, a cancellation.
    withdrawn = replace(_decided("cancelled", "rita@example.com"), decided_by_name="Rita")
    assert answered_by([withdrawn], "ada@example.com") == {
        "approval_cancelled": "Withdrawn by Rita"
    }
    cancelled = _decided("cancelled", "ada@example.com")
    assert answered_by([cancelled], "rita@example.com") == {
        "approval_cancelled": "Cancelled by Ada"
    }
    # Whoever withdrew reads it so too: the card's status, the lists and the line agree.
    assert answered_by([withdrawn], "rita@example.com") == {
        "approval_cancelled": "Withdrawn by you"
    }
    # A request that was hers to decide, she cancelled: no withdrawal, and she knows.
    own_cancel = replace(withdrawn, rule=None, waiting_for="Waiting for Rita")
    assert answered_by([own_cancel], "rita@example.com") == {}
    assert how_it_ended(own_cancel, "rita@example.com") == "Cancelled by you"
    assert how_it_ended(withdrawn, "rita@example.com") == "Withdrawn by you"
    # A quorum's rejection names whoever rejected, not those who had approved.
    vetoed = _decided("rejected", olive[0], sam)
    assert replace(vetoed, decided_by_name="Olive").approvals  # Sam's approval is on record
    assert answered_by([replace(vetoed, decided_by_name="Olive")], "rita@example.com") == {
        "approval_rejected": "Rejected by Olive"
    }


def test_a_withdrawn_request_is_withdrawn_on_its_card_and_a_cancelled_one_cancelled() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("transfer 5000 to Ada")
        (item,) = client.interrupts
        await client.cancel(item.id)

        def card(line: str) -> Any:
            views = build_views(client.state, memory(), decided_by={item.id: line})
            return next(tool for m in views.messages for tool in m.tools if tool.name == "transfer")

        assert (card("Withdrawn by you").status_label, card("Withdrawn by you").decided_by) == (
            "Withdrawn", "Withdrawn by you"
        )  # fmt: skip
        assert card("Withdrawn by Rita").status_label == "Withdrawn"
        assert card("Cancelled by Ada").status_label == "Cancelled"
        assert card("").status_label == "Cancelled"
        # The protocol's stock words for a cancellation are nobody's reason: none is shown.
        assert card("").reason == card("Withdrawn by you").reason == ""

    run_on_own_loop(scenario())


def test_a_quorums_card_says_how_far_it_has_got_and_offers_no_edit() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("transfer 5000 to Ada")  # typed arguments: an edit is offered
        (item,) = client.interrupts

        def card(quorum: dict[str, str] | None) -> Any:
            return build_views(client.state, memory(), quorum=quorum).messages[-1].tools[0]

        alone = card(None).decision
        assert (alone.can_edit, alone.progress) == (True, "")
        counted = card({item.id: "1 of 2: Sam approved"}).decision
        assert (counted.can_edit, counted.progress) == (False, "1 of 2: Sam approved")

    run_on_own_loop(scenario())


def test_an_approver_reads_arguments_as_they_are_stored_whatever_their_direction_marks() -> None:
    """An override in a tool's arguments makes them read as others ("Eve\u202eadA" reads
    "EveAda"): the card an approver decides on, the tool's own arguments and a change
    line write it out."""

    async def scenario() -> None:
        client = demo_client()
        await client.send("email ada@example.com about Pay Eve\u202eadA")
        card = build_views(client.state, memory()).messages[-1].tools[0]
        assert card.decision.arguments[1] == ["subject", "Pay Eve[U+202E]adA"]
        assert '"subject": "Pay Eve[U+202E]adA"' in card.arguments
        assert "\u202e" not in card.arguments
        # The bubbles too: the message as typed, and the reply that quotes it.
        texts = [message.text for message in build_views(client.state, memory()).messages]
        assert texts[0] == "email ada@example.com about Pay Eve[U+202E]adA"
        assert all("\u202e" not in text for text in texts)
        # And the reply while it streams, which a quoting model would show reversed.
        part = TextPart(content="Pay Eve\u202eadA")
        quoted = ChatMessage(id="m", role="assistant", parts=(part,))
        assert streaming_preview([quoted])[1] == "Pay Eve[U+202E]adA"

    run_on_own_loop(scenario())
    assert arguments_changed({"to": "Ada"}, {"to": "Eve\u2067adA"}) == [
        "to: Ada → Eve[U+2067]adA"
    ]


def test_a_question_reads_as_it_is_stored_whatever_its_direction_marks() -> None:
    question = GenericInterrupt(
        id="ask", reason="question", thread_id="t", interrupted_run_id="r",
        binding={}, message="Pay Eve\u202eadA?",
    )  # fmt: skip
    assert decision_view(question, None, 0).message == "Pay Eve[U+202E]adA?"


def test_a_tool_without_arguments_offers_no_edit() -> None:
    async def scenario() -> None:
        client = demo_client()
        await client.send("share my location")  # get_location takes no arguments
        card = build_views(client.state, memory()).messages[-1].tools[0]
        assert card.name == "get_location"
        assert (card.decision.can_edit, card.decision.edit_fields) == (False, [])

    run_on_own_loop(scenario())


def test_an_answered_question_shows_where_it_was_asked_with_its_answer() -> None:
    async def scenario() -> None:
        client = await shipped_42("express", False)
        await client.send("ship order 7")
        await client.cancel(client.interrupts[0].id)
        views = build_views(client.state, memory()).messages
        rows = [(m.role, m.text, m.answer, m.note) for m in views]
        asked = "How should order 42 ship?"
        assert rows[:3] == [
            ("user", "ship order 42", [], ""),
            ("question", asked, ["Shipping speed: express", "Gift wrap: no"], "Answered"),
            ("assistant", "Shipping order 42 express.", [], ""),
        ]
        assert ("question", "How should order 7 ship?", [], "Cancelled") in rows
        assert rows.index(("user", "ship order 7", [], "")) < len(rows) - 2
        [first, _] = client.state.answered
        # Someone else answered it at the desk: it says who.
        decided = build_views(client.state, memory(), decided_by={first.item.id: "Answered by Sam"})
        assert [m.note for m in decided.messages if m.role == "question"][0] == "Answered by Sam"

    run_on_own_loop(scenario())


def test_answered_questions_rows_are_kept_until_who_answered_changes() -> None:
    async def scenario() -> None:
        client = await shipped_42("express", False)
        await client.send("ship order 7")
        await client.resolve_interrupt(
            client.interrupts[0].id, response={"speed": "standard", "giftWrap": True}
        )
        cache = ViewCache()
        first = build_views(client.state, memory(), cache=cache).messages
        assert first == build_views(client.state, memory()).messages
        again = build_views(client.state, memory(), cache=cache).messages
        rows = [m for m in again if m.role == "question"]
        assert len(rows) == 2
        assert all(a is b for a, b in zip(again, first, strict=True))  # not built again

        # Someone else answered the second: its row changes, the first stays as it was.
        second = client.state.answered[1].item.id
        decided = {second: "Answered by Sam"}
        changed = build_views(client.state, memory(), cache=cache, decided_by=decided).messages
        assert changed == build_views(client.state, memory(), decided_by=decided).messages
        kept, redone = [m for m in changed if m.role == "question"]
        assert kept is rows[0] and redone is not rows[1] and redone.note == "Answered by Sam"

        # A state read back from its JSON holds equal questions, not the same objects.
        restored = ClientState.from_json(client.state.to_json())
        assert restored.answered[0] is not client.state.answered[0]
        back = build_views(restored, memory(), cache=cache, decided_by=decided).messages
        assert [m for m in back if m.role == "question"][0] is rows[0]

        # The same question answered otherwise, or closed by its expiry: built again.
        asked = restored.answered[0]
        otherwise = replace(
            asked, resolution={**asked.resolution, "payload": {"speed": "standard"}}
        )
        expired = replace(
            asked,
            item=replace(asked.item, expiry_note="Expired: nobody answered within 1 day."),
            resolution={"interruptId": asked.item.id, "status": "cancelled"},
        )
        for changed_question in (otherwise, expired):
            state = replace(restored, answered=(changed_question, *restored.answered[1:]))
            fresh = build_views(state, memory(), decided_by=decided).messages
            cached = build_views(state, memory(), cache=cache, decided_by=decided).messages
            assert cached == fresh
            assert [m for m in cached if m.role == "question"][0] is not rows[0]

        # A message gone from the middle, then from the start: the views after it (and the
        # questions after those) move up, and the cache places them as a fresh build does.
        messages = restored.messages
        for fewer in (messages[:2] + messages[3:], messages[1:]):
            state = replace(restored, messages=fewer)
            cached = build_views(state, memory(), cache=cache, decided_by=decided).messages
            assert cached == build_views(state, memory(), decided_by=decided).messages
            assert [m.role for m in cached].count("question") == 2

    run_on_own_loop(scenario())


def test_an_answered_question_goes_first_or_last_when_its_place_is_gone() -> None:
    async def scenario() -> None:
        client = await shipped_42("standard", True)
        [question] = client.state.answered
        for after, at in (("", 0), ("a-message-no-longer-there", -1)):
            state = replace(client.state, answered=(replace(question, after=after),))
            roles = [m.role for m in build_views(state, memory()).messages]
            assert roles[at] == "question" and roles.count("question") == 1
        # Closed as expired: the cancellation sent once its time was up says so.
        expired = replace(
            question,
            item=replace(question.item, status="submitting", expiry_note="Expired: nobody "
                         "answered within 1 day."),
            resolution={"interruptId": question.item.id, "status": "cancelled"},
        )  # fmt: skip
        state = replace(client.state, answered=(expired,))
        [row] = [m for m in build_views(state, memory()).messages if m.role == "question"]
        assert (row.answer, row.note) == ([], "Expired: nobody answered within 1 day.")
        # One whose place is gone does not hold back the ones after it.
        gone = replace(question, after="a-message-no-longer-there")
        later = replace(question, item=replace(question.item, id="q2"), after=question.after)
        state = replace(client.state, answered=(gone, later))
        ids = [m.id for m in build_views(state, memory()).messages]
        assert ids[ids.index(question.after) + 1] == "answer-q2"
        assert ids[-1] == f"answer-{gone.item.id}"

    run_on_own_loop(scenario())


def test_a_question_after_a_message_without_a_row_follows_the_row_before_it() -> None:
    async def scenario() -> None:
        client = await shipped_42("express", True)
        [question] = client.state.answered
        messages = client.state.messages
        at = next(i for i, m in enumerate(messages) if m.id == question.after)
        quiet = ChatMessage(id="quiet", role="assistant")  # nothing to show: no row
        state = replace(
            client.state,
            messages=(*messages[: at + 1], quiet, *messages[at + 1 :]),
            answered=(replace(question, after="quiet"),),
        )
        ids = [m.id for m in build_views(state, memory()).messages]
        assert "quiet" not in ids
        assert ids[ids.index(question.after) + 1] == f"answer-{question.item.id}"
        assert ids == [m.id for m in build_views(client.state, memory()).messages]

    run_on_own_loop(scenario())


def test_an_answered_question_with_a_titled_payload_names_it() -> None:
    """Two plan reviews read alike; the plan's title tells their lines apart."""

    async def scenario() -> None:
        client = demo_client(questions=True)
        await client.send("plan release")
        note = "Ship it.\nThen watch the dashboards."
        await client.resolve_interrupt(
            client.interrupts[0].id, response={"approved": True, "note": note}
        )
        [row] = [m for m in build_views(client.state, memory()).messages if m.role == "question"]
        assert row.text.startswith("Release 2026.12: ")
        assert row.answer == ["Approve this plan: yes", f"Note: {note}"]

    run_on_own_loop(scenario())


def test_the_answers_given_at_the_desk_are_named_whoever_gave_them_the_asker_too() -> None:
    """What a failed continuation holds of the desk's answers is the desk's to send again:
    every one is named, the requester's own from her inbox too (which `answered_by` leaves
    out), and none that a page's own run closed."""
    own = replace(_decided("approved", "rita@example.com"), decided_by_name="Rita")
    theirs = _decided("rejected", "ada@example.com")
    in_a_page = replace(_decided("edited", "rita@example.com"), status="closed")
    assert given_at_desk([own, theirs, in_a_page], "rita@example.com") == {
        "approval_approved": "Approved by you",
        "approval_rejected": "Rejected by Ada",
    }
    assert given_at_desk([own], "ada@example.com") == {"approval_approved": "Approved by Rita"}
    by_policy = _decided("approved", None)
    assert given_at_desk([by_policy], "rita@example.com") == {}


def test_a_draft_keeps_the_boxes_it_unticked_though_the_proposal_ticked_them() -> None:
    schema: dict[str, object] = {
        "type": "object",
        "properties": {
            "extras": {"type": "array", "items": {"enum": ["wrap", "insure"]}},
            "signed": {"type": "boolean"},
            "city": {"type": "string"},
        },
    }
    item = ToolApprovalInterrupt(
        id="approval_c1", reason="tool_approval", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="book", tool_call_id="c1", input_schema=schema,
        original_args={"extras": ["wrap", "insure"], "signed": True, "city": "Oslo"},
    )  # fmt: skip

    def rows(memory: FormMemory | None) -> dict[str, tuple[str, list[str]]]:
        fields = decision_view(item, memory, 0).edit_fields
        return {row.path: (row.value, row.chosen) for row in fields}

    proposed = rows(None)
    assert proposed["extras"][1] == ["wrap", "insure"] and proposed["signed"][0] == "true"
    # The form as posted with every box unticked holds neither field.
    unticked = rows(FormMemory(panel="edit", drafts={"edit": {"city": "Bergen"}}))
    assert unticked == {"extras": ("", []), "signed": ("", []), "city": ("Bergen", [])}
    # A draft of another form leaves this one as proposed.
    assert rows(FormMemory(drafts={"reject": {"reason": "No"}})) == proposed


def test_a_send_that_fails_again_is_shown_once_with_how_often(tmp_path: Path) -> None:
    """The ledger's Redis stops after the pause: the approval fails to go, and so does its
    Retry. The batch bar shows the failure once, counted, so the Retry shows it did
    something; the run's own error says nothing ran, and why."""
    port = free_port()

    async def scenario() -> None:
        with redis_server(tmp_path, port=port) as url:
            agent = build_demo_agent(ledger=RedisLedger(url))
            tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
            client = ChatClient(InProcessConnection(agent.run, encode=event_to_wire), tools=tools)
            await client.send("transfer 25 to Ada")
        [item] = client.interrupts
        await client.resolve_interrupt(item.id, approved=True)
        assert build_views(client.state, memory()).batch_errors == [
            "Interrupt continuation could not be started."
        ]
        assert client.state.error == (
            "Nothing ran: the approval ledger could not be reached to record the answers. "
            "Retry once it is back."
        )
        await client.retry_interrupts()
        assert build_views(client.state, memory()).batch_errors == [
            "Interrupt continuation could not be started (2 tries)."
        ]

    run_on_own_loop(scenario())


def test_an_answer_a_failed_send_holds_is_not_a_decision_still_needed(tmp_path: Path) -> None:
    """Rita approves her own request while another process holds the ledger's file locked:
    the send fails. Her card says what it holds and reads "Not sent", not "Awaiting
    approval"; the one open decision holds an answer (`unsent`), so the batch bar says
    "Not sent" rather than "1 decision needed". Answered anew, it is needed no more."""
    path = tmp_path / "ledger.db"

    async def scenario() -> None:
        agent = build_demo_agent(ledger=SQLiteLedger(path, busy_seconds=0.1))
        tools = ClientTool.from_manifest({"tools": agent.tool_manifest()}, {})
        client = ChatClient(InProcessConnection(agent.run, encode=event_to_wire), tools=tools)
        await client.send("delete project apollo")
        [item] = client.interrupts
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        await client.resolve_interrupt(item.id, approved=True)
        shown = build_views(client.state, memory())
        [card] = [t for m in shown.messages for t in m.tools]
        assert (card.status_label, card.decision.held) == (
            "Not sent", "Approved, not sent: Retry sends it again, or answer anew."
        )
        assert (shown.open_count, shown.unsent) == (1, 1)
        other.execute("ROLLBACK")
        await client.retry_interrupts()
        done = build_views(client.state, memory())
        assert (done.open_count, done.unsent) == (0, 0)
        assert [t.status_label for m in done.messages for t in m.tools] == ["Done"]

    run_on_own_loop(scenario())
