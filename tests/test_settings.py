"""Deployment settings (`chat_app.config`): a number of seconds that is not one stops the
start naming its variable, and the data folder the app makes is its owner's alone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_app.agent import ScriptedModel
from chat_app.client import MockConnection
from chat_app.config import (
    RemoteAgent,
    Security,
    data_dir,
    remote_agent_from_env,
    remote_agent_problems,
    security_from_env,
    settings_lines,
)
from chat_app.demo import demo_model
from chat_app.desk import Desk, DeskStore
from chat_app.notify import NotifySettings
from chat_app.trust import SQLiteLedger
from chat_app.trust.authn import AuthConfig
from chat_app.trust.store import open_database
from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[1]
TTL = "CHAT_APP_INTERRUPT_TTL_SECONDS"


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (TTL, "CHAT_APP_SECURE", "CHAT_APP_SECRET", "CHAT_APP_LEDGER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def opened() -> Iterator[list[Security]]:
    """What a test opened with `security_from_env`, closed after it."""
    opened: list[Security] = []
    yield opened
    for security in opened:
        if isinstance(security.ledger, SQLiteLedger):
            security.ledger.close()


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "='abc' is not a finite number of seconds above 0 (default 86400)."),
        ("nan", "='nan' is not a finite number of seconds above 0 (default 86400)."),
        ("inf", "='inf' is not a finite number of seconds above 0 (default 86400)."),
        ("-5", "='-5' is not a finite number of seconds above 0 (default 86400)."),
        ("0", "='0' is not a finite number of seconds above 0 (default 86400)."),
        # At most fifty years: a sealed id writes its expiry as 8 hex digits (until 2106).
        ("1e12", "='1e12' is more than 1577836800 seconds (18262 days); give at most that "
                 "(default 86400)."),
    ],
)  # fmt: skip
def test_an_interrupt_ttl_that_is_not_usable_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv(TTL, value)
    with pytest.raises(ValueError) as refused:
        security_from_env()
    assert str(refused.value) == TTL + message


def test_the_interrupt_ttl_is_read_and_has_a_default(
    monkeypatch: pytest.MonkeyPatch, opened: list[Security]
) -> None:
    opened.append(security_from_env())
    monkeypatch.setenv(TTL, " 90.5 ")
    opened.append(security_from_env())
    monkeypatch.setenv(TTL, "")  # set but empty: the default, as for the other seconds
    opened.append(security_from_env())
    assert [security.ttl_seconds for security in opened] == [86400, 90.5, 86400]
    assert [security.sealer.ttl_seconds for security in opened if security.sealer] == [
        86400, 90.5, 86400
    ]  # fmt: skip
    monkeypatch.setenv("CHAT_APP_SECURE", "0")  # nothing sealed: nothing expires
    assert security_from_env().ttl_seconds is None


NOT_A_NUMBER = "is not a finite number of seconds above 0"
#: Past fifty years (`LONGEST_DURATION`) a time the desk works out is no date: 1e12 seconds for
#: CHAT_APP_NOTIFY_IDLE_SECONDS let the app start, then broke every run that paused.
TOO_LONG = "is more than 1577836800 seconds (18262 days)"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (TTL, "abc", NOT_A_NUMBER),
        ("CHAT_APP_DESK_LEASE_SECONDS", "inf", NOT_A_NUMBER),
        ("CHAT_APP_TIMER_SECONDS", "-1", NOT_A_NUMBER),
        ("CHAT_APP_NOTIFY_IDLE_SECONDS", "nan", NOT_A_NUMBER),
        ("CHAT_APP_NOTIFY_IDLE_SECONDS", "1e12", TOO_LONG),
        ("CHAT_APP_DESK_LEASE_SECONDS", "1e12", TOO_LONG),
        ("CHAT_APP_RUN_SECONDS", "0", NOT_A_NUMBER),
        ("CHAT_APP_HEARTBEAT_SECONDS", "0", NOT_A_NUMBER),
        ("CHAT_APP_HEARTBEAT_SECONDS", "7200", "is more than 3600 seconds (1 h)"),
    ],
)
def test_the_standalone_server_stops_on_seconds_it_cannot_use(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_APP_")}
    environment.update(CHAT_APP_DATA_DIR=str(tmp_path / "data"), **{variable: value})
    finished = subprocess.run(
        [sys.executable, "-m", "chat_app.server", "--port", str(free_port())],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert finished.returncode == 1
    said_first = f"chat_app.server: {variable}={value!r} {said}"
    # One line naming the variable, no traceback.
    assert finished.stderr.strip().startswith(said_first), finished.stderr


def test_the_data_folder_the_app_makes_is_its_owners_alone(
    tmp_path: Path, opened: list[Security]
) -> None:
    opened.append(security_from_env())  # makes the folder, the secret and the ledger in it
    folder = tmp_path / "data"
    assert {path.name for path in folder.iterdir()} >= {"secret", "ledger.db"}
    assert mode_of(folder) == 0o700  # others may not list it, nor open what is in it
    assert mode_of(folder / "secret") == 0o600


@pytest.mark.parametrize("value", ["", "  "])
def test_a_data_folder_set_but_empty_is_the_default_not_the_current_folder(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CHAT_APP_DATA_DIR", value)
    assert data_dir() == Path(".chat_app_data")


def test_a_data_folder_that_exists_keeps_its_permissions(
    tmp_path: Path, opened: list[Security]
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    folder.chmod(0o750)  # the operator's choice: a group that backs it up, say
    opened.append(security_from_env())
    assert (folder / "ledger.db").exists()
    assert mode_of(folder) == 0o750


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1"])
def test_a_demo_token_delay_that_is_not_usable_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.delenv("CHAT_APP_MODEL", raising=False)
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", value)
    with pytest.raises(ValueError) as refused:
        demo_model()
    assert str(refused.value) == (
        f"CHAT_APP_DEMO_TOKEN_DELAY_MS={value!r} is not a finite number of milliseconds, "
        "0 or more (default 25)."
    )


@pytest.mark.parametrize(("value", "seconds"), [("", 0.025), ("0", 0.0), (" 7.5 ", 0.0075)])
def test_a_demo_token_delay_is_read_in_milliseconds(
    monkeypatch: pytest.MonkeyPatch, value: str, seconds: float
) -> None:
    monkeypatch.delenv("CHAT_APP_MODEL", raising=False)
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", value)
    model = demo_model()
    assert isinstance(model, ScriptedModel)
    assert model._token_delay == pytest.approx(seconds)


def test_a_ledger_redis_that_does_not_answer_stops_the_start_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHAT_APP_LEDGER_URL", f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(
        ValueError, match=r"^CHAT_APP_LEDGER_URL: The Redis at 127\.0\.0\.1:\d+ does"
    ):
        security_from_env()


@pytest.mark.parametrize(
    ("url", "sign_in", "read"),
    [
        ("", "", None),
        ("", "none", None),
        (" http://agent:8001/api/chat ", "", RemoteAgent("http://agent:8001/api/chat", False)),
        ("http://agent:8001/api/chat", " Proxy ", RemoteAgent("http://agent:8001/api/chat", True)),
    ],
)
def test_the_remote_agent_and_how_the_app_signs_in_to_it_are_read(
    monkeypatch: pytest.MonkeyPatch, url: str, sign_in: str, read: RemoteAgent | None
) -> None:
    monkeypatch.setenv("CHAT_APP_AGENT_URL", url)
    monkeypatch.setenv("CHAT_APP_AGENT_SIGN_IN", sign_in)
    assert remote_agent_from_env("password") == read


@pytest.mark.parametrize(
    ("url", "sign_in", "message"),
    [
        (
            "http://agent:8001/api/chat",
            "token",
            "CHAT_APP_AGENT_SIGN_IN='token' is not a way to sign in to the agent; use proxy "
            "(each request names its person, as a sign-in proxy does) or none.",
        ),
        (
            "",
            "proxy",
            "CHAT_APP_AGENT_SIGN_IN=proxy needs CHAT_APP_AGENT_URL, the agent to sign in to.",
        ),
    ],
)
def test_a_way_to_sign_in_to_the_agent_the_app_cannot_use_is_refused(
    monkeypatch: pytest.MonkeyPatch, url: str, sign_in: str, message: str
) -> None:
    monkeypatch.setenv("CHAT_APP_AGENT_URL", url)
    monkeypatch.setenv("CHAT_APP_AGENT_SIGN_IN", sign_in)
    with pytest.raises(ValueError) as refused:
        remote_agent_from_env("password")
    assert str(refused.value) == message


def test_the_agent_is_signed_in_to_only_with_someone_signed_in_and_demo_people_are_said_to_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without sign-in the app has nobody to name, and the agent would refuse every request:
    the start stops. Demo people are passed on, with a warning that anyone may be anyone."""
    monkeypatch.setenv("CHAT_APP_AGENT_URL", "http://agent:8001/api/chat")
    monkeypatch.setenv("CHAT_APP_AGENT_SIGN_IN", "proxy")
    with pytest.raises(ValueError) as refused:
        remote_agent_from_env("none")
    assert "with CHAT_APP_AUTH=none nobody is signed in" in str(refused.value)
    demo = remote_agent_from_env("demo")
    [warning] = remote_agent_problems(demo, "demo")
    assert warning.startswith("CHAT_APP_AGENT_SIGN_IN=proxy with demo sign-in: the agent at ")
    assert remote_agent_problems(remote_agent_from_env("password"), "password") == []
    monkeypatch.setenv("CHAT_APP_AGENT_SIGN_IN", "none")
    assert remote_agent_problems(remote_agent_from_env("demo"), "demo") == []


def test_the_start_names_a_sqlite_database_by_its_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative SQLite URL names a folder only the start's working directory knows: the
    start's line says the whole path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    engine = open_database("sqlite:///here/app.sqlite3")
    try:
        nowhere = MockConnection(lambda body: [])
        desk = Desk(DeskStore(engine), connection_for=lambda run_as: nowhere)
        lines = settings_lines(AuthConfig(mode="demo"), None, Security(sealer=None, ledger=None),
                               desk, NotifySettings(), agent="in this process")  # fmt: skip
        ledger = SQLiteLedger(Path("here/ledger.db"))
        try:
            kept = settings_lines(AuthConfig(mode="demo"), None,
                                  Security(sealer=None, ledger=ledger), desk, NotifySettings(),
                                  agent="in this process")  # fmt: skip
        finally:
            ledger.close()
    finally:
        engine.dispose()
    assert f"database: sqlite:///{tmp_path / 'here' / 'app.sqlite3'}" in lines
    assert "audit trail and ledger: off (CHAT_APP_SECURE=0): ids are not sealed and answers not " \
        "recorded" in lines
    assert f"audit trail and ledger: SQLite file {tmp_path / 'here' / 'ledger.db'}" in kept
    assert "notifications: none" in lines and "live updates: this process alone" in lines
