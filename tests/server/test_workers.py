"""`python -m chat_app.server --workers N`: N processes on one port, each accepting on a
socket of its own (`SO_REUSEPORT`), kept running by the parent.

Real processes: the parent and its workers are found in /proc, and each worker's accepted
connections counted by its open sockets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from chat_app.server.workers import CRASH_WINDOW_SECONDS, CRASHES_PER_WORKER, Restarts
from tests.live_server import free_port
from tests.server.process_app import server_env

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _workers(parent: int) -> list[int]:
    """The parent's worker processes (not multiprocessing's resource tracker)."""
    return sorted(pid for pid in _children(parent) if b"spawn_main" in _command_line(pid))


def _command_line(pid: int) -> bytes:
    """The process's command line; empty once it has exited (a worker being replaced)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _sockets(pid: int) -> int:
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return count


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait(check: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {timeout:.0f} s")
        time.sleep(0.1)


class Served:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log
        self.base = f"http://127.0.0.1:{port}"

    def answers(self) -> bool:
        try:
            return httpx.get(f"{self.base}/api/tools", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def all_ready(self, count: int) -> bool:
        """`count` workers, each listening (its own socket) and past its start-up."""
        pids = _workers(self.proc.pid)
        return len(pids) == count and self.log.read_text().count("startup complete") >= count


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    port, log = free_port(), tmp_path / "server.log"
    env = server_env(CHAT_APP_AUTH="none", CHAT_APP_DATA_DIR=str(tmp_path / "data"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chat_app.server", "--port", str(port), "--workers", "2"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = Served(proc, port, log)
    seen: set[int] = set()
    try:
        _wait(lambda: server.all_ready(2), "two workers did not start")
        seen.update(_children(proc.pid))
        yield server
    finally:
        seen.update(_children(proc.pid))
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        for pid in seen:  # whatever the test did, nothing of it outlives the test
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_sixteen_clients_at_once_are_spread_over_both_workers(served: Served) -> None:
    """Sixteen keep-alive connections opened together are accepted by both workers, each on
    its own socket (the kernel picks one by the connection's addresses)."""
    workers = _workers(served.proc.pid)
    before = {pid: _sockets(pid) for pid in workers}
    clients = [httpx.Client(base_url=served.base, timeout=10) for _ in range(16)]
    try:
        for client in clients:
            assert client.get("/api/tools").status_code == 200
        accepted = {pid: _sockets(pid) - before[pid] for pid in workers}
        assert sum(accepted.values()) == 16, accepted
        assert min(accepted.values()) >= 1, accepted  # all 16 on one: odds 1 in 32,768
    finally:
        for client in clients:
            client.close()


def test_a_dead_worker_is_replaced_and_sigterm_stops_them_all(served: Served) -> None:
    first, second = _workers(served.proc.pid)
    os.kill(first, signal.SIGKILL)
    _wait(lambda: first not in _workers(served.proc.pid) and served.all_ready(2) and
          len(_workers(served.proc.pid)) == 2, "no worker replaced the killed one")  # fmt: skip
    assert second in _workers(served.proc.pid)
    assert "exited (code -9); starting another" in served.log.read_text()
    for _ in range(8):  # whichever socket the kernel picks, it answers
        with httpx.Client(base_url=served.base, timeout=10) as client:
            assert client.get("/api/tools").status_code == 200

    workers = _workers(served.proc.pid)
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(30) == 0
    for pid in workers:
        assert _gone(pid)
    assert not served.answers()


def test_workers_die_with_a_parent_that_was_killed(served: Served) -> None:
    """SIGKILL gives the parent no chance to stop its workers: they stop themselves (the
    kernel tells them), so no worker keeps the port without a supervisor."""
    workers = _workers(served.proc.pid)
    served.proc.kill()
    served.proc.wait(30)
    _wait(lambda: all(_gone(pid) for pid in workers), "the workers outlived their parent", 30)
    assert not served.answers()


def test_a_second_server_on_the_same_port_does_not_join_the_first(
    served: Served, tmp_path: Path
) -> None:
    """`SO_REUSEPORT` would let a second deployment (another sign-in, database and ledger)
    bind the port beside the first, the kernel then sharing connections between them: it is
    refused at start, as a single-worker server on a busy port is, and the first keeps
    every connection."""
    env = server_env(CHAT_APP_AUTH="password", CHAT_APP_DATA_DIR=str(tmp_path / "other"))
    for workers in ("2", "1"):
        second = subprocess.run(
            [sys.executable, "-m", "chat_app.server", "--port", str(served.port),
             "--workers", workers],
            cwd=ROOT, env=env, capture_output=True, timeout=START_TIMEOUT,
        )  # fmt: skip
        assert second.returncode == 3, (workers, second.stderr[-2000:])
        assert b"address already in use" in second.stderr.lower(), second.stderr[-2000:]
    for _ in range(8):  # every connection still the first server's (sign-in: none)
        with httpx.Client(base_url=served.base, timeout=10) as client:
            assert client.get("/api/me").json()["method"] == "none"


def test_a_second_server_is_refused_while_the_first_is_still_starting(tmp_path: Path) -> None:
    """A parent whose workers have not yet bound the port (they import the app first, for
    seconds) holds it already: a second started meanwhile is refused, whoever wins."""
    port = free_port()
    command = [sys.executable, "-m", "chat_app.server", "--port", str(port), "--workers", "2"]
    env = server_env(CHAT_APP_AUTH="none", CHAT_APP_DATA_DIR=str(tmp_path / "first"))
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)  # fmt: skip
    server = Served(first, port, tmp_path / "unused")
    try:
        # Its workers held before they bind the port: the window, made as long as it takes.
        _wait(lambda: len(_workers(first.pid)) == 2, "the first server started no workers")
        workers = _workers(first.pid)
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        assert not server.answers()  # nothing listens on the port yet
        other = server_env(CHAT_APP_AUTH="none", CHAT_APP_DATA_DIR=str(tmp_path / "second"))
        second = subprocess.run(command, cwd=ROOT, env=other, capture_output=True,
                                timeout=START_TIMEOUT)  # fmt: skip
        assert second.returncode == 3, second.stderr[-2000:]
        assert b"address already in use" in second.stderr.lower(), second.stderr[-2000:]
        for pid in workers:
            os.kill(pid, signal.SIGCONT)
        _wait(server.answers, "the first server did not come up")
    finally:
        seen = _children(first.pid)
        first.kill()
        first.wait(30)
        for pid in seen:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_that_keeps_dying_is_tried_again_later_while_another_serves() -> None:
    """A database or Redis that is down keeps a new worker from starting: its place is tried
    again, later each time, and the server serving on its other workers is not stopped."""
    restarts = Restarts(count=2)
    waits = [restarts.died(float(t), others_serving=True) for t in range(8)]
    assert [None if at is None else at - t for t, at in enumerate(waits)] == [
        0, 0, 1, 2, 4, 8, 16, 30,
    ]


def test_workers_that_keep_dying_with_none_serving_stop_the_server() -> None:
    restarts = Restarts(count=2)
    for t in range(CRASHES_PER_WORKER * 2 - 1):
        assert restarts.died(float(t), others_serving=False) is not None
    assert restarts.died(6.0, others_serving=False) is None


def test_deaths_long_ago_no_longer_count() -> None:
    restarts = Restarts(count=1)
    for t in range(5):
        restarts.died(float(t), others_serving=True)
    later = 5 + CRASH_WINDOW_SECONDS + 1
    assert restarts.died(later, others_serving=True) == later  # at once, as a first death
