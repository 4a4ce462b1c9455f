"""A person's past decisions, newest first: the decisions they made and the approvals they
gave towards a quorum, each read from an index rather than every decision ever made.

Revision ID: decided_history
Revises: conversation_states
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "decided_history"
down_revision = "conversation_states"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_decisions_decided_by_decided_at", "decisions", ["decided_by", "decided_at"]
    )
    op.create_index("ix_decision_votes_voter_email_at", "decision_votes", ["voter_email", "at"])


def downgrade() -> None:
    op.drop_index("ix_decision_votes_voter_email_at", table_name="decision_votes")
    op.drop_index("ix_decisions_decided_by_decided_at", table_name="decisions")
