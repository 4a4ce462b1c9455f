"""Why a delivery was not sent: a notice asking for a decision that was settled before it
went out is kept, as `skipped`, with the reason.

Revision ID: deliveries_reason
Revises: desk_timers_deliveries
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "deliveries_reason"
down_revision = "desk_timers_deliveries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("reason")
