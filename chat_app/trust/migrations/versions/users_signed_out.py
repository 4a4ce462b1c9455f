"""Signing out ends every session of the account issued before it, in every tab and browser.

Revision ID: users_signed_out
Revises: outcome_notices
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "users_signed_out"
down_revision = "outcome_notices"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nobody has signed out under this rule yet: every session issued so far still counts.
    op.add_column("users", sa.Column("signed_out_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("signed_out_at")
