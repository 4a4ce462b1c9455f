"""A client that leaves mid-stream stops the run, on a real socket (uvicorn): the model's
stream is cancelled where it waits, and what it would have done next never happens."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from chat_app.agent.models.base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from chat_app.demo import build_demo_agent
from chat_app.interrupts import SSE_HEADERS
from chat_app.server import create_app
from chat_app.server.app import EventStream
from tests.live_server import serve_asgi
from tests.server.test_fuzz import fresh_body, sse_events


class SlowModel(Model):
    """Says "Working", then thinks for a long time before asking for a tool."""

    name = "slow"

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.went_on = threading.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.messages[-1].content == "hello":
            yield TextDelta("Hi there.")
            return
        yield TextDelta("Working")
        try:
            await asyncio.sleep(30)
        finally:
            self.stopped.set()
        self.went_on.set()
        yield ToolCallDelta(id="call-1", name="get_local_time", arguments="{}")


@pytest.fixture
def served() -> Iterator[tuple[str, SlowModel]]:
    model = SlowModel()
    with serve_asgi(create_app(build_demo_agent(model)), name="uvicorn") as base:
        yield base, model


def test_a_client_that_leaves_stops_the_run(served: tuple[str, SlowModel]) -> None:
    base, model = served
    with httpx.Client(timeout=10) as client:
        with client.stream(
            "POST", f"{base}/api/chat", json=fresh_body("what time is it")
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            for line in response.iter_lines():
                if '"TEXT_MESSAGE_CONTENT"' in line:
                    break  # the model is now thinking; leave
        # Leaving the block without reading the rest closes the connection.
    assert model.stopped.wait(10), "the run went on after the client left"
    assert not model.went_on.is_set()


def test_after_a_client_left_the_next_one_gets_its_whole_stream(
    served: tuple[str, SlowModel],
) -> None:
    base, model = served
    with httpx.Client(timeout=10) as client:
        with client.stream(
            "POST", f"{base}/api/chat", json=fresh_body("what time is it")
        ) as response:
            next(line for line in response.iter_lines() if "TEXT_MESSAGE_CONTENT" in line)
        assert model.stopped.wait(10)
        events = sse_events(client.post(f"{base}/api/chat", json=fresh_body("hello")).text)
    assert [event["type"] for event in events] == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]  # fmt: skip
    assert events[2]["delta"] == "Hi there."


# The same response driven directly, for the cancellations a socket cannot time: whose
# cancel it is decides whether the response ends quietly or the cancel goes on up.


async def _events(closed: list[str]) -> AsyncIterator[str]:
    try:
        yield "data: 1\n\n"
        await asyncio.sleep(30)  # the run waits on its model
        yield "data: 2\n\n"
    finally:
        closed.append("closed")


def _start(gone: asyncio.Event, closed: list[str], sent: list[str]) -> asyncio.Task[None]:
    async def receive() -> dict[str, str]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(str(message["type"]))

    response = EventStream(_events(closed), headers=SSE_HEADERS)
    return asyncio.ensure_future(response({"type": "http"}, receive, send))  # type: ignore[arg-type]


async def test_a_client_leaving_ends_the_response_quietly_and_closes_the_run() -> None:
    gone = asyncio.Event()
    closed: list[str] = []
    sent: list[str] = []
    task = _start(gone, closed, sent)
    await asyncio.sleep(0.05)
    gone.set()
    await asyncio.wait_for(task, 5)  # returns: nobody else asked for a cancel
    assert closed == ["closed"] and task.cancelling() == 0
    assert sent == ["http.response.start", "http.response.body"]


async def test_a_cancel_from_elsewhere_goes_on_up_and_still_closes_the_run() -> None:
    gone = asyncio.Event()
    closed: list[str] = []
    sent: list[str] = []
    task = _start(gone, closed, sent)
    await asyncio.sleep(0.05)
    task.cancel()  # a shutdown, a timeout
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["closed"]


async def test_a_cancel_from_elsewhere_as_the_client_leaves_is_not_swallowed() -> None:
    gone = asyncio.Event()
    closed: list[str] = []
    sent: list[str] = []
    task = _start(gone, closed, sent)
    await asyncio.sleep(0.05)
    gone.set()
    task.cancel()  # in the same turn of the loop
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["closed"]
