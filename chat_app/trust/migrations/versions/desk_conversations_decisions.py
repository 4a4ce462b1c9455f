"""The approval desk: conversations, their decisions, who may find them, and approvals.

Revision ID: desk_conversations_decisions
Revises: users_tokens_sign_in_failures
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "desk_conversations_decisions"
down_revision = "users_tokens_sign_in_failures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("thread_id", sa.String(100), nullable=False),
        sa.Column("owner_email", sa.String(320), nullable=False),
        sa.Column("owner_name", sa.String(200), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("waiting_for", sa.String(300), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("runner", sa.String(100), nullable=True),
        sa.Column("runner_until", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("thread_id", name="pk_conversations"),
    )
    op.create_index(
        "ix_conversations_owner_email_updated_at", "conversations", ["owner_email", "updated_at"]
    )
    op.create_index("ix_conversations_status", "conversations", ["status"])
    op.create_table(
        "decisions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("thread_id", sa.String(100), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("summary", sa.String(500), nullable=False),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("requester_email", sa.String(320), nullable=False),
        sa.Column("requester_name", sa.String(200), nullable=False),
        sa.Column("rule", sa.String(100), nullable=True),
        sa.Column("approvers", sa.Text(), nullable=False),
        sa.Column("not_requester", sa.Boolean(), nullable=False),
        sa.Column("quorum", sa.Integer(), nullable=False),
        sa.Column("waiting_for", sa.String(300), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=True),
        sa.Column("decided_by", sa.String(320), nullable=True),
        sa.Column("decided_by_name", sa.String(200), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("applied", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name="fk_decisions_thread_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_decisions"),
        sa.UniqueConstraint("thread_id", "item_id", name="uq_decisions_thread_id_item_id"),
    )
    op.create_index("ix_decisions_status_created_at", "decisions", ["status", "created_at"])
    op.create_table(
        "decision_routes",
        sa.Column("decision_id", sa.String(40), nullable=False),
        sa.Column("route", sa.String(400), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["decision_id"],
            ["decisions.id"],
            name="fk_decision_routes_decision_id_decisions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("decision_id", "route", name="pk_decision_routes"),
    )
    op.create_index(
        "ix_decision_routes_route_created_at", "decision_routes", ["route", "created_at"]
    )
    op.create_table(
        "decision_votes",
        sa.Column("decision_id", sa.String(40), nullable=False),
        sa.Column("voter_email", sa.String(320), nullable=False),
        sa.Column("voter_name", sa.String(200), nullable=False),
        sa.Column("verified_by", sa.String(20), nullable=False),
        sa.Column("token_name", sa.String(100), nullable=False),
        sa.Column("roles", sa.Text(), nullable=False),
        sa.Column("approved", sa.Boolean(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["decision_id"],
            ["decisions.id"],
            name="fk_decision_votes_decision_id_decisions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("decision_id", "voter_email", name="pk_decision_votes"),
    )


def downgrade() -> None:
    op.drop_table("decision_votes")
    op.drop_index("ix_decision_routes_route_created_at", table_name="decision_routes")
    op.drop_table("decision_routes")
    op.drop_index("ix_decisions_status_created_at", table_name="decisions")
    op.drop_table("decisions")
    op.drop_index("ix_conversations_status", table_name="conversations")
    op.drop_index("ix_conversations_owner_email_updated_at", table_name="conversations")
    op.drop_table("conversations")
