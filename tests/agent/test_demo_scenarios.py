"""Every demo phrase, paused and continued through the in-process engine."""

from __future__ import annotations

from typing import Any

from chat_app.demo import build_demo_agent
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from tests.agent.builders import collect, user


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def interrupts_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = events[-1]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "interrupt"
    assert events[-2]["type"] == "MESSAGES_SNAPSHOT"
    interrupts: list[dict[str, Any]] = last["outcome"]["interrupts"]
    return interrupts


async def pause(phrase: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events = await collect(
        build_demo_agent(), {"threadId": "t", "runId": "r1", "messages": [user(phrase, "u1")]}
    )
    return events, interrupts_of(events)


async def resume(
    events: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    run_id: str = "r2",
    extra: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    history = events[-2]["messages"] + (extra or [])
    return await collect(
        build_demo_agent(),
        {
            "threadId": "t",
            "runId": run_id,
            "parentRunId": events[-1]["runId"],
            "messages": history,
            "resume": entries,
        },
    )


async def test_transfer_approved_runs_and_reports_the_receipt() -> None:
    events, items = await pause("transfer 25 to Ada")
    assert [i["id"] for i in items] == [f"approval_{items[0]['toolCallId']}"]
    assert items[0]["metadata"]["input"] == {"recipient": "Ada", "amount": 25}
    done = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    assert done[0]["type"] == "RUN_STARTED" and done[0]["parentRunId"] == "r1"
    assert "Receipt id: rcpt-" in text_of(done)


async def test_a_message_given_as_parts_is_read_by_its_text() -> None:
    """AG-UI lets a user message be a list of parts (text, images): the demo reads its text
    parts, as a real model does (it failed: "Object of type TextPart is not JSON
    serializable")."""
    parts = [{"type": "text", "text": "transfer 25 "}, {"type": "text", "text": "to Ada"}]
    message = {"id": "u1", "role": "user", "content": parts}
    events = await collect(build_demo_agent(), {"threadId": "t", "runId": "r1",
                                                "messages": [message]})  # fmt: skip
    [item] = interrupts_of(events)
    assert item["metadata"]["input"] == {"recipient": "Ada", "amount": 25}


async def test_a_paused_history_sent_again_pauses_on_what_it_asks_and_runs_that_once() -> None:
    """A client sends the paused history again without answering it (a regenerate): the
    model reads the first call as without a result and calls again, and the new pause asks
    about the new call only. Answering just that one goes on (the engine asked for the
    first too, which nobody had been asked about), and the deletion runs once."""
    events, [first] = await pause("delete project apollo")
    again = await collect(build_demo_agent(), {"threadId": "t", "runId": "r2",
                                               "messages": events[-2]["messages"]})  # fmt: skip
    [second] = interrupts_of(again)
    assert second["toolCallId"] != first["toolCallId"]
    done = await resume(again, [{"interruptId": second["id"], "status": "resolved",
                                 "payload": {"approved": True}}], run_id="r3")  # fmt: skip
    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
    results = [e for e in done if e["type"] == "TOOL_CALL_RESULT"]
    assert [e["toolCallId"] for e in results] == [second["toolCallId"]]


async def test_transfer_reject_requires_a_reason_the_model_reads() -> None:
    events, items = await pause("transfer 25 to Ada")
    refused = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": False}}],
    )
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
    assert refused[1]["code"] == "invalid-payload"
    done = await resume(
        events,
        [
            {
                "interruptId": items[0]["id"],
                "status": "resolved",
                "payload": {"approved": False, "payload": {"reason": "Wrong account"}},
            }
        ],
    )
    assert "Reason: Wrong account." in text_of(done)
    assert not any(e["type"] == "TOOL_CALL_RESULT" and "receipt" in e["content"] for e in done)


async def test_a_reason_reads_as_one_sentence_however_it_ends() -> None:
    for reason, said in [
        (
            "Refunds this large go through the bank.",
            "Reason: Refunds this large go through the bank.",
        ),
        ("Why now?", "Reason: Why now?"),
        ("more words  ", "Reason: more words."),
    ]:
        events, items = await pause("transfer 25 to Ada")
        rejected = {"approved": False, "payload": {"reason": reason}}
        done = await resume(
            events, [{"interruptId": items[0]["id"], "status": "resolved", "payload": rejected}]
        )
        assert text_of(done).endswith(said) and ".." not in text_of(done), text_of(done)


async def test_cancel_runs_nothing() -> None:
    events, items = await pause("delete project apollo")
    done = await resume(events, [{"interruptId": items[0]["id"], "status": "cancelled"}])
    assert "Cancelled" in text_of(done)


async def test_email_with_edited_arguments_sends_the_edit() -> None:
    events, items = await pause("email ada@example.com about Launch")
    edited = {"to": "grace@example.com", "subject": "Launch day", "body": "See you there."}
    bad = await resume(
        events,
        [
            {
                "interruptId": items[0]["id"],
                "status": "resolved",
                "payload": {"approved": True, "editedArgs": {**edited, "to": "not-an-email"}},
            }
        ],
    )
    assert bad[-1]["code"] == "invalid-edited-args"
    done = await resume(
        events,
        [
            {
                "interruptId": items[0]["id"],
                "status": "resolved",
                "payload": {"approved": True, "editedArgs": edited},
            }
        ],
    )
    assert 'Email "Launch day" sent to grace@example.com' in text_of(done)


async def test_ship_order_asks_a_typed_question_and_ships_with_the_answer() -> None:
    events, items = await pause("ship order 42")
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    item = items[0]
    assert item["responseSchema"]["properties"]["speed"]["enum"] == [
        "standard",
        "express",
        "overnight",
    ]
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    metadata = wrap_generic_continuation(continuation)
    invalid = await resume(
        events,
        [
            {
                "interruptId": item["id"],
                "status": "resolved",
                "payload": {"speed": "rocket", "giftWrap": True},
                "metadata": metadata,
            }
        ],
    )
    assert invalid[-1]["code"] == "invalid-payload"
    done = await resume(
        events,
        [
            {
                "interruptId": item["id"],
                "status": "resolved",
                "payload": {"speed": "express", "giftWrap": True},
                "metadata": metadata,
            }
        ],
    )
    assert "Order 42 ships express, gift-wrapped" in text_of(done)


async def test_plan_release_shows_its_payload_and_reads_the_note() -> None:
    events, items = await pause("plan release")
    item = items[0]
    assert item["metadata"]["tanstack:interruptPayload"]["title"] == "Release 2026.12"
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    metadata = wrap_generic_continuation(continuation)
    done = await resume(
        events,
        [
            {
                "interruptId": item["id"],
                "status": "resolved",
                "payload": {"approved": True, "note": "ship it"},
                "metadata": metadata,
            }
        ],
    )
    assert text_of(done) == "Release plan approved. Note: ship it"


async def test_pay_invoices_is_one_batch_of_three_and_nothing_runs_until_all_answer() -> None:
    events, items = await pause("pay invoices")
    assert len(items) == 3
    partial = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    assert partial[-1]["code"] == "unknown-interrupt"
    done = await resume(
        events,
        [
            {"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
            for i in items
        ],
    )
    assert text_of(done).count("Paid INV-") == 3


async def test_local_time_is_a_client_tool_without_a_decision() -> None:
    events, items = await pause("what time is it")
    assert items[0]["reason"] == "tanstack:client_tool_execution"
    output = {"time": "10:42", "timeZone": "Europe/Paris"}
    call_id = items[0]["toolCallId"]
    done = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": output}],
        extra=[
            {
                "id": f"tool-{call_id}",
                "role": "tool",
                "toolCallId": call_id,
                "content": '{"time":"10:42","timeZone":"Europe/Paris"}',
            }
        ],
    )
    assert "10:42" in text_of(done)


async def test_location_pauses_for_approval_then_runs_in_the_client() -> None:
    events, items = await pause("share my location")
    assert items[0]["id"].startswith("approval_")
    approved = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    client = interrupts_of(approved)
    assert client[0]["id"] == "client_tool_" + items[0]["toolCallId"]
    call_id = items[0]["toolCallId"]
    done = await resume(
        approved,
        [
            {
                "interruptId": client[0]["id"],
                "status": "resolved",
                "payload": {
                    "latitude": 52.52,
                    "longitude": 13.405,
                    "accuracy": 25,
                    "label": "52.5200, 13.4050",
                },
            }
        ],
        run_id="r3",
        extra=[
            {
                "id": f"tool-{call_id}",
                "role": "tool",
                "toolCallId": call_id,
                "content": '{"latitude":52.52,"longitude":13.405,"accuracy":25,'
                '"label":"52.5200, 13.4050"}',
            }
        ],
    )
    assert "Got it: you're at 52.5200, 13.4050 (±25 m)." in text_of(done)


async def test_location_that_fails_in_the_client_is_an_error_the_model_reads() -> None:
    events, items = await pause("share my location")
    approved = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    client = interrupts_of(approved)
    call_id = items[0]["toolCallId"]
    error = "the browser refused location access"
    done = await resume(
        approved,
        [{"interruptId": client[0]["id"], "status": "resolved", "payload": {"error": error}}],
        run_id="r3",
        extra=[
            {
                "id": f"tool-{call_id}",
                "role": "tool",
                "toolCallId": call_id,
                "content": "null",
                "error": error,
            }
        ],
    )
    assert done[-1]["type"] == "RUN_FINISHED"
    assert text_of(done) == f"I couldn't read your location: {error}."


async def test_deploy_pauses_with_a_bound_approval_and_a_foreign_unbound_item() -> None:
    events, items = await pause("deploy")
    assert [i["id"].split("_")[0] for i in items] == ["approval", "workflow-freeze-r1"]
    assert "tanstack:interruptBinding" not in items[1]["metadata"]
    done = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
    )
    assert "Deployed checkout 2.4.1" in text_of(done)


async def test_anything_else_lists_the_demo() -> None:
    events = await collect(
        build_demo_agent(), {"threadId": "t", "runId": "r", "messages": [user("hello", "u")]}
    )
    assert "transfer 25 to Ada" in text_of(events)
    assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1]


async def test_tanstacks_approval_placeholder_is_replaced_by_the_real_result() -> None:
    # @tanstack/ai-client writes a placeholder tool message for an answered approval.
    events, items = await pause("transfer 25 to Ada")
    call_id = items[0]["toolCallId"]
    placeholder = {
        "id": f"tool-{call_id}",
        "role": "tool",
        "toolCallId": call_id,
        "content": '{"approved":true,"pendingExecution":true,"message":"User approved it"}',
    }
    done = await resume(
        events,
        [{"interruptId": items[0]["id"], "status": "resolved", "payload": {"approved": True}}],
        extra=[placeholder],
    )
    assert "Receipt id: rcpt-" in text_of(done)
    assert sum(e["type"] == "TOOL_CALL_RESULT" for e in done) == 1
