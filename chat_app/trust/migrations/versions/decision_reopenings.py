"""How a decision had ended each time it was opened again: the decisions' count by outcome
(`chat_app_decisions_total`) counts these too, so it never goes down.

Revision ID: decision_reopenings
Revises: conversations_held_message
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "decision_reopenings"
down_revision = "conversations_held_message"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Reopenings before this version are not known: the count starts from the decisions'.
    op.create_table(
        "decision_reopenings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("decision_id", sa.String(40), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["decision_id"],
            ["decisions.id"],
            ondelete="CASCADE",
            name="fk_decision_reopenings_decision_id_decisions",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_decision_reopenings"),
    )


def downgrade() -> None:
    op.drop_table("decision_reopenings")
