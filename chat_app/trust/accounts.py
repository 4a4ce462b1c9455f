"""Password accounts, API tokens and sign-in throttling, kept in the app's database.

Owns `Accounts` (the `Directory` of `CHAT_APP_AUTH=password`, and of API tokens in every
mode), `Account`, `ApiToken` and `AccountError`. Passwords are argon2id hashes (argon2-cffi's
`PasswordHasher`, rehashed at sign-in when its parameters change); an API token is
`cat_<random>`, shown once, and only its SHA-256 is stored. Failed sign-ins are rows in the
database, so every worker slows the same guesser down.

The methods block (argon2 costs tens of milliseconds by design, and the database is
synchronous): async callers run them in a thread. They behave the same on every database
the store opens: lists are sorted here, by code point (not by a PostgreSQL collation), and text
with a NUL character (which PostgreSQL's text cannot hold) is refused or matches nothing.
Imports `identity`, `store` and `tables`.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeAlias

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import ColumnElement, Connection, Engine, func, insert, literal, or_, select
from sqlalchemy.exc import IntegrityError

from .identity import API_TOKEN_PREFIX, MAX_EMAIL, Identity, SessionEnd, is_email
from .sessions import to_millisecond
from .store import write_transaction
from .tables import api_tokens, sign_in_failures, user_roles, users

__all__ = [
    "Account",
    "AccountError",
    "AccountErrorCode",
    "Accounts",
    "ApiToken",
    "SignInWait",
    "TOKEN_PREFIX",
]

#: What every API token starts with, so a leaked one is recognisable (secret scanners).
TOKEN_PREFIX = API_TOKEN_PREFIX
MIN_PASSWORD_LENGTH = 8
#: The stored hash of an account made without a password: no password's hash is this (an
#: argon2 hash is a PHC string, `$argon2id$…`), so none matches it.
NO_PASSWORD = "!"
#: Failed sign-ins are counted over this window, per email and per client address.
FAILURE_WINDOW = timedelta(minutes=15)
#: Failures for one email within the window that cost nothing; after them, the next attempt
#: waits 1 s, 2 s, 4 s … up to `MAX_DELAY` from the last failure.
FREE_FAILURES = 3
#: The same from one address, across emails: more, as one office or proxy is many people, and
#: one person mistyping must not hold the others back.
FREE_FAILURES_PER_ADDRESS = 20
MAX_DELAY = 30.0
#: A token's last use is written at most this often (a write per request would cost a commit).
LAST_USED_RESOLUTION = timedelta(minutes=1)

_ROLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: A failure's email once `clear_failures` took it off that email's count ("" is no email).
_CLEARED = ""
_MAX_CLIENT = 100
_MAX_NAME = 200
_MAX_TOKEN_NAME = 100
_MAX_ROLE = 100
#: No PostgreSQL text holds it: refused in names, a space in emails and addresses looked up.
_NUL = "\x00"

AccountErrorCode: TypeAlias = Literal[
    "invalid-email",
    "invalid-name",
    "invalid-role",
    "weak-password",
    "duplicate-user",
    "unknown-user",
    "duplicate-token",
    "unknown-token",
    "ambiguous-token",
]


class AccountError(ValueError):
    """A request the accounts cannot carry out; `str()` says why, for a person to read."""

    def __init__(self, code: AccountErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: AccountErrorCode = code


@dataclass(frozen=True, kw_only=True, slots=True)
class Account:
    """One password account, as `Accounts.list_users` shows it (never its hash)."""

    email: str
    name: str
    #: Sorted.
    roles: tuple[str, ...]
    created: datetime
    #: False for an account made without one (API tokens and a sign-in proxy only).
    has_password: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiToken:
    """One API token, as `Accounts.list_tokens` shows it (never the token)."""

    name: str
    #: The owner's email.
    owner: str
    created: datetime
    last_used: datetime | None
    revoked: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked is None


@dataclass(frozen=True, slots=True)
class _StoredUser:
    id: int
    email: str
    name: str
    password_hash: str
    signed_out_at: datetime | None
    created_at: datetime
    password_changed_at: datetime | None


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _normal_email(email: str) -> str:
    # A NUL becomes a space, which no account's email has (`_check_email` refuses both).
    return email.strip().lower().replace(_NUL, " ")


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SignInWait:
    """How long a sign-in must wait, in seconds. `refuse`: the failures were this email's
    from this very address (someone mistyping, or guessing from one place): refused at once,
    saying how long is left. `hold`: the failures came from elsewhere (a guesser who must not
    lock the person out) or from many emails at this address: checked after the wait."""

    refuse: float = 0.0
    hold: float = 0.0


class Accounts:
    """Accounts and API tokens in the app's database (`store.open_database`).

        accounts = Accounts(open_database(url))
        accounts.add_user("ada@example.com", "correct horse", roles=["finance"], name="Ada")
        accounts.check_password("ada@example.com", "correct horse")  # Identity(method="password")

    A sign-in page asks `sign_in_wait(email, client)`: refuses the attempt while its
    `refuse` is above 0 (saying how long), else waits its `hold`, then calls
    `check_password`, then `record_failure` or `clear_failures`.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        hasher: PasswordHasher | None = None,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.engine = engine
        self._hasher = hasher if hasher is not None else PasswordHasher()
        self._now = now
        self._dummy: str | None = None

    @property
    def _dummy_hash(self) -> str:
        """Verified against for an unknown email, so it costs what a wrong password costs
        (made at the first sign-in, whoever it is for, so that one costs the same too)."""
        if self._dummy is None:
            self._dummy = self._hasher.hash(secrets.token_urlsafe(16))
        return self._dummy

    # -- users -------------------------------------------------------------------------

    def add_user(
        self, email: str, password: str | None, roles: Iterable[str] = (), name: str = ""
    ) -> Account:
        """A new account; with `password` None, one nobody signs in to with a password (a
        service's, for its API tokens, or someone's behind a sign-in proxy) until
        `set_password` gives it one. Refuses an invalid email, a password shorter than 8
        characters, a bad role name and an email that already has an account
        (`AccountError`)."""
        email = _check_email(email)
        name = _check_name(name)
        wanted = _check_roles(roles)
        if password is None:
            password_hash = NO_PASSWORD
        else:
            _check_password(password)
            password_hash = self._hasher.hash(password)
        created = self._now()
        try:
            with write_transaction(self.engine) as connection:
                key = connection.execute(
                    insert(users).values(
                        email=email, name=name, password_hash=password_hash, created_at=created,
                        # A session of an earlier account of this email is not this one's.
                        signed_out_at=created,
                    )
                ).inserted_primary_key
                assert key is not None
                user_id = key[0]
                if wanted:
                    connection.execute(
                        insert(user_roles), [{"user_id": user_id, "role": r} for r in wanted]
                    )
        except IntegrityError:
            raise AccountError("duplicate-user", f"{email} already has an account.") from None
        return Account(email=email, name=name, roles=wanted, created=created,
                       has_password=password is not None)  # fmt: skip

    def remove_user(self, email: str) -> None:
        """Removes the account, its roles and its API tokens."""
        email = _normal_email(email)
        with write_transaction(self.engine) as connection:
            removed = connection.execute(users.delete().where(users.c.email == email)).rowcount
        if not removed:
            raise _unknown_user(email)

    def set_password(self, email: str, password: str) -> None:
        email = _normal_email(email)
        _check_password(password)
        password_hash = self._hasher.hash(password)
        now = self._now()
        with write_transaction(self.engine) as connection:
            changed = connection.execute(
                # A new password ends the sessions signed in with the old one.
                users.update()
                .where(users.c.email == email)
                .values(password_hash=password_hash, signed_out_at=now, password_changed_at=now)
            ).rowcount
        if not changed:
            raise _unknown_user(email)

    def set_roles(self, email: str, roles: Iterable[str]) -> Account:
        """Replaces the account's roles with `roles` (none: it has no roles left). Sessions
        and API tokens read roles on every request, so the change holds from their next one.
        Refuses a bad role name and an unknown email (`AccountError`)."""
        email = _normal_email(email)
        wanted = _check_roles(roles)
        with write_transaction(self.engine) as connection:
            row = connection.execute(
                select(*_LISTED).where(users.c.email == email)
            ).one_or_none()
            if row is None:
                raise _unknown_user(email)
            connection.execute(user_roles.delete().where(user_roles.c.user_id == row.id))
            if wanted:
                connection.execute(
                    insert(user_roles), [{"user_id": row.id, "role": r} for r in wanted]
                )
        [account] = _listed([row], {row.id: frozenset(wanted)})
        return account

    def list_users(self) -> list[Account]:
        """Every account, by email."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(*_LISTED)).all()
            roles = self._roles(connection, [row.id for row in rows])
        return _listed(rows, roles)

    def find_users(self, emails: Iterable[str] = (), roles: Iterable[str] = ()) -> list[Account]:
        """The accounts of `emails` (in any case) and those with one of `roles`, by email: one
        query for what a notice needs, however many accounts there are."""
        with self.engine.connect() as connection:
            return find_accounts(connection, emails, roles)

    def account(self, email: str) -> Identity | None:
        """The account as it is now (`method="password"`), or `None` when there is none."""
        found = self.session_account(email, math.inf)  # a session no sign-out ended
        return found if isinstance(found, Identity) else None

    def session_account(self, email: str, issued: float) -> Identity | SessionEnd:
        """The account of a session issued at `issued` (unix seconds), as it is now; or why
        that session no longer counts: the account is gone, its password was changed, or its
        person signed out since."""
        with self.engine.connect() as connection:
            row = self._user(connection, _normal_email(email))
            if row is None:
                return "removed"
            if _before(issued, row.created_at):
                return "replaced"  # the account it was issued for was removed since
            if row.signed_out_at is not None and _before(issued, row.signed_out_at):
                changed = row.password_changed_at
                if changed is not None and _before(issued, changed):
                    return "password-changed"
                return "signed-out"
            return self._identity(connection, row)

    def sign_out(self, email: str) -> None:
        """End every session of the account issued before now, in every tab and browser."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                users.update()
                .where(users.c.email == _normal_email(email))
                .values(signed_out_at=self._now())
            )

    def check_password(self, email: str, password: str) -> Identity | None:
        """The account's identity when `password` is its password; `None` for a wrong
        password and for an unknown email alike, at about the same cost (argon2 runs either
        way). A hash made with older parameters is replaced by one made with today's."""
        dummy_hash = self._dummy_hash
        with self.engine.connect() as connection:
            row = self._user(connection, _normal_email(email))
            if row is None or row.password_hash == NO_PASSWORD:
                self._verify(dummy_hash, password)  # costs what a wrong password costs
                return None
            if not self._verify(row.password_hash, password):
                return None
            identity = self._identity(connection, row)
        if self._hasher.check_needs_rehash(row.password_hash):
            with write_transaction(self.engine) as connection:
                connection.execute(
                    users.update()
                    .where(users.c.id == row.id, users.c.password_hash == row.password_hash)
                    .values(password_hash=self._hasher.hash(password))
                )
        return identity

    # -- API tokens --------------------------------------------------------------------

    def create_token(self, email: str, name: str) -> str:
        """A new API token for the account `email`, named `name` (unique among its tokens
        that are not revoked). The returned text is the only time the token exists in the
        clear: only its SHA-256 is stored."""
        email = _normal_email(email)
        name = name.strip()
        if not name or len(name) > _MAX_TOKEN_NAME or _NUL in name:
            raise AccountError(
                "invalid-name",
                f"A token's name is 1 to {_MAX_TOKEN_NAME} characters, none of them NUL.",
            )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        owner = select(
            users.c.id,
            literal(name),
            literal(_token_hash(token)),
            literal(self._now(), api_tokens.c.created_at.type),
        ).where(users.c.email == email)
        columns = ["user_id", "name", "token_hash", "created_at"]
        # An INSERT's rowcount is kept only when asked for (psycopg has none once it is done).
        adding = insert(api_tokens).from_select(columns, owner)
        try:
            with write_transaction(self.engine) as connection:
                inserted = connection.execute(
                    adding.execution_options(preserve_rowcount=True)
                ).rowcount
        except IntegrityError:
            raise AccountError(
                "duplicate-token",
                f"{email} already has a token named {name!r}; revoke it or pick another name.",
            ) from None
        if not inserted:
            raise _unknown_user(email)
        return token

    def list_tokens(self) -> list[ApiToken]:
        """Every token, revoked ones too, by owner and then by creation."""
        query = select(
            api_tokens.c.id,
            api_tokens.c.name,
            users.c.email,
            api_tokens.c.created_at,
            api_tokens.c.last_used_at,
            api_tokens.c.revoked_at,
        ).join(users, users.c.id == api_tokens.c.user_id)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        rows = sorted(rows, key=lambda row: (row.email, row.created_at, row.id))
        return [
            ApiToken(
                name=row.name,
                owner=row.email,
                created=row.created_at,
                last_used=row.last_used_at,
                revoked=row.revoked_at,
            )
            for row in rows
        ]

    def revoke_token(self, name: str, email: str | None = None) -> ApiToken:
        """Revokes the active token named `name` (of the account `email`, which must be given
        when several accounts have one by that name). Returns it, revoked."""
        name = name.strip()
        owner = _normal_email(email) if email is not None else None
        query = (
            select(
                api_tokens.c.id, users.c.email, api_tokens.c.created_at, api_tokens.c.last_used_at
            )
            .join(users, users.c.id == api_tokens.c.user_id)
            .where(api_tokens.c.name == name, api_tokens.c.revoked_at.is_(None))
        )
        if owner is not None:
            query = query.where(users.c.email == owner)
        now = self._now()
        with write_transaction(self.engine) as connection:
            found = [] if _NUL in name else connection.execute(query).all()
            if len(found) == 1:
                connection.execute(
                    api_tokens.update().where(api_tokens.c.id == found[0].id).values(revoked_at=now)
                )
            nobody = not found and owner is not None and self._user(connection, owner) is None
        if not found:
            if nobody:  # as every command says it: no such account
                raise _unknown_user(owner or "")
            whose = f" of {owner}" if owner is not None else ""
            raise AccountError("unknown-token", f"No active token named {name!r}{whose}.")
        if len(found) > 1:
            owners = ", ".join(sorted(row.email for row in found))
            raise AccountError(
                "ambiguous-token",
                f"Several accounts have a token named {name!r} ({owners}); name the user.",
            )
        row = found[0]
        return ApiToken(
            name=name,
            owner=row.email,
            created=row.created_at,
            last_used=row.last_used_at,
            revoked=now,
        )

    def identity_for_token(self, token: str) -> Identity | None:
        """The owner of `token` (`method="token"`, `token_name` set, the owner's roles), or
        `None` for an unknown or revoked token, or one whose owner was removed. Records when
        the token was last used (at most once a minute)."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        query = (
            select(
                api_tokens.c.id.label("token_id"),
                api_tokens.c.name.label("token_name"),
                api_tokens.c.last_used_at,
                users.c.id,
                users.c.email,
                users.c.name,
            )
            .join(users, users.c.id == api_tokens.c.user_id)
            .where(api_tokens.c.token_hash == _token_hash(token), api_tokens.c.revoked_at.is_(None))
        )
        with self.engine.connect() as connection:
            row = connection.execute(query).one_or_none()
            if row is None:
                return None
            roles = self._roles(connection, [row.id]).get(row.id, frozenset())
        now = self._now()
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
            with write_transaction(self.engine) as connection:
                connection.execute(
                    api_tokens.update()
                    .where(api_tokens.c.id == row.token_id)
                    .values(last_used_at=now)
                )
        return Identity(
            email=row.email,
            method="token",
            name=row.name,
            roles=frozenset(roles),
            token_name=row.token_name,
        )

    # -- sign-in throttling --------------------------------------------------------------

    def sign_in_wait(self, email: str, client: str) -> SignInWait:
        """How a sign-in for `email` from `client` (an address; "" when unknown) must wait
        (`SignInWait`). After `FREE_FAILURES` failures for that email within 15 minutes, or
        `FREE_FAILURES_PER_ADDRESS` from that address, 1, 2, 4 … up to 30 s from the last."""
        now = self._now()
        email, client = _failure_key(email, client)
        failed = sign_in_failures.c
        recent = failed.at >= now - FAILURE_WINDOW
        counted = (func.count(), func.max(failed.at))

        def wait(connection: Connection, free: int, *where: ColumnElement[bool]) -> float:
            failures, last = connection.execute(select(*counted).where(recent, *where)).one()
            if failures < free or last is None:
                return 0.0
            delay = min(MAX_DELAY, 2.0 ** (failures - free))
            ends: datetime = (last if last.tzinfo else last.replace(tzinfo=UTC)) + timedelta(
                seconds=delay
            )
            return max(0.0, (ends - now).total_seconds())

        with self.engine.connect() as connection:
            refuse = wait(connection, FREE_FAILURES, failed.email == email,
                          failed.client == client) if email and client else 0.0  # fmt: skip
            hold = max(
                wait(connection, FREE_FAILURES, failed.email == email) if email else 0.0,
                wait(connection, FREE_FAILURES_PER_ADDRESS, failed.client == client)
                if client else 0.0,
            )  # fmt: skip
        return SignInWait(refuse=refuse, hold=0.0 if refuse else hold)

    def record_failure(self, email: str, client: str) -> None:
        """Counts a failed sign-in (and forgets those older than the window)."""
        now = self._now()
        email, client = _failure_key(email, client)
        with write_transaction(self.engine) as connection:
            connection.execute(
                sign_in_failures.delete().where(sign_in_failures.c.at < now - FAILURE_WINDOW)
            )
            connection.execute(insert(sign_in_failures).values(email=email, client=client, at=now))

    def clear_failures(self, email: str) -> None:
        """Stops counting `email`'s failures (after it signed in). They still count against
        the addresses they came from."""
        email, _ = _failure_key(email, "")
        if not email:
            return
        with write_transaction(self.engine) as connection:
            connection.execute(
                sign_in_failures.update()
                .where(sign_in_failures.c.email == email)
                .values(email=_CLEARED)
            )

    # -- helpers -----------------------------------------------------------------------

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    @staticmethod
    def _user(connection: Connection, email: str) -> _StoredUser | None:
        row = connection.execute(
            select(
                users.c.id, users.c.email, users.c.name, users.c.password_hash,
                users.c.signed_out_at, users.c.created_at, users.c.password_changed_at,
            ).where(users.c.email == email)  # fmt: skip
        ).one_or_none()
        return None if row is None else _StoredUser(*row)

    @staticmethod
    def _roles(connection: Connection, user_ids: Sequence[int]) -> dict[int, frozenset[str]]:
        if not user_ids:
            return {}
        found: dict[int, set[str]] = {}
        rows = connection.execute(
            select(user_roles.c.user_id, user_roles.c.role).where(
                user_roles.c.user_id.in_(user_ids)
            )
        )
        for user_id, role in rows:
            found.setdefault(user_id, set()).add(role)
        return {user_id: frozenset(roles) for user_id, roles in found.items()}

    def _identity(self, connection: Connection, row: _StoredUser) -> Identity:
        roles = self._roles(connection, [row.id]).get(row.id, frozenset())
        return Identity(email=row.email, method="password", name=row.name, roles=roles)


def find_accounts(
    connection: Connection, emails: Iterable[str] = (), roles: Iterable[str] = ()
) -> list[Account]:
    """`Accounts.find_users` on a connection the caller holds (the desk reads its votes'
    accounts in the transaction it reads the votes in)."""
    wanted_emails = {_normal_email(email) for email in emails}
    wanted_roles = {role for role in roles if _NUL not in role}
    if not wanted_emails and not wanted_roles:
        return []
    members = select(user_roles.c.user_id).where(user_roles.c.role.in_(wanted_roles))
    query = select(*_LISTED).where(
        or_(users.c.email.in_(wanted_emails), users.c.id.in_(members))
    )
    rows = connection.execute(query).all()
    return _listed(rows, Accounts._roles(connection, [row.id for row in rows]))


#: What a listed account is read from (never the hash itself).
_LISTED = (
    users.c.id, users.c.email, users.c.name, users.c.created_at,
    (users.c.password_hash != NO_PASSWORD).label("has_password"),
)  # fmt: skip


def _listed(rows: Sequence[Any], roles: Mapping[int, frozenset[str]]) -> list[Account]:
    """Users' rows (`_LISTED`) as accounts, by email."""
    return [
        Account(
            email=row.email,
            name=row.name,
            roles=tuple(sorted(roles.get(row.id, ()))),
            created=row.created_at,
            has_password=bool(row.has_password),
        )
        for row in sorted(rows, key=lambda row: row.email)
    ]


def _unknown_user(email: str) -> AccountError:
    return AccountError("unknown-user", f"There is no account {email}.")


def _check_email(email: str) -> str:
    email = _normal_email(email)
    if not is_email(email):
        raise AccountError("invalid-email", f"{email!r} is not an email address.")
    return email


def _check_name(name: str) -> str:
    name = name.strip()
    if len(name) > _MAX_NAME or _NUL in name:
        raise AccountError(
            "invalid-name", f"A name is at most {_MAX_NAME} characters, none of them NUL."
        )
    return name


def _check_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Roles as they are stored: in lower case, once each. The policy compares role names
    exactly, and a sign-in proxy's groups arrive in lower case, so `Finance` is `finance`."""
    wanted = sorted({role.strip().lower() for role in roles})
    for role in wanted:
        if len(role) > _MAX_ROLE or not _ROLE.fullmatch(role):
            raise AccountError(
                "invalid-role",
                f"{role!r} is not a role name: use letters, digits, '_', '.' and '-'.",
            )
    return tuple(wanted)


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(
            "weak-password", f"A password is at least {MIN_PASSWORD_LENGTH} characters."
        )


def _failure_key(email: str, client: str) -> tuple[str, str]:
    return _normal_email(email)[:MAX_EMAIL], client.strip().replace(_NUL, " ")[:_MAX_CLIENT]


def _before(issued: float, moment: datetime) -> bool:
    """Whether a session issued at `issued` (unix seconds) came before `moment`: to the
    millisecond, as sessions are issued (one issued in the sign-out's own millisecond still
    counts: signing in again at once must); one an earlier version issued in whole seconds
    counts from its second."""
    at = moment.timestamp()
    return issued < (math.floor(at) if isinstance(issued, int) else to_millisecond(at))
