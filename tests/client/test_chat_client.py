"""ChatClient against scripted streams: exact continuation bodies, failures, retry."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from chat_app.client import (
    ChatClient,
    ClientTool,
    MockConnection,
    StreamProcessor,
    TransportError,
    UsageError,
)
from tests.client.builders import approval, plain_tool
from tests.fixtures.loader import load_fixture, parse_sse

FULLSTACK = load_fixture("client-server-fullstack")
RUN_IDS = [body["body"]["runId"] for body in FULLSTACK["bodies"]]


def normalized(body: Mapping[str, Any]) -> dict[str, Any]:
    text = json.dumps(body, sort_keys=True)
    result: dict[str, Any] = json.loads(re.sub(r'"createdAt": "[^"]*"', '"createdAt": "<t>"', text))
    return result


def as_captured(body: Mapping[str, Any]) -> dict[str, Any]:
    """Our body minus what @tanstack/ai-client added after the 0.26 capture and we follow
    (0.33): `metadata.tanstack.toolResult` on tool messages, and the user message keeping
    its `createdAt` across a snapshot."""
    messages = []
    for message in body["messages"]:
        message = dict(message)
        if message["role"] == "tool":
            assert message.pop("metadata") == {"tanstack": {"toolResult": {}}}
        if message["role"] == "user" and "parentRunId" in body:
            message.pop("metadata", None)
        messages.append(message)
    return normalized({**body, "messages": messages})


def scripted(*streams: list[dict[str, Any]] | Exception) -> MockConnection:
    queue = list(streams)

    def handler(body: Mapping[str, object]) -> list[dict[str, Any]]:
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return MockConnection(handler)


def fullstack_client() -> tuple[ChatClient, MockConnection, list[str]]:
    executed: list[str] = []

    def print_tag(args: dict[str, object]) -> dict[str, object]:
        executed.append(str(args["animal"]))
        return {"tag": f"tag_{args['animal']}"}

    # The fixture's tool was a Zod schema: its hashes are over the draft-2020-12 export.
    draft = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    tool = ClientTool(
        name="printTag",
        description="Print",
        input_schema={
            **draft,
            "properties": {"animal": {"type": "string"}},
            "required": ["animal"],
        },
        output_schema={**draft, "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
        needs_approval=True,
        execute=print_tag,
    )
    connection = scripted(*(parse_sse(text) for text in FULLSTACK["streams"]))
    ids = iter(RUN_IDS)
    user_id = FULLSTACK["bodies"][0]["body"]["messages"][0]["id"]
    client = ChatClient(
        connection,
        tools=[tool],
        thread_id="thread-x",
        new_id=lambda: next(ids),
        processor=StreamProcessor(new_id=iter([user_id, "local-1", "local-2"]).__next__),
    )
    return client, connection, executed


async def test_the_approve_then_client_tool_chain_sends_the_captured_js_client_bodies() -> None:
    client, connection, executed = fullstack_client()
    await client.send("print a tag")
    (item,) = client.interrupts
    assert [item.kind, item.id, item.status, item.can_resolve] == [
        FULLSTACK["snap"][0][k] for k in ("kind", "id", "status", "canResolve")
    ]
    await client.resolve_interrupt(item.id, approved=True, edited_args={"animal": "Luna"})
    assert executed == FULLSTACK["executed"]
    assert [as_captured(body) for body in connection.requests] == [
        normalized(body["body"]) for body in FULLSTACK["bodies"]
    ]
    assert len(client.interrupts) == FULLSTACK["finalInterrupts"]
    assert client.messages[-1].text == "printed"
    part = client.messages[1].tool_calls[0]
    assert (part.status, part.output) == ("done", {"tag": "tag_Luna"})


def pause(run: str = "run-1") -> list[dict[str, Any]]:
    tool = plain_tool()
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "u", "role": "user", "content": "go"},
                {
                    "id": "a",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "delete", "arguments": '{"cents":1}'},
                        }
                    ],
                },
            ],
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": run,
            "outcome": {"type": "interrupt", "interrupts": [approval(tool, run=run)]},
        },
    ]


def paused_client(*later: list[dict[str, Any]] | Exception) -> tuple[ChatClient, MockConnection]:
    ids = iter(["run-1", "run-2", "run-3", "run-4"])
    connection = scripted(pause(), *later)
    return ChatClient(
        connection, tools=[plain_tool()], thread_id="t", new_id=lambda: next(ids)
    ), connection


def finished(run: str) -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ok"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run},
    ]


async def test_a_continuation_is_a_fresh_child_run_with_the_full_history() -> None:
    client, connection = paused_client(finished("run-2"))
    await client.send("go")
    await client.resolve_interrupt("approval_c1", approved=True)
    first, second = connection.requests
    assert (second["threadId"], second["runId"], second["parentRunId"]) == ("t", "run-2", "run-1")
    assert list(second) == [
        "threadId",
        "runId",
        "parentRunId",
        "resume",
        "state",
        "messages",
        "tools",
        "context",
        "forwardedProps",
        "data",
    ]
    assert "parentRunId" not in first and "resume" not in first
    messages = second["messages"]
    assert isinstance(messages, list)
    assert [m["id"] for m in messages] == ["u", "a"]


async def test_sending_while_answers_are_owed_is_a_usage_error() -> None:
    client, _ = paused_client()
    await client.send("go")
    with pytest.raises(UsageError, match="pending interrupts"):
        await client.send("again")


async def test_a_correlated_server_refusal_puts_the_errors_on_the_items() -> None:
    refusal = {
        "type": "RUN_ERROR",
        "message": "Approval approval_c1 is wrong.",
        "code": "invalid-payload",
        "metadata": {
            "tanstack": {
                "runId": "run-2",
                "threadId": "t",
                "interruptErrors": [
                    {
                        "scope": "item",
                        "threadId": "t",
                        "interruptedRunId": "run-1",
                        "generation": 0,
                        "interruptId": "approval_c1",
                        "code": "invalid-payload",
                        "message": "wrong",
                        "source": "client",
                        "retryable": False,
                    },
                    {
                        "scope": "batch",
                        "threadId": "t",
                        "interruptedRunId": "run-1",
                        "generation": 0,
                        "code": "item-validation-failed",
                        "message": "invalid",
                        "source": "client",
                        "retryable": False,
                        "interruptIds": ["approval_c1"],
                    },
                ],
            }
        },
    }
    client, _ = paused_client([refusal])
    await client.send("go")
    await client.resolve_interrupt("approval_c1", approved=True)
    (item,) = client.interrupts
    assert (item.status, item.errors[0].message) == ("error", "wrong")
    assert [e.code for e in client.interrupt_errors] == ["item-validation-failed"]
    assert not client.state.can_retry


async def test_a_refusal_for_another_thread_is_treated_as_a_transport_failure() -> None:
    foreign = {
        "type": "RUN_ERROR",
        "message": "no",
        "threadId": "other",
        "metadata": {"tanstack": {"interruptErrors": [{"scope": "item"}]}},
    }
    client, _ = paused_client([foreign])
    await client.send("go")
    await client.resolve_interrupt("approval_c1", approved=True)
    (error,) = client.interrupt_errors
    assert (error.code, error.retryable, error.message) == (
        "transport",
        True,
        "Interrupt continuation could not be started.",
    )


async def test_retry_after_a_network_failure_resends_the_identical_resume() -> None:
    client, connection = paused_client(TransportError("connection refused"), finished("run-3"))
    await client.send("go")
    await client.resolve_interrupt("approval_c1", approved=True)
    assert isinstance(client.error, TransportError)
    assert client.interrupts[0].status == "error" and client.state.can_retry
    await client.retry_interrupts()
    failed, retried = connection.requests[1], connection.requests[2]
    assert retried["resume"] == failed["resume"] and retried["parentRunId"] == "run-1"
    assert retried["runId"] != failed["runId"]
    assert (client.interrupts, client.interrupt_errors) == ((), ()) and client.error is None


async def test_a_stream_that_ends_without_a_terminal_event_is_a_transport_error() -> None:
    client = ChatClient(scripted([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]))
    await client.send("hi")
    assert isinstance(client.error, TransportError)
    assert client.error.message == "The agent's stream ended without finishing the run."
    assert client.status == "error"


async def test_a_run_error_is_reported_on_the_client_without_raising() -> None:
    client = ChatClient(scripted([{"type": "RUN_ERROR", "message": "model down", "code": "x"}]))
    await client.send("hi")
    assert (client.error.code, client.error.message) == ("run-error", "model down")  # type: ignore[union-attr]


NOPE = "Additional properties are not allowed ('nope' was unexpected)"


@pytest.mark.parametrize(
    ("schema", "sent"),
    [
        # Room for a failure: the output's problem goes as the tool's error.
        (
            {"type": "object", "additionalProperties": False,
             "properties": {"tag": {"type": "string"}, "error": {"type": "string"}}},
            {"interruptId": "client_tool_k1", "status": "resolved",
             "payload": {"error": NOPE}},
        ),
        # None: the call is cancelled, rather than wait for a result nobody can give.
        (
            {"type": "object", "required": ["tag"]},
            {"interruptId": "client_tool_k1", "status": "cancelled"},
        ),
    ],
)  # fmt: skip
async def test_a_client_tool_output_that_breaks_its_schema_is_sent_as_its_failure_or_cancelled(
    schema: dict[str, Any], sent: dict[str, Any]
) -> None:
    tool = ClientTool(name="printTag", output_schema=schema, execute=lambda args: {"nope": 1})
    from tests.client.builders import client_call

    stream: list[dict[str, Any]] = [
        {"type": "TOOL_CALL_START", "toolCallId": "k1", "toolCallName": "printTag"},
        {"type": "TOOL_CALL_END", "toolCallId": "k1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "run-1",
            "outcome": {"type": "interrupt", "interrupts": [client_call(tool)]},
        },
    ]
    after = [{"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"},
             {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-2"}]  # fmt: skip
    ids = iter(["run-1", "run-2"])
    connection = scripted(stream, after)
    client = ChatClient(connection, tools=[tool], thread_id="t", new_id=lambda: next(ids))
    await client.send("print")
    assert [request["resume"] for request in connection.requests[1:]] == [[sent]]
    assert (client.interrupt_errors, client.error) == ((), None)
    part = client.messages[-1].tool_calls[0] if client.messages[-1].tool_calls else None
    if "payload" in sent:
        assert part is not None and (part.status, part.error) == ("error", NOPE)


async def test_the_agent_state_goes_back_with_the_next_request() -> None:
    run = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}]
    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}
    connection = scripted(
        [
            *run,
            {"type": "STATE_SNAPSHOT", "snapshot": {"step": 1, "seen": []}},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/seen/-", "value": "a"}]},
            finished,
        ],
        [*run, finished],
    )
    client = ChatClient(connection, thread_id="t")
    await client.send("first")
    assert client.state.agent_state == {"step": 1, "seen": ["a"]}
    await client.send("second")
    assert connection.requests[0]["state"] == {}
    assert connection.requests[1]["state"] == {"step": 1, "seen": ["a"]}
