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
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)

__all__ = [
    "UTCDateTime",
    "api_tokens",
    "conversations",
    "decision_reopenings",
    "decision_routes",
    "decision_votes",
    "decisions",
    "deliveries",
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
    # Sessions issued before it no longer count (set when the person signs out).
    Column("signed_out_at", UTCDateTime, nullable=True),
    # When its password was last changed: a session issued before it is told so.
    Column("password_changed_at", UTCDateTime, nullable=True),
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

#: The approval desk's conversations: the client state (messages, the pending pause) as JSON,
#: what lists show (title, status, whose decision it waits for), and which worker is running
#: it now (`runner`, until `runner_until`: a lease another worker may take once it lapses).
conversations = Table(
    "conversations",
    metadata,
    Column("thread_id", String(100), primary_key=True),
    Column("owner_email", String(320), nullable=False),  # lower-case; "" when anonymous
    Column("owner_name", String(200), nullable=False),
    Column("title", String(200), nullable=False),
    Column("status", String(20), nullable=False),  # running, waiting, done, failed
    Column("waiting_for", String(300), nullable=False),
    Column("error", Text, nullable=True),
    Column("version", Integer, nullable=False),
    Column("runner", String(100), nullable=True),
    Column("runner_until", UTCDateTime, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # Until when its owner's page was last known open on it (a requester who is looking at
    # it is not sent a notice for a decision that is theirs).
    Column("watched_until", UTCDateTime, nullable=True),
    # When that page last said it showed it (in view, or until it went to the background):
    # whoever asked saw what was decided before then.
    Column("looked_at", UTCDateTime, nullable=True),
    # A message the owner sent while decisions were pending (held back, not sent): their box
    # shows it wherever they open the conversation, until they send it or empty the box.
    Column("held_message", Text, nullable=True),
    Index(None, "owner_email", "updated_at"),
    Index(None, "status"),
)

#: A conversation's client state (`chat_app.client.ClientState` as JSON), apart from its row:
#: the row's lease, status and presence change on their own, and SQLite rewrites a whole row
#: when an update changes its size — at 2,000 messages a 544 KB state for every lease taken
#: or released (2.9 ms a commit on this disk, against 0.17 ms with the state apart).
conversation_states = Table(
    "conversation_states",
    metadata,
    Column(
        "thread_id",
        ForeignKey("conversations.thread_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("state", Text, nullable=False),
)

#: One pending (or past) decision of a conversation: a tool approval or a question, as the
#: inbox lists it. `answer` is the resume entry once decided; `applied` once a continuation
#: carried it to the agent.
decisions = Table(
    "decisions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column(
        "thread_id",
        ForeignKey("conversations.thread_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("item_id", String(200), nullable=False),
    Column("kind", String(20), nullable=False),  # tool, question
    Column("name", String(200), nullable=False),
    Column("summary", String(500), nullable=False),
    Column("args", Text, nullable=False),  # JSON
    Column("requester_email", String(320), nullable=False),
    Column("requester_name", String(200), nullable=False),
    Column("rule", String(100), nullable=True),
    Column("approvers", Text, nullable=False),  # JSON list: role:finance, an email
    Column("not_requester", Boolean, nullable=False),
    Column("quorum", Integer, nullable=False),
    Column("waiting_for", String(300), nullable=False),
    Column("status", String(20), nullable=False),  # pending, decided, closed
    Column("outcome", String(20), nullable=True),
    Column("decided_by", String(320), nullable=True),
    Column("decided_by_name", String(200), nullable=True),
    Column("answer", Text, nullable=True),  # the resume entry, JSON
    Column("applied", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # Its place among the decisions its pause asked together (which share `created_at`).
    Column("position", Integer, nullable=False, server_default="0"),
    Column("expires_at", UTCDateTime, nullable=True),
    Column("decided_at", UTCDateTime, nullable=True),
    # The timers, as due times (a worker that wins the conditional UPDATE setting the `…ed_at`
    # beside one fires it: once, whatever the number of workers or a clock that jumps).
    Column("notify_at", UTCDateTime, nullable=True),  # the first notice
    Column("notified_at", UTCDateTime, nullable=True),
    Column("remind_at", UTCDateTime, nullable=True),
    Column("reminded_at", UTCDateTime, nullable=True),
    Column("escalate_at", UTCDateTime, nullable=True),
    Column("escalated_at", UTCDateTime, nullable=True),
    Column("escalate_to", Text, nullable=False, server_default="[]"),  # JSON list, as approvers
    # Seconds from the pause to the decision, and of the continuation that carried it.
    Column("wait_seconds", Float, nullable=True),
    Column("continued_seconds", Float, nullable=True),
    Column("run_id", String(100), nullable=True),  # the run that paused for it
    # When whoever asked is due to be told how it ended (settled by someone else, or
    # expired); cleared as they are (`DeskStore.untold`), so the index holds only the due.
    Column("tell_at", UTCDateTime, nullable=True),
    UniqueConstraint("thread_id", "item_id"),
    Index(None, "status", "created_at"),
    Index(None, "status", "expires_at"),
    Index(None, "status", "notify_at"),
    Index(None, "status", "remind_at"),
    Index(None, "status", "escalate_at"),
    # A person's decisions, newest first (the Inbox's "Decided by you").
    Index(None, "decided_by", "decided_at"),
    # How a person's requests ended, as they end (the chat page tells them of another
    # conversation's).
    Index(None, "requester_email", "decided_at"),
    Index(None, "tell_at"),
)

#: Who may find a pending decision in their inbox: `role:<role>` or `user:<email>` (a rule's
#: approvers; the requester when no rule applies). Only pending decisions have routes, so the
#: inbox is an index range scan whatever the number of decisions ever made.
decision_routes = Table(
    "decision_routes",
    metadata,
    Column("decision_id", ForeignKey("decisions.id", ondelete="CASCADE"), primary_key=True),
    Column("route", String(400), primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "route", "created_at"),
)

#: Approvals (and the rejection that decided) given to a decision, one per person: the
#: primary key is what keeps the same person from counting twice towards a quorum.
decision_votes = Table(
    "decision_votes",
    metadata,
    Column("decision_id", ForeignKey("decisions.id", ondelete="CASCADE"), primary_key=True),
    Column("voter_email", String(320), primary_key=True),
    Column("voter_name", String(200), nullable=False),
    Column("verified_by", String(20), nullable=False),
    Column("token_name", String(100), nullable=False),
    Column("roles", Text, nullable=False),  # JSON list: the roles they were verified with
    Column("approved", Boolean, nullable=False),
    Column("answer", Text, nullable=False),  # the resume entry this person gave, JSON
    Column("at", UTCDateTime, nullable=False),
    # False: an approval the policy no longer allowed when the decision was settled (its
    # voter's roles, or the rule's approvers, had changed); it stays on record and named
    # nowhere as a decider. NULL while pending: the desk judges votes against the rule then.
    Column("counted", Boolean, nullable=True),
    Index(None, "voter_email", "at"),
)

#: How a decision had ended each time it was opened again (the agent refused the answer:
#: `DeskStore._reopen`): the count of decisions by outcome adds these, and so never goes down.
decision_reopenings = Table(
    "decision_reopenings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("decision_id", ForeignKey("decisions.id", ondelete="CASCADE"), nullable=False),
    Column("outcome", String(20), nullable=False),
    Column("at", UTCDateTime, nullable=False),
)

#: The notifications outbox: one row per notice, channel and recipient (`key` keeps it so,
#: whichever worker enqueues it), delivered by whichever worker claims it, retried with
#: backoff until `sent` or, after the last attempt, `failed`.
deliveries = Table(
    "deliveries",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", String(400), nullable=False, unique=True),
    Column("decision_id", String(40), nullable=True),
    Column("thread_id", String(100), nullable=True),
    Column("event", String(30), nullable=False),  # decision-needed, reminder, escalated
    Column("channel", String(20), nullable=False),  # webhook, email
    Column("recipient", String(320), nullable=False),  # an email; "" for a webhook
    Column("notice", Text, nullable=False),  # what to say, JSON (chat_app.notify.Notice)
    Column("status", String(20), nullable=False),  # pending, sent, failed, skipped
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("claimed_by", String(100), nullable=True),
    Column("claimed_until", UTCDateTime, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("sent_at", UTCDateTime, nullable=True),
    Column("reason", Text, nullable=True),  # skipped: why it was not sent
    # A webhook's address (scheme, host, port) when it was last tried; None for an email.
    Column("sent_to", String(300), nullable=True),
    Index(None, "status", "next_attempt_at"),
    Index(None, "created_at"),
    # A claim looks for an earlier notice of the same decision to the same receiver still
    # to go (`Outbox.claim_due`): without it, each look read every pending row.
    Index(None, "decision_id", "channel", "recipient", "status", "id"),
)
