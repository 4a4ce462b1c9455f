"""A remote agent that misbehaves: each failure reaches the client in words, and Retry works.

One real HTTP server (uvicorn on 127.0.0.1) runs the demo agent; each test makes its chat
route or its tool manifest misbehave one way (`Switch`), and the client, over a real socket,
reports it as a person would need it: which agent, what it answered, what the server said.
The message the person sent stays in the history, and `resend()` runs it again once the
server is fixed; a failed decision stays answerable and `retry_interrupts()` sends it again.
The in-process agent's crashes, and failures on the client's side, end the run the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

import httpx
import pytest
from ag_ui.core import RunAgentInput
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.types import ASGIApp, Receive, Scope, Send

from chat_app.client import (
    ChatClient,
    ClientError,
    InProcessConnection,
    MockConnection,
    RunError,
    SSEConnection,
    StreamProcessor,
    StreamState,
    ToolApprovalInterrupt,
    TransportError,
    fetch_manifest,
)
from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from tests.live_server import free_port, serve_asgi

#: Builds the answer to one request.
Handler = Callable[[Request], Awaitable[Response]]


class Switch:
    """The demo agent's server, with its chat route and its manifest replaceable per test."""

    def __init__(self, real: ASGIApp) -> None:
        self.real = real
        self.chat: Handler | None = None
        self.tools: Handler | None = None
        #: Set when the test ends: a handler that holds a request open lets go.
        self.release = threading.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        handler = {"/api/chat": self.chat, "/api/tools": self.tools}.get(str(path))
        if handler is None:
            await self.real(scope, receive, send)
            return
        response = await handler(Request(scope, receive))
        await response(scope, receive, send)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Switch]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
        switch = Switch(create_app(build_demo_agent()))
    with serve_asgi(switch, name="the misbehaving agent") as base:
        yield base, switch


@pytest.fixture
def agent(server: tuple[str, Switch]) -> Iterator[tuple[str, Switch]]:
    base, switch = server
    switch.release.clear()
    try:
        yield base, switch
    finally:
        switch.chat = switch.tools = None
        switch.release.set()


def answer(response: Response) -> Handler:
    async def handler(request: Request) -> Response:
        return response

    return handler


def stream(*frames: str, fail: bool = False) -> Handler:
    """An SSE answer carrying `frames` (each the text after `data: `); with `fail`, the server
    crashes after them, so the connection breaks in the middle of the body."""

    async def handler(request: Request) -> Response:
        run = json.loads(await request.body())

        async def body() -> AsyncIterator[bytes]:
            for frame in frames:
                text = frame.replace("{thread}", run["threadId"]).replace("{run}", run["runId"])
                yield f"data: {text}\n\n".encode()
            if fail:
                raise RuntimeError("the agent crashed mid-run (on purpose, in a test)")

        return StreamingResponse(body(), media_type="text/event-stream")

    return handler


STARTED = '{"type":"RUN_STARTED","threadId":"{thread}","runId":"{run}"}'
TEXT_START = '{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}'
TEXT = '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Half a rep"}'


def down(base: str) -> str:
    return f"The agent at {base}/api/chat answered HTTP 500: database is down"


def real_tools(base: str) -> list[dict[str, Any]]:
    """The demo agent's own manifest entries (ask before the test replaces the route)."""
    entries: list[dict[str, Any]] = httpx.get(f"{base}/api/tools").json()["tools"]
    return entries


def client_for(base: str, *, timeout: float = 5.0) -> ChatClient:
    return ChatClient(SSEConnection(f"{base}/api/chat", timeout=timeout))


async def failed_send(client: ChatClient, text: str = "hello") -> ClientError:
    await client.send(text)
    assert client.status == "error" and client.error is not None
    assert client.state.can_resend and not client.state.can_retry
    assert [m.text for m in client.messages if m.role == "user"] == [text]  # kept
    assert client.state.error == client.error.message
    assert not client.state.refused  # a failure of the run, shown as the run's error
    return client.error


# --- the agent's answer ---------------------------------------------------------------


async def test_an_agent_that_refuses_the_connection_is_named_with_the_reason() -> None:
    url = f"http://127.0.0.1:{free_port()}/api/chat"
    client = ChatClient(SSEConnection(url, timeout=5))
    error = await failed_send(client)
    assert isinstance(error, TransportError)
    assert error.message == f"Could not reach the agent at {url}: connection refused."


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (JSONResponse({"error": "Sign in first."}, 401), "HTTP 401: Sign in first."),
        (
            PlainTextResponse("Only finance may do that.", 403),
            "HTTP 403: Only finance may do that.",
        ),
        (PlainTextResponse("Not Found", 404), "HTTP 404: Not Found"),
        (
            JSONResponse({"error": {"message": "The request body is over 4 MiB."}}, 413),
            "HTTP 413: The request body is over 4 MiB.",
        ),
        (JSONResponse({"error": "database is down"}, 500), "HTTP 500: database is down"),
        (Response(b"", 500), "HTTP 500 (Internal Server Error)"),
        (
            HTMLResponse("<html><head><title>502 Bad Gateway</title></head><body>…", 502),
            "HTTP 502: 502 Bad Gateway",
        ),
    ],
    ids=["401-json", "403-text", "404", "413-nested-json", "500-json", "500-empty", "502-html"],
)
async def test_an_error_status_shows_the_status_and_what_the_server_said(
    agent: tuple[str, Switch], response: Response, said: str
) -> None:
    base, switch = agent
    switch.chat = answer(response)
    error = await failed_send(client_for(base))
    assert isinstance(error, TransportError) and error.status_code == response.status_code
    assert error.message == f"The agent at {base}/api/chat answered {said}"


async def test_a_long_error_body_is_trimmed_to_one_line() -> None:
    from chat_app.client._http import server_message

    said = server_message(("line one\n\n" + "x" * 1000).encode())
    assert said.startswith("line one xxx") and said.endswith("…") and len(said) == 300


async def test_a_web_page_instead_of_an_event_stream_says_so(agent: tuple[str, Switch]) -> None:
    base, switch = agent
    switch.chat = answer(HTMLResponse("<html><body>Welcome to the ops portal</body></html>"))
    error = await failed_send(client_for(base))
    assert error.message == (
        f"The agent at {base}/api/chat answered with a web page (text/html) instead of an "
        "event stream: is that address its AG-UI endpoint?"
    )


async def test_an_agent_that_sends_nothing_times_out(agent: tuple[str, Switch]) -> None:
    base, switch = agent

    async def silent(request: Request) -> Response:
        await asyncio.to_thread(switch.release.wait, 30)  # until the test ends
        return Response(status_code=204)

    switch.chat = silent
    error = await failed_send(client_for(base, timeout=0.5))
    assert error.message == (
        f"The agent at {base}/api/chat did not answer in time: nothing came within 0.5 s."
    )


# --- the stream ---------------------------------------------------------------------


async def test_a_stream_cut_off_mid_run_says_so_and_the_half_reply_goes_on_retry(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.chat = stream(STARTED, TEXT_START, TEXT, fail=True)
    tools = fetch_manifest(f"{base}/api/tools").tools
    client = ChatClient(SSEConnection(f"{base}/api/chat"), tools=tools)
    error = await failed_send(client, "delete project apollo")
    assert isinstance(error, TransportError)
    assert error.message.startswith(
        f"The agent at {base}/api/chat cut its stream off in the middle of the run ("
    )
    assert client.messages[-1].text == "Half a rep"  # what came is shown until the retry

    switch.chat = None  # the agent is back
    await client.resend()
    assert client.error is None and not client.state.can_resend
    assert [m.role for m in client.messages] == ["user", "assistant"]
    assert "Half a rep" not in client.messages[-1].text
    assert isinstance(client.interrupts[0], ToolApprovalInterrupt)


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ("[1, 2]", "event data must be a JSON object."),
        ('{"hello": "world"}', '{"hello": "world"} has no type.'),
        ('{"type": "BANANA"}', '{"type": "BANANA"} has a type AG-UI does not know.'),
        (
            '{"type":"TEXT_MESSAGE_CONTENT","messageId":5,"delta":"hi"}',
            "a TEXT_MESSAGE_CONTENT event whose messageId is invalid "
            "(Input should be a valid string).",
        ),
        ('{"type":"RUN_FINISHED","runId":"r"}', "a RUN_FINISHED event without its threadId."),
        ("not json", "event data is not JSON: Expecting value."),
    ],
    ids=["json-not-an-object", "no-type", "unknown-type", "invalid-field", "missing-field", "text"],
)
async def test_something_that_is_not_an_ag_ui_event_is_named(
    agent: tuple[str, Switch], frame: str, why: str
) -> None:
    base, switch = agent
    switch.chat = stream(STARTED, frame)
    error = await failed_send(client_for(base))
    assert isinstance(error, TransportError)
    assert error.message == f"The agent sent something that is not an AG-UI event: {why}"


async def test_a_stream_that_ends_without_finishing_the_run_says_so(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.chat = stream(STARTED, TEXT_START, TEXT)
    error = await failed_send(client_for(base))
    assert error.message == "The agent's stream ended without finishing the run."


async def test_a_run_error_is_shown_in_the_agent_s_words_and_can_be_sent_again(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.chat = stream(
        STARTED, '{"type":"RUN_ERROR","message":"The model is overloaded.","code":"busy"}'
    )
    client = client_for(base)
    error = await failed_send(client, "what time is it")
    assert isinstance(error, RunError) and error.message == "The model is overloaded."
    switch.chat = None
    await client.resend()
    assert client.status == "ready" and len(client.messages) == 2


async def test_a_failed_send_survives_a_restore_with_its_error_and_its_retry(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.chat = answer(JSONResponse({"error": "database is down"}, 500))
    tools = fetch_manifest(f"{base}/api/tools").tools
    client = ChatClient(SSEConnection(f"{base}/api/chat"), tools=tools)
    await failed_send(client, "delete project apollo")
    restored = ChatClient.restore(
        client.state.to_json(), SSEConnection(f"{base}/api/chat"), tools=tools
    )
    assert restored.state.error == down(base)
    assert restored.state.can_resend
    switch.chat = None
    await restored.resend()
    assert restored.error is None and isinstance(restored.interrupts[0], ToolApprovalInterrupt)


async def test_a_decision_whose_continuation_fails_stays_answerable_with_retry(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    manifest = fetch_manifest(f"{base}/api/tools")
    client = ChatClient(SSEConnection(f"{base}/api/chat", timeout=5), tools=manifest.tools)
    await client.send("delete project apollo")
    (item,) = client.interrupts
    switch.chat = answer(JSONResponse({"error": "database is down"}, 500))
    await client.resolve_interrupt(item.id, approved=True)
    assert client.error is not None
    assert client.error.message == down(base)
    assert client.state.can_retry and not client.state.can_resend
    assert [(i.id, i.status) for i in client.interrupts] == [(item.id, "error")]

    switch.chat = None
    await client.retry_interrupts()
    assert client.error is None and client.interrupts == ()
    (call,) = [part for message in client.messages for part in message.tool_calls]
    assert (call.name, call.status) == ("delete_project", "done")


# --- the tool manifest --------------------------------------------------------------


async def test_a_bare_list_manifest_is_read_and_types_the_approvals(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.tools = answer(JSONResponse(real_tools(base)))  # [{...}, {...}]: no "tools" key
    manifest = fetch_manifest(f"{base}/api/tools")
    assert manifest.found and manifest.problems == ()
    assert {tool.name for tool in manifest.tools} >= {"transfer", "delete_project"}
    client = ChatClient(SSEConnection(f"{base}/api/chat"), tools=manifest.tools)
    await client.send("transfer 25 to Ada")
    (item,) = client.interrupts
    assert isinstance(item, ToolApprovalInterrupt) and item.can_resolve  # typed by its schemas


async def test_a_tools_object_manifest_is_read(agent: tuple[str, Switch]) -> None:
    base, _ = agent
    manifest = fetch_manifest(f"{base}/api/tools")
    assert manifest.found and manifest.problems == () and len(manifest.tools) > 5


async def test_a_missing_manifest_says_so_and_is_not_found(agent: tuple[str, Switch]) -> None:
    base, switch = agent
    switch.tools = answer(PlainTextResponse("Not Found", 404))
    manifest = fetch_manifest(f"{base}/api/tools")
    assert (manifest.found, manifest.tools) == (False, ())
    assert manifest.problems == (f"There is no tool manifest at {base}/api/tools (HTTP 404).",)


async def test_an_unreachable_manifest_says_so() -> None:
    url = f"http://127.0.0.1:{free_port()}/api/tools"
    manifest = fetch_manifest(url)
    assert not manifest.found
    assert manifest.problems == (f"Could not read the tool manifest at {url}: connection refused.",)


@pytest.mark.parametrize(
    ("response", "why"),
    [
        (PlainTextResponse("tools: transfer"), "Expecting value"),
        (HTMLResponse("<html><body>Sign in</body></html>"), "it is a web page (text/html)"),
    ],
    ids=["text", "html"],
)
async def test_a_manifest_that_is_not_json_says_so(
    agent: tuple[str, Switch], response: Response, why: str
) -> None:
    base, switch = agent
    switch.tools = answer(response)
    manifest = fetch_manifest(f"{base}/api/tools")
    assert not manifest.found
    assert manifest.problems == (f"The tool manifest at {base}/api/tools is not JSON: {why}.",)


async def test_a_manifest_that_is_not_a_list_of_tools_says_what_it_is(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    switch.tools = answer(JSONResponse({"tools": "transfer"}))
    manifest = fetch_manifest(f"{base}/api/tools")
    assert not manifest.found
    assert manifest.problems == (
        f'The tool manifest at {base}/api/tools has no list of tools: its "tools" is a string.',
    )


async def test_entries_the_client_cannot_use_are_named_and_the_rest_are_used(
    agent: tuple[str, Switch],
) -> None:
    base, switch = agent
    transfer = next(entry for entry in real_tools(base) if entry["name"] == "transfer")
    entries: list[Any] = [
        transfer,
        {"description": "no name"},
        {"name": "lookup", "inputSchema": "a string"},
        {"name": "search", "inputSchema": {"type": "bogus"}},
        42,
        {"name": "transfer"},
        {"name": "ping", "needsApproval": "yes"},
        {"name": "ok"},
    ]
    switch.tools = answer(JSONResponse(entries))
    where = f"the tool manifest at {base}/api/tools"
    manifest = fetch_manifest(f"{base}/api/tools")
    assert manifest.found and [tool.name for tool in manifest.tools] == ["transfer", "ok"]
    assert manifest.problems == (
        f"Tool entry 2 in {where} was left out: it has no name.",
        f"Tool entry 3 (lookup) in {where} was left out: its inputSchema is a string, "
        "not a JSON Schema object.",
        f"Tool entry 4 (search) in {where} was left out: its inputSchema is not a valid "
        "JSON Schema.",
        f"Tool entry 5 in {where} was left out: it is a number, not an object.",
        f"Tool entry 6 (transfer) in {where} was left out: an earlier entry is also named "
        "transfer.",
        f"Tool entry 7 (ping) in {where} was left out: its needsApproval is a string, "
        "not true or false.",
    )
    # The agent has these, though nothing here can use them (a second transfer is not one).
    assert manifest.left_out == ("lookup", "search", "ping")


# --- the in-process agent -----------------------------------------------------------


async def test_an_in_process_agent_that_crashes_ends_the_run_visibly_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crash = True

    async def run(run_input: RunAgentInput) -> AsyncIterator[dict[str, object]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        yield {"type": "RUN_STARTED", **ids}
        if crash:
            raise KeyError("ledger")
        yield {"type": "RUN_FINISHED", **ids}

    client = ChatClient(InProcessConnection(run))
    with caplog.at_level(logging.ERROR, logger="chat_app.client"):
        error = await failed_send(client)
    assert error.message == "The in-process agent failed: 'ledger'"
    assert any(record.exc_info for record in caplog.records)  # with its traceback
    crash = False
    await client.resend()
    assert client.status == "ready" and client.error is None


async def test_a_client_side_failure_while_reading_a_run_ends_it_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(StreamProcessor):
        def apply(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
            if event.get("type") == "TEXT_MESSAGE_CONTENT":
                raise ValueError("a bug on this side")
            return super().apply(state, event)

    def events(body: Mapping[str, object]) -> list[dict[str, object]]:
        ids = {"threadId": body["threadId"], "runId": body["runId"]}
        return [
            {"type": "RUN_STARTED", **ids},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
            {"type": "RUN_FINISHED", **ids},
        ]

    client = ChatClient(MockConnection(events), processor=Broken())
    with caplog.at_level(logging.ERROR, logger="chat_app.client"):
        error = await failed_send(client)
    assert error.message == "The agent's answer could not be read: a bug on this side"
    assert any(record.exc_info for record in caplog.records)
