"""One decision's notices to one receiver, found in order: a claim waits while an earlier one
to the same receiver is still to go (`Outbox.claim_due`), and reads them by this index.

Revision ID: deliveries_in_order
Revises: users_password_changed
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "deliveries_in_order"
down_revision = "users_password_changed"
branch_labels = None
depends_on = None

NAME = "ix_deliveries_decision_id_channel_recipient_status_id"


def upgrade() -> None:
    op.create_index(
        NAME, "deliveries", ["decision_id", "channel", "recipient", "status", "id"]
    )


def downgrade() -> None:
    op.drop_index(NAME, table_name="deliveries")
