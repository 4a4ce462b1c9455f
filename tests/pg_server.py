"""A throwaway PostgreSQL server for the tests: `initdb` into a temporary folder, started on a
free port of 127.0.0.1, stopped and deleted at the end.

    server = start_postgres()      # PostgresMissing when there are no server binaries
    try:
        url = server.create_database()   # postgresql+psycopg://postgres@127.0.0.1:N/test_…
        ...
        server.drop_database(url)
    finally:
        server.stop()

The binaries are Debian's `postgresql` package (`make test` installs it): `initdb`, `pg_ctl`
and `postgres` on `PATH` or in `/usr/lib/postgresql/<version>/bin`. PostgreSQL refuses to run
as root, so as root the server runs as the `postgres` user (which the package creates), else
as `nobody`. The server is a child of the caller, and on Linux it shuts down when the thread
that started it dies, however that happens (a killed test run leaves no server behind; only
its folder). Settings are for speed, not durability: no fsync, no full-page writes. Collation
is ICU's `en-US` when the server has ICU (as Debian's has), so ORDER BY on text sorts as a
typical production database does, not by code point as SQLite does.
"""

from __future__ import annotations

import ctypes
import glob
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import make_url

from tests.live_server import free_port

__all__ = ["PostgresMissing", "PostgresServer", "find_postgres_bin", "start_postgres"]

#: The database's superuser (`initdb -U`); with `-A trust` it needs no password.
SUPERUSER = "postgres"
#: How long the server may take to accept connections.
START_TIMEOUT_S = 60
_BINARIES = ("initdb", "pg_ctl", "postgres")
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_init_zero": "off",
    "max_connections": "200",
}


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def find_postgres_bin() -> Path | None:
    """The folder with `initdb`, `pg_ctl` and `postgres`: from `PATH`, else the newest
    `/usr/lib/postgresql/<version>/bin`; `None` when there is none."""
    initdb = shutil.which("initdb")
    found = [Path(initdb).resolve().parent] if initdb is not None else []
    by_version = sorted(
        (Path(path).parent for path in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda folder: _version_key(folder.parent.name),
        reverse=True,
    )
    for folder in found + by_version:
        if all((folder / name).exists() for name in _BINARIES):
            return folder
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _die_with_parent() -> Callable[[], None] | None:
    """For `preexec_fn`: the child gets SIGQUIT (PostgreSQL's immediate shutdown) when the
    thread that started it dies, even by SIGKILL. Linux only (`None` elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    set_parent_death_signal = 1  # PR_SET_PDEATHSIG

    def preexec() -> None:
        prctl(set_parent_death_signal, signal.SIGQUIT)

    return preexec


@dataclass(frozen=True, slots=True)
class _RunAs:
    """The user the server's processes run as (`None`: this process's own)."""

    uid: int | None = None
    gid: int | None = None

    @classmethod
    def for_server(cls) -> _RunAs:
        if os.geteuid() != 0:
            return cls()
        for name in (SUPERUSER, "nobody"):
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                continue
            return cls(entry.pw_uid, entry.pw_gid)
        raise RuntimeError("Running as root, and there is no 'postgres' or 'nobody' user.")

    def own(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def _env(self) -> dict[str, str]:
        # A clean environment: no PGDATA, PGPORT, … of the caller's shell.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}

    def run(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            cwd=cwd,
            env=self._env(),
            user=self.uid,
            group=self.gid,
            extra_groups=[] if self.uid is not None else None,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
        )

    def start(self, args: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as output:
            return subprocess.Popen(
                args,
                cwd=cwd,
                env=self._env(),
                user=self.uid,
                group=self.gid,
                extra_groups=[] if self.uid is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal is for pytest, not for it
                preexec_fn=_die_with_parent(),
            )


class PostgresServer:
    """A running server (see `start_postgres`). Each `create_database` is a new empty database
    on it; `stop` ends the server and deletes its folder."""

    def __init__(
        self,
        *,
        bin_dir: Path,
        folder: Path,
        port: int,
        process: subprocess.Popen[bytes],
        run_as: _RunAs,
    ) -> None:
        self.bin_dir = bin_dir
        self.folder = folder
        self.port = port
        self._process = process
        self._run_as = run_as
        self._stopped = False

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        """The server's log (gone once it is stopped)."""
        return self.folder / "server.log"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of `database` on this server."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=SUPERUSER,
            dbname="postgres",
            autocommit=True,
            connect_timeout=10,
        )

    def create_database(self, prefix: str = "test") -> str:
        """A new empty database with a unique name; its SQLAlchemy URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:16]}"
        with self._admin() as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drops the database of `url` (made by `create_database`), closing what is still
        connected to it."""
        name = make_url(url).database
        assert name and name != "postgres", url
        with self._admin() as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        """Stops the server at once (`pg_ctl stop -m immediate`) and deletes its folder."""
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._process.poll() is None:
                self._run_as.run(
                    [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.data_dir),
                     "-m", "immediate", "-w"],
                    cwd=self.folder,
                )  # fmt: skip
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres(parent: Path | None = None) -> PostgresServer:
    """A new server in a new folder under `parent` (the system's temporary folder by default:
    it must be reachable by the server's user, which pytest's `tmp_path` is not when root),
    accepting connections. Takes one to two seconds.

    Raises:
        PostgresMissing: there are no PostgreSQL server binaries (`make test` installs them).
        RuntimeError: `initdb` or the server failed; the message has their output.
    """
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        raise PostgresMissing(
            "These tests need a PostgreSQL server (initdb, pg_ctl and postgres on PATH or in "
            "/usr/lib/postgresql/<version>/bin). Run `make test`, which installs Debian's "
            "postgresql package, or `sudo apt-get install -y postgresql`."
        )
    run_as = _RunAs.for_server()
    folder = Path(tempfile.mkdtemp(prefix="chat_app_pg_", dir=parent))
    try:
        run_as.own(folder)
        _initdb(bin_dir, folder, run_as)
        return _start(bin_dir, folder, run_as)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _initdb(bin_dir: Path, folder: Path, run_as: _RunAs) -> None:
    base = [str(bin_dir / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U", SUPERUSER,
            "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"]  # fmt: skip
    icu = ["--locale-provider=icu", "--icu-locale=en-US"]
    done = run_as.run(base + icu, cwd=folder)
    if done.returncode != 0 and "icu" in (done.stderr + done.stdout).lower():
        # A server built without ICU (or older than 15): the C collation, as SQLite sorts.
        shutil.rmtree(folder / "data", ignore_errors=True)
        done = run_as.run(base, cwd=folder)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def _start(bin_dir: Path, folder: Path, run_as: _RunAs) -> PostgresServer:
    """Starts the server on a free port (another, when a race took the first) and waits until
    it accepts connections."""
    sockets = folder / "sockets"
    sockets.mkdir()
    run_as.own(sockets)
    settings = [arg for key, value in _SETTINGS.items() for arg in ("-c", f"{key}={value}")]
    log = folder / "server.log"
    for _ in range(3):
        port = free_port()
        args = [str(bin_dir / "postgres"), "-D", str(folder / "data"), "-p", str(port),
                "-k", str(sockets), *settings]  # fmt: skip
        server = PostgresServer(
            bin_dir=bin_dir,
            folder=folder,
            port=port,
            process=run_as.start(args, cwd=folder, log=log),
            run_as=run_as,
        )
        if _answers(server):
            return server
        if server._process.poll() is None:  # still starting, after a minute
            server._process.kill()
        server._process.wait()
        if "already in use" not in log.read_text(errors="replace"):
            break
    raise RuntimeError(f"The PostgreSQL server did not start:\n{log.read_text(errors='replace')}")


def _answers(server: PostgresServer) -> bool:
    """Whether the server accepts connections before it exits or `START_TIMEOUT_S` passes."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while server._process.poll() is None and time.monotonic() < deadline:
        try:
            with server._admin() as connection:
                connection.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            time.sleep(0.05)
    return False
