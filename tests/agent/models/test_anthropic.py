"""The Anthropic adapter driving the demo agent against a fake provider over real HTTP.

Each test queues Messages API event streams (or errors) on the fake server, runs the full
`Agent`, and asserts on the AG-UI events and on the request bodies the server received.
"""

from __future__ import annotations

import json
from typing import Any

from tests.agent.fakes.provider import FakeProvider, Reply
from tests.agent.fakes.streams import (
    ANTHROPIC_MODEL,
    Call,
    anthropic_error,
    anthropic_event,
    anthropic_reply,
    anthropic_stream,
    anthropic_stream_error,
    call,
    words,
)
from tests.agent.models.builders import (
    INSTRUCTIONS,
    anthropic_model,
    approve,
    cancel,
    deny,
    interrupts_of,
    reject,
    resume,
    run_error,
    say,
    text_of,
    types_of,
)

TRANSFER = call("toolu_01A", "transfer", {"recipient": "Ada", "amount": 25})
INVOICES = [
    call("toolu_A", "pay_invoice", {"invoice": "INV-1001", "supplier": "Acme", "amount": 120.5}),
    call("toolu_B", "pay_invoice", {"invoice": "INV-1002", "supplier": "Globex", "amount": 980}),
    call("toolu_C", "pay_invoice", {"invoice": "INV-1003", "supplier": "Initech", "amount": 64}),
]
SAID = "I'll send 25 to Ada once you approve."


async def pause_for_transfer(fake: FakeProvider) -> list[dict[str, Any]]:
    fake.queue(anthropic_reply(SAID, TRANSFER))
    return await say(anthropic_model(fake), "transfer 25 to Ada")


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


async def test_text_streams_piece_by_piece_and_the_run_finishes(fake: FakeProvider) -> None:
    fake.queue(anthropic_reply("Hello! I can move money and ship orders."))
    events = await say(anthropic_model(fake), "hi")
    contents = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert contents == words("Hello! I can move money and ship orders.")
    assert events[-1]["type"] == "RUN_FINISHED"
    [received] = fake.received
    assert received.path == "/v1/messages"
    assert received.body["model"] == ANTHROPIC_MODEL and received.body["stream"] is True
    assert received.body["max_tokens"] == 4096
    assert received.body["system"] == INSTRUCTIONS
    assert received.body["messages"] == [{"role": "user", "content": [text("hi")]}]


async def test_the_tools_go_to_the_model_with_their_input_schemas(fake: FakeProvider) -> None:
    await pause_for_transfer(fake)
    tools = {tool["name"]: tool for tool in fake.bodies[0]["tools"]}
    assert tools["transfer"]["description"] == "Send money to a person."
    assert tools["transfer"]["input_schema"]["required"] == ["recipient", "amount"]
    assert tools["get_local_time"]["input_schema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


async def test_a_transfer_pauses_for_approval_with_the_models_tool_use(
    fake: FakeProvider,
) -> None:
    events = await pause_for_transfer(fake)
    [item] = interrupts_of(events)
    assert item["toolCallId"] == "toolu_01A"
    assert item["metadata"]["input"] == {"recipient": "Ada", "amount": 25}
    assert text_of(events) == SAID
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert args == TRANSFER.fragments()


async def test_an_approved_call_goes_back_as_tool_use_then_a_tool_result(
    fake: FakeProvider,
) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(anthropic_reply("Done: 25 sent to Ada."))
    done = await resume(anthropic_model(fake), paused, [approve(interrupts_of(paused)[0])])
    assert text_of(done) == "Done: 25 sent to Ada."
    messages = fake.bodies[1]["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        text(SAID),
        {
            "type": "tool_use",
            "id": "toolu_01A",
            "name": "transfer",
            "input": {"recipient": "Ada", "amount": 25},
        },
    ]
    [result] = messages[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01A"
    assert result["is_error"] is False
    assert json.loads(result["content"])["receipt"].startswith("rcpt-")


async def test_a_rejection_goes_back_as_an_error_result_carrying_the_reason(
    fake: FakeProvider,
) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(anthropic_reply("Understood."))
    await resume(anthropic_model(fake), paused, [reject(interrupts_of(paused)[0], "Wrong account")])
    assert tool_results(fake.bodies[1]) == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01A",
            "content": '{"reason":"Wrong account"}',
            "is_error": True,
        }
    ]


async def test_a_cancellation_goes_back_as_an_error_result(fake: FakeProvider) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(anthropic_reply("Cancelled."))
    await resume(anthropic_model(fake), paused, [cancel(interrupts_of(paused)[0])])
    [result] = tool_results(fake.bodies[1])
    assert result["is_error"] is True
    assert result["content"] == '{"error":"Tool execution cancelled"}'


async def test_parallel_tool_uses_pause_together_and_their_results_share_one_user_turn(
    fake: FakeProvider,
) -> None:
    fake.queue(anthropic_reply("Three invoices to pay.", *INVOICES))
    paused = await say(anthropic_model(fake), "pay invoices")
    items = interrupts_of(paused)
    assert [item["toolCallId"] for item in items] == ["toolu_A", "toolu_B", "toolu_C"]
    fake.queue(anthropic_reply("Paid two."))
    await resume(
        anthropic_model(fake), paused, [approve(items[0]), deny(items[1]), approve(items[2])]
    )
    messages = fake.bodies[1]["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "user"]
    assert [block["id"] for block in messages[1]["content"][1:]] == [c.id for c in INVOICES]
    results = messages[2]["content"]
    assert [block["tool_use_id"] for block in results] == ["toolu_A", "toolu_B", "toolu_C"]
    assert [block["is_error"] for block in results] == [False, True, False]
    assert results[1]["content"] == '{"error":"User declined tool execution"}'


async def test_consecutive_turns_of_one_role_are_merged_and_system_text_is_kept_apart(
    fake: FakeProvider,
) -> None:
    fake.queue(anthropic_reply("Hello Ada."))
    history = [
        {"id": "s1", "role": "system", "content": "Answer in English."},
        {"id": "a0", "role": "assistant", "content": "Welcome to the ops desk."},
        {"id": "u1", "role": "user", "content": "I am Ada."},
    ]
    await say(anthropic_model(fake), "Say hello.", history=history)
    body = fake.bodies[0]
    assert body["system"] == f"{INSTRUCTIONS}\n\nAnswer in English."
    assert body["messages"] == [
        {"role": "user", "content": [text("(conversation start)")]},
        {"role": "assistant", "content": [text("Welcome to the ops desk.")]},
        {"role": "user", "content": [text("I am Ada."), text("Say hello.")]},
    ]


async def test_arguments_the_model_got_wrong_become_an_error_result_it_recovers_from(
    fake: FakeProvider,
) -> None:
    broken = Call("toolu_bad", "transfer", '{"recipient": "Ada", "amount": ', 2)
    fixed = call("toolu_ok", "transfer", {"recipient": "Ada", "amount": 25})
    fake.queue(anthropic_reply("", broken), anthropic_reply("Let me fix that.", fixed))
    events = await say(anthropic_model(fake), "transfer 25 to Ada")
    [item] = interrupts_of(events)
    assert item["toolCallId"] == "toolu_ok"
    retry = fake.bodies[1]["messages"]
    assert retry[1]["content"] == [
        {"type": "tool_use", "id": "toolu_bad", "name": "transfer", "input": {}}
    ]
    assert tool_results(fake.bodies[1]) == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_bad",
            "content": '{"error":"Tool transfer arguments are not a JSON object; they were: '
            '{\\"recipient\\": \\"Ada\\", \\"amount\\": "}',
            "is_error": True,
        }
    ]


async def test_a_tool_use_without_input_deltas_is_called_with_an_empty_object(
    fake: FakeProvider,
) -> None:
    frames = [
        frame
        for frame in anthropic_stream("", [Call("toolu_t", "get_local_time", "")])
        if "input_json_delta" not in frame
    ]
    fake.queue(Reply(frames=frames))
    events = await say(anthropic_model(fake), "what time is it")
    [item] = interrupts_of(events)
    assert item["toolCallId"] == "toolu_t" and item["metadata"]["kind"] == "client_tool"
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert args == ["{}"]


async def test_a_rejected_api_key_ends_the_run_with_a_clear_error(fake: FakeProvider) -> None:
    fake.queue(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    events = await say(anthropic_model(fake), "hi")
    assert types_of(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert run_error(events) == ("Anthropic rejected the API key (401): invalid x-api-key")
    assert len(fake.received) == 1


async def test_rate_limits_are_retried_with_backoff_and_then_the_answer_streams(
    fake: FakeProvider,
) -> None:
    limited = anthropic_error(429, "rate_limit_error", "Request rate limit exceeded.")
    fake.queue(limited, anthropic_reply("Here you go."))
    events = await say(anthropic_model(fake, max_retries=2), "hi")
    assert text_of(events) == "Here you go." and events[-1]["type"] == "RUN_FINISHED"
    assert len(fake.received) == 2


async def test_an_overloaded_provider_ends_the_run_after_a_bounded_number_of_retries(
    fake: FakeProvider,
) -> None:
    overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
    fake.queue(overloaded, overloaded, anthropic_reply("never read"))
    events = await say(anthropic_model(fake, max_retries=1), "hi")
    assert run_error(events) == ("Anthropic failed with HTTP 529 (after 1 retries): Overloaded")
    assert len(fake.received) == 2


async def test_a_provider_that_never_answers_times_out_instead_of_hanging(
    fake: FakeProvider,
) -> None:
    fake.queue(Reply(hang_before_headers=True))
    events = await say(anthropic_model(fake, timeout=0.3, max_retries=0), "hi")
    assert types_of(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert run_error(events) == ("Anthropic did not answer within 0.3 s (timed out, 1 attempt).")


async def test_a_stream_that_stalls_midway_times_out_after_the_text_so_far(
    fake: FakeProvider,
) -> None:
    frames = anthropic_stream("Hello there")[:4]  # message_start … the first text delta
    fake.queue(Reply(frames=frames, hang_after_frames=True))
    events = await say(anthropic_model(fake, timeout=0.3, max_retries=0), "hi")
    assert text_of(events) == "Hello"
    assert "Anthropic stopped sending its response: nothing arrived for 0.3 s" in run_error(events)


async def test_an_error_event_inside_the_stream_ends_the_run_with_its_message(
    fake: FakeProvider,
) -> None:
    frames = [
        *anthropic_stream("Hello there")[:4],
        anthropic_stream_error("overloaded_error", "Overloaded"),
    ]
    fake.queue(Reply(frames=frames))
    events = await say(anthropic_model(fake), "hi")
    assert text_of(events) == "Hello"
    assert run_error(events) == ("Anthropic reported an error while streaming: Overloaded")


async def test_events_the_engine_does_not_use_are_skipped(fake: FakeProvider) -> None:
    thinking = [
        anthropic_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
        anthropic_event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "The user greets me."},
            }
        ),
        anthropic_event({"type": "content_block_stop", "index": 0}),
    ]
    stream = anthropic_stream("Hi!")
    stream = [stream[0], *thinking, *(f.replace('"index": 0', '"index": 1') for f in stream[1:])]
    fake.queue(Reply(frames=stream))
    events = await say(anthropic_model(fake), "hi")
    assert text_of(events) == "Hi!" and events[-1]["type"] == "RUN_FINISHED"


async def test_a_connection_cut_midway_ends_the_run_saying_the_stream_broke(
    fake: FakeProvider,
) -> None:
    fake.queue(Reply(frames=anthropic_stream("Hello there")[:4], drop_after_frames=True))
    events = await say(anthropic_model(fake), "hi")
    assert text_of(events) == "Hello"
    assert "Anthropic reported an error while streaming: the connection broke" in run_error(events)
