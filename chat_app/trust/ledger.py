"""The ledger: exactly-once resolutions and a hash-chained audit trail.

Owns `Ledger` (the protocol), `SQLiteLedger` (the embedded default, one file in the app's
data folder, safe across processes), `AuditRecord`, `verify_chain`, `audit_report` and
`open_ledger`, which picks SQLite or `RedisLedger` (`redis_ledger.py`, for many workers or
machines).

`commit_batch` is the whole point: it records a continuation's answers in ONE transaction,
and only if none of them was recorded before. Two concurrent continuations of the same
batch race on that transaction; exactly one wins, and only the winner runs tools. Every
pause, decision and execution is appended to the audit trail, where each record carries the
SHA-256 of the previous one, so an edited or deleted record breaks the chain.

It also keeps which client tool calls were approved and handed to the client to run
(`grant` / `granted`): a client tool's output is an answer of its own (`client_tool_<id>`),
and without that record a client could send the output of a call nobody approved, or one
that was refused, by answering it in place of the approval.

The run loop awaits `commit_batch_async` / `append_async`: SQLite's writes run on the
ledger's own thread, grouped into one transaction (see `_group_commit`), so the event loop
never waits for the disk. The blocking `commit_batch` / `append` serve scripts and tests;
`records()` also serves the server and the Audit page.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from chat_app.interrupts import canonical_interrupt_json

from ._group_commit import GroupWriter
from .seal import iso_from_epoch, make_private_folder

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

    async def grant_async(self, *, thread_id: str, call_ids: Sequence[str]) -> None:
        """Record that these client tool calls of `thread_id` were approved and handed to the
        client to run. Like `append_async`, in the ledger when it returns; a crash can lose it
        only with the newest records, and then the output is refused (never wrongly taken)."""

    async def granted_async(self, *, thread_id: str, call_ids: Sequence[str]) -> list[str]:
        """Which of these calls of `thread_id` were granted (`grant_async`)."""

    def records(self) -> list[AuditRecord]:
        """The whole audit trail, oldest first."""

    def check(self) -> None:
        """Raise when the ledger cannot keep its promise now (a store that does not answer).

        Reads and writes raise `LedgerUnavailable` when the store does not answer them: a
        Redis not reached or too slow, a SQLite file full, locked past the wait or unwritable.
        """


def now_iso() -> str:
    """A record's time: now, in ISO 8601 UTC with milliseconds."""
    return iso_from_epoch(time.time())


def make_record(seq: int, prev: str, entry: AuditEntry, *, at: str | None = None) -> AuditRecord:
    """The record `entry` makes at `seq` after `prev` (at `at`, or now), hashed."""
    at = at if at is not None else now_iso()
    body: dict[str, Any] = {
        "seq": seq, "at": at, "kind": entry.kind, "thread_id": entry.thread_id,
        "run_id": entry.run_id, "actor": entry.actor, "data": entry.data,
    }  # fmt: skip
    return AuditRecord(
        seq=seq, at=at, kind=entry.kind, thread_id=entry.thread_id, run_id=entry.run_id,
        actor=entry.actor, data=entry.data, prev=prev, hash=record_hash(prev, body),
    )  # fmt: skip


def chain_records(
    seq: int, prev: str, timed: Iterable[tuple[AuditEntry, str | None]]
) -> list[AuditRecord]:
    """The records `timed`'s entries make, in order, after record `seq` of hash `prev`: each
    at its time (`None`: now) and linked to the one before. Both ledgers chain through it,
    so a record is hashed the same way whichever keeps it."""
    records = []
    for entry, at in timed:
        seq += 1
        record = make_record(seq, prev, entry, at=at)
        records.append(record)
        prev = record.hash
    return records


class SQLiteLedger:
    """The embedded ledger: one SQLite file (WAL), safe for several processes.

    An answer's commit is fsynced (`synchronous=FULL`) before the caller goes on, so it is
    on disk before its tool runs; concurrent continuations share one transaction and one
    fsync (group commit). Pause and execution records from `append_async` are committed
    without a sync of their own: the next answer's fsync covers them (the log is written in
    order) or a checkpoint within about a second. A killed process loses nothing.
    """

    def __init__(self, path: Path, *, busy_seconds: float = 30) -> None:
        """`busy_seconds`: how long a write waits for a lock another process holds (another
        worker's group commit takes milliseconds; a backup or a shell left in a transaction
        can take longer) before it raises `LedgerUnavailable`."""
        if str(path) != ":memory:":
            make_private_folder(path.parent)
        self.path = path
        # Pause and execution records commit inline when the writer is idle (no fsync to wait
        # for); a `:memory:` database exists on one connection only, so it never does.
        inline = None if str(path) == ":memory:" else lambda: _open_inline(path)
        self._writer = GroupWriter(
            lambda: _open(path, busy_seconds), name=f"ledger:{path.name}", inline=inline
        )
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
        with self._answering():
            result: list[str] = self._writer.submit(job).result()
        return result

    async def commit_batch_async(
        self, *, thread_id: str, interrupt_ids: Sequence[str], entries: Sequence[AuditEntry]
    ) -> list[str]:
        job = _commit_job(thread_id, list(interrupt_ids), list(entries))
        with self._answering():
            result: list[str] = await self._writer.submit_async(job)
        return result

    def append(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            with self._answering():
                self._writer.submit(lambda db: _append(db, entries)).result()

    async def append_async(self, entries: Iterable[AuditEntry]) -> None:
        entries = list(entries)
        if entries:
            # Pause and execution records need no fsync of their own: the next answer's
            # durable commit (or the writer's idle sync) puts them on disk, in order.
            with self._answering():
                await self._writer.submit_async(lambda db: _append(db, entries), durable=False)

    async def grant_async(self, *, thread_id: str, call_ids: Sequence[str]) -> None:
        rows = [(thread_id, call_id) for call_id in call_ids]
        if rows:
            with self._answering():
                await self._writer.submit_async(
                    lambda db: db.executemany("INSERT OR IGNORE INTO grants VALUES (?, ?)", rows),
                    durable=False,
                )

    async def granted_async(self, *, thread_id: str, call_ids: Sequence[str]) -> list[str]:
        if not call_ids:
            return []
        marks = ",".join("?" * len(call_ids))
        query = f"SELECT call_id FROM grants WHERE thread_id = ? AND call_id IN ({marks})"  # noqa: S608
        with self._answering():
            rows = await self._writer.submit_async(
                lambda db: db.execute(query, (thread_id, *call_ids)).fetchall(), durable=False
            )
        return sorted(row[0] for row in rows)

    def records(self) -> list[AuditRecord]:
        # Through the writer too: a `:memory:` database exists only on its connection.
        with self._answering():
            rows = self._writer.submit(_read_records).result()
        return [AuditRecord(**json.loads(row[0])) for row in rows]

    def check(self) -> None:
        """A file this process opened at its start: nothing to reach since."""

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """A file SQLite cannot write or read just now (a full disk, a lock held past the
        wait, an I/O error, a folder made read-only, a damaged file) raises
        `LedgerUnavailable`, not `late`: SQLite reports the transaction rolled back (after an
        I/O error at its commit it may be on disk after all: answering again is then refused
        as a replay, the safe side). A statement SQLite refuses as wrong (no such table, a
        syntax error) is a bug, raised as it is."""
        try:
            yield
        except sqlite3.Error as error:
            if not _unavailable(error):
                raise
            raise LedgerUnavailable(
                f"The ledger's SQLite file {self.path} cannot be used just now: {error}"
            ) from error


def _unavailable(error: sqlite3.Error) -> bool:
    """The file, not the statement, by SQLite's primary result code (`SQLITE_IOERR_WRITE`
    is an `SQLITE_IOERR`)."""
    name = str(getattr(error, "sqlite_errorname", "") or "")
    return "_".join(name.split("_")[:2]) in _FILE_TROUBLES


#: SQLite's result codes for a file that cannot be used just now, or at all.
_FILE_TROUBLES = frozenset({
    "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY",
    "SQLITE_CANTOPEN", "SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_PROTOCOL", "SQLITE_PERM",
})  # fmt: skip


def _open(path: Path, busy_seconds: float) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=busy_seconds, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS resolutions (
            thread_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, at TEXT NOT NULL,
            PRIMARY KEY (thread_id, interrupt_id));
        CREATE TABLE IF NOT EXISTS audit (
            seq INTEGER PRIMARY KEY, record TEXT NOT NULL, hash TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS grants (
            thread_id TEXT NOT NULL, call_id TEXT NOT NULL, PRIMARY KEY (thread_id, call_id));
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
    records = chain_records(seq, prev, ((entry, None) for entry in entries))
    db.executemany(
        "INSERT INTO audit VALUES (?, ?, ?)",
        [(record.seq, record.to_json(), record.hash) for record in records],
    )


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
        at = now_iso()
        db.executemany(
            "INSERT INTO resolutions VALUES (?, ?, ?)",
            [(thread_id, interrupt_id, at) for interrupt_id in interrupt_ids],
        )
        _append(db, entries)
        return []

    return job


def _read_records(db: sqlite3.Connection) -> list[tuple[str]]:
    return db.execute("SELECT record FROM audit ORDER BY seq").fetchall()


class LedgerUnusable(ValueError):
    """The ledger's store cannot keep the exactly-once promise (the message says why and
    what to change)."""


class LedgerUnavailable(RuntimeError):
    """The ledger's store did not answer a read or a write just now (the message names the
    store, for operators). Its caller goes no further: nothing that needed the record
    happens, and answering again meets the ledger's exactly-once check.

    `late`: the store was reached but did not answer in time, so the write may yet have been
    kept (a command sent before a timeout may still run); else it was not reached at all."""

    def __init__(self, message: str, *, late: bool = False) -> None:
        super().__init__(message)
        self.late = late


def open_ledger(url: str | None, data_dir: Path) -> Ledger:
    """`redis://…` for Redis, else SQLite (`sqlite:///path` or the data folder's ledger.db).

    Raises:
        LedgerUnusable: the Redis does not answer, or could lose an answer.
    """
    if url and url.startswith(("redis://", "rediss://", "unix://")):
        from .redis_ledger import RedisLedger  # redis is imported only for it

        ledger = RedisLedger(url)
        ledger.check_durable()
        return ledger
    if url and url.startswith("sqlite:///"):
        return SQLiteLedger(Path(url.removeprefix("sqlite:///")))
    if url:
        raise ValueError(f"Unsupported ledger URL {url!r}: use redis://… or sqlite:///path.")
    return SQLiteLedger(data_dir / "ledger.db")
