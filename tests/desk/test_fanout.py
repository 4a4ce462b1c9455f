"""Change notices: whoever waits on `thread:<id>` (or `inbox`) wakes when the desk stores a
change, in this process and, through Redis pub/sub, on another worker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chat_app.desk import Answer, Fanout, inbox_topic, thread_topic
from tests.desk.world import ADA, RITA, World
from tests.live_server import free_port
from tests.redis_server import redis_server


async def waiting(fanout: Fanout, *topics: str) -> asyncio.Task[frozenset[str]]:
    """A watcher of `topics`, registered before this returns (no Redis: at its first step)."""
    task = asyncio.ensure_future(fanout.wait(topics, timeout=30))
    await asyncio.sleep(0)
    return task


async def test_watchers_wake_when_the_desk_stores_a_change(world: World) -> None:
    thread = await world.start(RITA, "hello")
    other = await world.start(RITA, "transfer 25 to Ada")
    before = world.store.version(thread)

    watcher = await waiting(world.desk.fanout, thread_topic(thread))
    bystander = asyncio.ensure_future(world.desk.fanout.wait([thread_topic(other)], timeout=0.3))
    await world.desk.post(thread, RITA, "transfer 5000 to Ada")
    assert await watcher == {thread_topic(thread)}
    await world.desk.wait_idle()
    assert world.store.version(thread) > before
    assert await bystander == frozenset()  # another conversation's watcher slept on

    # A decision wakes the conversation's watchers and the inbox's.
    item = await world.only_item(ADA)
    watcher = await waiting(world.desk.fanout, thread_topic(thread), inbox_topic())
    await world.desk.decide(item.decision_id, ADA, Answer("approve"))
    assert await watcher == {thread_topic(thread), inbox_topic()}
    await world.desk.wait_idle()


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as url:
        yield url


async def delivered(sender: Fanout, receiver: Fanout, topic: str) -> frozenset[str]:
    """Publishes `topic` on `sender` until a watcher on `receiver` gets it (the receiver's
    subscription may still be on its way to Redis when the first goes out)."""
    watcher = asyncio.ensure_future(receiver.wait([topic], timeout=30))
    while not watcher.done():
        await sender.publish(topic)
        await asyncio.wait([watcher], timeout=0.05)
    return await watcher


async def test_redis_carries_a_notice_to_another_workers_watcher(
    world: World, redis_url: str
) -> None:
    first, second = Fanout(redis_url), Fanout(redis_url)
    try:
        assert await delivered(first, second, "thread:warm-up") == {"thread:warm-up"}
        # Two desks (two workers) over one database, each with its own Fanout: a change
        # stored by the first wakes a page watching on the second.
        desk = world.new_desk(worker="worker-a", fanout=first)
        other = world.new_desk(worker="worker-b", fanout=second)
        thread = await world.start(RITA, "transfer 5000 to Ada", desk=desk)
        [item] = (await other.inbox(ADA))[0]
        watcher = await waiting(second, thread_topic(thread), inbox_topic())
        assert second.redis_url == redis_url  # not in-process: only Redis can wake it
        await desk.decide(item.decision_id, ADA, Answer("approve"))
        seen = await watcher
        assert seen and seen <= {thread_topic(thread), inbox_topic()}
        await desk.wait_idle()
    finally:
        await first.aclose()
        await second.aclose()


async def test_redis_going_away_is_one_log_line_and_one_when_it_answers_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While Redis is down every page's wait and every notice meets it: the log says so
    once; once Redis is back, notices cross between workers again, and the log says that."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    port = free_port()
    first = second = None
    try:
        with redis_server(workdir, port=port) as url:
            first, second = Fanout(url), Fanout(url)
            assert await delivered(first, second, "thread:before") == {"thread:before"}
        with caplog.at_level(logging.WARNING, logger="chat_app.desk.fanout"):
            for _ in range(5):  # pages waiting, a desk publishing, Redis away
                assert await second.wait(["thread:away"], timeout=0.05) == frozenset()
                await first.publish("thread:away")
            away = [r.getMessage() for r in caplog.records if "Redis" in r.getMessage()]
            assert len(away) == 2, away  # one per worker
            assert all(line.endswith("by polling until Redis answers again") for line in away)
            assert any(line.startswith("The desk's Redis listener stopped (") for line in away)
            caplog.clear()
            with redis_server(workdir, port=port):
                assert await delivered(first, second, "thread:back") == {"thread:back"}
            back = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
            assert len(back) == 2 and all("live updates resume" in line for line in back), back
    finally:
        for fanout in (first, second):
            if fanout is not None:
                await fanout.aclose()
