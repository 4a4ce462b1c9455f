"""When the owner's page last showed their conversation: whoever asked is told how a decision
ended unless they saw it there.

Revision ID: conversations_looked_at
Revises: users_signed_out
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "conversations_looked_at"
down_revision = "users_signed_out"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # No page has said so under this rule yet: decisions settled meanwhile are told.
    op.add_column("conversations", sa.Column("looked_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("looked_at")
