"""A fake model provider on 127.0.0.1: replays queued replies over real HTTP, records requests.

One server answers both OpenAI's `POST /v1/chat/completions` and Anthropic's `POST /v1/messages`
(whatever the path, the next queued `Reply` answers). Replies are written in the providers'
streaming formats by `tests.agent.fakes.streams`. Runs uvicorn in a thread, so a hanging reply
never blocks the test's own event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.live_server import serve_asgi

HANG_LIMIT_SECONDS = 30.0  # a hanging reply gives up by itself after this


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer: an SSE stream (`frames`), or a JSON `body` (with an error
    status, or 200 from a server that does not stream)."""

    status: int = 200
    frames: Sequence[str] = ()
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    hang_before_headers: bool = False
    """Accept the request and never answer (until the client gives up)."""
    hang_after_frames: bool = False
    """Send `frames`, then keep the stream open without another byte."""
    drop_after_frames: bool = False
    """Send `frames`, then cut the connection in the middle of the response."""


@dataclass(frozen=True, kw_only=True)
class Received:
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]


class FakeProvider:
    """The recorded requests and the replies still queued; `base_url` is where it listens."""

    def __init__(self) -> None:
        self.base_url = ""
        self.received: list[Received] = []
        self._replies: deque[Reply] = deque()
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])

    def queue(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    def reset(self) -> None:
        self.received.clear()
        self._replies.clear()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [item.body for item in self.received]

    async def _handle(self, request: Request) -> Response:
        self.received.append(
            Received(
                path=request.url.path, headers=dict(request.headers), body=await request.json()
            )
        )
        if not self._replies:
            return JSONResponse({"error": {"message": "fake provider: no reply queued"}}, 418)
        reply = self._replies.popleft()
        if reply.hang_before_headers:
            await _until_disconnected(request)
            return Response(status_code=204)
        if reply.status != 200 or reply.body is not None:
            return JSONResponse(dict(reply.body or {}), reply.status, headers=dict(reply.headers))
        return StreamingResponse(
            _frames(reply), media_type="text/event-stream", headers=dict(reply.headers)
        )


async def _frames(reply: Reply) -> AsyncIterator[bytes]:
    for frame in reply.frames:
        yield frame.encode()
    if reply.hang_after_frames:
        # Starlette cancels this generator when the client disconnects.
        await asyncio.sleep(HANG_LIMIT_SECONDS)
    if reply.drop_after_frames:
        raise ConnectionAbortedError("fake provider: dropping the connection mid-stream")


async def _until_disconnected(request: Request) -> None:
    deadline = time.monotonic() + HANG_LIMIT_SECONDS
    while time.monotonic() < deadline and not await request.is_disconnected():
        await asyncio.sleep(0.02)


@contextmanager
def serve_fake_provider() -> Iterator[FakeProvider]:
    """Run a `FakeProvider` on a free port of 127.0.0.1 for the duration of the block."""
    fake = FakeProvider()
    with serve_asgi(fake.app, name="the fake provider", log_level="critical") as base_url:
        fake.base_url = base_url
        yield fake
