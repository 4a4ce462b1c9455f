"""The app database's tables (SQLAlchemy Core), as the newest migration leaves them.

Owns `metadata` and its tables. Accounts, API tokens and sign-in failures now; the approval
desk's conversations (issue 17) join them here, each change with its migration in
`migrations/versions/` (the migrations spell their tables out rather than importing these, so
an old migration never changes). Nothing here is specific to one database.

Times are `UTCDateTime`: aware UTC datetimes in Python, stored as naive UTC on every database
(SQLite keeps no time zone), so comparisons in SQL are the same everywhere.

Imports nothing of ours.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    TypeDecorator,
)

__all__ = [
    "UTCDateTime",
    "api_tokens",
    "metadata",
    "sign_in_failures",
    "user_roles",
    "users",
]

#: Constraint names spelled out, so later migrations can name what they alter or drop.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC `datetime` in Python, naive UTC in the database."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass an aware one (UTC)")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


#: Password accounts (`CHAT_APP_AUTH=password`).
users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("email", String(320), nullable=False, unique=True),  # lower-case
    Column("name", String(200), nullable=False),
    Column("password_hash", String(255), nullable=False),  # argon2id, PHC string
    Column("created_at", UTCDateTime, nullable=False),
)

#: An account's roles (a policy's `[roles]` table may add more).
user_roles = Table(
    "user_roles",
    metadata,
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("role", String(100), primary_key=True),
)

#: API tokens: only the SHA-256 of a token is kept. A removed user's tokens go with it.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),  # hex SHA-256
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_used_at", UTCDateTime, nullable=True),
    Column("revoked_at", UTCDateTime, nullable=True),
)
# A name is unique among a user's tokens that are not revoked (a revoked name can be reused).
Index(
    "uq_api_tokens_active_name",
    api_tokens.c.user_id,
    api_tokens.c.name,
    unique=True,
    sqlite_where=api_tokens.c.revoked_at.is_(None),
    postgresql_where=api_tokens.c.revoked_at.is_(None),
)

#: Failed sign-ins, counted per email and per client address to slow guessing down; rows
#: older than the counting window are pruned.
sign_in_failures = Table(
    "sign_in_failures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("email", String(320), nullable=False),  # lower-case, as typed (may be no account)
    Column("client", String(100), nullable=False),  # "" when unknown
    Column("at", UTCDateTime, nullable=False, index=True),
    Index(None, "email", "at"),
    Index(None, "client", "at"),
)
