"""Whoever asked is told how their request ended: when that is due, per decision.

Revision ID: outcome_notices
Revises: decided_history
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "outcome_notices"
down_revision = "decided_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Decisions settled before this version are not told of: the column starts empty.
    op.add_column("decisions", sa.Column("tell_at", sa.DateTime(), nullable=True))
    op.create_index("ix_decisions_tell_at", "decisions", ["tell_at"])


def downgrade() -> None:
    op.drop_index("ix_decisions_tell_at", table_name="decisions")
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("tell_at")
