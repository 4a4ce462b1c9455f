"""The OpenAI-compatible adapter driving the demo agent against a fake provider over real HTTP.

Each test queues chat-completion streams (or errors) on the fake server, runs the full `Agent`,
and asserts on the AG-UI events and on the request bodies the server received.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from chat_app.agent.models.openai import OpenAIModel
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from tests.agent.fakes.provider import FakeProvider, Reply
from tests.agent.fakes.streams import (
    Call,
    call,
    openai_chunk,
    openai_error,
    openai_reply,
    openai_stream_error,
    words,
)
from tests.agent.models.builders import (
    INSTRUCTIONS,
    approve,
    cancel,
    deny,
    interrupts_of,
    openai_model,
    reject,
    resume,
    run_error,
    say,
    text_of,
    types_of,
)

TRANSFER = call("call_Xq1", "transfer", {"recipient": "Ada", "amount": 25})
INVOICES = [
    call("call_A", "pay_invoice", {"invoice": "INV-1001", "supplier": "Acme", "amount": 120.5}),
    call("call_B", "pay_invoice", {"invoice": "INV-1002", "supplier": "Globex", "amount": 980}),
    call("call_C", "pay_invoice", {"invoice": "INV-1003", "supplier": "Initech", "amount": 64}),
]


async def pause_for_transfer(fake: FakeProvider) -> list[dict[str, Any]]:
    fake.queue(openai_reply("I'll send 25 to Ada once you approve.", TRANSFER))
    return await say(openai_model(fake), "transfer 25 to Ada")


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [message for message in body["messages"] if message["role"] == "tool"]


async def test_text_streams_piece_by_piece_and_the_run_finishes(fake: FakeProvider) -> None:
    fake.queue(openai_reply("Hello! I can move money and ship orders."))
    events = await say(openai_model(fake), "hi")
    contents = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert contents == words("Hello! I can move money and ship orders.")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["metadata"]["tanstack"]["model"] == "gpt-4o-mini"
    [received] = fake.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test-key"
    assert received.body["model"] == "gpt-4o-mini" and received.body["stream"] is True
    assert received.body["messages"] == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "hi"},
    ]


async def test_the_tools_go_to_the_model_as_functions_with_their_schemas(
    fake: FakeProvider,
) -> None:
    await pause_for_transfer(fake)
    tools = {tool["function"]["name"]: tool for tool in fake.bodies[0]["tools"]}
    assert tools["transfer"] == {
        "type": "function",
        "function": {
            "name": "transfer",
            "description": "Send money to a person.",
            "parameters": {
                "type": "object",
                "properties": {
                    "recipient": {"type": "string", "minLength": 1, "title": "Recipient"},
                    "amount": {
                        "type": "number", "exclusiveMinimum": 0, "maximum": 1000000,
                        "title": "Amount",
                    },
                },
                "required": ["recipient", "amount"],
                "additionalProperties": False,
            },
        },
    }


async def test_a_transfer_pauses_for_approval_with_the_models_tool_call(
    fake: FakeProvider,
) -> None:
    events = await pause_for_transfer(fake)
    [item] = interrupts_of(events)
    assert item["id"] == "approval_call_Xq1" and item["toolCallId"] == "call_Xq1"
    assert item["metadata"]["input"] == {"recipient": "Ada", "amount": 25}
    assert text_of(events) == "I'll send 25 to Ada once you approve."
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert len(args) > 1 and json.loads("".join(args)) == {"recipient": "Ada", "amount": 25}


async def test_an_approved_call_runs_and_its_result_goes_back_as_a_tool_message(
    fake: FakeProvider,
) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(openai_reply("Done: 25 sent to Ada."))
    done = await resume(openai_model(fake), paused, [approve(interrupts_of(paused)[0])])
    assert text_of(done) == "Done: 25 sent to Ada."
    assert done[-1]["type"] == "RUN_FINISHED" and "outcome" not in done[-1]
    messages = fake.bodies[1]["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2] == {
        "role": "assistant",
        "content": "I'll send 25 to Ada once you approve.",
        "tool_calls": [
            {
                "id": "call_Xq1",
                "type": "function",
                "function": {"name": "transfer", "arguments": TRANSFER.arguments},
            }
        ],
    }
    assert messages[3]["tool_call_id"] == "call_Xq1"
    result = json.loads(messages[3]["content"])
    assert result["recipient"] == "Ada" and result["receipt"].startswith("rcpt-")


async def test_a_rejection_goes_back_as_an_error_result_carrying_the_reason(
    fake: FakeProvider,
) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(openai_reply("Understood, I won't send it."))
    await resume(openai_model(fake), paused, [reject(interrupts_of(paused)[0], "Wrong account")])
    assert tool_messages(fake.bodies[1]) == [
        {"role": "tool", "tool_call_id": "call_Xq1", "content": 'Error: {"reason":"Wrong account"}'}
    ]


async def test_a_cancellation_goes_back_as_a_cancelled_result(fake: FakeProvider) -> None:
    paused = await pause_for_transfer(fake)
    fake.queue(openai_reply("Cancelled."))
    await resume(openai_model(fake), paused, [cancel(interrupts_of(paused)[0])])
    [result] = tool_messages(fake.bodies[1])
    assert result["content"] == 'Error: {"error":"Tool execution cancelled"}'


async def test_parallel_calls_interleaved_by_index_each_reach_the_engine_whole(
    fake: FakeProvider,
) -> None:
    fake.queue(openai_reply("", *INVOICES, interleave=True))
    events = await say(openai_model(fake), "pay invoices")
    items = interrupts_of(events)
    assert [item["toolCallId"] for item in items] == ["call_A", "call_B", "call_C"]
    assert [item["metadata"]["input"] for item in items] == [
        json.loads(invoice.arguments) for invoice in INVOICES
    ]
    # One call at a time: START, its ARGS, END, then the next call.
    tool_events = [e for e in events if e["type"].startswith("TOOL_CALL_")]
    owners = [e["toolCallId"] for e in tool_events]
    assert owners == sorted(owners)
    assert [e["type"] for e in tool_events if e["type"] != "TOOL_CALL_ARGS"] == [
        "TOOL_CALL_START",
        "TOOL_CALL_END",
    ] * 3


async def test_parallel_calls_streamed_in_turn_keep_streaming_their_arguments(
    fake: FakeProvider,
) -> None:
    fake.queue(openai_reply("", *INVOICES))
    events = await say(openai_model(fake), "pay invoices")
    for invoice in INVOICES:
        pieces = [
            e["delta"]
            for e in events
            if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == invoice.id
        ]
        assert pieces == invoice.fragments()


async def test_parallel_results_go_back_after_their_calls_in_call_order(
    fake: FakeProvider,
) -> None:
    fake.queue(openai_reply("", *INVOICES, interleave=True))
    paused = await say(openai_model(fake), "pay invoices")
    items = interrupts_of(paused)
    fake.queue(openai_reply("Paid two, skipped one."))
    await resume(
        openai_model(fake),
        paused,
        [approve(items[0]), deny(items[1]), approve(items[2])],
    )
    messages = fake.bodies[1]["messages"]
    assert [message["role"] for message in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
    ]
    assert [call["id"] for call in messages[2]["tool_calls"]] == ["call_A", "call_B", "call_C"]
    assert [message["tool_call_id"] for message in messages[3:]] == ["call_A", "call_B", "call_C"]
    assert messages[4]["content"] == 'Error: {"error":"User declined tool execution"}'
    assert json.loads(messages[5]["content"])["paid"] == "INV-1003"


async def test_arguments_the_model_got_wrong_become_an_error_result_it_recovers_from(
    fake: FakeProvider,
) -> None:
    broken = Call("call_bad", "transfer", '{"recipient": "Ada", "amount": ', 2)
    fixed = call("call_ok", "transfer", {"recipient": "Ada", "amount": 25})
    fake.queue(openai_reply("", broken), openai_reply("Let me fix that.", fixed))
    events = await say(openai_model(fake), "transfer 25 to Ada")
    [item] = interrupts_of(events)
    assert item["toolCallId"] == "call_ok"
    retry = fake.bodies[1]["messages"]
    assert retry[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert tool_messages(fake.bodies[1]) == [
        {
            "role": "tool",
            "tool_call_id": "call_bad",
            "content": 'Error: {"error":"Tool transfer arguments are not a JSON object; they '
            'were: {\\"recipient\\": \\"Ada\\", \\"amount\\": "}',
        }
    ]


async def test_middleware_notes_reach_the_model_as_system_instructions(
    fake: FakeProvider,
) -> None:
    paused = await say(openai_model(fake), "ship order 42")
    assert fake.received == []  # the shipping form is asked before the model runs
    [item] = interrupts_of(paused)
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    metadata = wrap_generic_continuation(continuation)
    answer = {"speed": "express", "giftWrap": True}
    entry = {
        "interruptId": item["id"],
        "status": "resolved",
        "payload": answer,
        "metadata": metadata,
    }
    fake.queue(openai_reply("Order 42 ships express, gift wrapped."))
    done = await resume(openai_model(fake), paused, [entry])
    assert text_of(done) == "Order 42 ships express, gift wrapped."
    system = fake.bodies[0]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(INSTRUCTIONS + "\n\n")
    note = json.loads(system["content"].split("\n\n", 1)[1])
    assert note == {
        "interrupt": "shipping-speed",
        "key": "order-42",
        "status": "resolved",
        "response": answer,
    }


async def test_history_system_messages_stay_in_place_and_developer_becomes_system(
    fake: FakeProvider,
) -> None:
    fake.queue(openai_reply("Sure."))
    history = [
        {"id": "s1", "role": "system", "content": "Answer in English."},
        {"id": "d1", "role": "developer", "content": "Prefer short answers."},
    ]
    await say(openai_model(fake), "hi", history=history)
    assert fake.bodies[0]["messages"][1:] == [
        {"role": "system", "content": "Answer in English."},
        {"role": "system", "content": "Prefer short answers."},
        {"role": "user", "content": "hi"},
    ]


async def test_a_rejected_api_key_ends_the_run_with_a_clear_error(fake: FakeProvider) -> None:
    fake.queue(
        openai_error(
            401,
            "Incorrect API key provided: sk-test***-key. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
    )
    events = await say(openai_model(fake), "hi")
    assert types_of(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "OpenAI rejected the API key (401): Incorrect API key provided" in run_error(events)
    assert events[-1]["code"] == "model-authentication"
    assert len(fake.received) == 1  # a 401 is not retried


async def test_rate_limits_are_retried_with_backoff_and_then_the_answer_streams(
    fake: FakeProvider,
) -> None:
    limited = openai_error(429, "Rate limit reached for gpt-4o-mini.", "requests", None)
    fake.queue(limited, limited, openai_reply("Here you go."))
    events = await say(openai_model(fake, max_retries=2), "hi")
    assert text_of(events) == "Here you go." and events[-1]["type"] == "RUN_FINISHED"
    assert len(fake.received) == 3
    assert [r.headers["x-stainless-retry-count"] for r in fake.received] == ["0", "1", "2"]


async def test_rate_limits_that_persist_end_the_run_after_a_bounded_number_of_retries(
    fake: FakeProvider,
) -> None:
    limited = openai_error(429, "Rate limit reached for gpt-4o-mini.", "requests", None)
    fake.queue(limited, limited, limited, openai_reply("never read"))
    events = await say(openai_model(fake, max_retries=2), "hi")
    message = run_error(events)
    assert "OpenAI is rate limiting requests (429); gave up after 2 retries" in message
    assert "Rate limit reached for gpt-4o-mini." in message
    assert len(fake.received) == 3


async def test_a_provider_that_never_answers_times_out_instead_of_hanging(
    fake: FakeProvider,
) -> None:
    fake.queue(Reply(hang_before_headers=True), Reply(hang_before_headers=True))
    # Long enough that each attempt's request reaches the fake on a loaded machine (at 0.3 s
    # a fresh-clone run once saw the second attempt time out before it was received).
    events = await say(openai_model(fake, timeout=1.5, max_retries=1), "hi")
    assert types_of(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert run_error(events) == ("OpenAI did not answer within 1.5 s (timed out, 2 attempts).")
    assert len(fake.received) == 2


async def test_a_stream_that_stalls_midway_times_out_after_the_text_so_far(
    fake: FakeProvider,
) -> None:
    frames = [openai_chunk({"role": "assistant", "content": ""}), openai_chunk({"content": "Hel"})]
    fake.queue(Reply(frames=frames, hang_after_frames=True))
    events = await say(openai_model(fake, timeout=0.3, max_retries=0), "hi")
    assert text_of(events) == "Hel"
    assert "OpenAI stopped sending its response: nothing arrived for 0.3 s" in run_error(events)


async def test_an_error_inside_the_stream_ends_the_run_with_the_providers_message(
    fake: FakeProvider,
) -> None:
    frames = [openai_chunk({"content": "Hi"}), openai_stream_error("The server had an error.")]
    fake.queue(Reply(frames=frames))
    events = await say(openai_model(fake), "hi")
    assert run_error(events) == (
        "OpenAI reported an error while streaming: The server had an error."
    )


async def test_an_unreachable_server_is_reported_with_its_address() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIModel(
        "llama3.1",
        api_key="ollama",
        base_url=f"http://127.0.0.1:{port}/v1",
        provider_name="Ollama",
        settings={"max_retries": 0, "timeout": 2},
    )
    events = await say(model, "hi")
    assert f"Could not reach Ollama at http://127.0.0.1:{port}/v1/" in run_error(events)


def tool_chunk(**part: Any) -> str:
    return openai_chunk({"tool_calls": [part]})


def fn(name: str | None = None, arguments: str = "") -> dict[str, Any]:
    return {"name": name, "arguments": arguments} if name else {"arguments": arguments}


async def test_a_server_that_sends_each_call_in_one_chunk_is_understood(
    fake: FakeProvider,
) -> None:
    # Ollama's style: every call whole in a single chunk.
    deploy = fn("deploy", '{"service": "api", "version": "1.2"}')
    delete = fn("delete_project", '{"name": "apollo"}')
    frames = [
        tool_chunk(index=0, id="call_1", type="function", function=deploy),
        tool_chunk(index=1, id="call_2", type="function", function=delete),
        openai_chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
    ]
    fake.queue(Reply(frames=frames))
    events = await say(openai_model(fake), "deploy")
    items = interrupts_of(events)
    assert [(i["toolCallId"], i["metadata"]["input"]) for i in items[:2]] == [
        ("call_1", {"service": "api", "version": "1.2"}),
        ("call_2", {"name": "apollo"}),
    ]


async def test_a_server_that_numbers_every_call_zero_still_yields_separate_calls(
    fake: FakeProvider,
) -> None:
    frames = [
        tool_chunk(index=0, id="call_1", type="function", function=fn("delete_project")),
        tool_chunk(index=0, function=fn(None, '{"name": "apollo"}')),
        tool_chunk(index=0, id="call_2", type="function", function=fn("delete_project")),
        tool_chunk(index=0, function=fn(None, '{"name": "gemini"}')),
        openai_chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
    ]
    fake.queue(Reply(frames=frames))
    events = await say(openai_model(fake), "delete both projects")
    assert [i["metadata"]["input"] for i in interrupts_of(events)] == [
        {"name": "apollo"},
        {"name": "gemini"},
    ]


async def test_a_server_that_leaves_out_the_index_is_followed_by_call_id(
    fake: FakeProvider,
) -> None:
    frames = [
        tool_chunk(id="call_1", type="function", function=fn("delete_project", '{"name":')),
        tool_chunk(function=fn(None, ' "apollo"}')),
        tool_chunk(id="call_2", type="function", function=fn("delete_project", '{"name":')),
        tool_chunk(id="call_2", function=fn(None, ' "gemini"}')),
        openai_chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
    ]
    fake.queue(Reply(frames=frames))
    events = await say(openai_model(fake), "delete both projects")
    assert [(i["toolCallId"], i["metadata"]["input"]) for i in interrupts_of(events)] == [
        ("call_1", {"name": "apollo"}),
        ("call_2", {"name": "gemini"}),
    ]


async def test_a_connection_cut_midway_ends_the_run_saying_the_stream_broke(
    fake: FakeProvider,
) -> None:
    frames = [openai_chunk({"role": "assistant", "content": ""}), openai_chunk({"content": "Hel"})]
    fake.queue(Reply(frames=frames, drop_after_frames=True))
    events = await say(openai_model(fake), "hi")
    assert text_of(events) == "Hel"
    assert "OpenAI reported an error while streaming: the connection broke" in run_error(events)


async def test_a_stream_that_ends_before_its_finish_reason_ends_the_run_saying_so(
    fake: FakeProvider,
) -> None:
    """A server that closes the response cleanly mid-answer (no `finish_reason`, no
    `[DONE]`): what came is not a whole reply, and the run says so rather than finishing."""
    frames = [openai_chunk({"role": "assistant", "content": ""}), openai_chunk({"content": "Hel"})]
    fake.queue(Reply(frames=frames))
    events = await say(openai_model(fake), "hi")
    assert text_of(events) == "Hel"
    assert run_error(events) == (
        "OpenAI's response could not be read as a stream: it ended before the response was "
        "complete (no chunk said why it finished): the connection was cut, or the server "
        "stopped mid-answer."
    )


async def test_a_server_that_does_not_stream_is_named_as_such(fake: FakeProvider) -> None:
    """`stream: true` ignored: one chat completion as JSON, which has no events to read."""
    completion = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1746717101,
        "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Hello!"}}],
    }  # fmt: skip
    fake.queue(Reply(body=completion))
    events = await say(openai_model(fake), "hi")
    assert "it does not honour `stream: true`" in run_error(events)
    assert "RUN_FINISHED" not in [event["type"] for event in events]


async def test_an_event_that_is_not_json_is_said_as_the_providers(fake: FakeProvider) -> None:
    fake.queue(Reply(frames=[openai_chunk({"content": "Hi"}), "data: {this is not json\n\n"]))
    events = await say(openai_model(fake), "hi")
    assert run_error(events).startswith(
        "OpenAI's response could not be read as a stream: an event's data is not JSON ("
    )
