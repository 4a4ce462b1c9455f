"""Send a stream's chunks with as few socket writes as it can without holding any back.

Owns `send_coalesced`. uvicorn writes each `http.response.body` message to the socket at once,
one system call each, with the interpreter's lock held: with ~30 SSE events a pause → approve
→ answer cycle, those writes were a quarter of the server's GIL time under load (py-spy).
Events a run produces back to back (a burst between two real waits: the run's start, the
interrupt and the run's end, a scripted model's words) go out in one write; an event that
follows a real wait (a token from a model, the ledger's commit) is sent as soon as the run
waits again, so nothing is delayed by more than a turn of the event loop.

The response's start (status and headers) goes out in the same turn as its first body, so a
client reads both at once, as node's `http` sends them: the benchmark's load generator read 4
times a pause → approve → answer cycle instead of 6 at one client, and spent 6-12 % less CPU
per cycle at 1, 16 and 64; the server's CPU moved within ±3 % (`benchmarks/FINDINGS.md`). The
start waits for the run's first event, which on a continuation comes after the answer's
durable commit (milliseconds), or for the first heartbeat.

A stream that goes quiet (a model thinking for minutes before its first word) is kept alive
with an SSE comment every `heartbeat` seconds: a client that gives up on a stream silent for
its read timeout (this project's, at 120 s; a proxy's idle timeout) hears that the run goes
on, and every SSE reader skips comments (TanStack's `fetchServerSentEvents` and ours alike).
A comment goes out between whole events, so each chunk must be whole SSE frames. It costs a
timer handle a wait (about 1.5 µs), not a task.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable

from starlette.types import Message, Send

#: At most this many turns of the loop collected into one write.
MAX_BURST_TURNS = 64
#: Seconds of quiet after which a stream sends `HEARTBEAT`.
HEARTBEAT_SECONDS = 15.0
#: An SSE comment: no event, only a sign of life.
HEARTBEAT = b": keep-alive\n\n"


async def send_coalesced(
    start: Message,
    chunks: AsyncIterable[str | bytes | memoryview],
    send: Send,
    charset: str,
    *,
    heartbeat: float | None = HEARTBEAT_SECONDS,
) -> None:
    """Send `start` (`http.response.start`), `chunks` as response bodies, then end the
    response (as Starlette's `StreamingResponse.stream_response` does).

    `start` goes out just before the first body, in the same turn; a stream that raises
    before it made anything (or a heartbeat went) sends nothing, and the server answers the
    error itself (500); after that, an error ends the stream where it stands.

    The chunks are read by a task of their own; each time it waits on something that takes
    more than a turn of the loop, what it produced so far is one write. The last write also
    ends the chunked body. If the stream raises, what it produced is sent and the error goes
    on up; if this coroutine is cancelled (the client left), the task is cancelled first, so
    the stream's own cleanup runs before this returns. After `heartbeat` seconds with nothing
    to send (`None`: never), `HEARTBEAT` goes out, and `start` with it if it had not.
    """
    if heartbeat is not None and not heartbeat > 0:
        raise ValueError(f"A heartbeat is a number of seconds above 0, not {heartbeat!r}.")
    buffer: list[bytes] = []
    ready = asyncio.Event()
    started = False
    loop = asyncio.get_running_loop()

    async def produce() -> None:
        try:
            async for chunk in chunks:
                buffer.append(chunk.encode(charset) if isinstance(chunk, str) else bytes(chunk))
                ready.set()
        finally:
            ready.set()

    producer = asyncio.ensure_future(produce())
    try:
        while True:
            if heartbeat is None:
                await ready.wait()
            elif not ready.is_set():
                alarm = loop.call_later(heartbeat, ready.set)
                try:
                    await ready.wait()
                finally:
                    alarm.cancel()
                if not buffer and not producer.done():  # the alarm: quiet all this time
                    ready.clear()
                    if not started:
                        started = True
                        await send(start)
                    await send({"type": "http.response.body", "body": HEARTBEAT, "more_body": True})
                    continue
            # A burst: keep collecting while the stream adds to it turn after turn (a model
            # that yields to the loop between words); one quiet turn ends it, and so does a
            # long one (a stream that never waits still reaches the client as it goes).
            for _ in range(MAX_BURST_TURNS):
                size = len(buffer)
                await asyncio.sleep(0)
                if producer.done() or len(buffer) == size:
                    break
            ready.clear()
            finished = producer.done()
            failed = finished and not producer.cancelled() and producer.exception() is not None
            body = b"".join(buffer)
            buffer.clear()
            if body or (finished and not failed):
                if not started:
                    started = True
                    await send(start)
                more = not finished or failed
                await send({"type": "http.response.body", "body": body, "more_body": more})
            if finished:
                producer.result()  # the stream's error, if it raised
                return
    finally:
        if not producer.done():
            producer.cancel()
            await asyncio.wait([producer])
