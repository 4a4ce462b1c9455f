"""Settings that would make the suite depend on the developer's shell are cleared here; and
the app's database, for the tests that run on each kind of it.

    def test_something(database_url: str) -> None:   # runs twice: [sqlite] and [postgresql]
        engine = open_database(database_url)           # a new, empty database each time

`postgres_server` (a `tests.pg_server.PostgresServer`) is started once per session, when the
first test asks for it; without PostgreSQL's server binaries those tests fail, saying to run
`make test` (which installs them).
"""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_app.config import app_database
from tests.pg_server import PostgresMissing, PostgresServer, start_postgres

#: The databases `database_url` gives, in the test ids (`test_x[sqlite]`, `test_x[postgresql]`).
DATABASES = ["sqlite", "postgresql"]


#: The browser tests' folder: its tests run after every other (see below).
_BROWSER_TESTS = Path(__file__).resolve().parent / "ui"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test outside tests/ui first, then the tests marked `long`, then the rest of
    tests/ui, each part in its own order.

    `make test`'s processes (xdist's worksteal) take the collection in equal parts, the
    last ending with tests/ui, and an idle process takes work from the end of another's
    queue: so the long tests (the fifty tabs, the monkey's walks, a session left to run out)
    run where the browser tests begin, beside others' short ones, rather than meeting at the
    end (two met there ran 147 and 142 s, against 86 and 110 s apart). Tests outside
    tests/ui coming first also keeps them clear of the browser's event loop
    (`pytest_runtest_protocol`), as a rule rather than always."""

    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("long") is not None:
            return 1
        return 2 if _BROWSER_TESTS in item.path.resolve().parents else 0

    items.sort(key=rank)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test outside tests/ui runs without the browser tests' event loop.

    Playwright's sync browser (a session fixture of tests/ui) marks its loop as this
    thread's running one between its calls, for the rest of the process, and pytest-asyncio
    then refuses every asyncio test ("Runner.run() cannot be called from a running event
    loop"). The ordering above keeps them apart as a rule, but a process that takes work
    from the other after its first browser test may get some: for those the mark is lifted,
    and put back after (no browser call is made meanwhile)."""
    browsers = asyncio._get_running_loop()
    if browsers is None or _BROWSER_TESTS in item.path.resolve().parents:
        yield
        return
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(browsers)


@pytest.fixture(autouse=True)
def _no_outside_backends(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The demo must run its scripted model, in process, whatever the shell exports.
    monkeypatch.delenv("CHAT_APP_MODEL", raising=False)
    monkeypatch.delenv("CHAT_APP_AGENT_URL", raising=False)
    # The app's database is opened once per process (`app_database`); each test that sets
    # `CHAT_APP_DATABASE_URL` or `CHAT_APP_DATA_DIR` must get its own.
    app_database.cache_clear()
    yield
    app_database.cache_clear()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session, started at its first use."""
    missing = ""
    try:
        server = start_postgres()
    except PostgresMissing as error:
        missing = str(error)
    if missing:
        pytest.fail(missing, pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=DATABASES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The SQLAlchemy URL of a new, empty database, not migrated: a SQLite file in `tmp_path`,
    or a database of its own on `postgres_server` (dropped after the test)."""
    if request.param == "sqlite":
        yield f"sqlite:///{(tmp_path / 'app.sqlite3').as_posix()}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(url)
