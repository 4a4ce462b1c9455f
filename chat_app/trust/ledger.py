"""The ledger: exactly-once resolutions and a hash-chained audit trail.

Owns `Ledger` (the protocol), `SQLiteLedger` (the embedded default, one file in the app's
data folder, safe across processes) and `RedisLedger` (for many workers or machines), plus
`AuditRecord`, `verify_chain`, `audit_report` and `open_ledger`.

`commit_batch` is the whole point: it records a continuation's answers in ONE transaction,
and only if none of them was recorded before. Two concurrent continuations of the same
batch race on that transaction; exactly one wins, and only the winner runs tools. Every
pause, decision and execution is appended to the audit trail, where each record carries the
SHA-256 of the previous one, so an edited or deleted record breaks the chain.

The run loop awaits `commit_batch_async` / `append_async`: SQLite's writes run on the
ledger's own thread, grouped into one transaction (see `_group_commit`), so the event loop
never waits for the disk. The blocking `commit_batch` / `append` serve scripts and tests;
`records()` also serves the server and the Audit page.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from chat_app.interrupts import canonical_interrupt_json

from ._group_commit import GroupWriter
from .seal import iso_from_epoch

GENESIS = "sha256:" + "0" * 64


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One line of the audit trail (`kind`: pause, decision, execution)."""

    seq: int
    at: str
    kind: str
    thread_id: str
    run_id: str
    actor: str | None
    data: dict[str, Any]
    prev: str
    hash: str

    def to_json(self) -> str:
        """The stored line. Not what is hashed (`record_hash` hashes canonical JSON), so
        the encoder may change without breaking the chain of records already written."""
        fields = {
            "seq": self.seq, "at": self.at, "kind": self.kind, "thread_id": self.thread_id,
            "run_id": self.run_id, "actor": self.actor, "data": self.data, "prev": self.prev,
            "hash": self.hash,
        }  # fmt: skip
        try:
            return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:  # integers beyond 64 bits, non-string keys
            return json.dumps(fields, ensure_ascii=False, sort_keys=True)


def record_hash(prev: str, body: dict[str, Any]) -> str:
    text = prev + canonical_interrupt_json(body)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _body(record: AuditRecord) -> dict[str, Any]:
    body = asdict(record)
    del body["hash"], body["prev"]
    return body


@dataclass(frozen=True, kw_only=True)
class ChainCheck:
    ok: bool
    records: int
    #: The first record whose hash or link does not match (None when the chain is intact).
    broken_at: int | None = None
    reason: str = ""


def verify_chain(records: Sequence[AuditRecord]) -> ChainCheck:
    """Recompute every hash and link; report the first record that does not match."""
    prev = GENESIS
    for record in records:
        if record.prev != prev:
            return ChainCheck(ok=False, records=len(records), broken_at=record.seq,
                              reason="the link to the previous record is broken")  # fmt: skip
        if record_hash(prev, _body(record)) != record.hash:
            return ChainCheck(ok=False, records=len(records), broken_at=record.seq,
                              reason="the record was changed after it was written")  # fmt: skip
        prev = record.hash
    return ChainCheck(ok=True, records=len(records))


def audit_report(records: Sequence[AuditRecord]) -> dict[str, Any]:
    """The trail as `GET /api/audit` serves it (and the Audit page reads it): the chain check,
    then every record as stored."""
    check = verify_chain(records)
    return {
        "chain": {"ok": check.ok, "brokenAt": check.broken_at, "reason": check.reason},
        "records": [json.loads(record.to_json()) for record in records],
    }


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    kind: str
    thread_id: str
    run_id: str
    actor: str | None
    data: dict[str, Any]


class Ledger(Protocol):
    """Each write has a blocking form and an awaitable one; the run loop awaits."""

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        """Record the answers once; return the ids already resolved (then nothing is written)."""

    async def commit_batch_async(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        """`commit_batch`, awaited: durable when it returns."""

    def append(self, entries: Iterable[AuditEntry]) -> None:
        """Append audit records (pauses, executions)."""

    async def append_async(self, entries: Iterable[AuditEntry]) -> None:
        """`append`, awaited: in the trail when it returns; it may reach the disk later, but
        never after a later `commit_batch` does (a power cut loses at most the newest
        records, never the answer that authorised a tool run)."""

    def records(self) -> list[AuditRecord]:
        """The whole audit trail, oldest first."""


def _now() -> str:
    return iso_from_epoch(time.time())


def _make_record(seq: int, prev: str, entry: AuditEntry) -> AuditRecord:
    at = _now()
    body: dict[str, Any] = {
        "seq": seq, "at": at, "kind": entry.kind, "thread_id": entry.thread_id,
        "run_id": entry.run_id, "actor": entry.actor, "data": entry.data,
    }  # fmt: skip
    return AuditRecord(
        seq=seq, at=at, kind=entry.kind, thread_id=entry.thread_id, run_id=entry.run_id,
        actor=entry.actor, data=entry.data, prev=prev, hash=record_hash(prev, body),
    )  # fmt: skip


class SQLiteLedger:
    """The embedded ledger: one SQLite file (WAL), safe for several processes.

    An answer's commit is fsynced (`synchronous=FULL`) before the caller goes on, so it is
    on disk before its tool runs; concurrent continuations share one transaction and one
    fsync (group commit). Pause and execution records from `append_async` are committed
    without a sync of their own: the next answer's fsync covers them (the log is written in
    order) or a checkpoint within about a second. A killed process loses nothing.
    """

    def __init__(self, path: Path) -> None:
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Pause and execution records commit inline when the writer is idle (no fsync to wait
        # for); a `:memory:` database exists on one connection only, so it never does.
        inline = None if str(path) == ":memory:" else lambda: _open_inline(path)
        self._writer = GroupWriter(lambda: _open(path), name=f"ledger:{path.name}", inline=inline)
        # Drains queued writes when the ledger is dropped or the interpreter exits.
        self._finalizer = weakref.finalize(self, self._writer.close)
        self._writer.submit(lambda db: None).result()  # the file is usable, or raise here

    def close(self) -> None:
        """Write what is queued, then stop the writer thread (also done at exit)."""
        self._finalizer()

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        job = _commit_job(thread_id, list(interrupt_ids), list(entries))
        result: list[str] = self._writer.submit(job).result()
        return result

    async def commit_batch_async(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        job = _commit_job(thread_id, list(interrupt_ids), list(entries))
        result: list[str] = await self._writer.submit_async(job)
        return result

    def append(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            self._writer.submit(lambda db: _append(db, entries)).result()

    async def append_async(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            # Pause and execution records need no fsync of their own: the next answer's
            # durable commit (or the writer's idle sync) puts them on disk, in order.
            await self._writer.submit_async(lambda db: _append(db, entries), durable=False)

    def records(self) -> list[AuditRecord]:
        # Through the writer too: a `:memory:` database exists only on its connection.
        rows = self._writer.submit(_read_records).result()
        return [AuditRecord(**json.loads(row[0])) for row in rows]


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS resolutions (
            thread_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, at TEXT NOT NULL,
            PRIMARY KEY (thread_id, interrupt_id));
        CREATE TABLE IF NOT EXISTS audit (
            seq INTEGER PRIMARY KEY, record TEXT NOT NULL, hash TEXT NOT NULL);
        """
    )
    return db


def _open_inline(path: Path) -> sqlite3.Connection:
    """The connection for inline commits (`GroupWriter`): never waits for a lock (the event
    loop would wait), never syncs (only records without an fsync of their own go this way),
    and leaves checkpoints to the writer's connection (a checkpoint fsyncs)."""
    db = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    return db


def _append(db: sqlite3.Connection, entries: Iterable[AuditEntry]) -> None:
    """Chain `entries` after the last record (inside the writer's transaction)."""
    row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (row[0], row[1]) if row else (0, GENESIS)
    rows = []
    for entry in entries:
        seq += 1
        record = _make_record(seq, prev, entry)
        rows.append((seq, record.to_json(), record.hash))
        prev = record.hash
    db.executemany("INSERT INTO audit VALUES (?, ?, ?)", rows)


def _commit_job(
    thread_id: str, interrupt_ids: list[str], entries: list[AuditEntry]
) -> Callable[[sqlite3.Connection], list[str]]:
    def job(db: sqlite3.Connection) -> list[str]:
        marks = ",".join("?" * len(interrupt_ids))
        taken = [
            row[0]
            for row in db.execute(
                f"SELECT interrupt_id FROM resolutions WHERE thread_id = ? "  # noqa: S608
                f"AND interrupt_id IN ({marks})",
                (thread_id, *interrupt_ids),
            )
        ]
        if taken:  # a replay, or lost the race: write nothing
            return sorted(taken)
        at = _now()
        db.executemany(
            "INSERT INTO resolutions VALUES (?, ?, ?)",
            [(thread_id, interrupt_id, at) for interrupt_id in interrupt_ids],
        )
        _append(db, entries)
        return []

    return job


def _read_records(db: sqlite3.Connection) -> list[tuple[str]]:
    return db.execute("SELECT record FROM audit ORDER BY seq").fetchall()


_COMMIT_SCRIPT = """
local tail = redis.call('GET', KEYS[1]) or ARGV[1]
if tail ~= ARGV[2] then return {'retry', tail, tostring(redis.call('LLEN', KEYS[2]))} end
local taken = {}
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then table.insert(taken, KEYS[i]) end
end
if #taken > 0 then return taken end
for i = 3, #KEYS do redis.call('SET', KEYS[i], ARGV[3]) end
for i = 4, #ARGV, 2 do redis.call('RPUSH', KEYS[2], ARGV[i]) end
if #ARGV >= 5 then redis.call('SET', KEYS[1], ARGV[#ARGV]) end
return {'ok'}
"""


class RedisLedger:
    """The ledger in Redis, for several workers or machines (`redis://…`)."""

    def __init__(self, url: str, *, prefix: str = "chat_app:ledger") -> None:
        import redis

        # The synchronous client (typed as sync-or-async by redis-py).
        self._redis: Any = redis.Redis.from_url(url, decode_responses=True)
        self._prefix = prefix
        self._script: Any = self._redis.register_script(_COMMIT_SCRIPT)
        # One writer at a time in this process: its own threads never race each other for
        # the tail (with 64 clients they did, each retry three more round trips, until some
        # gave up); only other processes' writes make a retry.
        self._writing = threading.Lock()

    def _keys(self) -> tuple[str, str]:
        return f"{self._prefix}:audit:tail", f"{self._prefix}:audit"

    @staticmethod
    def _chain(prev: str, seq: int, entries: Sequence[AuditEntry]) -> list[str]:
        args: list[str] = []
        for entry in entries:
            seq += 1
            record = _make_record(seq, prev, entry)
            args += [record.to_json(), record.hash]
            prev = record.hash
        return args

    def _run(self, resolved: Sequence[str], entries: Sequence[AuditEntry]) -> list[str]:
        tail_key, list_key = self._keys()
        with self._writing:
            with self._redis.pipeline(transaction=False) as pipe:
                prev, length = pipe.get(tail_key).llen(list_key).execute()
            prev = prev or GENESIS
            for attempt in range(100):  # optimistic: another process may move the tail
                args = [GENESIS, prev, _now(), *self._chain(str(prev), int(length), entries)]
                result = self._script(keys=[tail_key, list_key, *resolved], args=args)
                if not result or result[0] != "retry":
                    return [] if result == ["ok"] else [key.rsplit(":", 1)[-1] for key in result]
                _, prev, length = result  # the tail it moved to, in the same round trip
                if attempt:  # writers in step with each other: fall out of step
                    time.sleep(random.uniform(0, 0.002 * attempt))
        raise RuntimeError("The audit trail is too busy; try again.")

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        keys = [f"{self._prefix}:resolved:{thread_id}:{item}" for item in interrupt_ids]
        return sorted(self._run(keys, entries))

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
            self._run([], entries)

    async def append_async(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            await asyncio.to_thread(self._run, [], entries)

    def records(self) -> list[AuditRecord]:
        return [
            AuditRecord(**json.loads(item)) for item in self._redis.lrange(self._keys()[1], 0, -1)
        ]


def open_ledger(url: str | None, data_dir: Path) -> Ledger:
    """`redis://…` for Redis, else SQLite (`sqlite:///path` or the data folder's ledger.db)."""
    if url and url.startswith(("redis://", "rediss://", "unix://")):
        return RedisLedger(url)
    if url and url.startswith("sqlite:///"):
        return SQLiteLedger(Path(url.removeprefix("sqlite:///")))
    if url:
        raise ValueError(f"Unsupported ledger URL {url!r}: use redis://… or sqlite:///path.")
    return SQLiteLedger(data_dir / "ledger.db")
