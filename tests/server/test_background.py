"""The server's background tasks at shutdown: each is cancelled and waited for, so what it
does as it stops (the deliverer giving back its sends) is done, whatever the others did."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette

from chat_app.server.app import _background


async def test_each_task_stops_in_its_own_way_though_another_failed_before() -> None:
    stopped: list[str] = []

    async def fails_at_once() -> None:
        raise RuntimeError("broken")

    async def cleans_up() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.01)  # e.g. giving its claims back
            stopped.append("cleaned up")

    lifespan = _background([fails_at_once, cleans_up])
    assert lifespan is not None
    app = Starlette()
    async with lifespan(app):
        await asyncio.sleep(0.05)  # the first has failed by now
    assert stopped == ["cleaned up"]
