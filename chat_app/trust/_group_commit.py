"""Group commit for SQLite: one thread owns the connection and commits queued work together.

Owns `GroupWriter`. Callers `submit` a job (a function of the connection) and get a
`concurrent.futures.Future`; coroutines `submit_async` and await an asyncio future, so the
event loop keeps serving other streams while the disk syncs. The thread takes everything
queued, runs it in ONE write transaction and commits once: many requests share one fsync.
A job that raises fails alone: the transaction is rolled back and the group's other jobs run
again, each in its own SAVEPOINT (so a job may run twice, and must only touch the database).
A failed COMMIT fails every job of the group. A future is resolved only after the COMMIT
returned, so whatever a caller does next happens after its write is committed.

Durability per job: a `durable` job's group commits with `synchronous=FULL` (the write-ahead
log is fsynced before its caller goes on); a group of other jobs commits with `NORMAL` (in
the log, safe when the process dies, not yet when the power fails). The log is one file
written in order, so the next durable commit makes every earlier write durable with it, and
no write waits more than about `SYNC_WITHIN` seconds for its fsync (a checkpoint, when no
durable commit came first). A power cut can lose only the last non-durable writes, never one
that precedes a durable write.

One owning thread is also what makes `:memory:` databases work: every job sees the same
connection whatever thread or event loop submitted it.

Inline writes (opt-in, `inline=`): with one client at a time (the writer's latest group
held one job, nothing is queued or being committed, and the event loop submitted one
non-durable job this turn), that job is committed on the loop's own thread through a second
connection, when no other process holds the write lock; otherwise it is queued as above. Such
a commit does no fsync (it is a write into the log), so it costs the loop about what the
round trip to the thread did, without the two thread wake-ups and the waits for them: the
pause and execution records of a lone client's cycle (see `benchmarks/FINDINGS.md`, "As
shipped (issue 19)"). With many clients the writer's groups share a transaction and a
wake-up, which pays more (measured), so then nothing goes inline. Durability is unchanged:
the commit is in the log before the caller goes on, the next durable commit's fsync covers
it (one log file), and the writer syncs it within `SYNC_WITHIN` otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: Bounds how long one transaction holds the write lock (and other processes wait).
MAX_GROUP = 256
#: How long non-durable writes may wait in the unsynced log while no durable write comes.
SYNC_WITHIN = 1.0

Job = Callable[[sqlite3.Connection], Any]


@dataclass(frozen=True)
class _Work:
    job: Job
    #: A `concurrent.futures.Future` for a blocking caller, or an asyncio future of `loop`.
    future: Any
    loop: asyncio.AbstractEventLoop | None = None
    #: Fsynced before the caller hears back; otherwise committed, and synced soon after.
    durable: bool = True

    def start(self) -> bool:
        """False when the caller gave up before its job ran (then it writes nothing)."""
        if self.loop is None:
            return bool(self.future.set_running_or_notify_cancel())
        return not self.future.cancelled()


_STOP = object()
_FORK_LOCK = threading.Lock()


class GroupWriter:
    """A thread that owns one SQLite connection and commits submitted jobs in groups."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        name: str,
        inline: Callable[[], sqlite3.Connection] | None = None,
    ) -> None:
        self._connect = connect
        #: Opens the connection for inline writes: the same database, any thread, and a busy
        #: timeout of 0 (the event loop never waits for another process's lock).
        self._connect_inline = inline
        self._name = name
        self._closed = False
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: Per event loop, what its coroutines submitted during the current iteration.
        self._pending: dict[asyncio.AbstractEventLoop, list[_Work]] = {}
        #: Held while anyone works on the database: the writer for a group or a sync, a caller
        #: for an inline write (which only tries it, and queues its job if it is taken).
        self._busy = threading.Lock()
        self._inline_db: sqlite3.Connection | None = None  # a forked child opens its own
        #: Since when inline commits have waited for an fsync (None: none waits; the writer
        #: takes it over, under `_busy`).
        self._inline_unsynced_since: float | None = None
        #: Jobs handed to the thread and not yet settled (inline writes wait their turn).
        self._outstanding = 0
        #: How many jobs the writer's latest group held (1 with one client at a time).
        self._last_group = 0
        # Daemon: a ledger nobody closed must not keep the interpreter alive; `close` (also
        # registered by the ledger to run at exit) drains what was queued first.
        self._thread = threading.Thread(
            target=self._serve, args=(self._queue,), name=self._name, daemon=True
        )
        self._thread.start()

    def _here(self) -> None:
        """A forked process (servers that import the app, then fork workers) inherits this
        object but not its thread: it gets its own thread, queue and connection."""
        if self._pid != os.getpid():
            with _FORK_LOCK:
                if self._pid != os.getpid():
                    self._start()

    def submit(self, job: Job, *, durable: bool = True) -> Future[Any]:
        """Queue `job`; its future holds what it returned once its group has committed."""
        self._here()
        future: Future[Any] = Future()
        self._put([_Work(job, future, durable=durable)])
        return future

    def submit_async(self, job: Job, *, durable: bool = True) -> asyncio.Future[Any]:
        """`submit` for coroutines. What one event loop submits during one iteration reaches
        the thread in one hand-off, and each group's results come back in one callback per
        loop: waking threads costs more than the writes themselves."""
        if self._closed:
            raise RuntimeError("The ledger is closed.")
        self._here()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        batch = self._pending.get(loop)
        if batch is None:
            batch = self._pending[loop] = []
            loop.call_soon(self._flush, loop)
        batch.append(_Work(job, future, loop, durable))
        return future

    def _inline(self, batch: list[_Work]) -> list[Outcome] | None:
        """Run and commit `batch` here in one transaction, without a sync (the caller holds
        `_busy`); `None` when the database is locked by another process or the COMMIT failed:
        then it is queued (and its jobs may run again, as after any rollback)."""
        db = self._inline_db
        if db is None:
            assert self._connect_inline is not None
            db = self._inline_db = self._connect_inline()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # busy: the writer thread will wait for the lock
            return None
        changes = db.total_changes
        try:
            outcomes = _run_jobs(db, batch)
            db.execute("COMMIT")
        except sqlite3.Error:
            _roll_back(db)  # nothing written: the writer runs them again
            return None
        if db.total_changes != changes and self._inline_unsynced_since is None:
            self._inline_unsynced_since = time.monotonic()  # the writer syncs it (`_serve`)
        return outcomes

    def close(self, timeout: float | None = 30) -> None:
        """Finish what was queued, then close the connection and end the thread."""
        if self._closed and self._pid != os.getpid():
            return  # closed before the fork: there is no thread to start and stop here
        self._here()
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        with self._busy:
            if self._inline_db is not None:
                self._inline_db.close()
                self._inline_db = None

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._pending.pop(loop, [])
        if self._may_inline(batch) and self._busy.acquire(blocking=False):
            try:
                outcomes = self._inline(batch)
            finally:
                self._busy.release()
            if outcomes is not None:
                _settle(list(zip((work.future for work in batch), outcomes, strict=True)))
                return
        try:
            self._put(batch)
        except RuntimeError as error:  # closed in the meantime
            _resolve(batch, [(False, error)] * len(batch))

    def _may_inline(self, batch: list[_Work]) -> bool:
        """One record (no answer: its fsync must not block the loop), while the writer has
        nothing in hand (order kept) and its latest group was a single job. With many
        clients a turn's records and the writer's groups share one transaction and one
        wake-up, which paid more than committing here (server CPU per cycle +10 % at 16
        clients when they went inline too; -13 % at one client alone)."""
        return (
            self._connect_inline is not None
            and not self._outstanding
            and self._last_group <= 1
            and len(batch) == 1
            and not batch[0].durable
        )

    def _put(self, batch: list[_Work]) -> None:
        with self._lock:  # nothing may slip in behind the stop marker
            if self._closed:
                raise RuntimeError("The ledger is closed.")
            self._outstanding += len(batch)
            self._queue.put(batch)

    def _serve(self, jobs: queue.SimpleQueue[Any]) -> None:
        try:
            db = self._connect()
        except Exception as error:  # e.g. an unwritable folder: every caller learns why
            _fail_all(jobs, error)
            return
        log = _Log(db)
        try:
            while True:
                with self._busy:
                    self._take_inline(log)
                    if log.time_left() == 0.0:  # due, even if work keeps coming
                        log.sync()
                    timeout = log.time_left()
                if timeout is None and self._connect_inline is not None:
                    # Inline commits do not wake this thread (a wake-up per cycle costs more
                    # than the commit): it looks for them every SYNC_WITHIN while idle, so
                    # one made after this wait began is still synced within SYNC_WITHIN.
                    timeout = SYNC_WITHIN
                try:
                    group, stop = _take(jobs, timeout)
                except queue.Empty:  # time to sync (or to look for inline commits): above
                    continue
                if group:
                    durable = any(work.durable for work in group)
                    with self._busy:
                        # Inline commits before this one: a durable COMMIT fsyncs them too.
                        self._take_inline(log)
                        log.prepare(durable=durable)
                        changes = db.total_changes
                        outcomes, committed = _commit_group(db, group)
                        wrote = committed and db.total_changes != changes
                        log.committed(durable=durable, wrote=wrote)
                    # Before the callers hear back: what they submit next may go inline.
                    self._last_group = len(group)
                    with self._lock:
                        self._outstanding -= len(group)
                    _resolve(group, outcomes)
                if stop:
                    return
        finally:
            with self._busy:
                self._take_inline(log)
                if log.time_left() is not None:
                    log.sync()  # other processes may keep the log open: closing need not
            db.close()

    def _take_inline(self, log: _Log) -> None:
        """Count the inline commits that wait for an fsync as the writer's own (under `_busy`)."""
        if self._inline_unsynced_since is not None:
            log.unsynced_since(self._inline_unsynced_since)
            self._inline_unsynced_since = None


class _Log:
    """The connection's `synchronous` level, switched per group, and since when commits have
    been waiting for an fsync (None: every commit so far is on disk)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._full = int(db.execute("PRAGMA synchronous").fetchone()[0]) >= 2
        self._unsynced_since: float | None = None

    def prepare(self, *, durable: bool) -> None:
        if durable != self._full:
            self._db.execute("PRAGMA synchronous=" + ("FULL" if durable else "NORMAL"))
            self._full = durable

    def committed(self, *, durable: bool, wrote: bool) -> None:
        """After each group. A COMMIT that wrote nothing syncs nothing; a durable one that
        wrote fsyncs the whole log, the earlier non-durable commits with it."""
        if not wrote:
            return
        if durable:
            self._unsynced_since = None
        elif self._unsynced_since is None:
            self._unsynced_since = time.monotonic()

    def unsynced_since(self, since: float) -> None:
        """Commits made elsewhere (inline) have waited for an fsync since `since`."""
        if self._unsynced_since is None or since < self._unsynced_since:
            self._unsynced_since = since

    def time_left(self) -> float | None:
        """How long the oldest unsynced commit may still wait (None: nothing waits), so the
        bound holds under a steady stream of non-durable writes too."""
        if self._unsynced_since is None:
            return None
        return max(0.0, self._unsynced_since + SYNC_WITHIN - time.monotonic())

    def sync(self) -> None:
        """Put the waiting commits on disk. A checkpoint fsyncs the log before it copies
        frames back; only when it copied them all is that sure to include ours. Otherwise (a
        reader holds an old snapshot, another process is checkpointing) try again later."""
        try:
            busy, frames, copied = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as error:
            logger.warning("ledger sync failed: %s", error)
            busy, frames, copied = 1, 0, 0
        if not busy and frames == copied:  # also (0, -1, -1): no log (":memory:")
            self._unsynced_since = None
        else:
            self._unsynced_since = time.monotonic()  # the next try is SYNC_WITHIN away


def _take(jobs: queue.SimpleQueue[Any], timeout: float | None) -> tuple[list[_Work], bool]:
    """Block for one batch (raise `queue.Empty` after `timeout`), then take whatever else is
    already queued."""
    group: list[_Work] = []
    item = jobs.get(timeout=timeout)
    while item is not _STOP:
        group.extend(item)
        if len(group) >= MAX_GROUP:
            return group, False
        try:
            item = jobs.get_nowait()
        except queue.Empty:
            return group, False
    return group, True


def _fail_all(jobs: queue.SimpleQueue[Any], error: Exception) -> None:
    while (item := jobs.get()) is not _STOP:
        _resolve(item, [(False, error)] * len(item))


Outcome = tuple[bool, Any]  # (True, what the job returned) or (False, the exception)
_GAVE_UP: Outcome = (False, None)  # never delivered: the caller's future is already done


def _resolve(group: list[_Work], outcomes: list[Outcome]) -> None:
    """Hand each caller its outcome: blocking callers directly, each loop in one callback."""
    per_loop: dict[asyncio.AbstractEventLoop, list[tuple[Any, Outcome]]] = {}
    for work, outcome in zip(group, outcomes, strict=True):
        if work.loop is None:
            _settle([(work.future, outcome)])
        else:
            per_loop.setdefault(work.loop, []).append((work.future, outcome))
    for loop, settled in per_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, settled)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass


def _settle(settled: list[tuple[Any, Outcome]]) -> None:
    for future, (ok, value) in settled:
        if future.done():  # the caller cancelled (before its job ran, or while it committed)
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _commit_group(db: sqlite3.Connection, group: list[_Work]) -> tuple[list[Outcome], bool]:
    """Each job's outcome, and whether the transaction committed."""
    try:
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
        outcomes = _run_jobs(db, group)
        db.execute("COMMIT")
    except Exception as error:  # nothing of this group is durable: every caller learns why
        logger.warning("ledger transaction failed: %s", error)
        _roll_back(db)
        return [(False, error)] * len(group), False
    return outcomes, True


def _run_jobs(db: sqlite3.Connection, group: list[_Work]) -> list[Outcome]:
    """Run the jobs one after the other in the open transaction, optimistically without
    savepoints: two statements less per job, and every statement costs this thread a GIL
    hand-off. If one raises, the transaction is rolled back and begun again, and the jobs
    run again, each in its own savepoint (so a job must only touch the database)."""
    outcomes: list[Outcome] = []
    for work in group:
        # Checked as late as possible: a caller that gave up meanwhile writes nothing.
        if not work.start():
            outcomes.append(_GAVE_UP)
            continue
        try:
            outcomes.append((True, work.job(db)))
        except Exception as error:
            _roll_back(db)
            db.execute("BEGIN IMMEDIATE")
            if len(group) == 1:
                return [(False, error)]
            return _run_again(db, group, [*outcomes, (False, error)])
    return outcomes


def _run_again(db: sqlite3.Connection, group: list[_Work], tried: list[Outcome]) -> list[Outcome]:
    """After a rollback: the jobs that ran, again in savepoints; the rest as `_run_jobs` would."""
    outcomes: list[Outcome] = []
    for index, work in enumerate(group):
        if index < len(tried):
            ran = tried[index] is not _GAVE_UP
            outcomes.append(_attempt(db, work.job) if ran else _GAVE_UP)
        else:
            outcomes.append(_attempt(db, work.job) if work.start() else _GAVE_UP)
    return outcomes


def _attempt(db: sqlite3.Connection, job: Job) -> Outcome:
    """Run one job in its own savepoint: if it raises, only its writes are undone."""
    db.execute("SAVEPOINT job")
    try:
        value = job(db)
    except Exception as error:
        db.execute("ROLLBACK TO job")
        db.execute("RELEASE job")
        return False, error
    db.execute("RELEASE job")
    return True, value


def _roll_back(db: sqlite3.Connection) -> None:
    # Must not raise: the group's callers are waiting for their futures.
    try:
        if db.in_transaction:
            db.execute("ROLLBACK")
    except sqlite3.Error as error:
        logger.warning("ledger rollback failed: %s", error)
