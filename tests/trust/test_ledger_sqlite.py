"""The SQLite ledger's group commit: one writer thread, one transaction for many callers,
each caller's conflict or failure its own; in-memory ledgers; clean shutdown; the audit
trail's stored JSON and hash chain across the encoder change."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chat_app.trust._group_commit import GroupWriter
from chat_app.trust.ledger import (
    GENESIS,
    AuditEntry,
    AuditRecord,
    LedgerUnavailable,
    SQLiteLedger,
    record_hash,
    verify_chain,
)
from tests.agent.test_security import Clock, answer, approve, pause, ran, sealed_agent


def entry(n: int, data: dict[str, Any] | None = None) -> AuditEntry:
    return AuditEntry(
        kind="decision", thread_id=f"t{n}", run_id=f"r{n}", actor=None, data=data or {"n": n}
    )


def hold(target: SQLiteLedger | GroupWriter, *, durable: bool = True) -> threading.Event:
    """Park the writer thread until the event is set, so what is queued meanwhile is
    committed as one group."""
    writer = target._writer if isinstance(target, SQLiteLedger) else target
    gate = threading.Event()
    writer.submit(lambda db: gate.wait(10), durable=durable)
    return gate


async def test_grants_are_kept_per_thread_and_outlive_the_process(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    assert await ledger.granted_async(thread_id="t", call_ids=["a", "b"]) == []
    await ledger.grant_async(thread_id="t", call_ids=["b"])
    await ledger.grant_async(thread_id="t", call_ids=["b"])  # again: nothing changes
    assert await ledger.granted_async(thread_id="t", call_ids=["a", "b"]) == ["b"]
    assert await ledger.granted_async(thread_id="u", call_ids=["b"]) == []
    ledger.close()
    reopened = SQLiteLedger(tmp_path / "ledger.db")
    assert await reopened.granted_async(thread_id="t", call_ids=["a", "b"]) == ["b"]


async def test_one_group_many_commits_one_replay_conflicts_alone(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    first = await ledger.commit_batch_async(thread_id="t0", interrupt_ids=["x"], entries=[entry(0)])
    assert first == []
    gate = hold(ledger)
    calls = [
        ledger.commit_batch_async(thread_id=f"t{n}", interrupt_ids=["x"], entries=[entry(n)])
        for n in range(30)  # t0 is the replay
    ]
    tasks = [asyncio.ensure_future(call) for call in calls]
    await asyncio.sleep(0.05)  # every task has queued its write behind the gate
    gate.set()
    results = await asyncio.gather(*tasks)
    assert results[0] == ["x"] and all(taken == [] for taken in results[1:])
    records = ledger.records()
    assert len(records) == 30 and verify_chain(records).ok
    ledger.close()


async def test_concurrent_identical_commits_exactly_one_wins(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    gate = hold(ledger)
    tasks = [
        asyncio.ensure_future(
            ledger.commit_batch_async(thread_id="t", interrupt_ids=["a", "b"], entries=[entry(n)])
        )
        for n in range(20)
    ]
    await asyncio.sleep(0.05)
    gate.set()
    results = await asyncio.gather(*tasks)
    assert results.count([]) == 1
    assert all(taken == ["a", "b"] for taken in results if taken)
    assert len(ledger.records()) == 1


async def test_a_cancelled_caller_writes_nothing(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    gate = hold(ledger)
    given_up = asyncio.ensure_future(
        ledger.commit_batch_async(thread_id="t", interrupt_ids=["a"], entries=[entry(1)])
    )
    await asyncio.sleep(0.05)
    given_up.cancel()
    await asyncio.sleep(0)
    gate.set()
    again = await ledger.commit_batch_async(thread_id="t", interrupt_ids=["a"], entries=[entry(2)])
    assert again == [] and [r.run_id for r in ledger.records()] == ["r2"]
    ledger.close()


def test_blocking_callers_from_many_threads_exactly_one_wins(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")

    def commit(n: int) -> list[str]:
        return ledger.commit_batch(thread_id="t", interrupt_ids=["a"], entries=[entry(n)])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(commit, range(40)))
    assert results.count([]) == 1 and len(ledger.records()) == 1


def test_a_failing_job_is_rolled_back_alone(tmp_path: Path) -> None:
    writer = GroupWriter(lambda: _wal(tmp_path / "x.db", []), name="test")
    gate = hold(writer)

    def insert(value: int, fail: bool = False) -> Any:
        def job(db: sqlite3.Connection) -> int:
            db.execute("INSERT INTO t VALUES (?)", (value,))
            if fail:
                raise ValueError("no")
            return value

        return writer.submit(job)

    futures = [insert(1), insert(2, fail=True), insert(3)]
    gate.set()
    assert futures[0].result() == 1 and futures[2].result() == 3
    with pytest.raises(ValueError, match="no"):
        futures[1].result()
    rows = writer.submit(lambda db: db.execute("SELECT v FROM t ORDER BY v").fetchall()).result()
    assert rows == [(1,), (3,)]
    writer.close()


def test_a_failing_job_alone_in_its_group_writes_nothing(tmp_path: Path) -> None:
    def failing(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (1)")
        raise ValueError("no")

    writer = GroupWriter(lambda: _wal(tmp_path / "x.db", []), name="test")
    with pytest.raises(ValueError, match="no"):
        writer.submit(failing).result()  # nothing queued with it: a group of one
    assert writer.submit(lambda db: db.execute("INSERT INTO t VALUES (2)") and 2).result() == 2
    rows = writer.submit(lambda db: db.execute("SELECT v FROM t").fetchall()).result()
    assert rows == [(2,)]
    writer.close()


def test_a_transaction_that_cannot_start_fails_every_caller(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    connect = lambda: sqlite3.connect(path, timeout=0.1, isolation_level=None)  # noqa: E731
    writer = GroupWriter(connect, name="test")
    futures = [writer.submit(lambda db: "never durable") for _ in range(3)]
    for future in futures:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            future.result()
    other.execute("ROLLBACK")
    assert writer.submit(lambda db: "ok").result() == "ok"
    writer.close()


async def test_an_in_memory_ledger_is_one_database_for_every_thread_and_loop() -> None:
    ledger = SQLiteLedger(Path(":memory:"))
    await ledger.append_async([entry(1)])
    await asyncio.to_thread(ledger.append, [entry(2)])
    await asyncio.to_thread(asyncio.run, ledger.append_async([entry(3)]))  # another loop
    records = ledger.records()
    assert [r.seq for r in records] == [1, 2, 3] and verify_chain(records).ok


def test_close_writes_what_was_queued_then_stops_the_thread(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    writer = ledger._writer
    gate = hold(ledger)
    queued = [writer.submit(partial(ledger_append, n=n)) for n in range(5)]
    gate.set()
    ledger.close()
    assert all(future.done() for future in queued)
    assert not writer._thread.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        ledger.append([entry(9)])
    reopened = SQLiteLedger(tmp_path / "ledger.db")
    assert [r.seq for r in reopened.records()] == [1, 2, 3, 4, 5]
    reopened.close()


def ledger_append(db: sqlite3.Connection, n: int) -> None:
    from chat_app.trust.ledger import _append

    _append(db, [entry(n)])


def test_a_forked_process_writes_through_its_own_thread(tmp_path: Path) -> None:
    """Servers import the app (and open the ledger), then fork workers: a fork copies no
    thread, so the child must not queue to the parent's writer and wait forever."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    ledger.append([entry(1)])
    pid = os.fork()
    if pid == 0:  # the child: exit at once, whatever happens
        try:
            ledger.append([entry(2)])
            os._exit(0 if len(ledger.records()) == 2 else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 30
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if status[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the ledger")
    assert os.waitstatus_to_exitcode(status[1]) == 0
    ledger.append([entry(3)])
    records = ledger.records()
    assert [r.run_id for r in records] == ["r1", "r2", "r3"] and verify_chain(records).ok
    ledger.close()


def test_a_dropped_ledger_ends_its_thread() -> None:
    gc.collect()
    before = set(threading.enumerate())
    for _ in range(20):
        SQLiteLedger(Path(":memory:")).append([entry(1)])
    gc.collect()
    assert set(threading.enumerate()) <= before


def _old_to_json(record: AuditRecord) -> str:
    """How records were stored before the orjson encoder."""
    return json.dumps(asdict(record), ensure_ascii=False, sort_keys=True)


def test_records_stored_by_the_old_encoder_still_verify_and_chain_on(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    SQLiteLedger(path).close()  # creates the tables
    data = {"é": "ünïcode ✓", "f": 1e16, "g": 0.1, "n": None, "list": [1, 2.5, {"b": 1, "a": 2}]}
    body: dict[str, Any] = {
        "seq": 1, "at": "2030-01-01T00:00:00.000Z", "kind": "pause", "thread_id": "t",
        "run_id": "r", "actor": "ops", "data": data,
    }  # fmt: skip
    old = AuditRecord(**body, prev=GENESIS, hash=record_hash(GENESIS, body))
    db = sqlite3.connect(path)
    db.execute("INSERT INTO audit VALUES (?, ?, ?)", (1, _old_to_json(old), old.hash))
    db.commit()
    db.close()
    ledger = SQLiteLedger(path)
    ledger.append([entry(2, data)])
    records = ledger.records()
    assert records[0] == old and records[1].data == data
    assert verify_chain(records).ok
    ledger.close()


def test_the_new_encoder_stores_what_the_old_one_did(tmp_path: Path) -> None:
    data = {"é": "ünïcode ✓", "f": 1e16, "neg": -0.0, "big": 2**70, "nested": {"z": [1], "a": {}}}
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    ledger.append([entry(1, data), entry(2, {"x": "\u2028\x00"})])
    records = ledger.records()
    for record in records:
        assert json.loads(record.to_json()) == json.loads(_old_to_json(record))
    assert records[0].data == data and verify_chain(records).ok
    ledger.close()


def test_a_large_batch_resolves_once_and_a_duplicate_id_is_not_a_replay(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    many = [f"i{n}" for n in range(200)]
    assert ledger.commit_batch(thread_id="t", interrupt_ids=many, entries=[entry(1)]) == []
    assert ledger.commit_batch(thread_id="t", interrupt_ids=many, entries=[]) == sorted(many)
    assert ledger.commit_batch(thread_id="t", interrupt_ids=["a", "i7"], entries=[]) == ["i7"]
    with pytest.raises(sqlite3.IntegrityError):
        ledger.commit_batch(thread_id="t", interrupt_ids=["b", "b"], entries=[])
    assert ledger.commit_batch(thread_id="t", interrupt_ids=["a", "b"], entries=[entry(2)]) == []
    records = ledger.records()
    assert [r.run_id for r in records] == ["r1", "r2"] and verify_chain(records).ok
    ledger.close()


async def test_a_replay_in_a_group_fails_alone(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    results = await asyncio.gather(  # one event loop iteration: one group
        ledger.append_async([entry(1)]),
        ledger.commit_batch_async(thread_id="t", interrupt_ids=["a"], entries=[entry(2)]),
        ledger.commit_batch_async(thread_id="t", interrupt_ids=["a"], entries=[entry(3)]),
        ledger.append_async([entry(4)]),
    )
    assert list(results) == [None, [], ["a"], None]
    records = ledger.records()
    assert [r.run_id for r in records] == ["r1", "r2", "r4"] and verify_chain(records).ok
    ledger.close()


def _wal(path: Path, statements: list[str]) -> sqlite3.Connection:
    """A connection as the ledger opens one (WAL), tracing its statements into `statements`."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
    db.set_trace_callback(statements.append)
    return db


Traced = Callable[[float], tuple[GroupWriter, list[str]]]


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Traced]:
    """A writer on a WAL file whose statements are traced, with `SYNC_WITHIN` shortened."""
    import chat_app.trust._group_commit as group_commit

    writers: list[GroupWriter] = []

    def make(sync_within: float) -> tuple[GroupWriter, list[str]]:
        monkeypatch.setattr(group_commit, "SYNC_WITHIN", sync_within)
        statements: list[str] = []
        writers.append(GroupWriter(lambda: _wal(tmp_path / "x.db", statements), name="test"))
        return writers[-1], statements

    yield make
    for writer in writers:
        writer.close()


def _checkpoints(statements: list[str]) -> int:
    return sum("wal_checkpoint" in statement for statement in statements)


def _wait_for(condition: Any, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(condition())


def _insert(value: int) -> Any:
    return lambda db: db.execute("INSERT INTO t VALUES (?)", (value,))


def _synchronous(db: sqlite3.Connection) -> int:
    """The level the current transaction will commit with: 1 NORMAL, 2 FULL."""
    return int(db.execute("PRAGMA synchronous").fetchone()[0])


def test_a_group_with_an_answer_commits_fsynced_a_group_of_records_does_not(
    tmp_path: Path,
) -> None:
    writer = GroupWriter(lambda: _wal(tmp_path / "x.db", []), name="test")
    assert writer.submit(_synchronous).result() == 2  # durable unless told otherwise
    assert writer.submit(_synchronous, durable=False).result() == 1
    assert writer.submit(_synchronous, durable=False).result() == 1
    gate = hold(writer, durable=False)
    grouped = [writer.submit(_synchronous, durable=False), writer.submit(_synchronous)]
    gate.set()
    # One durable job makes its whole group durable.
    assert [future.result() for future in grouped] == [2, 2]
    writer.close()


def test_records_not_synced_by_an_answer_are_synced_once_the_writer_is_idle(traced: Traced) -> None:
    writer, statements = traced(0.05)
    writer.submit(_insert(0)).result()
    time.sleep(0.3)
    assert _checkpoints(statements) == 0  # durable: nothing to sync
    writer.submit(_insert(1), durable=False).result()
    assert _wait_for(lambda: _checkpoints(statements) == 1)
    assert "PRAGMA wal_checkpoint(PASSIVE)" in statements
    time.sleep(0.3)  # synced: the idle writer does not sync again
    assert _checkpoints(statements) == 1
    writer.close()


def test_a_record_appended_survives_the_process_being_killed(tmp_path: Path) -> None:
    """`append_async` skips the fsync, not the commit: a SIGKILL right after it returns
    loses nothing (only a power cut could, and never an answer's record)."""
    path = tmp_path / "ledger.db"
    pid = os.fork()
    if pid == 0:
        try:
            ledger = SQLiteLedger(path)
            asyncio.run(ledger.append_async([entry(1), entry(2)]))
            os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint, no exit handlers
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL
    reopened = SQLiteLedger(path)
    records = reopened.records()
    assert [r.run_id for r in records] == ["r1", "r2"] and verify_chain(records).ok
    reopened.close()


def test_an_answer_that_fails_to_commit_does_not_count_as_syncing_the_records_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chat_app.trust._group_commit as group_commit

    monkeypatch.setattr(group_commit, "SYNC_WITHIN", 0.05)
    statements: list[str] = []

    def connect() -> sqlite3.Connection:
        db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.set_trace_callback(statements.append)
        return db

    def schema(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        db.execute("CREATE TABLE child (pid INTEGER REFERENCES parent(id) "
                   "DEFERRABLE INITIALLY DEFERRED)")  # fmt: skip

    writer = GroupWriter(connect, name="test")
    writer.submit(schema).result()
    writer.submit(lambda db: db.execute("INSERT INTO parent VALUES (1)"), durable=False).result()
    orphan = writer.submit(lambda db: db.execute("INSERT INTO child VALUES (99)"))
    with pytest.raises(sqlite3.IntegrityError):  # the deferred check fails the COMMIT
        orphan.result()
    assert _wait_for(lambda: _checkpoints(statements) >= 1)  # the record still got synced
    rows = writer.submit(lambda db: db.execute("SELECT * FROM parent").fetchall()).result()
    assert rows == [(1,)]
    writer.close()


def test_a_durable_group_that_writes_nothing_does_not_count_as_a_sync(traced: Traced) -> None:
    """Reading the trail (`records()`), a replayed answer: durable jobs that write nothing
    make SQLite's COMMIT write and sync nothing, so the record before still needs its sync."""
    writer, statements = traced(0.05)
    writer.submit(_insert(1), durable=False).result()
    counted = writer.submit(lambda db: db.execute("SELECT count(*) FROM t").fetchone())
    assert counted.result() == (1,)
    assert _wait_for(lambda: _checkpoints(statements) == 1)
    time.sleep(0.2)
    assert _checkpoints(statements) == 1  # synced once, then nothing waits
    writer.close()


def test_steady_records_are_synced_on_time_even_when_the_writer_never_idles(traced: Traced) -> None:
    writer, statements = traced(0.2)
    started = time.monotonic()
    for value in range(40):  # one write every 25 ms for a second: never idle for 0.2 s
        writer.submit(_insert(value), durable=False).result()
        time.sleep(0.025)
    assert time.monotonic() - started < 5
    assert _checkpoints(statements) >= 2  # about every 0.2 s, not once at the end
    writer.close()


def test_a_sync_a_reader_prevents_is_tried_again_until_it_is_done(
    traced: Traced, tmp_path: Path
) -> None:
    """A reader in another connection (or process) holding an older snapshot keeps the
    checkpoint from copying the new frames back; such a checkpoint is not counted as the sync."""
    writer, statements = traced(0.05)
    writer.submit(_insert(0)).result()
    reader = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)  # its snapshot: 1 row
    writer.submit(_insert(1), durable=False).result()
    assert _wait_for(lambda: _checkpoints(statements) >= 3)  # tried, and tried again
    reader.execute("COMMIT")
    tried = _checkpoints(statements)
    assert _wait_for(lambda: _checkpoints(statements) > tried)
    time.sleep(0.3)
    done = _checkpoints(statements)
    time.sleep(0.3)
    assert _checkpoints(statements) == done  # the sync went through: no more tries
    reader.close()
    writer.close()


def test_a_sync_that_is_due_goes_before_work_that_keeps_coming(traced: Traced) -> None:
    writer, statements = traced(0.05)
    writer.submit(_insert(-1), durable=False).result()  # waits for its sync from now on
    gate = hold(writer, durable=False)
    futures = [writer.submit(_insert(value), durable=False) for value in range(10_000)]
    time.sleep(0.1)  # the sync is due while the queue is full
    gate.set()
    for future in futures:
        future.result()
    inserts = [i for i, statement in enumerate(statements) if statement.startswith("INSERT")]
    syncs = [i for i, statement in enumerate(statements) if "wal_checkpoint" in statement]
    assert len(inserts) == 10_001
    assert syncs and syncs[0] < inserts[-1]  # not only once the queue ran dry


def test_a_record_submitted_to_an_idle_writer_commits_inline_and_is_synced_later(
    traced: Traced, tmp_path: Path
) -> None:
    """Issue 19: with the writer idle, a non-durable job commits on the caller's thread (no
    round trip to the writer thread), and the writer still syncs it within `SYNC_WITHIN`."""
    writer, statements = traced(0.05)
    inline: list[str] = []

    def connect_inline() -> sqlite3.Connection:
        db = sqlite3.connect(tmp_path / "x.db", timeout=0, isolation_level=None,
                             check_same_thread=False)  # fmt: skip
        db.set_trace_callback(inline.append)
        return db

    writer._connect_inline = connect_inline
    writer.submit(_insert(0)).result()

    async def record() -> None:
        await writer.submit_async(_insert(1), durable=False)

    asyncio.run(record())
    assert any(statement.startswith("INSERT") for statement in inline)
    assert sum(statement.startswith("INSERT") for statement in statements) == 1  # only 0
    assert _wait_for(lambda: _checkpoints(statements) == 1)
    rows = writer.submit(lambda db: db.execute("SELECT v FROM t ORDER BY v").fetchall()).result()
    assert rows == [(0,), (1,)]
    writer.close()


async def test_a_record_never_makes_the_event_loop_wait_for_another_process_lock(
    tmp_path: Path,
) -> None:
    """Another process holding the write lock: the inline attempt gives up at once and the
    record goes to the writer thread, which waits for the lock off the event loop."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    other = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    appended = asyncio.ensure_future(ledger.append_async([entry(1)]))
    await asyncio.sleep(0.2)
    assert not appended.done() and time.monotonic() - started < 1  # the loop ran meanwhile
    other.execute("COMMIT")
    await asyncio.wait_for(appended, 10)
    assert [r.run_id for r in ledger.records()] == ["r1"]
    other.close()
    ledger.close()


def _with_inline(writer: GroupWriter, path: Path) -> list[str]:
    """Give `writer` an inline connection to `path`; return the statements it runs."""
    inline: list[str] = []

    def connect_inline() -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
        db.set_trace_callback(inline.append)
        return db

    writer._connect_inline = connect_inline
    return inline


def _inserts(statements: list[str]) -> int:
    return sum(statement.startswith("INSERT") for statement in statements)


def test_records_of_one_turn_share_the_writers_transaction_not_inline(
    traced: Traced, tmp_path: Path
) -> None:
    """Several clients: the records a turn of the loop submits go to the writer together."""
    writer, statements = traced(0.05)
    inline = _with_inline(writer, tmp_path / "x.db")
    writer.submit(_insert(0)).result()

    async def records() -> None:
        await asyncio.gather(*(writer.submit_async(_insert(n), durable=False) for n in (1, 2)))

    asyncio.run(records())
    assert _inserts(inline) == 0 and _inserts(statements) == 3
    writer.close()


def test_after_a_group_of_several_jobs_a_lone_record_goes_to_the_writer(
    traced: Traced, tmp_path: Path
) -> None:
    """The writer's latest group held several jobs (many clients): records keep grouping."""
    writer, statements = traced(0.05)
    inline = _with_inline(writer, tmp_path / "x.db")
    release = hold(writer)
    queued = [writer.submit(_insert(n)) for n in (0, 1)]  # one group of two behind the hold
    release.set()
    for future in queued:
        future.result()

    async def record() -> None:
        await writer.submit_async(_insert(2), durable=False)

    asyncio.run(record())
    assert _inserts(inline) == 0 and _inserts(statements) == 3
    asyncio.run(record())  # the latest group held one job: this one goes inline
    assert _inserts(inline) == 1
    writer.close()


async def test_a_ledger_file_another_process_holds_locked_stops_the_run_before_anything_runs(
    tmp_path: Path,
) -> None:
    """Another process keeps the ledger's file locked past the wait (a shell left in a
    transaction): the continuation ends with `ledger-unavailable`, says nothing ran, and runs
    nothing; the file and why are in the error the ledger raises, for the log. Once the lock
    is let go, the same answer runs, once."""
    path = tmp_path / "ledger.db"
    ledger = SQLiteLedger(path, busy_seconds=0.2)
    agent = sealed_agent(Clock(), ledger)
    events = await pause(agent, "delete project apollo")
    [item] = events[-1]["outcome"]["interrupts"]
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    refused = await answer(agent, events, [approve(item)])
    assert ran(refused) == []
    assert (refused[-1]["type"], refused[-1]["code"]) == ("RUN_ERROR", "ledger-unavailable")
    assert refused[-1]["message"].startswith("Nothing ran: the approval ledger could not be")
    assert str(path) not in refused[-1]["message"]
    with pytest.raises(LedgerUnavailable, match=rf"^The ledger's SQLite file {path} .*locked"):
        ledger.append([entry(1)])
    other.execute("ROLLBACK")
    retried = await answer(agent, events, [approve(item)], run_id="r3")
    again = await answer(agent, events, [approve(item)], run_id="r4")
    assert len(ran(retried)) == 1 and ran(again) == []
    assert [r.kind for r in ledger.records()] == ["pause", "decision", "execution"]


def _sqlite_error(kind: type[sqlite3.Error], message: str, name: str) -> sqlite3.Error:
    """An error as SQLite raises one: with its result code's name (`sqlite_errorname`)."""
    error = kind(message)
    error.sqlite_errorname = name
    return error


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (_sqlite_error(sqlite3.OperationalError, "database or disk is full", "SQLITE_FULL"),
         True),
        (_sqlite_error(sqlite3.OperationalError, "attempt to write a readonly database",
                       "SQLITE_READONLY_DBMOVED"), True),
        (_sqlite_error(sqlite3.OperationalError, "disk I/O error", "SQLITE_IOERR_WRITE"), True),
        (_sqlite_error(sqlite3.DatabaseError, "database disk image is malformed",
                       "SQLITE_CORRUPT"), True),
        (_sqlite_error(sqlite3.OperationalError, "no such table: audit", "SQLITE_ERROR"), False),
        (_sqlite_error(sqlite3.IntegrityError, "UNIQUE constraint failed: audit.seq",
                       "SQLITE_CONSTRAINT_PRIMARYKEY"), False),
        (sqlite3.ProgrammingError("Incorrect number of bindings supplied"), False),
    ],
)  # fmt: skip
def test_only_the_files_troubles_are_an_outage(
    tmp_path: Path, error: sqlite3.Error, outage: bool
) -> None:
    """A full disk, a read-only or damaged file is `LedgerUnavailable` (the run says the
    ledger is down); a statement SQLite refuses as wrong (a table missing, a constraint) is
    a bug, raised as it is rather than hidden as an outage."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    expected: type[Exception] = LedgerUnavailable if outage else type(error)
    with pytest.raises(expected) as raised, ledger._answering():
        raise error
    assert outage is (raised.value.__cause__ is error)
    ledger.close()
