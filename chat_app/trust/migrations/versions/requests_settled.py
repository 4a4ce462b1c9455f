"""Whoever asked reads how their requests ended, newest first, from an index of their own.

Revision ID: requests_settled
Revises: conversations_looked_at
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "requests_settled"
down_revision = "conversations_looked_at"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_decisions_requester_email_decided_at", "decisions", ["requester_email", "decided_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_decisions_requester_email_decided_at", table_name="decisions")
