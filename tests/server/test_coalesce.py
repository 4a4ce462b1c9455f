"""`send_coalesced`: one write per burst, nothing held back across a real wait, and the
response's start sent with its first body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from chat_app.server._coalesce import HEARTBEAT, MAX_BURST_TURNS, send_coalesced

START = {"type": "http.response.start", "status": 200, "headers": []}


async def _collect(
    chunks: AsyncIterator[str], heartbeat: float | None = None
) -> list[tuple[bytes, bool]]:
    sent: list[tuple[bytes, bool]] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            sent.append((message["body"], message["more_body"]))

    await send_coalesced(START, chunks, send, "utf-8", heartbeat=heartbeat)
    return sent


async def test_a_burst_is_one_write_and_the_last_one_ends_the_body() -> None:
    async def chunks() -> AsyncIterator[str]:
        yield "a"
        await asyncio.sleep(0)  # a model that lets the loop turn between words
        yield "b"
        yield "c"

    assert await _collect(chunks()) == [(b"abc", False)]


async def test_what_follows_a_real_wait_is_sent_after_what_came_before() -> None:
    sent_before_wait: list[int] = []
    sent: list[tuple[bytes, bool]] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            sent.append((message["body"], message["more_body"]))

    async def chunks() -> AsyncIterator[str]:
        yield "start"
        await asyncio.sleep(0.05)  # the ledger's commit, a token's delay
        sent_before_wait.append(len(sent))
        yield "end"

    await send_coalesced(START, chunks(), send, "utf-8")
    assert sent_before_wait == [1]  # "start" went out while the stream waited
    assert sent == [(b"start", True), (b"end", False)]


async def test_a_stream_that_raises_sends_what_it_made_then_raises() -> None:
    async def chunks() -> AsyncIterator[str]:
        yield "a"
        raise ValueError("broken")

    sent: list[tuple[bytes, bool]] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            sent.append((message["body"], message["more_body"]))

    with pytest.raises(ValueError, match="broken"):
        await send_coalesced(START, chunks(), send, "utf-8")
    assert sent == [(b"a", True)]  # not ended: the client sees a broken stream


async def test_a_cancel_closes_the_stream_before_it_returns() -> None:
    closed: list[str] = []

    async def chunks() -> AsyncIterator[str]:
        try:
            yield "a"
            await asyncio.sleep(30)
            yield "b"
        finally:
            closed.append("closed")

    async def send(message: Any) -> None:
        pass

    task = asyncio.ensure_future(send_coalesced(START, chunks(), send, "utf-8"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["closed"]


async def test_a_stream_that_never_waits_still_goes_out_as_it_goes() -> None:
    """A producer that only ever lets the loop turn (never a real wait) is not held until
    its end: a burst is cut after `MAX_BURST_TURNS` turns."""

    async def chunks() -> AsyncIterator[str]:
        for n in range(3 * MAX_BURST_TURNS):
            yield f"{n},"
            await asyncio.sleep(0)

    sent = await _collect(chunks())
    assert len(sent) >= 3
    assert (
        b"".join(body for body, _ in sent)
        == "".join(f"{n}," for n in range(3 * MAX_BURST_TURNS)).encode()
    )
    assert [more for _, more in sent] == [True] * (len(sent) - 1) + [False]


async def test_the_start_waits_for_the_first_body_and_goes_out_in_its_turn() -> None:
    """Status and headers are held while the stream works towards its first event, then sent
    with nothing between them and that event's write: not a turn of the loop."""
    sent: list[str] = []
    turns = 0  # callbacks run of those each send schedules: one per turn of the loop

    def turned() -> None:
        nonlocal turns
        turns += 1

    async def send(message: Any) -> None:
        sent.append(f"{message['type']} after {turns}")
        asyncio.get_running_loop().call_soon(turned)

    async def chunks() -> AsyncIterator[str]:
        await asyncio.sleep(0.05)  # checks before the run's first event
        assert sent == []
        yield "first"
        await asyncio.sleep(0.05)
        yield "last"

    await send_coalesced(START, chunks(), send, "utf-8")
    assert sent == [
        "http.response.start after 0",
        "http.response.body after 0",  # the start's callback had not run: the same turn
        "http.response.body after 2",
    ]


async def test_a_stream_that_raises_before_its_first_chunk_sends_nothing() -> None:
    """Nothing started, so the server can still answer the error with a status of its own."""

    async def chunks() -> AsyncIterator[str]:
        raise ValueError("broken")
        yield "never"

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    with pytest.raises(ValueError, match="broken"):
        await send_coalesced(START, chunks(), send, "utf-8")
    assert sent == []


async def test_an_empty_stream_still_starts_and_ends_the_response() -> None:
    async def chunks() -> AsyncIterator[str]:
        return
        yield "never"

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    await send_coalesced(START, chunks(), send, "utf-8")
    assert sent == [START, {"type": "http.response.body", "body": b"", "more_body": False}]


async def test_a_quiet_stream_sends_a_comment_each_heartbeat_and_nothing_else_changes() -> None:
    """A model thinking before its first word: the response starts with a comment after one
    heartbeat of quiet, and another follows each heartbeat after, between the events."""
    messages: list[dict[str, Any]] = []
    beats = {2: asyncio.Event(), 4: asyncio.Event()}

    async def send(message: Any) -> None:
        messages.append(message)
        count = sum(m.get("body") == HEARTBEAT for m in messages)
        if count in beats:
            beats[count].set()

    async def chunks() -> AsyncIterator[str]:
        await beats[2].wait()  # quiet until two heartbeats went out
        yield "data: first\n\n"
        await beats[4].wait()
        yield "data: last\n\n"

    await send_coalesced(START, chunks(), send, "utf-8", heartbeat=0.05)
    assert messages[0] == START  # sent with the first heartbeat, not held for the first event
    assert [(m["body"], m["more_body"]) for m in messages[1:]] == [
        (HEARTBEAT, True),
        (HEARTBEAT, True),
        (b"data: first\n\n", True),
        (HEARTBEAT, True),
        (HEARTBEAT, True),
        (b"data: last\n\n", False),
    ]


async def test_without_a_heartbeat_a_quiet_stream_sends_nothing_while_quiet() -> None:
    async def chunks() -> AsyncIterator[str]:
        await asyncio.sleep(0.2)
        yield "data: first\n\n"

    assert await _collect(chunks()) == [(b"data: first\n\n", False)]


async def test_a_heartbeat_of_no_time_is_refused_not_sent_on_every_turn() -> None:
    async def chunks() -> AsyncIterator[str]:
        yield "data: x\n\n"

    for every in (0, -1.0):
        with pytest.raises(ValueError, match="above 0"):
            await send_coalesced(START, chunks(), _ignore, "utf-8", heartbeat=every)
        with pytest.raises(ValueError, match="above 0"):
            create_app(build_demo_agent(), heartbeat_seconds=every)


async def _ignore(message: Any) -> None:
    pass
