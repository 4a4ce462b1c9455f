"""Telling whoever watches that something changed: in this process, and across workers.

Owns `Fanout`. A topic is a name: `thread:<id>` when a conversation moved on, `inbox` when a
decision appeared or left. Watchers (a page's live loop, a test) wait for any of their
topics and then read the database, which is the truth; a notice carries no data, so a lost
or doubled one costs a read, never a wrong page. With a Redis URL (`CHAT_APP_FANOUT_URL`,
else Reflex's own `REFLEX_REDIS_URL`), notices go through Redis pub/sub to every worker;
without one they stay in this process (one worker). While Redis is away, a worker's pages wait
for their own worker's notices and poll for the rest; the log says so once, and once when it
answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fanout"]

CHANNEL = "chat_app:desk"
_log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Waiter:
    topics: frozenset[str]
    event: asyncio.Event
    loop: asyncio.AbstractEventLoop
    seen: set[str] = field(default_factory=set)


class Fanout:
    """Change notices by topic, for one process or, through Redis, for many."""

    def __init__(self, redis_url: str | None = None) -> None:
        self.redis_url = redis_url or None
        self._waiters: set[_Waiter] = set()
        #: How many notices each topic has had in this process: a watcher that notes it
        #: before reading (`mark`) and waits `since` that mark misses none that came between.
        self._generations: dict[str, int] = {}
        self._redis: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        #: Since when Redis has not answered (monotonic), for one log line of it.
        self._away_since: float | None = None

    async def publish(self, *topics: str) -> None:
        """Wake this process's watchers of `topics`, and every other worker's."""
        self._wake(topics)
        if self.redis_url is None:
            return
        try:
            await self._ensure_listening()
            await self._redis.publish(CHANNEL, "\n".join(topics))
        except Exception as error:  # other workers poll too: a lost notice costs a delay
            self._away("A desk notice could not be published to Redis", error)
        else:
            self._back()

    def mark(self, topics: Iterable[str]) -> tuple[int, ...]:
        """Where `topics` stand now: pass it to `wait` as `since`, after reading what they
        announce."""
        return tuple(self._generations.get(topic, 0) for topic in sorted(set(topics)))

    async def wait(
        self, topics: Iterable[str], timeout: float, *, since: tuple[int, ...] | None = None
    ) -> frozenset[str]:
        """Wait until one of `topics` changes (or `timeout` seconds pass); the topics that
        changed meanwhile (empty on timeout). With `since` (a `mark` of the same topics), a
        notice that came after the mark returns at once."""
        wanted = sorted(set(topics))
        if since is not None and self.mark(wanted) != since:
            return frozenset(
                topic
                for topic, before in zip(wanted, since, strict=False)
                if self._generations.get(topic, 0) != before
            )
        if self.redis_url is not None:
            try:
                await self._ensure_listening()
            except Exception as error:  # this worker's own notices still come; others poll
                self._away("The desk could not listen for notices on Redis", error)
        waiter = _Waiter(frozenset(wanted), asyncio.Event(), asyncio.get_running_loop())
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter.event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)
        return frozenset(waiter.seen)

    def _wake(self, topics: Iterable[str]) -> None:
        changed = set(topics)
        for topic in changed:
            self._generations[topic] = self._generations.get(topic, 0) + 1
        for waiter in list(self._waiters):
            hit = waiter.topics & changed
            if not hit:
                continue
            waiter.seen |= hit
            if waiter.loop.is_closed():
                self._waiters.discard(waiter)
                continue
            waiter.loop.call_soon_threadsafe(waiter.event.set)

    async def _ensure_listening(self) -> None:
        if self._listener is not None and not self._listener.done():
            if self._ready is not None:
                await self._ready.wait()
            return
        import redis.asyncio as redis

        if self._redis is not None:  # the one a listener that stopped had
            with contextlib.suppress(Exception):
                await self._redis.aclose()
        self._redis = redis.Redis.from_url(str(self.redis_url), decode_responses=True)
        self._ready = asyncio.Event()
        self._listener = asyncio.ensure_future(self._listen(self._ready))
        await asyncio.wait_for(self._ready.wait(), 10)

    async def _listen(self, ready: asyncio.Event) -> None:
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(CHANNEL)
            ready.set()
            self._back()
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    self._wake(str(message.get("data", "")).split("\n"))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            ready.set()
            self._away("The desk's Redis listener stopped", error)
        finally:
            try:
                await pubsub.aclose()
            except Exception:  # the connection may be gone already
                pass

    def _away(self, what: str, error: Exception) -> None:
        """One WARNING when Redis stops answering, not one per page's wait meanwhile."""
        if self._away_since is not None:
            _log.debug("%s: %s", what, error)
            return
        self._away_since = time.monotonic()
        _log.warning(
            "%s (%s): pages see other workers' changes by polling until Redis answers again",
            what, error,
        )  # fmt: skip

    def _back(self) -> None:
        if self._away_since is None:
            return
        away = time.monotonic() - self._away_since
        self._away_since = None
        _log.warning("The desk's Redis answers again, after %.0f s: live updates resume", away)

    def unreachable(self, timeout: float = 2.0) -> str | None:
        """Why its Redis does not answer now (`None` when it does, or there is none): said
        once at start, since notices fail quietly later (each page polls instead)."""
        if self.redis_url is None:
            return None
        import redis

        try:
            client = redis.Redis.from_url(
                self.redis_url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
        except ValueError as error:  # not a Redis URL at all
            return str(error)
        try:
            client.ping()
        except Exception as error:  # any refusal: wrong host, password, TLS
            return str(error) or type(error).__name__
        finally:
            client.close()
        return None

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            try:
                await self._listener
            except (asyncio.CancelledError, Exception):
                pass
        if self._redis is not None:
            await self._redis.aclose()
