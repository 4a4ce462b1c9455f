"""The headless client against our server on a real socket (uvicorn), not a buffered transport.

The model holds its reply until the client has shown the first words: that can only happen
if the events reach the client while the run is still going. Then the run pauses for an
approval and the continuation goes over the same socket.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from chat_app.agent.models.base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from chat_app.client import ChatClient, ClientTool, SSEConnection, ToolApprovalInterrupt
from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from tests.live_server import serve_asgi

HOLD_SECONDS = 20  # only if the client never sees the first words: the test then fails


class HeldModel(Model):
    """Says "Checking", waits for the test's go-ahead, then asks to delete a project."""

    name = "held"

    def __init__(self) -> None:
        self.go_ahead = threading.Event()
        self.held_too_long = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.messages[-1].role == "tool":
            yield TextDelta("Deleted.")
            return
        yield TextDelta("Checking")
        self.held_too_long = not await asyncio.to_thread(self.go_ahead.wait, HOLD_SECONDS)
        yield TextDelta(" the project.")
        yield ToolCallDelta(id="call-1", name="delete_project", arguments='{"name": "apollo"}')


@pytest.fixture
def served() -> Iterator[tuple[str, HeldModel]]:
    model = HeldModel()
    with serve_asgi(create_app(build_demo_agent(model)), name="uvicorn") as base:
        try:
            yield base, model
        finally:
            model.go_ahead.set()  # a held stream must end before the server can stop


async def test_events_reach_the_client_while_the_run_goes_on(
    served: tuple[str, HeldModel],
) -> None:
    base, model = served
    manifest = httpx.get(f"{base}/api/tools").json()
    seen_while_held: list[str] = []

    def on_change(client: ChatClient) -> None:
        last = client.messages[-1] if client.messages else None
        if (
            last is not None
            and last.role == "assistant"
            and last.text
            and not model.go_ahead.is_set()
        ):
            seen_while_held.append(last.text)
            model.go_ahead.set()

    client = ChatClient(
        SSEConnection(f"{base}/api/chat", timeout=30),
        tools=ClientTool.from_manifest(manifest, {}),
        on_change=on_change,
    )
    await client.send("delete project apollo")

    assert seen_while_held == ["Checking"]
    assert not model.held_too_long
    (item,) = client.interrupts
    assert isinstance(item, ToolApprovalInterrupt) and item.tool_name == "delete_project"

    await client.resolve_interrupt(item.id, approved=True)
    assert client.interrupts == ()
    assert client.messages[-1].text == "Deleted."
    assert client.status == "ready"


class ThinkingModel(Model):
    """Thinks for `seconds` before its first word, as a reasoning model may for minutes."""

    name = "thinking"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await asyncio.sleep(self.seconds)
        yield TextDelta("Thought it over.")


@pytest.mark.parametrize("heartbeat", [0.05, None])
async def test_a_model_thinking_past_the_read_timeout_is_waited_for_while_the_server_beats(
    heartbeat: float | None,
) -> None:
    """The client gives up on a stream silent for its timeout (1 s here; the app's is
    120 s). A server that beats while its model thinks (3 s) is heard out; one that does
    not is taken for dead, as before."""
    app = create_app(build_demo_agent(ThinkingModel(3.0)), heartbeat_seconds=heartbeat)
    with serve_asgi(app, name="uvicorn") as base:
        client = ChatClient(SSEConnection(f"{base}/api/chat", timeout=1.0))
        await client.send("think about it")
    if heartbeat is not None:
        assert client.error is None
        assert client.messages[-1].text == "Thought it over."
    else:
        assert client.error is not None
        assert "did not answer in time" in client.error.message
