"""Connections turn every failure into a TransportError, never a hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from ag_ui.core import RunAgentInput

from chat_app.client import InProcessConnection, SSEConnection, TransportError
from chat_app.client._request import build_run_input

BODY = build_run_input(
    thread_id="t", run_id="r", messages=[{"id": "u", "role": "user", "content": "hi"}], tools=[]
)


async def drain(connection: object) -> list[dict[str, object]]:
    return [event async for event in connection.stream(BODY)]  # type: ignore[attr-defined]


def mock(handler: object) -> SSEConnection:
    return SSEConnection("http://agent/api/chat", timeout=1, transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


async def test_sse_events_are_decoded_and_the_request_carries_the_run_id_header() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        text = (
            'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n: comment\n\n'
            'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
        )
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})

    events = await drain(mock(handler))
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert (
        seen[0].headers["X-Run-Id"] == "r" and seen[0].headers["content-type"] == "application/json"
    )


async def test_a_non_200_answer_is_a_transport_error_with_its_status() -> None:
    connection = mock(lambda request: httpx.Response(400, text="Invalid AG-UI request body."))
    with pytest.raises(TransportError) as caught:
        await drain(connection)
    assert caught.value.status_code == 400 and "Invalid AG-UI request body." in caught.value.message
    assert caught.value.retryable


async def test_a_network_failure_is_a_transport_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(TransportError, match="connection refused"):
        await drain(mock(handler))


async def test_a_malformed_event_is_a_transport_error() -> None:
    connection = mock(
        lambda request: httpx.Response(
            200, text="data: {not json\n\n", headers={"content-type": "text/event-stream"}
        )
    )
    with pytest.raises(TransportError, match="not an AG-UI event: event data is not JSON"):
        await drain(connection)


async def test_a_stalled_stream_times_out_instead_of_hanging() -> None:
    release = asyncio.Event()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        chunk = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n")
        writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        await writer.drain()
        await release.wait()  # then say nothing more
        writer.close()

    server = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = SSEConnection(f"http://127.0.0.1:{port}/api/chat", timeout=0.3)
    try:
        with pytest.raises(TransportError, match="did not answer in time"):
            await asyncio.wait_for(drain(connection), timeout=5)
    finally:
        release.set()
        await connection.aclose()
        server.close()
        await server.wait_closed()


async def test_an_in_process_agent_that_crashes_is_a_transport_error() -> None:
    async def run(run_input: RunAgentInput) -> AsyncIterator[dict[str, object]]:
        yield {"type": "RUN_STARTED", "runId": run_input.run_id, "threadId": run_input.thread_id}
        raise RuntimeError("boom")

    with pytest.raises(TransportError, match="boom"):
        await drain(InProcessConnection(run))


async def test_an_in_process_connection_passes_the_parsed_run_input() -> None:
    received: list[RunAgentInput] = []

    async def run(run_input: RunAgentInput) -> AsyncIterator[dict[str, object]]:
        received.append(run_input)
        yield {"type": "RUN_FINISHED", "runId": run_input.run_id, "threadId": run_input.thread_id}

    assert [e["type"] for e in await drain(InProcessConnection(run))] == ["RUN_FINISHED"]
    assert (received[0].thread_id, received[0].messages[0].content) == ("t", "hi")


BAD_BODIES = [
    {**BODY, "messages": [{"id": "u", "role": "user"}]},  # no content
    {**BODY, "messages": [{"id": "u", "role": "pilot", "content": "hi"}]},  # no such role
    {**BODY, "messages": "hi"},
    {key: value for key, value in BODY.items() if key != "runId"},
    {**BODY, "messages": [{"id": "a", "role": "assistant", "toolCalls": [{"id": "c"}]}]},
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=range(len(BAD_BODIES)))
async def test_the_servers_reader_refuses_in_process_what_model_validate_refuses(
    body: dict[str, object],
) -> None:
    """The app reads in-process bodies with the server's `read_run_input` (msgspec views):
    what pydantic refuses is refused, in pydantic's words."""
    from pydantic import ValidationError

    from chat_app.server.run_input import read_run_input

    async def run(run_input: RunAgentInput) -> AsyncIterator[dict[str, object]]:
        yield {"type": "RUN_FINISHED", "runId": run_input.run_id, "threadId": run_input.thread_id}

    with pytest.raises(ValidationError) as expected:
        RunAgentInput.model_validate(body)
    with pytest.raises(TransportError) as refused:
        _ = [event async for event in InProcessConnection(run, read=read_run_input).stream(body)]
    assert str(refused.value) == f"The request is not a valid RunAgentInput: {expected.value}"


async def test_the_servers_reader_gives_the_run_the_same_input() -> None:
    from chat_app.server.run_input import read_run_input

    body = build_run_input(
        thread_id="t", run_id="r", tools=[], resume=[{"interruptId": "i", "status": "cancelled"}],
        parent_run_id="p",
        messages=[
            {"id": "u", "role": "user", "content": "hi"},
            {"id": "a", "role": "assistant", "toolCalls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "tool-c", "role": "tool", "toolCallId": "c", "content": "ok"},
        ],
    )  # fmt: skip
    received: list[RunAgentInput] = []

    async def run(run_input: RunAgentInput) -> AsyncIterator[dict[str, object]]:
        received.append(run_input)
        yield {"type": "RUN_FINISHED", "runId": run_input.run_id, "threadId": run_input.thread_id}

    _ = [event async for event in InProcessConnection(run, read=read_run_input).stream(body)]
    expected = RunAgentInput.model_validate(body)
    assert received[0].model_dump() == expected.model_dump()
