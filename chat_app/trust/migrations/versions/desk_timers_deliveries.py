"""The desk's timers (notice, reminder, escalation; wait and continuation times), its
owners' presence, and the notifications outbox.

Revision ID: desk_timers_deliveries
Revises: desk_conversations_decisions
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "desk_timers_deliveries"
down_revision = "desk_conversations_decisions"
branch_labels = None
depends_on = None

_TIMERS = ("notify", "remind", "escalate")


def upgrade() -> None:
    op.add_column("conversations", sa.Column("watched_until", sa.DateTime(), nullable=True))
    for timer in _TIMERS:
        op.add_column("decisions", sa.Column(f"{timer}_at", sa.DateTime(), nullable=True))
        done = {"notify": "notified_at", "remind": "reminded_at", "escalate": "escalated_at"}
        op.add_column("decisions", sa.Column(done[timer], sa.DateTime(), nullable=True))
    op.add_column(
        "decisions", sa.Column("escalate_to", sa.Text(), nullable=False, server_default="[]")
    )
    op.add_column("decisions", sa.Column("wait_seconds", sa.Float(), nullable=True))
    op.add_column("decisions", sa.Column("continued_seconds", sa.Float(), nullable=True))
    op.add_column("decisions", sa.Column("run_id", sa.String(100), nullable=True))
    for column in ("expires_at", *(f"{timer}_at" for timer in _TIMERS)):
        op.create_index(f"ix_decisions_status_{column}", "decisions", ["status", column])
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(400), nullable=False),
        sa.Column("decision_id", sa.String(40), nullable=True),
        sa.Column("thread_id", sa.String(100), nullable=True),
        sa.Column("event", sa.String(30), nullable=False),
        sa.Column("channel", sa.String(20), nullable=False),
        sa.Column("recipient", sa.String(320), nullable=False),
        sa.Column("notice", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_by", sa.String(100), nullable=True),
        sa.Column("claimed_until", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_deliveries"),
        sa.UniqueConstraint("key", name="uq_deliveries_key"),
    )
    op.create_index(
        "ix_deliveries_status_next_attempt_at", "deliveries", ["status", "next_attempt_at"]
    )
    op.create_index("ix_deliveries_created_at", "deliveries", ["created_at"])


def downgrade() -> None:
    op.drop_table("deliveries")
    for column in ("expires_at", *(f"{timer}_at" for timer in _TIMERS)):
        op.drop_index(f"ix_decisions_status_{column}", table_name="decisions")
    with op.batch_alter_table("decisions") as batch:
        for column in (
            "run_id", "continued_seconds", "wait_seconds", "escalate_to", "escalated_at",
            "escalate_at", "reminded_at", "remind_at", "notified_at", "notify_at",
        ):  # fmt: skip
            batch.drop_column(column)
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("watched_until")
