"""Which approvals counted when a decision was settled: one the policy no longer allowed by
then (the voter lost the role, or the rule's approvers changed) is kept, marked, and not
named among the people who decided it.

Revision ID: votes_counted
Revises: decision_reopenings
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "votes_counted"
down_revision = "decision_reopenings"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Decisions settled before this version keep every approval as counted: what was
    # allowed then is not known now.
    op.add_column("decision_votes", sa.Column("counted", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decision_votes") as batch:
        batch.drop_column("counted")
