"""The ledger: exactly-once resolutions and a hash-chained audit trail.

Owns `Ledger` (the protocol), `SQLiteLedger` (the embedded default, one file in the app's
data folder, safe across processes) and `RedisLedger` (for many workers or machines), plus
`AuditRecord`, `verify_chain` and `open_ledger`.

`commit_batch` is the whole point: it records a continuation's answers in ONE transaction,
and only if none of them was recorded before. Two concurrent continuations of the same
batch race on that transaction; exactly one wins, and only the winner runs tools. Every
pause, decision and execution is appended to the audit trail, where each record carries the
SHA-256 of the previous one, so an edited or deleted record breaks the chain.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from chat_app.interrupts import canonical_interrupt_json

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
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


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


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    kind: str
    thread_id: str
    run_id: str
    actor: str | None
    data: dict[str, Any]


class Ledger(Protocol):
    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        """Record the answers once; return the ids already resolved (then nothing is written)."""

    def append(self, entries: Iterable[AuditEntry]) -> None:
        """Append audit records (pauses, executions)."""

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
    """The embedded ledger: one SQLite file (WAL), safe for several processes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        with self._connect() as db:
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

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._local.db = db
        return db

    def _append_locked(self, db: sqlite3.Connection, entries: Iterable[AuditEntry]) -> None:
        row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (row[0], row[1]) if row else (0, GENESIS)
        for entry in entries:
            seq += 1
            record = _make_record(seq, prev, entry)
            db.execute("INSERT INTO audit VALUES (?, ?, ?)", (seq, record.to_json(), record.hash))
            prev = record.hash

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
        try:
            marks = ",".join("?" * len(interrupt_ids))
            taken = [
                row[0]
                for row in db.execute(
                    f"SELECT interrupt_id FROM resolutions WHERE thread_id = ? "  # noqa: S608
                    f"AND interrupt_id IN ({marks})",
                    (thread_id, *interrupt_ids),
                )
            ]
            if taken:
                db.execute("ROLLBACK")
                return sorted(taken)
            at = _now()
            db.executemany(
                "INSERT INTO resolutions VALUES (?, ?, ?)",
                [(thread_id, interrupt_id, at) for interrupt_id in interrupt_ids],
            )
            self._append_locked(db, entries)
            db.execute("COMMIT")
            return []
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def append(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if not entries:
            return
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            self._append_locked(db, entries)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def records(self) -> list[AuditRecord]:
        rows = self._connect().execute("SELECT record FROM audit ORDER BY seq").fetchall()
        return [AuditRecord(**json.loads(row[0])) for row in rows]


_COMMIT_SCRIPT = """
local tail = redis.call('GET', KEYS[1]) or ARGV[1]
if tail ~= ARGV[2] then return {'retry'} end
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

    def _keys(self) -> tuple[str, str]:
        return f"{self._prefix}:audit:tail", f"{self._prefix}:audit"

    def _chain(self, prev: str, entries: Sequence[AuditEntry]) -> list[str]:
        seq = int(self._redis.llen(self._keys()[1]))
        args: list[str] = []
        for entry in entries:
            seq += 1
            record = _make_record(seq, prev, entry)
            args += [record.to_json(), record.hash]
            prev = record.hash
        return args

    def _run(self, resolved: Sequence[str], entries: Sequence[AuditEntry]) -> list[str]:
        tail_key, list_key = self._keys()
        for _ in range(100):  # optimistic: retry when another writer moved the tail
            prev = self._redis.get(tail_key) or GENESIS
            args = [GENESIS, prev, _now(), *self._chain(str(prev), entries)]
            result = self._script(keys=[tail_key, list_key, *resolved], args=args)
            if result != ["retry"]:
                return [] if result == ["ok"] else [key.rsplit(":", 1)[-1] for key in result]
        raise RuntimeError("The audit trail is too busy; try again.")

    def commit_batch(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        keys = [f"{self._prefix}:resolved:{thread_id}:{item}" for item in interrupt_ids]
        return sorted(self._run(keys, entries))

    def append(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            self._run([], entries)

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
