"""Where each decision stands among those its pause asked together (0, 1, 2 …): the inbox
lists a batch's decisions in the order the agent asked them, where they share their time.

Revision ID: decisions_asked_order
Revises: deliveries_in_order
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "decisions_asked_order"
down_revision = "deliveries_in_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "decisions", sa.Column("position", sa.Integer(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("position")
