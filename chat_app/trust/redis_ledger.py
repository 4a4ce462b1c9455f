"""The ledger in Redis, for several workers or machines (`CHAT_APP_LEDGER_URL=redis://…`).

Answers are claimed exactly once by one script call that sets their keys only if none is
set. The audit trail is one hash chain, and each record's hash needs the one before it, which
Redis's scripts cannot compute (no SHA-256 there): Python hashes, Redis checks the link.

With one writer at a time the writer's records go straight onto the chain (it knows the tail
it wrote last: one round trip). When the tail moved, or someone is chaining, a writer does not
retry against the others — optimistic retries let the busiest process starve the rest (two
processes appending as fast as they could: 21,943 appends against 191, and "too busy"
errors). Its records go onto a pending list in the same script call, and whoever holds the
chain's lease (the first writer to find it free) links everything pending, in arrival order,
until none is left. A writer returns once its records are in Redis, pending or linked; a
reader of the trail first waits for the pending ones to be linked (or links them itself, after
a chainer that died), so every record it sees is on the chain.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from .ledger import (
    GENESIS,
    AuditEntry,
    AuditRecord,
    LedgerUnavailable,
    LedgerUnusable,
    chain_records,
    now_iso,
)

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
#: How long a connection may take to open, and a command to answer, before the caller hears
#: the Redis does not answer (redis-py waits for ever by default: a Redis gone silent would hold
#: a thread each time someone asks).
CONNECT_SECONDS = 5.0
COMMAND_SECONDS = 10.0

#: How long a chainer may hold the lease without renewing it (each batch renews it); after
#: that, one that died is replaced.
LEASE_MS = 5_000
#: Records linked per round trip by the chainer.
BATCH = 256
#: How long a reader waits for the pending records to be linked before it gives up.
SETTLE_SECONDS = 10.0

#: The Lua each script starts with (over its first four KEYS: tail, chain, pending, lease), so
#: the reply that makes its caller the chainer is written once. `pending_after(tail)` is that
#: reply: the tail to link after, the chain's length, the first BATCH pending entries.
#: `take_lease(token, ms, tail)` takes the lease and gives that reply, or nil when it is held.
_CHAINER = f"""
local function pending_after(tail)
  return {{'chain', tail, redis.call('LLEN', KEYS[2]),
          unpack(redis.call('LRANGE', KEYS[3], 0, {BATCH - 1}))}}
end
local function take_lease(token, ms, tail)
  if redis.call('SET', KEYS[4], token, 'NX', 'PX', ms) then return pending_after(tail) end
  return nil
end
"""


def _with_chainer(body: str) -> str:
    return _CHAINER + body


#: KEYS: tail, chain, pending, lease, then the answers' keys. ARGV: genesis, the tail the
#: writer expects, the answers' time, lease token, lease ms, n, then n pending entries, then n
#: (record, hash) pairs chained on the expected tail.
_WRITE = _with_chainer("""
local taken = {}
for i = 5, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then table.insert(taken, KEYS[i]) end
end
if #taken > 0 then table.insert(taken, 1, 'taken'); return taken end
for i = 5, #KEYS do redis.call('SET', KEYS[i], ARGV[3]) end
local n = tonumber(ARGV[6])
if n == 0 then return {'ok'} end
local tail = redis.call('GET', KEYS[1]) or ARGV[1]
if tail == ARGV[2] and redis.call('EXISTS', KEYS[4]) == 0
    and redis.call('LLEN', KEYS[3]) == 0 then
  for i = 1, n do redis.call('RPUSH', KEYS[2], ARGV[6 + n + 2 * i - 1]) end
  redis.call('SET', KEYS[1], ARGV[6 + 3 * n])
  return {'ok'}
end
for i = 1, n do redis.call('RPUSH', KEYS[3], ARGV[6 + i]) end
return take_lease(ARGV[4], ARGV[5], tail) or {'queued'}
""")

#: KEYS: tail, chain, pending, lease. ARGV: lease token, lease ms, how many pending entries
#: these are, then their (record, hash) pairs.
_LINK = _with_chainer("""
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {'lost'} end
for i = 4, #ARGV, 2 do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('SET', KEYS[1], ARGV[#ARGV])
redis.call('LTRIM', KEYS[3], tonumber(ARGV[3]), -1)
if redis.call('LLEN', KEYS[3]) > 0 then
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return pending_after(ARGV[#ARGV])
end
redis.call('DEL', KEYS[4])
return {'done'}
""")

#: KEYS: tail, chain, pending, lease. ARGV: genesis, lease token, lease ms.
_TAKE = _with_chainer("""
if redis.call('LLEN', KEYS[3]) == 0 then return {'empty'} end
return take_lease(ARGV[2], ARGV[3], redis.call('GET', KEYS[1]) or ARGV[1]) or {'busy'}
""")


def _pending(entry: AuditEntry, at: str) -> str:
    return json.dumps(
        {"at": at, "kind": entry.kind, "thread_id": entry.thread_id, "run_id": entry.run_id,
         "actor": entry.actor, "data": entry.data},
        ensure_ascii=False,
    )  # fmt: skip


def _from_pending(item: str) -> tuple[AuditEntry, str]:
    fields = json.loads(item)
    at = fields.pop("at")
    return AuditEntry(**fields), at


def _pairs(records: Sequence[AuditRecord]) -> list[str]:
    """Each record's JSON and hash, as the scripts take them."""
    return [part for record in records for part in (record.to_json(), record.hash)]


class RedisLedger:
    """The ledger in Redis, for several workers or machines (`redis://…`)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "chat_app:ledger",
        command_seconds: float = COMMAND_SECONDS,
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # The synchronous client (typed as sync-or-async by redis-py). Never retried by the
        # client: a write sent again after a timeout, when the first one ran after all,
        # would claim its own answers as a replay, or chain its records twice.
        self._redis: Any = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=CONNECT_SECONDS,
            socket_timeout=command_seconds,
            retry=Retry(NoBackoff(), 0),
        )
        self._prefix = prefix
        self._write: Any = self._redis.register_script(_WRITE)
        self._link: Any = self._redis.register_script(_LINK)
        self._take: Any = self._redis.register_script(_TAKE)
        # The chain's tail hash, the chain, the records waiting to be linked, the lease.
        chain = f"{prefix}:audit"
        self._keys = [f"{chain}:tail", chain, f"{chain}:pending", f"{chain}:lease"]
        # The chain's tail as this process last linked it: (hash, length).
        self._tail: tuple[str, int] = (GENESIS, 0)

    def check(self) -> None:
        """Raise `LedgerUnusable` when this Redis does not answer. One that refuses the
        question (an ACL without PING) has answered."""
        import redis

        try:
            self._redis.ping()
        except redis.ResponseError:
            return
        except redis.RedisError as error:
            raise LedgerUnusable(f"The Redis at {self._place()} does not answer: {error}") from None

    def check_durable(self) -> None:
        """`check`, and raise `LedgerUnusable` when this Redis keeps answers where a restart
        or a full memory could lose them: an approval carried out could then be carried out
        again. A Redis that will not show its settings (`CONFIG` renamed or refused, as
        managed services do) is trusted, with a warning in the log."""
        import redis

        self.check()
        try:
            settings = self._redis.config_get("appendonly")
            settings |= self._redis.config_get("appendfsync")
            settings |= self._redis.config_get("maxmemory*")
        except redis.ResponseError as error:
            _log.warning(
                "Could not read the ledger's Redis settings (%s): make sure it writes every "
                "command to disk before answering (appendonly yes, appendfsync always) and "
                "never evicts keys (maxmemory-policy noeviction), or an approval could run "
                "twice after a restart.", error,
            )  # fmt: skip
            return
        problems = []
        if (settings.get("appendonly"), settings.get("appendfsync")) != ("yes", "always"):
            problems.append(
                f"it has appendonly {settings.get('appendonly')}, appendfsync "
                f"{settings.get('appendfsync')}: a restart would forget the answers not yet on "
                "disk; set appendonly yes and appendfsync always"
            )
        policy = settings.get("maxmemory-policy", "noeviction")
        if settings.get("maxmemory", "0") != "0" and policy.startswith("allkeys"):
            problems.append(
                f"it evicts any key when its memory is full (maxmemory-policy {policy}); set "
                "maxmemory-policy noeviction"
            )
        if problems:
            raise LedgerUnusable(
                f"The Redis at {self._place()} could lose answers, and an approval already "
                f"carried out could then be carried out again: {'; and '.join(problems)}."
            )

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """A Redis that cannot be reached, or that does not answer in time, raises
        `LedgerUnavailable` (one that answers with an error is a bug, raised as it is)."""
        import redis

        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise LedgerUnavailable(
                f"The ledger's Redis at {self._place()} does not answer: {error}",
                late=isinstance(error, redis.TimeoutError),
            ) from error

    def _answered(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        with self._answering():
            return call(*args, **kwargs)

    def _place(self) -> str:
        where = self._redis.get_connection_kwargs()
        return str(where.get("path") or f"{where.get('host')}:{where.get('port')}")

    def _run(self, resolved: Sequence[str], entries: Sequence[AuditEntry]) -> list[str]:
        at = now_iso()
        prev, length = self._tail  # once: other threads move it
        records = chain_records(length, prev, [(entry, at) for entry in entries])
        pending = [_pending(entry, at) for entry in entries]
        token = uuid.uuid4().hex
        reply = self._write(
            keys=[*self._keys, *resolved],
            args=[GENESIS, prev, at, token, LEASE_MS, len(entries), *pending, *_pairs(records)],
        )
        if reply[0] == "taken":
            return [key.rsplit(":", 1)[-1] for key in reply[1:]]
        if reply[0] == "ok" and records:
            self._tail = (records[-1].hash, records[-1].seq)
        elif reply[0] == "chain":
            self._link_pending(token, reply)
        return []

    def _link_pending(self, token: str, reply: list[Any]) -> None:
        """Holding the lease: link what is pending, batch by batch, until none is left."""
        while reply[0] == "chain":
            prev, length, items = str(reply[1]), int(reply[2]), reply[3:]
            records = chain_records(length, prev, [_from_pending(item) for item in items])
            reply = self._link(
                keys=self._keys, args=[token, LEASE_MS, len(items), *_pairs(records)]
            )
            if reply[0] != "lost" and records:
                self._tail = (records[-1].hash, records[-1].seq)

    def _settle(self) -> None:
        """Wait until nothing is pending, linking it if no live chainer is."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            token = uuid.uuid4().hex
            reply = self._take(keys=self._keys, args=[GENESIS, token, LEASE_MS])
            if reply[0] == "empty":
                return
            if reply[0] == "chain":
                self._link_pending(token, reply)
            elif time.monotonic() > deadline:
                raise RuntimeError("The audit trail is still being written; try again.")
            else:
                time.sleep(0.005)

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        keys = [f"{self._prefix}:resolved:{thread_id}:{item}" for item in interrupt_ids]
        return sorted(self._answered(self._run, keys, entries))

    async def commit_batch_async(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        # The client is synchronous (and its connection pool thread-safe): off the loop.
        return await asyncio.to_thread(
            self.commit_batch, thread_id=thread_id, interrupt_ids=interrupt_ids, entries=entries
        )

    def append(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            self._answered(self._run, [], entries)

    async def append_async(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            await asyncio.to_thread(self._answered, self._run, [], entries)

    async def grant_async(self, *, thread_id: str, call_ids: Sequence[str]) -> None:
        if call_ids:
            keys = [self._grant_key(thread_id, call_id) for call_id in call_ids]
            marks = dict.fromkeys(keys, now_iso())
            await asyncio.to_thread(self._answered, self._redis.mset, marks)

    async def granted_async(self, *, thread_id: str, call_ids: Sequence[str]) -> list[str]:
        if not call_ids:
            return []
        keys = [self._grant_key(thread_id, call_id) for call_id in call_ids]
        found = await asyncio.to_thread(self._answered, self._redis.mget, keys)
        pairs = zip(call_ids, found, strict=True)
        return sorted(call_id for call_id, at in pairs if at is not None)

    def _grant_key(self, thread_id: str, call_id: str) -> str:
        return f"{self._prefix}:granted:{thread_id}:{call_id}"

    def records(self) -> list[AuditRecord]:
        with self._answering():
            self._settle()
            chain = self._redis.lrange(self._keys[1], 0, -1)
        return [AuditRecord(**json.loads(item)) for item in chain]
