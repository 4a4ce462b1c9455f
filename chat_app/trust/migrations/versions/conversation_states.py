"""A conversation's state in a table of its own, so that updating its row (a lease, its
status, its owner's presence) does not rewrite the state with it.

Revision ID: conversation_states
Revises: deliveries_reason
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "conversation_states"
down_revision = "deliveries_reason"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite" and sqlite3.sqlite_version_info < (3, 35):
        raise CommandError(
            f"it drops a column, which SQLite does from version 3.35 on, and this Python's "
            f"SQLite is {sqlite3.sqlite_version}: run the app on a Python built with a newer "
            "SQLite, or on PostgreSQL (CHAT_APP_DATABASE_URL)"
        )
    op.create_table(
        "conversation_states",
        sa.Column("thread_id", sa.String(100), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name="fk_conversation_states_thread_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("thread_id", name="pk_conversation_states"),
    )
    op.execute(
        "INSERT INTO conversation_states (thread_id, state) "
        "SELECT thread_id, state FROM conversations"
    )
    # Not a batch (SQLite's copy of the table): dropping the old one would cascade to the
    # decisions and states that refer to it. SQLite drops a column itself since 3.35.
    op.execute("ALTER TABLE conversations DROP COLUMN state")


def downgrade() -> None:
    op.add_column(
        "conversations", sa.Column("state", sa.Text(), nullable=False, server_default="{}")
    )
    op.execute(
        "UPDATE conversations SET state = (SELECT state FROM conversation_states "
        "WHERE conversation_states.thread_id = conversations.thread_id)"
    )
    op.drop_table("conversation_states")
