"""Several worker processes on one port, each accepting on a socket of its own.

uvicorn's `--workers` gives every worker the one socket its parent bound, and a worker woken
for a new connection accepts every connection then waiting: a burst of clients (sixteen
keep-alive connections opened together) all land on one worker while the other idles; in the
HTTP benchmark one worker took 99–100 % of the work in two rounds of three at 16 clients. Here
each worker binds the port itself with `SO_REUSEPORT`, and the kernel spreads new connections
over the workers' sockets by their addresses. No server we use does this (uvicorn, granian and
gunicorn all share the parent's socket), so the supervision is written here, kept to what the
command needs: start N, restart one that dies (later each time while they keep dying, and
not at all once none is left serving), stop all on SIGINT or SIGTERM.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

import uvicorn

logger = logging.getLogger("chat_app.server")

#: Workers dying this many times per worker within `CRASH_WINDOW_SECONDS`, with none left
#: serving, stop the server: they would go on dying (a setting is not it: the parent built
#: the app once already). While one serves, a dead one's place is tried again, later each
#: time (a database or Redis that is down keeps a new worker from starting, for a while).
CRASHES_PER_WORKER = 3
CRASH_WINDOW_SECONDS = 30.0
#: The wait before a replacement once more workers died within the window than there are:
#: the first, doubled for each further death within the window, at most the last.
RESTART_DELAYS = (1.0, 30.0)
#: How long a stopping worker gets to finish its requests before it is killed.
STOP_SECONDS = 10.0


@dataclass
class Restarts:
    """When a worker that died is replaced, and when the server gives up instead."""

    count: int
    _deaths: deque[float] = field(default_factory=deque)

    def died(self, now: float, *, others_serving: bool) -> float | None:
        """A worker died at `now`: when to start its replacement (at once, or later the
        more workers died within `CRASH_WINDOW_SECONDS`); `None`: stop the server, since
        workers kept dying and none is left serving."""
        self._deaths.append(now)
        while self._deaths and self._deaths[0] < now - CRASH_WINDOW_SECONDS:
            self._deaths.popleft()
        recent = len(self._deaths)
        if recent >= CRASHES_PER_WORKER * self.count and not others_serving:
            return None
        if recent <= self.count:
            return now
        first, last = RESTART_DELAYS
        return now + min(last, first * 2.0 ** (recent - self.count - 1))


def reuse_port_available() -> bool:
    return hasattr(socket, "SO_REUSEPORT")


def claim_port(host: str, port: int) -> socket.socket | None:
    """Raise `OSError` (address in use) when another server serves (host, port), or another
    `--workers` parent is starting on it; else a claim to hold while serving (Linux).

    `SO_REUSEPORT` lets any process of the same user bind a port whose sockets all set it:
    a second deployment started on the same port would quietly join this one's workers, and
    the kernel would spread connections over both (their sign-in, database and ledger
    differing). So the port is first bound as any server binds it, without `SO_REUSEPORT`,
    which a listening socket refuses whether or not it set it; a port closed moments ago
    (its connections in TIME_WAIT) stays usable, as it is for uvicorn (`SO_REUSEADDR`). A
    parent whose workers are still starting has no listening socket yet: each parent also
    holds a name of its own in Linux's abstract socket namespace, which the kernel lets go
    when the process ends, however it ends."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
    if not sys.platform.startswith("linux"):
        return None
    claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        claim.bind(f"\0chat_app.server {host}:{port}")
    except OSError:
        claim.close()
        raise OSError(errno.EADDRINUSE, "address already in use (by chat_app starting)") from None
    return claim


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_socket(host: str, port: int, *, listen: bool) -> socket.socket:
    """A TCP socket bound to (host, port) with `SO_REUSEPORT`: the parent's only holds the
    port (it never listens, so the kernel gives it no connection); each worker's listens."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    if listen:
        sock.listen(2048)
    return sock


def _die_with(parent: int) -> None:
    """This process gets SIGTERM when `parent` dies, however it dies (a SIGKILL too), so no
    worker is left serving the port without a supervisor. Linux only (prctl)."""
    if sys.platform.startswith("linux"):
        set_parent_death_signal = 1  # PR_SET_PDEATHSIG
        ctypes.CDLL(None, use_errno=True).prctl(set_parent_death_signal, signal.SIGTERM)
    if os.getppid() != parent:  # it died before that took hold
        sys.exit(0)


def _worker(app: str, host: str, port: int, options: dict[str, Any], parent: int) -> None:
    """One worker process: its own listening socket, and uvicorn serving the app on it."""
    _die_with(parent)
    config = uvicorn.Config(app, factory=True, host=host, port=port, **options)
    uvicorn.Server(config).run(sockets=[port_socket(host, port, listen=True)])


@dataclass
class Workers:
    """`count` worker processes serving `app` (an import string of an app factory)."""

    app: str
    host: str
    port: int
    count: int
    options: dict[str, Any] = field(default_factory=dict)  # uvicorn.Config's others
    _processes: list[BaseProcess] = field(default_factory=list)
    _stopping: bool = False

    def run(self) -> int:
        """Serve until SIGINT or SIGTERM; the exit code (1 when workers kept dying, 3 when
        the port is taken, as uvicorn's)."""
        try:
            # Port 0: the system picks a free one, nobody else's.
            claim = claim_port(self.host, self.port) if self.port else None
            holder = port_socket(self.host, self.port, listen=False)
        except OSError as error:
            logger.error("cannot serve on %s:%d: %s", self.host, self.port, error.strerror)
            return 3
        self.port = holder.getsockname()[1]  # port 0: the one the system chose
        context = multiprocessing.get_context("spawn")
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._stop)
        logger.info(
            "serving on http://%s:%d with %d workers (each its own socket)",
            self.host,
            self.port,
            self.count,
        )
        self._processes = [self._start(context) for _ in range(self.count)]
        code = 0
        restarts = Restarts(self.count)
        due: dict[int, float] = {}  # a dead worker's place: when it is started again
        try:
            while not self._stopping:
                time.sleep(0.2)
                for index, process in enumerate(self._processes):
                    if process.is_alive() or self._stopping:
                        continue
                    now = time.monotonic()
                    if index not in due:  # found dead just now
                        serving = any(p.is_alive() for p in self._processes if p is not process)
                        at = restarts.died(now, others_serving=serving)
                        if at is None:
                            logger.error(
                                "workers kept exiting, %d times per worker in %.0f s (the last "
                                "with code %s), and none is serving; stopping",
                                CRASHES_PER_WORKER, CRASH_WINDOW_SECONDS, process.exitcode,
                            )  # fmt: skip
                            code, self._stopping = 1, True
                            break
                        later = f" in {at - now:.0f} s" if at > now else ""
                        logger.warning(
                            "worker %s exited (code %s); starting another%s", process.pid,
                            process.exitcode, later,
                        )  # fmt: skip
                        due[index] = at
                    if now >= due[index]:
                        del due[index]
                        self._processes[index] = self._start(context)
        finally:
            self._stop_all()
            holder.close()
            if claim is not None:
                claim.close()
        return code

    def _start(self, context: Any) -> BaseProcess:
        process: BaseProcess = context.Process(
            target=_worker,
            args=(self.app, self.host, self.port, self.options, os.getpid()),
            daemon=False,
        )
        process.start()
        return process

    def _stop(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _stop_all(self) -> None:
        for process in self._processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn finishes what it is serving
        deadline = time.monotonic() + STOP_SECONDS
        for process in self._processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
