"""Where a delivery went (a webhook's address, no secret), as it was when it was tried: the
Deliveries page names that, not the address set now, which a restart may have changed.

Revision ID: deliveries_sent_to
Revises: decisions_asked_order
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "deliveries_sent_to"
down_revision = "decisions_asked_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("sent_to", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("sent_to")
