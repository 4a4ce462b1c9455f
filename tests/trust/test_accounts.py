"""Password accounts, API tokens and sign-in throttling, and the database under them: its
SQLite settings, its migrations, and an unusable URL at start. Each test that takes
`database_url` (tests/conftest.py) runs on a new SQLite file and on a new PostgreSQL database."""

from __future__ import annotations

import hashlib
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from argon2 import PasswordHasher
from sqlalchemy import Engine, inspect, select

from chat_app.trust import store
from chat_app.trust.accounts import (
    FREE_FAILURES_PER_ADDRESS,
    Account,
    AccountError,
    Accounts,
    ApiToken,
    SignInWait,
)
from chat_app.trust.identity import Identity
from chat_app.trust.store import (
    DatabaseUnavailable,
    create_database_engine,
    migrate,
    open_database,
)
from chat_app.trust.tables import api_tokens, metadata, users
from tests.live_server import free_port

START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
PASSWORD = "correct horse"


class Clock:
    """The accounts' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class CountingHasher(PasswordHasher):
    """Cheap parameters (the tests hash a lot), and a count of the hashes it verifies."""

    def __init__(self, time_cost: int = 1) -> None:
        super().__init__(time_cost=time_cost, memory_cost=1024, parallelism=1)
        self.verified: list[str] = []

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        self.verified.append(hash if isinstance(hash, str) else hash.decode())
        return super().verify(hash, password)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = open_database(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hasher() -> CountingHasher:
    return CountingHasher()


@pytest.fixture
def accounts(engine: Engine, hasher: CountingHasher, clock: Clock) -> Accounts:
    return Accounts(engine, hasher=hasher, now=clock)


def stored_hash(accounts: Accounts, email: str) -> str:
    with accounts.engine.connect() as connection:
        value = connection.execute(
            select(users.c.password_hash).where(users.c.email == email)
        ).scalar_one()
    assert isinstance(value, str)
    return value


# -- users ---------------------------------------------------------------------------------


def test_a_new_account_is_listed_with_its_lower_case_email_name_and_roles(
    accounts: Accounts,
) -> None:
    added = accounts.add_user(
        " Ada@Example.COM ", PASSWORD, roles=["ops", "Finance", "finance "], name="Ada"
    )  # roles as the policy and a proxy's groups name them: lower case, once each
    accounts.add_user("rita@example.com", None)  # a service's: no password
    expected = Account(
        email="ada@example.com", name="Ada", roles=("finance", "ops"), created=START,
        has_password=True,
    )  # fmt: skip
    assert added == expected
    rita = Account(email="rita@example.com", name="", roles=(), created=START, has_password=False)
    assert accounts.list_users() == [expected, rita]
    assert accounts.set_roles("rita@example.com", ["ops"]) == replace(rita, roles=("ops",))


def test_accounts_and_tokens_are_listed_in_code_point_order_on_every_database(
    accounts: Accounts,
) -> None:
    # PostgreSQL would sort by its collation (ICU's en-US in the tests: "a_b" < "a-b" < "é" <
    # "z"); the lists are the same on every database.
    emails = ["a-b@example.com", "a_b@example.com", "ab@example.com", "z@example.com", "é@x.org"]
    for email in reversed(emails):
        accounts.add_user(email, PASSWORD)
        accounts.create_token(email, "ci")
    assert [account.email for account in accounts.list_users()] == emails
    assert [token.owner for token in accounts.list_tokens()] == emails


def test_passwords_are_stored_as_argon2id_hashes(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    stored = stored_hash(accounts, "ada@example.com")
    assert stored.startswith("$argon2id$")
    assert PASSWORD not in stored


def test_check_password_gives_the_accounts_identity(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"], name="Ada")
    assert accounts.check_password("ADA@example.com", PASSWORD) == Identity(
        email="ada@example.com", method="password", name="Ada", roles=frozenset({"finance"})
    )


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer_at_the_same_cost(
    accounts: Accounts, hasher: CountingHasher
) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    assert accounts.check_password("ada@example.com", "wrong password") is None
    assert accounts.check_password("nobody@example.com", PASSWORD) is None
    wrong, unknown = hasher.verified
    # Both ran argon2 once, with today's parameters: the unknown email against a dummy hash.
    assert wrong == stored_hash(accounts, "ada@example.com")
    assert unknown != wrong
    assert unknown.split("$")[:4] == wrong.split("$")[:4]


def test_check_password_rehashes_a_hash_made_with_older_parameters(
    engine: Engine, accounts: Accounts, clock: Clock
) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    old = stored_hash(accounts, "ada@example.com")
    stronger = Accounts(engine, hasher=CountingHasher(time_cost=2), now=clock)
    assert stronger.check_password("ada@example.com", "wrong password") is None
    assert stored_hash(accounts, "ada@example.com") == old  # only a right password rehashes
    assert stronger.check_password("ada@example.com", PASSWORD) is not None
    new = stored_hash(accounts, "ada@example.com")
    assert new != old and ",t=2," in new
    assert stronger.check_password("ada@example.com", PASSWORD) is not None


@pytest.mark.parametrize(
    ("email", "password", "roles", "code"),
    [
        ("ada@example.com", PASSWORD, (), "duplicate-user"),
        ("ADA@example.com", PASSWORD, (), "duplicate-user"),
        ("ada", PASSWORD, (), "invalid-email"),
        ("ada@b@example.com", PASSWORD, (), "invalid-email"),
        ("ada lovelace@example.com", PASSWORD, (), "invalid-email"),
        ("bob@example.com", "7 chars", (), "weak-password"),
        ("bob@example.com", PASSWORD, ("role:finance",), "invalid-role"),
        ("bob@example.com", PASSWORD, ("",), "invalid-role"),
    ],
)
def test_add_user_refuses(
    accounts: Accounts, email: str, password: str, roles: tuple[str, ...], code: str
) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    with pytest.raises(AccountError) as refused:
        accounts.add_user(email, password, roles=roles)
    assert refused.value.code == code
    assert [account.email for account in accounts.list_users()] == ["ada@example.com"]


def test_set_password_replaces_the_old_one(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    accounts.set_password("Ada@example.com", "battery staple")
    assert accounts.check_password("ada@example.com", PASSWORD) is None
    assert accounts.check_password("ada@example.com", "battery staple") is not None
    with pytest.raises(AccountError) as weak:
        accounts.set_password("ada@example.com", "short")
    assert weak.value.code == "weak-password"
    with pytest.raises(AccountError) as unknown:
        accounts.set_password("nobody@example.com", "battery staple")
    assert unknown.value.code == "unknown-user"


def test_account_is_the_account_as_it_is_now(accounts: Accounts) -> None:
    assert accounts.account("ada@example.com") is None
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"], name="Ada")
    assert accounts.account("ADA@example.com") == Identity(
        email="ada@example.com", method="password", name="Ada", roles=frozenset({"finance"})
    )
    accounts.remove_user("ada@example.com")
    assert accounts.account("ada@example.com") is None


def test_signing_out_ends_the_sessions_issued_before_it(accounts: Accounts, clock: Clock) -> None:
    accounts.add_user("ada@example.com", PASSWORD, name="Ada")
    clock.advance(seconds=1)
    issued = int(clock.now.timestamp())  # as an earlier version issued them: whole seconds
    assert isinstance(accounts.session_account("ada@example.com", issued), Identity)
    clock.advance(seconds=1.5)
    accounts.sign_out("ADA@example.com")
    assert accounts.session_account("ada@example.com", issued) == "signed-out"
    signed_in_again = int(clock.now.timestamp())  # the sign-out's own second
    assert accounts.session_account("ada@example.com", signed_in_again) == Identity(
        email="ada@example.com", method="password", name="Ada"
    )
    # To the millisecond, as sessions are issued now: one issued earlier in the sign-out's
    # own second ended with it (a copy of its cookie counted for 12 hours), one a moment
    # after it counts.
    clock.advance(seconds=1)
    second = math.floor(clock.now.timestamp())
    clock.advance(seconds=second + 0.7 - clock.now.timestamp())
    accounts.sign_out("ada@example.com")
    assert accounts.session_account("ada@example.com", second + 0.2) == "signed-out"
    # One issued on the whole second is no earlier version's: a float, it counts to the ms.
    assert accounts.session_account("ada@example.com", float(second)) == "signed-out"
    assert isinstance(accounts.session_account("ada@example.com", second), Identity)
    a_moment_after = second + 0.701
    assert isinstance(accounts.session_account("ada@example.com", a_moment_after), Identity)
    # A new password ends the sessions of the old one.
    clock.advance(seconds=1)
    accounts.set_password("ada@example.com", "battery staple")
    assert accounts.session_account("ada@example.com", a_moment_after) == "password-changed"
    # Signed in after the change, then out: that session ended by signing out.
    clock.advance(seconds=1)
    after_change = int(clock.now.timestamp())
    clock.advance(seconds=1)
    accounts.sign_out("ada@example.com")
    assert accounts.session_account("ada@example.com", after_change) == "signed-out"
    # Removed, then added again: a session of the account before is not the new one's.
    accounts.remove_user("ada@example.com")
    assert accounts.session_account("ada@example.com", signed_in_again) == "removed"
    clock.advance(seconds=1)
    accounts.add_user("ada@example.com", PASSWORD, name="Ada")
    assert accounts.session_account("ada@example.com", signed_in_again) == "replaced"


def test_remove_user_removes_the_account_and_refuses_an_unknown_one(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"])
    accounts.remove_user("ADA@example.com")
    assert accounts.list_users() == []
    assert accounts.check_password("ada@example.com", PASSWORD) is None
    with pytest.raises(AccountError) as unknown:
        accounts.remove_user("ada@example.com")
    assert unknown.value.code == "unknown-user"
    accounts.add_user("ada@example.com", PASSWORD)  # the email is free again, without roles
    assert accounts.list_users()[0].roles == ()


# -- API tokens ----------------------------------------------------------------------------


def test_a_token_names_its_owner_with_the_owners_roles(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"], name="Ada")
    token = accounts.create_token("ADA@example.com", "ci")
    assert token.startswith("cat_") and len(token) > 40
    assert accounts.identity_for_token(token) == Identity(
        email="ada@example.com",
        method="token",
        name="Ada",
        roles=frozenset({"finance"}),
        token_name="ci",
    )


def test_a_token_is_stored_only_as_its_sha256(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    token = accounts.create_token("ada@example.com", "ci")
    with accounts.engine.connect() as connection:
        rows = connection.execute(select(api_tokens)).all()
    assert len(rows) == 1
    assert rows[0].token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert not any(token in str(value) for value in rows[0])
    if accounts.engine.dialect.name == "sqlite":
        assert token not in Path(str(accounts.engine.url.database)).read_bytes().decode("latin-1")


def test_an_unknown_or_malformed_token_names_nobody(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    token = accounts.create_token("ada@example.com", "ci")
    assert accounts.identity_for_token(token + "x") is None
    assert accounts.identity_for_token(token.removeprefix("cat_")) is None
    assert accounts.identity_for_token("") is None


def test_create_token_refuses_an_unknown_owner_a_taken_name_and_an_empty_one(
    accounts: Accounts,
) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    accounts.add_user("sam@example.com", PASSWORD)
    accounts.create_token("ada@example.com", "ci")
    accounts.create_token("sam@example.com", "ci")  # names are unique per owner
    for email, name, code in [
        ("nobody@example.com", "ci", "unknown-user"),
        ("ada@example.com", "ci", "duplicate-token"),
        ("ada@example.com", "  ", "invalid-name"),
    ]:
        with pytest.raises(AccountError) as refused:
            accounts.create_token(email, name)
        assert refused.value.code == code
    assert len(accounts.list_tokens()) == 2


def test_list_tokens_shows_owner_creation_last_use_and_revocation(
    accounts: Accounts, clock: Clock
) -> None:
    accounts.add_user("sam@example.com", PASSWORD)
    accounts.add_user("ada@example.com", PASSWORD)
    deploy = accounts.create_token("sam@example.com", "deploy")
    clock.advance(minutes=1)
    accounts.create_token("ada@example.com", "ci")
    clock.advance(minutes=1)
    accounts.identity_for_token(deploy)
    accounts.revoke_token("ci")
    assert accounts.list_tokens() == [
        ApiToken(
            name="ci",
            owner="ada@example.com",
            created=START + timedelta(minutes=1),
            last_used=None,
            revoked=START + timedelta(minutes=2),
        ),
        ApiToken(
            name="deploy",
            owner="sam@example.com",
            created=START,
            last_used=START + timedelta(minutes=2),
            revoked=None,
        ),
    ]


def test_last_use_is_written_at_most_once_a_minute(accounts: Accounts, clock: Clock) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    token = accounts.create_token("ada@example.com", "ci")
    accounts.identity_for_token(token)
    clock.advance(seconds=59)
    accounts.identity_for_token(token)
    assert accounts.list_tokens()[0].last_used == START
    clock.advance(seconds=1)
    accounts.identity_for_token(token)
    assert accounts.list_tokens()[0].last_used == START + timedelta(minutes=1)


def test_a_revoked_token_names_nobody_and_its_name_can_be_reused(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    old = accounts.create_token("ada@example.com", "ci")
    revoked = accounts.revoke_token(" ci ", "ADA@example.com")
    assert (revoked.name, revoked.owner, revoked.active) == ("ci", "ada@example.com", False)
    assert accounts.identity_for_token(old) is None
    new = accounts.create_token("ada@example.com", "ci")
    assert accounts.identity_for_token(new) is not None
    assert accounts.identity_for_token(old) is None
    assert [token.active for token in accounts.list_tokens()] == [False, True]


def test_revoke_token_refuses_an_unknown_name_and_asks_whose_when_several_share_it(
    accounts: Accounts,
) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    accounts.add_user("sam@example.com", PASSWORD)
    ada = accounts.create_token("ada@example.com", "ci")
    sam = accounts.create_token("sam@example.com", "ci")
    with pytest.raises(AccountError) as ambiguous:
        accounts.revoke_token("ci")
    assert ambiguous.value.code == "ambiguous-token"
    assert "ada@example.com, sam@example.com" in str(ambiguous.value)
    with pytest.raises(AccountError) as unknown:
        accounts.revoke_token("deploy")
    assert unknown.value.code == "unknown-token"
    accounts.revoke_token("ci", "sam@example.com")
    assert accounts.identity_for_token(sam) is None
    assert accounts.identity_for_token(ada) is not None
    with pytest.raises(AccountError) as again:
        accounts.revoke_token("ci", "sam@example.com")
    assert again.value.code == "unknown-token"
    # An owner with no account is said as every command says it, not as a missing token.
    with pytest.raises(AccountError) as nobody:
        accounts.revoke_token("ci", "Nobody@example.com")
    assert (nobody.value.code, str(nobody.value)) == (
        "unknown-user",
        "There is no account nobody@example.com.",
    )
    assert accounts.identity_for_token(ada) is not None


def test_a_removed_users_tokens_name_nobody_and_are_gone(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    token = accounts.create_token("ada@example.com", "ci")
    accounts.remove_user("ada@example.com")
    assert accounts.identity_for_token(token) is None
    assert accounts.list_tokens() == []
    accounts.add_user("ada@example.com", PASSWORD)  # a new account of the same email
    assert accounts.identity_for_token(token) is None


def test_a_tokens_identity_carries_its_owners_roles_as_they_are_now(accounts: Accounts) -> None:
    accounts.add_user("ada@example.com", PASSWORD)
    token = accounts.create_token("ada@example.com", "ci")
    identity = accounts.identity_for_token(token)
    assert identity is not None and identity.roles == frozenset()


# -- sign-in throttling --------------------------------------------------------------------


def test_the_wait_grows_after_three_failures_for_an_email_and_is_capped(
    accounts: Accounts,
) -> None:
    waits = []
    for _ in range(10):
        waits.append(accounts.sign_in_wait("ada@example.com", "10.0.0.1").refuse)
        accounts.record_failure("ADA@example.com", "10.0.0.1")
    assert waits == [0, 0, 0, 1, 2, 4, 8, 16, 30, 30]


def test_the_wait_counts_from_the_last_failure(accounts: Accounts, clock: Clock) -> None:
    for _ in range(4):
        accounts.record_failure("ada@example.com", "10.0.0.1")
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.1").refuse == 2
    clock.advance(seconds=1.5)
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.1").refuse == pytest.approx(0.5)
    clock.advance(seconds=0.5)
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.1") == SignInWait()


def test_failures_count_per_email_across_addresses_and_per_address_across_emails(
    accounts: Accounts,
) -> None:
    for n in range(4):
        accounts.record_failure("ada@example.com", f"10.0.0.{n}")
    assert accounts.sign_in_wait("ada@example.com", "10.9.9.9") == SignInWait(hold=2)
    # From one address, across emails, more are free: one office is many people.
    for n in range(FREE_FAILURES_PER_ADDRESS - 1):
        accounts.record_failure(f"guess{n}@example.com", "10.0.0.99")
    assert accounts.sign_in_wait("sam@example.com", "10.0.0.99") == SignInWait()
    accounts.record_failure("guess-last@example.com", "10.0.0.99")
    assert accounts.sign_in_wait("sam@example.com", "10.0.0.99") == SignInWait(hold=1)
    assert accounts.sign_in_wait("sam@example.com", "10.0.0.98") == SignInWait()
    assert accounts.sign_in_wait("sam@example.com", "") == SignInWait()


def test_failures_older_than_fifteen_minutes_no_longer_count(
    accounts: Accounts, clock: Clock
) -> None:
    for _ in range(4):
        accounts.record_failure("ada@example.com", "10.0.0.1")
    clock.advance(minutes=10)
    accounts.record_failure("ada@example.com", "10.0.0.1")
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.1").refuse == 4
    clock.advance(minutes=5, seconds=1)
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.1") == SignInWait()


def test_clearing_an_emails_failures_keeps_them_counted_against_the_address(
    accounts: Accounts,
) -> None:
    for _ in range(FREE_FAILURES_PER_ADDRESS + 1):
        accounts.record_failure("ada@example.com", "10.0.0.1")
    accounts.clear_failures("Ada@example.com")
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.2") == SignInWait()
    assert accounts.sign_in_wait("sam@example.com", "10.0.0.1") == SignInWait(hold=2)


def test_an_email_with_a_nul_character_is_nobody_and_its_failures_still_count(
    accounts: Accounts,
) -> None:
    # PostgreSQL's text cannot hold NUL: a typed email with one must still be an ordinary
    # wrong sign-in there (not a database error), as on SQLite.
    accounts.add_user("ada@example.com", PASSWORD)
    typed = "ada@example.com\x00"
    assert accounts.check_password(typed, PASSWORD) is None
    assert accounts.account(typed) is None
    for _ in range(FREE_FAILURES_PER_ADDRESS + 1):
        assert accounts.sign_in_wait(typed, "10.0.0.1\x00").refuse >= 0
        accounts.record_failure(typed, "10.0.0.1\x00")
    assert accounts.sign_in_wait(typed, "10.0.0.2") == SignInWait(hold=30)
    assert accounts.sign_in_wait("sam@example.com", "10.0.0.1\x00") == SignInWait(hold=2)
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.2") == SignInWait()
    accounts.clear_failures(typed)
    assert accounts.sign_in_wait(typed, "10.0.0.2") == SignInWait()
    with pytest.raises(AccountError) as refused:
        accounts.add_user("sam\x00@example.com", PASSWORD)
    assert refused.value.code == "invalid-email"
    for name in ["Sam\x00", "\x00"]:
        with pytest.raises(AccountError) as bad_name:
            accounts.add_user("sam@example.com", PASSWORD, name=name)
        assert bad_name.value.code == "invalid-name"
        with pytest.raises(AccountError) as bad_token_name:
            accounts.create_token("ada@example.com", name)
        assert bad_token_name.value.code == "invalid-name"
        with pytest.raises(AccountError) as no_token:
            accounts.revoke_token(name)
        assert no_token.value.code == "unknown-token"
    for change in (accounts.remove_user, lambda email: accounts.set_password(email, PASSWORD)):
        with pytest.raises(AccountError) as unknown:
            change(typed)
        assert unknown.value.code == "unknown-user"
    assert [account.email for account in accounts.list_users()] == ["ada@example.com"]


def test_failures_are_shared_by_every_worker_on_the_database(
    engine: Engine, accounts: Accounts, clock: Clock
) -> None:
    other_worker = Accounts(engine, hasher=CountingHasher(), now=clock)
    for _ in range(3):
        other_worker.record_failure("ada@example.com", "10.0.0.1")
    assert accounts.sign_in_wait("ada@example.com", "10.0.0.7") == SignInWait(hold=1)


# -- the database --------------------------------------------------------------------------


def test_the_default_database_is_sqlite_in_the_data_folder(tmp_path: Path) -> None:
    default = f"sqlite:///{tmp_path.as_posix()}/chat_app.sqlite3"
    assert store.database_url(None, tmp_path) == default
    assert store.database_url("  ", tmp_path) == default
    assert store.database_url(" postgresql://db/app ", tmp_path) == "postgresql://db/app"


def test_sqlite_runs_in_wal_mode_with_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = open_database(store.database_url(None, tmp_path))
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("postgresql://ops:pw@db.internal/app", "postgresql+psycopg://ops:***@db.internal/app"),
        ("postgres://ops:pw@db.internal/app", "postgresql+psycopg://ops:***@db.internal/app"),
        ("postgresql+psycopg://db.internal/app", "postgresql+psycopg://db.internal/app"),
        ("sqlite:///app.sqlite3", "sqlite:///app.sqlite3"),
    ],
)
def test_a_postgresql_url_without_a_driver_uses_psycopg(given: str, used: str) -> None:
    engine = create_database_engine(given)
    try:
        assert engine.url.render_as_string(hide_password=True) == used
    finally:
        engine.dispose()


def test_a_postgresql_url_that_names_its_driver_keeps_it() -> None:
    with pytest.raises(DatabaseUnavailable) as unknown:
        open_database("postgres+nosuchdriver://ops:hunter2@db.internal/app")
    shown, reason = str(unknown.value).split(": ", 1)
    assert shown == "Cannot open the database postgres+nosuchdriver://ops:***@db.internal/app"
    assert "postgresql.nosuchdriver" in reason  # SQLAlchemy looked for this driver


def test_migrations_apply_twice_and_build_what_tables_py_says(database_url: str) -> None:
    migrate(database_url)
    migrate(database_url)
    engine = create_database_engine(database_url)
    try:
        with engine.connect() as connection:
            versions = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
            assert versions == [(ScriptDirectory(str(store.MIGRATIONS)).get_current_head(),)]
            assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        assert set(inspect(engine).get_table_names()) == {"alembic_version", *metadata.tables}
        assert {"users", "user_roles", "api_tokens", "sign_in_failures"} <= set(metadata.tables)
    finally:
        engine.dispose()


def test_the_developers_downgrade_and_upgrade_keep_every_row(database_url: str) -> None:
    """`alembic downgrade` (the way back a release's notes give) and `upgrade head`, as an
    operator runs them: on SQLite a column is dropped by copying its table and dropping the
    old one, which with foreign keys on took every account's roles and tokens with it."""
    engine = open_database(database_url)
    try:
        accounts = Accounts(engine, hasher=PasswordHasher(time_cost=1, memory_cost=1024))
        accounts.add_user("ada@example.com", "a-long-password", ["finance", "admin"])
        token = accounts.create_token("ada@example.com", "nightly")
        ini = Path(store.MIGRATIONS) / "alembic.ini"
        for step in (["downgrade", "users_tokens_sign_in_failures"], ["upgrade", "head"]):
            done = subprocess.run(
                [sys.executable, "-m", "alembic", "-c", str(ini), "-x", f"url={database_url}",
                 *step],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
        account = accounts.account("ada@example.com")
        assert account is not None and set(account.roles) == {"finance", "admin"}
        owner = accounts.identity_for_token(token)
        assert owner is not None and owner.email == "ada@example.com"
    finally:
        engine.dispose()


def test_an_upgrade_of_the_schema_is_a_log_line_naming_both_revisions(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator reads that a start changed the schema, and from what; a new database's
    first migration, or a start with nothing to do, says nothing at INFO."""
    scripts = ScriptDirectory(str(store.MIGRATIONS))
    head = scripts.get_current_head()
    assert head is not None
    before = scripts.get_revision(head).down_revision
    assert isinstance(before, str)

    def migrations_said() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.levelname == "INFO" and r.getMessage().startswith("Migrated")]  # fmt: skip

    with caplog.at_level("INFO", logger=store.__name__):
        open_database(database_url).dispose()
        open_database(database_url).dispose()
        assert migrations_said() == []
        ini = Path(store.MIGRATIONS) / "alembic.ini"
        done = subprocess.run(
            [sys.executable, "-m", "alembic", "-c", str(ini), "-x", f"url={database_url}",
             "downgrade", before],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        open_database(database_url).dispose()
    [said] = migrations_said()
    assert said.startswith("Migrated the database ")
    assert said.endswith(f" from {before} to {head}")


def test_workers_starting_at_once_migrate_the_database_once(database_url: str) -> None:
    errors: list[Exception] = []

    def start() -> None:
        try:
            open_database(database_url).dispose()
        except Exception as error:
            errors.append(error)

    workers = [threading.Thread(target=start) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []


def test_a_database_that_cannot_be_opened_is_named_with_its_password_hidden(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(DatabaseUnavailable) as unusable:
        open_database(f"sqlite:///{blocker}/app.sqlite3")
    assert f"sqlite:///{blocker}/app.sqlite3" in str(unusable.value)
    with pytest.raises(DatabaseUnavailable) as unknown_driver:
        open_database("postgresql+nosuchdriver://ops:hunter2@db.internal/app")
    with pytest.raises(DatabaseUnavailable) as not_a_url:
        open_database("ops:hunter2@db.internal")
    for error in (unknown_driver.value, not_a_url.value):
        assert "ops:***@" in str(error)
        assert "hunter2" not in str(error)


def test_a_database_from_a_newer_version_of_the_app_is_refused_by_name(
    database_url: str,
) -> None:
    url = database_url
    migrate(url)
    engine = create_database_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'from_the_future'")
    engine.dispose()
    with pytest.raises(DatabaseUnavailable) as newer:
        open_database(url)
    assert str(newer.value).startswith(f"Cannot migrate the database {url}: ")
    assert "from_the_future" in str(newer.value)
    # What to do about it, for the operator reading it at start.
    assert str(newer.value).endswith(
        ". A newer version of chat_app migrated it: run that version (or a newer one), or "
        "restore the backup taken before it; this one leaves it unchanged."
    )


def test_a_postgresql_server_that_is_not_running_is_named_with_its_password_hidden() -> None:
    url = f"postgresql://ops:hunter2@127.0.0.1:{free_port()}/app"  # nothing listens there
    with pytest.raises(DatabaseUnavailable) as refused:
        open_database(url)
    message = str(refused.value)
    assert message.startswith(f"Cannot open the database {url.replace('hunter2', '***')}: ")
    assert "hunter2" not in message
    assert "127.0.0.1" in message.split(": ", 1)[1]  # psycopg's reason follows
