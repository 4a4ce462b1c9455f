"""`python -m chat_app users …` and `tokens …`, run as a person would (a subprocess, with the
data folder in a temporary directory), checked against the accounts it leaves behind."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest
from sqlalchemy import Engine

from chat_app.cli import main
from chat_app.trust.accounts import Accounts
from chat_app.trust.store import database_url, open_database
from tests.pg_server import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse"


@dataclass(frozen=True)
class Result:
    status: int
    out: str
    err: str


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


class Cli(Protocol):
    def __call__(
        self, *args: str, stdin: str = "", env: dict[str, str] | None = None
    ) -> Result: ...


@pytest.fixture
def cli(data_dir: Path) -> Cli:
    """Runs `python -m chat_app ARGS` with the data folder in `data_dir` and no other
    `CHAT_APP_` setting of the shell."""
    base = {key: value for key, value in os.environ.items() if not key.startswith("CHAT_APP_")}
    base["CHAT_APP_DATA_DIR"] = str(data_dir)

    def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Result:
        done = subprocess.run(
            [sys.executable, "-m", "chat_app", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**base, **(env or {})},
            timeout=60,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


class InProcess(Protocol):
    def __call__(self, *args: str, stdin: str = "", prompt: bool = False) -> Result: ...


@pytest.fixture
def in_process(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> InProcess:
    """`chat_app.cli.main(ARGS)` in this process (faster than a subprocess, for the many
    refusals); the password comes from stdin unless `prompt`."""
    for key in [key for key in os.environ if key.startswith("CHAT_APP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(data_dir))

    def run(*args: str, stdin: str = "", prompt: bool = False) -> Result:
        capsys.readouterr()
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        wants_password = args[:2] in (("users", "add"), ("users", "set-password"))
        status = main([*args, *(["--password-stdin"] if wants_password and not prompt else [])])
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture
def engine(data_dir: Path) -> Iterator[Engine]:
    engine = open_database(database_url(None, data_dir))
    yield engine
    engine.dispose()


def test_users_add_reads_the_password_from_stdin_and_list_shows_roles(
    cli: Cli, engine: Engine
) -> None:
    added = cli(
        "users", "add", "Ada@Example.com", "--role", "finance", "--role", "ops",
        "--name", "Ada", "--password-stdin", stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert added == Result(0, "Added ada@example.com (roles: finance, ops).\n", "")
    listed = cli("users", "list")
    assert listed.status == 0
    header, row = listed.out.splitlines()
    assert header.split() == ["EMAIL", "NAME", "ROLES", "CREATED"]
    assert row.split()[:3] == ["ada@example.com", "Ada", "finance,ops"]
    identity = Accounts(engine).check_password("ada@example.com", PASSWORD)
    assert identity is not None and identity.roles == frozenset({"finance", "ops"})


def test_a_postgresql_url_without_a_driver_is_used_as_given(
    cli: Cli, postgres_server: PostgresServer
) -> None:
    url = postgres_server.create_database()
    bare = url.replace("postgresql+psycopg://", "postgresql://")  # as a deployment writes it
    try:
        added = cli(
            "users", "add", "ada@example.com", "--role", "finance", "--password-stdin",
            stdin=PASSWORD + "\n", env={"CHAT_APP_DATABASE_URL": bare},
        )  # fmt: skip
        assert added == Result(0, "Added ada@example.com (roles: finance).\n", "")
        engine = open_database(url)
        try:
            identity = Accounts(engine).check_password("ada@example.com", PASSWORD)
        finally:
            engine.dispose()
        assert identity is not None and identity.roles == frozenset({"finance"})
    finally:
        postgres_server.drop_database(url)


def test_a_duplicate_user_exits_1_with_a_message_and_no_traceback(cli: Cli) -> None:
    assert cli("users", "add", "ada@example.com", "--password-stdin", stdin=PASSWORD).status == 0
    again = cli("users", "add", "ADA@example.com", "--password-stdin", stdin=PASSWORD)
    assert again == Result(
        1, "", "python -m chat_app: error: ada@example.com already has an account.\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("users", "add", "bob@example.com"), "A password is at least 8 characters."),
        (("users", "add", "bob"), "'bob' is not an email address."),
        (("users", "add", "bob@example.com", "--role", "a b"), "'a b' is not a role name"),
        (("users", "remove", "bob@example.com"), "There is no account bob@example.com."),
        (("users", "set-password", "bob@example.com"), "There is no account bob@example.com."),
        (("tokens", "create", "--user", "bob@example.com", "--name", "ci"),
         "add it first with `python -m chat_app users add bob@example.com`"),
        (("tokens", "revoke", "ci"), "No active token named 'ci'."),
        (("tokens", "revoke", "ci", "--user", "ADA@example.com"), "named 'ci' of ada@"),
    ],
)
def test_a_refused_command_exits_1_and_says_why(
    in_process: InProcess, args: tuple[str, ...], message: str
) -> None:
    assert in_process("users", "add", "ada@example.com", stdin=PASSWORD).status == 0
    refused = in_process(*args, stdin="short\n")
    assert refused.status == 1
    assert refused.out == ""
    assert refused.err.startswith("python -m chat_app: error: ")
    assert message in refused.err


def test_a_token_name_two_owners_share_needs_the_owner(in_process: InProcess) -> None:
    for email in ("ada@example.com", "sam@example.com"):
        in_process("users", "add", email, stdin=PASSWORD)
        in_process("tokens", "create", "--user", email, "--name", "ci")
    refused = in_process("tokens", "revoke", "ci")
    assert refused.status == 1
    assert "(ada@example.com, sam@example.com); name the user" in refused.err
    assert in_process("tokens", "revoke", "ci", "--user", "sam@example.com").status == 0


def test_the_prompt_asks_twice_and_refuses_two_different_passwords(
    in_process: InProcess, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    answers = iter([PASSWORD, "something else", PASSWORD, PASSWORD])
    prompts: list[str] = []

    def getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("getpass.getpass", getpass)
    refused = in_process("users", "add", "ada@example.com", prompt=True)
    assert refused == Result(
        1, "", "python -m chat_app: error: The two passwords differ; nothing was changed.\n"
    )
    assert in_process("users", "add", "ada@example.com", prompt=True).status == 0
    assert prompts[:2] == [
        "Password for ada@example.com (at least 8 characters): ",
        "Repeat it: ",
    ]
    assert Accounts(engine).check_password("ada@example.com", PASSWORD) is not None


def test_empty_lists_say_how_to_add_the_first(in_process: InProcess) -> None:
    assert in_process("users", "list").out.startswith("No accounts. Add one with:")
    assert in_process("tokens", "list").out.startswith("No API tokens. Create one with:")


def test_set_password_changes_the_password(in_process: InProcess, engine: Engine) -> None:
    in_process("users", "add", "ada@example.com", stdin=PASSWORD)
    changed = in_process("users", "set-password", "ada@example.com", stdin="battery staple\n")
    assert changed == Result(0, "Changed the password of ada@example.com.\n", "")
    accounts = Accounts(engine)
    assert accounts.check_password("ada@example.com", "battery staple") is not None
    assert accounts.check_password("ada@example.com", PASSWORD) is None


def test_a_created_token_is_printed_once_works_and_stops_working_once_revoked(
    cli: Cli, engine: Engine
) -> None:
    cli("users", "add", "ada@example.com", "--role", "finance", "--password-stdin", stdin=PASSWORD)
    created = cli("tokens", "create", "--user", "ada@example.com", "--name", "ci")
    assert created.status == 0
    token = created.out.strip()
    assert token.startswith("cat_") and "\n" not in token
    assert "will not be shown again" in created.err
    accounts = Accounts(engine)
    identity = accounts.identity_for_token(token)
    assert identity is not None
    assert (identity.email, identity.method, identity.token_name, identity.roles) == (
        "ada@example.com", "token", "ci", frozenset({"finance"}),
    )  # fmt: skip

    listed = cli("tokens", "list")
    assert token not in listed.out
    assert listed.out.splitlines()[1].split()[:2] == ["ci", "ada@example.com"]
    assert listed.out.splitlines()[1].endswith("UTC  active")

    revoked = cli("tokens", "revoke", "ci", "--user", "ada@example.com")
    assert revoked == Result(0, "Revoked the API token 'ci' of ada@example.com.\n", "")
    assert accounts.identity_for_token(token) is None
    assert [t.active for t in accounts.list_tokens()] == [False]


def test_users_remove_takes_the_accounts_tokens_with_it(
    in_process: InProcess, engine: Engine
) -> None:
    in_process("users", "add", "ada@example.com", stdin=PASSWORD)
    token = in_process("tokens", "create", "--user", "ada@example.com", "--name", "ci").out.strip()
    removed = in_process("users", "remove", "ADA@example.com")
    assert removed == Result(0, "Removed ada@example.com and its API tokens.\n", "")
    assert Accounts(engine).identity_for_token(token) is None
    assert in_process("users", "list").out.startswith("No accounts.")


def test_an_unusable_data_folder_is_named(in_process: InProcess, data_dir: Path) -> None:
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir.write_text("a file where the data folder should be")
    refused = in_process("users", "list")
    assert refused.status == 1
    url = f"sqlite:///{data_dir.as_posix()}/chat_app.sqlite3"
    assert refused.err.startswith(f"python -m chat_app: error: Cannot open the database {url}: ")


def test_an_unusable_database_url_is_named_without_its_password(cli: Cli) -> None:
    elsewhere = {"CHAT_APP_DATABASE_URL": "postgresql+nosuchdriver://ops:hunter2@db.internal/app"}
    refused = cli("users", "list", env=elsewhere)
    assert refused.status == 1
    assert refused.out == ""
    assert "Cannot open the database postgresql+nosuchdriver://ops:***@db.internal/app" in (
        refused.err
    )
    assert "hunter2" not in refused.err
    assert "Traceback" not in refused.err
