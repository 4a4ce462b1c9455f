"""A message a conversation's owner sent while decisions were pending, kept on the server for
them to send after, wherever they open the conversation.

Revision ID: conversations_held_message
Revises: requests_settled
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "conversations_held_message"
down_revision = "requests_settled"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("held_message", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("held_message")
