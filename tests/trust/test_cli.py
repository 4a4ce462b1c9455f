"""`python -m chat_app users …` and `tokens …`, run as a person would (a subprocess, with the
data folder in a temporary directory), checked against the accounts it leaves behind."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest
from sqlalchemy import Engine

from chat_app.cli import main
from chat_app.trust import AuditEntry, SQLiteLedger
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


@pytest.fixture
def database(data_dir: Path) -> str:
    """The line every command writes first on stderr, naming the database it uses."""
    return f"database: {database_url(None, data_dir)}\n"


class Cli(Protocol):
    def __call__(
        self, *args: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> Result: ...


@pytest.fixture
def cli(data_dir: Path) -> Cli:
    """Runs `python -m chat_app ARGS` with the data folder in `data_dir` and no other
    `CHAT_APP_` setting of the shell; in a session of its own, so with no terminal (as in a
    script or CI), even when pytest has one."""
    base = {key: value for key, value in os.environ.items() if not key.startswith("CHAT_APP_")}
    base["CHAT_APP_DATA_DIR"] = str(data_dir)
    base["PYTHONPATH"] = str(ROOT)  # for a `cwd` other than the repository

    def run(
        *args: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> Result:
        done = subprocess.run(
            [sys.executable, "-m", "chat_app", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd,
            env={**base, **(env or {})},
            timeout=60,
            start_new_session=True,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


class _Terminal(io.StringIO):
    """Standard input that is a terminal, so the CLI asks (tests replace `getpass.getpass`)."""

    def isatty(self) -> bool:
        return True


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
        monkeypatch.setattr("sys.stdin", _Terminal(stdin) if prompt else io.StringIO(stdin))
        wants_password = args[:2] in (("users", "add"), ("users", "set-password")) and (
            "--no-password" not in args
        )
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
    cli: Cli, engine: Engine, database: str
) -> None:
    added = cli(
        "users", "add", "Ada@Example.com", "--role", "finance", "--role", "ops",
        "--name", "Ada", "--password-stdin", stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert added == Result(0, "Added ada@example.com (roles: finance, ops).\n", database)
    listed = cli("users", "list")
    assert listed.status == 0
    assert listed.err == database
    header, row = listed.out.splitlines()
    assert header.split() == ["EMAIL", "NAME", "ROLES", "FROM", "POLICY", "PASSWORD", "CREATED"]
    assert row.split()[:5] == ["ada@example.com", "Ada", "finance,ops", "finance", "yes"]
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
        assert added.status == 0
        assert added.out == "Added ada@example.com (roles: finance).\n"
        engine = open_database(url)
        try:
            identity = Accounts(engine).check_password("ada@example.com", PASSWORD)
        finally:
            engine.dispose()
        assert identity is not None and identity.roles == frozenset({"finance"})
    finally:
        postgres_server.drop_database(url)


def test_a_postgresql_password_is_never_shown(cli: Cli, postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database()
    # The test server trusts every connection, so any password is let in, and must stay hidden.
    with_password = url.replace("postgresql+psycopg://postgres@", "postgresql://postgres:hunter2@")
    assert with_password != url
    try:
        listed = cli("users", "list", env={"CHAT_APP_DATABASE_URL": with_password})
    finally:
        postgres_server.drop_database(url)
    assert listed.status == 0
    shown = url.replace("postgres@", "postgres:***@")
    assert listed.err == f"database: {shown}\n"
    assert "hunter2" not in listed.out + listed.err


def test_run_from_another_folder_the_lists_name_the_database_they_read(
    cli: Cli, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    relative = {"CHAT_APP_DATA_DIR": "data"}
    file = (elsewhere.resolve() / "data" / "chat_app.sqlite3").as_posix()
    for command in (("users", "list"), ("tokens", "list")):
        listed = cli(*command, env=relative, cwd=elsewhere)
        assert listed.status == 0
        assert listed.err == f"database: sqlite:///{file}\n"  # absolute: four slashes
        assert listed.out.startswith("No ")  # stdout as before, for scripts


def test_a_duplicate_user_exits_1_with_a_message_and_no_traceback(cli: Cli, database: str) -> None:
    assert cli("users", "add", "ada@example.com", "--password-stdin", stdin=PASSWORD).status == 0
    again = cli("users", "add", "ADA@example.com", "--password-stdin", stdin=PASSWORD)
    assert again == Result(
        1, "", database + "python -m chat_app: error: ada@example.com already has an account.\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("users", "add", "bob@example.com"), "A password is at least 8 characters."),
        (("users", "add", "bob"), "'bob' is not an email address."),
        (  # an override: what follows it reads right to left, another address
            ("users", "add", "bob\u202e@example.com", "--password-stdin"),
            "'bob\\u202e@example.com' is not an email address.",
        ),
        (
            ("users", "add", "bob\x1b[31m@example.com", "--password-stdin"),
            "'bob\\x1b[31m@example.com' is not an email address.",
        ),
        (("users", "add", "bob@example.com", "--role", "a b"), "'a b' is not a role name"),
        (
            ("users", "add", "bob@example.com", "--name", "Bob\x1b[31m"),
            "A name cannot hold control characters (a tab, a line break, a terminal escape, "
            "a right-to-left override); 'Bob\\x1b[31m' has one.",
        ),
        (  # displayed as "EveAda"
            ("users", "add", "bob@example.com", "--name", "Eve\u202eadA"),
            "'Eve\\u202eadA' has one.",
        ),
        (("users", "remove", "bob@example.com"), "There is no account bob@example.com."),
        (("users", "set-password", "bob@example.com"), "There is no account bob@example.com."),
        (
            ("users", "set-roles", "bob@example.com", "--no-roles"),
            "There is no account bob@example.com.",
        ),
        (("users", "set-roles", "ada@example.com", "--role", "a b"), "'a b' is not a role name"),
        (
            ("tokens", "create", "--user", "bob@example.com", "--name", "ci"),
            "add it first with `python -m chat_app users add bob@example.com --no-password`",
        ),
        (
            ("tokens", "create", "--user", "ada@example.com", "--name", "   "),
            "A token's name cannot be blank: give one that says what the token is for, e.g. "
            "--name ci.",
        ),
        (
            ("tokens", "create", "--user", "ada@example.com", "--name", "x" * 101),
            "A token's name is 1 to 100 characters, none of them NUL.",
        ),
        (
            ("tokens", "create", "--user", "ada@example.com", "--name", "ci\x1b[2J"),
            "A token's name cannot hold control characters",
        ),
        (("tokens", "revoke", "ci"), "No active token named 'ci'."),
        (("tokens", "revoke", "ci", "--user", "nobody@example.com"), "no account nobody@"),
        (("tokens", "revoke", "ci", "--user", "ADA@example.com"), "named 'ci' of ada@"),
    ],
)
def test_a_refused_command_exits_1_and_says_why(
    in_process: InProcess, engine: Engine, database: str, args: tuple[str, ...], message: str
) -> None:
    assert in_process("users", "add", "ada@example.com", stdin=PASSWORD).status == 0
    refused = in_process(*args, stdin="short\n")
    assert refused.status == 1
    assert refused.out == ""
    assert refused.err.startswith(database + "python -m chat_app: error: ")
    assert message in refused.err
    assert refused.err.count("\n") == 2  # the database, and one line saying why
    accounts = Accounts(engine)
    assert [a.email for a in accounts.list_users()] == ["ada@example.com"]
    assert accounts.list_tokens() == []


def test_a_token_name_two_owners_share_needs_the_owner(in_process: InProcess) -> None:
    for email in ("ada@example.com", "sam@example.com"):
        in_process("users", "add", email, stdin=PASSWORD)
        in_process("tokens", "create", "--user", email, "--name", "ci")
    refused = in_process("tokens", "revoke", "ci")
    assert refused.status == 1
    assert "(ada@example.com, sam@example.com); name the user" in refused.err
    assert in_process("tokens", "revoke", "ci", "--user", "sam@example.com").status == 0


def test_the_prompt_asks_twice_and_refuses_two_different_passwords(
    in_process: InProcess, monkeypatch: pytest.MonkeyPatch, engine: Engine, database: str
) -> None:
    answers = iter([PASSWORD, "something else", PASSWORD, PASSWORD])
    prompts: list[str] = []

    def getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("getpass.getpass", getpass)
    refused = in_process("users", "add", "ada@example.com", prompt=True)
    assert refused == Result(
        1,
        "",
        database + "python -m chat_app: error: The two passwords differ; nothing was changed.\n",
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


@pytest.mark.parametrize("command", ["add", "set-password"])
def test_without_a_terminal_or_password_stdin_the_password_is_refused_in_one_line(
    cli: Cli, engine: Engine, database: str, command: str
) -> None:
    if command == "set-password":
        cli("users", "add", "ada@example.com", "--password-stdin", stdin=PASSWORD)
    refused = cli("users", command, "ada@example.com", stdin="")  # as `</dev/null` gives
    assert refused == Result(
        1,
        "",
        database + "python -m chat_app: error: There is no terminal to ask for the password on: "
        "give it as the first line of standard input, with --password-stdin.\n",
    )
    accounts = Accounts(engine)
    assert [a.email for a in accounts.list_users()] == (
        ["ada@example.com"] if command == "set-password" else []
    )
    if command == "set-password":
        assert accounts.check_password("ada@example.com", PASSWORD) is not None


def test_input_ending_at_the_prompt_or_an_empty_stdin_is_no_password(
    in_process: InProcess, monkeypatch: pytest.MonkeyPatch, engine: Engine, database: str
) -> None:
    def getpass(prompt: str = "") -> str:
        raise EOFError  # what Ctrl-D at the prompt raises

    monkeypatch.setattr("getpass.getpass", getpass)
    ended = in_process("users", "add", "ada@example.com", prompt=True)
    assert ended == Result(
        1,
        "",
        database + "\npython -m chat_app: error: No password was given (input ended); "
        "nothing was changed.\n",
    )
    empty = in_process("users", "add", "ada@example.com", stdin="")
    assert empty.status == 1
    assert empty.err.endswith(
        "error: --password-stdin read no password: standard input was empty. "
        "Give the password as its first line.\n"
    )
    assert Accounts(engine).list_users() == []


def test_set_password_changes_the_password(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    in_process("users", "add", "ada@example.com", stdin=PASSWORD)
    changed = in_process("users", "set-password", "ada@example.com", stdin="battery staple\n")
    assert changed == Result(0, "Changed the password of ada@example.com.\n", database)
    accounts = Accounts(engine)
    assert accounts.check_password("ada@example.com", "battery staple") is not None
    assert accounts.check_password("ada@example.com", PASSWORD) is None


def test_a_service_account_has_no_password_and_acts_by_its_token(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    """A bot's account, or someone's behind a sign-in proxy, is made without a password:
    nobody signs in to it with one (whatever they type), its tokens work, and `set-password`
    gives it one."""
    added = in_process("users", "add", "ci-bot@example.com", "--role", "ops", "--no-password")
    assert added == Result(
        0, "Added ci-bot@example.com (roles: ops, no password: API tokens and a sign-in proxy "
        "only).\n", database,
    )  # fmt: skip
    assert in_process("users", "list").out.splitlines()[1].split()[:3] == [
        "ci-bot@example.com", "ops", "none"
    ]  # fmt: skip
    accounts = Accounts(engine)
    for typed in ("!", "", PASSWORD):
        assert accounts.check_password("ci-bot@example.com", typed) is None
    token = in_process("tokens", "create", "--user", "ci-bot@example.com", "--name", "ci").out
    identity = accounts.identity_for_token(token.strip())
    assert identity is not None and identity.roles == frozenset({"ops"})

    in_process("users", "set-password", "ci-bot@example.com", stdin=PASSWORD)
    assert accounts.check_password("ci-bot@example.com", PASSWORD) is not None
    assert in_process("users", "list").out.splitlines()[1].split()[2] == "yes"


def test_a_password_and_no_password_together_are_refused(cli: Cli) -> None:
    both = cli("users", "add", "ci-bot@example.com", "--no-password", "--password-stdin",
               stdin=PASSWORD)  # fmt: skip
    assert both.status == 2
    assert "not allowed with argument" in both.err
    assert cli("users", "list").out.startswith("No accounts.")


def test_a_created_token_is_printed_once_works_and_stops_working_once_revoked(
    cli: Cli, engine: Engine, database: str
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
    assert revoked == Result(0, "Revoked the API token 'ci' of ada@example.com.\n", database)
    assert accounts.identity_for_token(token) is None
    assert [t.active for t in accounts.list_tokens()] == [False]


def test_users_remove_takes_the_accounts_tokens_with_it(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    in_process("users", "add", "ada@example.com", stdin=PASSWORD)
    token = in_process("tokens", "create", "--user", "ada@example.com", "--name", "ci").out.strip()
    removed = in_process("users", "remove", "ADA@example.com")
    assert removed == Result(0, "Removed ada@example.com and its API tokens.\n", database)
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


def test_set_roles_replaces_the_roles_for_tokens_and_sessions_at_once(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    # Rita: the demo policy's [roles] give her nothing (`test_roles_taken_from_an_account_…`).
    in_process("users", "add", "rita@example.com", "--role", "finance", stdin=PASSWORD)
    token = in_process("tokens", "create", "--user", "rita@example.com", "--name", "ci").out.strip()
    signed_in = time.time()
    accounts = Accounts(engine)

    def roles_now() -> tuple[frozenset[str], frozenset[str]]:
        by_token = accounts.identity_for_token(token)
        by_session = accounts.session_account("rita@example.com", signed_in)
        assert by_token is not None and not isinstance(by_session, str)
        return by_token.roles, by_session.roles

    changed = in_process(
        "users", "set-roles", "RITA@example.com", "--role", "ops", "--role", "admin"
    )
    assert changed == Result(
        0, "Changed the roles of rita@example.com to admin, ops (they were: finance).\n", database
    )
    assert roles_now() == (frozenset({"admin", "ops"}), frozenset({"admin", "ops"}))

    cleared = in_process("users", "set-roles", "rita@example.com", "--no-roles")
    assert cleared.out == "Changed the roles of rita@example.com to none (they were: admin, ops).\n"
    assert roles_now() == (frozenset(), frozenset())
    assert [t.active for t in accounts.list_tokens()] == [True]  # unlike remove, then add


def test_set_roles_needs_roles_or_no_roles_and_its_help_says_so(cli: Cli, engine: Engine) -> None:
    cli("users", "add", "ada@example.com", "--role", "finance", "--password-stdin", stdin=PASSWORD)
    refused = cli("users", "set-roles", "ada@example.com")
    assert refused.status == 2
    assert "one of the arguments --role --no-roles is required" in refused.err
    assert Accounts(engine).list_users()[0].roles == ("finance",)  # not cleared by a slip
    helped = cli("users", "set-roles", "--help")
    assert helped.status == 0
    assert "--no-roles" in helped.out and "exactly the roles named" in helped.out


def test_roles_are_stored_in_lower_case_once_each_as_the_policy_matches_them(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    added = in_process(
        "users", "add", "rita@example.com", "--role", "FINANCE", "--role", "finance",
        "--role", " Ops ", "--role", "Auditor", stdin=PASSWORD,
    )  # fmt: skip
    # The demo policy names finance and ops; the app itself uses auditor: no warning.
    assert added == Result(0, "Added rita@example.com (roles: auditor, finance, ops).\n", database)
    identity = Accounts(engine).account("rita@example.com")
    assert identity is not None and identity.roles == frozenset({"auditor", "finance", "ops"})


POLICY = """
known_roles = ["treasury"]

[roles]
finance = ["ada@example.com"]

[[rules]]
name = "big"
tool = "transfer"
approvers = ["role:finance"]
escalate_after = "1h"
escalate_to = ["role:treasury"]
"""


@pytest.mark.parametrize(
    ("policy", "role", "warning"),
    [
        (
            "demo",
            "nosuchrole",
            "warning: the role nosuchrole grants nothing yet. The policy in force ({demo}) names "
            "admin, finance, ops; the app itself knows admin, auditor. Change the account's roles "
            "with `python -m chat_app users set-roles`.\n",
        ),
        (
            "demo",
            "fiance",
            "warning: the role fiance grants nothing yet. The policy in force ({demo}) names "
            "admin, finance, ops; the app itself knows admin, auditor. Did you mean finance for "
            "fiance? Change the account's roles with `python -m chat_app users set-roles`.\n",
        ),
        ("file", "treasury", None),  # named by escalate_to (and known_roles)
        ("file", "ops", "The policy in force ({file}) names finance, treasury;"),
        ("none", "finance", "No policy is in force (CHAT_APP_POLICY=none); the app itself"),
        (
            "missing",
            "finance",
            "warning: the role names were not checked against the policy, which cannot be read: "
            "{missing}: cannot be read",
        ),
    ],
)
def test_a_role_the_policy_does_not_name_is_stored_with_a_warning(
    in_process: InProcess,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    engine: Engine,
    database: str,
    policy: str,
    role: str,
    warning: str | None,
) -> None:
    paths = {"demo": str(ROOT / "chat_app/demo/policy.toml"), "file": str(tmp_path / "p.toml"),
             "missing": str(tmp_path / "missing.toml")}  # fmt: skip
    (tmp_path / "p.toml").write_text(POLICY)
    if policy != "demo":
        monkeypatch.setenv("CHAT_APP_POLICY", paths.get(policy, policy))
    in_process("users", "add", "rita@example.com", stdin=PASSWORD)
    for args in (("users", "add", "ada@example.com", "--role", role),
                 ("users", "set-roles", "rita@example.com", "--role", role)):  # fmt: skip
        done = in_process(*args, stdin=PASSWORD)
        assert done.status == 0
        assert done.err.startswith(database)
        if warning is None:
            assert done.err == database
        else:
            assert warning.format(**paths) in done.err
            assert done.err.count("\n") == 2  # the database, and one line of warning
    assert {a.email: a.roles for a in Accounts(engine).list_users()} == {
        "ada@example.com": (role,), "rita@example.com": (role,),
    }  # fmt: skip


def test_the_lists_show_control_characters_escaped(in_process: InProcess, engine: Engine) -> None:
    # Stored by other means than this command line, which refuses them.
    accounts = Accounts(engine)
    accounts.add_user("eve@example.com", PASSWORD, name="Eve\x1b[31m\tRed")
    accounts.create_token("eve@example.com", "ci\x1b[2J")
    users = in_process("users", "list")
    tokens = in_process("tokens", "list")
    for listed in (users.out, tokens.out):
        assert "\x1b" not in listed and "\t" not in listed
    assert users.out.splitlines()[1].split()[:2] == ["eve@example.com", "Eve\\x1b[31m\\tRed"]
    assert tokens.out.splitlines()[1].split()[:2] == ["ci\\x1b[2J", "eve@example.com"]


def test_roles_taken_from_an_account_that_the_policy_gives_are_said_to_stay(
    in_process: InProcess, engine: Engine, database: str
) -> None:
    """The demo policy's `[roles]` makes Olive ops and admin: taking the account's roles away
    leaves her both, and the command says so rather than only "none"."""
    in_process("users", "add", "olive@example.com", "--role", "ops", stdin=PASSWORD)
    done = in_process("users", "set-roles", "olive@example.com", "--no-roles")
    assert done.status == 0
    assert done.out == "Changed the roles of olive@example.com to none (they were: ops).\n"
    policy = ROOT / "chat_app" / "demo" / "policy.toml"
    assert done.err == database + (
        "python -m chat_app: warning: olive@example.com still has the roles admin, ops: the "
        f"policy in force ({policy}) gives them in its [roles], whatever the account holds. "
        "Change them there.\n"
    )
    kept = in_process("users", "set-roles", "olive@example.com", "--role", "admin")
    assert "still has the role ops: " in kept.err and "gives it in its [roles]" in kept.err
    # Someone the policy gives nothing is told nothing.
    in_process("users", "add", "rita@example.com", "--role", "ops", stdin=PASSWORD)
    assert in_process("users", "set-roles", "rita@example.com", "--no-roles").err == database


def test_audit_verify_checks_an_exports_chain_with_no_database(
    cli: Cli, tmp_path: Path, data_dir: Path
) -> None:
    """An export as `GET /api/audit.jsonl` writes it, from a real ledger: intact, it says how
    many and the last hash (to compare with the trail's now); edited, where it breaks."""
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    try:
        ledger.append(
            AuditEntry(kind="decision", thread_id=f"t{n}", run_id="r", actor=None, data={"n": n})
            for n in range(3)
        )
        records = ledger.records()
    finally:
        ledger.close()
    export = tmp_path / "audit.jsonl"
    export.write_text("".join(record.to_json() + "\n" for record in records))

    intact = cli("audit", "verify", str(export))
    assert (intact.status, intact.out) == (
        0, f"Intact: 3 records; the last is record {records[-1].seq}, hash {records[-1].hash}.\n"
    )  # fmt: skip
    assert not data_dir.exists()  # no database was opened, nor made
    assert cli("audit", "verify", "-", stdin=export.read_text()).out == intact.out

    edited = export.read_text().replace('"n":1', '"n":7')
    broken = cli("audit", "verify", "-", stdin=edited)
    assert (broken.status, broken.out) == (
        1, f"Broken at record {records[1].seq}: the record was changed after it was written.\n"
    )  # fmt: skip
    garbled = cli("audit", "verify", "-", stdin="not json\n")
    assert garbled.status == 1 and "Line 1 is not an audit record" in garbled.err
    missing = cli("audit", "verify", str(tmp_path / "nowhere.jsonl"))
    assert missing.status == 1 and "Cannot read" in missing.err
    # Said in one line each, without a traceback: an export saved as UTF-16, a NaN.
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes(export.read_text().encode("utf-16"))
    wide = cli("audit", "verify", str(utf16))
    assert (wide.status, wide.err.strip()) == (1, f"python -m chat_app: error: Cannot read "
        f"{utf16}: it is not UTF-8 text (an export is JSON lines in UTF-8; a PowerShell "
        "redirect writes UTF-16).")  # fmt: skip
    nan = cli("audit", "verify", "-", stdin=export.read_text().replace('"n":1', '"n":NaN'))
    assert (nan.status, nan.err.strip()) == (
        1, "python -m chat_app: error: Line 2 is not an audit record: NaN is not a JSON value."
    )  # fmt: skip
    assert "Traceback" not in wide.err + nan.err


def test_the_list_shows_the_roles_the_policy_gives_beside_the_accounts_own(
    in_process: InProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Olive's account holds ops; the demo policy's `[roles]` makes her admin and ops, which
    the list shows (it showed ops alone, then admin alone: the ops the policy gives her stays
    hers were her account's taken away); a policy that cannot be read is said, not guessed."""
    in_process("users", "add", "olive@example.com", "--role", "ops", stdin=PASSWORD)
    in_process("users", "add", "rita@example.com", stdin=PASSWORD)
    listed = in_process("users", "list")
    header, olive, rita = listed.out.splitlines()
    assert header.split() == ["EMAIL", "NAME", "ROLES", "FROM", "POLICY", "PASSWORD", "CREATED"]
    assert olive.split()[:4] == ["olive@example.com", "ops", "admin,ops", "yes"]
    assert rita.split()[:2] == ["rita@example.com", "yes"]

    broken = tmp_path / "policy.toml"
    broken.write_text("[[rules]]\nname = 1\n")
    monkeypatch.setenv("CHAT_APP_POLICY", str(broken))
    unknown = in_process("users", "list")
    assert unknown.status == 0
    assert "warning: FROM POLICY is unknown: the policy cannot be read" in unknown.err
    assert unknown.out.splitlines()[1].split()[:4] == ["olive@example.com", "ops", "?", "yes"]
