"""A real `redis-server` on a free loopback port, started and stopped by the tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.live_server import free_port

#: What the ledger needs of a Redis (it refuses one without): every write on disk before the
#: answer to it, and no key evicted.
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")


@contextmanager
def redis_server(
    workdir: Path, *settings: str, kill: bool = False, port: int | None = None
) -> Iterator[str]:
    """A redis-server on `port` (a free one by default) keeping its files in `workdir`, with
    `settings` (default `DURABLE`). `kill`: stopped with SIGKILL, as a crash stops it, not
    SIGTERM. The same `workdir` and `port` again: the same server back, with what it kept."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(
            "These tests need redis-server: `apt-get install -y redis-server` (make test does)."
        )
    port = port or free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir),
         *(settings or DURABLE)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # up, with ACLs too
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        if kill:
            proc.kill()
        else:
            proc.terminate()
        proc.wait(timeout=10)
