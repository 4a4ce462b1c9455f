"""When an account's password was last changed, so a session it ended says why.

Revision ID: users_password_changed
Revises: votes_counted
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "users_password_changed"
down_revision = "votes_counted"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Passwords changed before this version ended their sessions as a sign-out: they say so.
    op.add_column("users", sa.Column("password_changed_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("password_changed_at")
