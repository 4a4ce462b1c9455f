"""The app's database: where it is, its engine, and its migrations applied at start.

Owns `database_url` (the configured URL, or SQLite in the data folder), `open_database` (an
engine that works, migrated, or `DatabaseUnavailable` naming the URL with its password
hidden), `create_database_engine`, `migrate`, `write_transaction`, `read_snapshot` (reads in
several statements that see one state of the database) and `not_answering` (what a person
reads when a call failed). The tables are in `tables.py`; the migrations in
`migrations/` (Alembic, configured here in code: no `alembic.ini` is read at run time).

Everything SQLite-specific lives here, in the engine's settings: WAL (readers never wait for a
writer), foreign keys enforced, a busy timeout, and transactions begun by SQLAlchemy rather
than by the `sqlite3` module (which would begin none before a SELECT or DDL). A write
transaction takes SQLite's write lock at `BEGIN IMMEDIATE`, so one that reads first cannot
fail on another writer's commit. PostgreSQL (the `postgresql+psycopg` driver; a bare
`postgresql://` or `postgres://` URL is read as that) gets plain `engine.begin()` semantics, at
its default READ COMMITTED; `migrate` holds an advisory lock there so that workers starting at
once take turns, as SQLite's write lock makes them do.

The environment is read by the caller (`python -m chat_app`, `chat_app.config`): this module
takes the URL. Imports nothing of ours (the migrations read `tables`).
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from .seal import make_private_folder

_log = logging.getLogger(__name__)

__all__ = [
    "DATABASE_URL_ENV",
    "DatabaseUnavailable",
    "create_database_engine",
    "data_folder",
    "database_trouble",
    "database_url",
    "migrate",
    "not_answering",
    "open_database",
    "read_snapshot",
    "shown_url",
    "write_transaction",
]

#: The variable that names the app's database (read by the entry points, not here).
DATABASE_URL_ENV = "CHAT_APP_DATABASE_URL"
DATABASE_FILE = "chat_app.sqlite3"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 5000
#: The driver of a `postgresql://` (or `postgres://`) URL that names none: psycopg 3.
POSTGRESQL_DRIVER = "psycopg"
#: The key of the PostgreSQL advisory lock `migrate` holds ("chat_app" in ASCII).
_MIGRATION_LOCK = 0x636861745F617070

#: Execution option set by `write_transaction`; SQLite's BEGIN reads it.
_WRITE = "chat_app_write"
#: `[scheme://]user:password@` in a string SQLAlchemy could not read as a URL.
_PASSWORD_IN_URL = re.compile(r"^((?:[^:/@]+://)?[^:/@]*:)[^@]*@")


class DatabaseUnavailable(RuntimeError):
    """The database cannot be opened or migrated; the message names the URL (password
    hidden) and why."""


def not_answering(error: Exception) -> str:
    """What a person reads when a call to the database failed (the desk's `unavailable`, the
    HTTP API's 503): "The database is not answering (OperationalError). Try again in a
    moment.", the driver's error's kind alone. Its words name the database's address and
    user: they are for the logs and the admins (`database_trouble`), not for whoever called."""
    cause = getattr(error, "orig", None) or error
    return f"The database is not answering ({type(cause).__name__}). Try again in a moment."


def database_trouble(error: Exception) -> str:
    """A failed database call in the driver's own words, for the operator's log."""
    return str(getattr(error, "orig", None) or error)


def data_folder(configured: str | None) -> Path:
    """`configured` (the value of `CHAT_APP_DATA_DIR`), or `.chat_app_data`: set but empty is
    the default too, not the current folder (where `Path("")` would put the databases)."""
    return Path((configured or "").strip() or ".chat_app_data")


def database_url(configured: str | None, data_dir: Path) -> str:
    """`configured` (the value of `CHAT_APP_DATABASE_URL`), or SQLite in `data_dir`."""
    if configured and configured.strip():
        return configured.strip()
    return f"sqlite:///{(data_dir / DATABASE_FILE).as_posix()}"


def shown_url(url: str | URL) -> str:
    """The URL as messages may show it: its password replaced by `***`."""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not a URL SQLAlchemy reads; hide what looks like a password
        return _PASSWORD_IN_URL.sub(r"\1***@", url, count=1)


#: How long a connection to a database server may take (unless its URL says otherwise).
CONNECT_SECONDS = 10


def create_database_engine(url: str | URL) -> Engine:
    """An engine for `url` with the app's settings (for SQLite: WAL, foreign keys, busy
    timeout, SQLAlchemy-controlled transactions; for other databases: connections checked
    before use, and at most `CONNECT_SECONDS` to connect). Connects lazily; `open_database`
    checks it.

    A PostgreSQL URL without a driver, `postgresql://…` or `postgres://…`, uses psycopg 3
    (`postgresql+psycopg://…`, the driver in requirements.txt) rather than SQLAlchemy's
    default psycopg2; one that names its driver (`postgresql+psycopg2://…`) keeps it.
    """
    parsed = _with_default_driver(make_url(url))
    if parsed.get_backend_name() != "sqlite":
        # A server that takes the connection and never answers would hold a thread forever.
        wait = {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_SECONDS}
        return create_engine(parsed, pool_pre_ping=True, connect_args=wait)
    if (
        parsed.database
        and parsed.database != ":memory:"
        and not parsed.database.startswith("file:")
    ):
        make_private_folder(Path(parsed.database).parent)
    engine = create_engine(parsed)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _with_default_driver(url: URL) -> URL:
    backend, _, driver = url.drivername.partition("+")
    if backend not in ("postgresql", "postgres"):
        return url
    return url.set(drivername=f"postgresql+{driver or POSTGRESQL_DRIVER}")


def _sqlite_connect(dbapi_connection: Any, _record: object) -> None:
    # The sqlite3 module must not begin transactions itself (it skips SELECT and DDL);
    # `_sqlite_begin` does, for every transaction SQLAlchemy starts.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        _use_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _use_wal(cursor: Any) -> None:
    """Put the file in WAL mode (it stays so: later connections find it done). Connections
    switching a new file at the same moment (workers starting at once) are told "database is
    locked" at once, not after the busy timeout, as the switch needs the file alone and
    SQLite does not wait for that: try again until the busy timeout has passed."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _sqlite_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(_WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that will write: committed at the end of the block, rolled back on an
    exception. On SQLite it holds the write lock from its start.

        with write_transaction(engine) as connection:
            connection.execute(users.delete().where(users.c.email == email))
    """
    with engine.connect() as connection:
        connection.execution_options(**{_WRITE: True})
        with connection.begin():
            yield connection


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose statements all read the database as it was at the first: for a
    read in several statements, each depending on what the one before found. SQLite's
    transactions are so already; PostgreSQL's, by default, give each statement its own.

        with read_snapshot(engine) as connection:
            ...
    """
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execution_options(isolation_level="REPEATABLE READ")
        yield connection


@contextmanager
def migration_transaction(engine: Engine) -> Iterator[Connection]:
    """`write_transaction` for migrations. On SQLite, foreign keys are not enforced while it
    lasts and are checked at its end: SQLite alters a table by copying it and dropping the
    old one, and with them on, that drop deletes every row that refers to it (`ON DELETE
    CASCADE`: an account's roles and tokens, a conversation's decisions). The pragma is a
    no-op inside a transaction, so it is set on the connection before one begins."""
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _foreign_keys(connection, "OFF")
        try:
            connection.execution_options(**{_WRITE: True})
            with connection.begin():
                yield connection
                if sqlite and (
                    broken := connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                ):
                    raise RuntimeError(f"The migration left rows that refer to none: {broken[:5]}")
        finally:
            if sqlite:
                _foreign_keys(connection, "ON")


def _foreign_keys(connection: Connection, state: Literal["ON", "OFF"]) -> None:
    """SQLite's foreign keys on or off, on the driver's connection (outside a transaction:
    SQLAlchemy would begin one for a statement of its own)."""
    driver: Any = connection.connection.driver_connection
    driver.execute(f"PRAGMA foreign_keys={state}")


def migrate(target: str | Engine) -> None:
    """Bring the database at `target` (a URL or an engine) to the newest migration; a
    database already there is left as it is. Concurrent callers take turns (SQLite's write
    lock; a transaction-scoped advisory lock on PostgreSQL)."""
    # Imported here: Alembic (with Mako) is a quarter of a second, needed once, at start.
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    engine = target if isinstance(target, Engine) else create_database_engine(target)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with migration_transaction(engine) as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
                )
            config.attributes["connection"] = connection
            before = MigrationContext.configure(connection).get_current_revision()
            command.upgrade(config, "head")
            after = MigrationContext.configure(connection).get_current_revision()
        if before != after:
            # An upgrade is news to the operator (what changed, from what); a new database's
            # first migration is not (the start's first line says which sign-in is on).
            _log.log(logging.INFO if before else logging.DEBUG,
                     "Migrated the database %s from %s to %s", shown_url(engine.url),
                     before or "empty", after)  # fmt: skip
    finally:
        if engine is not target:
            engine.dispose()


def open_database(url: str) -> Engine:
    """The app's database at start: an engine, connected once and migrated, returned with no
    connection open: a process that forks after opening it (Reflex's supervisor imports the
    app, then forks its workers) must not hand one connection to all its children.

    Raises:
        DatabaseUnavailable: the URL is not usable, the database cannot be reached or opened,
            or it cannot be migrated; the message names the URL with its password hidden.
    """
    from alembic.util import CommandError

    shown = shown_url(url)
    try:
        engine = create_database_engine(url)
    except ImportError as error:
        raise DatabaseUnavailable(
            f"Cannot open the database {shown}: its driver is not installed ({error})"
        ) from None
    except (ArgumentError, NoSuchModuleError, OSError) as error:
        raise DatabaseUnavailable(f"Cannot open the database {shown}: {error}") from None
    try:
        with engine.connect():
            pass
        migrate(engine)
    except DBAPIError as error:
        engine.dispose()
        reason = error.orig if error.orig is not None else error
        raise DatabaseUnavailable(f"Cannot open the database {shown}: {reason}") from None
    except CommandError as error:  # e.g. a database migrated by a newer version of the app
        engine.dispose()
        said = f"Cannot migrate the database {shown}: {error}"
        if "Can't locate revision" in str(error):
            said += (
                ". A newer version of chat_app migrated it: run that version (or a newer "
                "one), or restore the backup taken before it; this one leaves it unchanged."
            )
        raise DatabaseUnavailable(said) from None
    if not _in_memory(engine.url):  # there the connection is the database
        engine.dispose()  # each process connects on first use
    return engine


def _in_memory(url: URL) -> bool:
    """A SQLite database that lives only in its connections (`sqlite://`, `:memory:`)."""
    return url.get_backend_name() == "sqlite" and (
        url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"
    )
