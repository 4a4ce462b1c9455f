"""Group commit for SQLite: one thread owns the connection and commits queued work together.

Owns `GroupWriter`. Callers `submit` a job (a function of the connection) and get a
`concurrent.futures.Future`; async code awaits it with `asyncio.wrap_future`, so the event
loop keeps serving other streams while the disk syncs. The thread takes everything queued,
runs it in ONE write transaction, each job inside its own SAVEPOINT, and commits once: many
requests share one fsync. A job that raises is rolled back to its savepoint and fails alone;
a failed COMMIT fails every job of the group. A future is resolved only after the COMMIT
returned, so whatever a caller does next happens after its write is durable.

One owning thread is also what makes `:memory:` databases work: every job sees the same
connection whatever thread or event loop submitted it.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: Bounds how long one transaction holds the write lock (and other processes wait).
MAX_GROUP = 256

Job = Callable[[sqlite3.Connection], Any]


@dataclass(frozen=True)
class _Work:
    job: Job
    future: Future[Any]


_STOP = object()


class GroupWriter:
    """A thread that owns one SQLite connection and commits submitted jobs in groups."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, name: str) -> None:
        self._connect = connect
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        # Daemon: a ledger nobody closed must not keep the interpreter alive; `close` (also
        # registered by the ledger to run at exit) drains what was queued first.
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Future[Any]:
        """Queue `job`; its future holds what it returned once its group has committed."""
        future: Future[Any] = Future()
        with self._lock:  # nothing may slip in behind the stop marker
            if self._closed:
                raise RuntimeError("The ledger is closed.")
            self._queue.put(_Work(job, future))
        return future

    def close(self, timeout: float | None = 30) -> None:
        """Finish what was queued, then close the connection and end the thread."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _serve(self) -> None:
        try:
            db = self._connect()
        except Exception as error:  # e.g. an unwritable folder: every caller learns why
            self._fail_all(error)
            return
        try:
            while True:
                group, stop = self._take()
                live = [work for work in group if work.future.set_running_or_notify_cancel()]
                if live:
                    _commit_group(db, live)
                if stop:
                    return
        finally:
            db.close()

    def _take(self) -> tuple[list[_Work], bool]:
        """Block for one job, then take whatever else is already queued."""
        group: list[_Work] = []
        item = self._queue.get()
        while item is not _STOP:
            group.append(item)
            if len(group) >= MAX_GROUP:
                return group, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return group, False
        return group, True

    def _fail_all(self, error: Exception) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if item.future.set_running_or_notify_cancel():
                item.future.set_exception(error)


def _commit_group(db: sqlite3.Connection, group: list[_Work]) -> None:
    outcomes: list[tuple[bool, Any]] = []
    try:
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
        for work in group:
            outcomes.append(_attempt(db, work.job))
        db.execute("COMMIT")
    except Exception as error:  # nothing of this group is durable: every caller learns why
        logger.warning("ledger transaction failed: %s", error)
        _roll_back(db)
        for work in group:
            work.future.set_exception(error)
        return
    for work, (ok, value) in zip(group, outcomes, strict=True):
        if ok:
            work.future.set_result(value)
        else:
            work.future.set_exception(value)


def _attempt(db: sqlite3.Connection, job: Job) -> tuple[bool, Any]:
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
